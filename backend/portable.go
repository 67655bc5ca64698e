//go:build !openblas

package backend

import "gonum.org/v1/gonum/blas/gonum"

const name = "gonum"

// SetThreads is a no-op on the portable path (gonum's BLAS uses goroutines).
func SetThreads(n int) {}

// Implementation is the BLAS in use, for libraries that take one (Gorgonia's
// tensor package, see package graph).
func Implementation() BLAS { return gonum.Implementation{} }
