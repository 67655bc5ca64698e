package nn

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestLinearOneLogitBitIdentical checks a one-logit Linear's DP-SGD work
// (logistic regression's) against loops written here, bit for bit in
// float32: SqNorms is float32(‖a_i‖²·b_i² + b_i²) with ‖a_i‖² the Go loop's
// sum (sqSumGo) and b_i² exact in float64; ParamGrads(scale) adds
// Σ_i float32(scale_i·b_i) to the bias in sample order, and Aᵀ·(scale∘b) to
// the weight (to rounding: the product's order is the BLAS's). Batches
// cross the 64-sample blocks of SqNorms and the eight-row blocks of
// sqSumRows.
func TestLinearOneLogitBitIdentical(t *testing.T) {
	const in = 102
	rng := rand.New(rand.NewPCG(23, 24))
	for _, bias := range []bool{true, false} {
		for _, batch := range []int{1, 7, 64, 77, 130} {
			l := NewLinear[float32](in, 1)
			if !bias {
				l = NewLinearNoBias[float32](in, 1)
			}
			l.Init(rng)
			x, dy, scale := make([]float32, batch*in), make([]float32, batch), make([]float32, batch)
			for i := range x {
				x[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(5)-2)))
			}
			for i := range dy {
				dy[i] = float32(rng.NormFloat64())
				scale[i] = float32(rng.Float64())
			}
			l.Forward(x, batch, true)
			l.Backward(dy, false)
			norms := make([]float32, batch)
			l.SqNorms(norms)
			for i, got := range norms {
				na, nb := sqSumGo(x[i*in:(i+1)*in]), float64(dy[i])*float64(dy[i])
				want := float32(na * nb)
				if bias {
					want = float32(na*nb + nb)
				}
				if math.Float32bits(got) != math.Float32bits(want) {
					t.Fatalf("bias %v batch %d: SqNorms[%d] = %v, ‖a‖²b² (+ b²) = %v", bias, batch, i, got, want)
				}
			}
			ZeroGrads(l.Params())
			l.ParamGrads(scale)
			var wantBias float32
			wantW := make([]float64, in)
			for i, d := range dy {
				s := scale[i] * d
				wantBias += s
				for k := range in {
					wantW[k] += float64(x[i*in+k]) * float64(s)
				}
			}
			if bias {
				if got := l.bias.Grad[0]; math.Float32bits(got) != math.Float32bits(wantBias) {
					t.Errorf("bias %v batch %d: bias gradient %v, Σ scale·b = %v", bias, batch, got, wantBias)
				}
			}
			for k, got := range l.weight.Grad {
				if math.Abs(float64(got)-wantW[k]) > 1e-4*(1+math.Abs(wantW[k])) {
					t.Errorf("bias %v batch %d: weight gradient %d = %v, Aᵀ(scale∘b) = %v", bias, batch, k, got, wantW[k])
				}
			}
		}
	}
}
