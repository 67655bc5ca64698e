//go:build !cuda

package graph

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/fairdp/fairdp/models"
	"github.com/fairdp/fairdp/nn"
)

// The networks of Gorgonia v0.9.18's own examples (gorgonia/gorgonia at tag
// v0.9.18, examples/<name>/main.go), built exactly as the examples build
// them: the same calls in the same order, with the same shapes, names and
// initialisers, and with the rest of each program's graph (its loss, L2
// term, Grad and update nodes). Only what the examples read from flags or
// files is a parameter: the batch size (the examples' -batchsize flag, or
// the logistic regression's N) and the element type (their -dtype flag).
//
// The gradient references (newReference: fairdp's loss on the lowered
// logits and Gorgonia's Grad of it) are built on the examples' networks
// without the rest of main (program false): Gorgonia v0.9.18 cannot take
// Grad twice through a SoftMax (the first Grad's softmax-gradient op
// panics in the second's analysis), and the examples' own losses are not
// fairdp's. The convnet's gradient reference also leaves out its Dropout
// calls (see exampleConvnet).

// example is one example program's graph: the input, the node the program
// reads its prediction from, and its learnable nodes.
type example struct {
	g          *G.ExprGraph
	x, y, out  *G.Node
	learnables G.Nodes
	cost       *G.Node // the program's cost, where a test reads it (exampleIris)
}

func must(n *G.Node, err error) *G.Node {
	if err != nil {
		panic(err)
	}
	return n
}

// example286 is examples/286/main.go: newNN, fwd and main's loss and Grad.
func example286(t *testing.T, bs int, dt tensor.Dtype, program bool) *example {
	t.Helper()
	g := G.NewGraph()
	x := G.NewMatrix(g, dt, G.WithShape(bs, 784), G.WithName("x"), G.WithInit(G.GlorotN(1.0)))
	y := G.NewMatrix(g, dt, G.WithShape(bs, 10), G.WithName("y"), G.WithInit(G.GlorotN(1.0)))
	// newNN
	w0 := G.NewMatrix(g, dt, G.WithShape(784, 300), G.WithName("w0"), G.WithInit(G.GlorotN(1.0)))
	w1 := G.NewMatrix(g, dt, G.WithShape(300, 10), G.WithName("w1"), G.WithInit(G.GlorotN(1.0)))
	// fwd
	l0 := x
	l0dot := must(G.Mul(l0, w0))
	l1 := G.Must(G.Rectify(l0dot))
	out := must(G.Mul(l1, w1))
	mout := must(G.SoftMax(out))
	if !program {
		return &example{g: g, x: x, y: y, out: mout, learnables: G.Nodes{w0, w1}}
	}
	// main
	losses := must(G.HadamardProd(mout, y))
	cost := G.Must(G.Mean(losses))
	cost = G.Must(G.Neg(cost))
	if _, err := G.Grad(cost, w0, w1); err != nil {
		t.Fatal(err)
	}
	return &example{g: g, x: x, y: y, out: mout, learnables: G.Nodes{w0, w1}}
}

// exampleLogReg is examples/logisticregression/main.go's main up to the
// update nodes wUpd and bUpd (feats = 10; N records), with w and b given
// values as the program's machine.Let(w, wT) and machine.Let(b, 0.0) do
// (wT is tensor.Random there; any values here).
func exampleLogReg(t *testing.T, N int, w0 []float64, program bool) *example {
	t.Helper()
	const feats = 10
	Float := tensor.Float64
	g := G.NewGraph()
	x := G.NewMatrix(g, Float, G.WithName("x"), G.WithShape(N, feats))
	y := G.NewVector(g, Float, G.WithName("y"), G.WithShape(N))
	w := G.NewVector(g, Float, G.WithName("w"), G.WithShape(feats))
	b := G.NewScalar(g, Float, G.WithName("bias"))
	one := G.NewConstant(1.0)
	xwmb := G.Must(G.Add(G.Must(G.Mul(x, w)), b))
	prob := G.Must(G.Sigmoid(xwmb))
	G.WithName("prob")(prob)
	let := func() {
		if err := G.Let(w, tensor.New(tensor.WithBacking(w0), tensor.WithShape(feats))); err != nil {
			t.Fatal(err)
		}
		if err := G.Let(b, 0.0); err != nil {
			t.Fatal(err)
		}
	}
	if !program {
		let()
		return &example{g: g, x: x, y: y, out: prob, learnables: G.Nodes{w, b}}
	}
	pred := G.Must(G.Gt(prob, G.NewConstant(0.5), false))
	G.WithName("pred")(pred)
	var predicted G.Value
	G.Read(pred, &predicted)
	logProb := G.Must(G.Log(prob))
	fstTerm := G.Must(G.HadamardProd(G.Must(G.Neg(y)), logProb))
	oneMinusY := G.Must(G.Sub(one, y))
	logOneMinusProb := G.Must(G.Log(G.Must(G.Sub(one, prob))))
	sndTerm := G.Must(G.HadamardProd(oneMinusY, logOneMinusProb))
	crossEntropy := G.Must(G.Sub(fstTerm, sndTerm))
	G.WithName("crossEntropy")(crossEntropy)
	loss := G.Must(G.Mean(crossEntropy))
	G.WithName("loss")(loss)
	weightSq := G.Must(G.Square(w))
	sumSq := G.Must(G.Sum(weightSq))
	l2reg := G.NewConstant(0.01, G.WithName("l2reg"))
	regTerm := G.Must(G.Mul(l2reg, sumSq))
	cost := G.Must(G.Add(loss, regTerm))
	G.WithName("cost")(cost)
	grads, err := G.Grad(cost, w, b)
	if err != nil {
		t.Fatal(err)
	}
	G.WithName("dcost/dw")(grads[0])
	G.WithName("dcost/db")(grads[1])
	learnRate := G.NewConstant(0.1)
	gwlr := G.Must(G.Mul(learnRate, grads[0]))
	G.Must(G.Sub(w, gwlr))
	gblr := G.Must(G.Mul(learnRate, grads[1]))
	G.Must(G.Sub(b, gblr))
	let()
	return &example{g: g, x: x, y: y, out: prob, learnables: G.Nodes{w, b}}
}

// exampleConvnet is examples/convnet/main.go: newConvNet, fwd and main's
// loss and Grad, for batches of bs images {bs, 1, 28, 28}. Without
// dropout (dropout false) the four G.Dropout calls are left out: Gorgonia
// v0.9.18's Dropout gradient is dy/p (not dy/(1−p)) and 0 for p = 0, so it
// cannot be the reference for gradients (see doc.go); the lowered Dropout
// is checked against nn's own slow path instead.
func exampleConvnet(t *testing.T, bs int, dt tensor.Dtype, program, dropout bool) *example {
	t.Helper()
	g := G.NewGraph()
	x := G.NewTensor(g, dt, 4, G.WithShape(bs, 1, 28, 28), G.WithName("x"))
	y := G.NewMatrix(g, dt, G.WithShape(bs, 10), G.WithName("y"))
	// newConvNet
	w0 := G.NewTensor(g, dt, 4, G.WithShape(32, 1, 3, 3), G.WithName("w0"), G.WithInit(G.GlorotN(1.0)))
	w1 := G.NewTensor(g, dt, 4, G.WithShape(64, 32, 3, 3), G.WithName("w1"), G.WithInit(G.GlorotN(1.0)))
	w2 := G.NewTensor(g, dt, 4, G.WithShape(128, 64, 3, 3), G.WithName("w2"), G.WithInit(G.GlorotN(1.0)))
	w3 := G.NewMatrix(g, dt, G.WithShape(128*3*3, 625), G.WithName("w3"), G.WithInit(G.GlorotN(1.0)))
	w4 := G.NewMatrix(g, dt, G.WithShape(625, 10), G.WithName("w4"), G.WithInit(G.GlorotN(1.0)))
	d0, d1, d2, d3 := 0.2, 0.2, 0.2, 0.55
	drop := func(n *G.Node, p float64) *G.Node {
		if !dropout {
			return n
		}
		return must(G.Dropout(n, p))
	}
	// fwd
	c0 := must(G.Conv2d(x, w0, tensor.Shape{3, 3}, []int{1, 1}, []int{1, 1}, []int{1, 1}))
	a0 := must(G.Rectify(c0))
	p0 := must(G.MaxPool2D(a0, tensor.Shape{2, 2}, []int{0, 0}, []int{2, 2}))
	l0 := drop(p0, d0)
	c1 := must(G.Conv2d(l0, w1, tensor.Shape{3, 3}, []int{1, 1}, []int{1, 1}, []int{1, 1}))
	a1 := must(G.Rectify(c1))
	p1 := must(G.MaxPool2D(a1, tensor.Shape{2, 2}, []int{0, 0}, []int{2, 2}))
	l1 := drop(p1, d1)
	c2 := must(G.Conv2d(l1, w2, tensor.Shape{3, 3}, []int{1, 1}, []int{1, 1}, []int{1, 1}))
	a2 := must(G.Rectify(c2))
	p2 := must(G.MaxPool2D(a2, tensor.Shape{2, 2}, []int{0, 0}, []int{2, 2}))
	b, c, h, w := p2.Shape()[0], p2.Shape()[1], p2.Shape()[2], p2.Shape()[3]
	r2 := must(G.Reshape(p2, tensor.Shape{b, c * h * w}))
	l2 := drop(r2, d2)
	fc := must(G.Mul(l2, w3))
	a3 := must(G.Rectify(fc))
	l3 := drop(a3, d3)
	out := must(G.Mul(l3, w4))
	mout := must(G.SoftMax(out))
	learnables := G.Nodes{w0, w1, w2, w3, w4}
	if !program {
		return &example{g: g, x: x, y: y, out: mout, learnables: learnables}
	}
	// main
	losses := G.Must(G.Log(G.Must(G.HadamardProd(mout, y))))
	cost := G.Must(G.Mean(losses))
	cost = G.Must(G.Neg(cost))
	if _, err := G.Grad(cost, learnables...); err != nil {
		t.Fatal(err)
	}
	return &example{g: g, x: x, y: y, out: mout, learnables: learnables}
}

// evalExample runs the example graph once in evaluation mode (a
// TapeMachine with EvalMode: Dropout is the identity) on input x and
// returns the values of nodes.
func evalExample(t *testing.T, e *example, x []float64, nodes ...*G.Node) [][]float64 {
	t.Helper()
	vals := make([]G.Value, len(nodes))
	var reads G.Nodes
	for i, n := range nodes {
		reads = append(reads, G.Read(n, &vals[i]))
	}
	// Compiled from the input to the reads, as examples/logisticregression
	// compiles its program (CompileFunction): the whole graph would also run
	// that program's Gt(prob, 0.5), which panics in Gorgonia v0.9.18 with
	// gorgonia.org/tensor v0.9.23 (GtVSF64 indexes past its result).
	prog, locs, err := G.CompileFunction(e.g, G.Nodes{e.x}, reads)
	if err != nil {
		t.Fatal(err)
	}
	vm := G.NewTapeMachine(e.g, G.WithPrecompiled(prog, locs), G.EvalMode())
	defer vm.Close()
	if err := set(e.x, e.x.Shape(), x); err != nil {
		t.Fatal(err)
	}
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	out := make([][]float64, len(nodes))
	for i, v := range vals {
		out[i] = data(v.Data())
	}
	return out
}

// checkEval compares the lowered model's logits, in evaluation mode, and
// its head's output with Gorgonia's TapeMachine on the example's own graph.
func checkEval[T nn.Float](t *testing.T, e *example, l *Lowered[T], x []float64, tol float64) {
	t.Helper()
	batch := e.x.Shape()[0]
	got := evalExample(t, e, x, l.Logits, e.out)
	logits := l.Model.Forward(to[T](x), batch, false)
	t.Logf("evaluation logits: rel diff %.3g from Gorgonia's TapeMachine", maxRelDiff(logits, got[0]))
	if d := maxRelDiff(logits, got[0]); d > tol {
		t.Errorf("logits differ from Gorgonia's by rel %.3g (tolerance %g)", d, tol)
	}
	probs := make([]T, batch*max(l.Model.OutDim(), 2))
	l.Model.Probabilities(logits, batch, probs)
	want := probs
	switch l.Head {
	case HeadSigmoid: // the graph's output is P(class 1)
		want = nil
		for i := range batch {
			want = append(want, probs[2*i+1])
		}
	case HeadLogSoftMax:
		for i, p := range probs {
			want[i] = T(math.Log(float64(p)))
		}
	}
	if d := maxRelDiff(want, got[1]); d > tol {
		t.Errorf("the graph's %s output differs from the lowered model's by rel %.3g", l.Head, d)
	}
}

// checkExampleGrads checks the lowered model l (float64, the example's
// network built for batch, program false) against Gorgonia's Grad: logits, loss and every parameter
// gradient of the batch (newReference puts fairdp's loss on l.Logits), and
// the per-sample norms and clipped sums against a loop of batch-of-one runs
// of the same example (one, built for one image and given l's weights).
func checkExampleGrads(t *testing.T, e *example, l *Lowered[float64], one *example, l1 *Lowered[float64], seed uint64) {
	t.Helper()
	batch := e.x.Shape()[0]
	for i, p := range l.Model.Params() {
		copy(l1.Model.Params()[i].Value, p.Value)
	}
	if err := l.WriteBack(); err != nil {
		t.Fatal(err)
	}
	if err := l1.WriteBack(); err != nil {
		t.Fatal(err)
	}
	gm, err := newReference(e.g, e.x, asMatrix(t, l.Logits), l.Params, l.transposed, batch)
	if err != nil {
		t.Fatal(err)
	}
	defer gm.Close()
	gm1, err := newReference(one.g, one.x, asMatrix(t, l1.Logits), l1.Params, l1.transposed, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer gm1.Close()
	for _, y := range []*G.Node{e.y, one.y} { // main's target node, unused here, is still an input to load
		if y.Value() == nil {
			if err := set(y, y.Shape(), make([]float64, y.Shape().TotalSize())); err != nil {
				t.Fatal(err)
			}
		}
	}
	rng := rand.New(rand.NewPCG(seed, 31))
	x, labels, weight := batchData(rng, batch, l.Model.InSize(), l.Model.Classes)
	compareWith(t, l.Model, gm, x, labels, weight, 1e-9)
	checkPerSample(t, l.Model, x, labels, weight, rng, batchOfOneGrads(t, gm1, x, labels, weight))
}

// asMatrix is the logits node as {batch, outputs}: a {batch} vector (one
// output, from Mul(x, w) with a weight vector) reshaped to {batch, 1}.
func asMatrix(t *testing.T, logits *G.Node) *G.Node {
	t.Helper()
	if logits.Dims() == 2 {
		return logits
	}
	return must(G.Reshape(logits, tensor.Shape{logits.Shape()[0], 1}))
}

// TestExample286 lowers examples/286 (MLP 784→300→10, Mul without biases,
// Rectify, SoftMax; its graph also holds the loss and Grad) and checks it
// against Gorgonia in float64 and float32.
func TestExample286(t *testing.T) {
	e := example286(t, 4, tensor.Float64, true)
	l, err := Lower[float64](e.g, e.x, e.out, LowerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(l.Model), "Linear(784→300, no bias), ReLU, Linear(300→10, no bias)"; got != want || l.Head != HeadSoftMax {
		t.Fatalf("lowered to %s, head %s; want %s, softmax", got, l.Head, want)
	}
	if len(l.Untouched) != 0 || len(l.Notes) != 0 || l.WeightDecay != 0 {
		t.Errorf("untouched %v, notes %q, weight decay %g: want none (both learnables are lowered, no L2)", l.Untouched, l.Notes, l.WeightDecay)
	}
	x, _, _ := batchData(rand.New(rand.NewPCG(1, 286)), 4, 784, 10)
	checkEval(t, e, l, x, 1e-9)
	net := example286(t, 4, tensor.Float64, false)
	ln, err := Lower[float64](net.g, net.x, net.out, LowerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	one := example286(t, 1, tensor.Float64, false)
	l1, err := Lower[float64](one.g, one.x, one.out, LowerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkExampleGrads(t, net, ln, one, l1, 286)

	e32 := example286(t, 3, tensor.Float32, true)
	l32, err := Lower[float32](e32.g, e32.x, e32.out, LowerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	x32, _, _ := batchData(rand.New(rand.NewPCG(2, 286)), 3, 784, 10)
	checkEval(t, e32, l32, x32, 1e-4)
}

// TestExampleConvnet lowers examples/convnet (three Conv2d without a bias,
// Rectify, MaxPool2D, Dropout, Reshape, two Mul, SoftMax, with the loss and
// Grad) and checks it against Gorgonia: evaluation-mode logits of the
// example as written (Dropout the identity), and gradients, per-sample
// norms and clipped sums of the example without its Dropout calls.
func TestExampleConvnet(t *testing.T) {
	e := exampleConvnet(t, 3, tensor.Float64, true, true)
	l, err := Lower[float64](e.g, e.x, e.out, LowerOptions{DropoutSeed: 1})
	if err != nil {
		t.Fatal(err)
	}
	want := "Conv2d(1→32, 3x3, stride 1, pad 1, in 28x28, no bias), ReLU, MaxPool2d(2, in 32x28x28), Dropout(0.2), " +
		"Conv2d(32→64, 3x3, stride 1, pad 1, in 14x14, no bias), ReLU, MaxPool2d(2, in 64x14x14), Dropout(0.2), " +
		"Conv2d(64→128, 3x3, stride 1, pad 1, in 7x7, no bias), ReLU, MaxPool2d(2, in 128x7x7), Flatten, Dropout(0.2), " +
		"Linear(1152→625, no bias), ReLU, Dropout(0.55), Linear(625→10, no bias)"
	// The program's loss Log(HadamardProd(m.out, y)) makes Gorgonia's Log
	// stabilisation turn the SoftMax node itself into a LogSoftMax
	// (stabilization.go sets its op's isLog), so the example's output is
	// the log-probabilities: the head Lower reads from the graph.
	if got := names(l.Model); got != want || l.Head != HeadLogSoftMax {
		t.Fatalf("lowered to %s, head %s; want %s, log-softmax", got, l.Head, want)
	}
	if n := len(l.Model.Params()); n != 5 || len(l.Untouched) != 0 {
		t.Errorf("%d parameter blocks (want the example's 5 weights, no bias blocks), untouched %v", n, l.Untouched)
	}
	x, _, _ := batchData(rand.New(rand.NewPCG(1, 28)), 3, 784, 10)
	checkEval(t, e, l, x, 1e-9)

	noDrop := exampleConvnet(t, 3, tensor.Float64, false, false)
	ln, err := Lower[float64](noDrop.g, noDrop.x, noDrop.out, LowerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	one := exampleConvnet(t, 1, tensor.Float64, false, false)
	l1, err := Lower[float64](one.g, one.x, one.out, LowerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkExampleGrads(t, noDrop, ln, one, l1, 28)

	// A checkpoint of the lowered layers (no-bias convolutions included)
	// reads back and loads into the graph.
	var buf bytes.Buffer
	if err := models.Save(&buf, l.Model, models.Meta{}); err != nil {
		t.Fatal(err)
	}
	back, _, err := models.Load(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.LoadWeights(back.(*models.Model[float64])); err != nil {
		t.Fatal(err)
	}

	// float32, as the example's -dtype float32 runs it.
	e32 := exampleConvnet(t, 2, tensor.Float32, true, true)
	l32, err := Lower[float32](e32.g, e32.x, e32.out, LowerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	x32, _, _ := batchData(rand.New(rand.NewPCG(2, 28)), 2, 784, 10)
	checkEval(t, e32, l32, x32, 1e-4)
}

// TestExampleLogisticRegression lowers examples/logisticregression (float64,
// a weight vector: Mul(x, w) is a matrix–vector product; a scalar bias via
// Add; Sigmoid; the graph also holds the loss, an L2 term on w, Grad and
// the update nodes) to a one-output Linear with a sigmoid head. Its L2
// term covers w but not the bias, so it is dropped, and Notes says so.
func TestExampleLogisticRegression(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 10))
	w0 := make([]float64, 10)
	for i := range w0 {
		w0[i] = rng.NormFloat64() / 3
	}
	const N = 6
	e := exampleLogReg(t, N, w0, true)
	var log strings.Builder
	l, err := Lower[float64](e.g, e.x, e.out, LowerOptions{Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(l.Model); got != "Linear(10→1)" || l.Head != HeadSigmoid || l.Model.Classes != 2 {
		t.Fatalf("lowered to %s, head %s, %d classes; want Linear(10→1), sigmoid, 2", got, l.Head, l.Model.Classes)
	}
	if len(l.Params) != 2 || l.Params[0] != e.learnables[0] || l.Params[1] != e.learnables[1] {
		t.Fatalf("params %v, want the example's w and bias", l.Params)
	}
	if len(l.Untouched) != 0 || len(l.L2) != 1 || l.L2[0].Node != e.learnables[0] || l.L2[0].Coef != 0.01 || l.WeightDecay != 0 {
		t.Errorf("untouched %v, L2 %+v, weight decay %g: want none, 0.01·Σw² on w, 0 (the term leaves out the bias)", l.Untouched, l.L2, l.WeightDecay)
	}
	want := "graph: Lower: the L2 term 0.01·Σw² is dropped: it leaves out bias"
	if got := log.String(); !strings.HasPrefix(got, want) || strings.Count(got, "\n") != 1 || len(l.Notes) != 1 {
		t.Errorf("log %q (notes %q), want one line starting %q", got, l.Notes, want)
	}
	x, _, _ := batchData(rng, N, 10, 2)
	checkEval(t, e, l, x, 1e-9)

	net := exampleLogReg(t, N, w0, false)
	ln, err := Lower[float64](net.g, net.x, net.out, LowerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	one := exampleLogReg(t, 1, w0, false)
	l1, err := Lower[float64](one.g, one.x, one.out, LowerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A bias other than the example's 0, to see it; checkExampleGrads
	// writes it back into both graphs (a Gorgonia scalar value, not an
	// array).
	ln.Model.Params()[1].Value[0] = 0.3
	checkExampleGrads(t, net, ln, one, l1, 10)
	if got := values(net.learnables[1]); len(got) != 1 || got[0] != 0.3 {
		t.Errorf("bias after WriteBack %v, want 0.3", got)
	}
}

// ConvnetExample is examples/convnet's program graph (exampleConvnet with
// its Dropout calls, loss and Grad) for the training test outside the
// package: the graph, its input, output and learnable nodes.
func ConvnetExample(t *testing.T, bs int, dt tensor.Dtype) (g *G.ExprGraph, x, out *G.Node, learnables G.Nodes) {
	e := exampleConvnet(t, bs, dt, true, true)
	return e.g, e.x, e.out, e.learnables
}

// exampleResNet is examples/resnet/main.go's newResNet and fwd (and, with
// program, main's loss and Grad, which are examples/convnet's), scaled
// down: the example's 28×28 images and 32/64/128 channels give its dense
// branches 3136×12544 and 6272×25088 weights (1.6 GB in float64), so here
// the images are side×side (side divisible by 4) and the channels 2, 3 and
// 4, every shape derived
// the way the example derives it; the calls, their order and the joins
// (Add of a convolution's output and a dense branch reshaped back to its
// shape) are the example's. dropout false leaves out the Dropout calls, as
// exampleConvnet does.
func exampleResNet(t *testing.T, bs, side int, program, dropout bool) *example {
	t.Helper()
	const ch0, ch1, ch2 = 2, 3, 4
	dt := tensor.Float64
	g := G.NewGraph()
	x := G.NewTensor(g, dt, 4, G.WithShape(bs, 1, side, side), G.WithName("x"))
	y := G.NewMatrix(g, dt, G.WithShape(bs, 10), G.WithName("y"))
	q1, q2 := side/2, side/4 // the sides after one and two pools
	// newResNet
	w0 := G.NewTensor(g, dt, 4, G.WithShape(ch0, 1, 3, 3), G.WithName("w0"), G.WithInit(G.GlorotN(1.0)))
	w1 := G.NewTensor(g, dt, 4, G.WithShape(ch1, ch0, 3, 3), G.WithName("w1"), G.WithInit(G.GlorotN(1.0)))
	w1r := G.NewMatrix(g, dt, G.WithShape(ch1*q2*q2, ch1*q1*q1), G.WithName("w1r"), G.WithInit(G.GlorotN(1.0)))
	w2 := G.NewTensor(g, dt, 4, G.WithShape(ch2, ch1, 3, 3), G.WithName("w2"), G.WithInit(G.GlorotN(1.0)))
	w2r := G.NewMatrix(g, dt, G.WithShape(ch2*(q1/2)*(q1/2), ch2*q1*q1), G.WithName("w2r"), G.WithInit(G.GlorotN(1.0)))
	w3 := G.NewMatrix(g, dt, G.WithShape(ch2*q1*q1, 625), G.WithName("w3"), G.WithInit(G.GlorotN(1.0)))
	w4 := G.NewMatrix(g, dt, G.WithShape(625, 10), G.WithName("w4"), G.WithInit(G.GlorotN(1.0)))
	d0, d1, d2, d3 := 0.3, 0.3, 0.3, 0.2
	drop := func(n *G.Node, p float64) *G.Node {
		if !dropout {
			return n
		}
		return must(G.Dropout(n, p))
	}
	// fwd
	c0 := must(G.Conv2d(x, w0, tensor.Shape{3, 3}, []int{1, 1}, []int{1, 1}, []int{1, 1}))
	a0 := must(G.Rectify(c0))
	p0 := must(G.MaxPool2D(a0, tensor.Shape{2, 2}, []int{0, 0}, []int{2, 2}))
	l0 := drop(p0, d0)
	c1 := must(G.Conv2d(l0, w1, tensor.Shape{3, 3}, []int{1, 1}, []int{1, 1}, []int{1, 1}))
	a1 := must(G.Rectify(c1))
	p1 := must(G.MaxPool2D(a1, tensor.Shape{2, 2}, []int{0, 0}, []int{2, 2}))
	b, c, h, w := p1.Shape()[0], p1.Shape()[1], p1.Shape()[2], p1.Shape()[3]
	r1 := must(G.Reshape(p1, tensor.Shape{b, c * h * w}))
	m1 := must(G.Mul(r1, w1r))
	r1 = must(G.Reshape(m1, c1.Shape()))
	s1 := must(G.Add(c1, r1))
	l1 := drop(s1, d1)
	c2 := must(G.Conv2d(l1, w2, tensor.Shape{3, 3}, []int{1, 1}, []int{1, 1}, []int{1, 1}))
	a2 := must(G.Rectify(c2))
	p2 := must(G.MaxPool2D(a2, tensor.Shape{2, 2}, []int{0, 0}, []int{2, 2}))
	b, c, h, w = p2.Shape()[0], p2.Shape()[1], p2.Shape()[2], p2.Shape()[3]
	r2 := must(G.Reshape(p2, tensor.Shape{b, c * h * w}))
	m2 := must(G.Mul(r2, w2r))
	r2 = must(G.Reshape(m2, c2.Shape()))
	s2 := must(G.Add(c2, r2))
	l2 := drop(s2, d2)
	l2 = must(G.Reshape(l2, tensor.Shape{b, ch2 * q1 * q1}))
	fc := must(G.Mul(l2, w3))
	a3 := must(G.Rectify(fc))
	l3 := drop(a3, d3)
	out := must(G.Mul(l3, w4))
	mout := must(G.SoftMax(out))
	learnables := G.Nodes{w0, w1, w1r, w2, w2r, w3, w4}
	if program {
		losses := G.Must(G.Log(G.Must(G.HadamardProd(mout, y))))
		cost := G.Must(G.Neg(G.Must(G.Mean(losses))))
		if _, err := G.Grad(cost, learnables...); err != nil {
			t.Fatal(err)
		}
	}
	return &example{g: g, x: x, y: y, out: mout, learnables: learnables}
}

// TestExampleResNet lowers examples/resnet (scaled down: exampleResNet):
// its two joins become Residual layers whose body is the dense branch
// (ReLU, MaxPool2d, Flatten, Linear without a bias, Unflatten) and whose
// shortcut is the identity; logits agree with Gorgonia in evaluation, and
// gradients, per-sample norms and clipped sums with Gorgonia's Grad (the
// network without its Dropout calls, and a batch-of-one loop).
func TestExampleResNet(t *testing.T) {
	e := exampleResNet(t, 3, 12, true, true)
	l, err := Lower[float64](e.g, e.x, e.out, LowerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := "Conv2d(1→2, 3x3, stride 1, pad 1, in 12x12, no bias), ReLU, MaxPool2d(2, in 2x12x12), Dropout(0.3), " +
		"Conv2d(2→3, 3x3, stride 1, pad 1, in 6x6, no bias), Residual(ReLU, MaxPool2d(2, in 3x6x6), Flatten, Linear(27→108, no bias), " +
		"Unflatten(3x6x6) + identity), Dropout(0.3), Conv2d(3→4, 3x3, stride 1, pad 1, in 6x6, no bias), Residual(ReLU, " +
		"MaxPool2d(2, in 4x6x6), Flatten, Linear(36→144, no bias), Unflatten(4x6x6) + identity), Dropout(0.3), Flatten, " +
		"Linear(144→625, no bias), ReLU, Dropout(0.2), Linear(625→10, no bias)"
	if got := names(l.Model); got != want || l.Head != HeadLogSoftMax {
		t.Fatalf("lowered to %s, head %s; want %s, log-softmax (see TestExampleConvnet)", got, l.Head, want)
	}
	if len(l.Params) != len(e.learnables) || len(l.Untouched) != 0 {
		t.Errorf("%d parameter blocks for the example's %d learnables, untouched %v", len(l.Params), len(e.learnables), l.Untouched)
	}
	x, _, _ := batchData(rand.New(rand.NewPCG(1, 12)), 3, 144, 10)
	checkEval(t, e, l, x, 1e-9)
	net := exampleResNet(t, 3, 12, false, false)
	ln, err := Lower[float64](net.g, net.x, net.out, LowerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	one := exampleResNet(t, 1, 12, false, false)
	l1, err := Lower[float64](one.g, one.x, one.out, LowerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkExampleGrads(t, net, ln, one, l1, 12)
}

// ResNetExample is examples/resnet's program graph, scaled down
// (exampleResNet) on side×side images, for the training test outside the
// package.
func ResNetExample(t *testing.T, bs, side int) (g *G.ExprGraph, x, out *G.Node, learnables G.Nodes) {
	e := exampleResNet(t, bs, side, true, true)
	return e.g, e.x, e.out, e.learnables
}
