package backend

import (
	"strings"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
)

// TestGemmAgreesWithNaive checks the BLAS chosen at build time against a
// naive triple loop, in both precisions.
func TestGemmAgreesWithNaive(t *testing.T) {
	const m, k, n = 7, 5, 3
	a := make([]float64, m*k)
	b := make([]float64, k*n)
	for i := range a {
		a[i] = float64(i%11) - 5
	}
	for i := range b {
		b[i] = float64(i%7) - 3
	}
	want := make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			for p := 0; p < k; p++ {
				want[i*n+j] += a[i*k+p] * b[p*n+j]
			}
		}
	}
	c := make([]float64, m*n)
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, blas64.General{Rows: m, Cols: k, Stride: k, Data: a},
		blas64.General{Rows: k, Cols: n, Stride: n, Data: b}, 0, blas64.General{Rows: m, Cols: n, Stride: n, Data: c})
	a32, b32, c32 := make([]float32, len(a)), make([]float32, len(b)), make([]float32, m*n)
	for i := range a {
		a32[i] = float32(a[i])
	}
	for i := range b {
		b32[i] = float32(b[i])
	}
	blas32.Gemm(blas.NoTrans, blas.NoTrans, 1, blas32.General{Rows: m, Cols: k, Stride: k, Data: a32},
		blas32.General{Rows: k, Cols: n, Stride: n, Data: b32}, 0, blas32.General{Rows: m, Cols: n, Stride: n, Data: c32})
	for i := range want {
		if c[i] != want[i] || float64(c32[i]) != want[i] {
			t.Fatalf("backend %s: element %d = %v / %v, want %v", Name(), i, c[i], c32[i], want[i])
		}
	}
}

// TestDescribeNamesThePath checks that Describe follows UseOwnGemm: the
// own kernels are named only when float32 products run on them, and the
// BLAS always (it serves float64 and Gorgonia).
func TestDescribeNamesThePath(t *testing.T) {
	defer UseOwnGemm(OwnGemm())
	UseOwnGemm(true)
	if d := Describe(); !strings.HasPrefix(d, "gemm: ") || !strings.Contains(d, "; BLAS: ") {
		t.Errorf("own path: Describe() = %q", d)
	}
	UseOwnGemm(false)
	if d := Describe(); !strings.HasPrefix(d, "BLAS: ") {
		t.Errorf("BLAS path: Describe() = %q", d)
	}
}
