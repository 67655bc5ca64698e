//go:build blis && cgo

package blis

/*
#cgo CFLAGS: -I/usr/include/x86_64-linux-gnu
#cgo LDFLAGS: -lblis
#include <blis.h>
*/
import "C"

import "unsafe"

// Sgemm is C = alpha·op(A)·op(B) + beta·C, row-major, as gemm.Sgemm.
func Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	ta, tb := C.trans_t(C.BLIS_NO_TRANSPOSE), C.trans_t(C.BLIS_NO_TRANSPOSE)
	if transA {
		ta = C.BLIS_TRANSPOSE
	}
	if transB {
		tb = C.BLIS_TRANSPOSE
	}
	al, be := C.float(alpha), C.float(beta)
	C.bli_sgemm(ta, tb, C.dim_t(m), C.dim_t(n), C.dim_t(k), &al,
		(*C.float)(unsafe.Pointer(&a[0])), C.inc_t(lda), 1,
		(*C.float)(unsafe.Pointer(&b[0])), C.inc_t(ldb), 1, &be,
		(*C.float)(unsafe.Pointer(&c[0])), C.inc_t(ldc), 1)
}

// SetThreads sets BLIS's thread count.
func SetThreads(n int) { C.bli_thread_set_num_threads(C.dim_t(n)) }

// Describe names the BLIS version and the kernel configuration it chose.
func Describe() string {
	return "BLIS " + C.GoString(C.bli_info_get_version_str()) + " " + C.GoString(C.bli_arch_string(C.bli_arch_query_id()))
}
