//go:build amd64 && !purego

package nn

import "golang.org/x/sys/cpu"

// pool2PlaneAVX is maxpool_amd64.s: the first 4·groups outputs of each of
// outH rows of one 2×2 max-pool plane (input w wide, output rows outW
// apart), with the same values and arg-max indices as pool2's Go loop,
// bit for bit (it reproduces the instructions Go's max compiles to).
//
//go:noescape
func pool2PlaneAVX(x *float32, y *float32, arg *int32, outH, groups, w, outW int)

var havePool2AVX = cpu.X86.HasAVX2

// pool2Asm pools the first outW/4·4 columns of every output row of a
// float32 plane in assembly when the CPU has AVX2, and returns the first
// column it left to the Go loop (0 when it did nothing).
func pool2Asm[T Float](x, y []T, arg []int32, outH, w, outW int) int {
	groups := outW / 4
	if !havePool2AVX || elemSize[T]() != 4 || groups == 0 || outH == 0 {
		return 0
	}
	// Bounds: the last row pair ends at (2·outH)·w ≥ its last read, the
	// outputs at outH·outW.
	_ = x[2*outH*w-1]
	_ = y[outH*outW-1]
	_ = arg[outH*outW-1]
	pool2PlaneAVX(&as32(x)[0], &as32(y)[0], &arg[0], outH, groups, w, outW)
	return 4 * groups
}
