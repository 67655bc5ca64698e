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

// func sqSumRows32x4AVX(v *float32, stride, n, quads int, out *float64)
// out[r] = sqSum(v[r·stride : r·stride+n]) for r < 4·quads (stride in
// elements), bit for bit: per row, lane j of Y accumulates v[4q+j]² over the
// whole groups in order of q (VMULPD then VADDPD, no FMA, as
// sqSumLanes32AVX), the n%4 tail values are squared and added to lane 0 one
// by one, and the lanes are added as (s0+s1)+(s2+s3): sqSumFrom's order.
// Four rows run at once so their add chains overlap (one row's chain alone
// runs at the add latency), and the whole batch is one call.
TEXT ·sqSumRows32x4AVX(SB), NOSPLIT, $0-40
	MOVQ v+0(FP), SI
	MOVQ stride+8(FP), BX
	MOVQ n+16(FP), DX
	MOVQ quads+24(FP), R12
	MOVQ out+32(FP), DI
	TESTQ R12, R12
	JEQ rowsdone
	SHLQ $2, BX
	MOVQ BX, R14
	SHLQ $2, R14
	MOVQ DX, R13
	SHRQ $2, R13
	ANDQ $3, DX
quad:
	MOVQ SI, AX
	LEAQ (SI)(BX*1), R8
	LEAQ (R8)(BX*1), R9
	LEAQ (R9)(BX*1), R10
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	MOVQ R13, CX
	TESTQ CX, CX
	JEQ tailstart
groups:
	VCVTPS2PD (AX), Y4
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
	ADDQ $16, AX
	ADDQ $16, R8
	ADDQ $16, R9
	ADDQ $16, R10
	DECQ CX
	JNE groups
tailstart:
	VEXTRACTF128 $1, Y0, X10
	VEXTRACTF128 $1, Y1, X11
	VEXTRACTF128 $1, Y2, X12
	VEXTRACTF128 $1, Y3, X13
	MOVQ DX, CX
	TESTQ CX, CX
	JEQ reduce
tail:
	VCVTSS2SD (AX), X4, X4
	VCVTSS2SD (R8), X5, X5
	VCVTSS2SD (R9), X6, X6
	VCVTSS2SD (R10), X7, X7
	VMULSD X4, X4, X4
	VMULSD X5, X5, X5
	VMULSD X6, X6, X6
	VMULSD X7, X7, X7
	VADDSD X4, X0, X0
	VADDSD X5, X1, X1
	VADDSD X6, X2, X2
	VADDSD X7, X3, X3
	ADDQ $4, AX
	ADDQ $4, R8
	ADDQ $4, R9
	ADDQ $4, R10
	DECQ CX
	JNE tail
reduce:
	VHADDPD X0, X0, X0
	VHADDPD X10, X10, X10
	VADDSD X10, X0, X0
	VHADDPD X1, X1, X1
	VHADDPD X11, X11, X11
	VADDSD X11, X1, X1
	VHADDPD X2, X2, X2
	VHADDPD X12, X12, X12
	VADDSD X12, X2, X2
	VHADDPD X3, X3, X3
	VHADDPD X13, X13, X13
	VADDSD X13, X3, X3
	VMOVSD X0, (DI)
	VMOVSD X1, 8(DI)
	VMOVSD X2, 16(DI)
	VMOVSD X3, 24(DI)
	ADDQ $32, DI
	ADDQ R14, SI
	DECQ R12
	JNE quad
rowsdone:
	VZEROUPPER
	RET

// func axpy32AVX(f float32, x, y *float32, blocks int)
// y[j] += f·x[j] for j < 32·blocks: VMULPS then VADDPS (no FMA), so each
// value is the Go loop's y + float32(f·x).
TEXT ·axpy32AVX(SB), NOSPLIT, $0-32
	VBROADCASTSS f+0(FP), Y0
	MOVQ x+8(FP), SI
	MOVQ y+16(FP), DI
	MOVQ blocks+24(FP), CX
axpyloop:
	VMULPS (SI), Y0, Y1
	VMULPS 32(SI), Y0, Y2
	VMULPS 64(SI), Y0, Y3
	VMULPS 96(SI), Y0, Y4
	VADDPS (DI), Y1, Y1
	VADDPS 32(DI), Y2, Y2
	VADDPS 64(DI), Y3, Y3
	VADDPS 96(DI), Y4, Y4
	VMOVUPS Y1, (DI)
	VMOVUPS Y2, 32(DI)
	VMOVUPS Y3, 64(DI)
	VMOVUPS Y4, 96(DI)
	ADDQ $128, SI
	ADDQ $128, DI
	DECQ CX
	JNE axpyloop
	VZEROUPPER
	RET
