package nn_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fairdp/fairdp/nn"
)

// TestLinearNoBias checks a Linear without a bias against loops written
// here: W is its only parameter (in·out values, no bias block to count,
// clip or noise), the output is X·W, and sample i's squared gradient norm
// is ‖a_i‖²‖b_i‖² (its gradient is the outer product a_i ⊗ b_i).
func TestLinearNoBias(t *testing.T) {
	const in, out, batch = 5, 3, 4
	l := nn.NewLinearNoBias[float64](in, out)
	l.Init(rand.New(rand.NewPCG(17, 18)))
	if ps := l.Params(); len(ps) != 1 || ps[0].Name != "weight" || len(ps[0].Value) != in*out {
		t.Fatalf("parameters %v, want the weight alone (%d values)", ps, in*out)
	}
	rng := rand.New(rand.NewPCG(19, 20))
	x, dy := randVec(rng, batch*in, 1), randVec(rng, batch*out, 1)
	y := l.Forward(x, batch, true)
	l.Backward(dy, false)
	norms := make([]float64, batch)
	l.SqNorms(norms)
	w := l.Params()[0].Value
	for i := range batch {
		var na, nb float64
		for k := range in {
			na += x[i*in+k] * x[i*in+k]
		}
		for j := range out {
			nb += dy[i*out+j] * dy[i*out+j]
			var z float64
			for k := range in {
				z += x[i*in+k] * w[k*out+j]
			}
			if math.Abs(y[i*out+j]-z) > 1e-13*(1+math.Abs(z)) {
				t.Errorf("y[%d][%d] = %v, X·W gives %v", i, j, y[i*out+j], z)
			}
		}
		if want := na * nb; math.Abs(norms[i]-want) > 1e-13*want {
			t.Errorf("SqNorms[%d] = %v, ‖a‖²‖b‖² = %v", i, norms[i], want)
		}
	}
}
