package dpops

import (
	"testing"

	"fairdp/nn"
)

// TestNoiseAndScale: with no noise the gradients are only scaled; with
// noise every value moves, and the hardened variant lands on its lattice.
func TestNoiseAndScale(t *testing.T) {
	seed := uint64(3)
	r, _ := NewRand(&seed)
	p := &nn.Param[float64]{Grad: []float64{2, -4, 6}}
	if err := NoiseAndScale(r, []*nn.Param[float64]{p}, 0, 0.5); err != nil {
		t.Fatal(err)
	}
	if p.Grad[0] != 1 || p.Grad[1] != -2 || p.Grad[2] != 3 {
		t.Errorf("std 0: %v, want the gradients halved", p.Grad)
	}
	q := &nn.Param[float64]{Grad: []float64{1, 1, 1}}
	if err := NoiseAndScaleHardened(r, []*nn.Param[float64]{q}, 1, 1); err != nil {
		t.Fatal(err)
	}
	g := ceilPowerOfTwo(2 / float64(binomialBound))
	for i, v := range q.Grad {
		if v == 1 || v/g != float64(int64(v/g)) {
			t.Errorf("hardened value %d = %v: unchanged or off the lattice %v", i, v, g)
		}
	}
	if err := NoiseAndScale(r, []*nn.Param[float64]{p}, -1, 1); err == nil {
		t.Error("negative std accepted")
	}
}
