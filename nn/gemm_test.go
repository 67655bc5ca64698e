package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/fairdp/fairdp/backend"
)

// TestGemmShapes checks Gemm in float32 on every path it dispatches to
// (package gemm's kernels, the sgemv/sger routing of matrix-vector shapes,
// the BLAS) against a float64 triple loop, for all transposes, padded
// strides, beta = 0 over NaN and beta ≠ 0; and that nothing outside C's
// m×n extent (the stride padding, the slice beyond the last row) is written:
// callers pass C as a window into a larger buffer that other goroutines
// fill (Conv2d's cachedSum), and gonum's sgemv with beta = 0 used to clear
// the whole y slice it was given.
func TestGemmShapes(t *testing.T) {
	defer backend.UseOwnGemm(backend.OwnGemm())
	rng := rand.New(rand.NewPCG(9, 10))
	shapes := [][3]int{{37, 1, 102}, {1, 29, 33}, {41, 102, 1}, {1, 1, 17}, {1, 7, 1}, {9, 1, 1}, {32, 96, 45}, {5, 40, 3}, {30, 10, 50}}
	for _, own := range []bool{true, false} {
		backend.UseOwnGemm(own)
		for _, s := range shapes {
			for _, tA := range []bool{false, true} {
				for _, tB := range []bool{false, true} {
					for _, beta := range []float32{0, 0.5} {
						name := fmt.Sprintf("own=%v m=%d n=%d k=%d tA=%v tB=%v beta=%g", own, s[0], s[1], s[2], tA, tB, beta)
						checkGemm(t, name, rng, tA, tB, s[0], s[1], s[2], 1.5, beta)
					}
				}
			}
		}
	}
}

func checkGemm(t *testing.T, name string, rng *rand.Rand, tA, tB bool, m, n, k int, alpha, beta float32) {
	t.Helper()
	ar, ac := m, k
	if tA {
		ar, ac = k, m
	}
	br, bc := k, n
	if tB {
		br, bc = n, k
	}
	lda, ldb, ldc := ac+2, bc+1, n+3
	fill := func(rows, ld int) []float32 {
		s := make([]float32, rows*ld)
		for i := range s {
			s[i] = float32(rng.NormFloat64())
		}
		return s
	}
	a, b, c := fill(ar, lda), fill(br, ldb), fill(m+1, ldc) // a spare row past C's extent
	if beta == 0 {
		for i := range c {
			c[i] = float32(math.NaN())
		}
	}
	c0 := slices.Clone(c)
	want := make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var sum float64
			for p := 0; p < k; p++ {
				ai, bi := i*lda+p, p*ldb+j
				if tA {
					ai = p*lda + i
				}
				if tB {
					bi = j*ldb + p
				}
				av, bv := a[ai], b[bi]
				sum += float64(av) * float64(bv)
			}
			want[i*n+j] = float64(alpha) * sum
			if beta != 0 {
				want[i*n+j] += float64(beta) * float64(c[i*ldc+j])
			}
		}
	}
	Gemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	for e := range c {
		if i, j := e/ldc, e%ldc; (i >= m || j >= n) && math.Float32bits(c[e]) != math.Float32bits(c0[e]) {
			t.Fatalf("%s: wrote %v outside C at row %d, column %d (was %v)", name, c[e], i, j, c0[e])
		}
	}
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			got := float64(c[i*ldc+j])
			if math.IsNaN(got) || math.Abs(got-want[i*n+j]) > 1e-4*(1+math.Abs(want[i*n+j]))*math.Sqrt(float64(k)) {
				t.Fatalf("%s: C[%d,%d] = %v, want %v", name, i, j, got, want[i*n+j])
			}
		}
	}
}
