package trainer_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/loaders"
	"github.com/fairdp/fairdp/models"
	"github.com/fairdp/fairdp/trainer"
)

// TestEvaluateRegressionModel: a zoo regression model is scored on the
// data's targets by MSPE per group, equal to the squared errors of
// ŷ = w·x + b summed by hand; a regression model on data without a target,
// and a classifier on data with a target and no label, are refused rather
// than scored as something they are not.
func TestEvaluateRegressionModel(t *testing.T) {
	m, err := models.New[float64](models.Spec{Arch: models.RegressionArch, InShape: []int{2}, Classes: 1}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	d := &loaders.Dataset{Name: "reg", X: []float64{1, 2, -1, 0.5, 3, -2, 0, 0}, Dim: 2, Targets: []float64{1, -1, 0.5, 2},
		Groups: []int{0, 1, 0, 1}, GroupNames: []string{"a", "b"}}
	sp, err := trainer.Evaluate[float64](m, d)
	if err != nil {
		t.Fatal(err)
	}
	w, b := m.Params()[0].Value, m.Params()[1].Value[0]
	var sum [2]float64
	for i := range 4 {
		e := b + w[0]*d.X[2*i] + w[1]*d.X[2*i+1] - d.Targets[i]
		sum[d.Groups[i]] += e * e
	}
	near := func(a *float64, want float64) bool { return a != nil && math.Abs(*a-want) <= 1e-12*math.Max(1, want) }
	if !near(sp.MSPE, (sum[0]+sum[1])/4) || len(sp.Groups) != 2 || !near(sp.Groups[0].MSPE, sum[0]/2) || !near(sp.Groups[1].MSPE, sum[1]/2) {
		t.Errorf("split %+v; by hand overall %v, groups %v %v", sp, (sum[0]+sum[1])/4, sum[0]/2, sum[1]/2)
	}

	cls := &loaders.Dataset{Name: "cls", X: d.X, Dim: 2, Labels: []int{0, 1, 0, 1}, LabelNames: []string{"n", "y"},
		Groups: d.Groups, GroupNames: d.GroupNames}
	if _, err := trainer.Evaluate[float64](m, cls); err == nil || !strings.Contains(err.Error(), "no regression target") {
		t.Errorf("regression model on class labels: error %v", err)
	}
	logit, err := models.New[float64](models.Spec{Arch: "logistic", InShape: []int{2}, Classes: 2}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := trainer.Evaluate[float64](logit, d); err == nil || !strings.Contains(err.Error(), "model is a classifier") {
		t.Errorf("classifier on a regression target: error %v", err)
	}
}
