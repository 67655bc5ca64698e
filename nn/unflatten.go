package nn

import "fmt"

// Unflatten turns a per-sample vector back into C×H×W images, the inverse
// of Flatten (Gorgonia's Reshape of a {batch, C·H·W} node to {batch, C, H,
// W}, as examples/resnet reshapes a dense branch back to the convolution's
// shape). Row-major data is already laid out that way: Forward and
// Backward pass their buffers through.
type Unflatten[T Float] struct{ c, h, w int }

// NewUnflatten returns an Unflatten to c×h×w.
func NewUnflatten[T Float](c, h, w int) *Unflatten[T] {
	if c < 1 || h < 1 || w < 1 {
		panic(fmt.Sprintf("nn.NewUnflatten: sizes must be positive, got %d×%d×%d", c, h, w))
	}
	return &Unflatten[T]{c, h, w}
}

// Name implements Layer.
func (u *Unflatten[T]) Name() string { return fmt.Sprintf("Unflatten(%dx%dx%d)", u.c, u.h, u.w) }

// OutShape implements Layer: {C, H, W} for an input of C·H·W values.
func (u *Unflatten[T]) OutShape(in []int) []int {
	mustSize("Unflatten", in, u.c*u.h*u.w)
	return []int{u.c, u.h, u.w}
}

// Forward implements Layer: x itself.
func (u *Unflatten[T]) Forward(x []T, batch int, train bool) []T { return x }

// Backward implements Layer: dy itself (nil when the input gradient is not
// needed).
func (u *Unflatten[T]) Backward(dy []T, needInput bool) []T {
	if !needInput {
		return nil
	}
	return dy
}

// Params implements Layer: Unflatten has none.
func (u *Unflatten[T]) Params() []*Param[T] { return nil }

// ParamGrads implements Layer (no-op).
func (u *Unflatten[T]) ParamGrads(scale []T) {}

// SqNorms implements Layer (no-op).
func (u *Unflatten[T]) SqNorms(out []T) {}

// Spec implements Describer.
func (u *Unflatten[T]) Spec() LayerSpec {
	return LayerSpec{Kind: KindUnflatten, C: u.c, H: u.h, W: u.w}
}
