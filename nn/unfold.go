package nn

import "fmt"

// The data movers of Conv2d's unfolds. With column stride 1, the unfolded
// row of a kernel tap (ci, ki, kj) over one image (im2col) is a run of
// input rows, each shifted by kj and cut to the valid columns: "copy these
// rows, padded with zeros"; col2im adds them back. The transposed unfold
// (im2row) of an output position whose window lies inside the input is
// inC·kh kernel rows of kw contiguous input values. movePieces does either
// for a whole tile in one call, and addRows adds col2im's rows back: per
// row the Go loops paid slice set-up and bounds checks that cost more than
// the copy itself when rows are short (the MNIST CNN's second conv has
// 8-value rows, its kernel rows are 5 values), and the assembly
// (unfold_amd64.s) moves them in 32-byte pieces.

// pieceMove is the geometry of one movePieces call, in elements: outer ×
// groups × pieces pieces, written one after another in the destination
// within an outer step (outer steps ldo apart), each as lead zeros, body
// values from the source and trail zeros. In the source, outer steps are
// lso apart, groups lsg and pieces lsp.
//
// For im2col an outer step is an image, a piece one output row (groups =
// 1); for im2row an outer step is an output position, a group an input
// channel, a piece one kernel row.
type pieceMove struct {
	outer, groups, pieces int
	lead, body, trail     int
	ldo, lso, lsg, lsp    int
}

// movePieces copies m's pieces from src into dst.
func movePieces[T Float](dst, src []T, m pieceMove) {
	if m.outer == 0 || m.groups == 0 || m.pieces == 0 {
		return
	}
	w := m.lead + m.body + m.trail
	step := m.groups * m.pieces * w
	if m.lead < 0 || m.body < 1 || m.trail < 0 || m.ldo < step ||
		len(dst) < (m.outer-1)*m.ldo+step ||
		len(src) < (m.outer-1)*m.lso+(m.groups-1)*m.lsg+(m.pieces-1)*m.lsp+m.body {
		panic(fmt.Sprintf("nn: movePieces %+v from %d values into %d", m, len(src), len(dst)))
	}
	if movePiecesAsm(dst, src, m) {
		return
	}
	for o := range m.outer {
		d := dst[o*m.ldo : o*m.ldo+step]
		for g := range m.groups {
			for q := range m.pieces {
				s := src[o*m.lso+g*m.lsg+q*m.lsp:]
				row := d[(g*m.pieces+q)*w : (g*m.pieces+q+1)*w]
				clear(row[:m.lead])
				copy(row[m.lead:m.lead+m.body], s[:m.body])
				clear(row[m.lead+m.body:])
			}
		}
	}
}

// rowAdd is the geometry of one addRows call, in elements: blocks blocks
// (one per image), ldd2 apart in the destination and lds2 in the source,
// each of rows rows ldd and lds apart, each row adding w values.
type rowAdd struct {
	blocks, rows, w      int
	ldd, lds, ldd2, lds2 int
}

// addRows adds m's rows of src into dst: one add per element in the order
// of the plain loop, so float32 results are the same bits on every path.
func addRows[T Float](dst, src []T, m rowAdd) {
	if m.blocks == 0 || m.rows == 0 || m.w == 0 {
		return
	}
	span := func(ld, ld2 int) int { return (m.blocks-1)*ld2 + (m.rows-1)*ld + m.w }
	if m.w < 0 || len(dst) < span(m.ldd, m.ldd2) || len(src) < span(m.lds, m.lds2) {
		panic(fmt.Sprintf("nn: addRows %+v from %d values into %d", m, len(src), len(dst)))
	}
	if addRowsAsm(dst, src, m) {
		return
	}
	for b := range m.blocks {
		for r := range m.rows {
			d := dst[b*m.ldd2+r*m.ldd:]
			s := src[b*m.lds2+r*m.lds:]
			addTo(d[:m.w], s[:m.w])
		}
	}
}
