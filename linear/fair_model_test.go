package linear

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fairdp/fairdp/metrics"
)

// TestExpectedSplitDeterministic: on probabilities 0 and 1 the expected
// table is the table of those predictions, which metrics.Evaluate (an
// independent path: confusion matrices of the predictions) computes.
func TestExpectedSplitDeterministic(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	n, names := 500, []string{"a", "b", "c"}
	prob, pred, label, group := make([]float64, n), make([]int, n), make([]int, n), make([]int, n)
	for i := range n {
		pred[i], label[i], group[i] = r.IntN(2), r.IntN(2), r.IntN(len(names))
		prob[i] = float64(pred[i])
	}
	got, err := ExpectedSplit(prob, label, group, names)
	if err != nil {
		t.Fatal(err)
	}
	want := metrics.Evaluate(pred, label, group, 2, names)
	near := func(what string, a, b float64) {
		if math.Abs(a-b) > 1e-12 {
			t.Errorf("%s: expected %v, evaluated %v", what, a, b)
		}
	}
	ptr := func(what string, a, b *float64) {
		if (a == nil) != (b == nil) {
			t.Errorf("%s: expected %v, evaluated %v", what, a, b)
		} else if a != nil {
			near(what, *a, *b)
		}
	}
	near("error", got.Error, want.Error)
	near("accuracy", got.Accuracy, want.Accuracy)
	near("DP violation", got.DPViolation, want.DPViolation)
	near("EO violation", got.EOViolation, want.EOViolation)
	rows := append(got.Groups, *got.Overall)
	wrows := append(want.Groups, *want.Overall)
	for i, g := range rows {
		w := wrows[i]
		if g.Group != w.Group || g.N != w.N {
			t.Errorf("row %d: %s n=%d, evaluated %s n=%d", i, g.Group, g.N, w.Group, w.N)
		}
		near(g.Group+" accuracy", g.Accuracy, w.Accuracy)
		near(g.Group+" selection rate", g.SelectionRate, w.SelectionRate)
		ptr(g.Group+" TPR", g.TPR, w.TPR)
		ptr(g.Group+" FPR", g.FPR, w.FPR)
	}
}

// TestExpectedSplitMeanOfSamples: with fractional probabilities the
// expected error is the mean error of sampled predictions (a slow Monte
// Carlo path), within four standard errors.
func TestExpectedSplitMeanOfSamples(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	n, names := 200, []string{"a", "b"}
	prob, label, group := make([]float64, n), make([]int, n), make([]int, n)
	for i := range n {
		prob[i], label[i], group[i] = r.Float64(), r.IntN(2), r.IntN(2)
	}
	got, err := ExpectedSplit(prob, label, group, names)
	if err != nil {
		t.Fatal(err)
	}
	const draws = 2000
	var sum, sq float64
	pred := make([]int, n)
	for range draws {
		for i, p := range prob {
			pred[i] = 0
			if r.Float64() < p {
				pred[i] = 1
			}
		}
		e := metrics.Evaluate(pred, label, group, 2, names).Error
		sum, sq = sum+e, sq+e*e
	}
	mean := sum / draws
	se := math.Sqrt((sq/draws - mean*mean) / draws)
	if math.Abs(mean-got.Error) > 4*se {
		t.Errorf("expected error %v, mean of %d sampled errors %v (se %v)", got.Error, draws, mean, se)
	}
}
