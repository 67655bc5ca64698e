package dpsgdf

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/nn"
	"github.com/fairdp/fairdp/trainer"
)

// The --algo names (trainer.Config.Algo) this package registers: the
// Adaptive and Naive policies as algorithms of their own.
const (
	Name      trainer.AlgoName = "dpsgdf" // DPSGD-F (Xu, Du and Wu 2021)
	NaiveName trainer.AlgoName = "naive"  // Naïve: DP-SGD with noisy group reweighting
)

// Policy is how a step clips the per-sample gradients and scales the noise.
type Policy string

// The three policies of the paper's one training loop.
const (
	// Flat is DP-SGD: every gradient clipped at C0, noise σ2·C0.
	Flat Policy = "dpsgd"
	// Naive reweights group k by θ^k = (b/K)/b̃^k from noisy group counts,
	// clips at C0 and adds noise σ2·C0·max_k θ^k.
	Naive Policy = Policy(NaiveName)
	// Adaptive is DPSGD-F: per-group bounds C^k from noisy clipped and
	// unclipped counts, noise σ2·max_k C^k.
	Adaptive Policy = Policy(Name)
)

// Config is what an Algorithm needs besides the model and the data.
type Config struct {
	Policy Policy
	Clip   float64 // C0, the base clip bound
	// Sigma is σ2, the noise multiplier of the gradient sum; 0 means
	// calibrate it so that the run meets Epsilon (counting the count
	// release of Naive and Adaptive too).
	Sigma   float64
	Epsilon float64 // target ε when Sigma is 0 (ignored otherwise)
	Delta   float64 // δ of the reported (ε, δ); 0 = accounting.DefaultDelta(n)
	// AllowLargeDelta accepts δ ≥ 1/n (refused otherwise).
	AllowLargeDelta bool
	// CountNoiseRatio sets σ1 = CountNoiseRatio·σ2, the noise multiplier of
	// the group counts (Naive and Adaptive; the paper uses 10).
	CountNoiseRatio float64
	// CountGuard is Adaptive's rule for a group whose noisy counts give no
	// usable clipped fraction ("": DefaultCountGuard; see CountGuard).
	// Post-processing of the released counts: it changes no ε.
	CountGuard CountGuard
	// NaiveGuard is Naive's rule for turning a noisy group count into a
	// weight ("": DefaultNaiveGuard; see NaiveGuard). Post-processing of
	// the released counts: it changes no ε.
	NaiveGuard NaiveGuard
	Batch      int      // expected batch size b (Poisson rate q = b/n)
	Epochs     int      // for calibrating σ2 to Epsilon and PlannedEpsilon
	Sampling   string   // "poisson" (default) or "shuffle"
	Groups     []string // group names; K = len(Groups), batch groups are 0..K-1
	Seed       *uint64  // recorded in the receipt (nil: crypto-seeded)
	// Accountant calibrates σ2 and keeps the ledger: "pld" (also when
	// empty: accounting.DefaultAccountant) or "rdp".
	Accountant string
}

// Algorithm is DPSGD, Naive or DPSGD-F as a trainer.Algorithm: the
// trainer's one DP-SGD (trainer.DPSGD: Poisson sampling, per-sample
// gradients through the model's taps, noise, a ledger (PLD by default) charged
// with every release) with this package's clip policy for Naive and
// Adaptive (Flat is DP-SGD itself, with no policy).
type Algorithm[T nn.Float] struct {
	cfg        Config
	core       *trainer.DPSGD[T]
	sigma1     float64 // count noise multiplier (0 for Flat)
	countNoise *rand.Rand
	countSrc   *rand.ChaCha8 // countNoise's generator (a seeded checkpoint saves it)
	// noisyCount releases one count with its Gaussian noise; tests swap it
	// for the identity to check what the noise-free algorithm does.
	noisyCount func(v float64) (float64, error)
	clipped    []float64 // Adaptive: m^k, then m̃^k
	unclipped  []float64 // Adaptive: o^k, then õ^k
	sizes      []float64 // Naive: b^k, then b̃^k
	ones       []float64 // Adaptive's weights: 1 per group
	flatBounds []float64 // Naive's bounds: C0 per group
	stats      epochStats
	last       []float64 // C^k (Adaptive) or θ^k (Naive) of the last step
}

// epochStats accumulates the per-step bounds (Adaptive) or weights (Naive)
// between two EpochFields calls, and keeps the per-epoch means for Finish.
type epochStats struct {
	sum          []float64 // Σ over steps of C^k or θ^k
	noiseSum     float64   // Σ over steps of the gradient sensitivity
	steps        int
	allUnclipped int // Adaptive steps where m̃ ≤ 0 gave C^k = C0
	history      [][]float64
}

// New builds an algorithm for n training records with randomness from src
// (gradient noise from src.Derive("noise"), the trainer's DP-SGD stream,
// and count noise from src.Derive("count-noise")). σ2 is calibrated by the
// trainer's DP-SGD, counting the count release (σ1 = ratio·σ2) of Naive and
// Adaptive.
func New[T nn.Float](cfg Config, n int, src dpops.Source) (*Algorithm[T], error) {
	if err := cfg.check(n); err != nil {
		return nil, err
	}
	opts := trainer.DPSGDOptions{Records: n, Batch: cfg.Batch, Epochs: cfg.Epochs, Clip: cfg.Clip, Sigma: cfg.Sigma,
		Epsilon: cfg.Epsilon, Delta: cfg.Delta, AllowLargeDelta: cfg.AllowLargeDelta, Sampling: trainer.Sampling(cfg.Sampling), Seed: cfg.Seed,
		Accountant: cfg.Accountant}
	if cfg.Policy != Flat {
		opts.Companions = []float64{cfg.CountNoiseRatio}
	}
	core, err := trainer.NewDPSGDFrom[T](opts, src)
	if err != nil {
		return nil, fmt.Errorf("dpsgdf: %w", err)
	}
	countSrc := src.DeriveChaCha8("count-noise")
	a := &Algorithm[T]{cfg: cfg, core: core, countNoise: rand.New(countSrc), countSrc: countSrc}
	a.cfg.Sigma, a.cfg.Delta, a.cfg.Sampling = core.Sigma, core.Delta, core.Sampling
	if cfg.Policy == Adaptive {
		a.cfg.CountGuard = cfg.CountGuard.orDefault()
	}
	if cfg.Policy == Naive {
		a.cfg.NaiveGuard = cfg.NaiveGuard.orDefault()
	}
	if cfg.Policy != Flat {
		a.sigma1 = cfg.CountNoiseRatio * a.cfg.Sigma
		core.Policy = groupPolicy[T]{a}
	}
	a.noisyCount = func(v float64) (float64, error) {
		return dpops.ScalarGaussian(a.countNoise, v, 1, a.sigma1)
	}
	k := len(cfg.Groups)
	a.clipped, a.unclipped, a.sizes = make([]float64, k), make([]float64, k), make([]float64, k)
	a.last = make([]float64, k)
	a.ones, a.flatBounds = make([]float64, k), make([]float64, k)
	for g := range k {
		a.ones[g], a.flatBounds[g] = 1, cfg.Clip
	}
	a.stats.sum = make([]float64, k)
	return a, nil
}

func (c Config) check(n int) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	var fields trainer.FieldErrors // settings the trainer's Config also has: named as its fields
	switch c.Policy {
	case Flat, Naive, Adaptive:
	default:
		bad("dpsgdf: policy %q, want %q, %q or %q", c.Policy, Flat, Naive, Adaptive)
	}
	if n < 1 {
		bad("dpsgdf: %d training records, want at least 1", n)
	}
	if c.Batch < 1 || c.Batch > n {
		fields.Add("Batch", "%d must be between 1 and the %d training records", c.Batch, n)
	}
	// ε's range is checked below, where DPSGD-F's own rule is stricter.
	fields = append(fields, trainer.CheckPrivacy(1, c.Delta, c.Clip, c.Sigma)...)
	if c.Sigma == 0 && (!(c.Epsilon > 0) || math.IsInf(c.Epsilon, 1)) {
		fields.Add("Privacy.Epsilon", "must be finite and > 0, or Privacy.Sigma given (got ε = %v): %s is a private algorithm", c.Epsilon, c.Policy)
	}
	if c.Policy != Flat && (!(c.CountNoiseRatio > 0) || math.IsInf(c.CountNoiseRatio, 1)) {
		fields.Add("Fair.CountNoiseRatio", "%v must be a positive number (σ1 = ratio·σ2)", c.CountNoiseRatio)
	}
	if c.Policy == Adaptive {
		if err := c.CountGuard.orDefault().check(); err != nil {
			fields.Add("Fair.CountGuard", "%v", err)
		}
	}
	if c.Policy == Naive {
		if err := c.NaiveGuard.orDefault().check(); err != nil {
			fields.Add("Fair.NaiveGuard", "%v", err)
		}
	}
	if c.Epochs < 1 {
		fields.Add("Epochs", "%d must be ≥ 1", c.Epochs)
	}
	if c.Sampling != "" && c.Sampling != accounting.SamplingPoisson && c.Sampling != accounting.SamplingShuffle {
		fields.Add("Privacy.Sampling", "%q, want poisson or shuffle", c.Sampling)
	}
	if len(c.Groups) == 0 {
		bad("dpsgdf: the data set has no groups; DPSGD-F needs a group per record (the label for MNIST, the sensitive column for tabular data)")
	}
	if len(fields) > 0 {
		errs = append(errs, fmt.Errorf("dpsgdf: %w", fields))
	}
	return errors.Join(errs...)
}

// PlannedEpsilon is the ε (Balle et al. 2020 and classic conversions, at
// the run's δ) that the whole run of Epochs epochs will spend.
func (a *Algorithm[T]) PlannedEpsilon() (improved, classic float64) {
	return a.core.PlannedEpsilon(a.cfg.Epochs)
}

// PlannedRunEpsilon is trainer.Hooks.PlannedRunEpsilon (the whole run, the
// count releases included, at the run's δ).
func (a *Algorithm[T]) PlannedRunEpsilon() (epsilon, delta float64, err error) {
	return a.core.PlannedRunEpsilon()
}

// Sigma is σ2, the gradient noise multiplier (given or calibrated).
func (a *Algorithm[T]) Sigma() float64 { return a.cfg.Sigma }

// CountSigma is σ1, the noise multiplier of the group counts (0 for Flat).
func (a *Algorithm[T]) CountSigma() float64 { return a.sigma1 }

// Name implements trainer.Algorithm: "dpsgd", "naive" or "dpsgdf".
func (a *Algorithm[T]) Name() string { return string(a.cfg.Policy) }

// Sampler implements trainer.Algorithm: Poisson with rate q = b/n unless
// the config asks for shuffled batches (which the receipt then flags).
func (a *Algorithm[T]) Sampler(n int, r *rand.Rand) (dpops.Sampler, error) {
	return a.core.Sampler(n, r)
}

// Step implements trainer.Algorithm: the trainer's DP-SGD step, whose
// clip policy (groupPolicy) releases the policy's noisy group counts and
// clips (and for Naive weights) every sample; the noise is N(0, (σ2·S)²)
// where S bounds one sample's contribution (C0, max_k C^k or C0·max_k
// θ^k). An empty batch still releases its counts and noise and is still
// charged.
func (a *Algorithm[T]) Step(m trainer.Model[T], b trainer.Batch[T]) (float64, error) {
	n := b.N()
	if len(b.Groups) != n {
		return 0, fmt.Errorf("dpsgdf: batch has %d records but %d groups", n, len(b.Groups))
	}
	for i, g := range b.Groups {
		if g < 0 || g >= len(a.cfg.Groups) {
			return 0, fmt.Errorf("dpsgdf: training record %d (batch position %d) has group %d, want 0..%d (%v)",
				b.Idx[i], i, g, len(a.cfg.Groups)-1, a.cfg.Groups)
		}
	}
	return a.core.Step(m, b)
}

// groupPolicy is Naive's and Adaptive's trainer.ClipPolicy.
type groupPolicy[T nn.Float] struct{ a *Algorithm[T] }

// Groups implements trainer.ClipPolicy.
func (p groupPolicy[T]) Groups() int { return len(p.a.cfg.Groups) }

// Threshold implements trainer.ClipPolicy: C0, the bound Adaptive's
// clipped and unclipped counts compare with (Naive counts both together).
func (p groupPolicy[T]) Threshold() float64 { return p.a.cfg.Clip }

// Rule implements trainer.ClipPolicy: the policy's counts released with
// their noise, then decide.
func (p groupPolicy[T]) Rule(above, atMost []int) (trainer.GroupClip, error) {
	a := p.a
	if a.cfg.Policy == Adaptive {
		// m̃^k and õ^k from the counts of clipped (above C0) and unclipped
		// gradients.
		for k := range a.clipped {
			a.clipped[k], a.unclipped[k] = float64(above[k]), float64(atMost[k])
		}
		if err := a.release(a.clipped); err != nil {
			return trainer.GroupClip{}, err
		}
		if err := a.release(a.unclipped); err != nil {
			return trainer.GroupClip{}, err
		}
	} else {
		// b̃^k from the group counts.
		for k := range a.sizes {
			a.sizes[k] = float64(above[k] + atMost[k])
		}
		if err := a.release(a.sizes); err != nil {
			return trainer.GroupClip{}, err
		}
	}
	return a.decide()
}

// Mechanism implements trainer.ClipPolicy.
func (p groupPolicy[T]) Mechanism() accounting.Mechanism { return p.a.stepMechanism() }

// decide is the step's clip from the released counts (a.clipped and
// a.unclipped, or a.sizes), recorded for the epoch's statistics: DPSGD-F's
// bounds C^k with unit weights (sensitivity max_k C^k), or Naïve's weights
// θ^k with the bound C0 (sensitivity C0·max_k θ^k). It reads only the
// released counts and public constants: post-processing, nothing more to
// charge.
func (a *Algorithm[T]) decide() (trainer.GroupClip, error) {
	var c trainer.GroupClip
	if a.cfg.Policy == Adaptive {
		bounds, allUnclipped, err := a.cfg.CountGuard.Bounds(a.cfg.Clip, float64(a.cfg.Batch), a.sigma1, a.clipped, a.unclipped)
		if err != nil {
			return trainer.GroupClip{}, err
		}
		if allUnclipped {
			a.stats.allUnclipped++
		}
		a.record(bounds)
		c = trainer.GroupClip{Bounds: bounds, Weights: a.ones, Sensitivity: slices.Max(bounds)}
	} else {
		// The Naïve guard reads only the released counts and public
		// constants (b, K, σ1).
		theta, err := a.cfg.NaiveGuard.Weights(float64(a.cfg.Batch), a.sigma1, a.sizes)
		if err != nil {
			return trainer.GroupClip{}, err
		}
		a.record(theta)
		c = trainer.GroupClip{Bounds: a.flatBounds, Weights: theta, Sensitivity: a.cfg.Clip * slices.Max(theta)}
	}
	a.stats.noiseSum += c.Sensitivity
	a.stats.steps++
	return c, nil
}

// release replaces every count by its noisy release.
func (a *Algorithm[T]) release(counts []float64) error {
	for k, c := range counts {
		v, err := a.noisyCount(c)
		if err != nil {
			return fmt.Errorf("dpsgdf: releasing the count of group %s: %w", a.cfg.Groups[k], err)
		}
		counts[k] = v
	}
	return nil
}

func (a *Algorithm[T]) record(perGroup []float64) {
	copy(a.last, perGroup)
	for k, v := range perGroup {
		a.stats.sum[k] += v
	}
}

// stepMechanism is what one step of Naive or Adaptive releases, as the
// accountant charges it (Flat is DP-SGD's own mechanism). Besides the
// gradient sum (σ2) they release the group counts (σ1, L2 sensitivity 1:
// one record changes one count by one) computed on the same Poisson
// sample, so the two are one joint mechanism with
// σ_eff = (σ1⁻² + σ2⁻²)^(-1/2), subsampled once; charging them as two
// independently sampled mechanisms would understate ε (at the paper's MNIST
// settings, 5.921 instead of 5.987).
func (a *Algorithm[T]) stepMechanism() accounting.Mechanism {
	return accounting.JointSubsampledGaussian(a.core.Q, a.countPart(), a.gradientPart())
}

func (a *Algorithm[T]) gradientPart() accounting.Part {
	switch a.cfg.Policy {
	case Adaptive:
		// The sensitivity max_k C^k changes every step (it is derived from
		// the released counts); σ2 is relative to it, so it is left out.
		return accounting.Part{NoiseMultiplier: a.cfg.Sigma,
			Protects: "each record's whole gradient, clipped at its group's bound C^k (noise std σ2·max_k C^k)"}
	}
	return accounting.Part{NoiseMultiplier: a.cfg.Sigma,
		Protects: "each record's whole gradient, clipped at C0 and weighted by θ^k (noise std σ2·C0·max_k θ^k)"}
}

func (a *Algorithm[T]) countPart() accounting.Part {
	what := "per-group counts of clipped and unclipped gradients (m^k, o^k)"
	if a.cfg.Policy == Naive {
		what = "per-group batch counts b^k"
	}
	return accounting.Part{NoiseMultiplier: a.sigma1, Sensitivity: 1, Protects: what}
}

// Core is the trainer's DP-SGD this algorithm runs with its clip policy:
// the trainer's device step (Device cuda) runs it there, the policy's
// decisions staying in this package.
func (a *Algorithm[T]) Core() *trainer.DPSGD[T] { return a.core }

// Receipt implements trainer.Algorithm.
func (a *Algorithm[T]) Receipt() (accounting.Receipt, error) { return a.core.Receipt() }

// Epsilon is the ε spent so far at the run's δ with the conversion of Balle
// et al. 2020 and with the classic one (Mironov 2017).
func (a *Algorithm[T]) Epsilon() (improved, classic float64) { return a.core.Epsilon() }

// LastBounds is the per-group vector of the last step: C^k for Adaptive,
// θ^k for Naive (nil for Flat).
func (a *Algorithm[T]) LastBounds() []float64 {
	if a.cfg.Policy == Flat {
		return nil
	}
	return slices.Clone(a.last)
}
