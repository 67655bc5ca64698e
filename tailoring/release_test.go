package tailoring

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/trainer"
)

// TestRunChargesEveryReleasedFit: report.json's means,
// spreads, extremes and shares are computed from every trial of every
// method at every ρ, so its receipt composes all those fits (zCDP adds ρ);
// one fit's receipt is extra.tailoring.fit_privacy. The expected totals
// are derived from the settings: trials × Σ_ρ (DPSE's ρ + DPNoSE's ρ, or
// its μ = (1 − τ share)ρ with NoseBudget "mu").
func TestRunChargesEveryReleasedFit(t *testing.T) {
	for _, tc := range []struct {
		algo, nose string
		rhos       []float64
		trials     int
	}{
		{"tailoring", "rho", []float64{2}, 1},
		{"tailoring", "rho", []float64{2}, 3},
		{"dpnose", "rho", []float64{1.5}, 2},
		{"dpnose", "mu", []float64{1.5}, 2},
		{"tailoring", "rho", []float64{0.5, 4}, 2},
		{"dpnose", "mu", []float64{1, 3}, 3},
	} {
		name := fmt.Sprintf("%s/%s/rho=%v/trials=%d", tc.algo, tc.nose, tc.rhos, tc.trials)
		t.Run(name, func(t *testing.T) {
			seed := uint64(4)
			cfg := Defaults(trainer.Defaults())
			cfg.Algo, cfg.Seed = trainer.AlgoName(tc.algo), &seed
			tcfg := ConfigOf(cfg)
			tcfg.Groups, tcfg.Slopes = []float64{300, 40, 80}, []float64{0, -4, 4}
			tcfg.Rho, tcfg.Trials, tcfg.Steps = tc.rhos, tc.trials, 5
			tcfg.NoseBudget = tc.nose
			cfg = WithConfig(cfg, tcfg)
			rep, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			share := tcfg.TauShare
			noseRho := func(rho float64) float64 {
				if tc.nose == "mu" {
					return (1 - share) * rho
				}
				return rho
			}
			want, fits := 0.0, 0
			for _, rho := range tc.rhos {
				switch {
				case len(tc.rhos) > 1: // a sweep releases both methods
					want += float64(tc.trials) * (rho + noseRho(rho))
					fits += 2 * tc.trials
				case tc.algo == "dpnose":
					want += float64(tc.trials) * noseRho(rho)
					fits += tc.trials
				default:
					want += float64(tc.trials) * rho
					fits += tc.trials
				}
			}
			p := rep.Privacy
			if p.Rho == nil || math.Abs(*p.Rho-want) > 1e-12*want {
				got := math.NaN()
				if p.Rho != nil {
					got = *p.Rho
				}
				t.Fatalf("receipt ρ = %v, want %v (every released fit)", got, want)
			}
			wantEps, _ := accounting.ZCDPToEpsilon(want, p.Delta)
			if p.Epsilon == nil || math.Abs(*p.Epsilon-wantEps) > 1e-9*wantEps {
				t.Errorf("receipt ε = %v, want %v", p.Epsilon, wantEps)
			}
			if !strings.Contains(p.Note, fmt.Sprintf("%d fits released together", fits)) || !strings.Contains(p.Note, "synthetic") {
				t.Errorf("receipt note %q does not state the %d fits or the simulation", p.Note, fits)
			}
			steps := 0
			for _, m := range p.Mechanisms {
				steps += m.Steps
			}
			if steps != fits {
				t.Errorf("receipt lists %d fits, want %d: %+v", steps, fits, p.Mechanisms)
			}
			ex := Extra(rep)
			first := tc.rhos[0]
			if tc.algo == "dpnose" {
				first = noseRho(first)
			}
			if ex.FitPrivacy == nil || ex.FitPrivacy.Rho == nil || math.Abs(*ex.FitPrivacy.Rho-first) > 1e-12*first {
				t.Errorf("fit_privacy %+v, want one fit's ρ = %v", ex.FitPrivacy, first)
			}
			if rep.Config.Privacy.Epsilon != *p.Epsilon {
				t.Errorf("config records ε = %v, the receipt %v", rep.Config.Privacy.Epsilon, *p.Epsilon)
			}
		})
	}
}

// TestReleaseReceiptRefuses: a summary without trials or a fit budget
// (e.g. from an older log) cannot be charged, so it is an error, not a
// receipt that is too small.
func TestReleaseReceiptRefuses(t *testing.T) {
	for _, sums := range [][]*Summary{nil, {nil}, {{Trials: 2}}, {{Trials: 0, FitRho: 1}}} {
		if _, err := ReleaseReceipt(sums, 1e-5, accounting.RunInfo{}); err == nil {
			t.Errorf("ReleaseReceipt(%v) gave no error", sums)
		}
	}
}

// TestComparisonPersistsReceiptFirst: a ρ comparison with an output
// directory writes each finished ρ's summaries to its log before
// report.json exists, so the receipt of every fit it will release is on
// disk before the first fit runs (a run cancelled at once leaves the
// receipt and no results), and it is the receipt report.json states.
func TestComparisonPersistsReceiptFirst(t *testing.T) {
	seed := uint64(6)
	cfg := Defaults(trainer.Defaults())
	cfg.Algo, cfg.Seed = "tailoring", &seed
	tcfg := ConfigOf(cfg)
	tcfg.Groups, tcfg.Slopes = []float64{300, 40, 80}, []float64{0, -4, 4}
	tcfg.Rho, tcfg.Trials, tcfg.Steps = []float64{1, 3}, 2, 5
	cfg = WithConfig(cfg, tcfg)
	out := t.TempDir()
	readReceipt := func() accounting.Receipt {
		t.Helper()
		raw, err := os.ReadFile(filepath.Join(out, PlannedReceiptName))
		if err != nil {
			t.Fatalf("no receipt on disk: %v", err)
		}
		var rec accounting.Receipt
		if err := json.Unmarshal(raw, &rec); err != nil {
			t.Fatal(err)
		}
		return rec
	}

	rep, err := Prepare(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Finish(ctx, rep, out); err == nil {
		t.Fatal("a cancelled comparison finished")
	}
	rec := readReceipt()
	want := 2.0 * (1 + 1 + 3 + 3) // trials × Σ_ρ (DPSE + DPNoSE)
	if rec.Rho == nil || math.Abs(*rec.Rho-want) > 1e-12*want {
		t.Errorf("receipt on disk ρ = %v, want %v", rec.Rho, want)
	}
	if logged, _ := os.ReadFile(filepath.Join(out, RhoLogName)); strings.Count(string(logged), "\n") > 1 {
		t.Errorf("a cancelled run logged results:\n%s", logged)
	}

	rep, err = Prepare(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := Finish(context.Background(), rep, out); err != nil {
		t.Fatal(err)
	}
	onDisk, _ := json.Marshal(readReceipt())
	stated, _ := json.Marshal(rep.Privacy)
	if string(stated) != string(onDisk) {
		t.Errorf("report.json's receipt\n%s\ndiffers from the one written first\n%s", stated, onDisk)
	}

	// Rerun into the same directory with ρ = 3, 5: ρ = 1's summaries stay
	// in its log, released, so both receipts still charge them.
	tcfg.Rho = []float64{3, 5}
	cfg = WithConfig(cfg, tcfg)
	if rep, err = Prepare(cfg); err != nil {
		t.Fatal(err)
	}
	if err := Finish(context.Background(), rep, out); err != nil {
		t.Fatal(err)
	}
	want = 2.0 * (3 + 3 + 5 + 5 + 1 + 1)
	for name, rec := range map[string]accounting.Receipt{"report.json": rep.Privacy, PlannedReceiptName: readReceipt()} {
		if rec.Rho == nil || math.Abs(*rec.Rho-want) > 1e-12*want || !strings.Contains(rec.Note, "fits at ρ = 1, whose summaries") {
			t.Errorf("%s after a rerun with other ρ: %+v, want ρ = %v with ρ = 1's logged fits", name, rec, want)
		}
	}
}
