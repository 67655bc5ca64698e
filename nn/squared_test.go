package nn_test

import (
	"math/rand/v2"
	"testing"

	"github.com/fairdp/fairdp/nn"
)

// TestSquaredError: the loss is (p − y)² per sample (by hand), unweighted,
// and the weighted gradient agrees with central finite differences of
// Σ_i weight_i·loss_i; float32 gives the same values rounded.
func TestSquaredError(t *testing.T) {
	loss, d := make([]float64, 2), make([]float64, 2)
	nn.SquaredError([]float64{1.5, -2}, []float64{0.5, 1}, []float64{1, 3}, loss, d)
	if loss[0] != 1 || loss[1] != 9 || d[0] != 2 || d[1] != 3*2*-3 {
		t.Fatalf("loss %v, gradient %v; want [1 9], [2 -18]", loss, d)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	const n, h = 7, 1e-6
	p, y, w := randVec(rng, n, 3), randVec(rng, n, 3), randVec(rng, n, 1)
	total := func() float64 {
		l := make([]float64, n)
		nn.SquaredError(p, y, nil, l, nil)
		var s float64
		for i, v := range l {
			s += w[i] * v
		}
		return s
	}
	dp := make([]float64, n)
	nn.SquaredError(p, y, w, nil, dp)
	for j := range p {
		orig := p[j]
		p[j] = orig + h
		fp := total()
		p[j] = orig - h
		fm := total()
		p[j] = orig
		if fd := (fp - fm) / (2 * h); !near(dp[j], fd, 1e-6) {
			t.Errorf("dpred[%d] = %.10g, finite differences %.10g", j, dp[j], fd)
		}
	}
	l32, d32 := make([]float32, n), make([]float32, n)
	nn.SquaredError(to32(p), to32(y), to32(w), l32, d32)
	for i := range n {
		r := float64(float32(p[i])) - float64(float32(y[i]))
		if l32[i] != float32(r*r) || d32[i] != float32(float64(float32(w[i]))*2*r) {
			t.Errorf("float32 sample %d: loss %v, gradient %v", i, l32[i], d32[i])
		}
	}
}
