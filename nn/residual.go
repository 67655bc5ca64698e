package nn

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// Residual joins two branches that start from the same input and end in
// the same shape: y = Body(x) + Shortcut(x), where an empty Shortcut is the
// identity (a ResNet block's skip connection; Gorgonia's Add of two
// branches). It keeps a model a sequence of layers while the network has a
// join: the join is one layer holding its branches.
//
// Per-sample clipping stays exact: sample i's gradient is the
// concatenation of its gradients in the branches' layers (each block
// belongs to one layer of one branch), so SqNorms adds each inner layer's
// ‖g_i‖² and ParamGrads each inner layer's Σ_i scale_i·g_i. The input
// gradient is the sum of the branches' input gradients (dy itself for the
// identity). The inner layers run their plain Forward and Backward, never
// in place: each branch reads x, and both branches' last layers keep dy as
// their tap.
type Residual[T Float] struct {
	body, short []Layer[T]
	batch       int
	y, dx       []T
}

// NewResidual returns the join y = body(x) + shortcut(x) (shortcut nil or
// empty: the identity). body must not be empty; the branches' output shapes
// are checked by OutShape.
func NewResidual[T Float](body, shortcut []Layer[T]) *Residual[T] {
	if len(body) == 0 {
		panic("nn.NewResidual: the body branch has no layer")
	}
	return &Residual[T]{body: slices.Clone(body), short: slices.Clone(shortcut)}
}

// Name implements Layer: "Residual(Conv2d(…), ReLU + identity)".
func (r *Residual[T]) Name() string {
	return fmt.Sprintf("Residual(%s + %s)", branchName(r.body), branchName(r.short))
}

func branchName[T Float](ls []Layer[T]) string {
	if len(ls) == 0 {
		return "identity"
	}
	var s []string
	for _, l := range ls {
		s = append(s, l.Name())
	}
	return strings.Join(s, ", ")
}

// Branches are the body's layers and the shortcut's (empty: the identity).
func (r *Residual[T]) Branches() [2][]Layer[T] { return [2][]Layer[T]{r.body, r.short} }

// BranchShapes are the per-sample output shapes of the body and the
// shortcut for input shape in; OutShape panics where they differ.
func (r *Residual[T]) BranchShapes(in []int) (body, shortcut []int) {
	body, shortcut = slices.Clone(in), slices.Clone(in)
	for _, l := range r.body {
		body = l.OutShape(body)
	}
	for _, l := range r.short {
		shortcut = l.OutShape(shortcut)
	}
	return body, shortcut
}

// OutShape implements Layer: the branches' common output shape.
func (r *Residual[T]) OutShape(in []int) []int {
	b, s := r.BranchShapes(in)
	if !slices.Equal(b, s) {
		panic(fmt.Sprintf("nn: %s: the body gives %v, the shortcut %v on input %v", r.Name(), b, s, in))
	}
	return b
}

// Forward implements Layer.
func (r *Residual[T]) Forward(x []T, batch int, train bool) []T {
	r.batch = batch
	b, s := x, x
	for _, l := range r.body {
		b = l.Forward(b, batch, train)
	}
	for _, l := range r.short {
		s = l.Forward(s, batch, train)
	}
	mustLen(r, "shortcut output", s, len(b))
	r.y = grow(r.y, len(b))
	copy(r.y, b)
	addTo(r.y, s)
	return r.y
}

// Backward implements Layer: each branch back-propagates dy (its layers
// keep their taps), and the input gradient is the sum of the branches'.
func (r *Residual[T]) Backward(dy []T, needInput bool) []T {
	b, s := dy, dy
	for i := len(r.body) - 1; i >= 0; i-- {
		b = r.body[i].Backward(b, needInput || i > 0)
	}
	for i := len(r.short) - 1; i >= 0; i-- {
		s = r.short[i].Backward(s, needInput || i > 0)
	}
	if !needInput {
		return nil
	}
	mustLen(r, "shortcut input gradient", s, len(b))
	r.dx = grow(r.dx, len(b))
	copy(r.dx, b)
	addTo(r.dx, s)
	return r.dx
}

// Params implements Layer: the body's blocks, then the shortcut's.
func (r *Residual[T]) Params() []*Param[T] {
	var ps []*Param[T]
	for _, l := range append(slices.Clone(r.body), r.short...) {
		ps = append(ps, l.Params()...)
	}
	return ps
}

// ParamGrads implements Layer.
func (r *Residual[T]) ParamGrads(scale []T) {
	for _, l := range r.body {
		l.ParamGrads(scale)
	}
	for _, l := range r.short {
		l.ParamGrads(scale)
	}
}

// SqNorms implements Layer: every inner layer adds its part of ‖g_i‖².
func (r *Residual[T]) SqNorms(out []T) {
	for _, l := range r.body {
		l.SqNorms(out)
	}
	for _, l := range r.short {
		l.SqNorms(out)
	}
}

// Spec implements Describer (every inner layer must be one).
func (r *Residual[T]) Spec() LayerSpec {
	rs := &ResidualSpec{}
	for _, l := range r.body {
		rs.Body = append(rs.Body, l.(Describer).Spec())
	}
	for _, l := range r.short {
		rs.Shortcut = append(rs.Shortcut, l.(Describer).Spec())
	}
	return LayerSpec{Kind: KindResidual, Residual: rs}
}

// Init draws the inner layers' parameters in order (those that draw any).
func (r *Residual[T]) Init(rng *rand.Rand) {
	for _, l := range append(slices.Clone(r.body), r.short...) {
		if in, ok := l.(interface{ Init(*rand.Rand) }); ok {
			in.Init(rng)
		}
	}
}
