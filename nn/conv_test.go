package nn_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/fairdp/fairdp/nn"
)

// TestConvNormMethodChoice checks the FLOP-count rule on layer sizes with
// known answers: explicit per-sample gradients win whenever they fit the
// cache (ParamGrads then reuses them), the Gram form wins for tiny feature
// maps or when nothing may be cached and H·W is small.
func TestConvNormMethodChoice(t *testing.T) {
	cases := []struct {
		name                           string
		inC, h, w, outC, k, pad, cache int
		batch                          int
		want                           nn.NormMethod
	}{
		{"MNIST conv1", 1, 28, 28, 20, 5, 0, nn.DefaultCacheBytes, 256, nn.NormExplicit},
		{"MNIST conv2", 20, 12, 12, 50, 5, 0, nn.DefaultCacheBytes, 256, nn.NormExplicit},
		{"MNIST conv2, no cache", 20, 12, 12, 50, 5, 0, 0, 256, nn.NormGram},
		{"VGG conv6, no cache", 128, 32, 32, 128, 3, 1, 0, 64, nn.NormExplicit},
		{"1×1 output", 64, 2, 2, 64, 2, 0, nn.DefaultCacheBytes, 64, nn.NormGram},
		{"cache too small for the batch", 20, 12, 12, 50, 5, 0, 1 << 20, 256, nn.NormGram},
	}
	for _, c := range cases {
		conv := nn.NewConv2d[float32](c.inC, c.h, c.w, c.outC, c.k, 1, c.pad)
		conv.SetCacheLimit(c.cache)
		if got := conv.NormMethodFor(c.batch); got != c.want {
			t.Errorf("%s: NormMethodFor(%d) = %v, want %v", c.name, c.batch, got, c.want)
		}
	}
	conv := nn.NewConv2d[float32](1, 28, 28, 20, 5, 1, 0)
	conv.SetNormMethod(nn.NormGram)
	if got := conv.NormMethodFor(256); got != nn.NormGram {
		t.Errorf("forced Gram: NormMethodFor = %v", got)
	}
}

// TestConvNormMethodsAgree forces each method on twin layers with the same
// parameters and compares their per-sample norms and scaled gradients.
func TestConvNormMethodsAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const batch = 5
	mk := func(m nn.NormMethod) *nn.Conv2d[float64] {
		c := nn.NewConv2d[float64](3, 9, 8, 4, 3, 2, 1)
		c.SetNormMethod(m)
		return c
	}
	explicit, gram := mk(nn.NormExplicit), mk(nn.NormGram)
	explicit.Init(rand.New(rand.NewPCG(1, 1)))
	gram.Init(rand.New(rand.NewPCG(1, 1)))
	x := randVec(rng, batch*3*9*8, 1)
	out := explicit.OutShape([]int{3, 9, 8})
	dy := randVec(rng, batch*out[0]*out[1]*out[2], 1)
	scale := randVec(rng, batch, 1)
	var norms [2][]float64
	var grads [2][]float64
	for k, c := range []*nn.Conv2d[float64]{explicit, gram} {
		c.Forward(x, batch, true)
		c.Backward(dy, true)
		norms[k] = make([]float64, batch)
		c.SqNorms(norms[k])
		nn.ZeroGrads(c.Params())
		c.ParamGrads(scale)
		grads[k] = append(append([]float64(nil), c.Params()[0].Grad...), c.Params()[1].Grad...)
	}
	for i := range norms[0] {
		if math.Abs(norms[0][i]-norms[1][i]) > 1e-10*norms[0][i] {
			t.Errorf("sample %d: explicit ‖g‖² = %.15g, Gram form %.15g", i, norms[0][i], norms[1][i])
		}
	}
	for j := range grads[0] {
		if math.Abs(grads[0][j]-grads[1][j]) > 1e-10*(1+math.Abs(grads[0][j])) {
			t.Errorf("ParamGrads(scale)[%d]: %.15g (cached explicit) vs %.15g (re-unfolded)", j, grads[0][j], grads[1][j])
		}
	}
}

// TestConvForwardByHand checks a 1-channel 3×3 input, 2×2 kernel, stride 1,
// pad 0, bias 0.5 against values computed by hand.
func TestConvForwardByHand(t *testing.T) {
	c := nn.NewConv2d[float64](1, 3, 3, 1, 2, 1, 0)
	copy(c.Params()[0].Value, []float64{1, 2, 3, 4})
	c.Params()[1].Value[0] = 0.5
	x := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9}
	// [1 2;4 5]·[1 2;3 4] = 1+4+12+20 = 37, then 47, 67, 77; +0.5.
	want := []float64{37.5, 47.5, 67.5, 77.5}
	y := c.Forward(x, 1, true)
	for i := range want {
		if y[i] != want[i] {
			t.Errorf("y[%d] = %v, want %v", i, y[i], want[i])
		}
	}
	// With padding 1 and stride 2 the output is 2×2: corners of the
	// padded input, e.g. top-left sees only x[0]·w[3] = 4.
	p := nn.NewConv2d[float64](1, 3, 3, 1, 2, 2, 1)
	copy(p.Params()[0].Value, []float64{1, 2, 3, 4})
	wantP := []float64{4, 2*3 + 3*4, 4*2 + 7*4, 5*1 + 6*2 + 8*3 + 9*4}
	yp := p.Forward(x, 1, true)
	for i := range wantP {
		if yp[i] != wantP[i] {
			t.Errorf("padded y[%d] = %v, want %v", i, yp[i], wantP[i])
		}
	}
}

// directConv is the textbook convolution, written independently of
// Conv2d's im2col, tiles and GEMMs: per sample i the output y, the input
// gradient dx for the output gradient dy, and the sample's own parameter
// gradient g[i] (weight {outC, inC, KH, KW} then bias {outC}), all from
// loops over output positions and kernel taps that skip the zero padding.
func directConv(x, w, b, dy []float64, batch, inC, inH, inW, outC int, win nn.ConvWindow) (y, dx []float64, g [][]float64) {
	outH := (inH+2*win.PadH-win.KH)/win.StrideH + 1
	outW := (inW+2*win.PadW-win.KW)/win.StrideW + 1
	y = make([]float64, batch*outC*outH*outW)
	dx = make([]float64, len(x))
	wIdx := func(o, ci, ki, kj int) int { return ((o*inC+ci)*win.KH+ki)*win.KW + kj }
	for i := range batch {
		gi := make([]float64, len(w)+len(b))
		for o := range outC {
			for oh := range outH {
				for ow := range outW {
					yi := ((i*outC+o)*outH+oh)*outW + ow
					sum, d := b[o], dy[yi]
					for ci := range inC {
						for ki := range win.KH {
							for kj := range win.KW {
								ih, iw := oh*win.StrideH-win.PadH+ki, ow*win.StrideW-win.PadW+kj
								if ih < 0 || ih >= inH || iw < 0 || iw >= inW {
									continue
								}
								xi := ((i*inC+ci)*inH+ih)*inW + iw
								sum += w[wIdx(o, ci, ki, kj)] * x[xi]
								gi[wIdx(o, ci, ki, kj)] += d * x[xi]
								dx[xi] += d * w[wIdx(o, ci, ki, kj)]
							}
						}
					}
					y[yi] = sum
					gi[len(w)+o] += d
				}
			}
		}
		g = append(g, gi)
	}
	return y, dx, g
}

// TestConvMatchesDirectLoop checks Conv2d against directConv on square and
// per-axis windows (a 3×5 kernel with stride (2,1) and pad (1,2); a "same"
// 3×5 window whose input gradient is computed as a convolution; a 5×2
// kernel striding along H only), both norm methods, with and without the
// caches, and with tiles small enough to cut images into row tiles: the
// output, the input gradient, every per-sample squared gradient norm and
// the per-sample clipped gradient sum Σ_i min(1, C/‖g_i‖)·g_i to 1e-12.
func TestConvMatchesDirectLoop(t *testing.T) {
	defer func(old int) { *nn.TileTarget = old }(*nn.TileTarget)
	type geom struct {
		inC, inH, inW, outC int
		win                 nn.ConvWindow
	}
	geoms := []geom{
		{2, 7, 9, 3, nn.ConvWindow{KH: 3, KW: 5, StrideH: 2, StrideW: 1, PadH: 1, PadW: 2}},
		{3, 6, 7, 2, nn.ConvWindow{KH: 3, KW: 5, StrideH: 1, StrideW: 1, PadH: 1, PadW: 2}},
		{2, 8, 5, 3, nn.ConvWindow{KH: 5, KW: 2, StrideH: 3, StrideW: 1, PadH: 0, PadW: 1}},
		{2, 9, 8, 4, nn.SquareWindow(3, 2, 1)},
	}
	rng := rand.New(rand.NewPCG(15, 16))
	const batch, clip = 6, 1.5 // 6: a group of four norms and a remainder
	for _, gm := range geoms {
		for _, tile := range []int{0, 7} {
			*nn.TileTarget = tile
			for _, m := range []nn.NormMethod{nn.NormExplicit, nn.NormGram} {
				for _, cache := range []int{0, nn.DefaultCacheBytes} {
					c := nn.NewConv2dWindow[float64](gm.inC, gm.inH, gm.inW, gm.outC, gm.win)
					c.SetNormMethod(m)
					c.SetCacheLimit(cache)
					name := fmt.Sprintf("%s/%v/tile%d/cache%d", c.Name(), m, tile, cache)
					c.Init(rng)
					w, b := c.Params()[0].Value, c.Params()[1].Value
					x := randVec(rng, batch*gm.inC*gm.inH*gm.inW, 1)
					out := c.OutShape([]int{gm.inC, gm.inH, gm.inW})
					dy := randVec(rng, batch*out[0]*out[1]*out[2], 1)
					wantY, wantDx, g := directConv(x, w, b, dy, batch, gm.inC, gm.inH, gm.inW, gm.outC, gm.win)
					if len(wantY) != len(dy) {
						t.Fatalf("%s: OutShape %v, the direct loop gives %d outputs", name, out, len(wantY)/batch)
					}
					y := slices.Clone(c.Forward(x, batch, true))
					dx := slices.Clone(c.Backward(dy, true))
					norms := make([]float64, batch)
					c.SqNorms(norms)
					scale := make([]float64, batch)
					wantClipped := make([]float64, len(w)+len(b))
					for i, gi := range g {
						var sq float64
						for _, v := range gi {
							sq += v * v
						}
						if d := math.Abs(norms[i] - sq); d > 1e-12*sq {
							t.Errorf("%s: SqNorms[%d] = %.15g, direct loop %.15g", name, i, norms[i], sq)
						}
						scale[i] = min(1, clip/math.Sqrt(sq))
						for j, v := range gi {
							wantClipped[j] += scale[i] * v
						}
					}
					nn.ZeroGrads(c.Params())
					c.ParamGrads(scale)
					got := append(slices.Clone(c.Params()[0].Grad), c.Params()[1].Grad...)
					for _, chk := range []struct {
						what      string
						got, want []float64
					}{{"output", y, wantY}, {"input gradient", dx, wantDx}, {"clipped gradient sum", got, wantClipped}} {
						if e := maxRelErr(chk.got, chk.want); e > 1e-12 {
							t.Errorf("%s: %s differs from the direct loop: rel err %.3g", name, chk.what, e)
						}
					}
					// ClipSum (whatever the method): the same norms added to
					// what the other blocks left in sq, and the clipped sum
					// with the factors of the totals.
					sq, calls := clipSum(c, batch, 4, clip)
					wantFused := make([]float64, len(w)+len(b))
					for i, gi := range g {
						var own float64
						for _, v := range gi {
							own += v * v
						}
						total := own + float64(i)/4
						if d := math.Abs(sq[i] - total); d > 1e-12*total {
							t.Errorf("%s: ClipSum's sq[%d] = %.15g, want %.15g", name, i, sq[i], total)
						}
						if calls[i] != 1 {
							t.Errorf("%s: ClipSum asked sample %d's factor %d times", name, i, calls[i])
						}
						f := min(1, clip/math.Sqrt(total))
						for j, v := range gi {
							wantFused[j] += f * v
						}
					}
					got = append(slices.Clone(c.Params()[0].Grad), c.Params()[1].Grad...)
					if e := maxRelErr(got, wantFused); e > 1e-12 {
						t.Errorf("%s: ClipSum's clipped sum differs from the direct loop: rel err %.3g", name, e)
					}
				}
			}
		}
	}
}

// recordingScaler is an nn.SampleScaler that clips the totals in sq at
// clip and counts its calls per sample (each sample's from one goroutine).
type recordingScaler[T nn.Float] struct {
	sq    []T
	clip  float64
	calls []int
}

func (r *recordingScaler[T]) SampleScale(i int) T {
	r.calls[i]++
	return T(min(1, r.clip/math.Sqrt(float64(r.sq[i]))))
}

// clipSum clears c's gradients and runs ClipSum as the last block of a
// clipper whose other blocks left i/div in sample i's sq, clipping the
// totals at clip; it returns the totals and each sample's factor calls.
func clipSum[T nn.Float](c *nn.Conv2d[T], batch int, div, clip float64) ([]T, []int) {
	sq := make([]T, batch)
	for i := range sq {
		sq[i] = T(float64(i) / div)
	}
	sc := &recordingScaler[T]{sq: sq, clip: clip, calls: make([]int, batch)}
	nn.ZeroGrads(c.Params())
	c.ClipSum(sq, sc)
	return sq, sc.calls
}

// TestConvClipSumMatchesSqNorms checks in float32, on image groups, row
// tiles and one unit per worker, that ClipSum's norms are bit for bit
// SqNorms' (the clipper's fused path promises the unfused factors) and its
// clipped sum is ParamGrads' with the same factors up to float32 rounding
// of a different summation order.
func TestConvClipSumMatchesSqNorms(t *testing.T) {
	defer func(old int) { *nn.TileTarget = old }(*nn.TileTarget)
	defer func(old int) { *nn.HelperNs = old }(*nn.HelperNs)
	*nn.HelperNs = 0 // every job on every worker
	rng := rand.New(rand.NewPCG(17, 18))
	const batch, clip = 11, 0.8
	for _, tile := range []int{0, 7, 150} {
		*nn.TileTarget = tile
		c := nn.NewConv2d[float32](3, 10, 9, 5, 3, 1, 1)
		c.Init(rng)
		name := fmt.Sprintf("%s/tile%d", c.Name(), tile)
		c.Forward(to32(randVec(rng, batch*3*10*9, 1)), batch, true)
		c.Backward(to32(randVec(rng, batch*5*10*9, 1)), true)
		want := make([]float32, batch)
		for i := range want {
			want[i] = float32(float64(i) / 3) // as clipSum sets sq
		}
		c.SqNorms(want)
		scale := make([]float32, batch)
		for i, v := range want {
			scale[i] = float32(min(1, clip/math.Sqrt(float64(v))))
		}
		nn.ZeroGrads(c.Params())
		c.ParamGrads(scale)
		wantGrad := append(slices.Clone(c.Params()[0].Grad), c.Params()[1].Grad...)

		sq, calls := clipSum(c, batch, 3, clip)
		for i := range sq {
			if math.Float32bits(sq[i]) != math.Float32bits(want[i]) {
				t.Errorf("%s: sample %d: ClipSum's norm² %v, SqNorms' %v", name, i, sq[i], want[i])
			}
			if calls[i] != 1 {
				t.Errorf("%s: ClipSum asked sample %d's factor %d times", name, i, calls[i])
			}
		}
		got := append(slices.Clone(c.Params()[0].Grad), c.Params()[1].Grad...)
		g64, w64 := make([]float64, len(got)), make([]float64, len(got))
		for j := range got {
			g64[j], w64[j] = float64(got[j]), float64(wantGrad[j])
		}
		if e := maxRelErr(g64, w64); e > 1e-5 {
			t.Errorf("%s: ClipSum's clipped sum differs from ParamGrads': rel err %.3g", name, e)
		}
	}
}

// maxRelErr is max|got − want| / max|want|.
func maxRelErr(got, want []float64) float64 {
	var d, s float64
	for i := range want {
		d = max(d, math.Abs(got[i]-want[i]))
		s = max(s, math.Abs(want[i]))
	}
	return d / s
}
