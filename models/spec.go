package models

import (
	"fmt"
	"github.com/fairdp/fairdp/nn"
	"math"
	"slices"
	"strings"
)

// Spec names a network completely: New(spec) always builds the same layers
// with the same parameter shapes, which is what lets a checkpoint store only
// the Spec and the raw parameter values.
type Spec struct {
	// Arch is one of Archs.
	Arch string `json:"arch"`
	// InShape is the per-sample input shape: {D} for tabular data,
	// {C, H, W} for images (NCHW).
	InShape []int `json:"in_shape"`
	// Classes is the number of labels (≥ 2). Logistic and MLP models with
	// Classes == 2 have a single logit (sigmoid); all others have Classes.
	// A regression model has no labels and one output per record, the
	// prediction: Classes is 1 for arch "linear-regression" and for a
	// network of one's own (Layers) that ends in one output (a Gorgonia
	// graph read by a squared error), and nowhere else.
	Classes int `json:"classes"`
	// Hidden lists the widths of the MLP's hidden layers (mlp only).
	Hidden []int `json:"hidden,omitempty"`
	// Layers describes a network outside the zoo (any Arch name not in
	// Archs): the layers in order, as nn.LayerSpec. A model assembled from
	// nn layers saves and loads through it exactly like a zoo model.
	Layers []nn.LayerSpec `json:"layers,omitempty"`
	// InputNormBound, when > 0, is a public bound B on an input row's L2
	// norm that the model applies before its first layer: a row x with
	// ‖x‖ > B is read as x·B/‖x‖. Objective perturbation (Chaudhuri,
	// Monteleoni and Sarwate 2011, Algorithm 2) fits its weights on rows
	// clipped to B; a model that scores unclipped rows is evaluated on a
	// transform it was never fitted on. Only the tabular zoo archs
	// ("logistic", RegressionArch) take it; 0 (absent from checkpoints
	// written before it) is no clipping.
	InputNormBound float64 `json:"input_norm_bound,omitempty"`
}

// Archs lists the architectures New builds, in the order errors list them.
var Archs = []string{"logistic", "mlp", "mnist-cnn", "vgg", RegressionArch}

// RegressionArch is the zoo's regression model: ŷ = w·x + b, one output per
// record read as the prediction itself (no sigmoid or softmax head), scored
// by mean squared prediction error rather than by classification metrics.
const RegressionArch = "linear-regression"

// Regression reports whether the spec is a regression model (one output
// per record, no classification head): the zoo's RegressionArch, or a
// network of one's own with Classes 1.
func (s Spec) Regression() bool { return isRegression(s.Arch, s.Classes) }

// isRegression is Spec.Regression and Model.Regression: a zoo arch is a
// regression only as RegressionArch (a zoo classifier with Classes 1 is an
// error, not a regression); any other name with Classes 1 is one.
func isRegression(arch string, classes int) bool {
	return arch == RegressionArch || (classes == 1 && !slices.Contains(Archs, arch))
}

// Limits that keep a malformed spec (for example a corrupt checkpoint
// header) from asking for absurd allocations or overflowing int arithmetic.
const (
	maxDim    = 1 << 20 // any single dimension or width
	maxParams = 1 << 31 // parameters of one model (8 GiB as float32)
	maxInput  = 1 << 28 // values per sample
	maxRank   = 8
)

// layerKind is a stage of a planned network.
type layerKind int

const (
	kindLinear layerKind = iota
	kindConv
	kindMaxPool
	kindReLU
	kindFlatten
	kindCustom // any nn layer, described by layerPlan.custom
)

// layerPlan describes one layer before it is built, so that a spec can be
// validated and its parameter count known without allocating anything.
type layerPlan struct {
	kind    layerKind
	in, out int // Linear widths
	c, h, w int // per-sample input of Conv and MaxPool
	outC    int // Conv output channels
	k       int // Conv kernel side, MaxPool window side (= stride)
	stride  int // Conv stride
	pad     int // Conv zero padding
	// custom is the description of a kindCustom layer, shapes its
	// parameter shapes.
	custom *nn.LayerSpec
	shapes [][]int
}

// numParams is the number of parameters the planned layer holds. Plans are
// validated against maxParams, so the products cannot overflow.
func (p layerPlan) numParams() int {
	switch p.kind {
	case kindLinear:
		return p.in*p.out + p.out
	case kindConv:
		return p.outC*p.c*p.k*p.k + p.outC
	case kindCustom:
		n := 0
		for _, s := range p.shapes {
			n += shapeSize(s)
		}
		return n
	}
	return 0
}

// Validate reports whether New would accept the spec, with the reason if not.
func (s Spec) Validate() error {
	_, err := s.plan()
	return err
}

// NumParams is the parameter count of the model New(s) builds, computed
// without building it.
func (s Spec) NumParams() (int, error) {
	p, err := s.plan()
	if err != nil {
		return 0, err
	}
	return sumParams(p), nil
}

func sumParams(plan []layerPlan) int {
	n := 0
	for _, l := range plan {
		n += l.numParams()
	}
	return n
}

// String is a compact description such as "vgg 3×128×128 → 9 classes".
func (s Spec) String() string {
	if s.Regression() {
		return fmt.Sprintf("%s %s → 1 output", s.Arch, shapeString(s.InShape))
	}
	str := fmt.Sprintf("%s %s → %d classes", s.Arch, shapeString(s.InShape), s.Classes)
	if len(s.Hidden) > 0 {
		str += fmt.Sprintf(" (hidden %v)", s.Hidden)
	}
	return str
}

func shapeString(shape []int) string {
	parts := make([]string, len(shape))
	for i, d := range shape {
		parts[i] = fmt.Sprint(d)
	}
	return strings.Join(parts, "×")
}

// plan checks the spec and lays out its layers.
func (s Spec) plan() ([]layerPlan, error) {
	if s.Regression() && s.Classes != 1 {
		return nil, fmt.Errorf("models: spec %q: Classes = %d, want 1 (a regression model has one output per record)", s.Arch, s.Classes)
	}
	if s.Classes == 1 && !s.Regression() {
		return nil, fmt.Errorf("models: spec %q: Classes = 1, want 2..%d (1 is only for arch %q or a network of one's own, a regression output)", s.Arch, maxDim, RegressionArch)
	}
	if (s.Classes < 2 && !s.Regression()) || s.Classes > maxDim {
		return nil, fmt.Errorf("models: spec %q: Classes = %d, want 2..%d", s.Arch, s.Classes, maxDim)
	}
	if len(s.InShape) == 0 || len(s.InShape) > maxRank {
		return nil, fmt.Errorf("models: spec %q: InShape %v has rank %d, want 1..%d", s.Arch, s.InShape, len(s.InShape), maxRank)
	}
	size := 1
	for i, d := range s.InShape {
		if d < 1 || d > maxDim {
			return nil, fmt.Errorf("models: spec %q: InShape[%d] = %d, want 1..%d", s.Arch, i, d, maxDim)
		}
		size *= d // ≤ maxDim·maxInput < 2^63
		if size > maxInput {
			return nil, fmt.Errorf("models: spec %q: InShape %v has more than %d values per sample", s.Arch, s.InShape, maxInput)
		}
	}
	if b := s.InputNormBound; b != 0 {
		if !(b > 0) || math.IsInf(b, 1) {
			return nil, fmt.Errorf("models: spec %q: InputNormBound = %v, want a finite number > 0 (0: none)", s.Arch, b)
		}
		if (s.Arch != "logistic" && s.Arch != RegressionArch) || len(s.InShape) != 1 {
			return nil, fmt.Errorf("models: spec %q: InputNormBound is only for the tabular archs \"logistic\" and %q", s.Arch, RegressionArch)
		}
	}
	if len(s.Layers) > 0 {
		if slices.Contains(Archs, s.Arch) {
			return nil, fmt.Errorf("models: spec %q: Layers describe a network of one's own; the zoo arch %q takes none", s.Arch, s.Arch)
		}
		return s.planCustom()
	}
	if s.Arch != "mlp" && len(s.Hidden) > 0 {
		return nil, fmt.Errorf("models: spec %q: Hidden %v is only used by arch \"mlp\"", s.Arch, s.Hidden)
	}
	var (
		plan []layerPlan
		err  error
	)
	switch s.Arch {
	case "logistic", RegressionArch: // one Linear layer; Classes 1 gives one output
		plan, err = s.planDense(nil)
	case "mlp":
		if len(s.Hidden) == 0 {
			return nil, fmt.Errorf("models: spec \"mlp\": Hidden is empty, want at least one hidden width")
		}
		plan, err = s.planDense(s.Hidden)
	case "mnist-cnn":
		plan, err = s.planMNISTCNN()
	case "vgg":
		plan, err = s.planVGG()
	default:
		return nil, fmt.Errorf("models: unknown arch %q (known: %s)", s.Arch, strings.Join(Archs, ", "))
	}
	if err != nil {
		return nil, err
	}
	total := 0
	for _, l := range plan {
		total += l.numParams()
		if total > maxParams {
			return nil, fmt.Errorf("models: spec %s has more than %d parameters", s, maxParams)
		}
	}
	return plan, nil
}

// planCustom checks a network of one's own: every layer must accept the
// shape the previous one gives, and the output must be Classes logits (or
// one for two classes).
func (s Spec) planCustom() ([]layerPlan, error) {
	if len(s.Hidden) > 0 {
		return nil, fmt.Errorf("models: spec %q: Hidden is only used by arch \"mlp\"", s.Arch)
	}
	shape := slices.Clone(s.InShape)
	var plan []layerPlan
	total := 0
	for i, ls := range s.Layers {
		l, err := nn.NewLayer[float32](ls)
		if err != nil {
			return nil, fmt.Errorf("models: spec %q: layer %d: %w", s.Arch, i, err)
		}
		if err := fits(ls, shape); err != nil {
			return nil, fmt.Errorf("models: spec %q: layer %d %s: %w", s.Arch, i, l.Name(), err)
		}
		p := layerPlan{kind: kindCustom, custom: &s.Layers[i]}
		for _, prm := range l.Params() {
			p.shapes = append(p.shapes, slices.Clone(prm.Shape))
		}
		if total += p.numParams(); total > maxParams {
			return nil, fmt.Errorf("models: spec %s has more than %d parameters", s, maxParams)
		}
		plan = append(plan, p)
		shape = l.OutShape(shape)
	}
	out := shapeSize(shape)
	if s.Classes == 1 && out != 1 {
		return nil, fmt.Errorf("models: spec %q: the last layer gives %d values, want 1 (Classes 1 is a regression: one prediction per record)", s.Arch, out)
	}
	if out != s.Classes && !(s.Classes == 2 && out == 1) {
		return nil, fmt.Errorf("models: spec %q: the last layer gives %d values, want %d logits (or 1 for two classes)", s.Arch, out, s.Classes)
	}
	return plan, nil
}

// fits says whether a layer described by ls accepts inputs of shape in.
func fits(ls nn.LayerSpec, in []int) error {
	size := shapeSize(in)
	switch ls.Kind {
	case nn.KindLinear:
		if ls.In != size {
			return fmt.Errorf("takes %d inputs, the previous layer gives %v", ls.In, in)
		}
	case nn.KindConv2d, nn.KindMaxPool2d, nn.KindGroupNorm:
		if !slices.Equal(in, []int{ls.C, ls.H, ls.W}) {
			return fmt.Errorf("takes %d×%d×%d inputs, the previous layer gives %v", ls.C, ls.H, ls.W, in)
		}
	case nn.KindUnflatten:
		if size != ls.C*ls.H*ls.W {
			return fmt.Errorf("makes %d×%d×%d images of %d values, the previous layer gives %v", ls.C, ls.H, ls.W, ls.C*ls.H*ls.W, in)
		}
	case nn.KindResidual:
		// Both branches start from in and must end in the same shape.
		var out [2][]int
		for b, specs := range [][]nn.LayerSpec{ls.Residual.Body, ls.Residual.Shortcut} {
			shape := slices.Clone(in)
			for i, inner := range specs {
				l, err := nn.NewLayer[float32](inner) // first: it checks a nested join has branches
				if err != nil {
					return err
				}
				if err := fits(inner, shape); err != nil {
					return fmt.Errorf("branch %d layer %d: %w", b, i, err)
				}
				shape = l.OutShape(shape)
			}
			out[b] = shape
		}
		if !slices.Equal(out[0], out[1]) {
			return fmt.Errorf("the body gives %v, the shortcut %v: a residual join adds two values of one shape", out[0], out[1])
		}
	}
	return nil
}

// planDense lays out [Flatten,] (Linear, ReLU) per hidden width, then the
// logistic head: one logit for two classes, else one per class.
func (s Spec) planDense(hidden []int) ([]layerPlan, error) {
	var plan []layerPlan
	if len(s.InShape) > 1 {
		plan = append(plan, layerPlan{kind: kindFlatten})
	}
	width := 1
	for _, d := range s.InShape {
		width *= d
	}
	for i, h := range hidden {
		if h < 1 || h > maxDim {
			return nil, fmt.Errorf("models: spec \"mlp\": Hidden[%d] = %d, want 1..%d", i, h, maxDim)
		}
		if err := checkWeights(s, width, h); err != nil {
			return nil, err
		}
		plan = append(plan, layerPlan{kind: kindLinear, in: width, out: h}, layerPlan{kind: kindReLU})
		width = h
	}
	out := s.Classes
	if s.Classes == 2 {
		out = 1
	}
	if err := checkWeights(s, width, out); err != nil {
		return nil, err
	}
	return append(plan, layerPlan{kind: kindLinear, in: width, out: out}), nil
}

// checkWeights refuses a Linear layer whose weight matrix alone is too large
// (before the products of later layers could overflow).
func checkWeights(s Spec, in, out int) error {
	if in > maxParams/out {
		return fmt.Errorf("models: spec %s: Linear(%d→%d) has more than %d parameters", s, in, out, maxParams)
	}
	return nil
}

// imageShape checks that the spec has a {C, H, W} input.
func (s Spec) imageShape() (c, h, w int, err error) {
	if len(s.InShape) != 3 {
		return 0, 0, 0, fmt.Errorf("models: arch %q needs InShape {C, H, W} (rank 3), got %v (rank %d)",
			s.Arch, s.InShape, len(s.InShape))
	}
	return s.InShape[0], s.InShape[1], s.InShape[2], nil
}

// convStack appends Conv(k, stride 1, pad) and ReLU to plan and tracks the shape.
type convStack struct {
	plan    []layerPlan
	c, h, w int
}

func (cs *convStack) conv(outC, k, pad int) {
	cs.plan = append(cs.plan, layerPlan{kind: kindConv, c: cs.c, h: cs.h, w: cs.w, outC: outC, k: k, stride: 1, pad: pad},
		layerPlan{kind: kindReLU})
	cs.c, cs.h, cs.w = outC, cs.h+2*pad-k+1, cs.w+2*pad-k+1
}

func (cs *convStack) pool(k int) {
	cs.plan = append(cs.plan, layerPlan{kind: kindMaxPool, c: cs.c, h: cs.h, w: cs.w, k: k})
	cs.h, cs.w = cs.h/k, cs.w/k
}

// planMNISTCNN is the classic MNIST CNN (DPSGD-F's 431K network): Conv(C→20,
// 5×5), ReLU, MaxPool 2, Conv(20→50, 5×5), ReLU, MaxPool 2, Flatten,
// Linear(→500), ReLU, Linear(500→Classes). Pools floor odd sizes, so any H, W ≥
// 16 works.
func (s Spec) planMNISTCNN() ([]layerPlan, error) {
	c, h, w, err := s.imageShape()
	if err != nil {
		return nil, err
	}
	if h < 16 || w < 16 {
		return nil, fmt.Errorf("models: arch \"mnist-cnn\" needs H, W ≥ 16, got InShape %v", s.InShape)
	}
	cs := convStack{c: c, h: h, w: w}
	cs.conv(20, 5, 0)
	cs.pool(2)
	cs.conv(50, 5, 0)
	cs.pool(2)
	flat := cs.c * cs.h * cs.w
	if err := checkWeights(s, flat, 500); err != nil {
		return nil, err
	}
	return append(cs.plan,
		layerPlan{kind: kindFlatten},
		layerPlan{kind: kindLinear, in: flat, out: 500}, layerPlan{kind: kindReLU},
		layerPlan{kind: kindLinear, in: 500, out: s.Classes}), nil
}

// planVGG is the 9-layer VGG-like CNN of bench/RESULTS.md's peer figures
// (DP-FERMI does not fully specify its own): six 3×3 convolutions with padding
// 1 (32, 32, 64, 64, 128, 128 channels) with MaxPool 2, 2, 4 after each pair,
// then Linear(→160), Linear(160→64), Linear(64→Classes), ReLU after every
// hidden layer. H and W must be multiples of 16 (the pools divide by 16); the
// first Linear layer's width follows the input size.
func (s Spec) planVGG() ([]layerPlan, error) {
	c, h, w, err := s.imageShape()
	if err != nil {
		return nil, err
	}
	if h%16 != 0 || w%16 != 0 {
		return nil, fmt.Errorf("models: arch \"vgg\" needs H and W divisible by 16, got InShape %v", s.InShape)
	}
	cs := convStack{c: c, h: h, w: w}
	for i, width := range []int{32, 64, 128} {
		cs.conv(width, 3, 1)
		cs.conv(width, 3, 1)
		cs.pool([]int{2, 2, 4}[i])
	}
	flat := cs.c * cs.h * cs.w
	if err := checkWeights(s, flat, 160); err != nil {
		return nil, err
	}
	return append(cs.plan,
		layerPlan{kind: kindFlatten},
		layerPlan{kind: kindLinear, in: flat, out: 160}, layerPlan{kind: kindReLU},
		layerPlan{kind: kindLinear, in: 160, out: 64}, layerPlan{kind: kindReLU},
		layerPlan{kind: kindLinear, in: 64, out: s.Classes}), nil
}
