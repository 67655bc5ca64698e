package nn

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSigmoidSharedExpBitIdentical checks that sigmoid and softplus, now
// computed from one shared e^{−|z|}, give bit for bit what the two
// separate exponentials gave (the formulas before the sharing, written out
// here), on random logits of every scale and the special values.
func TestSigmoidSharedExpBitIdentical(t *testing.T) {
	oldSigmoid := func(z float64) float64 {
		if z >= 0 {
			return 1 / (1 + math.Exp(-z))
		}
		e := math.Exp(z)
		return e / (1 + e)
	}
	oldSoftplus := func(z float64) float64 { return math.Max(z, 0) + math.Log1p(math.Exp(-math.Abs(z))) }
	same := func(a, b float64) bool {
		return math.Float64bits(a) == math.Float64bits(b) || (math.IsNaN(a) && math.IsNaN(b))
	}
	rng := rand.New(rand.NewPCG(9, 10))
	zs := []float64{0, math.Copysign(0, -1), 1e-300, -1e-300, 745, -745, 800, -800, math.Inf(1), math.Inf(-1), math.NaN()}
	for range 20000 {
		zs = append(zs, float64(float32(rng.NormFloat64()*math.Pow(10, float64(rng.IntN(7)-3)))))
	}
	for _, z := range zs {
		if got, want := sigmoid(z), oldSigmoid(z); !same(got, want) {
			t.Fatalf("sigmoid(%v) = %v, separate exponentials gave %v", z, got, want)
		}
		if got, want := softplus(z), oldSoftplus(z); !same(got, want) {
			t.Fatalf("softplus(%v) = %v, separate exponentials gave %v", z, got, want)
		}
	}
}
