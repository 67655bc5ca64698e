//go:build openblas && cgo

package backend

/*
#cgo LDFLAGS: -lopenblas
void openblas_set_num_threads(int num_threads);
int openblas_get_num_threads(void);
char* openblas_get_config(void);
char* openblas_get_corename(void);
*/
import "C"

import (
	"fmt"
	"strings"

	"github.com/fairdp/fairdp/gemm"

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

// SetThreads sets OpenBLAS's own thread count and package gemm's. Callers
// that parallelise over a batch themselves set it to 1 so the pools do not
// fight.
func SetThreads(n int) {
	C.openblas_set_num_threads(C.int(n))
	gemm.SetThreads(n)
}

// Threads reports OpenBLAS's current thread count.
func Threads() int { return int(C.openblas_get_num_threads()) }

// blasDescription names OpenBLAS's build and the kernel it chose for this
// CPU, e.g. "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Zen MAX_THREADS=64
// (core Zen), 1 thread": the core is what OpenBLAS's CPU detection picked.
func blasDescription() string {
	return fmt.Sprintf("%s (core %s), %s", strings.TrimSpace(C.GoString(C.openblas_get_config())),
		C.GoString(C.openblas_get_corename()), plural(Threads(), "thread"))
}
