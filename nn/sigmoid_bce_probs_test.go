package nn

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSigmoidBCEProbsMatchesSeparateCalls: the fused pass writes exactly
// what SigmoidBCE followed by Sigmoid write, bit for bit, for float32 and
// float64, with and without weights, loss or gradient, on random logits and
// the edge values (±0, ±745, ±Inf, NaN, tiny).
func TestSigmoidBCEProbsMatchesSeparateCalls(t *testing.T) {
	checkSigmoidBCEProbs[float32](t)
	checkSigmoidBCEProbs[float64](t)
}

func checkSigmoidBCEProbs[T Float](t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	zs := []float64{0, math.Copysign(0, -1), 1e-30, -1e-30, 745, -745, 90, -90, math.Inf(1), math.Inf(-1), math.NaN()}
	for range 3000 {
		zs = append(zs, rng.NormFloat64()*math.Pow(10, float64(rng.IntN(5)-2)))
	}
	n := len(zs)
	logits, labels, weight := make([]T, n), make([]int, n), make([]T, n)
	for i, z := range zs {
		logits[i], labels[i], weight[i] = T(z), rng.IntN(2), T(rng.Float64())
	}
	same := func(a, b T) bool {
		return math.Float64bits(float64(a)) == math.Float64bits(float64(b)) || a != a && b != b
	}
	for _, tc := range []struct {
		name                  string
		weight                []T
		wantLoss, wantDLogits bool
	}{
		{"all", weight, true, true}, {"no weight", nil, true, true}, {"no loss", weight, false, true}, {"no gradient", nil, true, false},
	} {
		var loss, dl, loss2, dl2 []T
		if tc.wantLoss {
			loss, loss2 = make([]T, n), make([]T, n)
		}
		if tc.wantDLogits {
			dl, dl2 = make([]T, n), make([]T, n)
		}
		probs, probs2 := make([]T, 2*n), make([]T, 2*n)
		SigmoidBCE(logits, labels, tc.weight, loss, dl)
		Sigmoid(logits, probs)
		SigmoidBCEProbs(logits, labels, tc.weight, loss2, dl2, probs2)
		for i := range n {
			if tc.wantLoss && !same(loss[i], loss2[i]) {
				t.Fatalf("%T %s: z = %v: loss %v, SigmoidBCE gave %v", logits[0], tc.name, logits[i], loss2[i], loss[i])
			}
			if tc.wantDLogits && !same(dl[i], dl2[i]) {
				t.Fatalf("%T %s: z = %v: gradient %v, SigmoidBCE gave %v", logits[0], tc.name, logits[i], dl2[i], dl[i])
			}
			if !same(probs[2*i], probs2[2*i]) || !same(probs[2*i+1], probs2[2*i+1]) {
				t.Fatalf("%T %s: z = %v: probabilities %v, Sigmoid gave %v", logits[0], tc.name, logits[i], probs2[2*i:2*i+2], probs[2*i:2*i+2])
			}
		}
	}
}
