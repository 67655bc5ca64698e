// Package backend chooses the matrix-product paths every numeric package in
// fairdp uses.
//
// float32 products (every layer of nn in float32 training) run on package
// gemm, fairdp's own SGEMM, whenever it has a SIMD kernel for the CPU
// (AVX2+FMA or AVX-512 on amd64), in every build: its speed then does not
// depend on which kernel OpenBLAS's CPU detection picks, nor on whether
// OpenBLAS is installed. Set FAIRDP_GEMM=blas to run them on the BLAS instead
// (or FAIRDP_GEMM=own to force package gemm, with its pure-Go kernel on other
// CPUs); UseOwnGemm does the same in-process, for benchmarks.
//
// The BLAS serves float64 products, Gorgonia (package graph) and float32
// when gemm has no SIMD kernel. The portable build uses gonum's pure-Go BLAS.
// Built with the `openblas` tag (the Makefile adds it when libopenblas is
// installed), gonum's blas32/blas64 are switched to OpenBLAS through cgo at
// start-up (and package graph hands Implementation to Gorgonia's tensor
// package), which is 4–15× faster than gonum for the large products of the
// CNNs. Importing this package (directly or through nn, linear, …) is enough.
//
// SetThreads sets the threads of one product on both paths; Describe names
// the paths in use (`fairdp version` and the first progress line print it).
package backend
