package nn

import (
	"fmt"
	"math"
	"slices"
)

// ReLU is max(x, 0) element-wise (NaN propagates, so divergence shows).
type ReLU[T Float] struct{ activation[T] }

// Tanh is tanh(x) element-wise.
type Tanh[T Float] struct{ activation[T] }

// LeakyReLU is x for x > 0 and slope·x otherwise, element-wise. Its
// Backward reads the Forward input again, so that input must not change in
// between (in a sequential model it is the previous layer's output buffer).
type LeakyReLU[T Float] struct{ activation[T] }

// NewReLU returns a ReLU layer; like every activation it works on any
// per-sample shape.
func NewReLU[T Float]() *ReLU[T] { return &ReLU[T]{activation[T]{kind: actReLU}} }

// NewTanh returns a Tanh layer.
func NewTanh[T Float]() *Tanh[T] { return &Tanh[T]{activation[T]{kind: actTanh}} }

// NewLeakyReLU returns a LeakyReLU layer with the given negative slope.
func NewLeakyReLU[T Float](slope T) *LeakyReLU[T] {
	return &LeakyReLU[T]{activation[T]{kind: actLeaky, slope: slope}}
}

type actKind int

const (
	actReLU actKind = iota
	actTanh
	actLeaky
)

// activation holds what the element-wise layers share: buffers, the
// parallel split and the parameter-free half of the Layer interface.
type activation[T Float] struct {
	kind  actKind
	slope T
	x, y  []T // input (LeakyReLU's tap) and output (ReLU's and Tanh's)
	dy    []T
	dx    []T
	back  bool
	// ownY and ownDx are the layer's own buffers; y and dx are other
	// layers' buffers after ForwardInPlace and BackwardInPlace.
	ownY, ownDx []T
}

// Name implements Layer.
func (a *activation[T]) Name() string {
	switch a.kind {
	case actReLU:
		return "ReLU"
	case actTanh:
		return "Tanh"
	}
	return fmt.Sprintf("LeakyReLU(%g)", float64(a.slope))
}

// OutShape implements Layer: the input shape.
func (a *activation[T]) OutShape(in []int) []int { return slices.Clone(in) }

// Forward implements Layer (any batch·size values).
func (a *activation[T]) Forward(x []T, batch int, train bool) []T {
	a.ownY = grow(a.ownY, len(x))
	return a.forward(x, a.ownY, batch)
}

// forward computes y from x (y may be x: InPlace).
func (a *activation[T]) forward(x, y []T, batch int) []T {
	if batch == 0 && len(x) != 0 || batch > 0 && len(x)%batch != 0 {
		panic(fmt.Sprintf("nn: %s: %d values are not a batch of %d", a.Name(), len(x), batch))
	}
	a.x, a.y = x, y
	a.back = false
	parallelFor(a, len(x), elemGrain(len(x)), partsFor(len(x)*a.cost()))
	return a.y
}

// Backward implements Layer.
func (a *activation[T]) Backward(dy []T, needInput bool) []T {
	mustLen(a, "output gradient", dy, len(a.y))
	if !needInput {
		return nil
	}
	a.ownDx = grow(a.ownDx, len(dy))
	return a.backward(dy, a.ownDx)
}

// backward computes dx from dy (dx may be dy: InPlace).
func (a *activation[T]) backward(dy, dx []T) []T {
	mustLen(a, "output gradient", dy, len(a.y))
	a.dy, a.dx = dy, dx
	a.back = true
	parallelFor(a, len(dy), elemGrain(len(dy)), partsFor(len(dy)*a.cost()))
	return a.dx
}

// cost is a rough per-element time in nanoseconds.
func (a *activation[T]) cost() int {
	if a.kind == actTanh && !a.back {
		return 20
	}
	return 1
}

func elemGrain(n int) int { return max(helperNs/4, (n+Workers()-1)/Workers()) }

// run implements ranger over elements [lo, hi). The kernels are
// branch-free: with random signs a branch per element mispredicts half the
// time, which measured 5–7× slower than the select-by-mask forms.
func (a *activation[T]) run(_, lo, hi int) {
	if a.back {
		dy, dx := a.dy[lo:hi], a.dx[lo:hi]
		switch a.kind {
		case actReLU:
			gateBackward(a.y[lo:hi], dy, dx, 0)
		case actTanh:
			y := a.y[lo:hi]
			for i, g := range dy {
				dx[i] = g * (1 - y[i]*y[i])
			}
		case actLeaky:
			gateBackward(a.x[lo:hi], dy, dx, a.slope)
		}
		return
	}
	x, y := a.x[lo:hi], a.y[lo:hi]
	switch a.kind {
	case actReLU:
		for i, v := range x {
			y[i] = max(v, 0) // NaN propagates
		}
	case actTanh:
		for i, v := range x {
			y[i] = T(math.Tanh(float64(v)))
		}
	case actLeaky:
		s := a.slope
		for i, v := range x {
			y[i] = max(v, 0) + s*min(v, 0)
		}
	}
}

// gateBackward sets dx = dy where ref > 0 and slope·dy elsewhere (at
// ref = ±0 either choice is a subgradient).
func gateBackward[T Float](ref, dy, dx []T, slope T) {
	ref, dx = ref[:len(dy)], dx[:len(dy)]
	if elemSize[T]() == 4 {
		gate32(as32(ref), as32(dy), as32(dx), float32(slope))
		return
	}
	gate64(as64(ref), as64(dy), as64(dx), float64(slope))
}

func gate32(ref, dy, dx []float32, slope float32) {
	ref, dx = ref[:len(dy)], dx[:len(dy)]
	for i, g := range dy {
		// -int32(bits) >> 31 is all ones when ref > 0, zero when ref < 0.
		k := uint32(-int32(math.Float32bits(ref[i])) >> 31)
		pass := math.Float32frombits(math.Float32bits(g) & k)
		if slope != 0 {
			pass += slope * (g - pass)
		}
		dx[i] = pass
	}
}

func gate64(ref, dy, dx []float64, slope float64) {
	ref, dx = ref[:len(dy)], dx[:len(dy)]
	for i, g := range dy {
		k := uint64(-int64(math.Float64bits(ref[i])) >> 63)
		pass := math.Float64frombits(math.Float64bits(g) & k)
		if slope != 0 {
			pass += slope * (g - pass)
		}
		dx[i] = pass
	}
}

// Params implements Layer: activations have none.
func (a *activation[T]) Params() []*Param[T] { return nil }

// ParamGrads implements Layer (no-op).
func (a *activation[T]) ParamGrads(scale []T) {}

// SqNorms implements Layer (no-op).
func (a *activation[T]) SqNorms(out []T) {}

// Flatten turns a per-sample shape into a vector. Row-major NCHW data is
// already flat in memory, so it passes its input through without copying
// (the returned slices alias the input and the output gradient).
type Flatten[T Float] struct{}

// NewFlatten returns a Flatten layer.
func NewFlatten[T Float]() *Flatten[T] { return &Flatten[T]{} }

// Name implements Layer.
func (f *Flatten[T]) Name() string { return "Flatten" }

// OutShape implements Layer: {prod(in)}.
func (f *Flatten[T]) OutShape(in []int) []int { return []int{prod(in)} }

// Forward implements Layer: x itself.
func (f *Flatten[T]) Forward(x []T, batch int, train bool) []T { return x }

// Backward implements Layer: dy itself (nil when the input gradient is not
// needed).
func (f *Flatten[T]) Backward(dy []T, needInput bool) []T {
	if !needInput {
		return nil
	}
	return dy
}

// Params implements Layer: Flatten has none.
func (f *Flatten[T]) Params() []*Param[T] { return nil }

// ParamGrads implements Layer (no-op).
func (f *Flatten[T]) ParamGrads(scale []T) {}

// SqNorms implements Layer (no-op).
func (f *Flatten[T]) SqNorms(out []T) {}
