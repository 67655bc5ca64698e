package trainer

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"fairdp/cuda"
	"fairdp/dpops"
	"fairdp/dpops/accounting"
	"fairdp/models"
	"fairdp/nn"
)

// DeviceResident is implemented by an algorithm whose step keeps the
// model's parameters on a device and updates them there (the optimizer's
// update is part of its step). Run then does not apply its own optimizer,
// calls Sync before anything reads the host model (each epoch's
// evaluation, the report, the checkpoint) and Close when the run ends.
type DeviceResident[T nn.Float] interface {
	// Sync copies the parameters from the device into m.
	Sync(m Model[T]) error
	// Close frees the device; it may be called more than once.
	Close() error
}

// deviceStep runs SGD or DP-SGD on a CUDA device (package cuda's DeviceNet,
// on a GPU or, in a test build, the emulated device): the parameters live on
// the device for the whole run, a step uploads only the batch's inputs and
// labels and brings back the summed loss (and the clip check), and the
// parameters come back to the host model only when Run calls Sync. The host
// algorithm it wraps supplies everything that is not the step: the name,
// the sampler, the accountant and its receipt, so batches and privacy
// accounting are the CPU run's. The update is plain SGD at Config.LR (the
// only optimizer on the device; Config refuses the others).
type deviceStep struct {
	host   Algorithm[float32] // *SGD or *DPSGD
	dp     *DPSGD[float32]    // nil for SGD
	lr     float32
	seeded bool
	dev    cuda.Device
	name   string // dev.Name(), kept for the report after Close
	net    *cuda.DeviceNet
	labels []int32
	closed bool
}

var (
	_ DeviceResident[float32] = (*deviceStep)(nil)
	_ Finisher[float32]       = (*deviceStep)(nil)
)

// onDevice wraps alg (SGD or DP-SGD with no clip policy) into a step on the
// device OpenDevice opens; any other algorithm is refused, never run on the
// CPU instead.
func onDevice(job *Job, alg Algorithm[float32]) (Algorithm[float32], error) {
	d := &deviceStep{host: alg, lr: float32(job.Cfg.LR), seeded: job.Source.Seeded}
	switch a := alg.(type) {
	case *SGD[float32]:
	case *DPSGD[float32]:
		if a.Policy != nil {
			return nil, deviceRefusal(alg.Name())
		}
		d.dp = a
	default:
		return nil, deviceRefusal(alg.Name())
	}
	dev, err := cuda.OpenDevice()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", FieldErrors{{Field: "Device", Msg: "cuda"}}, err)
	}
	d.dev, d.name = dev, dev.Name()
	return d, nil
}

// deviceAlgorithms are the Config.Algo values that run on Device "cuda".
var deviceAlgorithms = []string{"sgd", "dpsgd"}

func deviceRefusal(algo string) error {
	return FieldErrors{{Field: "Device", Msg: fmt.Sprintf("cuda runs Algo %v only; %s has no device step (use Device cpu)",
		deviceAlgorithms, algo)}}
}

// Name implements Algorithm.
func (d *deviceStep) Name() string { return d.host.Name() }

// Sampler implements Algorithm: the host algorithm's.
func (d *deviceStep) Sampler(n int, r *rand.Rand) (dpops.Sampler, error) { return d.host.Sampler(n, r) }

// Step implements Algorithm. The model m is read once, on the first step,
// to put its initial parameters on the device; after that it is stale until
// Sync. SGD is the device's DP-SGD step with no bound any finite gradient
// reaches (every clip factor is exactly 1), no noise and the batch mean;
// DP-SGD draws a fresh Philox key per step from the run's noise stream and
// charges the accountant as the CPU step does.
func (d *deviceStep) Step(m Model[float32], b Batch[float32]) (float64, error) {
	if d.net == nil {
		spec, err := deviceNetSpec(m)
		if err != nil {
			return 0, err
		}
		if d.net, err = cuda.NewDeviceNet(d.dev, spec); err != nil {
			return 0, err
		}
	}
	n := b.N()
	d.labels = grow(d.labels, n)
	for i, y := range b.Labels {
		d.labels[i] = int32(y)
	}
	var s cuda.DPSGDStep
	if d.dp == nil {
		if n == 0 {
			return 0, nil
		}
		s = cuda.DPSGDStep{Clip: math.MaxFloat64, Scale: 1 / float64(n), LR: d.lr}
	} else {
		a := d.dp
		s = cuda.DPSGDStep{Clip: a.Clip, NoiseStd: a.Sigma * a.Clip, Scale: 1 / float64(a.Batch), LR: d.lr,
			Seed: cuda.NewNoiseSeed(a.noise)}
	}
	loss, err := d.net.Step(b.X, d.labels, s)
	if err != nil {
		return 0, err
	}
	if d.dp != nil {
		return loss, d.dp.acc.Step(d.dp.Mechanism(), 1)
	}
	return loss, nil
}

// Receipt implements Algorithm: the host algorithm's, with a note on how
// the noise was generated when the run is private.
func (d *deviceStep) Receipt() (accounting.Receipt, error) {
	r, err := d.host.Receipt()
	if err == nil && d.dp != nil {
		r.AddNote(deviceNoiseNote(d.seeded))
	}
	return r, err
}

// deviceNoiseNote says how a device run drew its noise. Philox is not a
// CSPRNG, so the note never says the noise came from one: only the per-step
// keys did, in an unseeded run.
func deviceNoiseNote(seeded bool) string {
	key := "keyed afresh for every step with 128 bits drawn from the run's CSPRNG stream (ChaCha8 keyed from crypto/rand)"
	if seeded {
		key = "keyed for every step with 128 bits drawn from the run's seeded ChaCha8 stream: reproducible, and predictable from the seed"
	}
	return "noise: the Gaussian noise was generated on the CUDA device by Philox4x32-10 (a statistically strong " +
		"counter-based generator, not a cryptographically secure one), " + key
}

// Sync implements DeviceResident: the device's parameters into m.
func (d *deviceStep) Sync(m Model[float32]) error {
	if d.net == nil {
		return nil // no step ran: m holds the initial parameters
	}
	vals, err := d.net.Params()
	if err != nil {
		return err
	}
	ps := m.Params()
	if len(ps) != len(vals) {
		return fmt.Errorf("device model has %d parameter blocks, the host model %d", len(vals), len(ps))
	}
	for i, p := range ps {
		if len(p.Value) != len(vals[i]) {
			return fmt.Errorf("device parameter block %d has %d values, the host model's %d", i, len(vals[i]), len(p.Value))
		}
		copy(p.Value, vals[i])
	}
	return nil
}

// Close implements DeviceResident.
func (d *deviceStep) Close() error {
	if d.closed {
		return nil
	}
	d.closed = true
	var err error
	if d.net != nil {
		err = d.net.Close()
	}
	return errors.Join(err, d.dev.Close())
}

// Finish implements Finisher: the report's backend names the device (Run
// calls it after Close).
func (d *deviceStep) Finish(_ Model[float32], _ *Job, rep *Report) error {
	rep.Backend = "cuda: " + d.name
	return nil
}

// deviceNetSpec describes m's layers for cuda.NewDeviceNet, with its
// current parameters: linear, convolution, ReLU, max-pool and group-norm
// layers (flatten is free: NCHW rows are already flat). Other layers are
// refused.
func deviceNetSpec(m Model[float32]) ([]cuda.NetLayer, error) {
	mm, ok := m.(*models.Model[float32])
	if !ok {
		return nil, fmt.Errorf("Device cuda needs a *models.Model (fairdp's zoo or nn layers), not a %T", m)
	}
	var spec []cuda.NetLayer
	size := m.InSize()
	for i, l := range mm.Layers {
		ls, ok := l.(nn.Describer)
		if !ok {
			return nil, fmt.Errorf("Device cuda: layer %d (%T) cannot be described", i, l)
		}
		s := ls.Spec()
		switch s.Kind {
		case nn.KindLinear:
			p := l.Params()
			spec = append(spec, cuda.NetLayer{Kind: "linear", In: s.In, Out: s.Out, Weight: p[0].Value, Bias: p[1].Value})
			size = s.Out
		case nn.KindConv2d:
			p := l.Params()
			g := cuda.ConvGeom{InC: s.C, InH: s.H, InW: s.W, OutC: s.OutC, K: s.K, Stride: s.Stride, Pad: s.Pad}
			spec = append(spec, cuda.NetLayer{Kind: "conv", Conv: g, Weight: p[0].Value, Bias: p[1].Value})
			oh, ow := g.OutHW()
			size = s.OutC * oh * ow
		case nn.KindReLU:
			spec = append(spec, cuda.NetLayer{Kind: "relu", Size: size})
		case nn.KindMaxPool2d:
			g := cuda.PoolGeom{C: s.C, H: s.H, W: s.W, K: s.K}
			spec = append(spec, cuda.NetLayer{Kind: "maxpool", Pool: g})
			oh, ow := g.OutHW()
			size = s.C * oh * ow
		case nn.KindGroupNorm:
			p := l.Params()
			eps, ok := l.(interface{ Eps() float64 })
			if !ok {
				return nil, fmt.Errorf("Device cuda: group norm layer %d (%T) does not say its ε", i, l)
			}
			g := cuda.GroupGeom{C: s.C, H: s.H, W: s.W, Groups: s.Groups, Eps: eps.Eps()}
			spec = append(spec, cuda.NetLayer{Kind: "groupnorm", Norm: g, Weight: p[0].Value, Bias: p[1].Value})
			size = g.Size()
		case nn.KindFlatten:
		default:
			return nil, fmt.Errorf("Device cuda runs linear, conv2d, relu, maxpool2d, groupnorm and flatten layers; layer %d is %s", i, s.Kind)
		}
	}
	return spec, nil
}

// checkDeviceConfig adds what Device "cuda" cannot run to errs: only SGD
// and DP-SGD, float32, and the plain SGD update are on the device.
func checkDeviceConfig(c *Config, errs *FieldErrors) {
	if c.Device != "cuda" {
		return
	}
	ok := false
	for _, a := range deviceAlgorithms {
		ok = ok || c.Algo == a
	}
	if !ok {
		errs.add("Algo", "%q has no device step: Device cuda runs %v only", c.Algo, deviceAlgorithms)
	}
	if c.DType != "float32" {
		errs.add("DType", "%s: Device cuda trains float32 only", c.DType)
	}
	if c.Optimizer != "sgd" {
		errs.add("Optimizer", "%s: Device cuda has the plain SGD update only (Optimizer sgd)", c.Optimizer)
	}
	if c.Momentum != 0 {
		errs.add("Momentum", "%v: Device cuda has the plain SGD update only (Momentum 0)", c.Momentum)
	}
	if c.Fair.WeightDecay != 0 {
		errs.add("Fair.WeightDecay", "%v: Device cuda has no weight decay (0)", c.Fair.WeightDecay)
	}
	if c.Baseline {
		errs.add("Baseline", "is not run on Device cuda (train the baseline with Device cpu)")
	}
}
