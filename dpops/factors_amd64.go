//go:build amd64 && !purego

package dpops

import "golang.org/x/sys/cpu"

var haveFactorsAVX = cpu.X86.HasAVX

// sqrtNorms32AVX is factors_amd64.s: norms[i] = √float64(sq[i]) for the n
// values (n a multiple of 4), four at a time; it returns whether every
// root is finite, i.e. every sq[i] was finite and not negative (√ of a
// negative is NaN, of +Inf is +Inf, and √−0 = −0 passes as −0 ≥ 0 does).
//
//go:noescape
func sqrtNorms32AVX(sq *float32, n int, norms *float64) bool

// clipFactors32AVX is factors_amd64.s: scale[i] = float32(norm ≤ bound ? 1 :
// bound/norm) for the n norms (n a multiple of 4), four at a time: an
// ordered compare, so a NaN norm gives bound/NaN = NaN as ClipFactor does.
//
//go:noescape
func clipFactors32AVX(norms *float64, n int, bound float64, scale *float32)

// sqrtNorms32 runs sqrtNorms32AVX where the CPU has AVX and reports whether
// it did (done) and whether every value was finite (ok).
func sqrtNorms32(sq []float32, norms []float64) (done, ok bool) {
	if !haveFactorsAVX || len(sq) == 0 || len(sq)%4 != 0 || len(norms) < len(sq) {
		return false, false
	}
	return true, sqrtNorms32AVX(&sq[0], len(sq), &norms[0])
}

// clipFactors32 runs clipFactors32AVX where the CPU has AVX and reports
// whether it did.
func clipFactors32(norms []float64, bound float64, scale []float32) bool {
	if !haveFactorsAVX || len(norms) == 0 || len(norms)%4 != 0 || len(scale) < len(norms) {
		return false
	}
	clipFactors32AVX(&norms[0], len(norms), bound, &scale[0])
	return true
}

// addDrawn32AVX is drawn_amd64.s: addDrawn for float32, eight values at a
// time (n a multiple of 8).
//
//go:noescape
func addDrawn32AVX(dst *float32, z *float64, n int, std float64, scale float32)

// addDrawn32 runs addDrawn32AVX on the whole groups of eight where the CPU
// has AVX and returns how many values it did.
func addDrawn32(dst []float32, z []float64, std float64, scale float32) int {
	n := len(dst) &^ 7
	if !haveFactorsAVX || n == 0 || len(z) < len(dst) {
		return 0
	}
	addDrawn32AVX(&dst[0], &z[0], n, std, scale)
	return n
}
