package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// unfoldGeoms are the convolutions the unfold tests run: the MNIST CNN's
// two, "same" and strided windows, rectangular kernels, padding on one
// axis only, padding beyond the kernel's reach (whole rows and columns of
// zeros), one-value rows and long pieces.
var unfoldGeoms = []struct {
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
	{2, 5, 41, ConvWindow{KH: 2, KW: 7, StrideH: 1, StrideW: 1, PadH: 2, PadW: 4}},
	{2, 5, 41, ConvWindow{KH: 2, KW: 9, StrideH: 1, StrideW: 2, PadH: 2, PadW: 4}},
	{3, 4, 1, ConvWindow{KH: 2, KW: 1, StrideH: 1, StrideW: 1, PadH: 0, PadW: 0}},
	{2, 6, 40, ConvWindow{KH: 1, KW: 11, StrideH: 1, StrideW: 1, PadH: 0, PadW: 0}},
}

type unfoldTile struct{ i0, i1, oh0, oh1 int }

// unfoldCase returns a layer on random input of the given batch and the
// tiles to unfold: whole images, the last image alone, and row tiles that
// start and end inside an image.
func unfoldCase[T Float](inC, inH, inW int, win ConvWindow, batch int) (*Conv2d[T], []unfoldTile) {
	rng := rand.New(rand.NewPCG(uint64(inC*inH), uint64(inW*batch)))
	c := NewConv2dWindow[T](inC, inH, inW, 2, win)
	c.batch = batch
	c.x = make([]T, batch*inC*inH*inW)
	for i := range c.x {
		c.x[i] = T(rng.NormFloat64())
	}
	tiles := []unfoldTile{{0, batch, 0, c.outH}, {batch - 1, batch, 0, c.outH}}
	if c.outH > 2 {
		tiles = append(tiles, unfoldTile{0, 1, 1, c.outH - 1}, unfoldTile{batch - 1, batch, c.outH - 2, c.outH})
	}
	return c, tiles
}

func (tl unfoldTile) String() string {
	return fmt.Sprintf("images [%d,%d) rows [%d,%d)", tl.i0, tl.i1, tl.oh0, tl.oh1)
}

// nans is a buffer full of NaNs, so a value an unfold forgets to write
// (a padding zero) shows.
func nans[T Float](n int) []T {
	s := make([]T, n)
	for i := range s {
		s[i] = T(math.NaN())
	}
	return s
}

// TestUnfoldStride1MatchesStrided checks the column-stride-1 im2col and
// col2im (movePieces and addRows, assembly on amd64) against the
// value-at-a-time loops on unfoldGeoms, batch 1 and 3 and every tile
// shape, in float32 and float64: bit for bit, since the copies are exact
// and col2im's adds keep their order.
func TestUnfoldStride1MatchesStrided(t *testing.T) {
	for _, g := range unfoldGeoms {
		if g.win.StrideW != 1 {
			continue
		}
		for _, batch := range []int{1, 3} {
			checkUnfoldStride1[float32](t, g.inC, g.inH, g.inW, g.win, batch)
			checkUnfoldStride1[float64](t, g.inC, g.inH, g.inW, g.win, batch)
		}
	}
}

func checkUnfoldStride1[T Float](t *testing.T, inC, inH, inW int, win ConvWindow, batch int) {
	t.Helper()
	c, tiles := unfoldCase[T](inC, inH, inW, win, batch)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tl := range tiles {
		name := fmt.Sprintf("%T %s batch %d %v", T(0), c.Name(), batch, tl)
		n := c.tileCols(tl.i0, tl.i1, tl.oh0, tl.oh1)
		want := make([]T, (c.ckk+1)*n)
		c.im2colStrided(tl.i0, tl.i1, tl.oh0, tl.oh1, want)
		got := nans[T](len(want))
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

// TestIm2rowIsTransposedIm2col checks im2row (movePieces, assembly on
// amd64, for windows inside the input; value by value at the padding),
// rows padded with zeros to Conv2d's stride, against the transpose of the
// value-at-a-time im2col, bit for bit, on
// unfoldGeoms (column strides above 1 included), batch 1 and 3 and every
// tile shape, in float32 and float64.
func TestIm2rowIsTransposedIm2col(t *testing.T) {
	for _, g := range unfoldGeoms {
		for _, batch := range []int{1, 3} {
			checkIm2row[float32](t, g.inC, g.inH, g.inW, g.win, batch)
			checkIm2row[float64](t, g.inC, g.inH, g.inW, g.win, batch)
		}
	}
}

func checkIm2row[T Float](t *testing.T, inC, inH, inW int, win ConvWindow, batch int) {
	t.Helper()
	c, tiles := unfoldCase[T](inC, inH, inW, win, batch)
	kk := c.ckk + 1
	for _, tl := range tiles {
		n := c.tileCols(tl.i0, tl.i1, tl.oh0, tl.oh1)
		u := make([]T, kk*n)
		c.im2colStrided(tl.i0, tl.i1, tl.oh0, tl.oh1, u)
		ld := c.utStride()
		want := make([]T, n*ld) // zeros beyond column ckk
		for r := range kk {
			for p := range n {
				want[p*ld+r] = u[r*n+p]
			}
		}
		got := nans[T](len(want))
		c.im2row(tl.i0, tl.i1, tl.oh0, tl.oh1, got, ld)
		if i := firstDiff(got, want); i >= 0 {
			t.Errorf("%T %s batch %d %v: im2row position %d column %d = %v, want %v",
				T(0), c.Name(), batch, tl, i/ld, i%ld, got[i], want[i])
		}
	}
}

// firstDiff is the first index where got and want differ (NaN differs
// from everything), or −1.
func firstDiff[T Float](got, want []T) int {
	for i := range want {
		if got[i] != want[i] || got[i] != got[i] {
			return i
		}
	}
	return -1
}

// TestMovePiecesMatchesLoop checks movePieces (assembly on amd64) against
// a plain loop for every body length 1…40 (each branch of the assembly's
// piece move: 4-, 8-, 16- and 32-byte moves and their overlaps), with and
// without leading and trailing zeros, several outer steps, groups and
// pieces, in float32 and float64; destination values between outer steps
// must stay untouched.
func TestMovePiecesMatchesLoop(t *testing.T) {
	for body := 1; body <= 40; body++ {
		for _, pad := range [][2]int{{0, 0}, {1, 0}, {0, 2}, {3, 1}} {
			m := pieceMove{outer: 3, groups: 2, pieces: 3, lead: pad[0], body: body, trail: pad[1]}
			m.lsp = body + 2
			m.lsg = 3*m.lsp + 1
			m.lso = 2
			m.ldo = m.groups*m.pieces*(pad[0]+body+pad[1]) + 3
			checkMovePieces[float32](t, m)
			checkMovePieces[float64](t, m)
		}
	}
}

func checkMovePieces[T Float](t *testing.T, m pieceMove) {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(m.body), uint64(m.lead)))
	src := make([]T, (m.outer-1)*m.lso+(m.groups-1)*m.lsg+(m.pieces-1)*m.lsp+m.body+2)
	for i := range src {
		src[i] = T(rng.NormFloat64())
	}
	dst := make([]T, m.outer*m.ldo)
	for i := range dst {
		dst[i] = T(rng.NormFloat64())
	}
	want := slices.Clone(dst)
	for o := range m.outer {
		k := o * m.ldo
		for g := range m.groups {
			for q := range m.pieces {
				for j := range m.lead + m.body + m.trail {
					v := T(0)
					if j >= m.lead && j < m.lead+m.body {
						v = src[o*m.lso+g*m.lsg+q*m.lsp+j-m.lead]
					}
					want[k] = v
					k++
				}
			}
		}
	}
	movePieces(dst, src, m)
	if i := firstDiff(dst, want); i >= 0 {
		t.Errorf("%T movePieces %+v: value %d = %v, want %v", T(0), m, i, dst[i], want[i])
	}
}

// TestAddRowsMatchesLoop checks addRows (assembly on amd64 for float32)
// against a plain loop for row lengths 1…40 (the eight-wide groups and the
// one-at-a-time tail), several blocks and rows, in float32 and float64;
// values outside the rows must stay untouched.
func TestAddRowsMatchesLoop(t *testing.T) {
	for w := 1; w <= 40; w++ {
		m := rowAdd{blocks: 3, rows: 2, w: w, ldd: w + 1, lds: w + 5}
		m.ldd2, m.lds2 = m.rows*m.ldd+1, 2*m.lds+3
		checkAddRows[float32](t, m)
		checkAddRows[float64](t, m)
	}
}

func checkAddRows[T Float](t *testing.T, m rowAdd) {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(m.w), 9))
	src := make([]T, m.blocks*m.lds2)
	dst := make([]T, m.blocks*m.ldd2)
	for i := range src {
		src[i] = T(rng.NormFloat64())
	}
	for i := range dst {
		dst[i] = T(rng.NormFloat64())
	}
	want := slices.Clone(dst)
	for b := range m.blocks {
		for r := range m.rows {
			for j := range m.w {
				want[b*m.ldd2+r*m.ldd+j] += src[b*m.lds2+r*m.lds+j]
			}
		}
	}
	addRows(dst, src, m)
	if i := firstDiff(dst, want); i >= 0 {
		t.Errorf("%T addRows %+v: value %d = %v, want %v", T(0), m, i, dst[i], want[i])
	}
}

// TestWeightGradFlopsUnpadded checks that the FLOPs counted for ParamGrads
// and the explicit SqNorms are the layer's work, 2·outC·(ckk+1) per output
// position, not the zero-padded product's (utStride columns).
func TestWeightGradFlopsUnpadded(t *testing.T) {
	const batch = 3
	c := NewConv2dWindow[float32](3, 5, 6, 4, SquareWindow(3, 1, 1))
	c.SetNormMethod(NormExplicit)
	c.SetCacheLimit(0)
	rng := rand.New(rand.NewPCG(1, 2))
	c.Init(rng)
	x := make([]float32, batch*3*5*6)
	dy := make([]float32, batch*4*c.hw)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	for i := range dy {
		dy[i] = float32(rng.NormFloat64())
	}
	c.Forward(x, batch, true)
	c.Backward(dy, false)
	if c.utStride() == c.ckk+1 {
		t.Fatalf("utStride %d: no padding to test", c.utStride())
	}
	want := int64(2 * c.outC * (c.ckk + 1) * c.hw * batch)
	for _, op := range []struct {
		name string
		run  func()
	}{
		{"ParamGrads", func() { c.ParamGrads(nil) }},
		{"SqNorms", func() { c.SqNorms(make([]float32, batch)) }},
	} {
		before := GemmFlops()
		op.run()
		if got := GemmFlops() - before; got != want {
			t.Errorf("%s counted %d FLOPs, want %d", op.name, got, want)
		}
	}
}
