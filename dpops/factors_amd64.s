//go:build !purego

#include "textflag.h"

DATA maxFloat64<>+0(SB)/8, $0x7fefffffffffffff
GLOBL maxFloat64<>(SB), RODATA|NOPTR, $8
DATA oneFloat64<>+0(SB)/8, $0x3ff0000000000000
GLOBL oneFloat64<>(SB), RODATA|NOPTR, $8

// func sqrtNorms32AVX(sq *float32, n int, norms *float64) bool
// Four values a time: widen, VSQRTPD, store, and AND into Y3 whether each
// root is ≤ MaxFloat64 (ordered: false for NaN and +Inf).
TEXT ·sqrtNorms32AVX(SB), NOSPLIT, $0-25
	MOVQ sq+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ norms+16(FP), DI
	SHRQ $2, CX
	VBROADCASTSD maxFloat64<>(SB), Y2
	VCMPPD $0, Y2, Y2, Y3 // all ones
	TESTQ CX, CX
	JEQ sqrtdone
sqrtloop:
	VCVTPS2PD (SI), Y0
	VSQRTPD Y0, Y0
	VMOVUPD Y0, (DI)
	VCMPPD $0x12, Y2, Y0, Y1 // root ≤ MaxFloat64, ordered
	VANDPD Y1, Y3, Y3
	ADDQ $16, SI
	ADDQ $32, DI
	DECQ CX
	JNE sqrtloop
sqrtdone:
	VMOVMSKPD Y3, AX
	CMPQ AX, $15
	SETEQ ret+24(FP)
	VZEROUPPER
	RET

// func clipFactors32AVX(norms *float64, n int, bound float64, scale *float32)
// Four norms a time: bound/norm, replaced by 1 where norm ≤ bound (ordered
// compare), rounded to float32 (VCVTPD2PS, round to nearest as Go's
// conversion).
TEXT ·clipFactors32AVX(SB), NOSPLIT, $0-32
	MOVQ norms+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSD bound+16(FP), Y4
	MOVQ scale+24(FP), DI
	VBROADCASTSD oneFloat64<>(SB), Y5
	SHRQ $2, CX
	TESTQ CX, CX
	JEQ factorsdone
factorsloop:
	VMOVUPD (SI), Y0
	VDIVPD Y0, Y4, Y1        // bound / norm
	VCMPPD $0x12, Y4, Y0, Y2 // norm ≤ bound, ordered
	VBLENDVPD Y2, Y5, Y1, Y1 // 1 where it is
	VCVTPD2PSY Y1, X1
	VMOVUPS X1, (DI)
	ADDQ $32, SI
	ADDQ $16, DI
	DECQ CX
	JNE factorsloop
factorsdone:
	VZEROUPPER
	RET
