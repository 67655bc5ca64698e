//go:build !cuda

package graph_test

import (
	"context"
	"math"
	"slices"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/fairdp/fairdp/graph"
	"github.com/fairdp/fairdp/trainer"
)

// TestExampleIrisTrainsPrivately: Gorgonia's examples/iris (v0.9.18,
// linear regression Mul(X, θ) with its squared-error cost and Grad, built
// as the example builds it) lowered to a regression trains privately
// through the library's entry (NewPrivate, TrainPrivate) with DP-SGD at
// ε = 2 on the regression sample (trainer/testdata/regression-sample:
// 1,500 synthetic records with the example's five columns, the last a
// column of ones, and a target): the test MSPE is well below the constant predictor's, the receipt holds
// the budget, and the private θ is written back into the example's node,
// where Gorgonia's TapeMachine predicts with it what the lowered model
// predicts.
func TestExampleIrisTrainsPrivately(t *testing.T) {
	const sample = "../trainer/testdata/regression-sample/"
	seed := uint64(17)
	p, err := trainer.NewPrivate(trainer.PrivateOptions{Dataset: sample + "regression.csv", Schema: sample + "regression.schema.json",
		Epsilon: 2, Epochs: 10, Batch: 64,
		LR: 0.05, Seed: &seed})
	if err != nil {
		t.Fatal(err)
	}
	if p.Train.Dim != 5 || p.Train.Targets == nil {
		t.Fatalf("%d features, targets %v; want the example's 5 columns and a target", p.Train.Dim, p.Train.Targets != nil)
	}
	// The example's graph on a batch of the test records (its X and Y are
	// the data, NodeFromAny).
	const batch = 50
	idx := make([]int, batch)
	for i := range idx {
		idx[i] = i
	}
	x := make([]float64, batch*5)
	p.Test.FillFloat64(idx, x)
	g, in, out, learnables := graph.IrisExample(t, x, slices.Clone(p.Test.Targets[:batch]))
	l, err := graph.Lower[float64](g, in, out, graph.LowerOptions{Arch: "gorgonia-iris"})
	if err != nil {
		t.Fatal(err)
	}
	if l.Head != graph.HeadSquaredError || !l.Model.Regression() {
		t.Fatalf("head %s, regression %v", l.Head, l.Model.Regression())
	}
	rep, err := trainer.TrainPrivate(context.Background(), p, l.Model)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Test.MSPE == nil || rep.Privacy.Epsilon == nil || *rep.Privacy.Epsilon > 2 {
		t.Fatalf("test split %+v, receipt %+v", rep.Test, rep.Privacy)
	}
	constant := variance(p.Test.Targets)
	t.Logf("examples/iris, DP-SGD at ε %.3g: test MSPE %.4f, constant predictor %.4f", *rep.Privacy.Epsilon, *rep.Test.MSPE, constant)
	if !(*rep.Test.MSPE < constant/3) {
		t.Errorf("test MSPE %.4f, want below a third of the constant predictor's %.4f", *rep.Test.MSPE, constant)
	}
	if err := l.WriteBack(); err != nil {
		t.Fatal(err)
	}
	theta := learnables[0]
	if got := theta.Value().Data().([]float64); !slices.Equal(got, l.Model.Params()[0].Value) {
		t.Fatalf("θ holds %v, the trained weights are %v", got, l.Model.Params()[0].Value)
	}
	var pred G.Value
	G.Read(out, &pred)
	prog, locs, err := G.CompileFunction(g, G.Nodes{in}, G.Nodes{out})
	if err != nil {
		t.Fatal(err)
	}
	vm := G.NewTapeMachine(g, G.WithPrecompiled(prog, locs))
	defer vm.Close()
	if err := G.Let(in, tensor.New(tensor.WithShape(batch, 5), tensor.WithBacking(x))); err != nil {
		t.Fatal(err)
	}
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	want := l.Model.Forward(x, batch, false)
	for i, v := range out.Value().Data().([]float64) {
		if math.Abs(v-want[i]) > 1e-12*math.Max(1, math.Abs(want[i])) {
			t.Fatalf("record %d: Gorgonia predicts %v with the written-back θ, the lowered model %v", i, v, want[i])
		}
	}
}

// variance is the mean squared deviation of v from its mean: the MSPE of
// the constant predictor that always predicts the mean.
func variance(v []float64) float64 {
	var m, s float64
	for _, x := range v {
		m += x
	}
	m /= float64(len(v))
	for _, x := range v {
		s += (x - m) * (x - m)
	}
	return s / float64(len(v))
}
