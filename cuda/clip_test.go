package cuda

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/nn"
)

// Clip factors for the flat and per-sample policies: literal cases, and
// dpops.ClipFactor rounded to float32 bit for bit.
func TestClipFactors(t *testing.T) {
	be := backendUnderTest(t)
	sq := []float64{0, 1, 4, 16, 2.25, 1e6, 3}
	cases := []struct {
		name      string
		bounds    []float64
		flat      float64
		wantNorm  []float64
		wantScale []float32
	}{
		{"flat C=2", nil, 2, []float64{0, 1, 2, 4, 1.5, 1000, math.Sqrt(3)}, []float32{1, 1, 1, 0.5, 1, 0.002, 1}},
		{"flat C=+Inf", nil, math.Inf(1), []float64{0, 1, 2, 4, 1.5, 1000, math.Sqrt(3)}, []float32{1, 1, 1, 1, 1, 1, 1}},
		{"per sample", []float64{1, 0.5, 2, 1, 3, 10, 1}, 0, []float64{0, 1, 2, 4, 1.5, 1000, math.Sqrt(3)},
			[]float32{1, 0.5, 1, 0.25, 1, 0.01, float32(1 / math.Sqrt(3))}},
	}
	for _, c := range cases {
		scale, norms := make([]float32, len(sq)), make([]float64, len(sq))
		if err := be.ClipFactors(scale, norms, sq, c.bounds, c.flat); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		sameBits64(t, c.name+" norms", norms, c.wantNorm)
		sameBits32(t, c.name+" scale", scale, c.wantScale)
		for i := range sq {
			b := c.flat
			if c.bounds != nil {
				b = c.bounds[i]
			}
			if want := float32(dpops.ClipFactor(math.Sqrt(sq[i]), b)); scale[i] != want {
				t.Errorf("%s: scale[%d] = %v, dpops.ClipFactor gives %v", c.name, i, scale[i], want)
			}
		}
	}
	// Bad inputs: dpops.Clipper's messages; a bad norm is reported first.
	bad := []struct {
		sq     []float64
		bounds []float64
		flat   float64
		want   string
	}{
		{[]float64{1, math.NaN()}, nil, 1, "sample 1 has gradient norm² NaN; the loss is not finite"},
		{[]float64{1, -1, math.Inf(1)}, nil, 1, "sample 1 has gradient norm² -1"},
		{[]float64{math.Inf(1), 1}, nil, 1, "sample 0 has gradient norm² +Inf"},
		{[]float64{1, 1}, nil, 0, "clip bound of sample 0 is 0; it must be > 0"},
		{[]float64{1, 1, 1}, []float64{1, 1, math.NaN()}, 0, "clip bound of sample 2 is NaN"},
		{[]float64{1, math.NaN()}, []float64{-1, 1}, 0, "sample 1 has gradient norm² NaN"},
	}
	for _, c := range bad {
		err := be.ClipFactors(make([]float32, len(c.sq)), make([]float64, len(c.sq)), c.sq, c.bounds, c.flat)
		wantErr(t, err, c.want)
	}
	wantErr(t, be.ClipFactors(make([]float32, 2), make([]float64, 1), []float64{1, 2}, nil, 1), "norms has 1 elements, want 2")
	wantErr(t, be.ClipFactors(make([]float32, 2), make([]float64, 2), []float64{1, 2}, []float64{1}, 0), "bounds has 1 elements, want 2")
}

// A private step of a small CNN block (convolution + linear, clipped
// jointly) through Clipper matches dpops.Clipper over nn's layers: the joint
// norms, and the clipped sums in the layers' gradient buffers, for a flat
// bound, a per-sample bound and a Bound of another type.
func TestClipperMatchesDpops(t *testing.T) {
	be := backendUnderTest(t)
	r := rand.New(rand.NewPCG(13, 14))
	const n = 6
	g := ConvGeom{InC: 2, InH: 6, InW: 6, OutC: 3, K: 3, Stride: 1, Pad: 1}
	oh, ow := g.OutHW()
	const in, out = 20, 4
	bounds := []dpops.Bound{dpops.Flat(0.5), dpops.PerSample{0.1, 1, 10, 0.5, 0.2, 3}, halfOfIndex{}}
	for _, bound := range bounds {
		conv := nn.NewConv2d[float32](g.InC, g.InH, g.InW, g.OutC, g.K, g.Stride, g.Pad)
		conv.Init(r)
		x := randF32(r, n*g.InC*g.InH*g.InW, 1)
		dyc := randF32(r, n*g.OutC*oh*ow, 0.3)
		conv.Forward(x, n, true)
		conv.Backward(dyc, false)
		lin, xl, dyl := linearCase(r, n, in, out)

		var ref dpops.Clipper[float32]
		wantNorms, err := ref.Clip(n, bound, conv, lin)
		if err != nil {
			t.Fatal(err)
		}
		ct := &ConvTaps{X: x, B: dyc, Geom: g, GradW: make([]float32, g.OutC*g.CKK()), GradB: make([]float32, g.OutC)}
		lt := &LinearTaps{A: xl, B: dyl, In: in, Out: out, GradW: make([]float32, in*out), GradB: make([]float32, out)}
		c := NewClipper(be)
		norms, err := c.Clip(n, bound, ct, lt)
		if err != nil {
			t.Fatal(err)
		}
		near(t, "joint norms vs dpops.Clipper", norms, wantNorms, 1e-5, 0)
		near(t, "conv weight grad", ct.GradW, widen(conv.Params()[0].Grad), 1e-5, 1)
		near(t, "conv bias grad", ct.GradB, widen(conv.Params()[1].Grad), 1e-5, 1)
		near(t, "linear weight grad", lt.GradW, widen(lin.Params()[0].Grad), 1e-5, 1)
		near(t, "linear bias grad", lt.GradB, widen(lin.Params()[1].Grad), 1e-5, 1)

		// The same step on the twin gives the same bits.
		ct2 := &ConvTaps{X: x, B: dyc, Geom: g, GradW: make([]float32, g.OutC*g.CKK()), GradB: make([]float32, g.OutC)}
		lt2 := &LinearTaps{A: xl, B: dyl, In: in, Out: out, GradW: make([]float32, in*out), GradB: make([]float32, out)}
		twinNorms, err := NewClipper(CPU{}).Clip(n, bound, ct2, lt2)
		if err != nil {
			t.Fatal(err)
		}
		sameBits64(t, be.Name()+" norms vs twin", norms, twinNorms)
		sameBits32(t, be.Name()+" conv grad vs twin", ct.GradW, ct2.GradW)
		sameBits32(t, be.Name()+" linear grad vs twin", lt.GradW, lt2.GradW)

		// Noise: one stream per buffer.
		seed := NewNoiseSeed(rand.New(rand.NewPCG(1, uint64(n))))
		if err := c.AddNoise(0.1, seed, ct.GradW, lt.GradW); err != nil {
			t.Fatal(err)
		}
		want := append([]float32(nil), lt2.GradW...)
		s1 := seed
		s1.Stream = 1
		if err := (CPU{}).AddGaussian(want, 0.1, s1); err != nil {
			t.Fatal(err)
		}
		sameBits32(t, "second buffer noised under stream 1", lt.GradW, want)
	}
	// Errors come back, not panics.
	c := NewClipper(be)
	if _, err := c.Clip(2, dpops.Flat(1), &LinearTaps{A: make([]float32, 3), B: make([]float32, 2), In: 2, Out: 1}); err == nil {
		t.Error("Clip accepted a tap of the wrong length")
	}
	if _, err := c.Clip(1, dpops.Flat(-1), &LinearTaps{A: []float32{1}, B: []float32{1}, In: 1, Out: 1, GradW: []float32{0}}); err == nil {
		t.Error("Clip accepted a negative bound")
	}
	if _, err := c.Clip(-1, dpops.Flat(1)); err == nil {
		t.Error("Clip accepted a negative batch size")
	}
}

// halfOfIndex is a Bound of its own type: C_i = (i+1)/2.
type halfOfIndex struct{}

func (halfOfIndex) At(i int) float64 { return float64(i+1) / 2 }
