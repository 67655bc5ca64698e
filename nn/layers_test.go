package nn_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/fairdp/fairdp/nn"
	"github.com/fairdp/fairdp/nn/nntest"
)

// Every layer goes through nntest.CheckLayer: Backward and ParamGrads(nil)
// against central finite differences (float64, rel err ≤ 1e-6), and
// SqNorms / ParamGrads(scale) against a loop of batch-of-one passes (rel err
// ≤ 1e-9 in float64, ≤ 1e-4 in float32). Batches 0 and 1 are included, as
// are odd sizes, and a batch larger than the last one (buffers grow) after
// smaller ones (buffers are reused).

var batches = []int{3, 1, 0, 7}

// rect35 is the per-axis window the rectangular checks share.
var rect35 = nn.ConvWindow{KH: 3, KW: 5, StrideH: 2, StrideW: 1, PadH: 1, PadW: 2}

type layerCase struct {
	name    string
	inShape []int
	make64  func() nn.Layer[float64]
	make32  func() nn.Layer[float32]
}

func convCase(inC, h, w, outC, k, stride, pad int, m nn.NormMethod, cacheBytes int) layerCase {
	return convWindowCase(inC, h, w, outC, nn.SquareWindow(k, stride, pad), m, cacheBytes)
}

func convWindowCase(inC, h, w, outC int, win nn.ConvWindow, m nn.NormMethod, cacheBytes int) layerCase {
	return convFormCase(inC, h, w, outC, win, m, cacheBytes, false)
}

// convFormCase is a convolution case with or without a bias (noBias:
// NewConv2dNoBias, whose norms must leave out the zero ones row's column).
func convFormCase(inC, h, w, outC int, win nn.ConvWindow, m nn.NormMethod, cacheBytes int, noBias bool) layerCase {
	name := fmt.Sprintf("Conv2d(%d,%dx%d→%d,%v,%v,cache=%d)", inC, h, w, outC, win, m, cacheBytes)
	make := nn.NewConv2dWindow[float64]
	make32 := nn.NewConv2dWindow[float32]
	if noBias {
		name += ",no-bias"
		make, make32 = nn.NewConv2dNoBias[float64], nn.NewConv2dNoBias[float32]
	}
	return layerCase{
		name:    name,
		inShape: []int{inC, h, w},
		make64: func() nn.Layer[float64] {
			c := make(inC, h, w, outC, win)
			c.SetNormMethod(m)
			c.SetCacheLimit(cacheBytes)
			return c
		},
		make32: func() nn.Layer[float32] {
			c := make32(inC, h, w, outC, win)
			c.SetNormMethod(m)
			c.SetCacheLimit(cacheBytes)
			return c
		},
	}
}

func layerCases() []layerCase {
	cases := []layerCase{
		{"Linear(3→2)", []int{3}, func() nn.Layer[float64] { return nn.NewLinear[float64](3, 2) }, func() nn.Layer[float32] { return nn.NewLinear[float32](3, 2) }},
		{"Linear(17→5)", []int{17}, func() nn.Layer[float64] { return nn.NewLinear[float64](17, 5) }, func() nn.Layer[float32] { return nn.NewLinear[float32](17, 5) }},
		{"Linear(102→1)", []int{102}, func() nn.Layer[float64] { return nn.NewLinear[float64](102, 1) }, func() nn.Layer[float32] { return nn.NewLinear[float32](102, 1) }},
		{"Linear(2x3x2→4)", []int{2, 3, 2}, func() nn.Layer[float64] { return nn.NewLinear[float64](12, 4) }, func() nn.Layer[float32] { return nn.NewLinear[float32](12, 4) }},
		{"Linear(9→4, no bias)", []int{9}, func() nn.Layer[float64] { return nn.NewLinearNoBias[float64](9, 4) }, func() nn.Layer[float32] { return nn.NewLinearNoBias[float32](9, 4) }},
		{"Linear(6→1, no bias)", []int{6}, func() nn.Layer[float64] { return nn.NewLinearNoBias[float64](6, 1) }, func() nn.Layer[float32] { return nn.NewLinearNoBias[float32](6, 1) }},
		{"MaxPool2d(2) odd", []int{2, 5, 7}, func() nn.Layer[float64] { return nn.NewMaxPool2d[float64](2, 5, 7, 2) }, func() nn.Layer[float32] { return nn.NewMaxPool2d[float32](2, 5, 7, 2) }},
		{"MaxPool2d(3)", []int{3, 9, 6}, func() nn.Layer[float64] { return nn.NewMaxPool2d[float64](3, 9, 6, 3) }, func() nn.Layer[float32] { return nn.NewMaxPool2d[float32](3, 9, 6, 3) }},
		{"ReLU", []int{3, 4, 5}, func() nn.Layer[float64] { return nn.NewReLU[float64]() }, func() nn.Layer[float32] { return nn.NewReLU[float32]() }},
		{"Tanh", []int{7}, func() nn.Layer[float64] { return nn.NewTanh[float64]() }, func() nn.Layer[float32] { return nn.NewTanh[float32]() }},
		{"LeakyReLU", []int{2, 11}, func() nn.Layer[float64] { return nn.NewLeakyReLU[float64](0.1) }, func() nn.Layer[float32] { return nn.NewLeakyReLU[float32](0.1) }},
		{"Flatten", []int{2, 3, 4}, func() nn.Layer[float64] { return nn.NewFlatten[float64]() }, func() nn.Layer[float32] { return nn.NewFlatten[float32]() }},
		{"Unflatten", []int{24}, func() nn.Layer[float64] { return nn.NewUnflatten[float64](2, 3, 4) }, func() nn.Layer[float32] { return nn.NewUnflatten[float32](2, 3, 4) }},
		{"GroupNorm(2 of 4)", []int{4, 3, 5}, func() nn.Layer[float64] { return nn.NewGroupNorm[float64](2, 4, 3, 5) }, func() nn.Layer[float32] { return nn.NewGroupNorm[float32](2, 4, 3, 5) }},
		{"GroupNorm(1 of 3)", []int{3, 2, 2}, func() nn.Layer[float64] { return nn.NewGroupNorm[float64](1, 3, 2, 2) }, func() nn.Layer[float32] { return nn.NewGroupNorm[float32](1, 3, 2, 2) }},
		{"GroupNorm(3 of 3)", []int{3, 4, 3}, func() nn.Layer[float64] { return nn.NewGroupNorm[float64](3, 3, 4, 3) }, func() nn.Layer[float32] { return nn.NewGroupNorm[float32](3, 3, 4, 3) }},
	}
	for _, m := range []nn.NormMethod{nn.NormExplicit, nn.NormGram, nn.NormAuto} {
		cases = append(cases,
			convCase(2, 7, 6, 3, 3, 1, 1, m, nn.DefaultCacheBytes), // padding, odd sizes
			convCase(1, 9, 9, 4, 3, 2, 0, m, nn.DefaultCacheBytes), // stride 2
			convCase(3, 8, 7, 2, 2, 2, 1, m, nn.DefaultCacheBytes), // stride 2 with padding, odd width
			convCase(2, 5, 5, 3, 5, 1, 2, m, nn.DefaultCacheBytes), // kernel as large as the input
			convCase(3, 6, 6, 5, 1, 1, 0, m, nn.DefaultCacheBytes), // 1×1
			convCase(2, 4, 5, 3, 3, 3, 1, m, nn.DefaultCacheBytes), // stride > kernel
			// Per-axis windows: 3×5 kernel, stride (2,1), pad (1,2); a
			// "same" 3×5 window with outC ≤ inC (Backward as a
			// convolution); a 5×2 kernel striding only along H.
			convWindowCase(2, 7, 9, 3, rect35, m, nn.DefaultCacheBytes),
			convWindowCase(3, 6, 7, 2, nn.ConvWindow{KH: 3, KW: 5, StrideH: 1, StrideW: 1, PadH: 1, PadW: 2}, m, nn.DefaultCacheBytes),
			convWindowCase(2, 8, 5, 3, nn.ConvWindow{KH: 5, KW: 2, StrideH: 3, StrideW: 1, PadH: 0, PadW: 1}, m, nn.DefaultCacheBytes),
			// Without a bias (Gorgonia's Conv2d): "same" (Backward as a
			// convolution), strided per-axis (im2col one value at a time).
			convFormCase(2, 7, 6, 2, nn.SquareWindow(3, 1, 1), m, nn.DefaultCacheBytes, true),
			convFormCase(2, 7, 9, 3, rect35, m, nn.DefaultCacheBytes, true),
		)
	}
	// Residual joins: a conv block with the identity as its shortcut, and a
	// dense block with a dense shortcut (the input gradient is the sum of
	// the branches'; the norms cover both branches' blocks).
	convBlock := func(win nn.ConvWindow) ([]nn.Layer[float64], []nn.Layer[float32]) {
		return []nn.Layer[float64]{nn.NewConv2dNoBias[float64](2, 5, 5, 3, win), nn.NewReLU[float64](), nn.NewConv2dWindow[float64](3, 5, 5, 2, win)},
			[]nn.Layer[float32]{nn.NewConv2dNoBias[float32](2, 5, 5, 3, win), nn.NewReLU[float32](), nn.NewConv2dWindow[float32](3, 5, 5, 2, win)}
	}
	cases = append(cases,
		layerCase{"Residual(conv block + identity)", []int{2, 5, 5},
			func() nn.Layer[float64] { b, _ := convBlock(nn.SquareWindow(3, 1, 1)); return nn.NewResidual(b, nil) },
			func() nn.Layer[float32] { _, b := convBlock(nn.SquareWindow(3, 1, 1)); return nn.NewResidual(b, nil) }},
		layerCase{"Residual(dense block + dense)", []int{6},
			func() nn.Layer[float64] {
				return nn.NewResidual([]nn.Layer[float64]{nn.NewLinear[float64](6, 4), nn.NewTanh[float64](), nn.NewLinear[float64](4, 5)},
					[]nn.Layer[float64]{nn.NewLinearNoBias[float64](6, 5)})
			},
			func() nn.Layer[float32] {
				return nn.NewResidual([]nn.Layer[float32]{nn.NewLinear[float32](6, 4), nn.NewTanh[float32](), nn.NewLinear[float32](4, 5)},
					[]nn.Layer[float32]{nn.NewLinearNoBias[float32](6, 5)})
			}},
	)
	// Explicit norms without the per-sample cache: ParamGrads re-unfolds.
	cases = append(cases, convCase(2, 7, 6, 3, 3, 1, 1, nn.NormExplicit, 0))
	cases = append(cases, convFormCase(2, 7, 6, 3, nn.SquareWindow(3, 1, 1), nn.NormExplicit, 0, true))
	// Images with ≥ 1024 output positions are cut into row tiles.
	cases = append(cases, convCase(1, 40, 37, 2, 3, 1, 1, nn.NormExplicit, nn.DefaultCacheBytes))
	cases = append(cases, convCase(1, 40, 37, 2, 3, 1, 1, nn.NormExplicit, 0))
	cases = append(cases, convCase(1, 36, 33, 2, 3, 1, 0, nn.NormGram, 0))
	cases = append(cases, convCase(1, 36, 33, 2, 3, 1, 0, nn.NormGram, nn.DefaultCacheBytes))
	return cases
}

func TestLayersFloat64(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range layerCases() {
		t.Run(c.name, func(t *testing.T) {
			layer := c.make64()
			for _, b := range batches {
				fd, ps := nntest.CheckLayer(t, layer, c.inShape, b, rng, nntest.Options{})
				t.Logf("batch %d: finite-difference rel err %.2g, batch-of-one rel err %.2g", b, fd, ps)
			}
		})
	}
}

func TestLayersFloat32(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range layerCases() {
		t.Run(c.name, func(t *testing.T) {
			layer := c.make32()
			for _, b := range batches {
				_, ps := nntest.CheckLayer(t, layer, c.inShape, b, rng, nntest.Options{})
				t.Logf("batch %d: batch-of-one rel err %.2g", b, ps)
			}
		})
	}
}

// TestConvTilings re-runs the convolution checks with small im2col tiles,
// so images are cut into row tiles (and small ones grouped) in every
// geometry, with and without the caches.
func TestConvTilings(t *testing.T) {
	defer func(old int) { *nn.TileTarget = old }(*nn.TileTarget)
	rng := rand.New(rand.NewPCG(9, 10))
	for _, target := range []int{7, 30} {
		*nn.TileTarget = target
		for _, cache := range []int{0, nn.DefaultCacheBytes} {
			for _, m := range []nn.NormMethod{nn.NormExplicit, nn.NormGram} {
				for _, c := range []layerCase{
					convCase(2, 7, 6, 3, 3, 1, 1, m, cache),
					convCase(1, 9, 9, 4, 3, 2, 0, m, cache),
					convCase(3, 8, 7, 2, 2, 2, 1, m, cache),
					convWindowCase(2, 7, 9, 3, rect35, m, cache),
				} {
					layer := c.make64()
					for _, b := range []int{5, 1, 0, 6} {
						nntest.CheckLayer(t, layer, c.inShape, b, rng, nntest.Options{MaxFD: 40})
					}
				}
			}
		}
	}
}

// TestLayersParallel repeats the float64 checks with every job split over
// more workers than the machine has cores, so the split points, per-worker
// buffers and the reduction of per-worker gradients are all exercised.
func TestLayersParallel(t *testing.T) {
	defer func(old, workers int) { *nn.HelperNs = old; nn.SetWorkers(workers) }(*nn.HelperNs, nn.Workers())
	*nn.HelperNs = 0
	nn.SetWorkers(3)
	rng := rand.New(rand.NewPCG(11, 12))
	for _, c := range layerCases() {
		layer := c.make64()
		for _, b := range []int{7, 2, 0, 5} {
			nntest.CheckLayer(t, layer, c.inShape, b, rng, nntest.Options{MaxFD: 40})
		}
	}
}

// TestWorkersChangeMidStep changes the worker count between Backward and
// ParamGrads (both cache paths) and compares with an unchanged twin.
func TestWorkersChangeMidStep(t *testing.T) {
	defer func(old, workers int) { *nn.HelperNs = old; nn.SetWorkers(workers) }(*nn.HelperNs, nn.Workers())
	*nn.HelperNs = 0
	rng := rand.New(rand.NewPCG(13, 14))
	x := randVec(rng, 6*2*7*6, 1)
	dy := randVec(rng, 6*3*7*6, 1)
	scale := randVec(rng, 6, 1)
	run := func(workers [2]int, sqNorms bool) []float64 {
		nn.SetWorkers(workers[0])
		c := nn.NewConv2d[float64](2, 7, 6, 3, 3, 1, 1)
		c.Init(rand.New(rand.NewPCG(1, 1)))
		c.Forward(x, 6, true)
		c.Backward(dy, true)
		if sqNorms {
			c.SqNorms(make([]float64, 6))
		}
		nn.SetWorkers(workers[1])
		c.ParamGrads(scale)
		return append(append([]float64(nil), c.Params()[0].Grad...), c.Params()[1].Grad...)
	}
	for _, sq := range []bool{false, true} {
		want := run([2]int{1, 1}, sq)
		for _, w := range [][2]int{{1, 4}, {4, 1}, {2, 3}} {
			if e := nntest.RelErr(run(w, sq), want); e > 1e-12 {
				t.Errorf("workers %v, SqNorms first %v: ParamGrads rel err %.3g", w, sq, e)
			}
		}
	}
}
