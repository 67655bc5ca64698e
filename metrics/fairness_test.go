package metrics

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// records builds pred, y, s from (group, label, prediction) triples.
func records(triples [][3]int) (pred, y, s []int) {
	for _, t := range triples {
		s = append(s, t[0])
		y = append(y, t[1])
		pred = append(pred, t[2])
	}
	return pred, y, s
}

// binaryTriples: group 0 has TP=1 FN=1 FP=1 TN=2, group 1 has TP=2 FN=1 FP=0 TN=1.
var binaryTriples = [][3]int{
	{0, 1, 1}, {0, 1, 0}, {0, 0, 1}, {0, 0, 0}, {0, 0, 0},
	{1, 1, 1}, {1, 1, 1}, {1, 1, 0}, {1, 0, 0},
}

// multiTriples: 3 classes × 3 groups, worked by hand in TestViolationsHand.
var multiTriples = [][3]int{
	{0, 0, 0}, {0, 0, 1}, {0, 1, 1}, {0, 2, 2},
	{1, 0, 0}, {1, 1, 0}, {1, 1, 1}, {1, 2, 1}, {1, 2, 2}, {1, 2, 2},
	{2, 0, 0}, {2, 1, 1},
}

// TestViolationsHand checks the definitions of the demographic-parity and
// equalized-odds violations (Lowy et al. 2022, appendix F.1) on
// hand-computed cases.
func TestViolationsHand(t *testing.T) {
	tests := []struct {
		name            string
		triples         [][3]int
		classes, groups int
		dp, eo          float64
	}{
		// Selection rates 2/5 and 2/4; TPR 1/2 vs 2/3, FPR 1/3 vs 0.
		{"binary", binaryTriples, 2, 2, 0.1, 1.0 / 3},
		// An empty third group changes nothing.
		{"binary with empty group", binaryTriples, 2, 3, 0.1, 1.0 / 3},
		// P[ŷ=c|s]: g0 (1/4,1/2,1/4), g1 (1/3,1/3,1/3), g2 (1/2,1/2,0): DP = 1/3 (c=2).
		// P[ŷ=0|y=0,s] = 1/2, 1, 1: EO = 1/2; the other terms are at most 1/3, and
		// group 2 has no y=2 record so it is skipped for P[ŷ=2|y=2].
		{"3 classes x 3 groups", multiTriples, 3, 3, 1.0 / 3, 0.5},
		// Group 1 has no positives: its TPR is undefined and skipped, so EO is the
		// FPR gap |1/2 - 0| (TPR gap has only one group).
		{"group without positives", [][3]int{{0, 1, 1}, {0, 0, 1}, {0, 0, 0}, {1, 0, 0}, {1, 0, 0}}, 2, 2, 2.0 / 3, 0.5},
		{"single group", [][3]int{{0, 1, 1}, {0, 0, 1}}, 2, 1, 0, 0},
		{"no records", nil, 2, 2, 0, 0},
		{"same errors in both groups", [][3]int{{0, 0, 1}, {0, 1, 0}, {1, 0, 1}, {1, 1, 0}}, 2, 2, 0, 0},
		// Selection rate 1/2 in both groups, but TPR 1 vs 0 and FPR 0 vs 1.
		{"parity without equal odds", [][3]int{{0, 1, 1}, {0, 0, 0}, {1, 1, 0}, {1, 0, 1}}, 2, 2, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pred, y, s := records(tt.triples)
			if got := DemographicParity(pred, s, tt.classes, tt.groups); math.Abs(got-tt.dp) > 1e-15 {
				t.Errorf("DemographicParity = %.17g, want %.17g", got, tt.dp)
			}
			if got := EqualizedOdds(pred, y, s, tt.classes, tt.groups); math.Abs(got-tt.eo) > 1e-15 {
				t.Errorf("EqualizedOdds = %.17g, want %.17g", got, tt.eo)
			}
		})
	}
}

// bruteDP is the literal definition: max over c, s1, s2 of
// |P[ŷ=c|s1] - P[ŷ=c|s2]|, each probability counted by a scan of the data.
func bruteDP(pred, s []int, classes, groups int) float64 {
	prob := func(c, g int) (float64, bool) {
		hit, n := 0, 0
		for i := range pred {
			if s[i] == g {
				n++
				if pred[i] == c {
					hit++
				}
			}
		}
		return float64(hit) / float64(n), n > 0
	}
	worst := 0.0
	for c := range classes {
		for g1 := range groups {
			for g2 := range groups {
				p1, ok1 := prob(c, g1)
				p2, ok2 := prob(c, g2)
				if ok1 && ok2 {
					worst = max(worst, math.Abs(p1-p2))
				}
			}
		}
	}
	return worst
}

// bruteEO is the literal equalized-odds definition by scanning the data.
func bruteEO(pred, y, s []int, classes, groups int) float64 {
	prob := func(c, g int, sameLabel bool) (float64, bool) {
		hit, n := 0, 0
		for i := range pred {
			if s[i] == g && (y[i] == c) == sameLabel {
				n++
				if pred[i] == c {
					hit++
				}
			}
		}
		return float64(hit) / float64(n), n > 0
	}
	worst := 0.0
	for c := range classes {
		for g1 := range groups {
			for g2 := range groups {
				for _, same := range []bool{true, false} {
					p1, ok1 := prob(c, g1, same)
					p2, ok2 := prob(c, g2, same)
					if ok1 && ok2 {
						worst = max(worst, math.Abs(p1-p2))
					}
				}
			}
		}
	}
	return worst
}

func randomRecords(rng *rand.Rand, n, classes, groups int) (pred, y, s []int) {
	pred, y, s = make([]int, n), make([]int, n), make([]int, n)
	for i := range n {
		s[i] = rng.IntN(groups)
		y[i] = rng.IntN(classes)
		// Predictions correlated with labels and groups, so violations vary.
		if rng.Float64() < 0.5+0.1*float64(s[i]) {
			pred[i] = y[i]
		} else {
			pred[i] = rng.IntN(classes)
		}
	}
	return pred, y, s
}

// TestViolationsBruteForce compares the confusion-count implementation with
// the literal definitions on random data, including tiny samples where some
// groups and label cells are empty.
func TestViolationsBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		classes := 2 + rng.IntN(4)
		groups := 1 + rng.IntN(5)
		n := rng.IntN(40)
		pred, y, s := randomRecords(rng, n, classes, groups)
		if got, want := DemographicParity(pred, s, classes, groups), bruteDP(pred, s, classes, groups); got != want {
			t.Fatalf("trial %d: DemographicParity = %g, brute force %g", trial, got, want)
		}
		if got, want := EqualizedOdds(pred, y, s, classes, groups), bruteEO(pred, y, s, classes, groups); got != want {
			t.Fatalf("trial %d: EqualizedOdds = %g, brute force %g", trial, got, want)
		}
	}
}

// TestViolationsMatchFairlearn checks the binary identities with fairlearn:
// DP = fairlearn's demographic_parity_difference = max - min selection rate,
// EO = equalized_odds_difference(agg="worst_case") = max(TPR gap, FPR gap),
// with the per-group rates taken from PerGroup.
func TestViolationsMatchFairlearn(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 100 {
		groups := 2 + rng.IntN(3)
		pred, y, s := randomRecords(rng, 20+rng.IntN(200), 2, groups)
		var sel, tpr, fpr spread
		for _, g := range PerGroup(pred, y, s, 2, make([]string, groups)) {
			if g.N > 0 {
				sel.add(&g.SelectionRate)
			}
			tpr.add(g.TPR)
			fpr.add(g.FPR)
		}
		if got, want := DemographicParity(pred, s, 2, groups), sel.width(); math.Abs(got-want) > 1e-15 {
			t.Fatalf("trial %d: DemographicParity = %g, selection-rate gap %g", trial, got, want)
		}
		if got, want := EqualizedOdds(pred, y, s, 2, groups), max(tpr.width(), fpr.width()); math.Abs(got-want) > 1e-15 {
			t.Fatalf("trial %d: EqualizedOdds = %g, worst of TPR/FPR gaps %g", trial, got, want)
		}
	}
}

func TestViolationsPanicOnBadInput(t *testing.T) {
	tests := []struct {
		name string
		call func()
		want string
	}{
		{"pred out of range", func() { DemographicParity([]int{0, 2}, []int{0, 0}, 2, 1) }, "metrics: pred[1] = 2, want 0..1"},
		{"group out of range", func() { EqualizedOdds([]int{0}, []int{0}, []int{3}, 2, 2) }, "metrics: s[0] = 3, want 0..1"},
		{"label length", func() { EqualizedOdds([]int{0}, nil, []int{0}, 2, 1) }, "metrics: 0 labels for 1 predictions, want one label per prediction"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := panicMessage(tt.call); got != tt.want {
				t.Errorf("panic %q, want %q", got, tt.want)
			}
		})
	}
}

// panicMessage runs f and returns the message it panicked with ("" if none).
func panicMessage(f func()) (msg string) {
	defer func() {
		switch r := recover().(type) {
		case nil:
		case error:
			msg = r.Error()
		default:
			msg = fmt.Sprint(r)
		}
	}()
	f()
	return ""
}
