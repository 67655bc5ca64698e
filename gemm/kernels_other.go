//go:build !amd64 || purego

package gemm

// kernels lists every kernel this build can run: the pure-Go one only.
func kernels() []kernel { return []kernel{generic} }
