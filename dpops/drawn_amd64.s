//go:build !purego

#include "textflag.h"

// func addDrawn32AVX(dst *float32, z *float64, n int, std float64, scale float32)
// Eight values a time: dst[i] = float32(float64(dst[i]) + std·z[i]) · scale,
// with the multiply and the add rounded separately (VMULPD, VADDPD; no
// FMA), the conversion rounding to nearest as Go's, and a float32 multiply:
// addDrawn's bits. n is a multiple of 8.
TEXT ·addDrawn32AVX(SB), NOSPLIT, $0-36
	MOVQ dst+0(FP), DI
	MOVQ z+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSD std+24(FP), Y4
	VBROADCASTSS scale+32(FP), X5
	SHRQ $3, CX
	TESTQ CX, CX
	JEQ done
loop:
	VCVTPS2PD (DI), Y0
	VCVTPS2PD 16(DI), Y1
	VMULPD (SI), Y4, Y2
	VMULPD 32(SI), Y4, Y3
	VADDPD Y2, Y0, Y0
	VADDPD Y3, Y1, Y1
	VCVTPD2PSY Y0, X0
	VCVTPD2PSY Y1, X1
	VMULPS X5, X0, X0
	VMULPS X5, X1, X1
	VMOVUPS X0, (DI)
	VMOVUPS X1, 16(DI)
	ADDQ $32, DI
	ADDQ $64, SI
	DECQ CX
	JNE loop
done:
	VZEROUPPER
	RET
