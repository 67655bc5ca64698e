package nn_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/fairdp/fairdp/nn"
	"github.com/fairdp/fairdp/nn/nntest"
)

// TestSigmoidLayer checks the Sigmoid layer like every other layer
// (finite differences, batch-of-one loop) and its forward pass against
// 1/(1+e^−x) written out directly, at values where the naive form is still
// exact and at ±40 where only a stable form keeps the tail.
func TestSigmoidLayer(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	l64, l32 := nn.NewSigmoid[float64](), nn.NewSigmoid[float32]()
	for _, b := range batches {
		nntest.CheckLayer(t, l64, []int{2, 5}, b, rng, nntest.Options{})
		nntest.CheckLayer(t, l32, []int{3}, b, rng, nntest.Options{})
	}
	x := []float64{-40, -3, -0.5, 0, 0.25, 2, 40}
	y := nn.NewSigmoid[float64]().Forward(x, 1, true)
	for i, v := range x {
		want := 1 / (1 + math.Exp(-v))
		if v == -40 {
			want = math.Exp(-40) / (1 + math.Exp(-40))
		}
		if d := math.Abs(y[i]-want) / want; d > 1e-15 {
			t.Errorf("σ(%v) = %v, want %v", v, y[i], want)
		}
	}
}

// TestDropout checks the mask semantics against a slow path that draws the
// same generator's numbers: value i is kept (and scaled by 1/(1−p)) iff
// its uniform draw is below 1−p; Backward multiplies by the same mask;
// evaluation is the identity; the layer has no parameters, so the
// per-sample quantities of the model around it are unchanged.
func TestDropout(t *testing.T) {
	const p, seed, n = 0.3, 7, 4000
	rng := rand.New(rand.NewPCG(43, 44))
	x, dy := make([]float64, n), make([]float64, n)
	for i := range x {
		x[i], dy[i] = rng.NormFloat64(), rng.NormFloat64()
	}
	d := nn.NewDropout[float64](p, seed)
	if y := d.Forward(x, 4, false); &y[0] != &x[0] {
		t.Error("evaluation Forward is not the identity")
	}
	if dx := d.Backward(dy, true); &dx[0] != &dy[0] {
		t.Error("evaluation Backward is not the identity")
	}
	y := d.Forward(x, 4, true)
	dx := d.Backward(dy, true)
	// The slow path: a twin generator, as NewDropout seeds it.
	draws := rand.New(rand.NewPCG(seed, 0x64726f70))
	kept := 0
	for i := range x {
		var m float64
		if draws.Float64() < 1-p {
			m, kept = 1/(1-p), kept+1
		}
		if y[i] != x[i]*m || dx[i] != dy[i]*m {
			t.Fatalf("value %d: y %v dx %v, want mask %v", i, y[i], dx[i], m)
		}
	}
	if f := float64(kept) / n; math.Abs(f-(1-p)) > 4*math.Sqrt(p*(1-p)/n) {
		t.Errorf("kept %.3f of the values, want %.3f", f, 1-p)
	}
	if again := nn.NewDropout[float64](p, seed).Forward(x, 4, true); !slices.Equal(again, y) {
		t.Error("the same seed gave other masks")
	}
	if len(d.Params()) != 0 {
		t.Error("Dropout has parameters")
	}
}

// TestNewLayerSpecs: Sigmoid and Dropout describe themselves so that
// NewLayer builds them again, and a probability outside [0, 1) is refused.
func TestNewLayerSpecs(t *testing.T) {
	for _, l := range []nn.Layer[float32]{nn.NewSigmoid[float32](), nn.NewDropout[float32](0.25, 9)} {
		s := l.(nn.Describer).Spec()
		again, err := nn.NewLayer[float32](s)
		if err != nil || again.Name() != l.Name() || again.(nn.Describer).Spec() != s {
			t.Errorf("%s rebuilt as %v (%v)", l.Name(), again, err)
		}
	}
	for _, p := range []float64{-0.1, 1, math.NaN()} {
		if _, err := nn.NewLayer[float64](nn.LayerSpec{Kind: nn.KindDropout, P: p}); err == nil {
			t.Errorf("dropout probability %v accepted", p)
		}
	}
}
