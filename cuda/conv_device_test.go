package cuda

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/fairdp/fairdp/nn"
)

// A DeviceConv's forward, backward to the input, per-sample norms and
// clipped sum, all on device buffers, agree with nn.Conv2d's to 1e-5, for
// the geometries of the kernel tests and batches of 0, 1, 3 and 5, with the
// whole batch in one pass through the unfolding scratch and (scratch of 1
// byte) one sample a pass; the per-sample norms agree with the Backend's
// (FP64 from the unfolded input) to 1e-5: the device's come from FP32
// per-sample gradients. The same holds for a convolution without a bias
// (nn.NewConv2dNoBias) against W alone: its norms and clipped sum cover
// the weight only.
func TestDeviceConvMatchesNN(t *testing.T) {
	dev := deviceUnderTest(t)
	r := rand.New(rand.NewPCG(49, 50))
	for _, budget := range []int64{convScratchBytes, 1} {
		withConvScratch(t, budget, func() { testDeviceConvMatchesNN(t, dev, r, budget) })
	}
}

// withConvScratch runs f with convScratchBytes set to budget.
func withConvScratch(t *testing.T, budget int64, f func()) {
	t.Helper()
	old := convScratchBytes
	convScratchBytes = budget
	defer func() { convScratchBytes = old }()
	f()
}

func testDeviceConvMatchesNN(t *testing.T, dev Device, r *rand.Rand, budget int64) {
	for _, g := range convGeoms {
		for _, n := range []int{0, 1, 3, 5} {
			for _, bias := range []bool{true, false} {
				testDeviceConvCase(t, dev, r, budget, g, n, bias)
			}
		}
	}
}

func testDeviceConvCase(t *testing.T, dev Device, r *rand.Rand, budget int64, g ConvGeom, n int, bias bool) {
	name := fmt.Sprintf("%+v n=%d scratch=%d bias=%v", g, n, budget, bias)
	oh, ow := g.OutHW()
	ref := nn.NewConv2d[float32](g.InC, g.InH, g.InW, g.OutC, g.K, g.Stride, g.Pad)
	if !bias {
		ref = nn.NewConv2dNoBias[float32](g.InC, g.InH, g.InW, g.OutC, nn.SquareWindow(g.K, g.Stride, g.Pad))
	}
	ref.Init(r)
	var refBias []float32 // nil: no bias
	if bias {
		refBias = ref.Params()[1].Value
	}
	x := randF32(r, n*g.InC*g.InH*g.InW, 1)
	dy := randF32(r, n*g.OutC*oh*ow, 0.5)
	scale := randF32(r, n, 1)
	wantY := widen(ref.Forward(x, n, true))
	wantDX := widen(ref.Backward(dy, true))
	wantSq := make([]float32, n)
	if n > 0 {
		ref.SqNorms(wantSq)
	}
	nn.ZeroGrads(ref.Params())
	ref.ParamGrads(scale)

	c, err := NewDeviceConv(dev, g, ref.Params()[0].Value, refBias)
	if err != nil {
		t.Fatal(err)
	}
	buf := func(s []float32) DevicePtr {
		p, err := dev.Alloc(max(byteSize(s), 4))
		if err != nil {
			t.Fatal(err)
		}
		must(t, CopyIn(dev, p, s))
		t.Cleanup(func() { dev.Free(p) })
		return p
	}
	dx, dyp, y := buf(make([]float32, len(x))), buf(dy), buf(make([]float32, len(wantY)))
	sq, err := dev.Alloc(int64(max(8*n, 8)))
	if err != nil {
		t.Fatal(err)
	}
	must(t, CopyIn(dev, sq, make([]float64, n)))
	must(t, c.Forward(y, buf(x), n))
	must(t, c.Backward(dx, dyp, n))
	must(t, c.SqNorms(sq, n))
	must(t, c.ClippedGrad(buf(scale), n))

	got := make([]float32, len(wantY))
	must(t, CopyOut(dev, got, y))
	near(t, name+" forward", got, wantY, 1e-5, 1)
	gotDX := make([]float32, len(x))
	must(t, CopyOut(dev, gotDX, dx))
	near(t, name+" input gradient", gotDX, wantDX, 1e-5, 1)
	gotSq := make([]float64, n)
	must(t, CopyOut(dev, gotSq, sq))
	near(t, name+" per-sample norms² vs nn.Conv2d.SqNorms", gotSq, widen(wantSq), 1e-5, 0)
	if bias { // the twin's norms include the bias (the unfolded ones row)
		twinSq, u := make([]float64, n), make([]float32, n*(g.CKK()+1)*g.HW())
		must(t, CPU{}.Im2col(u, x, g, n))
		must(t, CPU{}.ConvSqNorms(twinSq, u, dy, g, n))
		near(t, name+" per-sample norms² vs the twin", gotSq, twinSq, 1e-5, 0)
	}
	dw, db, err := c.Grads()
	must(t, err)
	near(t, name+" clipped weight gradient", dw, widen(ref.Params()[0].Grad), 1e-5, 1)
	w, b, err := c.Params()
	must(t, err)
	sameBits32(t, name+" weight round trip", w, ref.Params()[0].Value)
	if bias {
		near(t, name+" clipped bias gradient", db, widen(ref.Params()[1].Grad), 1e-5, 1)
		sameBits32(t, name+" bias round trip", b, ref.Params()[1].Value)
	} else if db != nil || b != nil || len(ref.Params()) != 1 {
		t.Errorf("%s: a bias came back (%d, %d values) or nn has %d parameters", name, len(db), len(b), len(ref.Params()))
	}
	must(t, dev.Free(sq))
	must(t, c.Close())
}
