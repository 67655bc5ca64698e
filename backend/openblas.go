//go:build openblas && cgo

package backend

/*
#cgo LDFLAGS: -lopenblas
void openblas_set_num_threads(int num_threads);
int openblas_get_num_threads(void);
*/
import "C"

import (
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/netlib/blas/netlib"
)

const name = "openblas"

// Implementation is the BLAS in use, for libraries that take one (Gorgonia's
// tensor package, see package graph).
func Implementation() BLAS { return netlib.Implementation{} }

func init() {
	blas32.Use(netlib.Implementation{})
	blas64.Use(netlib.Implementation{})
}

// SetThreads sets OpenBLAS's own thread count. Callers that parallelise over
// a batch themselves set it to 1 so the two pools do not fight.
func SetThreads(n int) { C.openblas_set_num_threads(C.int(n)) }

// Threads reports OpenBLAS's current thread count.
func Threads() int { return int(C.openblas_get_num_threads()) }
