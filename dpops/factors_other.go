//go:build !amd64 || purego

package dpops

// sqrtNorms32 has no assembly here: sqrtNorms runs its Go loop.
func sqrtNorms32(sq []float32, norms []float64) (done, ok bool) { return false, false }

// clipFactors32 has no assembly here: clipFactors runs its Go loop.
func clipFactors32(norms []float64, bound float64, scale []float32) bool { return false }

// addDrawn32 has no assembly here: addDrawn runs its Go loop.
func addDrawn32(dst []float32, z []float64, std float64, scale float32) int { return 0 }
