package models

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestLossProbsMatchesLossThenProbabilities: LossProbs writes the values
// Loss and Probabilities write, bit for bit, for a one-logit model (the
// fused pass) and a softmax model (the two calls), weighted or not.
func TestLossProbsMatchesLossThenProbabilities(t *testing.T) {
	for _, classes := range []int{2, 3} {
		rng := rand.New(rand.NewPCG(3, uint64(classes)))
		m, err := New[float32](Spec{Arch: "logistic", InShape: []int{6}, Classes: classes}, rng)
		if err != nil {
			t.Fatal(err)
		}
		const n = 64
		x, labels := teacherData[float32](rng, n, 6, classes)
		for i := range x {
			x[i] *= 4 // logits of both signs and some size
		}
		logits := m.Forward(x, n, true)
		out := m.OutDim()
		weight := make([]float32, n)
		for i := range weight {
			weight[i] = float32(rng.Float64())
		}
		for _, w := range [][]float32{nil, weight} {
			loss, dl, probs := make([]float32, n), make([]float32, n*out), make([]float32, n*classes)
			loss2, dl2, probs2 := make([]float32, n), make([]float32, n*out), make([]float32, n*classes)
			m.Loss(logits, labels, w, loss, dl)
			m.Probabilities(logits, n, probs)
			m.LossProbs(logits, labels, w, loss2, dl2, probs2)
			for name, pair := range map[string][2][]float32{"loss": {loss, loss2}, "gradient": {dl, dl2}, "probabilities": {probs, probs2}} {
				for i := range pair[0] {
					if math.Float32bits(pair[0][i]) != math.Float32bits(pair[1][i]) {
						t.Fatalf("%d classes, weighted %v: %s[%d] = %v, the separate calls gave %v", classes, w != nil, name, i, pair[1][i], pair[0][i])
					}
				}
			}
		}
	}
}
