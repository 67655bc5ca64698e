// Package blis binds BLIS's sgemm (Debian's libblis-dev, which picks its
// kernel by CPU at run time) for gemm's comparison benchmarks only: it was
// measured against gemm's own kernels and OpenBLAS (see gemm/doc.go) and is
// not used by fairdp itself. Its code builds only with -tags blis (and
// CGO_LDFLAGS=-lblis); without the tag the package is empty.
package blis
