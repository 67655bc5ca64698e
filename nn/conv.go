package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// NormMethod selects how Conv2d computes per-sample gradient norms.
type NormMethod int

const (
	// NormAuto picks, per call, the method with the lower FLOP count.
	NormAuto NormMethod = iota
	// NormExplicit forms each sample's weight gradient Bᵢᵀ·Uᵢ (one GEMM)
	// and takes its squared norm. When the per-sample gradients fit the
	// cache limit they are kept, and the following ParamGrads becomes a
	// weighted sum of them instead of a second pass over the batch.
	NormExplicit
	// NormGram uses ‖Bᵢᵀ·Uᵢ‖² = Σ_{p,q} (UᵢᵀUᵢ)_{pq}(BᵢᵀBᵢ)_{pq}, whose cost
	// grows with the square of the number of output positions: it wins
	// for small feature maps with many channels.
	NormGram
)

func (m NormMethod) String() string {
	switch m {
	case NormAuto:
		return "auto"
	case NormExplicit:
		return "explicit"
	case NormGram:
		return "gram"
	}
	return fmt.Sprintf("NormMethod(%d)", int(m))
}

// DefaultCacheBytes is the default limit on a Conv2d's cache of per-sample
// weight gradients kept from SqNorms (so ParamGrads is a weighted sum of
// them). At this size it holds for the MNIST CNN at batch 256 and the
// VGG-like layers at batch 64.
//
// The unfolded input is not cached: ParamGrads and SqNorms unfold the
// input again, transposed (im2row), which their products read in place.
// Keeping Forward's U instead cost a transpose of it in every later product
// (the kernels want the positions, the products' inner dimension, as rows)
// and a cache larger than L3 (48 MB for the MNIST CNN at batch 256); it
// measured 7–9 % slower once im2col was fast (bench/RESULTS.md).
const DefaultCacheBytes = 64 << 20

// tileBytes is the size an im2col tile aims at: small enough to stay in the
// L2 cache between im2col and the GEMMs that read it, and never below
// minTileCols columns so the GEMMs stay efficient.
const (
	tileBytes   = 1 << 20
	minTileCols = 256
)

// tileTarget, when positive, overrides the tile width in columns (tests use
// it to force row tiles and image groups on small inputs).
var tileTarget = 0

// ConvWindow is a convolution's kernel size, stride and zero padding on each
// axis (H: rows, W: columns); the dilation is 1. A square window (NewConv2d)
// has the same three on both axes; Gorgonia's Conv2d and PyTorch's take them
// per axis, and so does NewConv2dWindow.
type ConvWindow struct {
	KH, KW           int // kernel rows × columns
	StrideH, StrideW int
	PadH, PadW       int // zeros added on both sides of each axis
}

// SquareWindow is a k×k kernel with the same stride and pad on both axes.
func SquareWindow(k, stride, pad int) ConvWindow { return ConvWindow{k, k, stride, stride, pad, pad} }

// IsSquare says whether both axes have the same kernel size, stride and pad.
func (w ConvWindow) IsSquare() bool {
	return w.KH == w.KW && w.StrideH == w.StrideW && w.PadH == w.PadW
}

// OutHW is the output size on an inH×inW input: per axis
// floor((in + 2·pad − k)/stride) + 1 (< 1 when the kernel is larger than
// the padded input).
func (w ConvWindow) OutHW(inH, inW int) (int, int) {
	return (inH+2*w.PadH-w.KH)/w.StrideH + 1, (inW+2*w.PadW-w.KW)/w.StrideW + 1
}

// valid says whether the window is one NewConv2dWindow accepts on an
// inH×inW input: positive kernel and stride, non-negative padding, and a
// kernel no larger than the padded input.
func (w ConvWindow) valid(inH, inW int) bool {
	return w.KH >= 1 && w.KW >= 1 && w.StrideH >= 1 && w.StrideW >= 1 && w.PadH >= 0 && w.PadW >= 0 &&
		inH+2*w.PadH >= w.KH && inW+2*w.PadW >= w.KW
}

// String is "3x3, stride 1, pad 1" for a square window and per-axis pairs
// "3x5, stride (2,1), pad (1,2)" where the axes differ.
func (w ConvWindow) String() string {
	pair := func(h, v int) string {
		if h == v {
			return fmt.Sprint(h)
		}
		return fmt.Sprintf("(%d,%d)", h, v)
	}
	return fmt.Sprintf("%dx%d, stride %s, pad %s", w.KH, w.KW, pair(w.StrideH, w.StrideW), pair(w.PadH, w.PadW))
}

// Conv2d is a 2-D convolution over NCHW batches by im2col + GEMM.
//
// The input of each tile of output positions is unfolded into a matrix U of
// (inC·kh·kw + 1) rows, the last row all ones, so the bias rides along as an
// extra weight column: the forward pass is [W | b]·U, the weight and bias
// gradients come out of one product B·Uᵀ, and per-sample norms include the
// bias without extra work. Forward unfolds U (im2col: one row per kernel
// tap, positions contiguous, the layout its product reads in place);
// ParamGrads and the explicit SqNorms unfold Uᵀ directly (im2row: one row
// per position), the layout B·Uᵀ reads in place, instead of transposing U.
// Work is split over images (or groups of small images) across the
// package's workers, each with its own tile buffers.
//
// A convolution without a bias (NewConv2dNoBias, Gorgonia's Conv2d and
// PyTorch's bias=False) keeps the same layout with the ones row zero: the
// bias column of [W | b] then adds nothing forward and its gradient and
// per-sample norm contribution are exactly zero, so the norms, the clipped
// sum and the noise cover W alone, with no second code path to keep in
// step (one unfolded row per tile more than strictly needed).
type Conv2d[T Float] struct {
	inC, inH, inW    int
	outC             int
	win              ConvWindow
	outH, outW       int
	ckk, hw          int       // unfolded rows (inC·kh·kw) without the ones row; output positions
	weight, bias     *Param[T] // bias is nil without one
	one              T         // the ones row's value: 1 with a bias, 0 without
	method           NormMethod
	cacheBytes       int
	batch            int
	x, dy            []T // taps, owned by the neighbouring layers
	y, dx            []T
	wb               []T // [W | b], outC × (ckk+1)
	scratch          []convScratch[T]
	perSample        []T // per-sample [∂W | ∂b], batch × outC × (ckk+1)
	perSampleValid   bool
	caching          bool            // SqNorms is filling perSample
	scaler           SampleScaler[T] // ClipSum is running: clip and add as the norms come
	ones, flat       []T
	scale, norms     []T
	op               convOp
	tileRows, unitNb int // the plan of the current batch
	rows             int // tile rows of the running op
	gram             bool
	transposed       *Conv2d[T] // computes ∂X of "same" convolutions
}

type convOp int

// normGroup is how many images' explicit norms are summed at once
// (sqSumRows interleaves four rows).
const normGroup = 4

const (
	convForward convOp = iota
	convBackward
	convParamGrads
	convSqNorms
	convCachedSum
)

// convScratch is one worker's tile buffers and gradient accumulator.
type convScratch[T Float] struct {
	u, du, dyt, yt, acc, g, gu, gd []T
}

// NewConv2d returns a convolution with outC filters of size k×k over
// inC×inH×inW inputs, with the given stride and zero padding on both axes;
// parameters are zero until Init. Output size is
// floor((in + 2·pad - k)/stride) + 1.
func NewConv2d[T Float](inC, inH, inW, outC, k, stride, pad int) *Conv2d[T] {
	return NewConv2dWindow[T](inC, inH, inW, outC, SquareWindow(k, stride, pad))
}

// NewConv2dWindow returns a convolution with outC filters of size
// win.KH×win.KW over inC×inH×inW inputs, with win's stride and zero padding
// on each axis; parameters are zero until Init. The weight has shape
// {outC, inC, KH, KW}.
func NewConv2dWindow[T Float](inC, inH, inW, outC int, win ConvWindow) *Conv2d[T] {
	if inC < 1 || inH < 1 || inW < 1 || outC < 1 || !win.valid(inH, inW) {
		panic(fmt.Sprintf("nn.NewConv2d: bad geometry in=%d×%d×%d out=%d, window %v (kernel and stride ≥ 1, pad ≥ 0, kernel within the padded input)",
			inC, inH, inW, outC, win))
	}
	outH, outW := win.OutHW(inH, inW)
	ckk := inC * win.KH * win.KW
	return &Conv2d[T]{
		inC: inC, inH: inH, inW: inW, outC: outC, win: win,
		outH: outH, outW: outW, ckk: ckk, hw: outH * outW,
		weight:     &Param[T]{Name: "weight", Shape: []int{outC, inC, win.KH, win.KW}, Value: make([]T, outC*ckk), Grad: make([]T, outC*ckk)},
		bias:       &Param[T]{Name: "bias", Shape: []int{outC}, Value: make([]T, outC), Grad: make([]T, outC)},
		one:        1,
		cacheBytes: DefaultCacheBytes,
		wb:         make([]T, outC*(ckk+1)),
	}
}

// NewConv2dNoBias returns a convolution like NewConv2dWindow's without a
// bias (y = W ⋆ x): the weight {outC, inC, KH, KW} is its only parameter,
// so the parameter count, the per-sample norms and the noise cover W
// alone.
func NewConv2dNoBias[T Float](inC, inH, inW, outC int, win ConvWindow) *Conv2d[T] {
	c := NewConv2dWindow[T](inC, inH, inW, outC, win)
	c.bias, c.one = nil, 0
	return c
}

// Init draws weights and bias from U(-1/√fanIn, 1/√fanIn) with
// fanIn = inC·kh·kw, PyTorch's default for convolutions (the weights alone
// without a bias).
func (c *Conv2d[T]) Init(rng *rand.Rand) {
	if c.bias == nil {
		uniformInit(rng, 1/math.Sqrt(float64(c.ckk)), c.weight.Value)
		return
	}
	uniformInit(rng, 1/math.Sqrt(float64(c.ckk)), c.weight.Value, c.bias.Value)
}

// SetNormMethod forces a per-sample norm method (NormAuto by default).
func (c *Conv2d[T]) SetNormMethod(m NormMethod) { c.method = m }

// SetCacheLimit sets how many bytes the per-sample gradients kept from
// SqNorms for ParamGrads may use (DefaultCacheBytes by default; 0 disables
// the cache).
func (c *Conv2d[T]) SetCacheLimit(bytes int) { c.cacheBytes = bytes }

// NormMethodFor reports the method SqNorms uses for a batch of this size:
// the forced one, or the one with fewer FLOPs for SqNorms plus the
// ParamGrads that follows it (explicit gradients that fit the cache make
// that ParamGrads almost free).
func (c *Conv2d[T]) NormMethodFor(batch int) NormMethod {
	if c.method != NormAuto {
		return c.method
	}
	p := c.outC * (c.ckk + 1)
	gemm := 2 * p * c.hw // one per-sample B·Uᵀ
	explicit := gemm + gemm
	if c.cacheable(batch) {
		explicit = gemm + 2*p
	}
	gram := c.hw*c.hw*(c.ckk+1+c.outC+2) + gemm
	if gram < explicit {
		return NormGram
	}
	return NormExplicit
}

// cacheable reports whether per-sample gradients of a batch fit the cache.
func (c *Conv2d[T]) cacheable(batch int) bool {
	return batch*c.outC*(c.ckk+1)*elemSize[T]() <= c.cacheBytes
}

// Name implements Layer.
func (c *Conv2d[T]) Name() string {
	nb := ""
	if c.bias == nil {
		nb = ", no bias"
	}
	return fmt.Sprintf("Conv2d(%d→%d, %v, in %dx%d%s)", c.inC, c.outC, c.win, c.inH, c.inW, nb)
}

// Window is the layer's kernel size, stride and padding per axis.
func (c *Conv2d[T]) Window() ConvWindow { return c.win }

// OutShape implements Layer: {outC, outH, outW}.
func (c *Conv2d[T]) OutShape(in []int) []int {
	mustSize("Conv2d", in, c.inC*c.inH*c.inW)
	return []int{c.outC, c.outH, c.outW}
}

// Params implements Layer: weight {outC, inC, kh, kw} then bias {outC}
// (the weight alone without a bias).
func (c *Conv2d[T]) Params() []*Param[T] {
	if c.bias == nil {
		return []*Param[T]{c.weight}
	}
	return []*Param[T]{c.weight, c.bias}
}

// Forward implements Layer. x is kept as the tap A (unfolded again by
// ParamGrads and SqNorms) and must not change until ParamGrads/SqNorms of
// this step are done.
func (c *Conv2d[T]) Forward(x []T, batch int, train bool) []T {
	mustLen(c, "input", x, batch*c.inC*c.inH*c.inW)
	c.batch, c.x, c.dy, c.perSampleValid = batch, x, nil, false
	c.y = grow(c.y, batch*c.outC*c.hw)
	for o := 0; o < c.outC; o++ {
		copy(c.wb[o*(c.ckk+1):], c.weight.Value[o*c.ckk:(o+1)*c.ckk])
		c.wb[o*(c.ckk+1)+c.ckk] = 0 // and the ones row is zero: no bias
		if c.bias != nil {
			c.wb[o*(c.ckk+1)+c.ckk] = c.bias.Value[o]
		}
	}
	c.plan()
	c.dispatch(convForward, false)
	return c.y
}

// plan chooses the tiles for the batch of the current Forward; every later
// op of the step uses the same tiles.
// Images with at least a tile's worth of output positions are one unit
// each, cut into tiles of whole output rows; smaller images are grouped into
// units of about a tile, one tile per unit.
func (c *Conv2d[T]) plan() {
	cols := tileTarget
	if cols <= 0 {
		cols = max(minTileCols, tileBytes/((c.ckk+1)*elemSize[T]()))
	}
	parts := c.parts()
	if c.hw >= cols {
		c.unitNb = 1
		c.tileRows = max(1, cols/c.outW)
	} else {
		c.unitNb = max(1, min((cols+c.hw-1)/c.hw, (c.batch+parts-1)/parts))
		c.tileRows = c.outH
	}
}

func (c *Conv2d[T]) parts() int { return partsFor(gemmNs(c.batch * c.outC * c.hw * (c.ckk + 1))) }

// Backward implements Layer. For "same" convolutions (stride 1, padding
// (k−1)/2 on each axis) the input gradient is itself such a convolution, of
// B with the flipped and transposed kernel. When outC ≤ inC it is computed
// as one: its im2col copies outC·kh·kw values per position where the
// general path (∂U = Wᵀ·B per tile, folded back by col2im) scatter-adds
// inC·kh·kw, and
// measured 15% faster on the VGG-like 32→32 layer. Channel-expanding layers
// (twice as many values to copy: measured slower) and other geometries (a
// larger product) take the general path.
//
// dy is kept (not copied) as the tap B and must not change until
// ParamGrads/SqNorms of this step are done.
func (c *Conv2d[T]) Backward(dy []T, needInput bool) []T {
	mustLen(c, "output gradient", dy, c.batch*c.outC*c.hw)
	c.dy, c.perSampleValid = dy, false
	if !needInput {
		return nil
	}
	if w := c.win; w.StrideH == 1 && w.StrideW == 1 && 2*w.PadH == w.KH-1 && 2*w.PadW == w.KW-1 && c.outC <= c.inC {
		return c.backwardAsConv(dy)
	}
	c.dx = grow(c.dx, c.batch*c.inC*c.inH*c.inW)
	c.dispatch(convBackward, false)
	return c.dx
}

// backwardAsConv computes ∂X = conv(B, W′) with W′[ci][co][ki][kj] =
// W[co][ci][kh−1−ki][kw−1−kj], stride 1 and the same padding, through a
// private Conv2d whose output buffer is the returned gradient. Reversing
// both axes of a row-major kh×kw block is reversing the block.
func (c *Conv2d[T]) backwardAsConv(dy []T) []T {
	if c.transposed == nil {
		c.transposed = NewConv2dWindow[T](c.outC, c.outH, c.outW, c.inC, c.win)
	}
	t, kk := c.transposed, c.win.KH*c.win.KW
	for co := 0; co < c.outC; co++ {
		for ci := 0; ci < c.inC; ci++ {
			src := c.weight.Value[(co*c.inC+ci)*kk : (co*c.inC+ci+1)*kk]
			dst := t.weight.Value[(ci*c.outC+co)*kk : (ci*c.outC+co+1)*kk]
			for j, v := range src {
				dst[kk-1-j] = v
			}
		}
	}
	return t.Forward(dy, c.batch, false)
}

// ParamGrads implements Layer. After an explicit SqNorms whose per-sample
// gradients were cached it is Σ_i scale_i·g_i over the cache; otherwise it
// unfolds Uᵀ again (im2row) and accumulates Σ_i scale_i·Bᵢ·Uᵢᵀ tile by
// tile.
func (c *Conv2d[T]) ParamGrads(scale []T) {
	c.mustHaveTap("ParamGrads")
	if scale != nil {
		mustLen(c, "scale", scale, c.batch)
	}
	if c.batch == 0 {
		return
	}
	if scale == nil {
		c.ones = grow(c.ones, c.batch)
		for i := range c.ones {
			c.ones[i] = 1
		}
		scale = c.ones
	}
	c.scale = scale
	p := c.outC * (c.ckk + 1)
	if c.perSampleValid {
		c.flat = grow(c.flat, p)
		c.op = convCachedSum
		grain := max(64, (p+Workers()-1)/Workers())
		parallelFor(c, p, grain, partsFor(p*c.batch/4))
		c.addFlat(c.flat, c.ckk+1)
	} else {
		parts := c.dispatch(convParamGrads, true)
		for w := 0; w < parts; w++ {
			c.addFlat(c.scratch[w].acc, c.utStride())
		}
	}
	c.scale = nil
}

// addFlat adds an outC × (ckk+1) [∂W | ∂b] block, rows ld apart, into the
// Param gradients.
func (c *Conv2d[T]) addFlat(g []T, ld int) {
	for o := 0; o < c.outC; o++ {
		row := g[o*ld : o*ld+c.ckk+1]
		addTo(c.weight.Grad[o*c.ckk:(o+1)*c.ckk], row[:c.ckk])
		if c.bias != nil { // without one, row[ckk] is zero (the ones row is)
			c.bias.Grad[o] += row[c.ckk]
		}
	}
}

// SqNorms implements Layer with the method NormMethodFor picks.
func (c *Conv2d[T]) SqNorms(out []T) {
	c.mustHaveTap("SqNorms")
	mustLen(c, "norm output", out, c.batch)
	if c.batch == 0 {
		return
	}
	c.norms = out
	c.gram = c.NormMethodFor(c.batch) == NormGram
	cache := !c.gram && c.cacheable(c.batch)
	if cache {
		c.perSample = grow(c.perSample, c.batch*c.outC*(c.ckk+1))
	}
	c.perSampleValid, c.caching = false, cache
	c.dispatch(convSqNorms, false)
	c.perSampleValid, c.caching = cache, false
	c.norms = nil
}

func (c *Conv2d[T]) mustHaveTap(op string) {
	if c.dy == nil && c.batch > 0 {
		panic(fmt.Sprintf("nn: %s.%s called before Backward", c.Name(), op))
	}
}

// dispatch runs op over the units of the current plan and returns the
// participant count.
func (c *Conv2d[T]) dispatch(op convOp, zeroAcc bool) int {
	c.op = op
	if c.batch == 0 {
		return 0
	}
	parts := c.parts()
	c.rows = c.tileRows
	if op == convSqNorms && c.gram {
		c.rows = c.outH // the Gram form needs whole images
	}
	c.reserve(parts)
	if zeroAcc {
		for w := 0; w < parts; w++ {
			clear(c.scratch[w].acc)
		}
	}
	parallelFor(c, c.batch, c.unitNb, parts)
	return parts
}

// reserve sizes every potential participant's buffers for the running op
// up front. Which helpers join a job varies from call to call, so growing
// buffers lazily would allocate long after the first step.
func (c *Conv2d[T]) reserve(parts int) {
	for len(c.scratch) < parts {
		c.scratch = append(c.scratch, convScratch[T]{})
	}
	cols := c.unitNb * c.hw
	if c.unitNb == 1 {
		cols = c.rows * c.outW
	}
	multi := c.unitNb > 1
	ldu := c.utStride() // ≥ ckk+1: U's rows, or Uᵀ's columns
	for w := 0; w < parts; w++ {
		s := &c.scratch[w]
		if c.op != convBackward { // U, or Uᵀ for ParamGrads and the explicit SqNorms
			s.u = grow(s.u, ldu*cols)
		}
		switch c.op {
		case convForward:
			if multi {
				s.yt = grow(s.yt, c.outC*cols)
			}
		case convBackward:
			s.du = grow(s.du, c.ckk*cols)
			if multi {
				s.dyt = grow(s.dyt, c.outC*cols)
			}
		case convParamGrads:
			s.acc = grow(s.acc, c.outC*ldu)
			if multi {
				s.dyt = grow(s.dyt, c.outC*cols)
			}
		case convSqNorms:
			if c.gram {
				s.gu = grow(s.gu, c.hw*c.hw)
				s.gd = grow(s.gd, c.hw*c.hw)
			} else {
				s.g = grow(s.g, min(normGroup, c.unitNb)*c.outC*ldu)
			}
			if c.scaler != nil {
				s.acc = grow(s.acc, c.outC*(c.ckk+1))
			}
		}
	}
}

// run implements ranger: images [lo, hi) (one unit) for participant w.
func (c *Conv2d[T]) run(w, lo, hi int) {
	if c.op == convCachedSum { // units are parameter indices, no scratch
		c.cachedSum(lo, hi)
		return
	}
	s := &c.scratch[w]
	if c.op == convBackward {
		clear(c.dx[lo*c.inC*c.inH*c.inW : hi*c.inC*c.inH*c.inW])
	}
	rows := c.rows
	if hi-lo > 1 {
		rows = c.outH
	}
	for oh0 := 0; oh0 < c.outH; oh0 += rows {
		oh1 := min(oh0+rows, c.outH)
		switch c.op {
		case convForward:
			c.forwardTile(s, lo, hi, oh0, oh1)
		case convBackward:
			c.backwardTile(s, lo, hi, oh0, oh1)
		case convParamGrads:
			c.paramGradsTile(s, lo, hi, oh0, oh1)
		case convSqNorms:
			c.sqNormsTile(s, lo, hi, oh0, oh1)
		}
	}
}

// tileCols is the number of unfolded columns of a tile.
func (c *Conv2d[T]) tileCols(i0, i1, oh0, oh1 int) int { return (i1 - i0) * (oh1 - oh0) * c.outW }

// tileU returns the unfolded input U of a tile (im2col) in the worker's
// buffer.
func (c *Conv2d[T]) tileU(s *convScratch[T], i0, i1, oh0, oh1 int) []T {
	s.u = grow(s.u, (c.ckk+1)*c.tileCols(i0, i1, oh0, oh1))
	c.im2col(i0, i1, oh0, oh1, s.u)
	return s.u
}

// tileUt returns the transposed unfolded input Uᵀ of a tile (im2row) in
// the worker's buffer: n rows of utStride values, ckk+1 and then zeros.
func (c *Conv2d[T]) tileUt(s *convScratch[T], i0, i1, oh0, oh1 int) []T {
	s.u = grow(s.u, c.utStride()*c.tileCols(i0, i1, oh0, oh1))
	c.im2row(i0, i1, oh0, oh1, s.u, c.utStride())
	return s.u
}

// utStride is the row length of Uᵀ and of the [∂W | ∂b] products read
// from it: ckk+1 rounded up to 32 values (the AVX-512 kernels' tile
// width), the columns beyond ckk+1 zero. The weight-gradient products then
// run over whole tiles that the kernels read in place: with ckk+1 columns
// the last, partial, tile of every block of Uᵀ was copied into a padded
// panel first, and for the MNIST CNN's conv1 (26 columns) that was all of
// it. The zero columns cost no multiply-adds the kernels did not already
// do on the padding of a partial tile, and their results (zero) are
// dropped: the other columns are the same bits as without them.
func (c *Conv2d[T]) utStride() int { return (c.ckk + 1 + 31) &^ 31 }

// uncountPadding takes the zero columns of a weight-gradient product over
// k positions back out of GemmFlops, so that the FLOPs benchmarks report
// (GFLOP per step, % of the SGEMM peak) stay the layer's work, as they were
// before the padding.
func (c *Conv2d[T]) uncountPadding(k int) {
	gemmFlops.Add(-2 * int64(c.outC) * int64(c.utStride()-c.ckk-1) * int64(k))
}

func (c *Conv2d[T]) forwardTile(s *convScratch[T], i0, i1, oh0, oh1 int) {
	n := c.tileCols(i0, i1, oh0, oh1)
	u := c.tileU(s, i0, i1, oh0, oh1)
	kk := c.ckk + 1
	if i1-i0 == 1 {
		dst := c.y[i0*c.outC*c.hw+oh0*c.outW:]
		Gemm(false, false, c.outC, n, kk, 1, c.wb, kk, u, n, 0, dst, c.hw)
		return
	}
	s.yt = grow(s.yt, c.outC*n)
	Gemm(false, false, c.outC, n, kk, 1, c.wb, kk, u, n, 0, s.yt, n)
	for i := i0; i < i1; i++ {
		for o := 0; o < c.outC; o++ {
			src := s.yt[o*n+(i-i0)*c.hw:]
			copy(c.y[(i*c.outC+o)*c.hw:(i*c.outC+o+1)*c.hw], src[:c.hw])
		}
	}
}

// tileDy returns the output gradient of a tile as an outC × n matrix and its
// leading dimension: a view into dy for one image, else a gathered copy
// (rows multiplied by the images' scale when scaled).
func (c *Conv2d[T]) tileDy(s *convScratch[T], i0, i1, oh0, oh1 int, scaled bool) ([]T, int) {
	if i1-i0 == 1 {
		return c.dy[i0*c.outC*c.hw+oh0*c.outW:], c.hw
	}
	n := c.tileCols(i0, i1, oh0, oh1)
	s.dyt = grow(s.dyt, c.outC*n)
	for i := i0; i < i1; i++ {
		f := T(1)
		if scaled {
			f = c.scale[i]
		}
		for o := 0; o < c.outC; o++ {
			src := c.dy[(i*c.outC+o)*c.hw : (i*c.outC+o+1)*c.hw]
			dst := s.dyt[o*n+(i-i0)*c.hw : o*n+(i-i0+1)*c.hw]
			if scaled {
				for j, v := range src {
					dst[j] = f * v
				}
			} else {
				copy(dst, src)
			}
		}
	}
	return s.dyt, n
}

func (c *Conv2d[T]) backwardTile(s *convScratch[T], i0, i1, oh0, oh1 int) {
	n := c.tileCols(i0, i1, oh0, oh1)
	dyt, ld := c.tileDy(s, i0, i1, oh0, oh1, false)
	s.du = grow(s.du, c.ckk*n)
	Gemm(true, false, c.ckk, n, c.outC, 1, c.wb, c.ckk+1, dyt, ld, 0, s.du, n)
	c.col2im(i0, i1, oh0, oh1, s.du)
}

func (c *Conv2d[T]) paramGradsTile(s *convScratch[T], i0, i1, oh0, oh1 int) {
	alpha := T(1)
	if i1-i0 == 1 {
		alpha = c.scale[i0]
		if alpha == 0 {
			return
		}
	}
	n := c.tileCols(i0, i1, oh0, oh1)
	ut, ldu := c.tileUt(s, i0, i1, oh0, oh1), c.utStride()
	dyt, ld := c.tileDy(s, i0, i1, oh0, oh1, true)
	Gemm(false, false, c.outC, ldu, n, alpha, dyt, ld, ut, ldu, 1, s.acc, ldu)
	c.uncountPadding(n)
}

func (c *Conv2d[T]) sqNormsTile(s *convScratch[T], i0, i1, oh0, oh1 int) {
	n := c.tileCols(i0, i1, oh0, oh1)
	kk := c.ckk + 1
	p := c.outC * kk
	if c.gram {
		u := c.tileU(s, i0, i1, oh0, oh1)
		// Whole images only (dispatch guarantees it): per image, the upper
		// triangles of UᵢᵀUᵢ and BᵢᵀBᵢ, then their Frobenius product.
		s.gu = grow(s.gu, c.hw*c.hw)
		s.gd = grow(s.gd, c.hw*c.hw)
		for i := i0; i < i1; i++ {
			syrkUpper(true, c.hw, kk, 1, u[(i-i0)*c.hw:], n, 0, s.gu, c.hw)
			syrkUpper(true, c.hw, c.outC, 1, c.dy[i*c.outC*c.hw:], c.hw, 0, s.gd, c.hw)
			var diag, off float64
			for q := 0; q < c.hw; q++ {
				row := q * c.hw
				diag += float64(s.gu[row+q]) * float64(s.gd[row+q])
				off += dot(s.gu[row+q+1:row+c.hw], s.gd[row+q+1:row+c.hw])
			}
			c.norms[i] += T(diag + 2*off)
		}
		return
	}
	ut, ldu := c.tileUt(s, i0, i1, oh0, oh1), c.utStride()
	seg := (oh1 - oh0) * c.outW
	beta := T(1)
	if oh0 == 0 {
		beta = 0
	}
	// Images go normGroup at a time: their products first, then their
	// norms in one sqSumRows call, which runs their four add chains at
	// once: one norm at a time is bound by its add chain's latency (about
	// 1 % of the MNIST CNN's DP step's CPU time). Eight at a time (its FMA
	// kernel) measured the same, with twice the buffer.
	var sq [normGroup]float64
	for q0 := i0; q0 < i1; q0 += normGroup {
		q1 := min(q0+normGroup, i1)
		for i := q0; i < q1; i++ {
			// B for image i restricted to the tile, against its rows of
			// Uᵀ, summed over the image's row tiles in its block of s.g
			// (rows ldu apart; an image of several tiles is a unit alone).
			bi := c.dy[i*c.outC*c.hw+oh0*c.outW:]
			Gemm(false, false, c.outC, ldu, seg, 1, bi, c.hw, ut[(i-i0)*seg*ldu:], ldu, beta, s.g[(i-q0)*c.outC*ldu:], ldu)
			c.uncountPadding(seg)
		}
		if oh1 < c.outH {
			continue
		}
		// Packed to rows of ckk+1, in the cache or in place (every row
		// moves left, past rows already moved, so copy's overlap is safe):
		// the norm sums the same values in the same order as before the
		// padding.
		rows := s.g
		if c.caching {
			rows = c.perSample[q0*p:]
		}
		for k := range q1 - q0 {
			src, g := s.g[k*c.outC*ldu:], rows[k*p:(k+1)*p]
			for o := 0; o < c.outC; o++ {
				copy(g[o*kk:(o+1)*kk], src[o*ldu:o*ldu+kk])
			}
		}
		sqSumRows(rows, p, p, sq[:q1-q0])
		for k := range q1 - q0 {
			c.norms[q0+k] += T(sq[k])
			if c.scaler != nil {
				if f := c.scaler.SampleScale(q0 + k); f != 0 {
					axpy(f, rows[k*p:(k+1)*p], s.acc[:p])
				}
			}
		}
	}
}

// cachedSum computes flat[lo:hi] = Σ_i scale_i·perSample_i[lo:hi].
func (c *Conv2d[T]) cachedSum(lo, hi int) {
	p := c.outC * (c.ckk + 1)
	Gemm(false, false, 1, hi-lo, c.batch, 1, c.scale, c.batch, c.perSample[lo:], p, 0, c.flat[lo:], hi-lo)
}

// validCols returns the output columns [lo, hi) whose kernel tap kj falls
// inside the input row (the others read zero padding).
func (c *Conv2d[T]) validCols(kj int) (lo, hi int) {
	pad, stride := c.win.PadW, c.win.StrideW
	if d := pad - kj; d > 0 {
		lo = (d + stride - 1) / stride
	}
	if last := c.inW - 1 + pad - kj; last >= 0 {
		hi = min(c.outW, last/stride+1)
	}
	lo = min(lo, c.outW)
	return lo, max(lo, hi)
}

// im2col unfolds output rows [oh0, oh1) of images [i0, i1) into u, a
// (ckk+1) × n matrix (n = tile columns, image-major then row-major
// positions); row r = (ci·kh + ki)·kw + kj matches W's layout and the last
// row is all ones for the bias (zeros without one).
func (c *Conv2d[T]) im2col(i0, i1, oh0, oh1 int, u []T) {
	if c.win.StrideW == 1 {
		c.im2colStride1(i0, i1, oh0, oh1, u)
		return
	}
	c.im2colStrided(i0, i1, oh0, oh1, u)
}

// im2colStrided is im2col for any stride, one value at a time (the
// reference the stride-1 path is tested against).
func (c *Conv2d[T]) im2colStrided(i0, i1, oh0, oh1 int, u []T) {
	n := c.tileCols(i0, i1, oh0, oh1)
	seg := (oh1 - oh0) * c.outW
	plane := c.inH * c.inW
	outW, inW, stride := c.outW, c.inW, c.win.StrideW
	kh, kw, strideH, padH := c.win.KH, c.win.KW, c.win.StrideH, c.win.PadH
	for ci := 0; ci < c.inC; ci++ {
		for ki := 0; ki < kh; ki++ {
			for kj := 0; kj < kw; kj++ {
				r := (ci*kh+ki)*kw + kj
				urow := u[r*n : (r+1)*n]
				lo, hi := c.validCols(kj)
				off := kj - c.win.PadW
				for i := i0; i < i1; i++ {
					src := c.x[(i*c.inC+ci)*plane : (i*c.inC+ci+1)*plane]
					dst := urow[(i-i0)*seg : (i-i0+1)*seg]
					for oh := oh0; oh < oh1; oh++ {
						d := dst[(oh-oh0)*outW : (oh-oh0+1)*outW]
						ih := oh*strideH - padH + ki
						if ih < 0 || ih >= c.inH || lo == hi {
							clear(d)
							continue
						}
						for j := range lo {
							d[j] = 0
						}
						for j := hi; j < outW; j++ {
							d[j] = 0
						}
						in := src[ih*inW : (ih+1)*inW]
						for ow := lo; ow < hi; ow++ {
							d[ow] = in[ow*stride+off]
						}
					}
				}
			}
		}
	}
	ones := u[c.ckk*n : (c.ckk+1)*n]
	for j := range ones {
		ones[j] = c.one
	}
}

// col2im adds the unfolded gradient du (ckk × n, the layout of im2col
// without the ones row) back into dx: the adjoint of im2col.
func (c *Conv2d[T]) col2im(i0, i1, oh0, oh1 int, du []T) {
	if c.win.StrideW == 1 {
		c.col2imStride1(i0, i1, oh0, oh1, du)
		return
	}
	c.col2imStrided(i0, i1, oh0, oh1, du)
}

// col2imStrided is col2im for any stride, one value at a time (the
// reference the stride-1 path is tested against).
func (c *Conv2d[T]) col2imStrided(i0, i1, oh0, oh1 int, du []T) {
	n := c.tileCols(i0, i1, oh0, oh1)
	seg := (oh1 - oh0) * c.outW
	plane := c.inH * c.inW
	outW, inW, stride := c.outW, c.inW, c.win.StrideW
	kh, kw, strideH, padH := c.win.KH, c.win.KW, c.win.StrideH, c.win.PadH
	for ci := 0; ci < c.inC; ci++ {
		for ki := 0; ki < kh; ki++ {
			for kj := 0; kj < kw; kj++ {
				r := (ci*kh+ki)*kw + kj
				urow := du[r*n : (r+1)*n]
				lo, hi := c.validCols(kj)
				if lo == hi {
					continue
				}
				off := kj - c.win.PadW
				for i := i0; i < i1; i++ {
					dst := c.dx[(i*c.inC+ci)*plane : (i*c.inC+ci+1)*plane]
					src := urow[(i-i0)*seg : (i-i0+1)*seg]
					for oh := oh0; oh < oh1; oh++ {
						ih := oh*strideH - padH + ki
						if ih < 0 || ih >= c.inH {
							continue
						}
						g := src[(oh-oh0)*outW : (oh-oh0+1)*outW]
						out := dst[ih*inW : (ih+1)*inW]
						for ow := lo; ow < hi; ow++ {
							out[ow*stride+off] += g[ow]
						}
					}
				}
			}
		}
	}
}

// insideRows returns the output rows [a, b) within [oh0, oh1) whose input
// row oh·strideH − padH + ki lies inside the image (the others read zero
// padding).
func (c *Conv2d[T]) insideRows(ki, oh0, oh1 int) (a, b int) {
	s, p := c.win.StrideH, c.win.PadH
	a, b = oh0, oh1
	if d := p - ki; d > 0 {
		a = max(a, (d+s-1)/s)
	}
	if last := c.inH - 1 + p - ki; last >= 0 {
		b = min(b, last/s+1)
	} else {
		b = a
	}
	a = min(a, oh1)
	return a, max(a, b)
}

// im2row unfolds output rows [oh0, oh1) of images [i0, i1) into ut, the
// transpose of im2col's U: an n × (ckk+1) matrix, rows ld apart, with one
// row per output position (in the order of U's columns), column r =
// (ci·kh + ki)·kw + kj, the column ckk all ones and the columns after it,
// to ld, zero. A position whose window lies inside the input
// is inC·kh kernel rows of kw contiguous input values; movePieces moves
// them for a run of such positions at once. Positions whose window reaches
// into the padding take im2rowEdge.
func (c *Conv2d[T]) im2row(i0, i1, oh0, oh1 int, ut []T, ld int) {
	plane := c.inH * c.inW
	w := c.win
	// Output columns whose kernel row lies inside the input row.
	owLo := min(c.outW, (w.PadW+w.StrideW-1)/w.StrideW)
	owHi := owLo
	if last := c.inW + w.PadW - w.KW; last >= 0 {
		owHi = max(owLo, min(c.outW, last/w.StrideW+1))
	}
	p := 0
	for i := i0; i < i1; i++ {
		for oh := oh0; oh < oh1; oh++ {
			ih0 := oh*w.StrideH - w.PadH
			lo, hi := owLo, owHi
			if ih0 < 0 || ih0+w.KH > c.inH {
				lo, hi = 0, 0
			}
			if hi > lo {
				movePieces(ut[(p+lo)*ld:], c.x[i*c.inC*plane+ih0*c.inW+lo*w.StrideW-w.PadW:], pieceMove{
					outer: hi - lo, groups: c.inC, pieces: w.KH, body: w.KW,
					ldo: ld, lso: w.StrideW, lsg: plane, lsp: c.inW,
				})
			}
			for ow := 0; ow < c.outW; ow++ {
				d := ut[(p+ow)*ld : (p+ow+1)*ld]
				d[c.ckk] = c.one
				clear(d[c.ckk+1:])
				if ow < lo || ow >= hi {
					c.im2rowEdge(i, oh, ow, d[:c.ckk])
				}
			}
			p += c.outW
		}
	}
}

// im2rowEdge writes the unfolded values of one output position value by
// value, zeros where the window reads padding.
func (c *Conv2d[T]) im2rowEdge(i, oh, ow int, d []T) {
	w := c.win
	plane := c.inH * c.inW
	for ci := 0; ci < c.inC; ci++ {
		x := c.x[(i*c.inC+ci)*plane : (i*c.inC+ci+1)*plane]
		for ki := 0; ki < w.KH; ki++ {
			ih := oh*w.StrideH - w.PadH + ki
			row := d[(ci*w.KH+ki)*w.KW : (ci*w.KH+ki+1)*w.KW]
			for kj := range row {
				iw := ow*w.StrideW - w.PadW + kj
				if ih < 0 || ih >= c.inH || iw < 0 || iw >= c.inW {
					row[kj] = 0
					continue
				}
				row[kj] = x[ih*c.inW+iw]
			}
		}
	}
}

// forTaps calls f for every kernel tap (ci, ki, kj), in order, with its
// row r of U, the output rows [a, b) of the tile [oh0, oh1) and the output
// columns [lo, hi) whose input lies inside the image for that tap (a == b
// or lo == hi: it reads only padding), and, when it reads something, the
// index in x of the value it reads for image 0's first such position (add
// i·inC·inH·inW for image i). Column stride 1 only.
func (c *Conv2d[T]) forTaps(oh0, oh1 int, f func(r, a, b, lo, hi, xoff int)) {
	w := c.win
	plane := c.inH * c.inW
	for ci := 0; ci < c.inC; ci++ {
		for ki := 0; ki < w.KH; ki++ {
			a, b := c.insideRows(ki, oh0, oh1)
			for kj := 0; kj < w.KW; kj++ {
				lo, hi := c.validCols(kj)
				xoff := 0
				if a < b && lo < hi {
					xoff = ci*plane + (a*w.StrideH-w.PadH+ki)*c.inW + lo + kj - w.PadW
				}
				f((ci*w.KH+ki)*w.KW+kj, a, b, lo, hi, xoff)
			}
		}
	}
}

// im2colStride1 is im2col for column stride 1: the unfolded row of tap
// (ci, ki, kj) over one image is input rows a·s−p+ki, (a+1)·s−p+ki, …
// (s the row stride, p the row padding) shifted by kj and padded with
// zeros, and one movePieces call moves them for every image of the tile.
func (c *Conv2d[T]) im2colStride1(i0, i1, oh0, oh1 int, u []T) {
	n := c.tileCols(i0, i1, oh0, oh1)
	seg := (oh1 - oh0) * c.outW
	outW, image := c.outW, c.inC*c.inH*c.inW
	c.forTaps(oh0, oh1, func(r, a, b, lo, hi, xoff int) {
		urow := u[r*n : (r+1)*n]
		if a == b || lo == hi {
			clear(urow)
			return
		}
		if a > oh0 || b < oh1 { // rows reading padding above or below
			for i := range i1 - i0 {
				dst := urow[i*seg : (i+1)*seg]
				clear(dst[:(a-oh0)*outW])
				clear(dst[(b-oh0)*outW:])
			}
		}
		movePieces(urow[(a-oh0)*outW:], c.x[i0*image+xoff:], pieceMove{
			outer: i1 - i0, groups: 1, pieces: b - a,
			lead: lo, body: hi - lo, trail: outW - hi,
			ldo: seg, lso: image, lsp: c.win.StrideH * c.inW,
		})
	})
	ones := u[c.ckk*n : (c.ckk+1)*n]
	for j := range ones {
		ones[j] = c.one
	}
}

// col2imStride1 is col2im for column stride 1: the adjoint of
// im2colStride1, each tap's rows added back for every image in one addRows
// call. Every input-gradient value gets its taps' contributions in the
// same order as in the general loop (ki, then kj), so the sums are the
// same bits.
func (c *Conv2d[T]) col2imStride1(i0, i1, oh0, oh1 int, du []T) {
	n := c.tileCols(i0, i1, oh0, oh1)
	seg := (oh1 - oh0) * c.outW
	image := c.inC * c.inH * c.inW
	c.forTaps(oh0, oh1, func(r, a, b, lo, hi, xoff int) {
		if a == b || lo == hi {
			return
		}
		addRows(c.dx[i0*image+xoff:], du[r*n+(a-oh0)*c.outW+lo:(r+1)*n], rowAdd{
			blocks: i1 - i0, rows: b - a, w: hi - lo,
			ldd: c.win.StrideH * c.inW, lds: c.outW, ldd2: image, lds2: seg,
		})
	})
}
