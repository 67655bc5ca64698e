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
