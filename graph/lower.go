//go:build !cuda

package graph

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"unsafe"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/fairdp/fairdp/models"
	"github.com/fairdp/fairdp/nn"
)

// Supported lists what Lower recognises, as its refusals print it.
const Supported = "Mul or BatchedMatMul of the input with a weight or a transposed weight, with or without " +
	"a broadcast bias (dense), Mul of the input with a weight vector, with or without a scalar bias (one output), " +
	"Conv2d with or without a broadcast bias (any kernel, pad and stride per axis, dilation 1), " +
	"MaxPool2D (window = stride, no padding), Rectify, LeakyRelu, Tanh, Sigmoid, Dropout, " +
	"Reshape (flattening, and back to {batch, C, H, W}), Add of two branches of one shape from one node (a residual join), " +
	"and a SoftMax, LogSoftMax or one-output Sigmoid head, or one output per record read by a squared error (a regression)"

// Head says what the graph's output applies to the logits. fairdp's loss
// starts from the logits (softmax cross-entropy, or sigmoid binary
// cross-entropy for one logit), so a head is folded into the loss: training
// the lowered model minimises exactly the cross-entropy of the graph's
// SoftMax (or Sigmoid) output, and the head itself has nothing to learn.
// A regression output (HeadSquaredError) has no head: its one value per
// record is the prediction, trained with the squared error the graph takes
// of it.
type Head string

// The heads Lower folds into the loss.
const (
	HeadNone       Head = "logits"      // the output is the logits (one output: a sigmoid logit)
	HeadSoftMax    Head = "softmax"     // SoftMax over the classes
	HeadLogSoftMax Head = "log-softmax" // LogSoftMax over the classes
	HeadSigmoid    Head = "sigmoid"     // Sigmoid of a single logit
	// HeadSquaredError is a regression: the output, one value per record
	// ({batch} or {batch, 1}), is the prediction that a squared error in the
	// graph reads (as in Gorgonia's examples/iris). The lowered model has
	// Classes 1 (models.Model.Regression) and trains with the squared loss
	// (p − y)² per record on a regression schema's targets.
	HeadSquaredError Head = "squared-error"
)

// LowerOptions are the choices Lower cannot read from the graph.
type LowerOptions struct {
	// Arch is the name the model carries (models.Model.Arch, the report's
	// "model"); "" means "gorgonia". It may not be a zoo name (models.Archs):
	// a lowered model is saved by its layer list.
	Arch string
	// DropoutSeed seeds the masks of the lowered Dropout layers (the i-th
	// Dropout node from the input uses DropoutSeed + i), so a run repeats
	// exactly; Gorgonia's own Dropout seeds itself from the clock.
	DropoutSeed uint64
	// Log, if not nil, receives Lowered.Notes once, one line each: what
	// Lower left out of a graph that holds more than the forward pass
	// (learnable nodes off the lowered path, L2 terms used or dropped).
	Log io.Writer
}

// Lowered is a Gorgonia graph rebuilt as fairdp layers.
type Lowered[T nn.Float] struct {
	// Model is the fairdp model: train it with trainer.TrainPrivate.
	Model *models.Model[T]
	// Head is what the graph's output applies to Logits.
	Head Head
	// Logits is the graph node whose values are Model's logits (the output
	// itself, or the head's input).
	Logits *G.Node
	// Params are the graph's learnable nodes in Model.Params() order: block
	// i of the model started from Params[i]'s value, and WriteBack copies it
	// there. A dense weight the graph uses transposed (Mul(x, Transpose(W))
	// with W {out, in}, or BatchedMatMul's transB) is transposed on the way
	// in and out, since nn's Linear holds {in, out}.
	Params []*G.Node
	// transposed[i] says Params[i] is such a transposed weight.
	transposed []bool
	// Untouched are the graph's learnable nodes (those the program asked
	// Gorgonia's Grad for) outside the path from the input to the output:
	// the lowered model does not use them, so training leaves them as
	// they are.
	Untouched []*G.Node
	// L2 are the regularisers c·Σθ² the graph holds on lowered blocks.
	L2 []L2Term
	// WeightDecay is the coupled weight decay (trainer
	// Config.Fair.WeightDecay) the L2 terms amount to: 2c when one term
	// with the same c > 0 covers every block, else 0 and the terms are
	// dropped (Notes says why). It reads only weights, so it costs no
	// privacy; the caller sets it in the trainer's Config.
	WeightDecay float64
	// Notes say, one line each, what Lower did with the graph outside the
	// lowered path (LowerOptions.Log prints them).
	Notes []string
}

// Lower rebuilds the network that maps input to output in g as a fairdp
// model, starting from the learnable nodes' current values.
//
// The input's first axis is the batch (fairdp's layout: NCHW images,
// row-major); the per-sample shape is the rest. Lower walks from output
// back to input and recognises Gorgonia's expansions of the supported
// layers (Supported): Conv2d's im2col, reshapes, matrix product and
// transpose; Rectify's x ⊙ (x ≥ 0); LeakyRelu's two masked products; the
// bias's reshape and repeats; a dense weight's Transpose. A dense layer
// or convolution without a bias becomes nn's Linear or Conv2d without one
// (its weight is the only parameter); Mul(x, w) with a weight vector w,
// plus a scalar bias node or not, is a one-output Linear whose output is
// the vector {batch} (a Sigmoid on it is the binary head). The rest of the
// graph (a loss, L2 terms, Grad and update nodes) is left alone and
// reported (Lowered.Untouched, L2, WeightDecay, Notes). An output without
// a head that a squared error reads, one value per record, is a regression
// (HeadSquaredError). An Add of two
// branches computed from one node is a residual join, nn's Residual
// holding each branch's layers. Anything else — another op, BatchNorm (it
// mixes the records of a batch), an output of several values per record
// that a squared error reads (a multi-output regression), a dilated
// convolution, a weight used by two layers
// or as its own bias, two weights on one backing array (WriteBack would
// write one over the other),
// an output that does not depend on the input — is an error naming the node
// and its op, and nothing is built. The layers' shapes are checked against
// fairdp's before Lower returns.
//
// T must be the graph's element type (float32 or float64).
func Lower[T nn.Float](g *G.ExprGraph, input, output *G.Node, opts LowerOptions) (*Lowered[T], error) {
	l, err := lower[T](g, input, output, opts)
	if err != nil {
		return nil, fmt.Errorf("graph: Lower: %w", err)
	}
	return l, nil
}

// stage is one fairdp layer found in the graph: its description, the
// learnable nodes of its parameter blocks (in nn's order), which of them the
// graph holds transposed (nil: none), and the node that holds its output.
type stage struct {
	spec       nn.LayerSpec
	params     []*G.Node
	transposed []bool
	out        *G.Node
}

// walker holds what the backward walk needs.
type walker struct {
	g     *G.ExprGraph
	input *G.Node
	batch int
	dt    tensor.Dtype
	dep   map[*G.Node]bool
}

func lower[T nn.Float](g *G.ExprGraph, input, output *G.Node, opts LowerOptions) (*Lowered[T], error) {
	switch {
	case g == nil || input == nil || output == nil:
		return nil, errors.New("the graph, input and output must not be nil")
	case input.Graph() != g || output.Graph() != g:
		return nil, errors.New("the input and output nodes must belong to the graph")
	case slices.Contains(models.Archs, opts.Arch):
		return nil, fmt.Errorf("LowerOptions.Arch %q is a zoo architecture; name the lowered model otherwise", opts.Arch)
	case input.Op() != nil || input.Dims() < 2:
		return nil, fmt.Errorf("input %s must be an input node of rank ≥ 2 (batch first), got op %v, shape %v",
			input.Name(), input.Op(), input.Shape())
	}
	w := &walker{g: g, input: input, batch: input.Shape()[0], dt: dtypeOf[T](), dep: map[*G.Node]bool{}}
	if input.Dtype() != w.dt {
		return nil, fmt.Errorf("the graph holds %v, the model is %v: lower it as Lower[%s]", input.Dtype(), w.dt, input.Dtype())
	}
	if output == input || !w.depends(output) {
		return nil, fmt.Errorf("output %s does not depend on the input %s", output.Name(), input.Name())
	}
	logits, head, err := w.head(output)
	if err != nil {
		return nil, err
	}
	if head == HeadNone {
		if sq := w.squaredError(output); sq != nil {
			if per := w.perSample(output); !slices.Equal(per, []int{1}) {
				return nil, w.refuse(sq, fmt.Sprintf("the output %s, %v per record, feeds a squared error (a regression with several "+
					"outputs); fairdp's regression output is one prediction per record ({batch} or {batch, 1})", output.Name(), per))
			}
			head = HeadSquaredError
		}
	}
	if ls := logits.Shape(); ls[0] != w.batch || len(ls) > 2 {
		return nil, fmt.Errorf("the logits %s have shape %v, want {%d, outputs} (or {%d}: one output)", logits.Name(), ls, w.batch, w.batch)
	}
	var stages []stage
	for cur := logits; cur != input; {
		st, prev, err := w.step(cur)
		if err != nil {
			return nil, err
		}
		if st.spec.Kind != "" {
			stages = append(stages, st)
		}
		cur = prev
	}
	slices.Reverse(stages)
	l, err := assemble[T](w, stages, logits, head, opts)
	if err != nil {
		return nil, err
	}
	rest(w, l)
	writeNotes(opts.Log, l)
	return l, nil
}

// assemble makes the fairdp layers of the stages, copies the learnable values
// and checks every shape against the graph's.
func assemble[T nn.Float](w *walker, stages []stage, logits *G.Node, head Head, opts LowerOptions) (*Lowered[T], error) {
	arch := opts.Arch
	if arch == "" {
		arch = "gorgonia"
	}
	outDim := w.perSample(logits)[0]
	classes := max(outDim, 2)
	if head == HeadSquaredError {
		classes = 1 // a regression (models.Spec.Regression)
	}
	m := &models.Model[T]{Arch: arch, InShape: slices.Clone([]int(w.input.Shape()[1:])), Classes: classes}
	l := &Lowered[T]{Model: m, Head: head, Logits: logits}
	owner := map[*G.Node]int{}
	var claimed []backingRange
	shape := m.InShape
	dropouts := opts.DropoutSeed
	for i, st := range stages {
		seedDropouts(&st.spec, &dropouts)
		layer, err := nn.NewLayer[T](st.spec)
		if err != nil {
			return nil, fmt.Errorf("layer %d from node %s: %w", i, st.out.Name(), err)
		}
		if len(st.params) != len(layer.Params()) {
			return nil, fmt.Errorf("layer %d %s from node %s: %d weight nodes for %d parameter blocks", i, layer.Name(), st.out.Name(), len(st.params), len(layer.Params()))
		}
		for j, p := range layer.Params() {
			n := st.params[j]
			trans := st.transposed != nil && st.transposed[j]
			if k, shared := owner[n]; shared && k == i {
				// The layer is not in m.Layers yet: name it from here.
				return nil, fmt.Errorf("weight %s is both weight and bias of layer %d (%s): fairdp's layers hold each parameter "+
					"block separately, so a node in two blocks is not supported", n.Name(), i, layer.Name())
			} else if shared {
				return nil, fmt.Errorf("weight %s is used by layer %d (%s) and layer %d (%s): fairdp's layers own their parameters "+
					"(per-sample gradients and clipping are per layer), so a shared weight is not supported", n.Name(), k, m.Layers[k].Name(), i, layer.Name())
			}
			owner[n] = i
			vals, err := nodeValues[T](n)
			if err != nil {
				return nil, err
			}
			if err := claimBacking[T](&claimed, n, i); err != nil {
				return nil, err
			}
			if len(vals) != len(p.Value) {
				return nil, fmt.Errorf("weight %s has %d values, %s's %s needs %d (shape %v)", n.Name(), len(vals), layer.Name(), p.Name, len(p.Value), p.Shape)
			}
			if trans { // the node is {out, in}, the parameter {in, out}
				transpose(p.Value, vals, p.Shape[1], p.Shape[0])
			} else {
				copy(p.Value, vals)
			}
			l.Params = append(l.Params, n)
			l.transposed = append(l.transposed, trans)
		}
		shape = layer.OutShape(shape)
		if got := st.out.Shape(); got[0] != w.batch || !slices.Equal(w.perSample(st.out), shape) {
			return nil, fmt.Errorf("layer %d %s gives per-sample shape %v in fairdp, node %s has shape %v", i, layer.Name(), shape, st.out.Name(), got)
		}
		m.Layers = append(m.Layers, layer)
	}
	if len(m.Layers) == 0 {
		return nil, fmt.Errorf("no layer between %s and %s", w.input.Name(), logits.Name())
	}
	if err := m.Spec().Validate(); err != nil {
		return nil, err
	}
	return l, nil
}

// squaredError is the Square (or x ⊙ x) of output − t (or t − output), t
// independent of the input, that some program's loss takes of the output,
// else nil: the mark of a regression.
func (w *walker) squaredError(output *G.Node) *G.Node {
	for it := w.g.To(output.ID()); it.Next(); {
		sub := it.Node().(*G.Node)
		k := w.kids(sub)
		if len(sub.DerivOf()) > 0 || opKind(sub) != "elemBinOp" || opName(sub) != "-" || len(k) != 2 ||
			w.depends(k[0]) == w.depends(k[1]) {
			continue
		}
		for jt := w.g.To(sub.ID()); jt.Next(); {
			sq := jt.Node().(*G.Node)
			k := w.kids(sq)
			if opKind(sq) == "elemUnaryOp" && opName(sq) == "square" ||
				opKind(sq) == "elemBinOp" && opName(sq) == "⊙" && len(k) == 2 && k[0] == sub && k[1] == sub {
				return sq
			}
		}
	}
	return nil
}

// perSample is node n's per-sample shape: its shape without the batch axis,
// {1} for a batch-shaped vector {batch} (one output per record, what a
// matrix–vector product gives).
func (w *walker) perSample(n *G.Node) []int {
	if s := n.Shape(); len(s) > 1 {
		return slices.Clone([]int(s[1:]))
	}
	return []int{1}
}

// head finds the logits under a SoftMax, LogSoftMax or one-output Sigmoid.
func (w *walker) head(out *G.Node) (*G.Node, Head, error) {
	switch opKind(out) {
	case "softmaxOp":
		axis := int(field(out.Op(), "axis").Int())
		if axis != -1 && axis != out.Dims()-1 {
			return nil, "", w.refuse(out, fmt.Sprintf("a SoftMax over axis %d is not over the classes (the last axis)", axis))
		}
		h := HeadSoftMax
		if field(out.Op(), "isLog").Bool() {
			h = HeadLogSoftMax
		}
		return w.kids(out)[0], h, nil
	case "elemUnaryOp":
		if opName(out) == "sigmoid" {
			if s := out.Shape(); (len(s) == 2 && s[1] == 1) || (len(s) == 1 && s[0] == w.batch) {
				return w.kids(out)[0], HeadSigmoid, nil // {batch, 1}, or {batch} from Mul(x, w) with w a vector
			}
			return nil, "", w.refuse(out, "a Sigmoid head on several outputs is a multi-label model; fairdp trains "+
				"single-label classifiers: end with one output and a Sigmoid, or with SoftMax")
		}
	}
	return out, HeadNone, nil
}

// step recognises the layer whose output is n and returns it with the node
// that feeds it (an empty stage for a reshape that changes nothing).
func (w *walker) step(n *G.Node) (stage, *G.Node, error) {
	kids := w.kids(n)
	if bn := w.batchNorm(n); bn != nil {
		return stage{}, nil, w.refuse(bn, batchNormRefusal)
	}
	switch kind := opKind(n); kind {
	case "elemBinOp":
		switch opName(n) {
		case "+":
			if x, slope, ok := w.leakyRelu(n, kids); ok {
				return stage{spec: nn.LayerSpec{Kind: nn.KindLeakyReLU, Slope: slope}, out: n}, x, nil
			}
			return w.biased(n, kids)
		case "⊙":
			if x, ok := w.rectify(kids); ok {
				return stage{spec: nn.LayerSpec{Kind: nn.KindReLU}, out: n}, x, nil
			}
		}
	case "elemUnaryOp":
		switch opName(n) {
		case "tanh":
			return stage{spec: nn.LayerSpec{Kind: nn.KindTanh}, out: n}, kids[0], nil
		case "sigmoid":
			return stage{spec: nn.LayerSpec{Kind: nn.KindSigmoid}, out: n}, kids[0], nil
		}
	case "linAlgBinOp":
		switch fmt.Sprint(n.Op()) {
		case "A × B":
			return w.dense(n, n, nil)
		case "A × b":
			return w.matVec(n, n, nil)
		}
	case "transposeOp":
		if w.endsConv(n) {
			return w.conv(n, n, nil) // without a bias, as Gorgonia's examples write it
		}
	case "maxPoolOp":
		return w.maxPool(n, kids[0])
	case "reshapeOp":
		if opKind(kids[0]) == "linAlgBinOp" && strings.Contains(fmt.Sprint(kids[0].Op()), "×××") {
			return w.batchedDense(n, n, nil) // without a bias
		}
		return w.reshape(n, kids[0])
	case "dropoutOp":
		p := field(n.Op(), "probability").Float()
		return stage{spec: nn.LayerSpec{Kind: nn.KindDropout, P: p}, out: n}, kids[0], nil
	case "softmaxOp":
		return stage{}, nil, w.refuse(n, "SoftMax is only supported as the output (a head folded into the loss)")
	}
	return stage{}, nil, w.refuse(n, "")
}

// batchNormRefusal says why BatchNorm is refused and what to use.
const batchNormRefusal = "BatchNorm normalises each record with the statistics of the whole batch, so one record's " +
	"gradient depends on the others and per-sample clipping cannot bound a record's influence (the privacy " +
	"guarantee would not hold); use fairdp's GroupNorm instead (nn.NewGroupNorm, kind \"groupnorm\" in a model " +
	"spec), which normalises each record on its own"

// batchNorm is the BatchNorm op under n, if n is Gorgonia's BatchNorm
// expansion (γ ⊙ BatchNormOp(x) + β) or one of its nodes, else nil.
func (w *walker) batchNorm(n *G.Node) *G.Node {
	for _, a := range append([]*G.Node{n}, w.kids(n)...) {
		if opKind(a) == "BatchNormOp" {
			return a
		}
		for _, b := range w.kids(a) {
			if opKind(b) == "BatchNormOp" {
				return b
			}
		}
	}
	return nil
}

// refuse is the error for a node Lower cannot lower.
func (w *walker) refuse(n *G.Node, why string) error {
	if why == "" {
		why = "not a supported op"
	}
	return fmt.Errorf("node %s (op %v, %s): %s; supported: %s", n.Name(), n.Op(), opKind(n), why, Supported)
}

// depends says whether n's value depends on the input's values (a SizeOf
// reads only a shape).
func (w *walker) depends(n *G.Node) bool {
	if n == w.input {
		return true
	}
	if v, ok := w.dep[n]; ok {
		return v
	}
	w.dep[n] = false
	if opKind(n) == "sizeOp" {
		return false
	}
	d := false
	for _, c := range w.kids(n) {
		d = w.depends(c) || d
	}
	w.dep[n] = d
	return d
}

// kids are n's operands in order.
func (w *walker) kids(n *G.Node) []*G.Node {
	var out []*G.Node
	for it := w.g.From(n.ID()); it.Next(); {
		out = append(out, it.Node().(*G.Node))
	}
	return out
}

// kid is n's only operand if n's op is kind, else nil.
func (w *walker) kid(n *G.Node, kind string) *G.Node {
	if n == nil || opKind(n) != kind {
		return nil
	}
	if k := w.kids(n); len(k) >= 1 {
		return k[0]
	}
	return nil
}

// rectify matches Gorgonia's Rectify: x ⊙ (x ≥ 0).
func (w *walker) rectify(kids []*G.Node) (*G.Node, bool) {
	if len(kids) != 2 {
		return nil, false
	}
	for _, ord := range [][2]int{{0, 1}, {1, 0}} {
		x, cmp := kids[ord[0]], kids[ord[1]]
		if w.isCompare(cmp, ">=", x) {
			return x, true
		}
	}
	return nil, false
}

// leakyRelu matches Gorgonia's LeakyRelu: x ⊙ (x ≥ 0) + (x ⊙ (x < 0)) ⊙ α.
func (w *walker) leakyRelu(n *G.Node, kids []*G.Node) (*G.Node, float64, bool) {
	if len(kids) != 2 || !w.depends(kids[0]) || !w.depends(kids[1]) {
		return nil, 0, false
	}
	if opKind(kids[0]) != "elemBinOp" || opName(kids[0]) != "⊙" {
		return nil, 0, false
	}
	x, ok := w.rectify(w.kids(kids[0]))
	if !ok || opKind(kids[1]) != "elemBinOp" || opName(kids[1]) != "⊙" {
		return nil, 0, false
	}
	q := w.kids(kids[1])
	if len(q) != 2 || opKind(q[1]) != "constantScalar" || opKind(q[0]) != "elemBinOp" || opName(q[0]) != "⊙" {
		return nil, 0, false
	}
	neg := w.kids(q[0])
	if len(neg) != 2 || neg[0] != x || !w.isCompare(neg[1], "<", x) {
		return nil, 0, false
	}
	alpha := values(q[1])
	if len(alpha) != 1 {
		return nil, 0, false
	}
	return x, alpha[0], true
}

// isCompare says whether n is (x op 0) with a same-type result.
func (w *walker) isCompare(n *G.Node, op string, x *G.Node) bool {
	if opKind(n) != "elemBinOp" || fmt.Sprint(n.Op()) != op+" true" {
		return false
	}
	k := w.kids(n)
	if len(k) != 2 || k[0] != x || opKind(k[1]) != "constantScalar" {
		return false
	}
	z := values(k[1])
	return len(z) == 1 && z[0] == 0
}

// endsConv says whether the Transpose n ends a Conv2d expansion (the
// transpose of a reshaped product, what a bias is added to).
func (w *walker) endsConv(n *G.Node) bool { return w.kid(w.kid(n, "transposeOp"), "reshapeOp") != nil }

// biased matches a dense or convolution layer: its product plus a
// broadcast bias.
func (w *walker) biased(n *G.Node, kids []*G.Node) (stage, *G.Node, error) {
	if len(kids) != 2 {
		return stage{}, nil, w.refuse(n, "")
	}
	main, bias := kids[0], kids[1]
	if !w.depends(main) {
		main, bias = bias, main
	}
	if w.depends(bias) {
		return w.residual(n, main, bias)
	}
	switch {
	case opKind(main) == "linAlgBinOp" && fmt.Sprint(main.Op()) == "A × B":
		return w.dense(n, main, bias)
	case opKind(main) == "linAlgBinOp" && fmt.Sprint(main.Op()) == "A × b":
		return w.matVec(n, main, bias)
	case opKind(main) == "reshapeOp" && w.kid(main, "reshapeOp") != nil && opKind(w.kid(main, "reshapeOp")) == "linAlgBinOp":
		return w.batchedDense(n, main, bias)
	case opKind(main) == "transposeOp":
		return w.conv(n, main, bias)
	}
	return stage{}, nil, w.refuse(n, fmt.Sprintf("an Add of %s to %s (op %v) is not the bias of a dense or convolution layer",
		bias.Name(), main.Name(), main.Op()))
}

// seedDropouts gives the Dropout layers of spec, those inside a residual
// join's branches included, the seeds *next, *next+1, … in the order the
// layers run (LowerOptions.DropoutSeed).
func seedDropouts(spec *nn.LayerSpec, next *uint64) {
	switch spec.Kind {
	case nn.KindDropout:
		spec.Seed = *next
		*next++
	case nn.KindResidual:
		for _, branch := range [][]nn.LayerSpec{spec.Residual.Body, spec.Residual.Shortcut} {
			for i := range branch {
				seedDropouts(&branch[i], next)
			}
		}
	}
}

// residual matches a join n = a + b of two branches computed from the
// input: both are walked back to the node s they start from (the first node
// of b's walk that a's walk passes), and the stage is nn's Residual with
// the layers of each branch (a branch that is s itself is the identity).
// It returns s, from which the walk goes on.
func (w *walker) residual(n, a, b *G.Node) (stage, *G.Node, error) {
	if !slices.Equal([]int(a.Shape()), []int(b.Shape())) {
		return stage{}, nil, w.refuse(n, fmt.Sprintf("a residual join adds two branches of one shape, got %v and %v", a.Shape(), b.Shape()))
	}
	type visit struct {
		node, prev *G.Node
		st         stage
	}
	walk := func(from *G.Node, stop func(*G.Node) bool) ([]visit, error) {
		var path []visit
		for cur := from; !stop(cur); {
			st, prev, err := w.step(cur)
			if err != nil {
				return nil, err
			}
			path = append(path, visit{cur, prev, st})
			cur = prev
		}
		return path, nil
	}
	pathA, err := walk(a, func(cur *G.Node) bool { return cur == w.input })
	if err != nil {
		return stage{}, nil, err
	}
	onA := map[*G.Node]int{w.input: len(pathA)}
	for i, v := range pathA {
		onA[v.node] = i
	}
	pathB, err := walk(b, func(cur *G.Node) bool { _, ok := onA[cur]; return ok })
	if err != nil {
		return stage{}, nil, err
	}
	fork := b // b is on a's path: the identity branch
	if len(pathB) > 0 {
		fork = pathB[len(pathB)-1].prev
	}
	branch := func(path []visit) (specs []nn.LayerSpec, params []*G.Node, trans []bool) {
		for i := len(path) - 1; i >= 0; i-- {
			st := path[i].st
			if st.spec.Kind == "" {
				continue
			}
			specs = append(specs, st.spec)
			params = append(params, st.params...)
			for j := range st.params {
				trans = append(trans, st.transposed != nil && st.transposed[j])
			}
		}
		return specs, params, trans
	}
	body, pb, tb := branch(pathA[:onA[fork]])
	short, ps, ts := branch(pathB)
	if len(body) == 0 {
		body, short, pb, ps, tb, ts = short, body, ps, pb, ts, tb
	}
	if len(body) == 0 {
		return stage{}, nil, w.refuse(n, "it adds a value to itself (both branches are the same node)")
	}
	spec := nn.LayerSpec{Kind: nn.KindResidual, Residual: &nn.ResidualSpec{Body: body, Shortcut: short}}
	return stage{spec: spec, params: append(pb, ps...), transposed: append(tb, ts...), out: n}, fork, nil
}

// dense matches x × W + b with x {B, in}, W {in, out}, b {out}, or
// x × Transpose(W) + b with W {out, in}; bias nil (n = mm) is the same
// without a bias.
func (w *walker) dense(n, mm, bias *G.Node) (stage, *G.Node, error) {
	k := w.kids(mm)
	x, wt := k[0], k[1]
	trans := false
	if opKind(wt) == "transposeOp" && slices.Equal(transposeAxes(wt), []int{1, 0}) {
		wt, trans = w.kids(wt)[0], true
	}
	if !w.depends(x) {
		return stage{}, nil, w.refuse(mm, "a dense layer is the input {batch, in} times a weight: the left operand does not depend on the input")
	}
	if err := w.param(wt, mm); err != nil {
		return stage{}, nil, err
	}
	xs, ws := x.Shape(), wt.Shape()
	in, out := 0, 0
	if len(ws) == 2 {
		in, out = ws[0], ws[1]
		if trans {
			in, out = out, in
		}
	}
	if len(xs) != 2 || len(ws) != 2 || xs[1] != in {
		want := "weight {in, out}"
		if trans {
			want = "a transposed weight {out, in}"
		}
		return stage{}, nil, w.refuse(mm, fmt.Sprintf("a dense layer needs input {batch, in} and %s, got %v × %v", want, xs, ws))
	}
	return w.linear(n, bias, x, wt, trans, in, out)
}

// matVec matches x × w + b with x {B, in}, w a vector {in} and b a scalar
// node (Gorgonia's Add of a scalar needs no broadcast), a one-output dense
// layer whose output is the vector {B}: logistic and linear regression as
// Gorgonia's examples write them; bias nil (n = mv) is the same without a
// bias.
func (w *walker) matVec(n, mv, bias *G.Node) (stage, *G.Node, error) {
	k := w.kids(mv)
	x, wt := k[0], k[1]
	if !w.depends(x) {
		return stage{}, nil, w.refuse(mv, "a dense layer is the input {batch, in} times a weight: the left operand does not depend on the input")
	}
	if err := w.param(wt, mv); err != nil {
		return stage{}, nil, err
	}
	if xs, ws := x.Shape(), wt.Shape(); len(xs) != 2 || len(ws) != 1 || xs[1] != ws[0] {
		return stage{}, nil, w.refuse(mv, fmt.Sprintf("a one-output dense layer needs input {batch, in} and a weight vector {in}, got %v × %v", xs, ws))
	}
	return w.linear(n, bias, x, wt, false, wt.Shape()[0], 1)
}

// linear is the stage of a dense layer with input x, weight node wt
// (transposed or not) and an optional bias operand of its sum n.
func (w *walker) linear(n, bias, x, wt *G.Node, trans bool, in, out int) (stage, *G.Node, error) {
	st := stage{spec: nn.LayerSpec{Kind: nn.KindLinear, In: in, Out: out, NoBias: bias == nil}, params: []*G.Node{wt},
		transposed: []bool{trans}, out: n}
	if bias != nil {
		b, err := w.bias(bias, n, out)
		if err != nil {
			return stage{}, nil, err
		}
		st.params, st.transposed = append(st.params, b), append(st.transposed, false)
	}
	return st, x, nil
}

// batchedDense matches Reshape({B, out})(Reshape({1, B, in})(x) ××× W) + b,
// a dense layer written with BatchedMatMul over one batch of matrices; W is
// {1, in, out}, or {in, out} reshaped to it; with transB, W is {1, out, in}
// (or {out, in} reshaped); bias nil (n = back) is the same without a bias.
func (w *walker) batchedDense(n, back, bias *G.Node) (stage, *G.Node, error) {
	mm := w.kid(back, "reshapeOp")
	trans := false
	switch fmt.Sprint(mm.Op()) {
	case "A ××× B":
	case "A ××× Bᵀ":
		trans = true
	default:
		return stage{}, nil, w.refuse(mm, "a batched product with a transposed left operand is not a dense layer fairdp recognises")
	}
	k := w.kids(mm)
	x := w.kid(k[0], "reshapeOp")
	wt := k[1]
	if r := w.kid(wt, "reshapeOp"); r != nil {
		wt = r
	}
	if x == nil || !w.depends(x) {
		return stage{}, nil, w.refuse(mm, "BatchedMatMul is lowered as a dense layer when its left operand is the input {batch, in} reshaped to {1, batch, in}")
	}
	if err := w.param(wt, mm); err != nil {
		return stage{}, nil, err
	}
	as, bs, xs := k[0].Shape(), k[1].Shape(), x.Shape()
	inAxis := 1
	if trans {
		inAxis = 2
	}
	if len(as) != 3 || len(bs) != 3 || as[0] != 1 || bs[0] != 1 || len(xs) != 2 || as[1] != xs[0] || as[2] != xs[1] || bs[inAxis] != xs[1] {
		return stage{}, nil, w.refuse(mm, fmt.Sprintf("a dense BatchedMatMul needs {1, batch, in} ××× {1, in, out} (or {1, out, in} with transB) from an input {batch, in}, got %v ××× %v from %v", as, bs, xs))
	}
	in, out := bs[1], bs[2]
	if trans {
		in, out = out, in
	}
	if bk := back.Shape(); len(bk) != 2 || bk[0] != xs[0] || bk[1] != out {
		return stage{}, nil, w.refuse(back, fmt.Sprintf("the product must be reshaped back to {batch, %d}", out))
	}
	return w.linear(n, bias, x, wt, trans, in, out)
}

// conv matches Gorgonia's Conv2d plus a bias:
// Transpose{0,3,1,2}(Reshape({B,m,n,outC})(Reshape(im2col(x)) × Reshape(F)ᵀ)) + b;
// bias nil (n = tr) is Conv2d alone, nn's Conv2d without a bias.
func (w *walker) conv(n, tr, bias *G.Node) (stage, *G.Node, error) {
	if !slices.Equal(transposeAxes(tr), []int{0, 3, 1, 2}) {
		return stage{}, nil, w.refuse(tr, "a transpose other than Conv2d's {0, 3, 1, 2}")
	}
	mm := w.kid(w.kid(tr, "transposeOp"), "reshapeOp")
	if mm == nil || fmt.Sprint(mm.Op()) != "A × Bᵀ" {
		return stage{}, nil, w.refuse(tr, "this transpose does not end a Conv2d expansion (im2col, matrix product, reshape)")
	}
	k := w.kids(mm)
	im := w.kid(k[0], "reshapeOp")
	x := w.kid(im, "im2colOp")
	f := w.kid(k[1], "reshapeOp")
	if x == nil || f == nil {
		return stage{}, nil, w.refuse(mm, "a matrix product that is not part of a Conv2d expansion")
	}
	if err := w.param(f, mm); err != nil {
		return stage{}, nil, err
	}
	op := im.Op()
	geti := func(name string) int { return int(field(op, name).Int()) }
	kh, kw, ph, pw, sh, sw := geti("h"), geti("w"), geti("padH"), geti("padW"), geti("strideH"), geti("strideW")
	if dh, dw := geti("dilationH"), geti("dilationW"); dh != 1 || dw != 1 {
		return stage{}, nil, w.refuse(im, fmt.Sprintf("dilation (%d, %d): fairdp's Conv2d has dilation 1", dh, dw))
	}
	xs, fs := x.Shape(), f.Shape()
	if len(xs) != 4 || len(fs) != 4 || fs[1] != xs[1] || fs[2] != kh || fs[3] != kw {
		return stage{}, nil, w.refuse(mm, fmt.Sprintf("filter %v does not fit input %v with a %d×%d kernel", fs, xs, kh, kw))
	}
	win := nn.ConvWindow{KH: kh, KW: kw, StrideH: sh, StrideW: sw, PadH: ph, PadW: pw}
	st := stage{spec: nn.ConvSpec(xs[1], xs[2], xs[3], fs[0], win), params: []*G.Node{f}, out: n}
	if bias == nil {
		st.spec.NoBias = true
		return st, x, nil
	}
	b, err := w.bias(bias, n, fs[0])
	if err != nil {
		return stage{}, nil, err
	}
	st.params = append(st.params, b)
	return st, x, nil
}

// transposeAxes is a Transpose node's axis pattern.
func transposeAxes(tr *G.Node) []int {
	pat := field(tr.Op(), "pattern")
	var axes []int
	for i := range pat.Len() {
		axes = append(axes, int(pat.Index(i).Int()))
	}
	return axes
}

// bias follows a bias operand of sum through Gorgonia's broadcast (repeats
// along every axis but the channel axis 1, after a reshape to {1, C, 1, …})
// to its learnable node of size channels.
func (w *walker) bias(b, sum *G.Node, channels int) (*G.Node, error) {
	if channels == 1 && sum.Dims() == 1 && b.IsScalar() {
		// A scalar added to a {batch} vector: one output's bias, no broadcast.
		if err := w.param(b, sum); err != nil {
			return nil, err
		}
		return b, nil
	}
	cur := b
	for opKind(cur) == "repeatOp" {
		cur = w.kids(cur)[0]
	}
	pre := cur.Shape()
	for opKind(cur) == "reshapeOp" {
		cur = w.kids(cur)[0]
	}
	if err := w.param(cur, sum); err != nil {
		return nil, err
	}
	ok := len(pre) == sum.Dims() && pre.TotalSize() == channels && pre[1] == channels && cur.Shape().TotalSize() == channels
	if !ok {
		return nil, w.refuse(sum, fmt.Sprintf("the bias %s (shape %v, broadcast from %v) is not one value per output channel (%d) broadcast over the batch", cur.Name(), cur.Shape(), pre, channels))
	}
	return cur, nil
}

// param checks that n is a learnable node: an input node of the graph's
// type, other than the input, with a value, whose value does not depend on
// the input.
func (w *walker) param(n, user *G.Node) error {
	switch {
	case n == w.input:
		return w.refuse(user, "the input is used as a weight")
	case n.Op() != nil || !n.IsVar():
		return w.refuse(user, fmt.Sprintf("operand %s (op %v) is not a learnable node (an input node with a value)", n.Name(), n.Op()))
	case n.Value() == nil:
		return w.refuse(user, fmt.Sprintf("weight %s has no value: give it one (gorgonia.WithInit, WithValue or Let)", n.Name()))
	case n.Dtype() != w.dt:
		return w.refuse(user, fmt.Sprintf("weight %s holds %v, the input %v", n.Name(), n.Dtype(), w.dt))
	}
	return nil
}

// maxPool matches MaxPool2D with a square window equal to its stride and
// no padding (fairdp's MaxPool2d, which floors odd sizes as Gorgonia does).
func (w *walker) maxPool(n, x *G.Node) (stage, *G.Node, error) {
	op := n.Op()
	geti := func(name string) int { return int(field(op, name).Int()) }
	k := geti("h")
	if geti("w") != k || geti("strideH") != k || geti("strideW") != k ||
		geti("padNorth")|geti("padSouth")|geti("padWest")|geti("padEast") != 0 {
		return stage{}, nil, w.refuse(n, "fairdp's MaxPool2d has a square window equal to its stride and no padding")
	}
	xs := x.Shape()
	if len(xs) != 4 {
		return stage{}, nil, w.refuse(n, fmt.Sprintf("input shape %v is not {batch, C, H, W}", xs))
	}
	return stage{spec: nn.LayerSpec{Kind: nn.KindMaxPool2d, C: xs[1], H: xs[2], W: xs[3], K: k}, out: n}, x, nil
}

// reshape accepts a flattening {B, …} → {B, prod(…)}, its inverse to
// images {B, C·H·W} → {B, C, H, W} (examples/resnet's dense branch), and a
// reshape that keeps the per-sample shape.
func (w *walker) reshape(n, x *G.Node) (stage, *G.Node, error) {
	from, to := x.Shape(), n.Shape()
	switch {
	case len(from) < 2 || from[0] != w.batch || to[0] != w.batch:
		return stage{}, nil, w.refuse(n, fmt.Sprintf("Reshape %v → %v mixes the batch axis with the others", from, to))
	case slices.Equal([]int(from), []int(to)):
		return stage{}, x, nil
	case len(to) == 2:
		return stage{spec: nn.LayerSpec{Kind: nn.KindFlatten}, out: n}, x, nil
	case len(to) == 4 && len(from) == 2:
		return stage{spec: nn.LayerSpec{Kind: nn.KindUnflatten, C: to[1], H: to[2], W: to[3]}, out: n}, x, nil
	}
	return stage{}, nil, w.refuse(n, fmt.Sprintf("Reshape %v → %v: only flattening to {batch, values} and back to "+
		"{batch, C, H, W} images are supported", from, to))
}

// opKind is the name of n's op type ("" for an input node), e.g. "im2colOp".
func opKind(n *G.Node) string {
	if n.Op() == nil {
		return ""
	}
	t := reflect.TypeOf(n.Op())
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}

// opName is the operator of an element-wise op: its String up to the first
// space ("+", "⊙", "tanh").
func opName(n *G.Node) string {
	s, _, _ := strings.Cut(fmt.Sprint(n.Op()), " ")
	return s
}

// field reads an op's field by name. Gorgonia keeps the geometry of its ops
// (im2col's kernel, pad, stride and dilation; MaxPool's window) unexported;
// reflection reads it without depending on String formats.
func field(op G.Op, name string) reflect.Value {
	v := reflect.ValueOf(op)
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	f := v.FieldByName(name)
	if !f.IsValid() {
		panic(fmt.Sprintf("graph: Gorgonia op %T has no field %s (another Gorgonia version?)", op, name))
	}
	return f
}

// transpose writes the rows×cols row-major matrix src into dst as its
// cols×rows transpose.
func transpose[T any](dst, src []T, rows, cols int) {
	for r := range rows {
		for c := range cols {
			dst[c*rows+r] = src[r*cols+c]
		}
	}
}

// backingRange is the memory [lo, hi) of a weight node's values, with the
// node and the layer that owns it.
type backingRange struct {
	lo, hi uintptr
	node   *G.Node
	layer  int
}

// claimBacking records the memory of weight n of layer and refuses it if an
// earlier weight node's values lie in the same memory. Two nodes built on
// one tensor (or on overlapping views of one array) are one array to
// Gorgonia but two parameter blocks to fairdp: training would update them
// separately and WriteBack would copy the later block over the earlier,
// silently losing it.
func claimBacking[T nn.Float](claimed *[]backingRange, n *G.Node, layer int) error {
	d, ok := n.Value().Data().([]T)
	if !ok || len(d) == 0 {
		return nil // nodeValues has checked the type; nothing to overlap
	}
	// Only the addresses are compared; no pointer is made from them.
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(d)))
	r := backingRange{lo: lo, hi: lo + uintptr(len(d))*unsafe.Sizeof(d[0]), node: n, layer: layer}
	for _, c := range *claimed {
		if r.lo < c.hi && c.lo < r.hi {
			return fmt.Errorf("weights %s (layer %d) and %s (layer %d) share one backing array: fairdp would train them as "+
				"separate parameters and WriteBack would write one over the other; give each weight its own tensor",
				c.node.Name(), c.layer, n.Name(), layer)
		}
	}
	*claimed = append(*claimed, r)
	return nil
}

// nodeValues copies a learnable node's value as T (a scalar node's as one
// value).
func nodeValues[T nn.Float](n *G.Node) ([]T, error) {
	if v, ok := n.Value().Data().(T); ok && n.IsScalar() {
		return []T{v}, nil
	}
	d, ok := n.Value().Data().([]T)
	if !ok {
		return nil, fmt.Errorf("weight %s holds %T, want []%T", n.Name(), n.Value().Data(), T(0))
	}
	return slices.Clone(d), nil
}

// WriteBack copies the model's parameter values into the graph's learnable
// nodes (into their backing tensors, so a machine compiled on the graph
// sees them), so inference goes on in Gorgonia with the trained weights.
func (l *Lowered[T]) WriteBack() error {
	ps := l.Model.Params()
	if len(ps) != len(l.Params) {
		return fmt.Errorf("graph: Lowered.WriteBack: the model has %d parameter blocks, the graph %d", len(ps), len(l.Params))
	}
	for i, p := range ps {
		n := l.Params[i]
		vals := p.Value
		if l.transposed != nil && l.transposed[i] { // {in, out} back to the node's {out, in}
			vals = make([]T, len(p.Value))
			transpose(vals, p.Value, p.Shape[0], p.Shape[1])
		}
		if d, ok := n.Value().(*tensor.Dense); ok {
			if data, ok := d.Data().([]T); ok && len(data) == len(vals) {
				copy(data, vals)
				continue
			}
		}
		if n.IsScalar() && len(vals) == 1 { // a scalar bias: a new scalar value (Gorgonia's scalars are values, not arrays)
			if err := G.Let(n, vals[0]); err != nil {
				return fmt.Errorf("graph: Lowered.WriteBack: node %s: %w", n.Name(), err)
			}
			continue
		}
		if n.Shape().TotalSize() != len(vals) {
			return fmt.Errorf("graph: Lowered.WriteBack: node %s has shape %v, parameter %s %d values", n.Name(), n.Shape(), p.Name, len(p.Value))
		}
		v := tensor.New(tensor.WithShape(n.Shape()...), tensor.WithBacking(slices.Clone(vals)))
		if err := G.Let(n, v); err != nil {
			return fmt.Errorf("graph: Lowered.WriteBack: node %s: %w", n.Name(), err)
		}
	}
	return nil
}

// LoadWeights copies the weights of m — typically a checkpoint that
// `fairdp train --model-spec` trained from this graph's layer list
// (models.LoadFile) — into the lowered model and then into the graph
// (WriteBack). m must have the same layers as the lowered model.
func (l *Lowered[T]) LoadWeights(m *models.Model[T]) error {
	if names(m) != names(l.Model) {
		return fmt.Errorf("graph: Lowered.LoadWeights: the model's layers %s are not the graph's %s", names(m), names(l.Model))
	}
	src, dst := m.Params(), l.Model.Params()
	for i := range dst {
		if len(src[i].Value) != len(dst[i].Value) {
			return fmt.Errorf("graph: Lowered.LoadWeights: parameter %d has %d values, want %d", i, len(src[i].Value), len(dst[i].Value))
		}
	}
	for i := range dst {
		copy(dst[i].Value, src[i].Value)
	}
	return l.WriteBack()
}

// names lists a model's layers; a layer's name carries its geometry
// ("Conv2d(1→3, 5x5, stride 1, pad 0, in 12x12)").
func names[T nn.Float](m *models.Model[T]) string {
	var s []string
	for _, l := range m.Layers {
		s = append(s, l.Name())
	}
	return strings.Join(s, ", ")
}
