package backend

import (
	"fmt"
	"os"
	"sync/atomic"

	"github.com/fairdp/fairdp/gemm"
)

// ownGemm says whether float32 matrix products run on package gemm (true) or
// on the BLAS (false); see UseOwnGemm.
var ownGemm atomic.Bool

// GemmEnv is the environment variable that overrides the float32 GEMM path:
// "own" (package gemm) or "blas" (OpenBLAS, or gonum in the portable build).
const GemmEnv = "FAIRDP_GEMM"

func init() {
	// Default: package gemm whenever it has a SIMD kernel for this CPU. It
	// does not depend on OpenBLAS's CPU detection, which picks a generic
	// kernel on some CPUs, and it makes the portable build fast too.
	own := gemm.SIMD()
	switch v := os.Getenv(GemmEnv); v {
	case "":
	case "own":
		own = true
	case "blas":
		own = false
	default:
		fmt.Fprintf(os.Stderr, "fairdp: %s=%q is neither \"own\" nor \"blas\"; using %s\n", GemmEnv, v, pathName(own))
	}
	ownGemm.Store(own)
}

// OwnGemm reports whether float32 matrix products use package gemm rather
// than the BLAS. float64 products and Gorgonia always use the BLAS.
func OwnGemm() bool { return ownGemm.Load() }

// UseOwnGemm switches float32 products between package gemm (true) and the
// BLAS (false), for benchmarks and diagnosis; the FAIRDP_GEMM environment
// variable does the same at start-up.
func UseOwnGemm(own bool) { ownGemm.Store(own) }

func pathName(own bool) string {
	if own {
		return "own"
	}
	return "blas"
}

// Describe names the float32 GEMM path in use, for `fairdp version` and the
// first progress line, so a user can see why a machine is slow, e.g.
// "gemm: avx512 12×32 micro-kernel, 1 thread; BLAS: OpenBLAS 0.3.21 … (core Zen), 1 thread".
func Describe() string {
	if OwnGemm() {
		return gemm.Describe() + "; BLAS: " + blasDescription()
	}
	return "BLAS: " + blasDescription()
}

// Short names the float32 product path in a few words for a run's first
// line, e.g. "products gemm avx512 8×32/12×32/14×32, BLAS openblas" or
// "products BLAS openblas" (Describe has the details).
func Short() string {
	if OwnGemm() {
		return "products gemm " + gemm.Kernel() + ", BLAS " + Name()
	}
	return "products BLAS " + Name()
}

func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
