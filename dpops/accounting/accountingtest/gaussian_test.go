package accountingtest

import (
	"math"
	"testing"
)

// TestGaussianEpsilon: at μ = 1 and ε = 0 the profile is the total
// variation 2Φ(1/2) − 1, and GaussianEpsilon inverts GaussianDelta.
func TestGaussianEpsilon(t *testing.T) {
	tv := math.Erf(0.5 / math.Sqrt2)
	if d := GaussianDelta(1, 0); math.Abs(d-tv) > 1e-15 {
		t.Errorf("δ(0) = %v, want %v", d, tv)
	}
	for _, mu := range []float64{0.1, 1, 3} {
		eps := GaussianEpsilon(mu, 1e-6)
		if d := GaussianDelta(mu, eps); !(d <= 1e-6) || math.Abs(d-1e-6) > 1e-12 {
			t.Errorf("μ %v: δ(ε = %v) = %v, want 1e-6", mu, eps, d)
		}
	}
}
