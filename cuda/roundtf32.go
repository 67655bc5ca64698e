package cuda

import "math"

// RoundTF32 rounds x to TF32 (1 sign, 8 exponent and 10 mantissa bits,
// held in a float32 whose 13 low mantissa bits are zero) to nearest, ties
// away from zero: NVIDIA's PTX ISA conversion cvt.rna.tf32.f32, the
// documented rounding of FP32 data to TF32 (PTX ISA, "cvt"; cuBLAS's
// CUBLAS_TF32_TENSOR_OP_MATH lets its tensor-core kernels take FP32 inputs
// at TF32 precision, and NVIDIA does not document which rounding those
// kernels apply: PyTorch's numerical-accuracy notes say the tensor cores
// read the first 10 mantissa bits, i.e. truncate). The emulated device
// models cvt.rna; truncation would move a value by at most twice as much.
// Infinities and NaNs are kept; a finite value that rounds past the
// largest TF32 value becomes an infinity, as round-to-nearest does.
func RoundTF32(x float32) float32 {
	u := math.Float32bits(x)
	if u&0x7f800000 == 0x7f800000 {
		return x
	}
	return math.Float32frombits((u + 0x1000) &^ 0x1fff)
}
