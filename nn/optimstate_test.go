package nn_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/nn"
)

// TestOptimizerStateResumes: an optimizer rebuilt from the State of one
// that took two steps takes the same third step bit for bit (Adam and SGD
// with momentum); without the state it would not (the test can fail), and
// a state of other block sizes is refused.
func TestOptimizerStateResumes(t *testing.T) {
	mk := map[string]func() nn.StatefulOptimizer[float32]{
		"adam": func() nn.StatefulOptimizer[float32] { return nn.NewAdam[float32](0.1) },
		"sgd-momentum": func() nn.StatefulOptimizer[float32] {
			o := nn.NewSGD[float32](0.1)
			o.Momentum, o.WeightDecay = 0.9, 0.01
			return o
		},
	}
	grads := [][]float32{{0.5, -0.25, 1}, {0.125, 0.5, -1}, {-0.75, 0.25, 0.5}}
	for name, newOpt := range mk {
		params := func() []*nn.Param[float32] {
			return []*nn.Param[float32]{
				{Name: "w", Shape: []int{2}, Value: []float32{1, -2}, Grad: make([]float32, 2)},
				{Name: "b", Shape: []int{1}, Value: []float32{0.5}, Grad: make([]float32, 1)},
			}
		}
		step := func(o nn.Optimizer[float32], ps []*nn.Param[float32], g []float32) {
			copy(ps[0].Grad, g[:2])
			ps[1].Grad[0] = g[2]
			o.Step(ps)
		}
		straight, ps := newOpt(), params()
		for _, g := range grads {
			step(straight, ps, g)
		}
		first, qs := newOpt(), params()
		step(first, qs, grads[0])
		step(first, qs, grads[1])
		state := first.State(qs)
		resumed, fresh := newOpt(), newOpt()
		rs, fs := params(), params()
		for i := range rs {
			copy(rs[i].Value, qs[i].Value)
			copy(fs[i].Value, qs[i].Value)
		}
		if err := resumed.SetState(rs, state); err != nil {
			t.Fatal(err)
		}
		step(resumed, rs, grads[2])
		step(fresh, fs, grads[2])
		for i := range ps {
			if !slices.Equal(ps[i].Value, rs[i].Value) {
				t.Errorf("%s: resumed %v, uninterrupted %v", name, rs[i].Value, ps[i].Value)
			}
			if slices.Equal(ps[i].Value, fs[i].Value) {
				t.Errorf("%s: a fresh optimizer took the same step: the state is not exercised", name)
			}
		}
		bad := first.State(qs)
		bad.Blocks[0].Slots[0] = bad.Blocks[0].Slots[0][:1]
		if err := newOpt().SetState(qs, bad); err == nil || !strings.Contains(err.Error(), "has 1 values, want 2") {
			t.Errorf("%s: a state of another size: %v", name, err)
		}
	}
}

// TestDropoutStateResumes: a Dropout layer restored from MarshalBinary
// draws the masks the original draws next.
func TestDropoutStateResumes(t *testing.T) {
	a, b := nn.NewDropout[float64](0.5, 9), nn.NewDropout[float64](0.5, 9)
	x := make([]float64, 64)
	for i := range x {
		x[i] = 1
	}
	a.Forward(x, 1, true)
	st, err := a.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.UnmarshalBinary(st); err != nil {
		t.Fatal(err)
	}
	if ya, yb := slices.Clone(a.Forward(x, 1, true)), b.Forward(x, 1, true); !slices.Equal(ya, yb) {
		t.Error("the restored layer drew other masks")
	}
}
