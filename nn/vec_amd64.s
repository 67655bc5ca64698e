//go:build !purego

#include "textflag.h"

// The end of four rows of sqSumRows32x4AVX and sqSumRows32x8FMA, whose
// lane j holds the sum of the squares 4q+j: UPPERS4 moves lanes 2 and 3 to
// X8–X11 (a VEX scalar op clears them in place), TAIL4 (FMA) adds the
// squares of the next tail value of each row (at base, base+BX, base+2·BX,
// base+R9) to lane 0, and REDUCE4 stores (s0+s1)+(s2+s3) of each row at
// off, off+8, off+16, off+24 (DI).
#define UPPERS4(y0, y1, y2, y3) \
	VEXTRACTF128 $1, y0, X8; \
	VEXTRACTF128 $1, y1, X9; \
	VEXTRACTF128 $1, y2, X10; \
	VEXTRACTF128 $1, y3, X11

#define TAIL4(base, x0, x1, x2, x3) \
	VCVTSS2SD (base), X12, X12; \
	VCVTSS2SD (base)(BX*1), X13, X13; \
	VCVTSS2SD (base)(BX*2), X14, X14; \
	VCVTSS2SD (base)(R9*1), X15, X15; \
	VFMADD231SD X12, X12, x0; \
	VFMADD231SD X13, X13, x1; \
	VFMADD231SD X14, X14, x2; \
	VFMADD231SD X15, X15, x3

#define REDUCE4(x0, x1, x2, x3, off) \
	VHADDPD x0, x0, x0; \
	VHADDPD X8, X8, X8; \
	VADDSD X8, x0, x0; \
	VHADDPD x1, x1, x1; \
	VHADDPD X9, X9, X9; \
	VADDSD X9, x1, x1; \
	VHADDPD x2, x2, x2; \
	VHADDPD X10, X10, X10; \
	VADDSD X10, x2, x2; \
	VHADDPD x3, x3, x3; \
	VHADDPD X11, X11, X11; \
	VADDSD X11, x3, x3; \
	VMOVSD x0, off(DI); \
	VMOVSD x1, off+8(DI); \
	VMOVSD x2, off+16(DI); \
	VMOVSD x3, off+24(DI)

// ROWS4END ends four rows whose accumulators are y0…y3 (x0…x3) and whose
// DX tail values start at base, base+BX, base+2·BX and base+R9: their
// sums are stored at off…off+24 (DI). loop and done are its labels.
#define ROWS4END(base, y0, y1, y2, y3, x0, x1, x2, x3, off, loop, done) \
	UPPERS4(y0, y1, y2, y3); \
	MOVQ DX, CX; \
	TESTQ CX, CX; \
	JEQ done; \
loop: \
	TAIL4(base, x0, x1, x2, x3); \
	ADDQ $4, base; \
	DECQ CX; \
	JNE loop; \
done: \
	REDUCE4(x0, x1, x2, x3, off)

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
	UPPERS4(Y0, Y1, Y2, Y3)
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
	REDUCE4(X0, X1, X2, X3, 0)
	ADDQ $32, DI
	ADDQ R14, SI
	DECQ R12
	JNE quad
rowsdone:
	VZEROUPPER
	RET

// func sqSumRows32x8FMA(v *float32, stride, n, octs int, out *float64)
// sqSumRows32x4AVX for eight rows at once, r < 8·octs, bit for bit the
// same sums: VFMADD231PD adds each square in one rounding, and a float32
// value's square is exact in float64 (24-bit significands, so at most 48
// bits, and float32's exponents squared stay inside float64's normal
// range), so acc + x·x rounds once either way. With eight rows the FMA
// chains (latency 4) no longer hold back the conversions, which bound the
// loop (twice as fast as sqSumRows32x4AVX on the 2-core EPYC). Rows 0–3 are
// addressed from AX and rows 4–7 from R8, each as base + 0, 1, 2, 3 strides.
TEXT ·sqSumRows32x8FMA(SB), NOSPLIT, $0-40
	MOVQ v+0(FP), SI
	MOVQ stride+8(FP), BX
	MOVQ n+16(FP), DX
	MOVQ octs+24(FP), R12
	MOVQ out+32(FP), DI
	TESTQ R12, R12
	JEQ octsdone
	SHLQ $2, BX
	LEAQ (BX)(BX*2), R9
	MOVQ BX, R14
	SHLQ $3, R14
	MOVQ DX, R13
	SHRQ $2, R13
	ANDQ $3, DX
oct:
	MOVQ SI, AX
	LEAQ (SI)(BX*4), R8
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
	MOVQ R13, CX
	TESTQ CX, CX
	JEQ lowtail
ogroups:
	VCVTPS2PD (AX), Y8
	VCVTPS2PD (AX)(BX*1), Y9
	VCVTPS2PD (AX)(BX*2), Y10
	VCVTPS2PD (AX)(R9*1), Y11
	VCVTPS2PD (R8), Y12
	VCVTPS2PD (R8)(BX*1), Y13
	VCVTPS2PD (R8)(BX*2), Y14
	VCVTPS2PD (R8)(R9*1), Y15
	VFMADD231PD Y8, Y8, Y0
	VFMADD231PD Y9, Y9, Y1
	VFMADD231PD Y10, Y10, Y2
	VFMADD231PD Y11, Y11, Y3
	VFMADD231PD Y12, Y12, Y4
	VFMADD231PD Y13, Y13, Y5
	VFMADD231PD Y14, Y14, Y6
	VFMADD231PD Y15, Y15, Y7
	ADDQ $16, AX
	ADDQ $16, R8
	DECQ CX
	JNE ogroups
lowtail:
	ROWS4END(AX, Y0, Y1, Y2, Y3, X0, X1, X2, X3, 0, lowtailloop, lowreduce)
	ROWS4END(R8, Y4, Y5, Y6, Y7, X4, X5, X6, X7, 32, hightailloop, highreduce)
	ADDQ $64, DI
	ADDQ R14, SI
	DECQ R12
	JNE oct
octsdone:
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
