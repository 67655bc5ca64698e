package cuda

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// Every kernel on the backend under test equals its twin bit for bit on
// random shapes, including an empty batch, a batch of one and row lengths on
// either side of the 256-thread block (255, 256, 257, 513). On the CPU the
// backend is the twin, so the test runs on the emulated device (`make
// test-gpu-emulated`) and on a GPU.
func TestKernelsRandomShapes(t *testing.T) {
	be := kernelsUnderTest(t)
	var twin CPU
	r := rand.New(rand.NewPCG(31, 32))
	edge := []int{1, 2, 255, 256, 257, 513}
	size := func() int {
		if r.IntN(2) == 0 {
			return edge[r.IntN(len(edge))]
		}
		return 1 + r.IntN(300)
	}
	batches := []int{0, 1, 3, 1 + r.IntN(40)}
	for trial := range 3 {
		for _, n := range batches {
			name := fmt.Sprintf("trial %d n=%d", trial, n)
			in, out := size(), 1+r.IntN(20)
			if trial == 2 {
				in, out = 1+r.IntN(9), size() // long backprop rows
			}
			a, b := randF32(r, n*in, 1), randF32(r, n*out, 0.5)
			scale := randF32(r, n, 1)

			// Linear: norms, clipped sums with and without bias.
			for _, bias := range []bool{true, false} {
				sq0 := randF64(r, n)
				got, want := append([]float64(nil), sq0...), append([]float64(nil), sq0...)
				must(t, be.LinearSqNorms(got, a, b, n, in, out, bias))
				must(t, twin.LinearSqNorms(want, a, b, n, in, out, bias))
				sameBits64(t, name+" LinearSqNorms", got, want)
				dw0, db0 := randF32(r, in*out, 1), randF32(r, out, 1)
				var gdb, wdb []float32
				if bias {
					gdb, wdb = append([]float32(nil), db0...), append([]float32(nil), db0...)
				}
				gdw, wdw := append([]float32(nil), dw0...), append([]float32(nil), dw0...)
				must(t, be.LinearClippedGrad(gdw, gdb, a, b, scale, n, in, out))
				must(t, twin.LinearClippedGrad(wdw, wdb, a, b, scale, n, in, out))
				sameBits32(t, name+" LinearClippedGrad dw", gdw, wdw)
				sameBits32(t, name+" LinearClippedGrad db", gdb, wdb)
			}

			// Clip factors: flat and per-sample bounds.
			sq := randF64(r, n)
			bounds := randF64(r, n)
			for i := range bounds {
				bounds[i] += 0.01
			}
			for _, bd := range [][]float64{nil, bounds} {
				gs, gn := make([]float32, n), make([]float64, n)
				ws, wn := make([]float32, n), make([]float64, n)
				must(t, be.ClipFactors(gs, gn, sq, bd, 0.3))
				must(t, twin.ClipFactors(ws, wn, sq, bd, 0.3))
				sameBits32(t, name+" ClipFactors scale", gs, ws)
				sameBits64(t, name+" ClipFactors norms", gn, wn)
			}

			// Row scaling (also in place), bias add, ReLU.
			gotRows, wantRows := make([]float32, len(b)), make([]float32, len(b))
			must(t, be.ScaleRows(gotRows, b, scale, out))
			must(t, twin.ScaleRows(wantRows, b, scale, out))
			sameBits32(t, name+" ScaleRows", gotRows, wantRows)
			inPlace := append([]float32(nil), b...)
			must(t, be.ScaleRows(inPlace, inPlace, scale, out))
			sameBits32(t, name+" ScaleRows in place", inPlace, wantRows)
			bias := randF32(r, out, 1)
			gy, wy := append([]float32(nil), b...), append([]float32(nil), b...)
			must(t, be.BiasAdd(gy, bias, n, out, 1))
			must(t, twin.BiasAdd(wy, bias, n, out, 1))
			sameBits32(t, name+" BiasAdd", gy, wy)
			x := append(randF32(r, n*in, 1), specials[:min(n, len(specials))]...)
			gr, wr := make([]float32, len(x)), make([]float32, len(x))
			must(t, be.ReLUForward(gr, x))
			must(t, twin.ReLUForward(wr, x))
			sameBits32(t, name+" ReLUForward", gr, wr)
			dy := randF32(r, len(x), 1)
			gdx, wdx := make([]float32, len(x)), make([]float32, len(x))
			must(t, be.ReLUBackward(gdx, gr, dy))
			must(t, twin.ReLUBackward(wdx, wr, dy))
			sameBits32(t, name+" ReLUBackward", gdx, wdx)

			// Convolution: unfold, norms, clipped sums.
			g := ConvGeom{InC: 1 + r.IntN(4), InH: 1 + r.IntN(9), InW: 1 + r.IntN(9), OutC: 1 + r.IntN(5), K: 1 + r.IntN(3), Stride: 1 + r.IntN(2), Pad: r.IntN(2)}
			if g.Validate() != nil {
				g.K, g.Pad = 1, 0
			}
			if trial == 1 {
				g.InC = 29 // ckk+1 > 256 rows when K = 3
				g.K, g.Pad = 3, 1
			}
			oh, ow := g.OutHW()
			cx, cb := randF32(r, n*g.InC*g.InH*g.InW, 1), randF32(r, n*g.OutC*oh*ow, 0.5)
			gu, wu := make([]float32, n*(g.CKK()+1)*g.HW()), make([]float32, n*(g.CKK()+1)*g.HW())
			must(t, be.Im2col(gu, cx, g, n))
			must(t, twin.Im2col(wu, cx, g, n))
			sameBits32(t, name+fmt.Sprintf(" Im2col %+v", g), gu, wu)
			du := randF32(r, n*g.CKK()*g.HW(), 1)
			cgdx, cwdx := make([]float32, len(cx)), make([]float32, len(cx))
			must(t, be.Col2im(cgdx, du, g, n))
			must(t, twin.Col2im(cwdx, du, g, n))
			sameBits32(t, name+" Col2im", cgdx, cwdx)
			csq0 := randF64(r, n)
			gsq, wsq := append([]float64(nil), csq0...), append([]float64(nil), csq0...)
			must(t, be.ConvSqNorms(gsq, wu, cb, g, n))
			must(t, twin.ConvSqNorms(wsq, wu, cb, g, n))
			sameBits64(t, name+" ConvSqNorms", gsq, wsq)
			cw0, cb0 := randF32(r, g.OutC*g.CKK(), 1), randF32(r, g.OutC, 1)
			gcw, wcw := append([]float32(nil), cw0...), append([]float32(nil), cw0...)
			gcb, wcb := append([]float32(nil), cb0...), append([]float32(nil), cb0...)
			must(t, be.ConvClippedGrad(gcw, gcb, wu, cb, scale, g, n))
			must(t, twin.ConvClippedGrad(wcw, wcb, wu, cb, scale, g, n))
			sameBits32(t, name+" ConvClippedGrad dw", gcw, wcw)
			sameBits32(t, name+" ConvClippedGrad db", gcb, wcb)

			// Max-pool over the convolution's output planes.
			pg := PoolGeom{C: g.OutC, H: oh, W: ow, K: 1 + r.IntN(min(oh, ow, 3))}
			py, pa := make([]float32, n*pg.C*(oh/pg.K)*(ow/pg.K)), make([]int32, n*pg.C*(oh/pg.K)*(ow/pg.K))
			wpy, wpa := make([]float32, len(py)), make([]int32, len(pa))
			must(t, be.MaxPoolForward(py, pa, cb, pg, n))
			must(t, twin.MaxPoolForward(wpy, wpa, cb, pg, n))
			sameBits32(t, name+fmt.Sprintf(" MaxPoolForward %+v", pg), py, wpy)
			for i := range pa {
				if pa[i] != wpa[i] {
					t.Fatalf("%s MaxPoolForward arg[%d] = %d, twin %d", name, i, pa[i], wpa[i])
				}
			}
			pdy := randF32(r, len(py), 1)
			gpdx, wpdx := make([]float32, len(cb)), make([]float32, len(cb))
			must(t, be.MaxPoolBackward(gpdx, pdy, wpa, pg, n))
			must(t, twin.MaxPoolBackward(wpdx, pdy, wpa, pg, n))
			sameBits32(t, name+" MaxPoolBackward", gpdx, wpdx)

			// Noise on a buffer of the batch's length (odd and even).
			seed := NewNoiseSeed(r)
			gn, wn := randF32(r, n*out+n%2, 1), []float32(nil)
			wn = append(wn, gn...)
			must(t, be.AddGaussian(gn, 0.7, seed))
			must(t, twin.AddGaussian(wn, 0.7, seed))
			sameBits32(t, name+" AddGaussian", gn, wn)
		}
	}
}

// The tiled convolution norm kernel equals its twin bit for bit across its
// tile edges: output channels on either side of the 8-channel tile (1, 7,
// 8, 9, 13, 17), output positions on either side of the 32-position tile
// (1, 31, 32, 33, 49) and unfolded rows on either side of the 256-thread
// block (ckk+1 = 10, 256, 257, 451).
func TestConvSqNormsTiles(t *testing.T) {
	be := kernelsUnderTest(t)
	var twin CPU
	r := rand.New(rand.NewPCG(35, 36))
	for _, tc := range []struct{ inC, k, h, w, outC, n int }{
		{1, 3, 3, 3, 1, 1},    // hw 1, kk 10
		{1, 3, 3, 33, 7, 2},   // hw 31
		{255, 1, 4, 8, 8, 1},  // hw 32, kk 256
		{256, 1, 3, 11, 9, 3}, // hw 33, kk 257
		{50, 3, 9, 9, 13, 2},  // hw 49, kk 451
		{2, 2, 6, 6, 17, 0},   // empty batch
		{3, 3, 10, 12, 16, 1}, // two full channel tiles
	} {
		g := ConvGeom{InC: tc.inC, InH: tc.h, InW: tc.w, OutC: tc.outC, K: tc.k, Stride: 1}
		name := fmt.Sprintf("%+v n=%d", g, tc.n)
		u := randF32(r, tc.n*(g.CKK()+1)*g.HW(), 1)
		b := randF32(r, tc.n*g.OutC*g.HW(), 0.5)
		sq0 := randF64(r, tc.n)
		got, want := append([]float64(nil), sq0...), append([]float64(nil), sq0...)
		must(t, be.ConvSqNorms(got, u, b, g, tc.n))
		must(t, twin.ConvSqNorms(want, u, b, g, tc.n))
		sameBits64(t, name+" ConvSqNorms", got, want)
	}
}

// GroupNorm's kernels on the backend under test equal their twins bit for
// bit: groupNormCases (a batch of one, an empty batch, group sizes 255, 256,
// 257 and 816) and random geometries, with and without the input gradient.
func TestGroupNormKernelsRandomShapes(t *testing.T) {
	be := kernelsUnderTest(t)
	var twin CPU
	r := rand.New(rand.NewPCG(33, 34))
	for _, tc := range append(groupNormCases, randomGroupNormCases(r, 6)...) {
		g, n := tc.g, tc.n
		g.Eps = 1e-5
		name := fmt.Sprintf("%+v n=%d", g, n)
		size := g.Size()
		x, dy := randF32(r, n*size, 1.5), randF32(r, n*size, 1)
		gamma, beta := randF32(r, g.C, 1), randF32(r, g.C, 1)
		y, xh, inv := make([]float32, n*size), make([]float32, n*size), make([]float64, n*g.Groups)
		wy, wxh, winv := make([]float32, n*size), make([]float32, n*size), make([]float64, n*g.Groups)
		must(t, be.GroupNormForward(y, xh, inv, x, gamma, beta, g, n))
		must(t, twin.GroupNormForward(wy, wxh, winv, x, gamma, beta, g, n))
		sameBits32(t, name+" GroupNormForward y", y, wy)
		sameBits32(t, name+" GroupNormForward xhat", xh, wxh)
		sameBits64(t, name+" GroupNormForward invStd", inv, winv)
		for _, withDX := range []bool{true, false} {
			var dx, wdx []float32
			if withDX {
				dx, wdx = make([]float32, n*size), make([]float32, n*size)
			}
			ps, wps := make([]float32, n*2*g.C), make([]float32, n*2*g.C)
			must(t, be.GroupNormBackward(dx, ps, dy, xh, inv, gamma, g, n))
			must(t, twin.GroupNormBackward(wdx, wps, dy, wxh, winv, gamma, g, n))
			sameBits32(t, name+" GroupNormBackward ps", ps, wps)
			sameBits32(t, name+" GroupNormBackward dx", dx, wdx)
		}
	}
}

// kernelsUnderTest is the backend under test when it runs the kernels
// (the emulated device, a GPU); on the twin itself the test is skipped.
func kernelsUnderTest(t *testing.T) Backend {
	t.Helper()
	be := backendUnderTest(t)
	if _, ok := be.(CPU); ok {
		t.Skip("the backend under test is the twin itself")
	}
	return be
}

func randF64(r *rand.Rand, n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = r.ExpFloat64()
	}
	return s
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
