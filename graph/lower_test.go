//go:build !cuda

package graph

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/fairdp/fairdp/models"
	"github.com/fairdp/fairdp/nn"
)

// userNet writes a network the way a Gorgonia user does, with weights
// drawn from rng: it is the input of Lower in the tests.
type userNet struct {
	t     *testing.T
	g     *G.ExprGraph
	dt    tensor.Dtype
	rng   *rand.Rand
	x     *G.Node
	cur   *G.Node
	batch int
}

func newUserNet(t *testing.T, seed uint64, batch int, in ...int) *userNet {
	g := G.NewGraph()
	shape := append([]int{batch}, in...)
	x := G.NewTensor(g, tensor.Float64, len(shape), G.WithShape(shape...), G.WithName("x"))
	return &userNet{t: t, g: g, dt: tensor.Float64, rng: rand.New(rand.NewPCG(seed, 3)), x: x, cur: x, batch: batch}
}

func (u *userNet) must(n *G.Node, err error) *G.Node {
	u.t.Helper()
	if err != nil {
		u.t.Fatal(err)
	}
	return n
}

// param is a learnable node with N(0, 0.5²) values.
func (u *userNet) param(name string, shape ...int) *G.Node { return u.paramScaled(name, 0.5, shape...) }

// paramScaled is a learnable node with N(0, scale²) values (a layer's
// weights scaled by 1/√fan-in keep the softmax away from saturation, where
// a sample's gradient is all cancellation).
func (u *userNet) paramScaled(name string, scale float64, shape ...int) *G.Node {
	v := make([]float64, tensor.Shape(shape).TotalSize())
	for i := range v {
		v[i] = scale * u.rng.NormFloat64()
	}
	val := tensor.New(tensor.WithShape(shape...), tensor.WithBacking(v))
	return G.NewTensor(u.g, u.dt, len(shape), G.WithShape(shape...), G.WithName(name), G.WithValue(val))
}

func (u *userNet) dense(name string, out int) *userNet {
	in := u.cur.Shape()[1]
	scale := 1 / math.Sqrt(float64(in))
	w := u.paramScaled(name+"_w", scale, in, out)
	b := u.paramScaled(name+"_b", scale, out)
	z := u.must(G.Mul(u.cur, w))
	u.cur = u.must(G.BroadcastAdd(z, b, nil, []byte{0}))
	return u
}

// denseT is a dense layer whose weight is stored {out, in} and used
// transposed, Mul(x, Transpose(W)), with a bias unless noBias.
func (u *userNet) denseT(name string, out int, noBias bool) *userNet {
	in := u.cur.Shape()[1]
	scale := 1 / math.Sqrt(float64(in))
	wt := u.must(G.Transpose(u.paramScaled(name+"_w", scale, out, in), 1, 0))
	u.cur = u.must(G.Mul(u.cur, wt))
	if !noBias {
		u.cur = u.must(G.BroadcastAdd(u.cur, u.paramScaled(name+"_b", scale, out), nil, []byte{0}))
	}
	return u
}

// denseNoBias is x × W with W {in, out} and no bias.
func (u *userNet) denseNoBias(name string, out int) *userNet {
	in := u.cur.Shape()[1]
	u.cur = u.must(G.Mul(u.cur, u.paramScaled(name+"_w", 1/math.Sqrt(float64(in)), in, out)))
	return u
}

func (u *userNet) conv(name string, outC, k, pad, stride int) *userNet {
	return u.convWin(name, outC, [2]int{k, k}, [2]int{pad, pad}, [2]int{stride, stride})
}

// convWin is Conv2d with a kh×kw kernel and per-axis pad and stride.
func (u *userNet) convWin(name string, outC int, kernel, pad, stride [2]int) *userNet {
	inC := u.cur.Shape()[1]
	scale := 1 / math.Sqrt(float64(inC*kernel[0]*kernel[1]))
	f := u.paramScaled(name+"_f", scale, outC, inC, kernel[0], kernel[1])
	b := u.paramScaled(name+"_b", scale, outC)
	z := u.must(G.Conv2d(u.cur, f, tensor.Shape{kernel[0], kernel[1]}, pad[:], stride[:], []int{1, 1}))
	u.cur = u.must(G.BroadcastAdd(z, b, nil, []byte{0, 2, 3}))
	return u
}

// convNoBias is Conv2d alone, as Gorgonia's examples write it (examples/
// convnet): no bias node.
func (u *userNet) convNoBias(name string, outC, k, pad, stride int) *userNet {
	inC := u.cur.Shape()[1]
	f := u.paramScaled(name+"_f", 1/math.Sqrt(float64(inC*k*k)), outC, inC, k, k)
	u.cur = u.must(G.Conv2d(u.cur, f, tensor.Shape{k, k}, []int{pad, pad}, []int{stride, stride}, []int{1, 1}))
	return u
}

// residual joins two branches from the current node, as ResNet blocks
// (Gorgonia's examples/resnet) write them: Add(body(x), shortcut(x)), a
// nil shortcut being x itself.
func (u *userNet) residual(body, shortcut func(*userNet)) *userNet {
	from := u.cur
	body(u)
	b := u.cur
	u.cur = from
	if shortcut != nil {
		shortcut(u)
	}
	u.cur = u.must(G.Add(b, u.cur))
	return u
}

func (u *userNet) apply(f func(*G.Node) (*G.Node, error)) *userNet {
	u.cur = u.must(f(u.cur))
	return u
}

func (u *userNet) flatten() *userNet {
	s := u.cur.Shape()
	u.cur = u.must(G.Reshape(u.cur, tensor.Shape{s[0], tensor.Shape(s[1:]).TotalSize()}))
	return u
}

func (u *userNet) pool(k int) *userNet {
	u.cur = u.must(G.MaxPool2D(u.cur, tensor.Shape{k, k}, []int{0, 0}, []int{k, k}))
	return u
}

func leaky(x *G.Node) (*G.Node, error)   { return G.LeakyRelu(x, 0.1) }
func softmax(x *G.Node) (*G.Node, error) { return G.SoftMax(x) }
func logSoftmax(x *G.Node) (*G.Node, error) {
	return G.LogSoftMax(x)
}
func dropout(p float64) func(*G.Node) (*G.Node, error) {
	return func(x *G.Node) (*G.Node, error) { return G.Dropout(x, p) }
}

// batchedDense is a dense layer written with BatchedMatMul over a single
// batch of matrices.
func (u *userNet) batchedDense(name string, out int) *userNet {
	in := u.cur.Shape()[1]
	w := u.param(name+"_w", 1, in, out)
	b := u.param(name+"_b", out)
	a := u.must(G.Reshape(u.cur, tensor.Shape{1, u.batch, in}))
	z := u.must(G.BatchedMatMul(a, w))
	z = u.must(G.Reshape(z, tensor.Shape{u.batch, out}))
	u.cur = u.must(G.BroadcastAdd(z, b, nil, []byte{0}))
	return u
}

// batchedDenseT is a dense layer without a bias written with
// BatchedMatMul(a, W, false, true): W is {1, out, in}, used transposed.
func (u *userNet) batchedDenseT(name string, out int) *userNet {
	in := u.cur.Shape()[1]
	w := u.paramScaled(name+"_w", 1/math.Sqrt(float64(in)), 1, out, in)
	a := u.must(G.Reshape(u.cur, tensor.Shape{1, u.batch, in}))
	z := u.must(G.BatchedMatMul(a, w, false, true))
	u.cur = u.must(G.Reshape(z, tensor.Shape{u.batch, out}))
	return u
}

// opCases cover every supported op and layer pattern, each with the head
// and layers fairdp must find.
var opCases = []struct {
	name   string
	build  func(t *testing.T, batch int) *userNet
	head   Head
	layers string
	batch  int
}{
	{"dense-relu-dense-softmax", func(t *testing.T, batch int) *userNet {
		return newUserNet(t, 1, batch, 5).dense("h", 6).apply(G.Rectify).dense("o", 3).apply(softmax)
	}, HeadSoftMax, "Linear(5→6), ReLU, Linear(6→3)", 4},
	{"conv-relu-pool-flatten-logsoftmax", func(t *testing.T, batch int) *userNet {
		return newUserNet(t, 2, batch, 2, 8, 8).conv("c", 4, 3, 1, 1).apply(G.Rectify).pool(2).flatten().dense("o", 3).apply(logSoftmax)
	}, HeadLogSoftMax, "Conv2d(2→4, 3x3, stride 1, pad 1, in 8x8), ReLU, MaxPool2d(2, in 4x8x8), Flatten, Linear(64→3)", 3},
	{"strided-conv-tanh-leaky-sigmoid-head", func(t *testing.T, batch int) *userNet {
		return newUserNet(t, 3, batch, 2, 9, 9).conv("c", 3, 3, 2, 2).apply(G.Tanh).pool(3).apply(leaky).flatten().dense("o", 1).apply(G.Sigmoid)
	}, HeadSigmoid, "Conv2d(2→3, 3x3, stride 2, pad 2, in 9x9), Tanh, MaxPool2d(3, in 3x6x6), LeakyReLU(0.1), Flatten, Linear(12→1)", 4},
	{"k5-and-1x1-conv", func(t *testing.T, batch int) *userNet {
		return newUserNet(t, 4, batch, 1, 12, 12).conv("c1", 3, 5, 0, 1).apply(G.Rectify).conv("c2", 2, 1, 0, 1).apply(G.Rectify).pool(2).flatten().dense("o", 2)
	}, HeadNone, "Conv2d(1→3, 5x5, stride 1, pad 0, in 12x12), ReLU, Conv2d(3→2, 1x1, stride 1, pad 0, in 8x8), ReLU, MaxPool2d(2, in 2x8x8), Flatten, Linear(32→2)", 3},
	{"batched-dense-sigmoid", func(t *testing.T, batch int) *userNet {
		return newUserNet(t, 5, batch, 5).batchedDense("h", 4).apply(G.Sigmoid).dense("o", 3)
	}, HeadNone, "Linear(5→4), Sigmoid, Linear(4→3)", 4},
	// Per-axis windows: a "same" 3×5 convolution (its input gradient is
	// computed as a convolution), then a 3×5 kernel with stride (2,1) and
	// pad (1,2).
	{"rectangular-conv", func(t *testing.T, batch int) *userNet {
		return newUserNet(t, 6, batch, 3, 7, 9).convWin("c1", 3, [2]int{3, 5}, [2]int{1, 2}, [2]int{1, 1}).apply(G.Rectify).
			convWin("c2", 2, [2]int{3, 5}, [2]int{1, 2}, [2]int{2, 1}).apply(G.Tanh).flatten().dense("o", 3).apply(softmax)
	}, HeadSoftMax, "Conv2d(3→3, 3x5, stride 1, pad (1,2), in 7x9), ReLU, Conv2d(3→2, 3x5, stride (2,1), pad (1,2), in 7x9), Tanh, Flatten, Linear(72→3)", 4},
	// Dense weights stored {out, in} and used transposed, with and without
	// a bias, and as BatchedMatMul's transB; dense layers without a bias.
	{"dense-transposed-and-no-bias", func(t *testing.T, batch int) *userNet {
		return newUserNet(t, 7, batch, 5).denseT("h1", 6, false).apply(G.Tanh).denseT("h2", 4, true).apply(G.Rectify).
			batchedDenseT("h3", 5).apply(G.Sigmoid).denseNoBias("o", 3).apply(logSoftmax)
	}, HeadLogSoftMax, "Linear(5→6), Tanh, Linear(6→4, no bias), ReLU, Linear(4→5, no bias), Sigmoid, Linear(5→3, no bias)", 4},
	// Convolutions without a bias (Gorgonia's Conv2d alone): a "same" one
	// (input gradient as a convolution), then a strided one after a biased
	// one; their per-sample norms cover the filters alone.
	{"conv-without-bias", func(t *testing.T, batch int) *userNet {
		return newUserNet(t, 8, batch, 2, 8, 8).convNoBias("c1", 2, 3, 1, 1).apply(G.Rectify).conv("c2", 3, 3, 1, 1).apply(G.Tanh).
			convNoBias("c3", 2, 3, 0, 2).apply(G.Rectify).flatten().denseNoBias("o", 3).apply(softmax)
	}, HeadSoftMax, "Conv2d(2→2, 3x3, stride 1, pad 1, in 8x8, no bias), ReLU, Conv2d(2→3, 3x3, stride 1, pad 1, in 8x8), Tanh, " +
		"Conv2d(3→2, 3x3, stride 2, pad 0, in 8x8, no bias), ReLU, Flatten, Linear(18→3, no bias)", 4},
	// Residual joins: a convolution block with the identity as shortcut
	// (a ResNet block), the join as the shortcut's first operand; a dense
	// block with a projection shortcut holding a nested join, with a
	// Dropout inside (evaluation only in Gorgonia: see TestLowerDropout).
	{"residual-conv-block", func(t *testing.T, batch int) *userNet {
		return newUserNet(t, 9, batch, 2, 6, 6).conv("c0", 3, 3, 1, 1).apply(G.Rectify).
			residual(func(u *userNet) { u.convNoBias("r1", 3, 3, 1, 1).apply(G.Rectify).conv("r2", 3, 3, 1, 1) }, nil).
			apply(G.Rectify).pool(2).flatten().dense("o", 3).apply(softmax)
	}, HeadSoftMax, "Conv2d(2→3, 3x3, stride 1, pad 1, in 6x6), ReLU, Residual(Conv2d(3→3, 3x3, stride 1, pad 1, in 6x6, no bias), ReLU, " +
		"Conv2d(3→3, 3x3, stride 1, pad 1, in 6x6) + identity), ReLU, MaxPool2d(2, in 3x6x6), Flatten, Linear(27→3)", 4},
	{"residual-projection-nested", func(t *testing.T, batch int) *userNet {
		return newUserNet(t, 10, batch, 5).dense("h", 6).apply(G.Tanh).
			residual(func(u *userNet) {
				u.dense("b1", 4).apply(G.Rectify).residual(func(u *userNet) { u.denseNoBias("n1", 4).apply(G.Tanh) }, nil).dense("b2", 3)
			}, func(u *userNet) { u.denseNoBias("p", 3) }).
			apply(G.Rectify).dense("o", 2)
	}, HeadNone, "Linear(5→6), Tanh, Residual(Linear(6→4), ReLU, Residual(Linear(4→4, no bias), Tanh + identity), Linear(4→3) + " +
		"Linear(6→3, no bias)), ReLU, Linear(3→2)", 3},
}

// TestLowerMatchesGorgonia: for every supported op, the lowered model's
// logits, summed loss and every parameter gradient equal Gorgonia's own
// (TapeMachine and symbolic Grad on the same graph, the loss put on the
// node Lower calls the logits) to 1e-9 in float64; the graph's head output
// is the model's probabilities (so folding it into the loss is exact); and
// the per-sample norms and clipped sums equal Gorgonia's sample by sample,
// both from the batch graph with one sample weighted and from a loop of
// batch-of-one runs of the same network built for batches of one.
func TestLowerMatchesGorgonia(t *testing.T) {
	for k, tc := range opCases {
		t.Run(tc.name, func(t *testing.T) {
			u := tc.build(t, tc.batch)
			l, err := Lower[float64](u.g, u.x, u.cur, LowerOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := names(l.Model); got != tc.layers || l.Head != tc.head {
				t.Fatalf("lowered to %s, head %s; want %s, head %s", got, l.Head, tc.layers, tc.head)
			}
			gm, err := newReference(u.g, u.x, l.Logits, l.Params, l.transposed, u.batch, u.cur)
			if err != nil {
				t.Fatal(err)
			}
			defer gm.Close()
			rng := rand.New(rand.NewPCG(uint64(k), 21))
			x, labels, weight := batchData(rng, u.batch, l.Model.InSize(), l.Model.Classes)
			compareWith(t, l.Model, gm, x, labels, weight, 1e-9)
			checkHead(t, l, gm, u.cur, x)
			checkPerSample(t, l.Model, x, labels, weight, rng, maskedGrads(t, gm, x, labels, weight))
			// The same network built for batches of one sample.
			one := tc.build(t, 1)
			l1, err := Lower[float64](one.g, one.x, one.cur, LowerOptions{})
			if err != nil {
				t.Fatal(err)
			}
			gm1, err := newReference(one.g, one.x, l1.Logits, l1.Params, l1.transposed, 1)
			if err != nil {
				t.Fatal(err)
			}
			defer gm1.Close()
			checkPerSample(t, l.Model, x, labels, weight, rng, batchOfOneGrads(t, gm1, x, labels, weight))
		})
	}
}

// checkHead compares the graph's output node with the head applied to the
// lowered model's logits.
func checkHead(t *testing.T, l *Lowered[float64], gm *Model, out *G.Node, x []float64) {
	t.Helper()
	got, err := gm.read(x, out)
	if err != nil {
		t.Fatal(err)
	}
	batch, outDim := gm.batch, l.Model.OutDim()
	logits := l.Model.Forward(x, batch, false)
	var want []float64
	switch l.Head {
	case HeadNone:
		want = slices.Clone(logits)
	case HeadSigmoid:
		probs := make([]float64, 2*batch)
		l.Model.Probabilities(logits, batch, probs)
		for i := range batch {
			want = append(want, probs[2*i+1])
		}
	case HeadSoftMax, HeadLogSoftMax:
		want = make([]float64, batch*outDim)
		l.Model.Probabilities(logits, batch, want)
		if l.Head == HeadLogSoftMax {
			for i, p := range want {
				want[i] = math.Log(p)
			}
		}
	}
	if d := maxRelDiff(got, want); d > 1e-9 {
		t.Errorf("the graph's %s output differs from the lowered model's by rel %.3g", l.Head, d)
	}
}

// TestLowerDropout: a Dropout node lowers to nn's Dropout with the
// graph's probability and the options' seed. In evaluation (a TapeMachine
// with EvalMode, Forward with train false) both are the identity, so the
// logits agree. Gorgonia v0.9.18's Dropout gradient cannot serve as the
// reference (it is dy/p for the drop probability p instead of dy/(1−p), and
// 0 when p = 0), so the training pass is checked against nn's slow path
// (nn.TestDropout) instead.
func TestLowerDropout(t *testing.T) {
	u := newUserNet(t, 7, 4, 5).dense("h", 6).apply(G.Rectify).apply(dropout(0.5)).dense("o", 3)
	l, err := Lower[float64](u.g, u.x, u.cur, LowerOptions{DropoutSeed: 9})
	if err != nil {
		t.Fatal(err)
	}
	spec := l.Model.Layers[2].(nn.Describer).Spec()
	if spec.Kind != nn.KindDropout || spec.P != 0.5 || spec.Seed != 9 {
		t.Fatalf("dropout lowered as %+v", spec)
	}
	var out G.Value
	G.Read(u.cur, &out)
	vm := G.NewTapeMachine(u.g, G.EvalMode())
	defer vm.Close()
	x, _, _ := batchData(rand.New(rand.NewPCG(1, 1)), u.batch, 5, 3)
	if err := set(u.x, u.x.Shape(), x); err != nil {
		t.Fatal(err)
	}
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	want := data(out.Data())
	if d := maxRelDiff(l.Model.Forward(x, u.batch, false), want); d > 1e-12 {
		t.Errorf("evaluation logits differ from Gorgonia's by rel %.3g", d)
	}
	if d := maxRelDiff(l.Model.Forward(x, u.batch, true), want); d == 0 {
		t.Error("a training pass with p = 0.5 dropped nothing")
	}
}

// TestLowerZoo: each zoo architecture built as a Gorgonia graph (Zoo) and
// lowered is the native model: same layers, same parameter count, the same
// values bit for bit, hence bit-identical logits and gradients; and its
// gradients equal Gorgonia's on the builder's graph to 1e-9.
func TestLowerZoo(t *testing.T) {
	for k, tc := range graphSpecs {
		t.Run(fmt.Sprintf("%s/%v/batch%d", tc.spec.Arch, tc.spec.InShape, tc.batch), func(t *testing.T) {
			native, err := models.New[float64](tc.spec, rand.New(rand.NewPCG(uint64(k), 31)))
			if err != nil {
				t.Fatal(err)
			}
			net, err := Zoo[float64](tc.spec, tc.batch, rand.New(rand.NewPCG(uint64(k), 31)))
			if err != nil {
				t.Fatal(err)
			}
			l, err := Lower[float64](net.Graph, net.Input, net.Output, LowerOptions{})
			if err != nil {
				t.Fatal(err)
			}
			m := l.Model
			if names(m) != names(native) || m.NumParams() != native.NumParams() || m.OutDim() != native.OutDim() {
				t.Fatalf("lowered %s (%d params), native %s (%d)", names(m), m.NumParams(), names(native), native.NumParams())
			}
			for i, p := range m.Params() {
				if !slices.Equal(p.Value, native.Params()[i].Value) || l.Params[i] != net.Learnables[i] {
					t.Fatalf("parameter %d (%s) is not the native value or node", i, p.Name)
				}
			}
			rng := rand.New(rand.NewPCG(uint64(k), 32))
			x, labels, weight := batchData(rng, tc.batch, m.InSize(), tc.spec.Classes)
			// One worker: with several, Conv2d sums per-worker partial
			// gradients in the order the workers finish (last-bit noise).
			defer nn.SetWorkers(nn.Workers())
			nn.SetWorkers(1)
			logits, loss, grads := engineGrads(m, x, labels, weight)
			nLogits, nLoss, nGrads := engineGrads(native, x, labels, weight)
			if !slices.Equal(logits, nLogits) || loss != nLoss || !slices.EqualFunc(grads, nGrads, slices.Equal) {
				t.Errorf("lowered and native differ: logits %.3g loss %v vs %v", maxRelDiff(logits, nLogits), loss, nLoss)
				for i := range grads {
					t.Logf("grad %d rel %.3g", i, maxRelDiff(grads[i], nGrads[i]))
				}
			}
			gm, err := newReference(net.Graph, net.Input, l.Logits, l.Params, l.transposed, tc.batch)
			if err != nil {
				t.Fatal(err)
			}
			defer gm.Close()
			compareWith(t, m, gm, x, labels, weight, 1e-9)
		})
	}
}

// TestLowerFloat32 lowers a float32 MNIST CNN; agreement with Gorgonia is
// limited by float32 rounding.
func TestLowerFloat32(t *testing.T) {
	net, err := MNISTCNN[float32](1, 16, 16, 3, 3, rand.New(rand.NewPCG(33, 34)))
	if err != nil {
		t.Fatal(err)
	}
	l, err := Lower[float32](net.Graph, net.Input, net.Output, LowerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gm, err := newReference(net.Graph, net.Input, l.Logits, l.Params, l.transposed, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer gm.Close()
	x, labels, weight := batchData(rand.New(rand.NewPCG(35, 36)), 3, l.Model.InSize(), 3)
	compareWith(t, l.Model, gm, x, labels, weight, 1e-4)
	if _, err := Lower[float64](net.Graph, net.Input, net.Output, LowerOptions{}); err == nil || !strings.Contains(err.Error(), "Lower[float32]") {
		t.Errorf("a float32 graph lowered as float64: %v", err)
	}
}

// TestLowerRefusals: what Lower cannot lower is an error naming the node
// and its op (and the supported list), and no model is returned.
func TestLowerRefusals(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(t *testing.T) (u *userNet, out *G.Node)
		want  []string
	}{
		{"unsupported op", func(t *testing.T) (*userNet, *G.Node) {
			u := newUserNet(t, 1, 3, 4).dense("h", 5).apply(G.Exp).dense("o", 2)
			return u, u.cur
		}, []string{"node exp(", "op exp", "not a supported op", "supported: Mul or BatchedMatMul"}},
		{"dilation 2", func(t *testing.T) (*userNet, *G.Node) {
			u := newUserNet(t, 2, 2, 1, 9, 9)
			f, b := u.param("f", 2, 1, 3, 3), u.param("b", 2)
			z := u.must(G.Conv2d(u.x, f, tensor.Shape{3, 3}, []int{0, 0}, []int{1, 1}, []int{2, 2}))
			u.cur = u.must(G.BroadcastAdd(z, b, nil, []byte{0, 2, 3}))
			u.flatten().dense("o", 2)
			return u, u.cur
		}, []string{"im2col<(3,3), (0, 0), (1,1) (2, 2)>", "dilation (2, 2)"}},
		{"output independent of the input", func(t *testing.T) (*userNet, *G.Node) {
			u := newUserNet(t, 3, 3, 4).dense("h", 2)
			return u, u.must(G.Tanh(u.param("w", 3, 2)))
		}, []string{"does not depend on the input x"}},
		{"shared weight", func(t *testing.T) (*userNet, *G.Node) {
			u := newUserNet(t, 4, 3, 4)
			w := u.param("shared", 4, 4)
			for i := range 2 {
				z := u.must(G.Mul(u.cur, w))
				u.cur = u.must(G.BroadcastAdd(z, u.param(fmt.Sprint("b", i), 4), nil, []byte{0}))
				u.apply(G.Tanh)
			}
			return u, u.cur
		}, []string{"weight shared is used by layer 0 (Linear(4→4)) and layer 2 (Linear(4→4))", "not supported"}},
		{"weight that is its own bias", func(t *testing.T) (*userNet, *G.Node) {
			// With one input and one output a {1, 1} weight has the bias's
			// size; Lower used to index the layer list before the layer was
			// in it and panicked.
			u := newUserNet(t, 13, 3, 1)
			w := u.param("wb", 1, 1)
			z := u.must(G.Mul(u.cur, w))
			u.cur = u.must(G.BroadcastAdd(z, w, nil, []byte{0}))
			return u, u.cur
		}, []string{"weight wb is both weight and bias of layer 0 (Linear(1→1))", "not supported"}},
		{"two weights on one backing tensor", func(t *testing.T) (*userNet, *G.Node) {
			// WriteBack would copy the second layer's weights over the
			// first's: the graph could not hold both trained layers.
			u := newUserNet(t, 14, 3, 4)
			val := tensor.New(tensor.WithShape(4, 4), tensor.WithBacking(make([]float64, 16)))
			for i := range 2 {
				w := G.NewTensor(u.g, u.dt, 2, G.WithShape(4, 4), G.WithName(fmt.Sprint("w", i)), G.WithValue(val))
				z := u.must(G.Mul(u.cur, w))
				u.cur = u.must(G.BroadcastAdd(z, u.param(fmt.Sprint("b", i), 4), nil, []byte{0}))
				u.apply(G.Tanh)
			}
			return u, u.cur
		}, []string{"weights w0 (layer 0) and w1 (layer 2) share one backing array", "give each weight its own tensor"}},
		{"two weights on overlapping views", func(t *testing.T) (*userNet, *G.Node) {
			u := newUserNet(t, 15, 3, 4)
			back := make([]float64, 20)
			for i := range 2 {
				val := tensor.New(tensor.WithShape(4, 4), tensor.WithBacking(back[4*i:4*i+16]))
				w := G.NewTensor(u.g, u.dt, 2, G.WithShape(4, 4), G.WithName(fmt.Sprint("v", i)), G.WithValue(val))
				z := u.must(G.Mul(u.cur, w))
				u.cur = u.must(G.BroadcastAdd(z, u.param(fmt.Sprint("c", i), 4), nil, []byte{0}))
				u.apply(G.Tanh)
			}
			return u, u.cur
		}, []string{"weights v0 (layer 0) and v1 (layer 2) share one backing array"}},
		{"reshape to a matrix per sample", func(t *testing.T) (*userNet, *G.Node) {
			u := newUserNet(t, 5, 3, 12).dense("h", 12)
			u.cur = u.must(G.Reshape(u.cur, tensor.Shape{3, 3, 4}))
			u.flatten().dense("o", 2)
			return u, u.cur
		}, []string{"Reshape (3, 12) → (3, 3, 4): only flattening to {batch, values} and back to {batch, C, H, W} images"}},
		{"a value added to itself", func(t *testing.T) (*userNet, *G.Node) {
			u := newUserNet(t, 5, 3, 4).dense("h", 4)
			return u, u.must(G.Add(u.cur, u.cur))
		}, []string{"it adds a value to itself"}},
		{"batch norm", func(t *testing.T) (*userNet, *G.Node) {
			u := newUserNet(t, 16, 3, 2, 6, 6).conv("c", 4, 3, 1, 1)
			bn, _, _, _, err := G.BatchNorm(u.cur, nil, nil, 0.9, 1e-5)
			u.cur = u.must(bn, err)
			u.apply(G.Rectify).flatten().dense("o", 2)
			return u, u.cur
		}, []string{"BatchNorm normalises each record with the statistics of the whole batch", "use fairdp's GroupNorm instead"}},
		{"weight times the input", func(t *testing.T) (*userNet, *G.Node) {
			u := newUserNet(t, 12, 3, 4)
			return u, u.must(G.Mul(u.param("w", 3, 3), u.x))
		}, []string{"node A × B(", "the left operand does not depend on the input"}},
		{"pool with padding", func(t *testing.T) (*userNet, *G.Node) {
			u := newUserNet(t, 7, 2, 1, 6, 6)
			u.cur = u.must(G.MaxPool2D(u.x, tensor.Shape{2, 2}, []int{1, 1}, []int{2, 2}))
			u.flatten().dense("o", 2)
			return u, u.cur
		}, []string{"MaxPool{", "no padding"}},
		{"softmax in the middle", func(t *testing.T) (*userNet, *G.Node) {
			u := newUserNet(t, 8, 3, 4).dense("h", 3).apply(softmax).dense("o", 2)
			return u, u.cur
		}, []string{"Softmax{", "only supported as the output"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, out := tc.build(t)
			l, err := Lower[float64](u.g, u.x, out, LowerOptions{})
			if err == nil || l != nil {
				t.Fatalf("lowered to %v", l.Model.Layers)
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
	u := newUserNet(t, 9, 3, 4).dense("o", 2)
	if _, err := Lower[float64](u.g, u.x, u.cur, LowerOptions{Arch: "mlp"}); err == nil || !strings.Contains(err.Error(), "LowerOptions.Arch") {
		t.Errorf("a zoo arch name accepted: %v", err)
	}
}

// TestWriteBack: after the model's weights change (as training changes
// them), WriteBack puts them in the graph, and a TapeMachine compiled
// before sees them: Gorgonia's output equals the model's probabilities.
// A weight the graph holds transposed goes back transposed.
func TestWriteBack(t *testing.T) {
	t.Run("dense", func(t *testing.T) {
		checkWriteBack(t, newUserNet(t, 10, 4, 5).dense("h", 6).apply(G.Rectify).dense("o", 3).apply(softmax))
	})
	t.Run("transposed-no-bias", func(t *testing.T) {
		u := newUserNet(t, 10, 4, 5).denseT("h", 6, false).apply(G.Rectify).batchedDenseT("h2", 4).apply(G.Tanh).denseT("o", 3, true).apply(softmax)
		checkWriteBack(t, u)
	})
}

func checkWriteBack(t *testing.T, u *userNet) {
	t.Helper()
	l, err := Lower[float64](u.g, u.x, u.cur, LowerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	vm := G.NewTapeMachine(u.g)
	defer vm.Close()
	rng := rand.New(rand.NewPCG(37, 38))
	for _, p := range l.Model.Params() {
		for i := range p.Value {
			p.Value[i] += 0.3 * rng.NormFloat64()
		}
	}
	if err := l.WriteBack(); err != nil {
		t.Fatal(err)
	}
	x, _, _ := batchData(rng, 4, 5, 3)
	if err := set(u.x, u.x.Shape(), x); err != nil {
		t.Fatal(err)
	}
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	want := make([]float64, 12)
	l.Model.Probabilities(l.Model.Forward(x, 4, false), 4, want)
	if d := maxRelDiff(values(u.cur), want); d > 1e-12 {
		t.Errorf("Gorgonia's output after WriteBack differs from the model's by rel %.3g", d)
	}
	for i, n := range l.Params {
		want := l.Model.Params()[i]
		vals := slices.Clone(want.Value)
		if l.transposed[i] {
			transpose(vals, want.Value, want.Shape[0], want.Shape[1])
		}
		if !slices.Equal(values(n), vals) {
			t.Errorf("node %s does not hold the model's values", n.Name())
		}
	}
}

// TestBuildInverse: Build writes a model as a graph and Lower reads the
// same layers back, Dropout, Sigmoid, a per-axis convolution window
// without a bias and a Linear without a bias included.
func TestBuildInverse(t *testing.T) {
	rng := rand.New(rand.NewPCG(39, 40))
	conv := nn.NewConv2d[float64](2, 6, 6, 3, 3, 1, 1)
	conv.Init(rng)
	rect := nn.NewConv2dNoBias[float64](3, 3, 3, 2, nn.ConvWindow{KH: 2, KW: 3, StrideH: 1, StrideW: 2, PadH: 1, PadW: 1})
	rect.Init(rng)
	lin := nn.NewLinear[float64](16, 5)
	lin.Init(rng)
	noBias := nn.NewLinearNoBias[float64](5, 2)
	noBias.Init(rng)
	m := &models.Model[float64]{Arch: "mine", InShape: []int{2, 6, 6}, Classes: 2, Layers: []nn.Layer[float64]{
		conv, nn.NewSigmoid[float64](), nn.NewMaxPool2d[float64](3, 6, 6, 2), nn.NewDropout[float64](0.25, 4),
		rect, nn.NewFlatten[float64](), lin, nn.NewTanh[float64](), noBias,
	}}
	net, err := Build(m, 3)
	if err != nil {
		t.Fatal(err)
	}
	l, err := Lower[float64](net.Graph, net.Input, net.Output, LowerOptions{Arch: "mine", DropoutSeed: 4})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(l.Model.Spec()), fmt.Sprint(m.Spec()); got != want || names(l.Model) != names(m) {
		t.Errorf("Lower(Build(m)) is %s, want %s", names(l.Model), names(m))
	}
	for i, p := range l.Model.Params() {
		if !slices.Equal(p.Value, m.Params()[i].Value) {
			t.Errorf("parameter %d changed", i)
		}
	}
}

// TestLoadWeights: a checkpoint of the lowered layers (what `fairdp train
// --model-spec` writes) goes back into the graph; a checkpoint of other
// layers is refused.
func TestLoadWeights(t *testing.T) {
	u := newUserNet(t, 11, 4, 5).dense("h", 6).apply(G.Tanh).dense("o", 3)
	l, err := Lower[float64](u.g, u.x, u.cur, LowerOptions{Arch: "mine"})
	if err != nil {
		t.Fatal(err)
	}
	trained, err := models.New[float64](l.Model.Spec(), rand.New(rand.NewPCG(41, 42)))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "model.ckpt")
	if err := models.SaveFile(path, trained, models.Meta{}); err != nil {
		t.Fatal(err)
	}
	loaded, _, err := models.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.LoadWeights(loaded.(*models.Model[float64])); err != nil {
		t.Fatal(err)
	}
	for i, n := range l.Params {
		if !slices.Equal(values(n), trained.Params()[i].Value) {
			t.Errorf("node %s does not hold the checkpoint's values", n.Name())
		}
	}
	other, _ := models.New[float64](models.Spec{Arch: "logistic", InShape: []int{5}, Classes: 3}, rand.New(rand.NewPCG(1, 1)))
	if err := l.LoadWeights(other); err == nil || !strings.Contains(err.Error(), "are not the graph's") {
		t.Errorf("other layers accepted: %v", err)
	}
}

// TestResidualModelRoundTrip: a model with residual joins (a projection
// shortcut, an identity one holding a Dropout) exports to Gorgonia with
// the same logits, loss and gradients, and Build then Lower gives back the
// same layers (Dropout seeds included, in the order the layers run) and
// weights.
func TestResidualModelRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 44))
	conv := func(inC, outC int, noBias bool) nn.Layer[float64] {
		var c *nn.Conv2d[float64]
		if noBias {
			c = nn.NewConv2dNoBias[float64](inC, 5, 5, outC, nn.SquareWindow(3, 1, 1))
		} else {
			c = nn.NewConv2dWindow[float64](inC, 5, 5, outC, nn.SquareWindow(3, 1, 1))
		}
		c.Init(rng)
		return c
	}
	lin := nn.NewLinear[float64](3*5*5, 2)
	lin.Init(rng)
	m := &models.Model[float64]{Arch: "res", InShape: []int{2, 5, 5}, Classes: 2, Layers: []nn.Layer[float64]{
		nn.NewDropout[float64](0.1, 7),
		nn.NewResidual([]nn.Layer[float64]{conv(2, 3, true), nn.NewReLU[float64](), conv(3, 3, false)}, []nn.Layer[float64]{conv(2, 3, true)}),
		nn.NewReLU[float64](),
		nn.NewResidual([]nn.Layer[float64]{conv(3, 3, false), nn.NewDropout[float64](0.2, 8), nn.NewTanh[float64]()}, nil),
		nn.NewFlatten[float64](), lin,
	}}
	x, labels, weight := batchData(rng, 3, m.InSize(), 2)
	noDrop := &models.Model[float64]{Arch: "res", InShape: m.InShape, Classes: 2, Layers: slices.Concat(m.Layers[1:3],
		[]nn.Layer[float64]{nn.NewResidual([]nn.Layer[float64]{m.Layers[3].(*nn.Residual[float64]).Branches()[0][0], nn.NewTanh[float64]()}, nil)},
		m.Layers[4:])}
	compareWithGraph(t, noDrop, x, labels, weight, 1e-9) // Gorgonia's Dropout gradient is no reference (doc.go)
	net, err := Build(m, 3)
	if err != nil {
		t.Fatal(err)
	}
	l, err := Lower[float64](net.Graph, net.Input, net.Output, LowerOptions{Arch: "res", DropoutSeed: 7})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(l.Model.Spec())
	want, _ := json.Marshal(m.Spec())
	if string(got) != string(want) || names(l.Model) != names(m) {
		t.Errorf("Lower(Build(m)) is %s, want %s (the inner Dropout's seed: the second in run order)", got, want)
	}
	for i, p := range l.Model.Params() {
		if !slices.Equal(p.Value, m.Params()[i].Value) {
			t.Errorf("parameter %d changed", i)
		}
	}
	// A checkpoint of the lowered model reads back with its joins.
	path := filepath.Join(t.TempDir(), "res.ckpt")
	if err := models.SaveFile(path, l.Model, models.Meta{}); err != nil {
		t.Fatal(err)
	}
	back, _, err := models.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.LoadWeights(back.(*models.Model[float64])); err != nil {
		t.Errorf("checkpoint: %v", err)
	}
}
