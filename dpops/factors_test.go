package dpops

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSqrtNormsBitIdentical checks sqrtNorms (four at a time in assembly
// where the CPU has it) against √float64(v) and Norms' finiteness check
// one value at a time, bit for bit, in float32 and float64: every length
// up to 13 (whole groups of four and tails) and a batch of 1024, with
// zeros, −0, subnormals and the largest values; and that one NaN, ±Inf
// or negative value anywhere, in a group or in the tail, makes it report
// false.
func TestSqrtNormsBitIdentical(t *testing.T) {
	testSqrtNorms[float32](t)
	testSqrtNorms[float64](t)
}

func testSqrtNorms[T interface{ ~float32 | ~float64 }](t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	special := []float64{0, math.Copysign(0, -1), 1e-45, 1e-310, math.MaxFloat32, math.MaxFloat64, 1}
	bad := []float64{math.NaN(), math.Inf(1), math.Inf(-1), -1, -1e-45}
	for _, n := range []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 1024} {
		sq := make([]T, n)
		for i := range sq {
			sq[i] = T(rng.ExpFloat64() * math.Pow(10, float64(rng.IntN(9)-4)))
			if s := T(special[rng.IntN(len(special))]); rng.IntN(6) == 0 && !math.IsInf(float64(s), 0) {
				sq[i] = s // MaxFloat64 is +Inf in float32
			}
		}
		norms := make([]float64, n)
		if !sqrtNorms(sq, norms) {
			t.Fatalf("%T n=%d: sqrtNorms reports a bad value among finite ones", sq, n)
		}
		for i, v := range sq {
			if want := math.Sqrt(float64(v)); math.Float64bits(norms[i]) != math.Float64bits(want) {
				t.Fatalf("%T n=%d: norm[%d] = %v (%#x), √%v = %v (%#x)", sq, n, i, norms[i], math.Float64bits(norms[i]), v, want, math.Float64bits(want))
			}
		}
		for i := range sq {
			for _, b := range bad {
				old := sq[i]
				sq[i] = T(b)
				if sqrtNorms(sq, norms) {
					t.Fatalf("%T n=%d: sqrtNorms accepts %v at %d", sq, n, b, i)
				}
				sq[i] = old
			}
			if n == 1024 && i == 40 {
				break // every position of the small lengths; a few of the long one
			}
		}
	}
}

// TestClipFactorsBitIdentical checks clipFactors (four at a time in
// assembly where the CPU has it) against ClipFactor one norm at a time,
// bit for bit, in float32 and float64: every length up to 13 and 1024,
// norms below, at and just above the bound, zero, +Inf (factor 0) and NaN
// (factor NaN), for several bounds.
func TestClipFactorsBitIdentical(t *testing.T) {
	testClipFactors[float32](t)
	testClipFactors[float64](t)
}

func testClipFactors[T interface{ ~float32 | ~float64 }](t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 34))
	for _, bound := range []float64{1, 0.1, 3.7, 1e-30, 1e30} {
		special := []float64{0, bound, math.Nextafter(bound, 0), math.Nextafter(bound, 2*bound), math.Inf(1), math.NaN(), math.MaxFloat64}
		for _, n := range []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 1024} {
			norms := make([]float64, n)
			for i := range norms {
				norms[i] = bound * rng.ExpFloat64() * 2
				if rng.IntN(4) == 0 {
					norms[i] = special[rng.IntN(len(special))]
				}
			}
			scale := make([]T, n)
			clipFactors(norms, bound, scale)
			for i, g := range norms {
				want := T(ClipFactor(g, bound))
				if got := scale[i]; !(got == want || got != got && want != want) || math.Signbit(float64(got)) != math.Signbit(float64(want)) {
					t.Fatalf("%T bound %v n=%d: factor[%d] = %v, ClipFactor(%v) = %v", scale, bound, n, i, got, g, want)
				}
			}
		}
	}
}

// BenchmarkNormsAndFactors times logistic regression's batch of 1024: the
// norms and clip factors as Clipper.Norms and DP-SGD take them (kernels),
// and the scalar loops they replaced (loop).
func BenchmarkNormsAndFactors(b *testing.B) {
	const n = 1024
	sq, norms, scale := make([]float32, n), make([]float64, n), make([]float32, n)
	for i := range sq {
		sq[i] = float32(i%97) + 0.5
	}
	b.Run("norms/kernels", func(b *testing.B) {
		for range b.N {
			sqrtNorms(sq, norms)
		}
	})
	b.Run("norms/loop", func(b *testing.B) {
		for range b.N {
			for i, s := range sq {
				norms[i] = math.Sqrt(float64(s))
			}
		}
	})
	b.Run("factors/kernels", func(b *testing.B) {
		for range b.N {
			clipFactors(norms, 1, scale)
		}
	})
	b.Run("factors/loop", func(b *testing.B) {
		for range b.N {
			for i, g := range norms {
				scale[i] = float32(ClipFactor(g, 1))
			}
		}
	})
}
