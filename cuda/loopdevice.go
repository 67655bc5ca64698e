package cuda

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/fairdp/fairdp/devstep"
	"github.com/fairdp/fairdp/nn"
)

// TrainerDevice is one training run's model resident on a device, as the
// training loop sees it (trainer.Device, which it satisfies without either
// package importing the other; the values its methods exchange are
// devstep's): Load puts a model's nn layers and nn optimizer on the device
// as a DeviceNet, Step and FermiStep run DP-SGD's and DP-FERMI's steps
// there, Params brings the parameters back. The binary registers it for
// Config.Device "cuda" (cmd/fairdp, in builds with the tag cuda or
// cudaemu): trainer.RegisterDevice(trainer.DeviceCUDA, CheckDevice, OpenTrainerDevice).
type TrainerDevice struct {
	dev   Device
	name  string // dev.Name(), kept after Close
	net   *DeviceNet
	fermi *DeviceFermi
	lr    float32
	// pending is the last step's result, not yet handed to the loop: a
	// step returns the one before's loss (see Step).
	pending *Pending
	tf32    bool // SetTF32
	// closed makes Close idempotent: the loop closes on every way out.
	closed bool
}

// OpenTrainerDevice opens the device OpenDevice opens for a training run.
func OpenTrainerDevice() (*TrainerDevice, error) {
	dev, err := OpenDevice()
	if err != nil {
		return nil, err
	}
	return &TrainerDevice{dev: dev, name: dev.Name()}, nil
}

// Name is the device's name (the GPU's, or the emulated device's), and
// whether the GEMMs use TF32 (SetTF32), so that the report records it.
func (d *TrainerDevice) Name() string {
	if !d.tf32 {
		return d.name
	}
	if _, ok := d.dev.(tf32Device); !ok {
		return d.name + "; TF32 asked for: a no-op on this device (its GEMMs are FP32)"
	}
	return d.name + "; TF32 tensor-core GEMMs in the forward and backward passes (released sums in FP32)"
}

// SetTF32 makes the model's forward and backward GEMMs use TF32 tensor
// cores (DeviceNet.SetTF32: the released sums stay FP32, so the clip bound
// holds); the emulated device rounds the GEMMs' inputs to TF32 instead.
// Call it before Load.
func (d *TrainerDevice) SetTF32(on bool) error {
	if d.net != nil {
		return errors.New("cuda: TrainerDevice.SetTF32 after Load")
	}
	d.tf32 = on
	return nil
}

// Load builds the device's copy of a model from its layers (inSize values
// per sample; their current parameters are the initial ones) with the
// update opt applies on the CPU: nn.SGD (with momentum) or nn.Adam, weight
// decay included.
func (d *TrainerDevice) Load(layers []nn.Layer[float32], inSize int, opt nn.Optimizer[float32]) error {
	if d.net != nil {
		return errors.New("cuda: TrainerDevice.Load: a model is already loaded")
	}
	o, lr, err := deviceOptimizer(opt)
	if err != nil {
		return err
	}
	spec, err := netSpec(layers, inSize)
	if err != nil {
		return err
	}
	net, err := NewDeviceNet(d.dev, spec)
	if err != nil {
		return err
	}
	if err := net.SetOptimizer(o); err != nil {
		return errors.Join(err, net.Close())
	}
	net.SetTF32(d.tf32)
	d.net, d.lr = net, lr
	return nil
}

// deviceOptimizer is opt as a DeviceNet applies it, and its rate.
func deviceOptimizer(opt nn.Optimizer[float32]) (Optimizer, float32, error) {
	var o Optimizer
	var lr float32
	switch u := opt.(type) {
	case *nn.Adam[float32]:
		lr, o = u.LR, Optimizer{Kind: "adam", Beta1: u.Beta1, Beta2: u.Beta2, Eps: u.Eps, WeightDecay: u.WeightDecay}
	case *nn.SGD[float32]:
		lr, o = u.LR, Optimizer{Kind: "sgd", Momentum: u.Momentum, WeightDecay: u.WeightDecay}
	default:
		return o, 0, fmt.Errorf("Device cuda has no update for the optimizer %T", opt)
	}
	return o, lr, o.Validate()
}

// loaded says why a step cannot run yet.
func (d *TrainerDevice) loaded() error {
	if d.net == nil {
		return errors.New("cuda: TrainerDevice: a step before Load")
	}
	return nil
}

// Step implements trainer.Device: one DP-SGD step (see devstep.DPSGD) on
// the batch x with labels; the noise key is drawn from s.Noise first. The
// step is left running on the device: what Step returns is the summed
// loss of the step before it (0 after Load or Flush), read once this one
// is queued, so the device never idles while the host waits for it. An
// error there (the earlier step's clip check) is that step's.
func (d *TrainerDevice) Step(x []float32, labels []int32, s devstep.DPSGD) (float64, error) {
	if err := d.loaded(); err != nil {
		return 0, err
	}
	step := DPSGDStep{Clip: s.Clip, NoiseStd: s.NoiseStd, Scale: s.Scale, LR: d.lr}
	if s.Noise != nil {
		step.Seed = NewNoiseSeed(s.Noise)
	}
	if g := s.Group; g != nil {
		step.Group = &GroupClip{Groups: g.Groups, Count: g.Count, OnDevice: g.OnDevice, Rule: func(above, atMost []int32) (GroupRule, error) {
			r, err := g.Rule(above, atMost)
			return GroupRule(r), err
		}}
	}
	var loss float64
	err := onDevice(d.dev, func() error {
		p, err := d.net.step(x, labels, step)
		if err != nil {
			return err
		}
		loss, err = d.handOver(p)
		return err
	})
	return loss, err
}

// handOver makes p the pending result and returns the one before's (on the
// device's thread).
func (d *TrainerDevice) handOver(p *Pending) (float64, error) {
	prev := d.pending
	d.pending = p
	if prev == nil {
		return 0, nil
	}
	loss, err := prev.wait()
	if err != nil {
		return 0, fmt.Errorf("the step before (a device step's checks come back one step late): %w", err)
	}
	return loss, nil
}

// Flush implements trainer.Device: it waits for the last step and returns
// its summed loss (0 when none is pending).
func (d *TrainerDevice) Flush() (float64, error) {
	if d.pending == nil {
		return 0, nil
	}
	p := d.pending
	d.pending = nil
	return p.Wait()
}

// FermiStep implements trainer.Device: one DP-FERMI step (DeviceFermi) on
// the batch; finish is the host's half, given the batch's sums, and calls
// theta with the run's noise stream where θ's noise key is to be drawn. As
// Step, it returns the summed loss of the step before it. When the plan
// carries the noise stream (devstep.FermiStep.Noise), or adds no noise,
// the step waits for nothing: θ's key is drawn here, the sums come back
// with the step's result, and finish runs when that is read (the next
// step's FermiStep or Step, or Flush), so the loop must read it (Flush)
// before it plans a step with W.
func (d *TrainerDevice) FermiStep(x []float32, labels []int32, groups []int, s devstep.FermiStep,
	finish func(devstep.FermiSums, func(noise *rand.Rand) error) error) (float64, error) {
	if err := d.loaded(); err != nil {
		return 0, err
	}
	if d.fermi == nil {
		d.fermi = NewDeviceFermi(d.net)
	}
	s.LR = d.lr
	var loss float64
	if s.Noise != nil || s.NoiseStd == 0 {
		// θ's key is drawn now, from the stream the plan carries (nothing
		// is drawn without noise): the step is queued whole and its host
		// half runs when its result is read (the next step's issue, or
		// Flush), with a theta that draws nothing.
		var seed NoiseSeed
		if s.Noise != nil {
			seed = NewNoiseSeed(s.Noise)
		}
		err := onDevice(d.dev, func() error {
			p, err := d.fermi.stepAsync(x, labels, groups, s, seed, func(sums FermiSums) error {
				return finish(sums, func(*rand.Rand) error { return nil })
			})
			if err != nil {
				return err
			}
			loss, err = d.handOver(p)
			return err
		})
		return loss, err
	}
	err := onDevice(d.dev, func() error {
		l, err := d.fermi.step(x, labels, groups, s, func(sums FermiSums) (NoiseSeed, error) {
			var seed NoiseSeed
			err := finish(sums, func(noise *rand.Rand) error {
				seed = NewNoiseSeed(noise)
				return nil
			})
			return seed, err
		})
		if err != nil {
			return err
		}
		// The loss came back mid-step with the sums; it is handed over one
		// step late all the same, as Step's is.
		loss, err = d.handOver(&Pending{done: true, loss: l})
		return err
	})
	return loss, err
}

// Params implements trainer.Device: the parameters, one slice per buffer
// in the order of the layers' nn.Params (nil before Load).
func (d *TrainerDevice) Params() ([][]float32, error) {
	if d.net == nil {
		return nil, nil
	}
	return d.net.Params()
}

// Close implements trainer.Device: frees the model and the device; it may
// be called more than once.
func (d *TrainerDevice) Close() error {
	if d.closed {
		return nil
	}
	d.closed = true
	var err error
	if d.fermi != nil {
		err = d.fermi.Close()
	}
	if d.net != nil {
		err = errors.Join(err, d.net.Close())
	}
	return errors.Join(err, d.dev.Close())
}

// netSpec describes layers for NewDeviceNet, with their current
// parameters: linear, convolution, ReLU, max-pool and group-norm layers
// (flatten is free: NCHW rows are already flat). Other layers are refused,
// naming the layer and what the device runs.
func netSpec(layers []nn.Layer[float32], inSize int) ([]NetLayer, error) {
	var spec []NetLayer
	size := inSize
	for i, l := range layers {
		ls, ok := l.(nn.Describer)
		if !ok {
			return nil, fmt.Errorf("Device cuda: layer %d (%T) cannot be described", i, l)
		}
		s := ls.Spec()
		switch s.Kind {
		case nn.KindLinear:
			if s.NoBias {
				return nil, fmt.Errorf("Device cuda: layer %d %s has no bias; the device's linear layer always has one (train it with Device cpu)", i, l.Name())
			}
			p := l.Params()
			spec = append(spec, NetLayer{Kind: "linear", In: s.In, Out: s.Out, Weight: p[0].Value, Bias: p[1].Value})
			size = s.Out
		case nn.KindConv2d:
			if win, ok := s.ConvWindow(); !ok || !win.IsSquare() {
				return nil, fmt.Errorf("Device cuda: layer %d %s has a per-axis window; the device's convolution has a square kernel "+
					"and the same stride and pad on both axes (train it with Device cpu)", i, l.Name())
			}
			p := l.Params()
			g := ConvGeom{InC: s.C, InH: s.H, InW: s.W, OutC: s.OutC, K: s.K, Stride: s.Stride, Pad: s.Pad}
			var bias []float32 // nil: a convolution without a bias, W its only parameter
			if !s.NoBias {
				bias = p[1].Value
			}
			spec = append(spec, NetLayer{Kind: "conv", Conv: g, Weight: p[0].Value, Bias: bias})
			oh, ow := g.OutHW()
			size = s.OutC * oh * ow
		case nn.KindReLU:
			spec = append(spec, NetLayer{Kind: "relu", Size: size})
		case nn.KindMaxPool2d:
			g := PoolGeom{C: s.C, H: s.H, W: s.W, K: s.K}
			spec = append(spec, NetLayer{Kind: "maxpool", Pool: g})
			oh, ow := g.OutHW()
			size = s.C * oh * ow
		case nn.KindGroupNorm:
			p := l.Params()
			eps, ok := l.(interface{ Eps() float64 })
			if !ok {
				return nil, fmt.Errorf("Device cuda: group norm layer %d (%T) does not say its ε", i, l)
			}
			g := GroupGeom{C: s.C, H: s.H, W: s.W, Groups: s.Groups, Eps: eps.Eps()}
			spec = append(spec, NetLayer{Kind: "groupnorm", Norm: g, Weight: p[0].Value, Bias: p[1].Value})
			size = g.Size()
		case nn.KindFlatten:
		default:
			return nil, fmt.Errorf("Device cuda runs linear, conv2d, relu, maxpool2d, groupnorm and flatten layers; layer %d is %s", i, s.Kind)
		}
	}
	return spec, nil
}
