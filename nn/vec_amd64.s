//go:build !purego

#include "textflag.h"

// func sqSumLanes32AVX(v []float32, out *[4]float64)
// out[j] = Σ_q float64(v[4q+j])² for q < len(v)/4, in order of q, each
// square rounded before the add (no FMA): sqSum's four partial sums.
TEXT ·sqSumLanes32AVX(SB), NOSPLIT, $0-32
	MOVQ v_base+0(FP), SI
	MOVQ v_len+8(FP), CX
	MOVQ out+24(FP), DI
	SHRQ $2, CX
	VXORPD Y0, Y0, Y0
	TESTQ CX, CX
	JEQ done
loop:
	VCVTPS2PD (SI), Y1
	VMULPD Y1, Y1, Y1
	VADDPD Y1, Y0, Y0
	ADDQ $16, SI
	DECQ CX
	JNE loop
done:
	VMOVUPD Y0, (DI)
	VZEROUPPER
	RET

// func sqSumLanes32x4AVX(v *float32, stride int, groups int, out *[4][4]float64)
// out[r] is sqSumLanes32AVX's out for the row of groups×4 values at
// v + r·stride (stride in elements), r < 4: the same four lanes in the
// same order of q, the four rows' chains interleaved so the adds overlap.
TEXT ·sqSumLanes32x4AVX(SB), NOSPLIT, $0-32
	MOVQ v+0(FP), SI
	MOVQ stride+8(FP), BX
	MOVQ groups+16(FP), CX
	MOVQ out+24(FP), DI
	SHLQ $2, BX
	LEAQ (SI)(BX*1), R8
	LEAQ (R8)(BX*1), R9
	LEAQ (R9)(BX*1), R10
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	TESTQ CX, CX
	JEQ done4
loop4:
	VCVTPS2PD (SI), Y4
	VCVTPS2PD (R8), Y5
	VCVTPS2PD (R9), Y6
	VCVTPS2PD (R10), Y7
	VMULPD Y4, Y4, Y4
	VMULPD Y5, Y5, Y5
	VMULPD Y6, Y6, Y6
	VMULPD Y7, Y7, Y7
	VADDPD Y4, Y0, Y0
	VADDPD Y5, Y1, Y1
	VADDPD Y6, Y2, Y2
	VADDPD Y7, Y3, Y3
	ADDQ $16, SI
	ADDQ $16, R8
	ADDQ $16, R9
	ADDQ $16, R10
	DECQ CX
	JNE loop4
done4:
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	VMOVUPD Y2, 64(DI)
	VMOVUPD Y3, 96(DI)
	VZEROUPPER
	RET
