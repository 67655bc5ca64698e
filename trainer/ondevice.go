package trainer

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/fairdp/fairdp/devstep"
	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/models"
	"github.com/fairdp/fairdp/nn"
)

// deviceStep runs SGD, DP-SGD, DPSGD-F or Naive on a registered Device
// (package cuda's, on a GPU or, in a test build, the emulated device): the
// parameters and the optimizer's state live on the device for the whole
// run, a step uploads only the batch's inputs and labels (and groups, for a
// clip policy) and brings back the summed loss, the clip check and a
// policy's per-group counts, and the parameters come back to the host model
// only when Run calls Sync. The host algorithm it wraps supplies everything
// that is not the gradient work: the name, the sampler, a clip policy's
// decisions (DPSGD-F's bounds, Naive's weights, and the noisy counts they
// release), the accountant and its receipt, so batches and privacy
// accounting are the CPU run's. The update is Config's optimizer (plain SGD,
// SGD with momentum or Adam, with Fair.WeightDecay), as Run applies it on
// the CPU.
type deviceStep struct {
	host   Algorithm[float32] // *SGD, or an algorithm that runs DPSGD
	dp     *DPSGD[float32]    // the DP-SGD host runs; nil for SGD
	opt    nn.Optimizer[float32]
	seeded bool
	dev    Device
	device DeviceKind // the Config.Device value, for the report
	loaded bool
	labels []int32
	groups []int32
	counts [2][]int
	closed bool
	tf32   bool // Config.TF32: the receipt says so
}

var _ deviceGradients[float32] = (*deviceStep)(nil)

// dpsgdBased is an algorithm whose steps are the trainer's DP-SGD: DPSGD
// itself, and DPSGD-F and Naive (package dpsgdf), which run it with a clip
// policy.
type dpsgdBased interface {
	Core() *DPSGD[float32]
}

// onDevice wraps alg (SGD, an algorithm that runs DP-SGD: dpsgd, dpsgdf,
// naive, or DP-FERMI) into a step on the device job.Cfg.Device names; any
// other algorithm is refused, never run on the CPU instead.
func onDevice(job *Job, alg Algorithm[float32]) (Algorithm[float32], error) {
	d := &deviceStep{host: alg, seeded: job.Source.Seeded, opt: newOptimizer[float32](job.Cfg), device: job.Cfg.Device}
	var ermi ermiOnDevice
	switch a := alg.(type) {
	case *SGD[float32]:
	case ermiOnDevice:
		ermi = a
	case dpsgdBased:
		d.dp = a.Core()
	default:
		return nil, deviceRefusal(AlgoName(alg.Name()))
	}
	dev, err := openDevice(job.Cfg.Device)
	if err != nil {
		return nil, err
	}
	d.dev = dev
	if job.Cfg.TF32 {
		t, ok := dev.(interface{ SetTF32(on bool) error })
		if !ok {
			return nil, errors.Join(FieldErrors{{Field: "TF32", Msg: fmt.Sprintf("Device %s has no TF32 mode", job.Cfg.Device)}}, dev.Close())
		}
		if err := t.SetTF32(true); err != nil {
			return nil, errors.Join(err, dev.Close())
		}
		d.tf32 = true
	}
	if ermi != nil {
		return newFermiDeviceStep(d, ermi)
	}
	if d.dp != nil {
		d.dp.device = d
	}
	return d, nil
}

func deviceRefusal(algo AlgoName) error {
	return FieldErrors{{Field: "Device", Msg: fmt.Sprintf("cuda runs Algo %v only; %s has no device step (use Device cpu)",
		deviceAlgorithms, algo)}}
}

// Name implements Algorithm.
func (d *deviceStep) Name() string { return d.host.Name() }

// Sampler implements Algorithm: the host algorithm's.
func (d *deviceStep) Sampler(n int, r *rand.Rand) (dpops.Sampler, error) { return d.host.Sampler(n, r) }

// Step implements Algorithm. The model m is read once, on the first step,
// to put its initial parameters on the device; after that it is stale until
// Sync. A private step is the host algorithm's Step, whose DP-SGD hands the
// gradient work to dpStep and charges the accountant as on the CPU. SGD is
// the device's DP-SGD step with no bound any finite gradient reaches (every
// clip factor is exactly 1), no noise and the batch mean; an empty batch
// still applies the update (Run does on the CPU: momentum moves).
func (d *deviceStep) Step(m Model[float32], b Batch[float32]) (float64, error) {
	if err := d.prepare(m); err != nil {
		return 0, err
	}
	if d.dp != nil {
		return d.host.Step(m, b)
	}
	n := b.N()
	scale := 1.0
	if n > 0 {
		scale = 1 / float64(n)
	}
	return d.dev.Step(b.X, d.batchLabels(b), devstep.DPSGD{Clip: math.MaxFloat64, Scale: scale})
}

// batchLabels is b's labels as the device takes them.
func (d *deviceStep) batchLabels(b Batch[float32]) []int32 {
	d.labels = grow(d.labels, b.N())
	for i, y := range b.Labels {
		d.labels[i] = int32(y)
	}
	return d.labels
}

// dpStep implements deviceGradients: a's step on the device. The device
// draws its noise key fresh from the run's noise stream; with a clip policy the
// device counts each group's norms above and at most the policy's
// threshold. A policy that offers a device rule (deviceRuler: DPSGD-F, and
// Naïve under its default guard) has its noise drawn before the step and
// its bounds and weights computed on the device, so the step waits for
// nothing; the policy's own code checks them when the result comes back.
// Otherwise a.groupClip (the policy's own code: its noisy counts, bounds
// and weights) decides on the counts read back mid-step, and the device
// clips with the per-group bounds and weights it returns.
func (d *deviceStep) dpStep(a *DPSGD[float32], b Batch[float32]) (float64, error) {
	s := devstep.DPSGD{Clip: a.Clip, NoiseStd: a.Sigma * a.Clip, Scale: 1 / float64(a.Batch), Noise: a.noise}
	if p := a.Policy; p != nil {
		d.groups = grow(d.groups, b.N())
		for i, g := range b.Groups {
			d.groups[i] = int32(g)
		}
		s.Clip, s.NoiseStd = p.Threshold(), 0
		s.Group = &devstep.GroupClip{Groups: d.groups, Count: p.Groups(), Rule: func(above, atMost []int32) (devstep.GroupRule, error) {
			for k, c := range [2][]int32{above, atMost} {
				d.counts[k] = grow(d.counts[k], len(c))
				for j, v := range c {
					d.counts[k][j] = int(v)
				}
			}
			c, err := a.groupClip(d.counts[0], d.counts[1])
			return devstep.GroupRule{Bounds: c.Bounds, Weights: c.Weights, NoiseStd: a.Sigma * c.Sensitivity}, err
		}}
		if dr, ok := p.(deviceRuler); ok {
			r, err := dr.DeviceRule()
			if err != nil {
				return 0, err
			}
			s.Group.OnDevice = r // nil: the host's Rule, with the counts read mid-step
		}
	}
	return d.dev.Step(b.X, d.batchLabels(b), s)
}

// deviceRuler is a ClipPolicy whose rule a device can compute itself
// (package dpsgdf's DPSGD-F and Naïve): the step then waits for nothing
// mid-step, and the policy's bookkeeping runs when the step's result
// comes back (devstep.DeviceRule).
type deviceRuler interface {
	DeviceRule() (*devstep.DeviceRule, error)
}

// prepare puts m's layers and parameters on the device, with the run's
// optimizer, on the first step. The device runs fairdp's own layers only.
func (d *deviceStep) prepare(m Model[float32]) error {
	if d.loaded {
		return nil
	}
	mm, ok := m.(*models.Model[float32])
	if !ok {
		return fmt.Errorf("Device %s needs a *models.Model (fairdp's zoo or nn layers), not a %T", d.device, m)
	}
	if err := d.dev.Load(mm.Layers, m.InSize(), d.opt); err != nil {
		return err
	}
	d.loaded = true
	return nil
}

// Receipt implements Algorithm: the host algorithm's, with a note on how
// the noise was generated when the run is private.
func (d *deviceStep) Receipt() (accounting.Receipt, error) {
	r, err := d.host.Receipt()
	if err == nil && d.dp != nil {
		r.AddNote(deviceNoiseNote(d.seeded))
	}
	if err == nil && d.tf32 {
		r.AddNote(tf32Note)
	}
	return r, err
}

// tf32Note is what a run with Config.TF32 adds to its receipt: what
// changed, and why the guarantee did not.
const tf32Note = "tf32: the device's forward and backward matrix products used TF32 tensor cores (inputs rounded to 10-bit " +
	"mantissas); the per-sample norms, the clipped sums and the noise were computed in float32 from the same values, " +
	"so each sample's clipped contribution is bounded as without TF32"

// deviceNoiseNote says how a device run drew its noise. Philox is not a
// CSPRNG, so the note never says the noise came from one: only the per-step
// keys did, in an unseeded run.
func deviceNoiseNote(seeded bool) string {
	key := "keyed afresh for every step with 128 bits drawn from the run's CSPRNG stream (ChaCha8 keyed from crypto/rand)"
	if seeded {
		key = "keyed for every step with 128 bits drawn from the run's seeded ChaCha8 stream: reproducible, and predictable from the seed"
	}
	return "noise: the Gaussian noise was generated on the CUDA device by Philox4x32-10 (a statistically strong " +
		"counter-based generator, not a cryptographically secure one), " + key + "; " + deviceSamplerCaveat
}

// deviceSamplerCaveat is what the device's sampler is (cuda's gaussianPair):
// the textbook Box–Muller transform of 53-bit uniforms, so no draw exceeds
// √(−2 ln 2⁻⁵³) standard deviations, where the accountant assumes an
// untruncated Gaussian; and, like the CPU's fast buffer sampler, it is not
// hardened against floating-point attacks (dpops/noise.go).
var deviceSamplerCaveat = fmt.Sprintf("it is the textbook Box–Muller sampler on 53-bit uniforms, truncated at ±%.3gσ "+
	"(the accountant assumes an untruncated Gaussian) and not hardened against floating-point attacks (Mironov 2012; Jin et al. 2022)",
	math.Sqrt(-2*math.Log(0x1p-53)))

// Sync is Hooks.Resident.Sync: the device's parameters into m.
func (d *deviceStep) Sync(m Model[float32]) error {
	if !d.loaded {
		return nil // no step ran: m holds the initial parameters
	}
	vals, err := d.dev.Params()
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

// Close is Hooks.Resident.Close.
func (d *deviceStep) Close() error {
	if d.closed {
		return nil
	}
	d.closed = true
	return d.dev.Close()
}

// Hooks implements Algorithm: the host algorithm's (DPSGD-F's clip bounds
// per epoch and series, DP-FERMI's W and results), resident on the device
// (Run applies no optimizer; Sync and Close), then the report's backend
// names the device (OnEnd runs after Close). A device run is not
// checkpointed (its parameters and noise keys live on the device).
func (d *deviceStep) Hooks() Hooks[float32] {
	h := d.host.Hooks()
	h.Resume = nil
	h.Resident = &Resident[float32]{Sync: d.Sync, Close: d.Close, Flush: d.dev.Flush}
	hostEnd := h.OnEnd
	h.OnEnd = func(m Model[float32], job *Job, rep *Report) error {
		if hostEnd != nil {
			if err := hostEnd(m, job, rep); err != nil {
				return err
			}
		}
		rep.Backend = string(d.device) + ": " + d.dev.Name()
		return nil
	}
	return h
}
