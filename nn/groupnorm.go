package nn

import (
	"fmt"
	"math"
)

// GroupNorm normalises each sample over groups of channels (Wu & He 2018)
// and applies a per-channel affine map. Unlike batch norm it keeps samples
// independent, which per-sample clipping requires. Its per-sample gradients
// are small (2·C values), so Backward stores them explicitly.
type GroupNorm[T Float] struct {
	groups, c, h, w int
	eps             float64
	weight, bias    *Param[T]
	batch           int
	x, y, dy, dx    []T
	xhat            []T
	invStd          []float64 // batch × groups
	perSample       []T       // batch × 2C: [∂γ | ∂β] of each sample
	norms, scale    []T
	op              gnOp
}

type gnOp int

const (
	gnForward gnOp = iota
	gnBackward
	gnSqNorms
)

// NewGroupNorm returns a GroupNorm over c×h×w inputs with the given number
// of groups (which must divide c), eps 1e-5, γ = 1 and β = 0.
func NewGroupNorm[T Float](groups, c, h, w int) *GroupNorm[T] {
	if groups < 1 || c < 1 || h < 1 || w < 1 || c%groups != 0 {
		panic(fmt.Sprintf("nn.NewGroupNorm: %d groups must divide %d channels (spatial %d×%d)", groups, c, h, w))
	}
	g := &GroupNorm[T]{
		groups: groups, c: c, h: h, w: w, eps: 1e-5,
		weight: &Param[T]{Name: "weight", Shape: []int{c}, Value: make([]T, c), Grad: make([]T, c)},
		bias:   &Param[T]{Name: "bias", Shape: []int{c}, Value: make([]T, c), Grad: make([]T, c)},
	}
	for i := range g.weight.Value {
		g.weight.Value[i] = 1
	}
	return g
}

// Name implements Layer.
func (g *GroupNorm[T]) Name() string {
	return fmt.Sprintf("GroupNorm(%d groups, in %dx%dx%d)", g.groups, g.c, g.h, g.w)
}

// OutShape implements Layer: the input shape.
func (g *GroupNorm[T]) OutShape(in []int) []int {
	mustSize("GroupNorm", in, g.c*g.h*g.w)
	return []int{g.c, g.h, g.w}
}

// Eps is the ε added to every group's variance (1e-5): a re-implementation
// of the layer (package cuda's kernels) reads it here.
func (g *GroupNorm[T]) Eps() float64 { return g.eps }

// Params implements Layer: weight γ {c} then bias β {c}.
func (g *GroupNorm[T]) Params() []*Param[T] { return []*Param[T]{g.weight, g.bias} }

func (g *GroupNorm[T]) size() int { return g.c * g.h * g.w }

// Forward implements Layer.
func (g *GroupNorm[T]) Forward(x []T, batch int, train bool) []T {
	mustLen(g, "input", x, batch*g.size())
	g.batch, g.x, g.dy = batch, x, nil
	g.y = grow(g.y, len(x))
	g.xhat = grow(g.xhat, len(x))
	g.invStd = grow(g.invStd, batch*g.groups)
	g.dispatch(gnForward)
	return g.y
}

// Backward implements Layer; it also records each sample's [∂γ | ∂β].
func (g *GroupNorm[T]) Backward(dy []T, needInput bool) []T {
	mustLen(g, "output gradient", dy, g.batch*g.size())
	g.dy = dy
	g.perSample = grow(g.perSample, g.batch*2*g.c)
	g.dx = nil
	if needInput {
		g.dx = grow(g.dx, len(dy))
	}
	g.dispatch(gnBackward)
	return g.dx
}

// ParamGrads implements Layer from the stored per-sample gradients.
func (g *GroupNorm[T]) ParamGrads(scale []T) {
	g.mustHaveTap("ParamGrads")
	if scale != nil {
		mustLen(g, "scale", scale, g.batch)
	}
	for i := 0; i < g.batch; i++ {
		s := T(1)
		if scale != nil {
			s = scale[i]
		}
		ps := g.perSample[i*2*g.c : (i+1)*2*g.c]
		for ch := 0; ch < g.c; ch++ {
			g.weight.Grad[ch] += s * ps[ch]
			g.bias.Grad[ch] += s * ps[g.c+ch]
		}
	}
}

// SqNorms implements Layer.
func (g *GroupNorm[T]) SqNorms(out []T) {
	g.mustHaveTap("SqNorms")
	mustLen(g, "norm output", out, g.batch)
	g.norms = out
	g.dispatch(gnSqNorms)
	g.norms = nil
}

func (g *GroupNorm[T]) mustHaveTap(op string) {
	if g.dy == nil && g.batch > 0 {
		panic(fmt.Sprintf("nn: %s.%s called before Backward", g.Name(), op))
	}
}

func (g *GroupNorm[T]) dispatch(op gnOp) {
	g.op = op
	ns := 3 * g.size() // per sample
	parallelFor(g, g.batch, max(1, helperNs/4/ns), partsFor(g.batch*ns))
}

// run implements ranger over samples [lo, hi).
func (g *GroupNorm[T]) run(_, lo, hi int) {
	for i := lo; i < hi; i++ {
		switch g.op {
		case gnForward:
			g.forwardSample(i)
		case gnBackward:
			g.backwardSample(i)
		case gnSqNorms:
			g.norms[i] += T(sqSum(g.perSample[i*2*g.c : (i+1)*2*g.c]))
		}
	}
}

func (g *GroupNorm[T]) forwardSample(i int) {
	hw := g.h * g.w
	m := g.c / g.groups * hw
	for gr := 0; gr < g.groups; gr++ {
		off := i*g.size() + gr*m
		x := g.x[off : off+m]
		mean := sum(x) / float64(m)
		var v float64
		for _, e := range x {
			d := float64(e) - mean
			v += d * d
		}
		inv := 1 / math.Sqrt(v/float64(m)+g.eps)
		g.invStd[i*g.groups+gr] = inv
		xh := g.xhat[off : off+m]
		for j, e := range x {
			xh[j] = T((float64(e) - mean) * inv)
		}
	}
	base := i * g.size()
	for ch := 0; ch < g.c; ch++ {
		gamma, beta := g.weight.Value[ch], g.bias.Value[ch]
		xh := g.xhat[base+ch*hw : base+(ch+1)*hw]
		y := g.y[base+ch*hw : base+(ch+1)*hw]
		for j, e := range xh {
			y[j] = gamma*e + beta
		}
	}
}

// backwardSample stores sample i's ∂γ_c = Σ dy·x̂ and ∂β_c = Σ dy and, if
// wanted, ∂x = (γ/σ)·(dy − mean(dy) − x̂·mean(dy·x̂)) per group, the means
// taken over γ-weighted dy.
func (g *GroupNorm[T]) backwardSample(i int) {
	hw := g.h * g.w
	cpg := g.c / g.groups
	base := i * g.size()
	ps := g.perSample[i*2*g.c : (i+1)*2*g.c]
	for ch := 0; ch < g.c; ch++ {
		dy := g.dy[base+ch*hw : base+(ch+1)*hw]
		ps[ch] = T(dot(dy, g.xhat[base+ch*hw:]))
		ps[g.c+ch] = T(sum(dy))
	}
	if g.dx == nil {
		return
	}
	m := float64(cpg * hw)
	for gr := 0; gr < g.groups; gr++ {
		var sdx, sdxx float64 // Σ ∂x̂ and Σ ∂x̂·x̂ over the group
		for ch := gr * cpg; ch < (gr+1)*cpg; ch++ {
			gamma := float64(g.weight.Value[ch])
			sdxx += gamma * float64(ps[ch])
			sdx += gamma * float64(ps[g.c+ch])
		}
		inv := g.invStd[i*g.groups+gr]
		mdx, mdxx := sdx/m, sdxx/m
		for ch := gr * cpg; ch < (gr+1)*cpg; ch++ {
			gamma := float64(g.weight.Value[ch])
			dy := g.dy[base+ch*hw : base+(ch+1)*hw]
			xh := g.xhat[base+ch*hw : base+(ch+1)*hw]
			dx := g.dx[base+ch*hw : base+(ch+1)*hw]
			for j := range dy {
				dx[j] = T(inv * (gamma*float64(dy[j]) - mdx - float64(xh[j])*mdxx))
			}
		}
	}
}
