//go:build !openblas

package backend

import (
	"github.com/fairdp/fairdp/gemm"

	"gonum.org/v1/gonum/blas/gonum"
)

const name = "gonum"

// SetThreads sets package gemm's thread count (gonum's BLAS starts its own
// goroutines and has no setting).
func SetThreads(n int) { gemm.SetThreads(n) }

// Implementation is the BLAS in use, for libraries that take one (Gorgonia's
// tensor package, see package graph).
func Implementation() BLAS { return gonum.Implementation{} }

func blasDescription() string { return "gonum pure-Go BLAS" }
