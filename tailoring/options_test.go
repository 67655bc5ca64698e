package tailoring

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/trainer"
)

// smallRun is a one-ρ, one-trial tailoring run on the synthetic data.
func smallRun() trainer.Config {
	seed := uint64(6)
	cfg := Defaults(trainer.Defaults())
	cfg.Algo, cfg.Seed = "tailoring", &seed
	t := ConfigOf(cfg)
	t.Groups, t.Slopes = []float64{300, 40, 80}, []float64{0, -4, 4}
	t.Rho, t.Trials, t.Steps = []float64{2}, 1, 5
	return WithConfig(cfg, t)
}

// TestPrepareRefusesBadPrivacy: the one place tailoring reads the privacy
// settings refuses a clip or δ out of range with an error naming the field
// (ε is not a setting: the budget is ρ).
func TestPrepareRefusesBadPrivacy(t *testing.T) {
	for _, tc := range []struct {
		field string
		set   func(*trainer.DPConfig)
	}{
		{"Privacy.Clip", func(p *trainer.DPConfig) { p.Clip = 0 }},
		{"Privacy.Clip", func(p *trainer.DPConfig) { p.Clip = -1 }},
		{"Privacy.Clip", func(p *trainer.DPConfig) { p.Clip = math.NaN() }},
		{"delta", func(p *trainer.DPConfig) { p.Delta = 1.5 }},
		{"delta", func(p *trainer.DPConfig) { p.Delta = -1e-9 }},
		{"δ = 0.3", func(p *trainer.DPConfig) { p.Delta = 0.3 }}, // above 1/n without AllowLargeDelta
	} {
		cfg := smallRun()
		tc.set(&cfg.Privacy)
		if _, err := Prepare(cfg); err == nil || !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(tc.field)) {
			t.Errorf("%s (%+v): got %v, want an error naming it", tc.field, cfg.Privacy, err)
		}
	}
}

// TestDeltaFlows: Finish states the δ Prepare resolved (ReportExtra.Delta),
// not what the report's record of the configuration holds: a prepared run
// whose record is changed afterwards still receipts Prepare's δ, the one
// its fits were calibrated and charged at.
func TestDeltaFlows(t *testing.T) {
	cfg := smallRun()
	cfg.Privacy.Delta = 1e-7
	rep, err := Prepare(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := Extra(rep).Delta; got != 1e-7 || rep.Config.Privacy.Delta != 1e-7 {
		t.Fatalf("prepared δ %v (record %v), want 1e-7", got, rep.Config.Privacy.Delta)
	}
	rep.Config.Privacy.Delta, rep.Config.Privacy.AllowLargeDelta = 0.25, true
	if err := Finish(context.Background(), rep, ""); err != nil {
		t.Fatal(err)
	}
	if rep.Privacy.Delta != 1e-7 || Extra(rep).FitPrivacy.Delta != 1e-7 {
		t.Errorf("receipt δ %v (one fit's %v), want Prepare's 1e-7", rep.Privacy.Delta, Extra(rep).FitPrivacy.Delta)
	}

	defaulted, err := Prepare(smallRun())
	if err != nil {
		t.Fatal(err)
	}
	n := float64(defaulted.TrainRecords)
	if got := Extra(defaulted).Delta; got != 1/(n*n) || defaulted.Config.Privacy.Delta != got {
		t.Errorf("default δ %v (record %v), want 1/n² = %v", got, defaulted.Config.Privacy.Delta, 1/(n*n))
	}
}
