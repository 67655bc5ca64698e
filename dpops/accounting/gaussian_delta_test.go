package accounting

import (
	"math"
	"testing"
)

// TestGaussianDeltaQuadrature: GaussianDelta is the hockey-stick
// divergence ∫ (p − e^ε q)₊ of N(μ, 1) from N(0, 1), computed here by
// Simpson's rule on a fine grid.
func TestGaussianDeltaQuadrature(t *testing.T) {
	pdf := func(x float64) float64 { return math.Exp(-x*x/2) / math.Sqrt(2*math.Pi) }
	for _, mu := range []float64{0.05, 0.3, 1, 2.5} {
		for _, eps := range []float64{0, 0.1, 0.5, 1, 3} {
			const lo, hi, steps = -40.0, 40.0, 400000
			h := (hi - lo) / steps
			f := func(x float64) float64 { return math.Max(pdf(x-mu)-math.Exp(eps)*pdf(x), 0) }
			sum := f(lo) + f(hi)
			for i := 1; i < steps; i++ {
				w := 2.0
				if i%2 == 1 {
					w = 4
				}
				sum += w * f(lo+float64(i)*h)
			}
			want := sum * h / 3
			if got := GaussianDelta(mu, eps); math.Abs(got-want) > 1e-9+1e-6*want {
				t.Errorf("μ %v ε %v: δ %v, quadrature %v", mu, eps, got, want)
			}
		}
	}
	if GaussianDelta(0, 0.5) != 0 {
		t.Error("μ = 0 must cost nothing")
	}
}
