//go:build !cuda

package graph

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/trainer"
)

// exampleIris is examples/iris/main.go's graph (gorgonia/gorgonia at tag
// v0.9.18): X and Y are the data as NodeFromAny of the design matrix (n
// records of 4 features and a bias column of ones in the example's
// iris.csv, any n × 5 here) and of the target vector (built {n, 1} and
// reshaped to {n}, as the example's yT.Reshape(s[0])); θ a Gaussian
// vector; pred = Mul(X, θ), read with G.Read; and, with program, the
// example's squaredError = Square(Sub(pred, Y)), cost = Mean(squaredError)
// and Grad(cost, θ).
func exampleIris(t *testing.T, xv, yv []float64, program bool) *example {
	t.Helper()
	n := len(yv)
	xT := tensor.New(tensor.WithShape(n, len(xv)/n), tensor.WithBacking(xv))
	yT := tensor.New(tensor.WithShape(n, 1), tensor.WithBacking(yv))
	s := yT.Shape()
	if err := yT.Reshape(s[0]); err != nil {
		t.Fatal(err)
	}
	g := G.NewGraph()
	X := G.NodeFromAny(g, xT, G.WithName("x"))
	Y := G.NodeFromAny(g, yT, G.WithName("y"))
	theta := G.NewVector(g, G.Float64, G.WithName("theta"), G.WithShape(xT.Shape()[1]), G.WithInit(G.Gaussian(0, 1)))
	pred := must(G.Mul(X, theta))
	var predicted G.Value
	G.Read(pred, &predicted)
	e := &example{g: g, x: X, y: Y, out: pred, learnables: G.Nodes{theta}}
	if program {
		squaredError := must(G.Square(must(G.Sub(pred, Y))))
		e.cost = must(G.Mean(squaredError))
		if _, err := G.Grad(e.cost, theta); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// irisData is n records shaped as the example's: 4 features in [4, 6) and
// a bias column of ones, and a species code 1…3 as the target.
func irisData(rng *rand.Rand, n int) (x, y []float64) {
	x, y = make([]float64, n*5), make([]float64, n)
	for i := range n {
		for j := range 4 {
			x[i*5+j] = 4 + 2*rng.Float64()
		}
		x[i*5+4] = 1
		y[i] = float64(1 + rng.IntN(3))
	}
	return x, y
}

// IrisExample is examples/iris's program graph (exampleIris) on the
// records x (n × 5) and targets y, for the training test outside the
// package: the graph, its input, output and learnable nodes.
func IrisExample(t *testing.T, x, y []float64) (g *G.ExprGraph, in, out *G.Node, learnables G.Nodes) {
	e := exampleIris(t, x, y, true)
	return e.g, e.x, e.out, e.learnables
}

// irisGrad runs the iris program (its TapeMachine with θ's dual value
// bound, as the example's) and returns its cost and ∂cost/∂θ.
func irisGrad(t *testing.T, e *example) (cost float64, grad []float64) {
	t.Helper()
	theta := e.learnables[0]
	vm := G.NewTapeMachine(e.g, G.BindDualValues(theta))
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	gv, err := theta.Grad()
	if err != nil {
		t.Fatal(err)
	}
	return e.cost.Value().Data().(float64), append([]float64(nil), data(gv.Data())...)
}

// TestExampleIris: examples/iris (v0.9.18), linear regression with Mul(X, θ)
// for a vector θ and the squared-error cost, lowers as the program writes
// it to a regression (HeadSquaredError, Classes 1) of one Linear without a
// bias holding θ. Its outputs are Gorgonia's TapeMachine's (float64); the
// squared loss through fairdp's taps (trainer.Pass on a batch with targets,
// as DP-SGD runs it) gives the program's cost and its Grad for the batch,
// and per-sample norms and clipped sums equal a loop of batch-of-one runs
// of the program through Gorgonia's Grad. A squared error of a
// several-output node is refused.
func TestExampleIris(t *testing.T) {
	rng := rand.New(rand.NewPCG(150, 5))
	const n = 6
	x, y := irisData(rng, n)
	e := exampleIris(t, x, y, true)
	l, err := Lower[float64](e.g, e.x, e.out, LowerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(l.Model); got != "Linear(5→1, no bias)" || l.Head != HeadSquaredError || l.Model.Classes != 1 || !l.Model.Regression() {
		t.Fatalf("lowered to %s, head %s, %d classes, regression %v; want Linear(5→1, no bias), %s, 1, true",
			got, l.Head, l.Model.Classes, l.Model.Regression(), HeadSquaredError)
	}
	if len(l.Params) != 1 || l.Params[0] != e.learnables[0] || len(l.Untouched) != 0 || !l.Model.Spec().Regression() {
		t.Fatalf("params %v (want θ), untouched %v, spec %+v", l.Params, l.Untouched, l.Model.Spec())
	}
	// Evaluation: the lowered outputs are the graph's pred.
	xr, _ := irisData(rng, n)
	got := evalExample(t, e, xr, e.out)[0]
	if d := maxRelDiff(l.Model.Forward(xr, n, false), got); d > 1e-12 {
		t.Errorf("outputs differ from Gorgonia's TapeMachine by rel %.3g", d)
	}
	if err := set(e.x, e.x.Shape(), x); err != nil {
		t.Fatal(err)
	}

	// The batch: the program's cost is the mean of fairdp's per-record
	// squared losses, its Grad the mean of their gradients.
	m := l.Model
	b := trainer.Batch[float64]{Idx: make([]int, n), X: x, Labels: make([]int, n), Groups: make([]int, n), Targets: y}
	var pass trainer.Pass[float64]
	m.ZeroGrads()
	lossSum := pass.Run(m, b, nil)
	wantCost, wantGrad := irisGrad(t, e)
	if d := math.Abs(lossSum/n-wantCost) / wantCost; d > 1e-12 {
		t.Errorf("mean squared loss %.15g, the program's cost %.15g", lossSum/n, wantCost)
	}
	norms := make([]float64, n)
	m.SqNorms(norms)
	m.ParamGrads(nil)
	mean := make([]float64, len(wantGrad))
	for j, g := range m.Params()[0].Grad {
		mean[j] = g / n
	}
	if d := maxRelDiff(mean, wantGrad); d > 1e-12 {
		t.Errorf("batch gradient differs from Gorgonia's Grad by rel %.3g", d)
	}

	// Per record: a batch-of-one program through Gorgonia's Grad, with
	// the lowered model's θ.
	const clip = 5.0
	want := make([]float64, len(wantGrad))
	for i := range n {
		one := exampleIris(t, x[i*5:(i+1)*5], y[i:i+1], true)
		if err := G.Let(one.learnables[0], tensor.New(tensor.WithShape(5), tensor.WithBacking(append([]float64(nil), m.Params()[0].Value...)))); err != nil {
			t.Fatal(err)
		}
		_, g := irisGrad(t, one)
		sq := 0.0
		for _, v := range g {
			sq += v * v
		}
		if math.Abs(norms[i]-sq) > 1e-12*sq {
			t.Errorf("record %d: squared norm %.15g from the taps, %.15g from Gorgonia's batch of one", i, norms[i], sq)
		}
		f := dpops.ClipFactor(math.Sqrt(sq), clip)
		for j, v := range g {
			want[j] += f * v
		}
	}
	scale := make([]float64, n)
	for i := range scale {
		scale[i] = dpops.ClipFactor(math.Sqrt(norms[i]), clip)
	}
	m.ZeroGrads()
	m.ParamGrads(scale)
	if d := maxRelDiff(m.Params()[0].Grad, want); d > 1e-12 {
		t.Errorf("clipped sum differs from the batch-of-one loop's by rel %.3g", d)
	}

	// A squared error of two outputs per record is not a regression fairdp trains.
	g := G.NewGraph()
	xm := G.NewMatrix(g, G.Float64, G.WithShape(4, 3), G.WithName("x"))
	w := G.NewMatrix(g, G.Float64, G.WithShape(3, 2), G.WithName("w"), G.WithInit(G.Gaussian(0, 1)))
	ym := G.NewMatrix(g, G.Float64, G.WithShape(4, 2), G.WithName("y"))
	out := must(G.Mul(xm, w))
	must(G.Mean(must(G.Square(must(G.Sub(out, ym))))))
	if _, err := Lower[float64](g, xm, out, LowerOptions{}); err == nil || !strings.Contains(err.Error(), "squared error (a regression with several outputs") {
		t.Errorf("two-output squared error: error %v, want a refusal", err)
	}
}
