package models

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/fairdp/fairdp/nn"
)

// Model is a sequential network: Layers applied in order to a batch.
//
// It is the unit every trainer works on: Forward/Loss/Backward give the taps,
// ParamGrads and SqNorms give (clipped) gradients and per-sample norms without
// per-sample gradient copies, and Params feeds the optimizer.
type Model[T nn.Float] struct {
	Arch    string // one of Archs, or a caller's own name for hand-built Layers
	InShape []int  // per-sample input shape
	Classes int    // number of labels; a one-logit model has Classes == 2; 1 is a regression (Regression)
	// Hidden is the MLP's hidden widths (nil for other archs); kept so that
	// Spec() can rebuild the model.
	Hidden []int
	// InputNormBound is Spec.InputNormBound: rows longer than it are
	// scaled to it before the first layer (0: none).
	InputNormBound float64
	Layers         []nn.Layer[T]
	clipped        []T // Forward's buffer for the clipped batch
}

// New builds the network spec describes, initialised like PyTorch's
// defaults from rng (see initParams).
func New[T nn.Float](spec Spec, rng *rand.Rand) (*Model[T], error) {
	plan, err := spec.plan()
	if err != nil {
		return nil, err
	}
	if rng == nil {
		return nil, fmt.Errorf("models: New(%s): rng is nil, want a seeded *rand.Rand", spec)
	}
	m := &Model[T]{
		Arch:    spec.Arch,
		InShape: append([]int(nil), spec.InShape...),
		Classes: spec.Classes,
		Hidden:  append([]int(nil), spec.Hidden...),

		InputNormBound: spec.InputNormBound,
	}
	for i, p := range plan {
		layer, err := buildLayer[T](p)
		if err != nil {
			return nil, fmt.Errorf("models: New(%s): layer %d: %w", spec, i, err)
		}
		if err := initParams(layer, p, rng); err != nil {
			return nil, fmt.Errorf("models: New(%s): layer %d %s: %w", spec, i, layer.Name(), err)
		}
		m.Layers = append(m.Layers, layer)
	}
	return m, nil
}

// buildLayer makes the nn layer a plan describes.
func buildLayer[T nn.Float](p layerPlan) (nn.Layer[T], error) {
	switch p.kind {
	case kindLinear:
		return nn.NewLinear[T](p.in, p.out), nil
	case kindConv:
		return nn.NewConv2d[T](p.c, p.h, p.w, p.outC, p.k, p.stride, p.pad), nil
	case kindMaxPool:
		return nn.NewMaxPool2d[T](p.c, p.h, p.w, p.k), nil
	case kindReLU:
		return nn.NewReLU[T](), nil
	case kindFlatten:
		return nn.NewFlatten[T](), nil
	case kindCustom:
		return nn.NewLayer[T](*p.custom)
	}
	return nil, fmt.Errorf("unknown layer kind %d", p.kind)
}

// initParams draws a Linear or Conv2d layer's weight and bias with the
// layer's own Init, which is PyTorch's default reset_parameters
// (U(−1/√fan_in, 1/√fan_in) for both): matching PyTorch keeps the papers'
// learning rates meaningful here.
func initParams[T nn.Float](layer nn.Layer[T], p layerPlan, rng *rand.Rand) error {
	if p.kind == kindCustom {
		if initer, ok := layer.(interface{ Init(*rand.Rand) }); ok {
			initer.Init(rng)
		}
		return nil
	}
	if p.kind != kindLinear && p.kind != kindConv {
		return nil
	}
	initer, ok := layer.(interface{ Init(*rand.Rand) })
	if !ok {
		return fmt.Errorf("layer %T has no Init method", layer)
	}
	initer.Init(rng)
	return nil
}

// Spec returns the spec that rebuilds m's layers.
// For a network outside the zoo it lists the layers' descriptions
// (Spec.Layers); a layer that cannot describe itself leaves Layers short,
// which Save reports.
func (m *Model[T]) Spec() Spec {
	s := Spec{Arch: m.Arch, InShape: append([]int(nil), m.InShape...), Classes: m.Classes,
		Hidden: append([]int(nil), m.Hidden...), InputNormBound: m.InputNormBound}
	if !slices.Contains(Archs, m.Arch) {
		for _, l := range m.Layers {
			d, ok := l.(nn.Describer)
			if !ok {
				break
			}
			s.Layers = append(s.Layers, d.Spec())
		}
	}
	return s
}

// Regression reports whether m is a regression model (arch RegressionArch,
// or a network of one's own with Classes 1, as Spec.Regression): its one
// output per record is the prediction, not a logit.
func (m *Model[T]) Regression() bool { return isRegression(m.Arch, m.Classes) }

// InSize is the number of input values per sample.
func (m *Model[T]) InSize() int {
	n := 1
	for _, d := range m.InShape {
		n *= d
	}
	return n
}

// OutDim is the number of logits per sample: 1 for a sigmoid model, else Classes.
func (m *Model[T]) OutDim() int {
	shape := m.InShape
	for _, l := range m.Layers {
		shape = l.OutShape(shape)
	}
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// Forward runs the batch x (batch×InSize values) through every layer and
// returns the logits (batch×OutDim), owned by a layer.
//
// Two things save memory without changing a result (see layerAt and
// nextFree): a ReLU followed by a max-pool runs after it, on the pooled
// values; and a layer that can work in a buffer it is handed
// (nn.InPlace) is handed its input when that input is free: it belongs to
// a layer that disowns it (nn.Disowning) and no other layer has written
// over it. ReLU then writes its output over its input, and a max-pool
// writes its input gradient over its input in Backward. On the VGG-like
// network at batch 64 this took the DP-SGD step's peak RSS from 2.1 GB to
// under 1 GB. The caller's x is never overwritten.
func (m *Model[T]) Forward(x []T, batch int, train bool) []T {
	if len(x) != batch*m.InSize() {
		panic(fmt.Sprintf("models: Forward: %d input values for batch %d of %v, want %d",
			len(x), batch, m.InShape, batch*m.InSize()))
	}
	if m.InputNormBound > 0 {
		m.clipped = ClipRows(m.clipped, x, m.InSize(), m.InputNormBound)
		x = m.clipped
	}
	free := false // x is the caller's (or the clip buffer, which later layers must not overwrite either: reused next call)
	for p := range m.Layers {
		l := m.Layers[m.layerAt(p)]
		ip, inPlace := l.(nn.InPlace[T])
		var y []T
		if inPlace && free {
			y = ip.ForwardInPlace(x, batch, train)
		} else {
			y = l.Forward(x, batch, train)
		}
		free = nextFree(l, x, y, free, inPlace)
		x = y
	}
	return x
}

// Backward back-propagates dlogits (∂L/∂logits of the last Forward) through
// every layer, in the reverse of Forward's order, leaving each layer's tap
// ready for ParamGrads and SqNorms. The layer Forward ran first skips its
// input gradient, which nothing needs. Layers that can compute their input
// gradient over their output gradient (nn.InPlace) do so when that buffer
// is free, as in Forward; the caller's dlogits is never overwritten.
func (m *Model[T]) Backward(dlogits []T) {
	dy := dlogits
	free := false // dlogits is the caller's
	for p := len(m.Layers) - 1; p >= 0; p-- {
		l := m.Layers[m.layerAt(p)]
		ip, inPlace := l.(nn.InPlace[T])
		var dx []T
		if inPlace && free && p > 0 {
			dx = ip.BackwardInPlace(dy)
		} else {
			dx = l.Backward(dy, p > 0)
		}
		free = nextFree(l, dy, dx, free, inPlace)
		dy = dx
	}
}

// layerAt is the index of the layer Forward runs at position p: Layers in
// order, except that a ReLU directly followed by a max-pool runs after it.
// max and ReLU commute (max over a window of max(x, 0) is max(max over the
// window, 0)), and the gradients agree bit for bit: where the window's
// maximum is positive both orders pass dy to the same first arg-max and
// nowhere else; where it is not, both give +0 everywhere. NaN inputs may
// route a (NaN) gradient to another position of the window. The ReLU then
// touches a quarter of the values (for 2×2 pools), and the pool's input is
// free for its input gradient.
func (m *Model[T]) layerAt(p int) int {
	switch {
	case p+1 < len(m.Layers) && reluThenPool(m.Layers[p], m.Layers[p+1]):
		return p + 1
	case p > 0 && reluThenPool(m.Layers[p-1], m.Layers[p]):
		return p - 1
	}
	return p
}

func reluThenPool[T nn.Float](a, b nn.Layer[T]) bool {
	_, relu := a.(*nn.ReLU[T])
	_, pool := b.(*nn.MaxPool2d[T])
	return relu && pool
}

// nextFree reports whether out, what layer l returned for in, is free for
// the next layer to take over. A layer that passes its input through
// (Flatten) passes its freedom on, except that a buffer an in-place layer
// has written now holds that layer's own output (ReLU's gate reads it), so
// it is not free again; any other output is free when l disowns it.
func nextFree[T nn.Float](l nn.Layer[T], in, out []T, free, inPlace bool) bool {
	if len(out) > 0 && len(in) > 0 && &out[0] == &in[0] {
		return free && !inPlace
	}
	_, disowns := l.(nn.Disowning)
	return disowns
}

// ParamGrads adds Σ_i scale[i]·g_i to every Param.Grad (scale nil: all ones),
// where g_i is sample i's gradient from the last Backward.
func (m *Model[T]) ParamGrads(scale []T) {
	for _, l := range m.Layers {
		l.ParamGrads(scale)
	}
}

// SqNorms adds ‖g_i‖² over all parameters to out[i], for per-sample clipping.
func (m *Model[T]) SqNorms(out []T) {
	for _, l := range m.Layers {
		l.SqNorms(out)
	}
}

// TappedLayers implements dpops.Layered: SqNorms and ParamGrads are the
// layers' in this order, so a clipper may run them layer by layer and fuse
// one layer's norms with its clipped sum (nn.ClipSummer).
func (m *Model[T]) TappedLayers() []nn.Layer[T] { return m.Layers }

// Params lists every parameter block in layer order.
func (m *Model[T]) Params() []*nn.Param[T] {
	var ps []*nn.Param[T]
	for _, l := range m.Layers {
		ps = append(ps, l.Params()...)
	}
	return ps
}

// ZeroGrads clears every Param.Grad before the next ParamGrads.
func (m *Model[T]) ZeroGrads() {
	nn.ZeroGrads(m.Params())
}

// NumParams is the total number of parameter values.
func (m *Model[T]) NumParams() int {
	n := 0
	for _, p := range m.Params() {
		n += len(p.Value)
	}
	return n
}

// Loss computes the per-sample losses of logits (batch×OutDim) into loss and
// their gradient into dlogits: sigmoid binary cross-entropy for a one-logit
// model, softmax cross-entropy otherwise. weight (nil: all ones) scales each
// sample's loss and gradient, e.g. a 0/1 mask for padded rows.
func (m *Model[T]) Loss(logits []T, labels []int, weight, loss, dlogits []T) {
	if out := m.OutDim(); out == 1 {
		nn.SigmoidBCE(logits, labels, weight, loss, dlogits)
	} else {
		nn.SoftmaxCrossEntropy(logits, labels, out, weight, loss, dlogits)
	}
}

// Probabilities writes the class probabilities (batch×Classes) into probs:
// (1−σ(z), σ(z)) for a one-logit model, softmax otherwise.
func (m *Model[T]) Probabilities(logits []T, batch int, probs []T) {
	Probabilities(logits, m.OutDim(), batch, probs)
}

// LossProbs is Loss followed by Probabilities, with the same values: for a
// one-logit model in one pass that computes each sample's exponential once
// for both (nn.SigmoidBCEProbs), so a caller that needs the loss and the
// probabilities of the same logits (DP-FERMI) does not pay for it twice.
func (m *Model[T]) LossProbs(logits []T, labels []int, weight, loss, dlogits, probs []T) {
	out := m.OutDim()
	if out == 1 {
		nn.SigmoidBCEProbs(logits, labels, weight, loss, dlogits, probs[:2*len(labels)])
		return
	}
	m.Loss(logits, labels, weight, loss, dlogits)
	Probabilities(logits, out, len(labels), probs)
}

// Predict writes the most probable class of each sample into dst: z > 0 for a
// one-logit model, the arg-max (first on ties) otherwise.
func (m *Model[T]) Predict(logits []T, batch int, dst []int) {
	Predict(logits, m.OutDim(), batch, dst)
}

// Probabilities writes the class probabilities (batch×max(2, out)) of
// logits (batch×out) into probs: (1−σ(z), σ(z)) for one logit (out = 1),
// softmax otherwise. It is the reading of logits every fairdp loss assumes,
// so that any network with out logits per sample, a Model or a caller's
// own, is read the same way.
func Probabilities[T nn.Float](logits []T, out, batch int, probs []T) {
	if out == 1 {
		nn.Sigmoid(logits[:batch], probs[:2*batch])
		return
	}
	nn.Softmax(logits[:batch*out], out, probs[:batch*out])
}

// Predict writes the most probable class of each of batch samples of
// logits (batch×out) into dst: z > 0 for one logit, the arg-max (first on
// ties) otherwise.
func Predict[T nn.Float](logits []T, out, batch int, dst []int) {
	for i := range batch {
		row := logits[i*out : (i+1)*out]
		if out == 1 {
			dst[i] = 0
			if row[0] > 0 {
				dst[i] = 1
			}
			continue
		}
		best := 0
		for j, z := range row {
			if z > row[best] {
				best = j
			}
		}
		dst[i] = best
	}
}

// ClipRows writes the rows of x (each size values) to dst (reallocated
// when too short; returned) with every row whose L2 norm exceeds bound
// scaled to norm bound, as Model.Forward reads them when
// InputNormBound is set. x is not changed.
func ClipRows[T nn.Float](dst, x []T, size int, bound float64) []T {
	if cap(dst) < len(x) {
		dst = make([]T, len(x))
	}
	dst = dst[:len(x)]
	for i := 0; i < len(x); i += size {
		row, out := x[i:i+size], dst[i:i+size]
		var nn2 float64
		for _, v := range row {
			nn2 += float64(v) * float64(v)
		}
		f := 1.0
		if n := math.Sqrt(nn2); n > bound {
			f = bound / n
		}
		for j, v := range row {
			out[j] = T(f * float64(v))
		}
	}
	return dst
}
