//go:build !amd64 || purego

package nn

// sqSumLanes32 has no assembly here: sqSum runs its Go loop.
func sqSumLanes32(v []float32, out *[4]float64) bool { return false }

// sqSumLanes32x4 has no assembly here: sqSum4 runs sqSum on each row.
func sqSumLanes32x4(v []float32, stride, n int, out *[4][4]float64) bool { return false }
