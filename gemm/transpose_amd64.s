//go:build !purego

#include "textflag.h"

// func transpose8Strip(dst *float32, ldd int, src *float32, lds int, f float32, n int)
// For n blocks b: dst[(8b+q)·ldd + r] = f·src[r·lds + 8b + q], r, q < 8: eight
// source rows, eight columns at a time, become eight destination rows. AVX.
TEXT ·transpose8Strip(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ ldd+8(FP), R8
	SHLQ $2, R8
	MOVQ src+16(FP), SI
	MOVQ lds+24(FP), R9
	SHLQ $2, R9
	VBROADCASTSS f+32(FP), Y15
	MOVQ n+40(FP), CX
	LEAQ (R9)(R9*2), R10  // 3·lds
	LEAQ (SI)(R9*4), R11  // source row 4
	LEAQ (R8)(R8*2), R12  // 3·ldd
	LEAQ (DI)(R8*4), R13  // destination row 4
	TESTQ CX, CX
	JEQ done
loop:
	VMOVUPS (SI), Y0
	VMOVUPS (SI)(R9*1), Y1
	VMOVUPS (SI)(R9*2), Y2
	VMOVUPS (SI)(R10*1), Y3
	VMOVUPS (R11), Y4
	VMOVUPS (R11)(R9*1), Y5
	VMOVUPS (R11)(R9*2), Y6
	VMOVUPS (R11)(R10*1), Y7
	VUNPCKLPS Y1, Y0, Y8   // t0 = a0 b0 a1 b1 | a4 b4 a5 b5
	VUNPCKHPS Y1, Y0, Y9   // t1 = a2 b2 a3 b3 | a6 b6 a7 b7
	VUNPCKLPS Y3, Y2, Y0   // t2
	VUNPCKHPS Y3, Y2, Y1   // t3
	VUNPCKLPS Y5, Y4, Y2   // t4
	VUNPCKHPS Y5, Y4, Y3   // t5
	VUNPCKLPS Y7, Y6, Y4   // t6
	VUNPCKHPS Y7, Y6, Y5   // t7
	VSHUFPS $0x44, Y0, Y8, Y6  // s0 = a0 b0 c0 d0 | a4 b4 c4 d4
	VSHUFPS $0xEE, Y0, Y8, Y7  // s1
	VSHUFPS $0x44, Y1, Y9, Y8  // s2
	VSHUFPS $0xEE, Y1, Y9, Y0  // s3
	VSHUFPS $0x44, Y4, Y2, Y9  // s4 = e0 f0 g0 h0 | e4 ...
	VSHUFPS $0xEE, Y4, Y2, Y1  // s5
	VSHUFPS $0x44, Y5, Y3, Y2  // s6
	VSHUFPS $0xEE, Y5, Y3, Y4  // s7
	VPERM2F128 $0x20, Y9, Y6, Y3  // out0
	VPERM2F128 $0x31, Y9, Y6, Y5  // out4
	VPERM2F128 $0x20, Y1, Y7, Y6  // out1
	VPERM2F128 $0x31, Y1, Y7, Y9  // out5
	VPERM2F128 $0x20, Y2, Y8, Y7  // out2
	VPERM2F128 $0x31, Y2, Y8, Y1  // out6
	VPERM2F128 $0x20, Y4, Y0, Y8  // out3
	VPERM2F128 $0x31, Y4, Y0, Y2  // out7
	VMULPS Y15, Y3, Y3
	VMULPS Y15, Y6, Y6
	VMULPS Y15, Y7, Y7
	VMULPS Y15, Y8, Y8
	VMULPS Y15, Y5, Y5
	VMULPS Y15, Y9, Y9
	VMULPS Y15, Y1, Y1
	VMULPS Y15, Y2, Y2
	VMOVUPS Y3, (DI)
	VMOVUPS Y6, (DI)(R8*1)
	VMOVUPS Y7, (DI)(R8*2)
	VMOVUPS Y8, (DI)(R12*1)
	VMOVUPS Y5, (R13)
	VMOVUPS Y9, (R13)(R8*1)
	VMOVUPS Y1, (R13)(R8*2)
	VMOVUPS Y2, (R13)(R12*1)
	ADDQ $32, SI
	ADDQ $32, R11
	LEAQ (DI)(R8*8), DI
	LEAQ (R13)(R8*8), R13
	DECQ CX
	JNE loop
done:
	VZEROUPPER
	RET
