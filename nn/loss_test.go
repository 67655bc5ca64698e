package nn_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fairdp/fairdp/nn"
)

// Expected values below were computed by hand (with Python's math module):
// softmax/log-sum-exp around the max, softplus(z) = max(z,0)+log1p(e^-|z|).

func TestSoftmaxCrossEntropyTable(t *testing.T) {
	cases := []struct {
		name    string
		logits  []float64
		label   int
		weight  float64
		loss    float64
		dlogits []float64
	}{
		{"1,2,3 label 2", []float64{1, 2, 3}, 2, 1, 0.4076059644443806,
			[]float64{0.09003057317038043, 0.24472847105479759, 0.6652409557748217 - 1}},
		{"weight 2", []float64{1, 2, 3}, 2, 2, 0.4076059644443806,
			[]float64{2 * 0.09003057317038043, 2 * 0.24472847105479759, 2 * (0.6652409557748217 - 1)}},
		{"4 classes label 0", []float64{-1, 0.5, 4, -2}, 0, 1, 3.5386571722767055 + 1.5,
			[]float64{0.006482447286305388 - 1, 0.029052313152077507, 0.9620804804765075, 0.002384759085109359}},
		{"ties", []float64{0, 0}, 0, 1, math.Ln2, []float64{-0.5, 0.5}},
		{"extreme, wrong", []float64{1000, -1000}, 1, 1, 2000, []float64{1, -1}},
		{"extreme, right", []float64{1000, -1000}, 0, 1, 0, []float64{0, 0}},
		{"extreme, zero weight", []float64{-1000, 1000}, 0, 0, 2000, []float64{0, 0}},
	}
	for _, c := range cases {
		k := len(c.logits)
		loss := make([]float64, 1)
		d := make([]float64, k)
		nn.SoftmaxCrossEntropy(c.logits, []int{c.label}, k, []float64{c.weight}, loss, d)
		if !near(loss[0], c.loss, 1e-12) {
			t.Errorf("%s: loss %.17g, want %.17g", c.name, loss[0], c.loss)
		}
		for j := range d {
			if !near(d[j], c.dlogits[j], 1e-12) {
				t.Errorf("%s: dlogits[%d] = %.17g, want %.17g", c.name, j, d[j], c.dlogits[j])
			}
		}
		// float32 stays finite and close.
		l32 := make([]float32, 1)
		d32 := make([]float32, k)
		nn.SoftmaxCrossEntropy(to32(c.logits), []int{c.label}, k, []float32{float32(c.weight)}, l32, d32)
		if !near(float64(l32[0]), c.loss, 1e-6) {
			t.Errorf("%s float32: loss %v, want %v", c.name, l32[0], c.loss)
		}
		for j := range d32 {
			if !near(float64(d32[j]), c.dlogits[j], 1e-6) {
				t.Errorf("%s float32: dlogits[%d] = %v, want %v", c.name, j, d32[j], c.dlogits[j])
			}
		}
	}
}

func TestSigmoidBCETable(t *testing.T) {
	cases := []struct {
		z          float64
		y          int
		loss, grad float64
	}{
		{0, 1, math.Ln2, -0.5},
		{2, 0, 2.1269280110429727, 0.8807970779778823},
		{-3, 1, 3.048587351573742, -0.9525741268224333},
		{0.5, 1, 0.4740769841801067, -0.3775406687981454},
		{1000, 0, 1000, 1},
		{1000, 1, 0, 0},
		{-1000, 0, 0, 0},
		{-1000, 1, 1000, -1},
	}
	for _, c := range cases {
		for _, w := range []float64{1, 0.25} {
			loss, d := make([]float64, 1), make([]float64, 1)
			nn.SigmoidBCE([]float64{c.z}, []int{c.y}, []float64{w}, loss, d)
			if !near(loss[0], c.loss, 1e-12) || !near(d[0], w*c.grad, 1e-12) {
				t.Errorf("z=%v y=%d w=%v: loss %.17g grad %.17g, want %.17g %.17g", c.z, c.y, w, loss[0], d[0], c.loss, w*c.grad)
			}
			l32, d32 := make([]float32, 1), make([]float32, 1)
			nn.SigmoidBCE([]float32{float32(c.z)}, []int{c.y}, []float32{float32(w)}, l32, d32)
			if !near(float64(l32[0]), c.loss, 1e-6) || !near(float64(d32[0]), w*c.grad, 1e-6) {
				t.Errorf("float32 z=%v y=%d: loss %v grad %v", c.z, c.y, l32[0], d32[0])
			}
		}
	}
}

// TestLossGradientsFiniteDifferences checks dlogits = ∂(Σ w_i·loss_i)/∂z
// by central differences on random batches.
func TestLossGradientsFiniteDifferences(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const n, k, h = 6, 4, 1e-6
	z := randVec(rng, n*k, 3)
	labels := make([]int, n)
	for i := range labels {
		labels[i] = rng.IntN(k)
	}
	w := randVec(rng, n, 1)
	total := func(f func(loss []float64)) float64 {
		loss := make([]float64, n)
		f(loss)
		var s float64
		for i, l := range loss {
			s += w[i] * l
		}
		return s
	}
	ce := func(loss []float64) { nn.SoftmaxCrossEntropy(z, labels, k, nil, loss, nil) }
	d := make([]float64, n*k)
	nn.SoftmaxCrossEntropy(z, labels, k, w, nil, d)
	for j := range z {
		orig := z[j]
		z[j] = orig + h
		fp := total(ce)
		z[j] = orig - h
		fm := total(ce)
		z[j] = orig
		if fd := (fp - fm) / (2 * h); !near(d[j], fd, 1e-7) {
			t.Errorf("softmax CE: dlogits[%d] = %.10g, finite differences %.10g", j, d[j], fd)
		}
	}
	zb := randVec(rng, n, 3)
	yb := make([]int, n)
	for i := range yb {
		yb[i] = rng.IntN(2)
	}
	bce := func(loss []float64) { nn.SigmoidBCE(zb, yb, nil, loss, nil) }
	db := make([]float64, n)
	nn.SigmoidBCE(zb, yb, w, nil, db)
	for j := range zb {
		orig := zb[j]
		zb[j] = orig + h
		fp := total(bce)
		zb[j] = orig - h
		fm := total(bce)
		zb[j] = orig
		if fd := (fp - fm) / (2 * h); !near(db[j], fd, 1e-7) {
			t.Errorf("sigmoid BCE: dlogits[%d] = %.10g, finite differences %.10g", j, db[j], fd)
		}
	}
}

func TestProbabilities(t *testing.T) {
	probs := make([]float64, 6)
	nn.Softmax([]float64{1, 2, 3, 1000, -1000, 1000}, 3, probs)
	want := []float64{0.09003057317038043, 0.24472847105479759, 0.6652409557748217, 0.5, 0, 0.5}
	for i := range want {
		if !near(probs[i], want[i], 1e-12) {
			t.Errorf("Softmax[%d] = %.17g, want %.17g", i, probs[i], want[i])
		}
	}
	p2 := make([]float32, 6)
	nn.Sigmoid([]float32{0, 2, -1000}, p2)
	want2 := []float64{0.5, 0.5, 1 - 0.8807970779778823, 0.8807970779778823, 1, 0}
	for i := range want2 {
		if !near(float64(p2[i]), want2[i], 1e-6) {
			t.Errorf("Sigmoid[%d] = %v, want %v", i, p2[i], want2[i])
		}
	}
}

func TestLossPanicsOnBadLabel(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("label 3 of 3 classes did not panic")
		}
	}()
	nn.SoftmaxCrossEntropy([]float64{0, 0, 0}, []int{3}, 3, nil, make([]float64, 1), nil)
}

func near(got, want, tol float64) bool {
	return math.Abs(got-want) <= tol*math.Max(1, math.Abs(want))
}

func to32(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, e := range v {
		out[i] = float32(e)
	}
	return out
}

func randVec(rng *rand.Rand, n int, sd float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = rng.NormFloat64() * sd
	}
	return v
}
