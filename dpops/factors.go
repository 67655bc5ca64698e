package dpops

import (
	"math"
	"unsafe"

	"github.com/fairdp/fairdp/nn"
)

// A batch's per-sample norms and clip factors are a long run of
// independent square roots and divisions, which a scalar loop issues one at
// a time: on the 2-core EPYC ~2.6 µs of square roots and ~1.3 µs of
// divisions for logistic regression's 1024 samples, a fifth of what DP-SGD
// added to its plain step. The AVX kernels (factors_amd64.s) take four at a
// time, ~0.6 and ~0.35 µs. IEEE square root, division and rounding to
// float32 are correctly rounded at any width, so they give the scalar
// loops' bits.

// sqrtNorms sets norms[i] = √float64(sq[i]) for every i and reports whether
// every sq[i] was finite and not negative (Clipper.Norms' check). On false
// norms is partly written, and the caller finds the culprit with its loop.
func sqrtNorms[T nn.Float](sq []T, norms []float64) bool {
	norms = norms[:len(sq)]
	i := 0
	var z T
	if unsafe.Sizeof(z) == 4 && len(sq) >= 4 {
		n := len(sq) / 4 * 4
		done, ok := sqrtNorms32(as32(sq[:n]), norms[:n])
		if done && !ok {
			return false
		}
		if done {
			i = n
		}
	}
	for ; i < len(sq); i++ {
		v := float64(sq[i])
		if !finiteSquare(v) {
			return false
		}
		norms[i] = math.Sqrt(v)
	}
	return true
}

// clipFactors sets scale[i] = T(ClipFactor(norms[i], bound)) for every i:
// DP-SGD's min(1, C/‖g_i‖) for a whole batch, bit for bit the loop's
// values.
func clipFactors[T nn.Float](norms []float64, bound float64, scale []T) {
	scale = scale[:len(norms)]
	i := 0
	var z T
	if unsafe.Sizeof(z) == 4 && len(norms) >= 4 {
		n := len(norms) / 4 * 4
		if clipFactors32(norms[:n], bound, as32(scale[:n])) {
			i = n
		}
	}
	for ; i < len(norms); i++ {
		scale[i] = T(ClipFactor(norms[i], bound))
	}
}

// as32 views a float32 buffer of the generic type as []float32.
func as32[T nn.Float](s []T) []float32 {
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(s))), len(s))
}
