package backend

import "gonum.org/v1/gonum/blas"

// BLAS is a complete BLAS (real and complex, single and double precision),
// the interface Gorgonia's tensor package accepts.
type BLAS interface {
	blas.Float32
	blas.Float64
	blas.Complex64
	blas.Complex128
}

// Name reports which BLAS is in use: "openblas" or "gonum".
func Name() string { return name }

// PureGo reports whether the BLAS in use is gonum's pure-Go one (the
// portable build), which the float32 products avoid wherever package
// gemm's kernels can run (nn.Gemm).
func PureGo() bool { return name == "gonum" }
