package gemm

import "sync"

// syrkBlock is the row-block height of SsyrkUpper: each block's diagonal
// square goes through a scratch tile, the rest of its rows straight into C.
const syrkBlock = 64

var syrkTiles = sync.Pool{New: func() any { s := make([]float32, syrkBlock*syrkBlock); return &s }}

// SsyrkUpper computes the upper triangle (diagonal included) of
// C = alpha·op(A)·op(A)ᵀ + beta·C, where op(A) is n×k: A itself (n×k, stride
// lda) when trans is false, Aᵀ (A k×n) when trans is true, as BLAS's ssyrk
// with CblasUpper. The strictly lower triangle of C is not touched. It does
// about half the multiply-adds of the full product, in row blocks of
// Sgemm calls.
func SsyrkUpper(trans bool, n, k int, alpha float32, a []float32, lda int, beta float32, c []float32, ldc int) {
	ar, ac := stored(trans, n, k)
	checkMatrix("A", ar, ac, a, lda)
	checkMatrix("C", n, n, c, ldc)
	tp := syrkTiles.Get().(*[]float32)
	defer syrkTiles.Put(tp)
	tile := *tp
	// Row i of op(A) starts at a[i·lda] (trans false) or column i at a[i].
	row := func(i int) []float32 {
		if trans {
			return a[i:]
		}
		return a[i*lda:]
	}
	for i0 := 0; i0 < n; i0 += syrkBlock {
		i1 := min(i0+syrkBlock, n)
		bs := i1 - i0
		// Diagonal square through the tile, then its upper triangle into C.
		Sgemm(trans, !trans, bs, bs, k, alpha, row(i0), lda, row(i0), lda, 0, tile, bs)
		for i := 0; i < bs; i++ {
			dst := c[(i0+i)*ldc+i0+i : (i0+i)*ldc+i1]
			src := tile[i*bs+i : i*bs+bs]
			for j, v := range src {
				if beta == 0 {
					dst[j] = v
				} else {
					dst[j] = beta*dst[j] + v
				}
			}
		}
		if i1 < n {
			Sgemm(trans, !trans, bs, n-i1, k, alpha, row(i0), lda, row(i1), lda, beta, c[i0*ldc+i1:], ldc)
		}
	}
}
