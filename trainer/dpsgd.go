package trainer

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/nn"
)

// DPSGD is DP-SGD (Abadi et al. 2016): Poisson-sampled batches, each
// sample's whole gradient clipped to Clip, Gaussian noise of std Sigma·Clip
// added to the clipped sum, divided by the expected batch size q·n. Every
// step is charged to the run's ledger (the PLD accountant unless RDP is
// asked for), which calibrated σ and states the receipt.
//
// It is the one DP-SGD: DPSGD-F and Naïve (package dpsgdf) are this
// algorithm with a ClipPolicy that sets each sample's clip factor from its
// group and bounds the sum's sensitivity; sampling, the forward and
// backward pass, the per-sample norms, the noise and the accountant are
// this code for all three.
type DPSGD[T nn.Float] struct {
	Clip     float64 // per-sample bound C
	Sigma    float64 // noise multiplier σ
	Delta    float64 // δ of the reported (ε, δ)
	Q        float64 // sampling rate (expected batch / n)
	Sampling string  // "poisson" or "shuffle"
	Batch    int     // expected batch size
	Seed     *uint64 // for the receipt
	Records  int     // training records the guarantee covers (for the receipt's δ check)
	// Epochs is the planned run length (PlannedRunEpsilon).
	Epochs int
	// Policy, when set, replaces clipping every sample at Clip (see
	// ClipPolicy); nil is DP-SGD.
	Policy ClipPolicy

	noise    *rand.Rand
	noiseSrc *rand.ChaCha8 // noise's generator, whose position a seeded checkpoint saves
	// release noises and scales the clipped sum (nil: dpops.NoiseAndScale);
	// the device tests replace it by the device's Philox noise on the CPU
	// to compare a CPU run with a device run.
	release func(r *rand.Rand, params []*nn.Param[T], std, scale float64) error
	acc     *accounting.Ledger
	// normals draws a large model's noise while the step computes its
	// gradients (prefetchNoise).
	normals dpops.Normals
	params  int // the model's parameter count, set by prefetchNoise
	clipper dpops.Clipper[T]
	pass    Pass[T]
	scale   []T
	// above and atMost are a policy's per-group counts of the step.
	above, atMost []int
	// calibratedBy is the accountant that calibrated σ ("" when σ was
	// given): RDP where the PLD ledger could not calibrate it.
	calibratedBy string
	// device, when set, runs the step's gradient work on a device
	// (trainer/ondevice.go); sampling, the policy's decisions, the noise
	// stream and the accountant stay here.
	device deviceGradients[T]
}

// deviceGradients is a device that runs DP-SGD's gradient work: forward,
// backward, per-sample norms, the clip (a's, or its policy's from the
// per-group counts through a.groupClip), the noise keyed from a.noise, the
// scaling and the update. It returns the batch's summed loss.
type deviceGradients[T nn.Float] interface {
	dpStep(a *DPSGD[T], b Batch[T]) (float64, error)
}

// ClipPolicy is how a DP-SGD step weights and clips each sample's gradient
// by its group and what one step then releases. DPSGD-F's group-wise bounds
// and Naïve's group weights (package dpsgdf) are policies; DP-SGD itself
// clips every sample at Clip.
//
// A policy sees the batch only through per-group counts, so the same
// policy code decides whether the per-sample norms are on the host or on a
// device, where only the counts leave it (trainer/ondevice.go).
type ClipPolicy interface {
	// Groups is K: every sample's group is in 0..K-1.
	Groups() int
	// Threshold is the gradient norm the counts compare with.
	Threshold() float64
	// Rule is called once per step, also for an empty batch, with the
	// batch's counts per group: above[k] samples of group k whose gradient
	// norm exceeds Threshold, atMost[k] the others. It releases through its
	// own noise whatever statistics it needs and returns the step's clip.
	Rule(above, atMost []int) (GroupClip, error)
	// Mechanism is what one step releases, as the accountant charges it
	// (the gradient sum, and any statistics Rule released from the same
	// sample).
	Mechanism() accounting.Mechanism
}

// GroupClip is a policy's clip for one step: sample i of group k gets the
// factor Weights[k]·min(1, Bounds[k]/‖g_i‖), and one record moves the
// weighted sum by at most Sensitivity (the noise std is σ·Sensitivity).
type GroupClip struct {
	Bounds, Weights []float64 // one per group
	Sensitivity     float64
}

// DPSGDOptions are DP-SGD's settings for NewDPSGDFrom.
type DPSGDOptions struct {
	Records int     // n, the training records (Poisson rate q = Batch/Records)
	Batch   int     // expected batch size
	Epochs  int     // run length, for calibrating σ
	Clip    float64 // per-sample bound C
	// Sigma is the noise multiplier; 0 calibrates it so that Epochs epochs
	// spend Epsilon.
	Sigma   float64
	Epsilon float64
	Delta   float64 // 0: accounting.DefaultDelta(Records)
	// AllowLargeDelta accepts δ ≥ 1/n (refused otherwise).
	AllowLargeDelta bool
	Sampling        Sampling // SamplingPoisson when empty, or SamplingShuffle
	Seed            *uint64  // recorded in the receipt (nil: crypto-seeded)
	// Companions are the noise-multiplier ratios of releases a policy makes
	// every step from the same sample (accounting.WithCompanion), for the σ
	// calibration.
	Companions []float64
	// Accountant calibrates σ and keeps the ledger: accounting.AccountantPLD
	// ("" means accounting.DefaultAccountant) or AccountantRDP.
	Accountant string
}

// newDPSGDJob builds DP-SGD for a job (`--algo dpsgd`), calibrating σ to
// Privacy.Epsilon when Privacy.Sigma is 0. Callers outside the package
// build DP-SGD from its options (NewDPSGDFrom), as DPSGD-F does.
func newDPSGDJob[T nn.Float](job *Job) (*DPSGD[T], error) {
	cfg := job.Cfg
	p := cfg.Privacy
	return NewDPSGDFrom[T](DPSGDOptions{Records: job.Train.N(), Batch: cfg.Batch, Epochs: cfg.Epochs, Clip: p.Clip,
		Sigma: p.Sigma, Epsilon: p.Epsilon, Delta: p.Delta, AllowLargeDelta: p.AllowLargeDelta, Sampling: Sampling(p.Sampling),
		Seed: cfg.Seed, Accountant: p.Accountant}, job.Source)
}

// NewDPSGDFrom builds DP-SGD from its options, with the gradient noise
// drawn from src.Derive("noise"). Errors name the Config fields the
// options come from.
func NewDPSGDFrom[T nn.Float](o DPSGDOptions, src dpops.Source) (*DPSGD[T], error) {
	n := o.Records
	a := &DPSGD[T]{Clip: o.Clip, Sigma: o.Sigma, Delta: o.Delta, Sampling: string(o.Sampling), Batch: o.Batch,
		Seed: o.Seed, Records: n, Epochs: o.Epochs}
	switch o.Sampling {
	case "":
		a.Sampling = accounting.SamplingPoisson
	case SamplingPoisson, SamplingShuffle:
	default:
		return nil, FieldErrors{{Field: "Privacy.Sampling", Msg: fmt.Sprintf("%q, want %s or %s", o.Sampling, SamplingPoisson, SamplingShuffle)}}
	}
	if a.Delta == 0 {
		a.Delta = accounting.DefaultDelta(n)
	}
	if err := accounting.CheckDelta(a.Delta, n, o.AllowLargeDelta); err != nil {
		return nil, err
	}
	if err := checkBatch(o.Batch, n); err != nil {
		return nil, err
	}
	if !(o.Clip > 0) || math.IsInf(o.Clip, 1) {
		return nil, FieldErrors{{Field: "Privacy.Clip", Msg: fmt.Sprintf("%v must be a positive number", o.Clip)}}
	}
	a.Q = float64(o.Batch) / float64(n)
	var err error
	if a.acc, err = accounting.NewLedger(o.Accountant, accounting.PLDOptions{}); err != nil {
		return nil, FieldErrors{{Field: "Privacy.Accountant", Msg: err.Error()}}
	}
	if a.Sigma == 0 {
		if math.IsInf(o.Epsilon, 1) {
			return nil, FieldErrors{{Field: "Privacy.Epsilon", Msg: "must be finite, or Privacy.Sigma given: dpsgd is a private algorithm"}}
		}
		steps := o.Epochs * a.StepsPerEpoch()
		s, used, err := accounting.CalibrateRunSigma(o.Epsilon, a.Delta, a.Q, steps,
			accounting.SigmaCalibration{Accountant: a.acc.Kind(), Companions: o.Companions, StepsPerEpoch: a.shuffledEpoch()})
		if err != nil {
			return nil, fmt.Errorf("calibrating σ for ε = %v, δ = %v, q = %.4g, %d steps: %w", o.Epsilon, a.Delta, a.Q, steps, err)
		}
		a.Sigma, a.calibratedBy = s, used
	}
	a.noiseSrc = src.DeriveChaCha8("noise")
	a.noise = rand.New(a.noiseSrc)
	return a, nil
}

// checkBatch refuses a batch size the n training records cannot fill:
// every algorithm would otherwise run something other than asked (Poisson
// at a rate above 1, shuffled batches cut to n).
func checkBatch(batch, n int) error {
	if batch < 1 || batch > n {
		return FieldErrors{{Field: "Batch", Msg: fmt.Sprintf("%d must be between 1 and the %d training records", batch, n)}}
	}
	return nil
}

// StepsPerEpoch asks the sampler the run will use, so that calibration,
// PlannedEpsilon and training agree on the number of steps.
func (a *DPSGD[T]) StepsPerEpoch() int {
	s, err := a.Sampler(a.Records, rand.New(rand.NewPCG(0, 0)))
	if err != nil { // unreachable: n and q were checked in NewDPSGDFrom
		return 1
	}
	return s.StepsPerEpoch()
}

// shuffledEpoch is the steps per epoch of a run with shuffled batches, what
// its accounting charges once per epoch (accounting.ShuffledCharges), and
// 0 for Poisson sampling.
func (a *DPSGD[T]) shuffledEpoch() int {
	if a.Sampling != accounting.SamplingShuffle {
		return 0
	}
	return a.StepsPerEpoch()
}

// charged is what the accountant's ε is computed from for mechs: mechs
// themselves under Poisson sampling, their shuffled charges
// (accounting.ShuffledCharges) otherwise.
func (a *DPSGD[T]) charged(mechs []accounting.Mechanism) ([]accounting.Mechanism, error) {
	k := a.shuffledEpoch()
	if k == 0 {
		return mechs, nil
	}
	c, _, _, err := accounting.ShuffledCharges(mechs, k)
	return c, err
}

// classicEpsilon is ε at the run's δ of mechs by RDP with the classic
// conversion.
func (a *DPSGD[T]) classicEpsilon(mechs []accounting.Mechanism) float64 {
	var plan accounting.RDP
	for _, m := range mechs {
		if err := plan.Step(m, m.Steps); err != nil {
			return math.NaN()
		}
	}
	eps, _ := plan.EpsilonClassic(a.Delta)
	return eps
}

// Name implements Algorithm.
func (a *DPSGD[T]) Name() string { return "dpsgd" }

// Sampler implements Algorithm: Poisson with rate q unless Sampling is
// shuffle.
func (a *DPSGD[T]) Sampler(n int, r *rand.Rand) (dpops.Sampler, error) {
	if a.Sampling == accounting.SamplingShuffle {
		return dpops.NewShuffle(n, a.Batch, r)
	}
	return dpops.NewPoisson(n, a.Q, r)
}

// Step implements Algorithm: per-sample norms from the model's taps, each
// sample scaled (clipped at Clip, or as Policy says), summed, noise of
// std σ·S added (S = Clip, or the policy's sensitivity), averaged over the
// expected batch size, and the accountant charged (also for an empty
// batch, which still releases noise).
func (a *DPSGD[T]) Step(m Model[T], b Batch[T]) (float64, error) {
	n := b.N()
	if a.Policy != nil {
		if len(b.Groups) != n {
			return 0, fmt.Errorf("dpsgd: a batch of %d records with %d groups", n, len(b.Groups))
		}
		for i, g := range b.Groups {
			if g < 0 || g >= a.Policy.Groups() {
				return 0, fmt.Errorf("dpsgd: batch position %d has group %d, want 0..%d", i, g, a.Policy.Groups()-1)
			}
		}
	}
	var lossSum float64
	var err error
	if a.device != nil {
		lossSum, err = a.device.dpStep(a, b)
	} else {
		lossSum, err = a.hostStep(m, b)
	}
	if err != nil {
		return 0, err
	}
	return lossSum, a.acc.Step(a.Mechanism(), 1)
}

// hostStep is Step's gradient work on the CPU: the gradient released and
// scaled in m's parameters.
func (a *DPSGD[T]) hostStep(m Model[T], b Batch[T]) (float64, error) {
	prefetch := a.prefetchNoise(m)
	if prefetch {
		a.normals.Start(a.noiseSrc, a.params)
		defer a.normals.Wait() // a.noiseSrc (and a.noise on it) is the drawing goroutine's until then
	}
	m.ZeroGrads()
	lossSum := a.pass.Run(m, b, nil)
	sens, err := a.clip(m, b)
	if err != nil {
		return 0, err
	}
	if prefetch {
		return lossSum, dpops.NoiseAndScaleDrawn(a.normals.Wait(), m.Params(), a.Sigma*sens, 1/float64(a.Batch))
	}
	release := dpops.NoiseAndScale[T]
	if a.release != nil {
		release = a.release
	}
	return lossSum, release(a.noise, m.Params(), a.Sigma*sens, 1/float64(a.Batch))
}

// prefetchMinParams is the model size from which DP-SGD draws a step's
// noise on its own goroutine while the gradients are computed
// (dpops.Normals): the MNIST CNN's 431K draws took ~3 ms at the end of a
// ~40 ms step; for logistic regression's 103 the goroutine would cost more
// than the draws.
var prefetchMinParams = 1 << 15 // a variable so that a test can switch drawing ahead off

// prefetchNoise reports whether this step's noise is drawn ahead
// (dpops.Normals). Only for plain DP-SGD with the default release: a clip
// policy learns its sensitivity, and so whether noise is drawn at all, only
// from the step's counts, and a replaced release draws its own noise. The
// draws are the same values in the same order as NoiseAndScale's, so the
// results are bit for bit those of drawing after the gradients.
// It leaves the model's parameter count, the number of draws, in a.params.
func (a *DPSGD[T]) prefetchNoise(m Model[T]) bool {
	if a.Policy != nil || a.release != nil || !(a.Sigma*a.Clip > 0) {
		return false
	}
	a.params = NumParams(m)
	return a.params >= prefetchMinParams
}

// clip adds the step's clipped gradient sum to m's parameters and returns
// its sensitivity. DP-SGD's flat clip goes through dpops.Clipper.Clip,
// which fuses a layer's clipped sum with its norms where that saves work;
// a policy needs every norm of the batch (its counts) before any factor, so
// its factors come from scales.
func (a *DPSGD[T]) clip(m Model[T], b Batch[T]) (float64, error) {
	n := b.N()
	if a.Policy == nil {
		if n > 0 {
			if _, err := a.clipper.Clip(n, dpops.Flat(a.Clip), m); err != nil {
				return 0, err
			}
		}
		return a.Clip, nil
	}
	var norms []float64
	if n > 0 {
		var err error
		if norms, err = a.clipper.Norms(n, m); err != nil {
			return 0, err
		}
	}
	a.scale = grow(a.scale, n)
	sens, err := a.scales(norms, b.Groups)
	if err != nil {
		return 0, err
	}
	if n > 0 {
		m.ParamGrads(a.scale)
	}
	return sens, nil
}

// scales fills a.scale with the policy's factors and returns the
// sensitivity.
func (a *DPSGD[T]) scales(norms []float64, groups []int) (float64, error) {
	k, threshold := a.Policy.Groups(), a.Policy.Threshold()
	a.above, a.atMost = grow(a.above, k), grow(a.atMost, k)
	clear(a.above)
	clear(a.atMost)
	for i, g := range norms {
		if g > threshold {
			a.above[groups[i]]++
		} else {
			a.atMost[groups[i]]++
		}
	}
	c, err := a.groupClip(a.above, a.atMost)
	if err != nil {
		return 0, err
	}
	for i, g := range norms {
		k := groups[i]
		a.scale[i] = T(c.Weights[k] * dpops.ClipFactor(g, c.Bounds[k]))
	}
	return c.Sensitivity, nil
}

// groupClip is the policy's clip for a step with the given per-group
// counts (computed on the host or on a device), checked.
func (a *DPSGD[T]) groupClip(above, atMost []int) (GroupClip, error) {
	c, err := a.Policy.Rule(above, atMost)
	if err != nil {
		return GroupClip{}, err
	}
	if k := len(above); len(c.Bounds) != k || len(c.Weights) != k {
		return GroupClip{}, fmt.Errorf("dpsgd: the clip policy gave %d bounds and %d weights for %d groups", len(c.Bounds), len(c.Weights), k)
	}
	return c, nil
}

// Core returns a itself: the DP-SGD that an algorithm built on it (package
// dpsgdf) runs, for the device step (trainer/ondevice.go).
func (a *DPSGD[T]) Core() *DPSGD[T] { return a }

// Mechanism is what one step releases, as the accountant charges it.
func (a *DPSGD[T]) Mechanism() accounting.Mechanism {
	if a.Policy != nil {
		return a.Policy.Mechanism()
	}
	return accounting.SubsampledGaussian(a.Q, a.Sigma, a.Clip, "each record's whole gradient")
}

// PlannedEpsilon is the ε, at the run's δ, that a run of epochs epochs
// will spend: by the run's accountant (the one its receipt uses), and by
// RDP with the classic conversion. Shuffled runs are planned by their
// shuffled charges, as their receipts state them.
func (a *DPSGD[T]) PlannedEpsilon(epochs int) (improved, classic float64) {
	m := a.Mechanism()
	m.Steps = epochs * a.StepsPerEpoch()
	mechs, err := a.charged([]accounting.Mechanism{m})
	if err != nil {
		return math.NaN(), math.NaN()
	}
	improved, err = accounting.PlanEpsilon(a.acc.Kind(), accounting.PLDOptions{}, a.Delta, mechs...)
	if err != nil {
		return math.NaN(), math.NaN()
	}
	return improved, a.classicEpsilon(mechs)
}

// Hooks implements Algorithm: DP-SGD resumes from a checkpoint and plans
// its ε before training.
func (a *DPSGD[T]) Hooks() Hooks[T] {
	return Hooks[T]{Resume: a, PlannedRunEpsilon: a.PlannedRunEpsilon}
}

// PlannedRunEpsilon is Hooks.PlannedRunEpsilon: PlannedEpsilon of the
// planned Epochs, at the run's δ.
func (a *DPSGD[T]) PlannedRunEpsilon() (epsilon, delta float64, err error) {
	eps, _ := a.PlannedEpsilon(a.Epochs)
	if math.IsNaN(eps) {
		return eps, a.Delta, fmt.Errorf("dpsgd: the accountant cannot plan %d epochs of q = %.4g, σ = %v", a.Epochs, a.Q, a.Sigma)
	}
	return eps, a.Delta, nil
}

// Epsilon is the ε spent so far at the run's δ by the run's accountant,
// and by RDP with the classic conversion (Mironov 2017), which papers before
// 2020 report.
func (a *DPSGD[T]) Epsilon() (improved, classic float64) {
	if k := a.shuffledEpoch(); k > 0 {
		improved, _, err := a.acc.ShuffledEpsilon(a.Delta, k)
		if err != nil {
			improved = math.NaN()
		}
		mechs, err := a.charged(a.acc.History())
		if err != nil {
			return improved, math.NaN()
		}
		return improved, a.classicEpsilon(mechs)
	}
	improved, _, err := a.acc.Epsilon(a.Delta)
	if err != nil {
		improved = math.NaN()
	}
	classic, _ = a.acc.RDP().EpsilonClassic(a.Delta)
	return improved, classic
}

// Charges is the accountant's history: every mechanism charged so far.
func (a *DPSGD[T]) Charges() []accounting.Mechanism { return a.acc.History() }

// Receipt implements Algorithm.
func (a *DPSGD[T]) Receipt() (accounting.Receipt, error) {
	r, err := a.acc.Receipt(a.Delta, accounting.RunInfo{Scope: accounting.ScopeAll, Sampling: a.Sampling, Seed: a.Seed, Records: a.Records,
		StepsPerEpoch: a.shuffledEpoch()})
	if err == nil && a.calibratedBy != "" && a.calibratedBy != a.acc.Kind() {
		r.AddNote(CalibrationFallbackNote)
	}
	return r, err
}

// CalibrationFallbackNote is the receipt's note when a PLD run's σ is
// RDP's: PLD could not calibrate it, or needed more noise.
const CalibrationFallbackNote = "sigma was calibrated with the RDP accountant: the PLD accountant (the default) cannot calibrate this run, or needs more noise for it"

// SaveState implements Resumable: the ledger and the noise stream.
func (a *DPSGD[T]) SaveState(s *State) error {
	if err := s.PutRand("dpsgd.noise", a.noiseSrc); err != nil {
		return err
	}
	return PutLedger(s, "dpsgd.accountant", a.acc)
}

// LoadState implements Resumable.
func (a *DPSGD[T]) LoadState(s *State) error {
	if err := s.GetRand("dpsgd.noise", a.noiseSrc); err != nil {
		return err
	}
	return GetLedger(s, "dpsgd.accountant", a.acc)
}

// ChargeLost implements Resumable: steps more of the step's mechanism.
func (a *DPSGD[T]) ChargeLost(steps int) error { return a.acc.Step(a.Mechanism(), steps) }

// PutLedger saves a run's ledger in s: its RDP state under name (where
// checkpoints always kept the accountant), its kind under name.kind and,
// for PLD, the PLD state under name.pld.
func PutLedger(s *State, name string, l *accounting.Ledger) error {
	st := l.State()
	if err := s.Put(name, st.RDP); err != nil {
		return err
	}
	if err := s.Put(name+".kind", st.Accountant); err != nil {
		return err
	}
	if st.PLD != nil {
		return s.Put(name+".pld", *st.PLD)
	}
	return nil
}

// GetLedger restores into l what PutLedger saved under name. A checkpoint
// from before the PLD ledger has no kind: it was kept by RDP. A checkpoint
// of another accountant than l's is refused, naming it.
func GetLedger(s *State, name string, l *accounting.Ledger) error {
	st := accounting.LedgerState{Accountant: accounting.AccountantRDP}
	if err := s.Get(name, &st.RDP); err != nil {
		return err
	}
	if s.Has(name + ".kind") {
		if err := s.Get(name+".kind", &st.Accountant); err != nil {
			return err
		}
	}
	if st.Accountant != l.Kind() {
		return FieldErrors{{Field: "Privacy.Accountant", Msg: fmt.Sprintf("the checkpoint's spent budget was kept by the %s accountant, this run asks for %s: resume with accountant %s",
			st.Accountant, l.Kind(), st.Accountant)}}
	}
	if st.Accountant == accounting.AccountantPLD {
		st.PLD = &accounting.PLDState{}
		if err := s.Get(name+".pld", st.PLD); err != nil {
			return err
		}
	}
	return l.Restore(st)
}

// Has reports whether Put saved something under name (a checkpoint from
// an older version may lack a later addition).
func (s *State) Has(name string) bool {
	_, ok := s.values[name]
	return ok
}
