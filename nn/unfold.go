package nn

import "fmt"

// The row movers of im2col and col2im for stride-1 convolutions. With
// stride 1, the unfolded row of a kernel tap (ci, ki, kj) over one image is
// a run of input rows, each shifted by kj and cut to the valid columns, so
// im2col is "copy these rows, padded with zeros" and col2im "add these rows
// back". One call moves a tap's rows for every image of a tile: per row the
// Go loops paid slice set-up and bounds checks that cost more than the copy
// itself when rows are short (the MNIST CNN's second conv has 8-value
// rows), and the assembly (unfold_amd64.s) moves them in 32-byte pieces.

// rowMove is the geometry of one copyRowsPad or addRows call, in elements:
// blocks blocks (one per image), ldd2 apart in the destination and lds2 in
// the source, each of rows rows ldd and lds apart, each row moving body
// values. copyRowsPad writes rows of w values, contiguous within a block
// (ldd = w): lead zeros, the body, zeros to w; addRows adds the body at
// the start of each row.
type rowMove struct {
	blocks, rows  int
	w, lead, body int
	ldd, lds      int
	ldd2, lds2    int
}

// span is how many elements a block-strided set of rows reaches: the last
// block's last row ends at (blocks−1)·ld2 + (rows−1)·ld + n.
func span(blocks, rows, ld, ld2, n int) int { return (blocks-1)*ld2 + (rows-1)*ld + n }

// copyRowsPad copies m's rows from src into dst, zero-padded to w values
// (m.ldd is taken to be m.w).
func copyRowsPad[T Float](dst, src []T, m rowMove) {
	if m.blocks == 0 || m.rows == 0 {
		return
	}
	m.ldd = m.w
	if m.lead < 0 || m.body < 1 || m.lead+m.body > m.w || m.ldd2 < m.rows*m.w ||
		len(dst) < span(m.blocks, m.rows, m.w, m.ldd2, m.w) || len(src) < span(m.blocks, m.rows, m.lds, m.lds2, m.body) {
		panic(fmt.Sprintf("nn: copyRowsPad %+v from %d values into %d", m, len(src), len(dst)))
	}
	if copyRowsPadAsm(dst, src, m) {
		return
	}
	for b := range m.blocks {
		for r := range m.rows {
			d := dst[b*m.ldd2+r*m.w : b*m.ldd2+(r+1)*m.w]
			s := src[b*m.lds2+r*m.lds:]
			clear(d[:m.lead])
			copy(d[m.lead:m.lead+m.body], s[:m.body])
			clear(d[m.lead+m.body:])
		}
	}
}

// addRows adds m's rows of src into dst (body values per row, m.w and
// m.lead unused): one add per element in the order of the plain loop, so
// float32 results are the same bits on every path.
func addRows[T Float](dst, src []T, m rowMove) {
	if m.blocks == 0 || m.rows == 0 || m.body == 0 {
		return
	}
	if m.body < 0 || len(dst) < span(m.blocks, m.rows, m.ldd, m.ldd2, m.body) ||
		len(src) < span(m.blocks, m.rows, m.lds, m.lds2, m.body) {
		panic(fmt.Sprintf("nn: addRows %+v from %d values into %d", m, len(src), len(dst)))
	}
	if addRowsAsm(dst, src, m) {
		return
	}
	for b := range m.blocks {
		for r := range m.rows {
			d := dst[b*m.ldd2+r*m.ldd:]
			s := src[b*m.lds2+r*m.lds:]
			addTo(d[:m.body], s[:m.body])
		}
	}
}

// pieceMove is the geometry of one copyPieces call, in elements: for each
// of positions positions (ldd apart in the destination, lds in the
// source), groups×pieces pieces of piece values, the source pieces lds2
// apart within a group and the groups lds1 apart, written one after
// another. For im2row a position is an output position, a group an input
// channel, a piece one kernel row of values (lds2 = the input width, lds1
// = the input plane).
type pieceMove struct {
	positions, groups, pieces, piece int
	ldd, lds, lds1, lds2             int
}

// copyPieces copies m's pieces from src into dst.
func copyPieces[T Float](dst, src []T, m pieceMove) {
	if m.positions == 0 {
		return
	}
	row := m.groups * m.pieces * m.piece
	if m.groups < 1 || m.pieces < 1 || m.piece < 1 || m.ldd < row ||
		len(dst) < (m.positions-1)*m.ldd+row ||
		len(src) < (m.positions-1)*m.lds+(m.groups-1)*m.lds1+(m.pieces-1)*m.lds2+m.piece {
		panic(fmt.Sprintf("nn: copyPieces %+v from %d values into %d", m, len(src), len(dst)))
	}
	if copyPiecesAsm(dst, src, m) {
		return
	}
	for p := range m.positions {
		d := dst[p*m.ldd : p*m.ldd+row]
		for g := range m.groups {
			for q := range m.pieces {
				s := src[p*m.lds+g*m.lds1+q*m.lds2:]
				copy(d[(g*m.pieces+q)*m.piece:(g*m.pieces+q+1)*m.piece], s[:m.piece])
			}
		}
	}
}
