package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestUnfoldStride1MatchesStrided checks the stride-1 im2col and col2im
// (row moves, assembly on amd64) against the value-at-a-time loops on
// square and rectangular windows, padding wider than the kernel reach,
// row strides above 1, batch 1, odd sizes, row tiles that start inside the
// image and groups of images, in float32 and float64: bit for bit, since
// the copies are exact and col2im's adds keep their order. The unfolded
// buffer starts full of NaNs, so a value the fast path forgets to write (a
// padding zero) shows.
func TestUnfoldStride1MatchesStrided(t *testing.T) {
	geoms := []struct {
		inC, inH, inW int
		win           ConvWindow
	}{
		{1, 28, 28, SquareWindow(5, 1, 0)},  // the MNIST CNN's conv1
		{20, 12, 12, SquareWindow(5, 1, 0)}, // and conv2: 8-value rows
		{3, 9, 13, SquareWindow(3, 1, 1)},   // "same"
		{2, 7, 9, ConvWindow{KH: 3, KW: 5, StrideH: 2, StrideW: 1, PadH: 1, PadW: 2}},
		{2, 8, 5, ConvWindow{KH: 5, KW: 2, StrideH: 3, StrideW: 1, PadH: 0, PadW: 1}},
		{1, 3, 3, SquareWindow(3, 1, 3)}, // padding beyond the kernel's reach: whole zero rows
		{2, 5, 41, ConvWindow{KH: 2, KW: 7, StrideH: 1, StrideW: 1, PadH: 2, PadW: 4}},
		{1, 4, 1, ConvWindow{KH: 2, KW: 1, StrideH: 1, StrideW: 1, PadH: 0, PadW: 0}}, // one-value rows
	}
	for _, g := range geoms {
		for _, batch := range []int{1, 3} {
			checkUnfoldStride1[float32](t, g.inC, g.inH, g.inW, g.win, batch)
			checkUnfoldStride1[float64](t, g.inC, g.inH, g.inW, g.win, batch)
		}
	}
}

func checkUnfoldStride1[T Float](t *testing.T, inC, inH, inW int, win ConvWindow, batch int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(inC*inH), uint64(inW*batch)))
	c := NewConv2dWindow[T](inC, inH, inW, 2, win)
	c.batch = batch
	c.x = make([]T, batch*inC*inH*inW)
	for i := range c.x {
		c.x[i] = T(rng.NormFloat64())
	}
	type tile struct{ i0, i1, oh0, oh1 int }
	tiles := []tile{{0, batch, 0, c.outH}, {batch - 1, batch, 0, c.outH}}
	if c.outH > 2 {
		tiles = append(tiles, tile{0, 1, 1, c.outH - 1}, tile{batch - 1, batch, c.outH - 2, c.outH})
	}
	for _, tl := range tiles {
		name := fmt.Sprintf("%T %s batch %d images [%d,%d) rows [%d,%d)", T(0), c.Name(), batch, tl.i0, tl.i1, tl.oh0, tl.oh1)
		n := c.tileCols(tl.i0, tl.i1, tl.oh0, tl.oh1)
		want := make([]T, (c.ckk+1)*n)
		c.im2colStrided(tl.i0, tl.i1, tl.oh0, tl.oh1, want)
		got := make([]T, len(want))
		for i := range got {
			got[i] = T(math.NaN())
		}
		c.im2colStride1(tl.i0, tl.i1, tl.oh0, tl.oh1, got)
		if i := firstDiff(got, want); i >= 0 {
			t.Errorf("%s: im2col value %d (row %d) = %v, want %v", name, i, i/n, got[i], want[i])
		}
		du := make([]T, c.ckk*n)
		for i := range du {
			du[i] = T(rng.NormFloat64())
		}
		start := make([]T, len(c.x))
		for i := range start {
			start[i] = T(rng.NormFloat64())
		}
		c.dx = slices.Clone(start)
		c.col2imStrided(tl.i0, tl.i1, tl.oh0, tl.oh1, du)
		wantDx := c.dx
		c.dx = slices.Clone(start)
		c.col2imStride1(tl.i0, tl.i1, tl.oh0, tl.oh1, du)
		if i := firstDiff(c.dx, wantDx); i >= 0 {
			t.Errorf("%s: col2im value %d = %v, want %v", name, i, c.dx[i], wantDx[i])
		}
	}
}

// firstDiff is the first index where got and want differ bitwise (NaN
// differs from everything), or −1.
func firstDiff[T Float](got, want []T) int {
	for i := range want {
		if got[i] != want[i] || got[i] != got[i] {
			return i
		}
	}
	return -1
}

// TestRowMovesMatchLoops checks copyRowsPad and addRows (assembly on
// amd64) against plain loops for every row length 1…40 (the assembly's
// 4-, 8-, 16- and 32-byte pieces and their overlaps, and the add's
// eight-wide groups and one-at-a-time tail), with leading and trailing
// padding, several blocks and rows, in float32 and float64; values outside
// the rows written must stay untouched.
func TestRowMovesMatchLoops(t *testing.T) {
	for body := 1; body <= 40; body++ {
		for _, pad := range [][2]int{{0, 0}, {1, 0}, {0, 2}, {3, 1}} {
			m := rowMove{blocks: 3, rows: 2, w: pad[0] + body + pad[1], lead: pad[0], body: body}
			m.lds, m.lds2 = body+5, 2*(body+5)+3
			m.ldd2 = m.rows*m.w + 2
			checkRowMoves[float32](t, m)
			checkRowMoves[float64](t, m)
		}
	}
}

func checkRowMoves[T Float](t *testing.T, m rowMove) {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(m.body), uint64(m.w)))
	src := make([]T, span(m.blocks, m.rows, m.lds, m.lds2, m.body)+3)
	for i := range src {
		src[i] = T(rng.NormFloat64())
	}
	dst0 := make([]T, span(m.blocks, m.rows, m.w, m.ldd2, m.w)+3)
	for i := range dst0 {
		dst0[i] = T(rng.NormFloat64())
	}
	want, got := slices.Clone(dst0), slices.Clone(dst0)
	for b := range m.blocks {
		for r := range m.rows {
			for j := range m.w {
				v := T(0)
				if j >= m.lead && j < m.lead+m.body {
					v = src[b*m.lds2+r*m.lds+j-m.lead]
				}
				want[b*m.ldd2+r*m.w+j] = v
			}
		}
	}
	copyRowsPad(got, src, m)
	if i := firstDiff(got, want); i >= 0 {
		t.Errorf("%T copyRowsPad %+v: value %d = %v, want %v", T(0), m, i, got[i], want[i])
	}
	a := m
	a.ldd = m.w + 1
	a.ldd2 = a.rows*a.ldd + 1
	want, got = slices.Clone(dst0), slices.Clone(dst0)
	for b := range a.blocks {
		for r := range a.rows {
			for j := range a.body {
				want[b*a.ldd2+r*a.ldd+j] += src[b*a.lds2+r*a.lds+j]
			}
		}
	}
	addRows(got, src, a)
	if i := firstDiff(got, want); i >= 0 {
		t.Errorf("%T addRows %+v: value %d = %v, want %v", T(0), a, i, got[i], want[i])
	}
}

// TestIm2rowIsTransposedIm2col checks im2row (copyPieces, assembly on
// amd64, for windows inside the input; value by value at the padding)
// against the transpose of the value-at-a-time im2col, bit for bit, on the
// geometries of TestUnfoldStride1MatchesStrided plus column strides above
// 1 and padding on one axis only, for every tile shape, in float32 and
// float64. The buffer starts full of NaNs, so a value im2row forgets shows.
func TestIm2rowIsTransposedIm2col(t *testing.T) {
	geoms := []struct {
		inC, inH, inW int
		win           ConvWindow
	}{
		{1, 28, 28, SquareWindow(5, 1, 0)},
		{20, 12, 12, SquareWindow(5, 1, 0)},
		{3, 9, 13, SquareWindow(3, 1, 1)},
		{2, 9, 8, SquareWindow(3, 2, 1)},
		{2, 7, 9, ConvWindow{KH: 3, KW: 5, StrideH: 2, StrideW: 1, PadH: 1, PadW: 2}},
		{2, 8, 5, ConvWindow{KH: 5, KW: 2, StrideH: 3, StrideW: 1, PadH: 0, PadW: 1}},
		{2, 8, 11, ConvWindow{KH: 2, KW: 3, StrideH: 1, StrideW: 3, PadH: 1, PadW: 0}},
		{1, 3, 3, SquareWindow(3, 1, 3)},
		{2, 5, 41, ConvWindow{KH: 2, KW: 9, StrideH: 1, StrideW: 2, PadH: 2, PadW: 4}},
		{3, 4, 1, ConvWindow{KH: 2, KW: 1, StrideH: 1, StrideW: 1, PadH: 0, PadW: 0}},
		{2, 6, 40, ConvWindow{KH: 1, KW: 11, StrideH: 1, StrideW: 1, PadH: 0, PadW: 0}}, // 44-byte pieces
	}
	for _, g := range geoms {
		for _, batch := range []int{1, 3} {
			checkIm2row[float32](t, g.inC, g.inH, g.inW, g.win, batch)
			checkIm2row[float64](t, g.inC, g.inH, g.inW, g.win, batch)
		}
	}
}

func checkIm2row[T Float](t *testing.T, inC, inH, inW int, win ConvWindow, batch int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(inC*inW), uint64(inH*batch)))
	c := NewConv2dWindow[T](inC, inH, inW, 2, win)
	c.batch = batch
	c.x = make([]T, batch*inC*inH*inW)
	for i := range c.x {
		c.x[i] = T(rng.NormFloat64())
	}
	type tile struct{ i0, i1, oh0, oh1 int }
	tiles := []tile{{0, batch, 0, c.outH}, {batch - 1, batch, 0, c.outH}}
	if c.outH > 2 {
		tiles = append(tiles, tile{0, 1, 1, c.outH - 1}, tile{batch - 1, batch, c.outH - 2, c.outH})
	}
	kk := c.ckk + 1
	for _, tl := range tiles {
		n := c.tileCols(tl.i0, tl.i1, tl.oh0, tl.oh1)
		u := make([]T, kk*n)
		c.im2colStrided(tl.i0, tl.i1, tl.oh0, tl.oh1, u)
		want := make([]T, len(u))
		for r := range kk {
			for p := range n {
				want[p*kk+r] = u[r*n+p]
			}
		}
		got := make([]T, len(want))
		for i := range got {
			got[i] = T(math.NaN())
		}
		c.im2row(tl.i0, tl.i1, tl.oh0, tl.oh1, got)
		if i := firstDiff(got, want); i >= 0 {
			t.Errorf("%T %s batch %d images [%d,%d) rows [%d,%d): im2row position %d column %d = %v, want %v",
				T(0), c.Name(), batch, tl.i0, tl.i1, tl.oh0, tl.oh1, i/kk, i%kk, got[i], want[i])
		}
	}
}

// TestCopyPiecesMatchesLoop checks copyPieces (assembly on amd64) against
// a plain loop for piece lengths 1…40 (every branch of the assembly's
// piece move) and several positions, groups and pieces, in float32 and
// float64; destination values between rows must stay untouched.
func TestCopyPiecesMatchesLoop(t *testing.T) {
	for piece := 1; piece <= 40; piece++ {
		m := pieceMove{positions: 3, groups: 2, pieces: 3, piece: piece}
		m.lds2 = piece + 2
		m.lds1 = 3*m.lds2 + 1
		m.lds = 2
		m.ldd = m.groups*m.pieces*piece + 3
		checkCopyPieces[float32](t, m)
		checkCopyPieces[float64](t, m)
	}
}

func checkCopyPieces[T Float](t *testing.T, m pieceMove) {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(m.piece), 7))
	src := make([]T, (m.positions-1)*m.lds+(m.groups-1)*m.lds1+(m.pieces-1)*m.lds2+m.piece+2)
	for i := range src {
		src[i] = T(rng.NormFloat64())
	}
	dst := make([]T, m.positions*m.ldd)
	for i := range dst {
		dst[i] = T(rng.NormFloat64())
	}
	want := slices.Clone(dst)
	for p := range m.positions {
		k := p * m.ldd
		for g := range m.groups {
			for q := range m.pieces {
				for j := range m.piece {
					want[k] = src[p*m.lds+g*m.lds1+q*m.lds2+j]
					k++
				}
			}
		}
	}
	copyPieces(dst, src, m)
	if i := firstDiff(dst, want); i >= 0 {
		t.Errorf("%T copyPieces %+v: value %d = %v, want %v", T(0), m, i, dst[i], want[i])
	}
}
