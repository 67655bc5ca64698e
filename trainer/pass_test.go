package trainer

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fairdp/fairdp/models"
)

// TestPassParts: Run and its parts (Forward, LossGrad or Zero, Backward,
// the sequence DP-FERMI uses to add its fairness term to ∂loss/∂logits)
// leave the same gradients as the model's own Forward, Loss and Backward
// called directly, bit for bit; a term added to DLogits between LossGrad
// and Backward is back-propagated (gradients are linear in ∂/∂logits);
// an empty batch runs nothing.
func TestPassParts(t *testing.T) {
	job, _ := smallDPSGD(t, nil)
	fresh := func() *models.Model[float64] {
		m, err := models.New[float64](ModelSpec(job.Cfg, job.Train), rand.New(rand.NewPCG(1, 1)))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	var b Batch[float64]
	b.Idx = []int{3, 1, 4, 15, 9, 26, 5, 35}
	n := b.N()
	m := fresh()
	gather(job.Train, b.Idx, m.InSize(), &b, false)
	weight := make([]float64, n)
	for i := range weight {
		weight[i] = float64(i+1) / 10
	}
	grads := func(m *models.Model[float64]) []float64 {
		m.ParamGrads(nil)
		var g []float64
		for _, p := range m.Params() {
			g = append(g, p.Grad...)
		}
		return g
	}

	// The independent path: the model's own calls.
	ref := fresh()
	logits := ref.Forward(b.X, n, true)
	loss, dl := make([]float64, n), make([]float64, n*ref.OutDim())
	ref.Loss(logits, b.Labels, weight, loss, dl)
	ref.Backward(dl)
	want, wantLoss := grads(ref), sum(loss)

	var p Pass[float64]
	if got := p.Run(m, b, weight); got != wantLoss {
		t.Errorf("Run: loss %v, want %v", got, wantLoss)
	}
	for i, g := range grads(m) {
		if g != want[i] {
			t.Fatalf("Run: gradient %d is %v, want %v", i, g, want[i])
		}
	}

	// The parts, with a term added to ∂/∂logits: the loss's gradient plus
	// that of the term back-propagated alone (Zero, then the term).
	term := func(d []float64) {
		for i := range d {
			d[i] += 0.01 * float64(i%7-3)
		}
	}
	m = fresh()
	p.LossGrad(m, b, p.Forward(m, b), weight)
	term(p.DLogits)
	p.Backward(m)
	both := grads(m)
	m = fresh()
	p.Forward(m, b)
	p.Zero(m, b)
	term(p.DLogits)
	p.Backward(m)
	alone, moved := grads(m), 0.0
	for i := range both {
		if d := math.Abs(both[i] - (want[i] + alone[i])); d > 1e-12 {
			t.Fatalf("gradient %d: loss and term together %v, apart %v + %v", i, both[i], want[i], alone[i])
		}
		moved = max(moved, math.Abs(alone[i]))
	}
	if moved == 0 {
		t.Error("the term added to DLogits was not back-propagated")
	}

	m = fresh()
	if p.Forward(m, Batch[float64]{}) != nil || p.Run(m, Batch[float64]{}, nil) != 0 {
		t.Error("an empty batch ran")
	}
	for i, g := range grads(m) {
		if g != 0 {
			t.Fatalf("empty batch: gradient %d is %v", i, g)
		}
	}
}
