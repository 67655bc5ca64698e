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

// TestGaussianDeltaLargeEpsilon: beyond ε ≈ 709, e^ε overflows; the
// profile must stay finite and match a quadrature of the hockey-stick
// divergence whose integrand is evaluated in log space, over the region
// x > ε/μ + μ/2 where it is positive.
func TestGaussianDeltaLargeEpsilon(t *testing.T) {
	for _, c := range []struct{ mu, eps float64 }{{40, 800}, {45, 1000}, {60, 2000}, {1, 1000}} {
		x0 := c.eps/c.mu + c.mu/2
		const width, steps = 40.0, 400000
		h := width / steps
		f := func(x float64) float64 {
			return (math.Exp(-(x-c.mu)*(x-c.mu)/2) - math.Exp(c.eps-x*x/2)) / math.Sqrt(2*math.Pi)
		}
		sum := f(x0) + f(x0+width)
		for i := 1; i < steps; i++ {
			w := 2.0
			if i%2 == 1 {
				w = 4
			}
			sum += w * f(x0+float64(i)*h)
		}
		want := math.Max(sum*h/3, 0)
		got := GaussianDelta(c.mu, c.eps)
		if math.IsNaN(got) || math.Abs(got-want) > 1e-9+1e-6*want {
			t.Errorf("μ %v ε %v: δ %v, quadrature %v", c.mu, c.eps, got, want)
		}
	}
}
