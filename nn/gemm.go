package nn

import (
	"sync/atomic"
	"unsafe"

	"github.com/fairdp/fairdp/backend" // also switches blas32/blas64 to OpenBLAS in the openblas build
	"github.com/fairdp/fairdp/gemm"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
)

// Gemm computes C = alpha·op(A)·op(B) + beta·C for row-major matrices, where
// op(A) is m×k, op(B) is k×n and C is m×n; trans selects the transpose.
// float32 products run on package gemm when backend.OwnGemm says so (the
// default on CPUs with AVX2 or AVX-512, in every build) and the shape suits
// its kernels (not matrix-vector: gemm.Suits; without OpenBLAS, any shape
// that is not matrix-vector), otherwise on gonum's blas32, which the
// openblas build switches to OpenBLAS; float64 products
// always run on blas64. Every product in nn goes through here so there is
// one place to tune and one place where the element type is bridged to BLAS.
func Gemm[T Float](transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		// BLAS implementations differ on k == 0; the answer is beta·C.
		gemm.ScaleC(m, n, beta, c, ldc)
		return
	}
	gemmFlops.Add(2 * int64(m) * int64(n) * int64(k))
	if elemSize[T]() == 4 && backend.OwnGemm() {
		// Without a compiled BLAS, any product that is not matrix-vector
		// shaped goes to the kernels even when their tiles pad C more than
		// Suits allows: on the MNIST CNN's Linear(500→10) products the
		// padded kernels took 100 µs (256×10×500) and 163–187 µs
		// (500×10×256, Aᵀ) where gonum's pure-Go sgemm took 325 and
		// 353–527.
		if gemm.Suits(m, n, k) || (backend.PureGo() && m > 1 && n > 1 && k >= 4) {
			gemm.Sgemm(transA, transB, m, n, k, float32(alpha), as32(a), lda, as32(b), ldb, float32(beta), as32(c), ldc)
			return
		}
		if sgemmAsLevel2(transA, transB, m, n, k, float32(alpha), as32(a), lda, as32(b), ldb, float32(beta), as32(c), ldc) {
			return
		}
	}
	ta, tb := transpose(transA), transpose(transB)
	if elemSize[T]() == 4 {
		blas32.Implementation().Sgemm(ta, tb, m, n, k, float32(alpha), as32(a), lda, as32(b), ldb, float32(beta), as32(c), ldc)
		return
	}
	blas64.Implementation().Dgemm(ta, tb, m, n, k, float64(alpha), as64(a), lda, as64(b), ldb, float64(beta), as64(c), ldc)
}

// sgemmAsLevel2 runs a matrix-vector-shaped float32 product (n = 1, m = 1
// or k = 1: a logistic regression's forward pass, weight gradient and input
// gradient) as the BLAS's sgemv or sger, and reports whether it did. A
// general sgemm pays blocking and packing for these shapes: gonum's took
// 11× OpenBLAS's time per logistic step (bench/RESULTS.md). The strides of
// the vector operands follow from the transposes: a column of a row-major
// matrix is ld apart, a row is contiguous.
//
// C is cut to the elements the product writes before it is handed on as a
// vector: gonum's sgemv (v0.15.1, the portable build's BLAS) clears the
// whole y slice it is given when beta = 0, not only its n elements, and
// callers pass C as a window into a larger buffer that other goroutines are
// filling (Conv2d's cachedSum), whose results it then zeroed at random.
func sgemmAsLevel2(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) bool {
	impl := blas32.Implementation()
	c = c[:(m-1)*ldc+n]
	inc := func(trans bool, ld int, column bool) int {
		if trans != column { // a column of the stored matrix
			return ld
		}
		return 1
	}
	switch {
	case n == 1: // C (m×1) = alpha·op(A)·b + beta·C, b the one column of op(B)
		incB := inc(transB, ldb, true)
		if transA {
			impl.Sgemv(blas.Trans, k, m, alpha, a, lda, b, incB, beta, c, ldc)
		} else {
			impl.Sgemv(blas.NoTrans, m, k, alpha, a, lda, b, incB, beta, c, ldc)
		}
	case m == 1: // C (1×n) = alpha·op(B)ᵀ·a + beta·C, a the one row of op(A)
		incA := inc(transA, lda, false)
		if transB {
			impl.Sgemv(blas.NoTrans, n, k, alpha, b, ldb, a, incA, beta, c, 1)
		} else {
			impl.Sgemv(blas.Trans, k, n, alpha, b, ldb, a, incA, beta, c, 1)
		}
	case k == 1: // C = beta·C + alpha·(column of op(A))·(row of op(B))
		gemm.ScaleC(m, n, beta, c, ldc)
		impl.Sger(m, n, alpha, a, inc(transA, lda, true), b, inc(transB, ldb, false), c, ldc)
	default:
		return false
	}
	return true
}

// syrkUpper computes the upper triangle of C = alpha·Aᵀ·A + beta·C when
// trans is true (A is k×n) or of C = alpha·A·Aᵀ + beta·C otherwise (A is n×k). It is half the work of the
// equivalent Gemm, which is why the Gram-form per-sample norms use it.
func syrkUpper[T Float](trans bool, n, k int, alpha T, a []T, lda int, beta T, c []T, ldc int) {
	if n == 0 {
		return
	}
	gemmFlops.Add(int64(n) * int64(n+1) * int64(k))
	if elemSize[T]() == 4 && backend.OwnGemm() && gemm.Suits(n, n, k) {
		gemm.SsyrkUpper(trans, n, k, float32(alpha), as32(a), lda, float32(beta), as32(c), ldc)
		return
	}
	t := transpose(trans)
	if elemSize[T]() == 4 {
		blas32.Implementation().Ssyrk(blas.Upper, t, n, k, float32(alpha), as32(a), lda, float32(beta), as32(c), ldc)
		return
	}
	blas64.Implementation().Dsyrk(blas.Upper, t, n, k, float64(alpha), as64(a), lda, float64(beta), as64(c), ldc)
}

// gemmFlops counts the floating-point operations of every product since
// start-up (2·m·n·k per Gemm, n·(n+1)·k per syrkUpper), for benchmarks that
// report GFLOP/s and the fraction of the SGEMM peak a training step reaches.
var gemmFlops atomic.Int64

// GemmFlops reports the floating-point operations of all matrix products
// run so far (both precisions, every path), for benchmarks: the difference
// over one training step is the step's product work.
func GemmFlops() int64 { return gemmFlops.Load() }

func transpose(t bool) blas.Transpose {
	if t {
		return blas.Trans
	}
	return blas.NoTrans
}

// as32 and as64 reinterpret a []T as the BLAS element type without copying;
// T's underlying type is exactly that type, so the layout is identical.
func as32[T Float](s []T) []float32 {
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(s))), len(s))
}

func as64[T Float](s []T) []float64 {
	return unsafe.Slice((*float64)(unsafe.Pointer(unsafe.SliceData(s))), len(s))
}
