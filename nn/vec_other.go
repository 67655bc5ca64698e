//go:build !amd64 || purego

package nn

// sqSumLanes32 has no assembly here: sqSum runs its Go loop.
func sqSumLanes32(v []float32, out *[4]float64) bool { return false }

// sqSumRows32 has no assembly here: sqSumRows runs sqSum on each row.
func sqSumRows32(v []float32, stride, n int, out []float64) int { return 0 }

// axpy32 has no assembly here: axpy runs its Go loop.
func axpy32(f float32, x, y []float32) int { return 0 }
