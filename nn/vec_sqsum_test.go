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
// long one, with values whose sums round (so a different order would
// show; a float32 value's square is exact in float64, so an FMA would not),
// subnormals, huge values whose squares overflow float32
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

// TestSqSumRowsBitIdentical checks sqSumRows (eight or four rows at a time in
// one assembly call where the CPU has it) against sqSum on each row, bit for
// bit: row lengths up to 70 (every tail length, and rows shorter than one
// group), strides equal to and longer than the row, row counts that are and
// are not whole octets and quads (eight rows at a time with FMA, then four),
// buffers that end right after the last row, and special values. A swapped
// lane, tail or row order shows as a wrong bit.
func TestSqSumRowsBitIdentical(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	special := []float32{0, 1e-45, 3e38, -3e38, float32(math.Inf(-1)), float32(math.NaN())}
	for n := range 71 {
		for _, pad := range []int{0, 1, 5} {
			for _, rows := range []int{0, 1, 3, 4, 5, 8, 11, 12, 15, 16, 17, 21, 64} {
				stride := n + pad
				v := make([]float32, max(0, (rows-1)*stride+n))
				for i := range v {
					v[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(9)-4)))
					if pad == 5 && rng.IntN(8) == 0 {
						v[i] = special[rng.IntN(len(special))]
					}
				}
				got := make([]float64, rows)
				sqSumRows(v, stride, n, got)
				for r, g := range got {
					want := sqSumGo(v[r*stride : r*stride+n])
					if math.Float64bits(g) != math.Float64bits(want) && !(math.IsNaN(g) && math.IsNaN(want)) {
						t.Fatalf("n=%d stride=%d rows=%d row %d: sqSumRows = %v (%#x), Go loop %v (%#x)", n, stride, rows, r, g, math.Float64bits(g), want, math.Float64bits(want))
					}
				}
			}
		}
	}
}

// BenchmarkSqSumRows is the logistic benchmark's per-sample input norms:
// 1024 rows of 102 float32 values.
func BenchmarkSqSumRows(b *testing.B) {
	const rows, n = 1024, 102
	v := make([]float32, rows*n)
	for i := range v {
		v[i] = float32(i%13) - 6
	}
	out := make([]float64, rows)
	b.SetBytes(int64(4 * len(v)))
	for range b.N {
		sqSumRows(v, n, n, out)
	}
}

// TestAxpyBitIdentical checks axpy on float32 (AVX blocks of 32 where the
// CPU has them, then the Go loop) against the Go loop alone, bit for bit:
// every length up to 100, factors whose products round, and special
// values. An FMA, or a block written to the wrong place, shows as a
// wrong bit.
func TestAxpyBitIdentical(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	special := []float32{0, 1e-45, 3e38, float32(math.Inf(1)), float32(math.NaN())}
	for n := range 101 {
		for trial := range 3 {
			x, y := make([]float32, n), make([]float32, n+3)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
				if trial == 2 && rng.IntN(8) == 0 {
					x[i] = special[rng.IntN(len(special))]
				}
			}
			for i := range y {
				y[i] = float32(rng.NormFloat64() * 1e3)
			}
			f := float32(rng.Float64()) / 3
			want := append([]float32(nil), y...)
			for i, v := range x {
				want[i] += float32(f * v)
			}
			axpy(f, x, y)
			for i := range y {
				if math.Float32bits(y[i]) != math.Float32bits(want[i]) && !(y[i] != y[i] && want[i] != want[i]) {
					t.Fatalf("n=%d trial %d: y[%d] = %v, Go loop %v", n, trial, i, y[i], want[i])
				}
			}
		}
	}
}
