//go:build !amd64 || purego

package gemm

// kernels lists every kernel this build can run: the pure-Go one only.
func kernels() []kernel { return []kernel{generic} }

// transposeRows8 has no assembly here: transposePanel does every row in Go.
func transposeRows8(pan []float32, w int, src []float32, ld, r0, p0, rows, kb int, f float32) int {
	return 0
}
