package cuda

import (
	"fmt"
	"math"
)

// Optimizer is the update a DeviceNet's step applies to each parameter
// buffer's released gradient g (the noised clipped sum times
// DPSGDStep.Scale), with package nn's conventions so that a device run and
// a CPU run update alike:
//   - Kind "sgd" (or empty) with Momentum 0 is nn.SGD's plain update
//     θ −= LR·(g + WeightDecay·θ);
//   - Kind "sgd" with Momentum μ > 0 is nn.SGD's heavy ball:
//     d = g + WeightDecay·θ, v = μ·v + d (v = d on the first step), θ −= LR·v;
//   - Kind "adam" is nn.Adam with bias correction and coupled weight decay.
//
// The zero value is plain SGD. The optimizer's state (velocities, Adam's
// moments and step count) lives on the device next to the parameters.
type Optimizer struct {
	Kind        string  // "sgd" (or "") or "adam"
	Momentum    float32 // sgd: μ (finite; nn.SGD takes any); 0 is plain SGD
	Beta1       float32 // adam: β1 in [0, 1)
	Beta2       float32 // adam: β2 in [0, 1)
	Eps         float32 // adam: ε > 0
	WeightDecay float32 // ≥ 0, for both kinds
}

// Validate says what is wrong with o, naming its fields.
func (o Optimizer) Validate() error {
	in01 := func(v float32) bool { return v >= 0 && v < 1 }
	switch o.Kind {
	case "", "sgd":
		if math.IsNaN(float64(o.Momentum)) || math.IsInf(float64(o.Momentum), 0) {
			return fmt.Errorf("cuda: Optimizer.Momentum %v, want a finite number", o.Momentum)
		}
	case "adam":
		if !in01(o.Beta1) || !in01(o.Beta2) || !(o.Eps > 0) || math.IsInf(float64(o.Eps), 0) {
			return fmt.Errorf("cuda: Optimizer Beta1 %v, Beta2 %v, Eps %v: want β1, β2 in [0, 1) and a finite ε > 0", o.Beta1, o.Beta2, o.Eps)
		}
	default:
		return fmt.Errorf("cuda: Optimizer.Kind %q, want sgd or adam", o.Kind)
	}
	if !(o.WeightDecay >= 0) || math.IsInf(float64(o.WeightDecay), 0) {
		return fmt.Errorf("cuda: Optimizer.WeightDecay %v, want a finite number ≥ 0", o.WeightDecay)
	}
	return nil
}

// stateful is whether the update keeps per-parameter state.
func (o Optimizer) stateful() bool { return o.Kind == "adam" || o.Momentum != 0 }

// optState is a DeviceNet's optimizer and its device state: per parameter
// buffer (indexed by its noise stream, which numbers the buffers) the
// velocity (momentum) or the first and second moments (Adam), allocated and
// zeroed on the first update, in an arena of their own so that growing the
// batch buffers never frees them.
type optState struct {
	arena
	o     Optimizer
	steps int // updates applied so far: Adam's t, momentum's first step
	state [][2]DevicePtr
}

// SetOptimizer makes the net's steps update with o instead of plain SGD.
// It must be called before the first Step: the state starts then.
func (net *DeviceNet) SetOptimizer(o Optimizer) error {
	if err := o.Validate(); err != nil {
		return err
	}
	if net.opt.steps > 0 {
		return fmt.Errorf("cuda: DeviceNet.SetOptimizer after %d steps: the optimizer is chosen before the first step", net.opt.steps)
	}
	net.opt.o = o
	return nil
}

// buffers returns the state of the parameter buffer on stream (count
// values), allocating and zeroing it on first use.
func (st *optState) buffers(stream uint32, count int) ([2]DevicePtr, error) {
	for len(st.state) <= int(stream) {
		st.state = append(st.state, [2]DevicePtr{})
	}
	b := &st.state[stream]
	if b[0] != 0 {
		return *b, nil
	}
	var err error
	n := 1
	if st.o.Kind == "adam" {
		n = 2
	}
	for k := range n {
		p := st.alloc(4*count, &err)
		if err == nil {
			err = launch1(st.dev, "fairdp_fill_u32", count, Ptr(p), U32(0), Int(count))
		}
		b[k] = p
	}
	if err != nil {
		*b = [2]DevicePtr{}
		return *b, fmt.Errorf("cuda: optimizer state for parameter buffer %d (%d values): %w", stream, count, err)
	}
	return *b, nil
}

// update scales grad (count values, already noised) by s.Scale and applies
// it to w with the net's optimizer (plain SGD when st is nil).
func (st *optState) update(d Device, w, grad DevicePtr, count int, s DPSGDStep, stream uint32) error {
	var o Optimizer
	if st != nil {
		o = st.o
	}
	scale, lr, wd := F32(float32(s.Scale)), F32(s.LR), F32(o.WeightDecay)
	if !o.stateful() {
		return launch1(d, "fairdp_sgd_step", count, Ptr(w), Ptr(grad), Int(count), scale, lr, wd, Ptr(s.stop), Int(s.stopN))
	}
	b, err := st.buffers(stream, count)
	if err != nil {
		return err
	}
	if o.Kind != "adam" {
		first := 0
		if st.steps == 1 {
			first = 1
		}
		return launch1(d, "fairdp_momentum_step", count, Ptr(w), Ptr(grad), Ptr(b[0]), Int(count), scale, lr,
			F32(o.Momentum), wd, Int(first), Ptr(s.stop), Int(s.stopN))
	}
	// nn.Adam's bias corrections, in Go's float64 arithmetic.
	b1, b2 := float64(o.Beta1), float64(o.Beta2)
	c1 := 1 - math.Pow(b1, float64(st.steps))
	c2 := 1 - math.Pow(b2, float64(st.steps))
	return launch1(d, "fairdp_adam_step", count, Ptr(w), Ptr(grad), Ptr(b[0]), Ptr(b[1]), Int(count), scale, wd,
		F64(b1), F64(b2), F64(float64(o.Eps)), F64(float64(s.LR)/c1), F64(c2), Ptr(s.stop), Int(s.stopN))
}
