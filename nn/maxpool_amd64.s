//go:build !purego

#include "textflag.h"

DATA pool2Offsets<>+0(SB)/4, $0
DATA pool2Offsets<>+4(SB)/4, $2
DATA pool2Offsets<>+8(SB)/4, $4
DATA pool2Offsets<>+12(SB)/4, $6
GLOBL pool2Offsets<>(SB), RODATA|NOPTR, $16

// Go's max(x, y) on float32 compiles to −gomin(−x, −y) with
// gomin(p, q) = m | minss(m, p), m = minss(p, q): GOMIN reproduces that
// sequence four lanes at a time (VMINPS Q, P, M is M = minss(P, Q)), so the
// bits are the same as the Go loop's for every input, zeros of either sign
// and NaNs included.
#define GOMIN(P, Q, M, T) \
	VMINPS Q, P, M \
	VMINPS P, M, T \
	VORPS T, M, M

// func pool2PlaneAVX(x *float32, y *float32, arg *int32, outH, groups, w, outW int)
// The first 4·groups outputs of each of outH output rows of one plane of a
// 2×2, stride-2 max-pool over a plane w values wide: y = the maximum of the
// window, arg = the index in the plane of the first of its values (in the
// order top-left, top-right, bottom-left, bottom-right) equal to it, as
// MaxPool2d.pool2's Go loop computes them; four outputs per step. AVX2.
TEXT ·pool2PlaneAVX(SB), NOSPLIT, $0-56
	MOVQ x+0(FP), SI
	MOVQ y+8(FP), DI
	MOVQ arg+16(FP), DX
	MOVQ outH+24(FP), R8
	MOVQ groups+32(FP), R9
	MOVQ w+40(FP), R10
	MOVQ outW+48(FP), R11
	SHLQ $2, R11 // output row, bytes
	MOVL $0x80000000, AX
	VMOVD AX, X15
	VPBROADCASTD X15, X15 // sign bit
	MOVQ R10, AX
	INCQ AX
	VMOVD AX, X14
	VPBROADCASTD X14, X14 // w+1: bottom-right
	VMOVD R10, X13
	VPBROADCASTD X13, X13 // w: bottom-left
	MOVL $1, AX
	VMOVD AX, X12
	VPBROADCASTD X12, X12 // 1: top-right
	VMOVDQU pool2Offsets<>(SB), X11
	MOVL $8, AX
	VMOVD AX, X10
	VPBROADCASTD X10, X10 // 8 input columns per step
	SHLQ $2, R10 // input row, bytes
	XORQ AX, AX  // 2·oh·w: the plane index of the row pair's first value
	TESTQ R8, R8
	JEQ pdone
prow:
	MOVQ SI, R12
	LEAQ (SI)(R10*1), R13
	MOVQ DI, R14
	MOVQ DX, BX
	VMOVD AX, X9
	VPBROADCASTD X9, X9
	VPADDD X11, X9, X9 // indices of the windows' top-left values
	MOVQ R9, CX
	TESTQ CX, CX
	JEQ pnextrow
pgroup:
	VMOVUPS (R12), X0
	VMOVUPS 16(R12), X1
	VMOVUPS (R13), X2
	VMOVUPS 16(R13), X3
	VSHUFPS $0x88, X1, X0, X4 // a: top-left of four windows
	VSHUFPS $0xDD, X1, X0, X5 // b: top-right
	VSHUFPS $0x88, X3, X2, X6 // c: bottom-left
	VSHUFPS $0xDD, X3, X2, X7 // d: bottom-right
	VXORPS X15, X4, X0
	VXORPS X15, X5, X1
	GOMIN(X0, X1, X2, X3) // X2 = −max(a, b)
	VXORPS X15, X6, X0
	VXORPS X15, X7, X1
	GOMIN(X0, X1, X8, X3) // X8 = −max(c, d)
	GOMIN(X2, X8, X0, X3)
	VXORPS X15, X0, X0 // max(max(a, b), max(c, d))
	VMOVUPS X0, (R14)
	VCMPPS $0, X0, X7, X1 // d == max
	VANDPS X14, X1, X1
	VCMPPS $0, X0, X6, X2 // c == max
	VBLENDVPS X2, X13, X1, X1
	VCMPPS $0, X0, X5, X2 // b == max
	VBLENDVPS X2, X12, X1, X1
	VCMPPS $0, X0, X4, X2 // a == max
	VANDNPS X1, X2, X1
	VPADDD X9, X1, X1
	VMOVDQU X1, (BX)
	VPADDD X10, X9, X9
	ADDQ $32, R12
	ADDQ $32, R13
	ADDQ $16, R14
	ADDQ $16, BX
	DECQ CX
	JNE pgroup
pnextrow:
	LEAQ (SI)(R10*2), SI
	ADDQ R11, DI
	ADDQ R11, DX
	ADDQ w+40(FP), AX
	ADDQ w+40(FP), AX
	DECQ R8
	JNE prow
pdone:
	RET
