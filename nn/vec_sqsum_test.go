package nn

import (
	"math"
	"math/rand/v2"
	"testing"
)

// sqSumGo is sqSum's Go loop alone: the reference the AVX lanes must match.
func sqSumGo(v []float32) float64 { return sqSumFrom(v, 0, [4]float64{}) }

// TestSqSumBitIdentical checks the float32 sqSum (AVX lanes where the CPU
// has them) against its Go loop bit for bit, on every length up to 70 and a
// long one, with values whose squares round (so a different order or an
// FMA would show), subnormals, huge values whose squares overflow float32
// but not float64, and NaN and ±Inf.
func TestSqSumBitIdentical(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	special := []float32{0, float32(math.Copysign(0, -1)), 1e-45, 3e38, -3e38, float32(math.Inf(1)), float32(math.NaN())}
	for _, n := range append(make([]int, 0, 72), func() []int {
		var ns []int
		for n := range 71 {
			ns = append(ns, n)
		}
		return append(ns, 25051)
	}()...) {
		for trial := range 3 {
			v := make([]float32, n)
			for i := range v {
				v[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(9)-4)))
				if trial == 2 && rng.IntN(8) == 0 {
					v[i] = special[rng.IntN(len(special))]
				}
			}
			got, want := sqSum(v), sqSumGo(v)
			if math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
				t.Fatalf("n=%d trial %d: sqSum = %v (%#x), Go loop %v (%#x)", n, trial, got, math.Float64bits(got), want, math.Float64bits(want))
			}
		}
	}
}

// TestSqSum4BitIdentical checks sqSum4 (four rows at once in assembly where
// the CPU has it) against sqSum on each row, bit for bit, on row lengths up
// to 70 with strides equal to and longer than the row, and special values.
func TestSqSum4BitIdentical(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	special := []float32{0, 1e-45, 3e38, -3e38, float32(math.Inf(-1)), float32(math.NaN())}
	for n := range 71 {
		for _, pad := range []int{0, 1, 5} {
			stride := n + pad
			v := make([]float32, 3*stride+n)
			for i := range v {
				v[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(9)-4)))
				if pad == 5 && rng.IntN(8) == 0 {
					v[i] = special[rng.IntN(len(special))]
				}
			}
			var got [4]float64
			sqSum4(v, stride, n, &got)
			for r, g := range got {
				want := sqSum(v[r*stride : r*stride+n])
				if math.Float64bits(g) != math.Float64bits(want) && !(math.IsNaN(g) && math.IsNaN(want)) {
					t.Fatalf("n=%d stride=%d row %d: sqSum4 = %v (%#x), sqSum %v (%#x)", n, stride, r, g, math.Float64bits(g), want, math.Float64bits(want))
				}
			}
		}
	}
}
