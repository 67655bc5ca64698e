package linear

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/dpops/accounting"
)

// isotonicMinMax is the slow path: the weighted isotonic fit at i is
// max over s ≤ i of min over t ≥ i of the weighted mean of v[s..t]
// (Robertson, Wright and Dykstra 1988, Theorem 1.4.4), for positive weights.
func isotonicMinMax(v, w []float64) []float64 {
	out := make([]float64, len(v))
	for i := range v {
		best := math.Inf(-1)
		for s := 0; s <= i; s++ {
			low := math.Inf(1)
			for t := i; t < len(v); t++ {
				sum, wt := 0.0, 0.0
				for k := s; k <= t; k++ {
					sum += w[k] * v[k]
					wt += w[k]
				}
				low = min(low, sum/wt)
			}
			best = max(best, low)
		}
		out[i] = best
	}
	return out
}

// TestIsotonic checks pool-adjacent-violators against the min–max formula
// on random sequences, and that its fit is non-decreasing.
func TestIsotonic(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 9))
	for trial := range 200 {
		n := 1 + r.IntN(9)
		v, w := make([]float64, n), make([]float64, n)
		for i := range v {
			v[i], w[i] = r.Float64(), 0.1+5*r.Float64()
		}
		got, want := isotonic(v, w), isotonicMinMax(v, w)
		for i := range v {
			if math.Abs(got[i]-want[i]) > 1e-12 || (i > 0 && got[i] < got[i-1]) {
				t.Fatalf("trial %d: isotonic(%v, %v) = %v, want %v", trial, v, w, got, want)
			}
		}
	}
	// A non-decreasing sequence is its own fit; one fall pools its pair.
	if got := isotonic([]float64{0.1, 0.4, 0.4, 0.9}, []float64{1, 2, 3, 4}); got[0] != 0.1 || got[3] != 0.9 || got[1] != 0.4 {
		t.Errorf("monotone input changed: %v", got)
	}
	if got := isotonic([]float64{0.6, 0.3}, []float64{1, 2}); math.Abs(got[0]-0.4) > 1e-15 || got[0] != got[1] {
		t.Errorf("pooled pair %v, want both (0.6 + 2·0.3)/3 = 0.4", got)
	}
}

// TestMonotoneCells: the smoothed table keeps every (bin, group) total,
// has rising positive shares within each group, and leaves a table whose
// shares already rise unchanged.
func TestMonotoneCells(t *testing.T) {
	// Two bins, two groups; group 0's shares fall (6/10 then 3/10), group
	// 1's rise (1/4 then 3/4).
	counts := []float64{4, 6, 3, 1, 7, 3, 1, 3}
	monotoneCells(counts, 2, 2)
	want := []float64{5.5, 4.5, 3, 1, 5.5, 4.5, 1, 3} // group 0 pooled: 9/20 positive
	for i := range counts {
		if math.Abs(counts[i]-want[i]) > 1e-12 {
			t.Fatalf("smoothed %v, want %v", counts, want)
		}
	}
}

// TestPostProcessMonotone: with Monotone the LP's classifier on noisy
// cells of a small table predicts positive no less often in a higher
// score bin, in every group — a threshold on the score, as the true
// cells' optimum is — while without it the noise makes some runs predict
// positive in a bin and negative in a bin above it (so the check can
// fail). Smoothing is post-processing: the receipt is the same.
func TestPostProcessMonotone(t *testing.T) {
	scores, group, label := syntheticScores(rand.New(rand.NewPCG(4, 4)), 400, 2)
	bins, err := UniformBins(6)
	if err != nil {
		t.Fatal(err)
	}
	bin, err := bins.Assign(scores)
	if err != nil {
		t.Fatal(err)
	}
	// inverted reports whether some group predicts positive more often in
	// a lower score bin than in a higher one (bins pooled to one share by
	// the smoothing are interchangeable to the LP, so they are skipped).
	inverted := func(res *PostProcessResult) bool {
		c, p := res.Cells, res.Model.P
		for a := range c.Groups {
			for b := range c.Bins {
				for b2 := b + 1; b2 < c.Bins; b2++ {
					s := func(b int) float64 { return c.At(b, a, 1) / (c.At(b, a, 0) + c.At(b, a, 1)) }
					if math.Abs(s(b)-s(b2)) > 1e-12 && p[b*c.Groups+a] > p[b2*c.Groups+a]+1e-9 {
						return true
					}
				}
			}
		}
		return false
	}
	plain := 0
	for seed := uint64(1); seed <= 30; seed++ {
		var eps []float64
		for _, mono := range []bool{false, true} {
			r, _ := dpops.NewRand(&seed)
			res, err := PostProcess(r, bin, group, label, bins.Len(), 2, PostProcessConfig{Gamma: 0.02, Epsilon: 0.3,
				Fairness: DemographicParity, Slack: SlackNone, Relation: accounting.RelationAddRemove, Monotone: mono})
			if err != nil {
				t.Fatal(err)
			}
			if res.Failed {
				continue
			}
			rec, err := res.Receipt(nil)
			if err != nil {
				t.Fatal(err)
			}
			eps = append(eps, *rec.Epsilon)
			switch {
			case mono && inverted(res):
				t.Errorf("seed %d: the monotone cells' classifier is not a threshold per group: P %v", seed, res.Model.P)
			case !mono && inverted(res):
				plain++
			}
		}
		if len(eps) == 2 && eps[0] != eps[1] {
			t.Errorf("seed %d: smoothing changed the receipt's ε from %v to %v", seed, eps[0], eps[1])
		}
	}
	if plain == 0 {
		t.Error("no run without smoothing predicted against the score order: the check cannot fail here")
	}
}
