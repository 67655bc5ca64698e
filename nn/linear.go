package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Linear is a fully connected layer Z = X·W + b. W is stored row-major with
// Shape {in, out} so the forward pass is one GEMM without a transpose, and
// the per-sample gradient of sample i is (a_i ⊗ b_i, b_i): its squared norm
// is ‖a_i‖²‖b_i‖² + ‖b_i‖² (the "ghost norm"), so no per-sample matrix is
// ever formed. A layer without a bias (NewLinearNoBias, Z = X·W) has W as
// its only parameter and ‖a_i‖²‖b_i‖² as its norm.
type Linear[T Float] struct {
	in, out      int
	weight, bias *Param[T] // bias is nil without one

	batch   int
	x, dy   []T // taps A and B, owned by the neighbouring layers
	y, dx   []T
	scaledB []T
	gradB   []T // B or diag(scale)·B, read by the weight-gradient task
	norms   []T // SqNorms' output, written by the norm task
	op      linearOp
}

type linearOp int

const (
	linForward linearOp = iota
	linBackward
	linWeightGrad
	linSqNorms
)

// NewLinear returns a Linear(in→out) layer with zero parameters; call Init
// to draw them.
func NewLinear[T Float](in, out int) *Linear[T] {
	if in < 1 || out < 1 {
		panic(fmt.Sprintf("nn.NewLinear: sizes must be positive, got in=%d out=%d", in, out))
	}
	return &Linear[T]{
		in:     in,
		out:    out,
		weight: &Param[T]{Name: "weight", Shape: []int{in, out}, Value: make([]T, in*out), Grad: make([]T, in*out)},
		bias:   &Param[T]{Name: "bias", Shape: []int{out}, Value: make([]T, out), Grad: make([]T, out)},
	}
}

// NewLinearNoBias returns a Linear(in→out) layer without a bias, Z = X·W
// (PyTorch's bias=False): W {in, out} is its only parameter, so the
// parameter count, the per-sample norms and the noise cover W alone.
func NewLinearNoBias[T Float](in, out int) *Linear[T] {
	l := NewLinear[T](in, out)
	l.bias = nil
	return l
}

// Init draws W and b from U(-1/√in, 1/√in), PyTorch's default for linear
// layers, so models start where the papers' reference code starts (W alone
// without a bias, as PyTorch draws it).
func (l *Linear[T]) Init(rng *rand.Rand) {
	bound := 1 / math.Sqrt(float64(l.in))
	if l.bias == nil {
		uniformInit(rng, bound, l.weight.Value)
		return
	}
	uniformInit(rng, bound, l.weight.Value, l.bias.Value)
}

// Name implements Layer.
func (l *Linear[T]) Name() string {
	if l.bias == nil {
		return fmt.Sprintf("Linear(%d→%d, no bias)", l.in, l.out)
	}
	return fmt.Sprintf("Linear(%d→%d)", l.in, l.out)
}

// OutShape implements Layer.
func (l *Linear[T]) OutShape(in []int) []int {
	mustSize("Linear", in, l.in)
	return []int{l.out}
}

// Params implements Layer: weight {in, out} then bias {out} (weight alone
// without a bias).
func (l *Linear[T]) Params() []*Param[T] {
	if l.bias == nil {
		return []*Param[T]{l.weight}
	}
	return []*Param[T]{l.weight, l.bias}
}

// Forward implements Layer. x is kept (not copied) as the tap A and must not
// change until ParamGrads/SqNorms of this step are done.
func (l *Linear[T]) Forward(x []T, batch int, train bool) []T {
	mustLen(l, "input", x, batch*l.in)
	l.batch, l.x, l.dy = batch, x, nil
	l.y = grow(l.y, batch*l.out)
	l.op = linForward
	parallelRows(l, batch, gemmNs(l.in*l.out))
	return l.y
}

// Backward implements Layer. dy is kept (not copied) as the tap B and must
// not change until ParamGrads/SqNorms of this step are done.
func (l *Linear[T]) Backward(dy []T, needInput bool) []T {
	mustLen(l, "output gradient", dy, l.batch*l.out)
	l.dy = dy
	if !needInput {
		return nil
	}
	l.dx = grow(l.dx, l.batch*l.in)
	l.op = linBackward
	parallelRows(l, l.batch, gemmNs(l.in*l.out))
	return l.dx
}

// ParamGrads implements Layer with one GEMM: ∂W += Aᵀ·(diag(scale)·B).
func (l *Linear[T]) ParamGrads(scale []T) {
	l.mustHaveTap("ParamGrads")
	if l.batch == 0 {
		return
	}
	b := l.dy
	if scale != nil {
		mustLen(l, "scale", scale, l.batch)
		l.scaledB = grow(l.scaledB, len(l.dy))
		if l.out == 1 { // one logit: one flat loop, not a row slice per sample
			dst := l.scaledB[:len(scale)]
			for i, v := range l.dy[:len(scale)] {
				dst[i] = scale[i] * v
			}
		} else {
			for i := 0; i < l.batch; i++ {
				s := scale[i]
				src, dst := l.dy[i*l.out:(i+1)*l.out], l.scaledB[i*l.out:(i+1)*l.out]
				for j, v := range src {
					dst[j] = s * v
				}
			}
		}
		b = l.scaledB
	}
	if l.bias != nil && l.out == 1 {
		// One logit (logistic regression): the same additions in the same
		// order as the loop below, without a call per sample.
		g := l.bias.Grad[0]
		for _, v := range b[:l.batch] {
			g += v
		}
		l.bias.Grad[0] = g
	} else {
		for i := 0; l.bias != nil && i < l.batch; i++ {
			addTo(l.bias.Grad, b[i*l.out:(i+1)*l.out])
		}
	}
	l.gradB = b
	l.op = linWeightGrad
	parallelRows(l, l.in, gemmNs(l.batch*l.out))
	l.gradB = nil
}

// SqNorms implements Layer with the ghost norm ‖a_i‖²‖b_i‖² + ‖b_i‖²
// (‖a_i‖²‖b_i‖² without a bias).
func (l *Linear[T]) SqNorms(out []T) {
	l.mustHaveTap("SqNorms")
	mustLen(l, "norm output", out, l.batch)
	l.norms = out
	l.op = linSqNorms
	// About 1/16 ns per value: sqSumRows (eight rows at a time with FMA)
	// measured ≈ 0.06 ns per float32 on the 2-core EPYC, so logistic
	// regression's 1024 × 103 norms (~6 µs) stay on the caller: waking a
	// helper cost more than it saved, and on that virtual machine a helper
	// idle for more than ~50 µs took ~70 µs to start. Each sample's norm
	// is computed whole by one participant, so the split changes no bit.
	parallelRows(l, l.batch, (l.in+l.out)/16)
	l.norms = nil
}

func (l *Linear[T]) run(_, lo, hi int) {
	n := hi - lo
	switch l.op {
	case linForward:
		beta := T(0) // no bias: the product overwrites y
		if l.bias != nil {
			beta = 1
			for i := lo; i < hi; i++ {
				copy(l.y[i*l.out:(i+1)*l.out], l.bias.Value)
			}
		}
		Gemm(false, false, n, l.out, l.in, 1, l.x[lo*l.in:], l.in, l.weight.Value, l.out, beta, l.y[lo*l.out:], l.out)
	case linBackward:
		Gemm(false, true, n, l.in, l.out, 1, l.dy[lo*l.out:], l.out, l.weight.Value, l.out, 0, l.dx[lo*l.in:], l.in)
	case linWeightGrad:
		// Rows lo..hi of ∂W are columns lo..hi of A: a transposed sub-block.
		Gemm(true, false, n, l.out, l.batch, 1, l.x[lo:], l.in, l.gradB, l.out, 1, l.weight.Grad[lo*l.out:], l.out)
	case linSqNorms:
		// Up to 64 samples' ‖a_i‖² and ‖b_i‖² at a time (sqSumRows runs
		// eight or four rows at once): each sample's norm is the same sum
		// either way.
		var na, nb [64]float64
		for i := lo; i < hi; i += len(na) {
			m := min(len(na), hi-i)
			sqSumRows(l.x[i*l.in:], l.in, l.in, na[:m])
			if l.out == 1 {
				// One logit: ‖b_i‖² is b_i², exact in float64, which is
				// what sqSum of one value returns (b_i² + 0 + 0).
				for r, v := range l.dy[i : i+m] {
					nb[r] = float64(v) * float64(v)
				}
			} else {
				sqSumRows(l.dy[i*l.out:], l.out, l.out, nb[:m])
			}
			for r := range m {
				l.addGhostNorm(i+r, na[r], nb[r])
			}
		}
	}
}

// addGhostNorm adds sample i's squared gradient norm, given ‖a_i‖² (na)
// and ‖b_i‖² (nb), to l.norms[i].
func (l *Linear[T]) addGhostNorm(i int, na, nb float64) {
	if l.bias == nil {
		l.norms[i] += T(na * nb)
		return
	}
	l.norms[i] += T(na*nb + nb)
}

func (l *Linear[T]) mustHaveTap(op string) {
	if l.dy == nil && l.batch > 0 {
		panic(fmt.Sprintf("nn: %s.%s called before Backward", l.Name(), op))
	}
}

func uniformInit[T Float](rng *rand.Rand, bound float64, blocks ...[]T) {
	for _, b := range blocks {
		for i := range b {
			b[i] = T((2*rng.Float64() - 1) * bound)
		}
	}
}
