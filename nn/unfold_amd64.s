//go:build !purego

#include "textflag.h"

// func movePiecesAVX(dst, src unsafe.Pointer, outer, groups, pieces, lead, body, trail, ldo, lso, lsg, lsp int)
// For each of outer outer steps (dst advancing ldo bytes and src lso), each
// of groups groups (src lsg bytes apart) and each of its pieces pieces (src
// lsp bytes apart): lead zero bytes, body bytes copied from src, trail zero
// bytes, written one after another at dst. All byte counts are multiples of
// 4; body ≥ 4; outer, groups, pieces ≥ 1. Bodies of 32 bytes or more move in
// 32-byte chunks, the last one overlapping the previous (the same values
// written twice) instead of a tail loop; shorter bodies move as two
// overlapping 16- or 8-byte pieces or one 4-byte piece. AVX.
//
// lead and trail live in R15 and R14 (no global data is touched, so R15 is
// free) and the outer count on the stack: the per-piece tests of the
// padding are then register tests, which the pad-free unfolds (every
// im2row, im2col of unpadded convolutions) pay almost nothing for.
TEXT ·movePiecesAVX(SB), NOSPLIT, $8-96
	MOVQ dst+0(FP), R12
	MOVQ src+8(FP), R13
	MOVQ outer+16(FP), AX
	MOVQ AX, left-8(SP)
	MOVQ lead+40(FP), R15
	MOVQ body+48(FP), R9
	MOVQ trail+56(FP), R14
	MOVQ lsp+88(FP), R11
	TESTQ AX, AX
	JEQ done
outer:
	MOVQ R12, DI
	MOVQ R13, R8
	MOVQ groups+24(FP), R10
group:
	MOVQ R8, SI
	MOVQ pieces+32(FP), DX
piece:
	MOVQ R15, CX
	TESTQ CX, CX
	JEQ body
leadloop:
	MOVL $0, (DI)
	ADDQ $4, DI
	SUBQ $4, CX
	JNE leadloop
body:
	CMPQ R9, $32
	JB short
	XORQ BX, BX
	MOVQ R9, CX
	SUBQ $32, CX // last full-chunk start
chunk:
	VMOVUPS (SI)(BX*1), Y0
	VMOVUPS Y0, (DI)(BX*1)
	ADDQ $32, BX
	CMPQ BX, CX
	JBE chunk
	CMPQ BX, R9
	JEQ trail
	VMOVUPS -32(SI)(R9*1), Y0
	VMOVUPS Y0, -32(DI)(R9*1)
	JMP trail
short:
	CMPQ R9, $16
	JB short8
	VMOVUPS (SI), X0
	VMOVUPS -16(SI)(R9*1), X1
	VMOVUPS X0, (DI)
	VMOVUPS X1, -16(DI)(R9*1)
	JMP trail
short8:
	CMPQ R9, $8
	JB short4
	MOVQ (SI), AX
	MOVQ -8(SI)(R9*1), BX
	MOVQ AX, (DI)
	MOVQ BX, -8(DI)(R9*1)
	JMP trail
short4:
	MOVL (SI), AX
	MOVL AX, (DI)
trail:
	ADDQ R9, DI
	MOVQ R14, CX
	TESTQ CX, CX
	JEQ next
trailloop:
	MOVL $0, (DI)
	ADDQ $4, DI
	SUBQ $4, CX
	JNE trailloop
next:
	ADDQ R11, SI
	DECQ DX
	JNE piece
	ADDQ lsg+80(FP), R8
	DECQ R10
	JNE group
	ADDQ ldo+64(FP), R12
	ADDQ lso+72(FP), R13
	DECQ left-8(SP)
	JNE outer
done:
	VZEROUPPER
	RET

// func addRows32AVX(dst, src *float32, blocks, rows, w, ldd, lds, ldd2, lds2 int)
// dst[b·ldd2 + r·ldd + j] += src[b·lds2 + r·lds + j] for b < blocks,
// r < rows, j < w (strides in elements): each element gets exactly one float32 add, as in the Go loop,
// eight at a time and then one at a time. AVX.
TEXT ·addRows32AVX(SB), NOSPLIT, $0-72
	MOVQ dst+0(FP), R12
	MOVQ src+8(FP), R13
	MOVQ blocks+16(FP), R14
	MOVQ w+32(FP), R9
	MOVQ ldd+40(FP), R10
	MOVQ lds+48(FP), R11
	MOVQ ldd2+56(FP), AX
	MOVQ lds2+64(FP), CX
	SHLQ $2, R10
	SHLQ $2, R11
	SHLQ $2, AX
	SHLQ $2, CX
	MOVQ R9, R8
	ANDQ $-8, R8 // elements in whole groups of eight
	TESTQ R14, R14
	JEQ adone
ablock:
	MOVQ R12, DI
	MOVQ R13, SI
	MOVQ rows+24(FP), DX
	TESTQ DX, DX
	JEQ anextblock
arow:
	XORQ BX, BX
	CMPQ BX, R8
	JEQ atail
aloop:
	VMOVUPS (DI)(BX*4), Y0
	VADDPS (SI)(BX*4), Y0, Y0
	VMOVUPS Y0, (DI)(BX*4)
	ADDQ $8, BX
	CMPQ BX, R8
	JNE aloop
atail:
	CMPQ BX, R9
	JEQ anext
	VMOVSS (DI)(BX*4), X0
	VADDSS (SI)(BX*4), X0, X0
	VMOVSS X0, (DI)(BX*4)
	INCQ BX
	JMP atail
anext:
	ADDQ R10, DI
	ADDQ R11, SI
	DECQ DX
	JNE arow
anextblock:
	ADDQ AX, R12
	ADDQ CX, R13
	DECQ R14
	JNE ablock
adone:
	VZEROUPPER
	RET
