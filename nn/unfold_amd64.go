//go:build amd64 && !purego

package nn

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// movePiecesAVX is unfold_amd64.s: movePieces's work with every count in
// bytes (multiples of 4, body ≥ 4, outer, groups and pieces ≥ 1).
//
//go:noescape
func movePiecesAVX(dst, src unsafe.Pointer, outer, groups, pieces, lead, body, trail, ldo, lso, lsg, lsp int)

// addRows32AVX is unfold_amd64.s: dst[b·ldd2+r·ldd+j] +=
// src[b·lds2+r·lds+j] for b < blocks, r < rows, j < w, one float32 add per
// element as in the Go loop.
//
//go:noescape
func addRows32AVX(dst, src *float32, blocks, rows, w, ldd, lds, ldd2, lds2 int)

var haveUnfoldAVX = cpu.X86.HasAVX

// movePiecesAsm does movePieces's work in assembly when the CPU has AVX
// and reports whether it did; the arguments are checked by the caller.
func movePiecesAsm[T Float](dst, src []T, m pieceMove) bool {
	if !haveUnfoldAVX {
		return false
	}
	sz := elemSize[T]()
	movePiecesAVX(unsafe.Pointer(&dst[0]), unsafe.Pointer(&src[0]), m.outer, m.groups, m.pieces,
		m.lead*sz, m.body*sz, m.trail*sz, m.ldo*sz, m.lso*sz, m.lsg*sz, m.lsp*sz)
	return true
}

// addRowsAsm does addRows's work in assembly for float32 when the CPU has
// AVX and reports whether it did; the arguments are checked by the caller.
func addRowsAsm[T Float](dst, src []T, m rowAdd) bool {
	if !haveUnfoldAVX || elemSize[T]() != 4 {
		return false
	}
	addRows32AVX(&as32(dst)[0], &as32(src)[0], m.blocks, m.rows, m.w, m.ldd, m.lds, m.ldd2, m.lds2)
	return true
}
