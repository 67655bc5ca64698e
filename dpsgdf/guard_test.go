package dpsgdf

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/trainer"
)

// TestCountGuardBounds checks each count guard against bounds computed by
// hand from C^k = C0(1 + f^k/r), r = min(1, m̃/b) (Xu, Du and Wu 2021),
// where the guards differ only in f^k (and, for floor and smooth, in m̃,
// summed over counts floored at 0).
func TestCountGuardBounds(t *testing.T) {
	const a = 8.0 // smooth's pseudo-count strength (σ1 in a run)
	tests := []struct {
		name               string
		guard              CountGuard
		b                  float64
		clipped, unclipped []float64
		want               []float64
		allUnclipped       bool
	}{
		// Group 1 is noisily empty (b̃ = 1 − 3 = −2); m̃ = 11, r = 11/256;
		// group 0's fraction is 10/100 under every guard but smooth.
		{"c0: empty group gets C0", GuardC0, 256, []float64{10, 1}, []float64{90, -3},
			[]float64{1 + 0.1*256/11, 1}, false},
		// Floored: m = {10, 1}, o = {90, 0}: group 1's fraction is 1/1.
		{"floor: negative count floored", GuardFloor, 256, []float64{10, 1}, []float64{90, -3},
			[]float64{1 + 0.1*256/11, 1 + 256.0/11}, false},
		// r = 11/256; f^0 = (10 + 8r)/(100 + 8), f^1 = (1 + 8r)/(1 + 0 + 8).
		{"smooth: shrunk towards r", GuardSmooth, 256, []float64{10, 1}, []float64{90, -3},
			[]float64{1 + (10+a*11/256)/108/(11.0/256), 1 + (1+a*11/256)/9/(11.0/256)}, false},
		// Group 1 has both counts ≤ 0. c0: m̃ = 15, r = 15/256, f^0 = 20/80.
		{"c0: 0/0 group", GuardC0, 256, []float64{20, -5}, []float64{60, -1},
			[]float64{1 + 0.25*256/15, 1}, false},
		// floor: m̃ = 20 (the −5 floored), r = 20/256; 0/0 reads as 1.
		{"floor: 0/0 reads as 1", GuardFloor, 256, []float64{20, -5}, []float64{60, -1},
			[]float64{1 + 0.25*256/20, 1 + 256.0/20}, false},
		// smooth: r = 0.078125, 8r = 0.625; f^0 = 20.625/88 = 0.234375 → 4;
		// f^1 = 0.625/8 = r → 2 (a typical group's bound).
		{"smooth: no evidence gives 2·C0", GuardSmooth, 256, []float64{20, -5}, []float64{60, -1},
			[]float64{4, 2}, false},
		// The unfloored total is −2 (all-unclipped under c0), the floored
		// one 3: r = 3/13, f^0 = 3/13 → 2, f^1 = 0/10 → C0.
		{"c0: negative total", GuardC0, 13, []float64{3, -5}, []float64{10, 10}, []float64{1, 1}, true},
		{"floor: floored total", GuardFloor, 13, []float64{3, -5}, []float64{10, 10}, []float64{2, 1}, false},
		// Every count ≤ 0: nothing clipped under every guard.
		{"floor: nothing clipped", GuardFloor, 256, []float64{-1, -2}, []float64{5, -3}, []float64{1, 1}, true},
		{"smooth: nothing clipped", GuardSmooth, 256, []float64{0, -2}, []float64{5, 7}, []float64{1, 1}, true},
		// "" is the default guard, smooth: floored counts m = (10, 1),
		// o = (90, 0), r = 11/256; f^0 = (10 + 8r)/108, f^1 = (1 + 8r)/9,
		// C^k = 1 + f^k/r.
		{"default", "", 256, []float64{10, 1}, []float64{90, -3},
			[]float64{1 + (10+a*11.0/256)/108/(11.0/256), 1 + (1+a*11.0/256)/9/(11.0/256)}, false},
		// c0 on the same counts: f^0 = 10/100, f^1 = 0 (b̃^1 ≤ 0).
		{"c0: a noisily empty group", GuardC0, 256, []float64{10, 1}, []float64{90, -3}, []float64{1 + 0.1*256/11, 1}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, all, err := tc.guard.Bounds(1, tc.b, a, tc.clipped, tc.unclipped)
			if err != nil {
				t.Fatal(err)
			}
			if all != tc.allUnclipped {
				t.Errorf("allUnclipped = %v, want %v", all, tc.allUnclipped)
			}
			for k := range tc.want {
				if math.Abs(got[k]-tc.want[k]) > 1e-12*tc.want[k] {
					t.Errorf("C^%d = %.15g, want %.15g", k, got[k], tc.want[k])
				}
			}
			// C0 scales every bound.
			half, _, _ := tc.guard.Bounds(0.5, tc.b, a, tc.clipped, tc.unclipped)
			for k := range half {
				if math.Abs(half[k]-got[k]/2) > 1e-12*got[k] {
					t.Errorf("C0 = 0.5: C^%d = %v, want %v", k, half[k], got[k]/2)
				}
			}
		})
	}
	// With no prior strength, smooth's empty group still gets r.
	got, _, err := GuardSmooth.Bounds(1, 16, 0, []float64{4, 0}, []float64{4, 0})
	if err != nil || got[0] != 3 || got[1] != 2 {
		t.Errorf("smooth, a = 0: %v, %v; want [3 2]", got, err)
	}
	if _, _, err := CountGuard("zero").Bounds(1, 16, 0, []float64{4}, []float64{4}); err == nil || !strings.Contains(err.Error(), `"zero"`) {
		t.Errorf("unknown guard: %v", err)
	}
}

// TestCountGuardIsPostProcessing: the guard changes the bounds a step
// derives from the released counts, never what is released or charged.
// One step on the same batch and seed under each guard releases the same
// noisy counts and charges the same mechanism (so the receipts are equal),
// and the bounds are each guard's Bounds of those released counts. The
// report's result records the guard.
func TestCountGuardIsPostProcessing(t *testing.T) {
	var receipt, counts string
	distinct := map[string]bool{}
	for i, g := range CountGuards() {
		// C0 = 0.05 clips most gradients; σ2 = 1 gives σ1 = 10 ≫ the
		// per-group counts of a batch of 32, so the guards disagree.
		job := synthJob(t, 9, func(c *trainer.Config) { c.Privacy.Clip, c.Fair.CountGuard = 0.05, string(g) })
		alg, err := NewForJob[float64](job, Adaptive)
		if err != nil {
			t.Fatal(err)
		}
		var released []float64
		noisy := alg.noisyCount
		alg.noisyCount = func(v float64) (float64, error) {
			v, err := noisy(v)
			released = append(released, v)
			return v, err
		}
		m := stepModel(t, job)
		if _, err := alg.Step(m, batchOf(job, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})); err != nil {
			t.Fatal(err)
		}
		k := len(job.Train.GroupNames)
		want, _, err := g.Bounds(0.05, 32, alg.CountSigma(), released[:k], released[k:])
		if err != nil {
			t.Fatal(err)
		}
		distinct[fmt.Sprint(alg.LastBounds())] = true
		for j, c := range alg.LastBounds() {
			if c != want[j] {
				t.Errorf("%s: C^%d = %v, want %v from the released counts %v", g, j, c, want[j], released)
			}
		}
		r, err := alg.Receipt()
		if err != nil {
			t.Fatal(err)
		}
		rs, cs := strings.TrimSpace(receiptString(t, r)), strings.TrimSpace(floatsString(released))
		if i == 0 {
			receipt, counts = rs, cs
		} else if rs != receipt || cs != counts {
			t.Errorf("%s: receipt or released counts differ from %s's:\n%s\n%s\n%s\n%s", g, GuardC0, rs, receipt, cs, counts)
		}
		rep := &trainer.Report{}
		if err := alg.Finish(nil, nil, rep); err != nil {
			t.Fatal(err)
		}
		if got := ResultOf(rep).CountGuard; got != g {
			t.Errorf("result's count guard %q, want %q", got, g)
		}
	}
	if len(distinct) != len(CountGuards()) {
		t.Errorf("the guards gave %d distinct bound vectors, want %d (the test must make them disagree)", len(distinct), len(CountGuards()))
	}
}

// TestCountGuardRefused: an unknown guard is a configuration error naming
// the field; Naïve and DPSGD carry no guard.
func TestCountGuardRefused(t *testing.T) {
	good := Config{Policy: Adaptive, Clip: 1, Sigma: 1, CountNoiseRatio: 10, Batch: 10, Epochs: 1, Groups: []string{"a"}}
	bad := good
	bad.CountGuard = "zero"
	if _, err := New[float32](bad, 100, testSource()); err == nil || !strings.Contains(err.Error(), `Fair.CountGuard "zero"`) {
		t.Errorf("unknown guard: %v", err)
	}
	a, err := New[float32](good, 100, testSource())
	if err != nil || a.cfg.CountGuard != DefaultCountGuard {
		t.Errorf("no guard given: %v, guard %q, want %q", err, a.cfg.CountGuard, DefaultCountGuard)
	}
	for _, p := range []Policy{Naive, Flat} {
		c := good
		c.Policy = p
		a, err := New[float32](c, 100, testSource())
		if err != nil || a.cfg.CountGuard != "" {
			t.Errorf("%s: %v, guard %q", p, err, a.cfg.CountGuard)
		}
	}
}

func testSource() dpops.Source {
	seed := uint64(1)
	_, src := dpops.NewRand(&seed)
	return src
}

func receiptString(t *testing.T, r accounting.Receipt) string {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func floatsString(v []float64) string { return fmt.Sprint(v) }
