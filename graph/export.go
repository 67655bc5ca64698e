//go:build !cuda

// Gorgonia v0.9.18 switches to its own CUDA ops under the same `cuda` tag
// and then needs cuDNN; the exported graph runs on the CPU, so the package
// is left out of CUDA builds.

package graph

import (
	"errors"
	"fmt"
	"slices"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/fairdp/fairdp/backend"
	"github.com/fairdp/fairdp/models"
	"github.com/fairdp/fairdp/nn"
)

func init() { tensor.Use(backend.Implementation()) }

// Model is a Gorgonia v0.9.18 expression graph for a fixed batch size with
// the training loss and its gradient: a fairdp model rebuilt by Export, with
// the model's weights at the time Export was called (or, in the tests, a
// user's graph that Lower read).
//
// It is the independent slow path that proves the nn engine: Gorgonia's own
// ops (Mul, Conv2d with its im2col, MaxPool2D, Rectify, LogSoftMax, …) and
// its symbolic differentiation compute the logits and the gradient of the
// summed loss, and the tests compare them with Model's.
type Model struct {
	g       *G.ExprGraph
	vm      G.VM
	batch   int
	outDim  int
	inSize  int
	x       *G.Node
	weight  *G.Node // per-sample loss weights, batch×1 (sigmoid) or batch×C one-hot·w (softmax)
	weightY *G.Node // sigmoid only: w_i·y_i, batch×1
	logits  *G.Node
	loss    *G.Node
	params  []*G.Node
	grads   G.Nodes
	shapes  [][]int // the graph's parameter shapes, in Model.Params order
	// transposed[i] says params[i] holds the transpose of nn's block i (a
	// dense weight Lower read from Mul(x, Transpose(W))): Gradients
	// transposes its gradient into nn's layout.
	transposed []bool
	reads      map[*G.Node]*G.Value
}

// graphBuilder tracks the node and per-sample shape while layers are added.
type graphBuilder struct {
	g      *G.ExprGraph
	x      *G.Node // the input batch
	dt     tensor.Dtype
	batch  int
	cur    *G.Node
	shape  []int // per-sample shape of cur
	params []*G.Node
	shapes [][]int
}

// Export rebuilds m as a Gorgonia graph for batches of exactly batch samples.
// Linear, Conv2d, MaxPool2d, ReLU, Tanh, LeakyReLU, Sigmoid, Dropout,
// Flatten, Unflatten and Residual (an Add of its branches) are supported; other layers (GroupNorm) give an error naming the
// layer. It is the inverse of Lower: Lower(Export(m)) is m.
func Export[T nn.Float](m *models.Model[T], batch int) (*Model, error) {
	b, err := build(m, batch)
	if err != nil {
		return nil, fmt.Errorf("graph: Export: %w", err)
	}
	gm, err := newReference(b.g, b.x, b.cur, b.params, nil, batch)
	if err != nil {
		return nil, fmt.Errorf("graph: Export: %w", err)
	}
	return gm, nil
}

// build adds m's layers to a new graph: an input node x of shape
// {batch}+InShape, one input node per parameter block holding a copy of its
// values, and the ops that compute the logits (b.cur).
func build[T nn.Float](m *models.Model[T], batch int) (*graphBuilder, error) {
	if batch < 1 {
		return nil, fmt.Errorf("batch %d, want ≥ 1", batch)
	}
	b := &graphBuilder{g: G.NewGraph(), dt: dtypeOf[T](), batch: batch, shape: slices.Clone(m.InShape)}
	full := append([]int{batch}, m.InShape...)
	b.x = G.NewTensor(b.g, b.dt, len(full), G.WithShape(full...), G.WithName("x"))
	b.cur = b.x
	for i, layer := range m.Layers {
		if err := addLayer(b, layer); err != nil {
			return nil, fmt.Errorf("layer %d %s: %w", i, layer.Name(), err)
		}
		want := layer.OutShape(b.shape)
		got := []int(b.cur.Shape())
		if got[0] != batch || !slices.Equal(got[1:], want) {
			return nil, fmt.Errorf("layer %d %s: Gorgonia output shape %v, nn says %v per sample",
				i, layer.Name(), got, want)
		}
		b.shape = want
	}
	if len(b.shape) != 1 {
		return nil, fmt.Errorf("model output has per-sample shape %v, want a vector of logits", b.shape)
	}
	return b, nil
}

// dtypeOf is the Gorgonia element type of T.
func dtypeOf[T nn.Float]() tensor.Dtype {
	if _, single := any(T(0)).(float32); single {
		return tensor.Float32
	}
	return tensor.Float64
}

// newReference adds the training loss on top of logits (batch×OutDim, the
// rows of x's batch) and its symbolic gradient with respect to params (of
// which those marked in transposed, if not nil, are nn's blocks transposed),
// and compiles the graph into a TapeMachine: the Gorgonia side of every
// check against fairdp's engine, for an exported model and for a lowered
// graph.
//
// The machine reuses the memory of intermediate values, so the values of
// logits and of the extra nodes are read out through Gorgonia's Read
// statements (copies), not from the nodes after the run.
func newReference(g *G.ExprGraph, x, logits *G.Node, params []*G.Node, transposed []bool, batch int, extra ...*G.Node) (*Model, error) {
	ls := logits.Shape()
	if len(ls) != 2 || ls[0] != batch {
		return nil, fmt.Errorf("logits have shape %v, want {%d, classes}", ls, batch)
	}
	gm := &Model{g: g, batch: batch, outDim: ls[1], inSize: tensor.Shape(x.Shape()[1:]).TotalSize(), x: x,
		logits: logits, params: params, transposed: transposed}
	for _, p := range params {
		gm.shapes = append(gm.shapes, slices.Clone([]int(p.Shape())))
	}
	if err := gm.addLoss(x.Dtype()); err != nil {
		return nil, fmt.Errorf("loss: %w", err)
	}
	gm.reads = map[*G.Node]*G.Value{}
	for _, n := range append([]*G.Node{logits}, extra...) {
		v := new(G.Value)
		G.Read(n, v)
		gm.reads[n] = v
	}
	var err error
	if gm.grads, err = G.Grad(gm.loss, gm.params...); err != nil {
		return nil, fmt.Errorf("gradient: %w", err)
	}
	gm.vm = G.NewTapeMachine(gm.g)
	return gm, nil
}

// addLayer appends layer's Gorgonia equivalent to the graph.
func addLayer[T nn.Float](b *graphBuilder, layer nn.Layer[T]) error {
	var err error
	switch l := layer.(type) {
	case *nn.Linear[T]:
		if len(b.shape) != 1 {
			return fmt.Errorf("input per-sample shape %v is not a vector (add a Flatten)", b.shape)
		}
		ps := l.Params()
		w := addParam(b, ps[0])
		if b.cur, err = G.Mul(b.cur, w); err == nil && len(ps) == 2 { // no bias: the product alone
			b.cur, err = G.BroadcastAdd(b.cur, addParam(b, ps[1]), nil, []byte{0})
		}
	case *nn.Conv2d[T]:
		if len(b.shape) != 3 {
			return fmt.Errorf("input per-sample shape %v is not {C, H, W}", b.shape)
		}
		win, ps := l.Window(), l.Params()
		w := addParam(b, ps[0])
		if b.cur, err = G.Conv2d(b.cur, w, tensor.Shape{win.KH, win.KW}, []int{win.PadH, win.PadW},
			[]int{win.StrideH, win.StrideW}, []int{1, 1}); err == nil && len(ps) == 2 { // no bias: the convolution alone
			b.cur, err = G.BroadcastAdd(b.cur, addParam(b, ps[1]), nil, []byte{0, 2, 3})
		}
	case *nn.MaxPool2d[T]:
		var c, h, w, k int
		if err := parseName(l.Name(), "MaxPool2d(%d, in %dx%dx%d)", &k, &c, &h, &w); err != nil {
			return err
		}
		b.cur, err = G.MaxPool2D(b.cur, tensor.Shape{k, k}, []int{0, 0}, []int{k, k})
	case *nn.ReLU[T]:
		b.cur, err = G.Rectify(b.cur)
	case *nn.Tanh[T]:
		b.cur, err = G.Tanh(b.cur)
	case *nn.SigmoidLayer[T]:
		b.cur, err = G.Sigmoid(b.cur)
	case *nn.Dropout[T]:
		// Gorgonia's op draws its own masks (time-seeded) while training;
		// SetTraining(false) on the node's op makes it the identity.
		b.cur, err = G.Dropout(b.cur, l.Spec().P)
	case *nn.LeakyReLU[T]:
		var slope float64
		if err := parseName(l.Name(), "LeakyReLU(%g)", &slope); err != nil {
			return err
		}
		b.cur, err = G.LeakyRelu(b.cur, slope)
	case *nn.Flatten[T]:
		b.cur, err = G.Reshape(b.cur, tensor.Shape{b.batch, tensor.Shape(b.shape).TotalSize()})
	case *nn.Unflatten[T]:
		b.cur, err = G.Reshape(b.cur, append(tensor.Shape{b.batch}, l.OutShape(b.shape)...))
	case *nn.Residual[T]:
		// Each branch from the same node and shape, then Gorgonia's Add.
		from, shape := b.cur, b.shape
		var outs [2]*G.Node
		for i, branch := range l.Branches() {
			b.cur, b.shape = from, shape
			for _, inner := range branch {
				if err := addLayer(b, inner); err != nil {
					return fmt.Errorf("inside %s: %w", l.Name(), err)
				}
				b.shape = inner.OutShape(b.shape)
			}
			outs[i] = b.cur
		}
		b.cur, b.shape = from, shape // build's caller advances the shape
		b.cur, err = G.Add(outs[0], outs[1])
	case *nn.GroupNorm[T]:
		return errors.New("GroupNorm has no Gorgonia reference here (Gorgonia v0.9.18 only has BatchNorm)")
	default:
		return fmt.Errorf("layer type %T has no Gorgonia reference", layer)
	}
	return err
}

// parseName reads a layer's geometry back from its Name (nn keeps it
// unexported) and checks the parse by formatting it again.
func parseName(name, format string, args ...any) error {
	if _, err := fmt.Sscanf(name, format, args...); err != nil {
		return fmt.Errorf("cannot read the geometry from %q as %q: %w", name, format, err)
	}
	vals := make([]any, len(args))
	for i, a := range args {
		switch p := a.(type) {
		case *int:
			vals[i] = *p
		case *float64:
			vals[i] = *p
		}
	}
	if again := fmt.Sprintf(format, vals...); again != name {
		return fmt.Errorf("read the geometry of %q as %q", name, again)
	}
	return nil
}

// addParam adds a parameter block as a Gorgonia input node holding a copy
// of its current values (input nodes are what Gorgonia differentiates).
func addParam[T nn.Float](b *graphBuilder, p *nn.Param[T]) *G.Node {
	value := tensor.New(tensor.WithShape(p.Shape...), tensor.WithBacking(slices.Clone(p.Value)))
	n := G.NewTensor(b.g, b.dt, len(p.Shape), G.WithShape(p.Shape...), G.WithValue(value),
		G.WithName(fmt.Sprintf("p%d_%s", len(b.params), p.Name)))
	b.params = append(b.params, n)
	b.shapes = append(b.shapes, slices.Clone(p.Shape))
	return n
}

// addLoss builds L = Σ_i w_i·ℓ_i: softmax cross-entropy through LogSoftMax
// for several logits, log(1+e^z) − y·z for one logit.
func (gm *Model) addLoss(dt tensor.Dtype) error {
	var err error
	if gm.outDim > 1 {
		gm.weight = G.NewMatrix(gm.g, dt, G.WithShape(gm.batch, gm.outDim), G.WithName("onehot_w"))
		// Gorgonia v0.9.18 hashes SoftMax and LogSoftMax alike, so
		// LogSoftMax(z) in a graph that already has SoftMax(z) (a user's
		// head) would return that SoftMax node: the loss reads an identity
		// reshape of z instead.
		var z, logp, prod, sum *G.Node
		if z, err = G.Reshape(gm.logits, gm.logits.Shape()); err != nil {
			return err
		}
		if logp, err = G.LogSoftMax(z); err != nil {
			return err
		}
		if prod, err = G.HadamardProd(gm.weight, logp); err != nil {
			return err
		}
		if sum, err = G.Sum(prod); err != nil {
			return err
		}
		gm.loss, err = G.Neg(sum)
		return err
	}
	gm.weight = G.NewMatrix(gm.g, dt, G.WithShape(gm.batch, 1), G.WithName("w"))
	gm.weightY = G.NewMatrix(gm.g, dt, G.WithShape(gm.batch, 1), G.WithName("w_y"))
	var e, sp, a, bz, sa, sb *G.Node
	if e, err = G.Exp(gm.logits); err != nil {
		return err
	}
	if sp, err = G.Log1p(e); err != nil {
		return err
	}
	if a, err = G.HadamardProd(gm.weight, sp); err != nil {
		return err
	}
	if bz, err = G.HadamardProd(gm.weightY, gm.logits); err != nil {
		return err
	}
	if sa, err = G.Sum(a); err != nil {
		return err
	}
	if sb, err = G.Sum(bz); err != nil {
		return err
	}
	gm.loss, err = G.Sub(sa, sb)
	return err
}

// set binds a float64 slice to an input node, converting to the graph's dtype.
func set(n *G.Node, shape []int, data []float64) error {
	var backing any = slices.Clone(data)
	if n.Dtype() == tensor.Float32 {
		f := make([]float32, len(data))
		for i, v := range data {
			f[i] = float32(v)
		}
		backing = f
	}
	return G.Let(n, tensor.New(tensor.WithShape(shape...), tensor.WithBacking(backing)))
}

// values copies a node's value out as float64.
func values(n *G.Node) []float64 { return data(n.Value().Data()) }

// data copies a value's data out as float64.
func data(v any) []float64 {
	switch d := v.(type) {
	case []float64:
		return slices.Clone(d)
	case []float32:
		out := make([]float64, len(d))
		for i, v := range d {
			out[i] = float64(v)
		}
		return out
	case float64:
		return []float64{d}
	case float32:
		return []float64{float64(d)}
	}
	return nil
}

// run binds x and the loss targets and runs the whole graph once; the
// caller resets the machine after reading the values it needs.
func (gm *Model) run(x []float64, labels []int, weight []float64) error {
	if len(x) != gm.batch*gm.inSize {
		return fmt.Errorf("%d input values, want batch %d × %d", len(x), gm.batch, gm.inSize)
	}
	if labels != nil && len(labels) != gm.batch {
		return fmt.Errorf("%d labels, want %d", len(labels), gm.batch)
	}
	if weight != nil && len(weight) != gm.batch {
		return fmt.Errorf("%d weights, want %d", len(weight), gm.batch)
	}
	classes := max(gm.outDim, 2)
	w := make([]float64, gm.batch*gm.outDim)
	wy := make([]float64, gm.batch)
	for i := 0; labels != nil && i < gm.batch; i++ {
		y := labels[i]
		if y < 0 || y >= classes {
			return fmt.Errorf("label %d of sample %d, want 0..%d", y, i, classes-1)
		}
		wi := 1.0
		if weight != nil {
			wi = weight[i]
		}
		if gm.outDim == 1 {
			w[i], wy[i] = wi, wi*float64(y)
		} else {
			w[i*gm.outDim+y] = wi
		}
	}
	if err := set(gm.x, gm.x.Shape(), x); err != nil {
		return err
	}
	if err := set(gm.weight, gm.weight.Shape(), w); err != nil {
		return err
	}
	if gm.weightY != nil {
		if err := set(gm.weightY, gm.weightY.Shape(), wy); err != nil {
			return err
		}
	}
	return gm.vm.RunAll()
}

// Forward returns the logits (batch×OutDim) of the input batch x
// (batch×InSize values).
func (gm *Model) Forward(x []float64) ([]float64, error) {
	v, err := gm.read(x, gm.logits)
	if err != nil {
		return nil, fmt.Errorf("graph: Model.Forward: %w", err)
	}
	return v, nil
}

// read runs the graph on x and returns the values of node n, the logits or
// one of newReference's extra nodes.
func (gm *Model) read(x []float64, n *G.Node) ([]float64, error) {
	v, ok := gm.reads[n]
	if !ok {
		return nil, fmt.Errorf("node %s is not read out", n.Name())
	}
	defer gm.vm.Reset()
	if err := gm.run(x, nil, nil); err != nil {
		return nil, err
	}
	return data((*v).Data()), nil
}

// Gradients returns the summed loss Σ_i weight_i·ℓ_i of the batch (weight
// nil: all ones) and its gradient with respect to every parameter block, in
// Model.Params order and layout.
func (gm *Model) Gradients(x []float64, labels []int, weight []float64) (float64, [][]float64, error) {
	if labels == nil {
		return 0, nil, errors.New("graph: Model.Gradients: labels are nil")
	}
	defer gm.vm.Reset()
	if err := gm.run(x, labels, weight); err != nil {
		return 0, nil, fmt.Errorf("graph: Model.Gradients: %w", err)
	}
	grads := make([][]float64, len(gm.grads))
	for i, g := range gm.grads {
		grads[i] = values(g)
		if len(grads[i]) != tensor.Shape(gm.shapes[i]).TotalSize() {
			return 0, nil, fmt.Errorf("graph: Model.Gradients: gradient %d has %d values, parameter shape %v",
				i, len(grads[i]), gm.shapes[i])
		}
		if gm.transposed != nil && gm.transposed[i] {
			nnLayout := make([]float64, len(grads[i]))
			s := gm.shapes[i] // {out, in}, or {1, out, in} for BatchedMatMul
			transpose(nnLayout, grads[i], s[len(s)-2], s[len(s)-1])
			grads[i] = nnLayout
		}
	}
	return values(gm.loss)[0], grads, nil
}

// Close releases the graph's machine.
func (gm *Model) Close() error { return gm.vm.Close() }
