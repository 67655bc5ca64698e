package nn_test

import (
	"testing"

	"github.com/fairdp/fairdp/nn"
)

// TestSGDMomentumWeightDecay: lr 0.5, momentum 0.9, weight decay 0.1,
// θ = (1, −2), g = (0.5, 0.25) twice. By hand: d₁ = g + 0.1θ = (0.6, 0.05),
// v₁ = d₁, θ₁ = (0.7, −2.025); d₂ = (0.57, 0.0475), v₂ = 0.9v₁ + d₂ =
// (1.11, 0.0925), θ₂ = (0.145, −2.07125).
func TestSGDMomentumWeightDecay(t *testing.T) {
	p := &nn.Param[float64]{Name: "w", Shape: []int{2}, Value: []float64{1, -2}, Grad: []float64{0.5, 0.25}}
	o := nn.NewSGD[float64](0.5)
	o.Momentum, o.WeightDecay = 0.9, 0.1
	want := [][]float64{{0.7, -2.025}, {0.145, -2.07125}}
	for step, w := range want {
		o.Step([]*nn.Param[float64]{p})
		for i := range w {
			if !near(p.Value[i], w[i], 1e-14) {
				t.Errorf("step %d: θ[%d] = %.17g, want %.17g", step+1, i, p.Value[i], w[i])
			}
		}
	}
	// Plain SGD: θ −= lr·g.
	q := &nn.Param[float32]{Value: []float32{1}, Grad: []float32{0.5}}
	nn.NewSGD[float32](0.1).Step([]*nn.Param[float32]{q})
	if q.Value[0] != 0.95 {
		t.Errorf("plain SGD: θ = %v, want 0.95", q.Value[0])
	}
}

// TestAdamBiasCorrection: lr 0.1, β = (0.9, 0.999), ε = 1e-8. For θ = 1 with
// g = 0.5 then −1, bias correction makes the first step exactly lr·(1−2e-8)
// and the second 0.9366103542405654 (hand/Python). With weight decay 0.5,
// θ = −2 and g = 0.25 twice: −1.9000000013333334 then −1.8002390643206105.
func TestAdamBiasCorrection(t *testing.T) {
	a := &nn.Param[float64]{Value: []float64{1}, Grad: []float64{0.5}}
	b := &nn.Param[float64]{Value: []float64{-2}, Grad: []float64{0.25}}
	plain := nn.NewAdam[float64](0.1)
	decayed := nn.NewAdam[float64](0.1)
	decayed.WeightDecay = 0.5
	plain.Step([]*nn.Param[float64]{a})
	decayed.Step([]*nn.Param[float64]{b})
	if !near(a.Value[0], 0.900000002, 1e-15) || !near(b.Value[0], -1.9000000013333334, 1e-15) {
		t.Errorf("step 1: θ = %.17g, %.17g", a.Value[0], b.Value[0])
	}
	a.Grad[0] = -1
	plain.Step([]*nn.Param[float64]{a})
	decayed.Step([]*nn.Param[float64]{b})
	if !near(a.Value[0], 0.9366103542405654, 1e-14) || !near(b.Value[0], -1.8002390643206105, 1e-14) {
		t.Errorf("step 2: θ = %.17g, %.17g", a.Value[0], b.Value[0])
	}
}

func TestZeroGrads(t *testing.T) {
	p := &nn.Param[float32]{Grad: []float32{1, 2}}
	nn.ZeroGrads([]*nn.Param[float32]{p})
	if p.Grad[0] != 0 || p.Grad[1] != 0 {
		t.Errorf("ZeroGrads left %v", p.Grad)
	}
}
