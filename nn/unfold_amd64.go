//go:build amd64 && !purego

package nn

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// copyRowsPadAVX is unfold_amd64.s: blocks blocks (ldd2 and lds2 bytes
// apart) of rows rows of lead zero bytes, body bytes from src and trail
// zero bytes, written contiguously at dst, src advancing lds bytes per row
// (byte counts multiples of 4, body ≥ 4).
//
//go:noescape
func copyRowsPadAVX(dst, src unsafe.Pointer, blocks, rows, lead, body, trail, lds, ldd2, lds2 int)

// addRows32AVX is unfold_amd64.s: dst[b·ldd2+r·ldd+j] +=
// src[b·lds2+r·lds+j] for b < blocks, r < rows, j < w, one float32 add per
// element as in the Go loop.
//
//go:noescape
func addRows32AVX(dst, src *float32, blocks, rows, w, ldd, lds, ldd2, lds2 int)

// im2rowAVX is unfold_amd64.s: for positions positions (ldd and lds bytes
// apart), groups×pieces pieces of piece bytes, the source pieces lds2 bytes
// apart within a group and the groups lds1 apart, written one after
// another at dst (piece a multiple of 4, ≥ 4; groups, pieces ≥ 1).
//
//go:noescape
func im2rowAVX(dst, src unsafe.Pointer, positions, groups, pieces, piece, ldd, lds, lds1, lds2 int)

var haveUnfoldAVX = cpu.X86.HasAVX

// copyRowsPadAsm does copyRowsPad's work in assembly when the CPU has AVX
// and reports whether it did; the arguments are checked by the caller.
func copyRowsPadAsm[T Float](dst, src []T, m rowMove) bool {
	if !haveUnfoldAVX {
		return false
	}
	sz := elemSize[T]()
	copyRowsPadAVX(unsafe.Pointer(&dst[0]), unsafe.Pointer(&src[0]), m.blocks, m.rows,
		m.lead*sz, m.body*sz, (m.w-m.lead-m.body)*sz, m.lds*sz, m.ldd2*sz, m.lds2*sz)
	return true
}

// addRowsAsm does addRows's work in assembly for float32 when the CPU has
// AVX and reports whether it did; the arguments are checked by the caller.
func addRowsAsm[T Float](dst, src []T, m rowMove) bool {
	if !haveUnfoldAVX || elemSize[T]() != 4 {
		return false
	}
	addRows32AVX(&as32(dst)[0], &as32(src)[0], m.blocks, m.rows, m.body, m.ldd, m.lds, m.ldd2, m.lds2)
	return true
}

// copyPiecesAsm does copyPieces's work in assembly when the CPU has AVX
// and reports whether it did; the arguments are checked by the caller.
func copyPiecesAsm[T Float](dst, src []T, m pieceMove) bool {
	if !haveUnfoldAVX {
		return false
	}
	sz := elemSize[T]()
	im2rowAVX(unsafe.Pointer(&dst[0]), unsafe.Pointer(&src[0]), m.positions, m.groups, m.pieces,
		m.piece*sz, m.ldd*sz, m.lds*sz, m.lds1*sz, m.lds2*sz)
	return true
}
