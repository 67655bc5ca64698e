//go:build !cuda

package graph_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
// ε = 2 on a generated regression table (irisTable: the example's five
// columns and a target): the test MSPE is well below the constant predictor's, the receipt holds
// the budget, and the private θ is written back into the example's node,
// where Gorgonia's TapeMachine predicts with it what the lowered model
// predicts.
func TestExampleIrisTrainsPrivately(t *testing.T) {
	dir := t.TempDir()
	csv, schema := irisTable(t, dir, 2000)
	seed := uint64(17)
	p, err := trainer.NewPrivate(trainer.PrivateOptions{Dataset: csv, Schema: schema, Epsilon: 2, Epochs: 10, Batch: 64,
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

// irisTable writes n records shaped as examples/iris's design matrix: four
// features in [4, 6), a bias column of ones, and a target
// y = 2·f0 − f1 + 0.5·f2 + N(0, 0.2²) around the features' means, so that
// the standardised features (the loader centres each column, the constant
// one to 0) predict it without an intercept.
func irisTable(t *testing.T, dir string, n int) (csv, schema string) {
	t.Helper()
	r := rand.New(rand.NewPCG(4, 150))
	var b strings.Builder
	b.WriteString("f0,f1,f2,f3,bias,s,y\n")
	for i := range n {
		f := [4]float64{}
		for j := range f {
			f[j] = 4 + 2*r.Float64()
		}
		y := 2*(f[0]-5) - (f[1] - 5) + 0.5*(f[2]-5) + 0.2*r.NormFloat64()
		fmt.Fprintf(&b, "%g,%g,%g,%g,1,%d,%g\n", f[0], f[1], f[2], f[3], i%2, y)
	}
	csv, schema = filepath.Join(dir, "iris.csv"), filepath.Join(dir, "iris.schema.json")
	if err := os.WriteFile(csv, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	s := `{"name": "iris-like", "files": ["iris.csv"], "format": {"header": true}, "target": "y",
	  "sensitive": {"columns": ["s"]}, "numeric": ["f0", "f1", "f2", "f3", "bias"]}`
	if err := os.WriteFile(schema, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return csv, schema
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
