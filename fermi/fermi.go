package fermi

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/loaders"
	"github.com/fairdp/fairdp/models"
	"github.com/fairdp/fairdp/nn"
	"github.com/fairdp/fairdp/trainer"
)

// Name is DP-FERMI's --algo value.
const Name = "fermi"

// wWeightFactor sets WWeight = wWeightFactor·C·sqrt(ρ) (see WWeight).
const wWeightFactor = 0.25

// countShare is the fraction of the run's privacy budget, measured as the
// zCDP ρ that (ε, δ) allows, given to the one-off release of the group
// counts; the gradient noise is then calibrated by the run's accountant so
// that the composition of both stays within ε. 5 % keeps the counts of
// Adult's smaller group accurate to about 0.4 % at ε = 1 while costing the
// gradients little.
const countShare = 0.05

// countSigma is the noise multiplier of the group counts: the Gaussian
// mechanism whose zCDP cost 1/(2σ²) is countShare of
// ρ = (sqrt(ln(1/δ) + ε) - sqrt(ln(1/δ)))², the ρ that Bun and Steinke's
// conversion ε = ρ + 2 sqrt(ρ ln(1/δ)) turns into exactly (ε, δ).
func countSigma(eps, delta float64) float64 {
	l := math.Log(1 / delta)
	rho := math.Pow(math.Sqrt(l+eps)-math.Sqrt(l), 2)
	return 1 / math.Sqrt(2*countShare*rho)
}

// DPFERMI is DP-FERMI's Algorithm 1 (DP-SGDA, Lowy et al. 2022) as a
// trainer.Algorithm: each step writes the descent direction for θ,
// mean_B[∇ℓ + λ∇_θψ] (+ noise), into the model's gradients for the
// trainer's optimizer, and itself takes Algorithm 1's projected ascent
// step W ← Π_D(W + η_W[(λ/|B|) Σ_i ∇_Wψ_i + V_t]), the noise V_t added
// after the λ scaling, as the paper writes it (see WNoise). The model the
// trainer returns is the last iterate, as the paper recommends.
//
// Private runs sample batches by Poisson sampling (or shuffled batches,
// flagged in the receipt) and clip per sample with the bound Clip:
// --scope all clips the whole contribution of a record (loss and fairness
// terms, θ and W jointly), --scope sensitive only the s-dependent terms
// (the rest is computed exactly). Each step is one Gaussian mechanism in
// the run's ledger (PLD by default), charged at the sampling rate Q under
// --scope all and at rate 1 under --scope sensitive (AccountedQ: the exact
// terms show which records were sampled, so the sample amplifies nothing;
// see the package documentation); the ledger also holds the one-off release
// of the group counts behind p̂_S unless they are declared public.
type DPFERMI[T nn.Float] struct {
	Lambda      float64 // λ ≥ 0
	LRW         float64 // η_W
	Radius      float64 // D, the radius of W's Frobenius ball
	Clip        float64 // per-sample clip bound C
	Scope       string  // accounting.ScopeAll or accounting.ScopeSensitive
	Sampling    string  // accounting.SamplingPoisson or SamplingShuffle
	Calibration string  // "accountant" or "paper"
	Private     bool    // false: --epsilon inf without --sigma (no noise, no clipping)
	// Sensitivity is the L2 sensitivity of the noised sums: C when a record
	// may be added or removed (--scope all), 2C when one record's sensitive
	// attribute may change (--scope sensitive: its clipped s-dependent
	// contribution u becomes some v with ‖u‖, ‖v‖ ≤ C).
	Sensitivity float64
	// WWeight κ scales W's per-sample gradients inside the joint clipping:
	// the release is Σ_i clip_C(g_θ,i, κ g_W,i) + noise, and W's part is
	// divided by κ again afterwards (so W's noise std is StdTheta/κ).
	// κ = C·sqrt(ρ)/4 makes the s-dependent part of ∇_Wψ_i, whose norm is at
	// most 2/sqrt(ρ), take at most C/2 of the clip bound, which leaves room
	// for θ's part without clipping it; W tolerates the larger noise
	// because it is a k×l average that moves slowly.
	//
	// With --calibration paper WWeight is 0: as in the paper, only θ's part
	// is clipped (to C = L_θ) and W's part is left as it is, bounded by
	// construction (WSensitivity), each with its own noise.
	WWeight float64
	// WSensitivity is the L2 sensitivity of W's unclipped sum under
	// --calibration paper: ‖∇_Wψ_i‖ ≤ 2D + 2/sqrt(ρ̂) when a record is added
	// or removed; a change of s moves 2F/sqrt(p̂(s)) between two rows, by at
	// most 2·sqrt(2/ρ̂). 0 otherwise.
	WSensitivity float64
	// Sigma is the noise multiplier charged per step, the Gaussian
	// mechanism's std divided by its sensitivity: with one joint clip the
	// smaller std (in the weighted space) over Sensitivity; with the
	// paper's two blocks 1/sqrt((Δ_θ/std_θ)² + (Δ_W/std_W)²), the exact
	// multiplier of noise with two block variances.
	Sigma float64
	// StdTheta and StdW are the standard deviations of the noise on the
	// clipped sums of θ and W gradients before any λ scaling (StdW in W's
	// own units, so σ·Sensitivity/WWeight under one joint clip; B times
	// Theorem 3.3's σ_W under --calibration paper).
	StdTheta, StdW float64
	// WNoise is the std of Algorithm 1's V_t, the noise on each
	// coordinate of W's ascent direction (λ/|B|) Σ_i ∇_Wψ_i + V_t: V_t is
	// added after the λ scaling, so the release's sensitivity is λ times
	// that of the λ-free mean. Under the accountant's calibration (or
	// --sigma) V_t is the smallest noise that keeps that release at the
	// per-step multiplier Sigma, λ·StdW/B; this has the same distribution
	// as scaling a λ-free noisy release by λ, the form fairdp used before,
	// so no separate option keeps it. Under --calibration paper V_t is
	// Theorem 3.3's σ_W whatever λ is, and the accountant charges W's
	// release with sensitivity λ·WSensitivity (the theorem's σ_W assumes
	// λ = 1: at λ > 1 it buys less privacy than its ε).
	WNoise float64
	Delta  float64 // δ of the reported (ε, δ); 1/n² by default as in the paper
	Q      float64 // Poisson sampling rate batch/n (AccountedQ is the rate the ledger charges)
	Batch  int     // expected batch size; sums are divided by it
	Steps  int     // planned steps (epochs × steps per epoch)
	// CountSigma is the noise multiplier of the released group counts (0
	// when they are public or the run is not private); CountSensitivity is
	// their L2 sensitivity (1 for --scope all, √2 for --scope sensitive).
	CountSigma, CountSensitivity float64
	Reg                          *Regularizer
	Seed                         *uint64
	// HardenedNoise draws the θ and W noise with the floating-point-safe
	// sampler (dpops.AddGaussianHardened): set for a SteFFLe silo served
	// over the network, whose noisy sums leave it as they are.
	HardenedNoise bool
	// thetaNoise, when set (by tests), replaces θ's noise and scaling: the
	// CPU twin of the device's Philox noise makes a CPU run comparable value
	// for value with a run on the device.
	thetaNoise func(r *rand.Rand, params []*nn.Param[T], std, scale float64) error

	target   float64   // --epsilon
	released []float64 // the noisy group counts as released (floored at 1)
	records  int       // training records the guarantee covers
	noise    *rand.Rand
	noiseSrc *rand.ChaCha8 // noise's generator (a seeded checkpoint saves it)
	normals  dpops.Normals // θ's noise drawn during the step (drawAhead)
	ahead    bool          // during Step: this step's θ noise is in normals
	acc      *accounting.Ledger
	// calibratedBy is the accountant that calibrated σ ("" when σ was
	// given or came from Theorem 3.3): RDP where the PLD ledger could not.
	calibratedBy string
	clipper      dpops.Clipper[T]
	w            *wBlock[T]
	probs        []T
	pass         trainer.Pass[T] // the loss and ∂/∂logits buffers, fairness term added
	weights      []T
	coef         []float64 // addFairness's tables (fairTable)
	dz           []float64
	wTerm        []float64
	row          []float64

	publicSizes bool // --public-group-sizes: the exact group frequencies were used
	// per-epoch statistics for EpochFields, reported only when exact
	exact         bool
	psiSum        float64
	seen, clipped int
}

// New builds DP-FERMI for a prepared job: the group frequencies (noisy
// counts unless --public-group-sizes), the noise (calibrated by the run's
// accountant, or --calibration paper, or given by --sigma) and W = 0.
// Its settings are OptionsOf(job.Cfg), read here once.
//
// A job that resumes a checkpoint (trainer.Prepare with a checkpoint) reuses the
// counts the checkpointed run released instead of releasing new ones.
func New[T nn.Float](job *trainer.Job) (*DPFERMI[T], error) {
	released, err := restoredCounts(job)
	if err != nil {
		return nil, err
	}
	return newDPFERMI[T](job, OptionsOf(job.Cfg), released)
}

// NewWithReleasedCounts is DP-FERMI with the settings o (not job.Cfg's:
// job supplies the records and the randomness) for a party that may have
// already released its noisy group counts (a SteFFLe silo restarted from
// its state): it reuses released (ReleasedCounts of the earlier instance)
// instead of drawing new noise, so a restart releases nothing new, and
// charges the accountant for that one release exactly as the first start
// did. released must have the length and noise of this job's count
// release; nil releases the counts afresh, as New does.
func NewWithReleasedCounts[T nn.Float](job *trainer.Job, o Options, released []float64) (*DPFERMI[T], error) {
	return newDPFERMI[T](job, o, released)
}

// Options are DP-FERMI's settings: the privacy target (ε, δ), the clip
// bound C, the noise multiplier and the accountant, the fairness player's
// settings and the run's length. They are read from a Config once, where
// the algorithm is built (OptionsOf in New, or a SteFFLe silo's
// constructor), and passed to the constructor as values, so that the code
// that calibrates and charges the noise sees the numbers it uses rather
// than the whole configuration.
type Options struct {
	Epochs, Batch                int
	Seed                         *uint64
	Epsilon, Delta, Clip, Sigma  float64
	AllowLargeDelta              bool
	Sampling, Accountant         string
	Lambda, LRW, Radius          float64
	Scope, Fairness, Calibration string
	PublicGroupSizes             bool
}

// OptionsOf is DP-FERMI's options as cfg states them (Privacy.Epsilon,
// Privacy.Delta, Privacy.Clip, Privacy.Sigma, Fair.Lambda, …).
func OptionsOf(cfg trainer.Config) Options {
	p, f := cfg.Privacy, cfg.Fair
	return Options{Epochs: cfg.Epochs, Batch: cfg.Batch, Seed: cfg.Seed,
		Epsilon: p.Epsilon, Delta: p.Delta, Clip: p.Clip, Sigma: p.Sigma, AllowLargeDelta: p.AllowLargeDelta,
		Sampling: p.Sampling, Accountant: p.Accountant,
		Lambda: f.Lambda, LRW: f.LRW, Radius: f.Radius, Scope: f.Scope, Fairness: f.Fairness, Calibration: f.Calibration,
		PublicGroupSizes: f.PublicGroupSizes}
}

// Private says whether o asks for a private run: every setting but ε = ∞
// without a given σ (which trains like plain SGD, unclipped and unnoised).
func (o Options) Private() bool { return !(math.IsInf(o.Epsilon, 1) && o.Sigma == 0) }

// check refuses privacy values no run can state a guarantee for, by the
// rules of trainer.Config's Validate (so a Config that passed it passes
// here). Options built by a caller (a SteFFLe silo's constructor) may not
// have been through Validate, and a clip, ε or δ out of range must be an
// error, not a receipt computed from it. The messages name the Config
// fields the values come from.
func (o Options) check() error {
	if errs := trainer.CheckPrivacy(o.Epsilon, o.Delta, o.Clip, o.Sigma); len(errs) > 0 {
		return fmt.Errorf("fermi: %w", errs)
	}
	return nil
}

func newDPFERMI[T nn.Float](job *trainer.Job, o Options, released []float64) (*DPFERMI[T], error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	train := job.Train
	n := train.N()
	if n == 0 {
		return nil, fmt.Errorf("fermi: the training set %s is empty", train.Name)
	}
	if o.Batch > n {
		return nil, fmt.Errorf("fermi: %w", trainer.FieldErrors{{Field: "Batch", Msg: fmt.Sprintf("%d is larger than the %d training records", o.Batch, n)}})
	}
	a := &DPFERMI[T]{publicSizes: o.PublicGroupSizes,
		Lambda: o.Lambda, LRW: o.LRW, Radius: o.Radius, Clip: o.Clip, Scope: o.Scope, Sampling: o.Sampling,
		Calibration: o.Calibration, Private: o.Private(),
		Delta: o.Delta, Q: float64(o.Batch) / float64(n), Batch: o.Batch, Seed: o.Seed, target: o.Epsilon,
	}
	if !a.Private {
		// Non-private FERMI trains exactly like plain SGD (shuffled batches).
		a.Sampling = accounting.SamplingShuffle
	}
	if a.Delta == 0 {
		a.Delta = accounting.DefaultDelta(n) // 1/n², the paper's δ
	}
	if a.Private {
		if err := accounting.CheckDelta(a.Delta, n, o.AllowLargeDelta); err != nil {
			return nil, fmt.Errorf("fermi: %w", err)
		}
	}
	a.records = n
	if a.Sampling == accounting.SamplingShuffle {
		a.Steps = o.Epochs * ((n + o.Batch - 1) / o.Batch)
	} else {
		a.Steps = o.Epochs * max(1, int(math.Round(1/a.Q)))
	}
	k, l := numGroups(train), max(2, len(train.LabelNames))
	eo := o.Fairness == "eo"
	var err error
	if a.Private {
		// --scope sensitive is charged at sensitivity 2C without
		// subsampling (AccountedQ is 1): the sensitive scope adds the
		// sampled records' s-independent terms exactly, so the batch is not
		// hidden, and PLD's replace-one pair, which assumes it is, does not
		// apply either. At q = 1 add/remove at 2C and replace-one are the
		// same Gaussian.
		if a.acc, err = accounting.NewLedger(o.Accountant, accounting.PLDOptions{}); err != nil {
			return nil, fmt.Errorf("fermi: %w", trainer.FieldErrors{{Field: "Privacy.Accountant", Msg: err.Error()}})
		}
		a.noiseSrc = job.Source.DeriveChaCha8("noise")
		a.noise = rand.New(a.noiseSrc)
		a.Sensitivity = o.Clip
		a.CountSensitivity = 1
		if a.Scope == accounting.ScopeSensitive {
			a.Sensitivity, a.CountSensitivity = 2*o.Clip, math.Sqrt2
		}
	}
	freq, err := a.groupFrequencies(train, k, l, eo, o.PublicGroupSizes, o.Sigma, job.Source.Derive("fermi-counts"), released)
	if err != nil {
		return nil, err
	}
	if a.Reg, err = NewRegularizer(k, l, eo, freq); err != nil {
		return nil, err
	}
	a.WWeight = wWeightFactor * a.Clip * math.Sqrt(a.Reg.MinFreq())
	if a.Private {
		if err := a.calibrate(n, o.Epochs, o.Sigma); err != nil {
			return nil, err
		}
	}
	a.w = newWBlock[T](a.Reg.Mats(), k*l, a.WWeight)
	return a, nil
}

// StepMechanism is the release one private step makes (the jointly clipped
// θ and W sums with one Gaussian noise, charged once), as the accountant
// charges it: at sampling rate AccountedQ; its Steps is 0.
func (a *DPFERMI[T]) StepMechanism() accounting.Mechanism {
	return accounting.SubsampledGaussian(a.AccountedQ(), a.Sigma, a.Sensitivity, a.protects())
}

// AccountedQ is the sampling rate the accountant charges a step with: Q
// under --scope all, 1 under --scope sensitive. Under the sensitive scope
// a step adds the sampled records' s-independent terms exactly, so an
// adversary who knows every non-sensitive attribute can tell which records
// were sampled, and the subsampled-Gaussian amplification (which needs the
// sample to stay hidden) does not apply: each step is charged as the plain
// Gaussian mechanism on the s-dependent terms (Mironov 2017, Proposition 7:
// order-α RDP α/(2σ²) per step). The package documentation gives the
// analysis.
func (a *DPFERMI[T]) AccountedQ() float64 {
	if a.Scope == accounting.ScopeSensitive {
		return 1
	}
	return a.Q
}

// ReleasedCounts is the noisy group counts this instance released (floored
// at 1, before normalising), nil when none were released (public group
// sizes, or not private). A party that must survive restarts persists them
// and passes them to NewWithReleasedCounts.
func (a *DPFERMI[T]) ReleasedCounts() []float64 { return slices.Clone(a.released) }

// numGroups is the number of sensitive groups of d (its names, or the
// largest group index + 1).
func numGroups(d *loaders.Dataset) int {
	k := len(d.GroupNames)
	for _, g := range d.Groups {
		k = max(k, g+1)
	}
	return max(k, 1)
}

// groupFrequencies returns p̂_S (or p̂(s | y) per label for equalized odds)
// from the training counts. A private run without public group sizes
// releases every count once with Gaussian noise (the floating-point-safe
// scalar sampler), charges that release to the accountant, floors noisy
// counts at 1 and normalises (post-processing).
func (a *DPFERMI[T]) groupFrequencies(d *loaders.Dataset, k, l int, eo, public bool, sigma float64, r *rand.Rand, released []float64) ([]float64, error) {
	mats := 1
	if eo {
		mats = l
	}
	counts := make([]float64, mats*k)
	for i, g := range d.Groups {
		t := 0
		if eo {
			t = d.Labels[i]
		}
		counts[t*k+g]++
	}
	if a.Private && !public {
		switch {
		case sigma > 0:
			// A given σ sets all the noise, the counts' too (as much as all
			// steps together at q = 1), so that what the run spends does
			// not depend on a finite ε, which is then only its cap.
			a.CountSigma = sigma * math.Sqrt(float64(a.Steps))
		default:
			a.CountSigma = countSigma(a.target, a.Delta)
		}
		switch {
		case released != nil:
			if len(released) != len(counts) {
				return nil, fmt.Errorf("fermi: %d released group counts, want %d", len(released), len(counts))
			}
			for i, c := range released {
				if !(c >= 1) || math.IsInf(c, 1) {
					return nil, fmt.Errorf("fermi: released group count %d is %v, want a finite number ≥ 1", i, c)
				}
			}
			copy(counts, released)
		default:
			for i, c := range counts {
				noisy, err := dpops.ScalarGaussian(r, c, a.CountSensitivity, a.CountSigma)
				if err != nil {
					return nil, err
				}
				counts[i] = max(noisy, 1)
			}
		}
		a.released = slices.Clone(counts)
		if err := a.acc.Step(a.countMechanism(), 1); err != nil {
			return nil, err
		}
	}
	for t := range mats {
		row := counts[t*k : (t+1)*k]
		total := 0.0
		for _, c := range row {
			total += c
		}
		for g := range row {
			if total > 0 {
				row[g] /= total
			} else {
				row[g] = 1 / float64(k) // a label without records: any frequencies do
			}
		}
	}
	return counts, nil
}

// calibrate sets the gradient noise: --sigma as given, Theorem 3.3's closed
// form with --calibration paper, else the smallest multiplier whose
// composition with the count release meets --epsilon.
func (a *DPFERMI[T]) calibrate(n, epochs int, sigma float64) error {
	counts := a.countRelease()
	switch {
	case sigma > 0:
		a.Sigma = sigma
		a.StdTheta, a.StdW = sigma*a.Sensitivity, sigma*a.Sensitivity/a.WWeight
		a.WNoise = a.Lambda * a.StdW / float64(a.Batch)
		return nil
	case a.Calibration == "paper":
		T := epochs * ((n + a.Batch - 1) / a.Batch) // T = epochs · ceil(n/m), as the paper's reference code counts steps
		rho := a.Reg.MinFreq()
		st, sw, err := PaperSigmas(n, rho, T, a.Clip, a.Radius, a.target, a.Delta)
		if err != nil {
			return err
		}
		// Theorem 3.3's σ are noise on the mean gradients; the sums get B·σ.
		// V_t = σ_W is added after the λ scaling (Algorithm 1), so W's
		// release (λ/B)Σ_i ∇_Wψ_i + V_t moves by λ·WSensitivity/B when one
		// record changes.
		a.StdTheta, a.StdW, a.WNoise = st*float64(a.Batch), sw*float64(a.Batch), sw
		a.WWeight = 0
		a.WSensitivity = 2*a.Radius + 2/math.Sqrt(rho)
		if a.Scope == accounting.ScopeSensitive {
			a.WSensitivity = 2 * math.Sqrt(2/rho)
		}
		a.Sigma = 1 / math.Hypot(a.Sensitivity/a.StdTheta, a.Lambda*a.WSensitivity/a.StdW)
		eps, err := plannedEpsilon(a.acc.Kind(), a.AccountedQ(), a.Sigma, a.Steps, a.ShuffledStepsPerEpoch(), counts, a.Delta)
		if err != nil {
			return err
		}
		if eps > a.target {
			return fmt.Errorf("fermi: Theorem 3.3's noise (σ_θ = %.4g, σ_W = %.4g) gives ε = %.4g at Fair.Lambda %v by the %s accountant, above Privacy.Epsilon %v; use Fair.Calibration accountant",
				st, sw, eps, a.Lambda, a.acc.Kind(), a.target)
		}
		return nil
	}
	// The one-off group-count release shares the budget.
	s, used, err := accounting.CalibrateRunSigma(a.target, a.Delta, a.AccountedQ(), a.Steps,
		accounting.SigmaCalibration{Accountant: a.acc.Kind(), Spent: counts, StepsPerEpoch: a.ShuffledStepsPerEpoch()})
	if err != nil && counts != nil {
		return fmt.Errorf("fermi: %w (the noisy group counts share the budget: give Fair.PublicGroupSizes or a larger Privacy.Epsilon)", err)
	} else if err != nil {
		return err
	}
	a.Sigma, a.calibratedBy = s, used
	a.StdTheta, a.StdW = s*a.Sensitivity, s*a.Sensitivity/a.WWeight
	a.WNoise = a.Lambda * a.StdW / float64(a.Batch)
	return nil
}

// countProtects is what the group-count release protects, as receipts and
// ledgers name it; IsCountRelease tells that release by it.
const countProtects = "group counts behind p̂_S (released once)"

// countMechanism is the one-off noisy group-count release as the ledger
// charges it (Steps 0).
func (a *DPFERMI[T]) countMechanism() accounting.Mechanism {
	return accounting.SubsampledGaussian(1, a.CountSigma, a.CountSensitivity, countProtects)
}

// IsCountRelease reports whether m, from a DP-FERMI ledger, is the one-off
// noisy group-count release rather than the training steps. Its sampling
// rate cannot tell them apart: under --scope sensitive the steps are
// charged at rate 1 too (AccountedQ).
func IsCountRelease(m accounting.Mechanism) bool { return m.Protects == countProtects }

// countRelease is the group-count release with its one step, what the
// gradient steps compose with; nil when the group sizes are public.
func (a *DPFERMI[T]) countRelease() []accounting.Mechanism {
	if a.CountSigma == 0 {
		return nil
	}
	m := a.countMechanism()
	m.Steps = 1
	return []accounting.Mechanism{m}
}

// PlannedRunEpsilon is trainer.Hooks.PlannedRunEpsilon: the ε, at the run's
// δ, of all planned steps composed with the group-count release.
func (a *DPFERMI[T]) PlannedRunEpsilon() (epsilon, delta float64, err error) {
	if !a.Private {
		return 0, 0, errors.New("fermi: a non-private run spends no ε")
	}
	eps, err := plannedEpsilon(a.acc.Kind(), a.AccountedQ(), a.Sigma, a.Steps, a.ShuffledStepsPerEpoch(), a.countRelease(), a.Delta)
	return eps, a.Delta, err
}

// ShuffledStepsPerEpoch is, for a private run with shuffled batches, the
// number of batches an epoch is cut into, which its accounting charges
// once per epoch (accounting.ShuffledCharges); 0 for Poisson sampling.
func (a *DPFERMI[T]) ShuffledStepsPerEpoch() int {
	if !a.Private || a.Sampling != accounting.SamplingShuffle {
		return 0
	}
	return (a.records + a.Batch - 1) / a.Batch
}

// projectedEpsilon is the ε the accountant of the given kind will report
// after steps steps charged at rate q (AccountedQ) and multiplier sigma
// composed with the releases already spent.
func projectedEpsilon(kind string, q, sigma float64, steps int, spent []accounting.Mechanism, delta float64) (float64, error) {
	return plannedEpsilon(kind, q, sigma, steps, 0, spent, delta)
}

// plannedEpsilon is projectedEpsilon for a run whose batches are shuffled,
// perEpoch steps to an epoch (0: Poisson sampling), which its receipt
// charges once per epoch (accounting.ShuffledCharges).
func plannedEpsilon(kind string, q, sigma float64, steps, perEpoch int, spent []accounting.Mechanism, delta float64) (float64, error) {
	m := accounting.SubsampledGaussian(q, sigma, 0, "")
	m.Steps = steps
	mechs := append([]accounting.Mechanism{m}, spent...)
	if perEpoch > 0 {
		var err error
		if mechs, _, _, err = accounting.ShuffledCharges(mechs, perEpoch); err != nil {
			return math.NaN(), err
		}
	}
	return accounting.PlanEpsilon(kind, accounting.PLDOptions{}, delta, mechs...)
}

// Name implements trainer.Algorithm.
func (a *DPFERMI[T]) Name() string { return Name }

// Sampler implements trainer.Algorithm: Poisson sampling with rate q for
// private runs unless --sampling shuffle; shuffled batches otherwise.
func (a *DPFERMI[T]) Sampler(n int, r *rand.Rand) (dpops.Sampler, error) {
	if a.Sampling == accounting.SamplingShuffle {
		return dpops.NewShuffle(n, a.Batch, r)
	}
	return dpops.NewPoisson(n, a.Q, r)
}

// Step implements trainer.Algorithm: one step of DP-SGDA. It leaves the
// θ descent direction in the model's gradients and updates W itself.
//
// λ multiplies the fairness terms after clipping: the clipped release is of
// ∇_Wψ_i (and, for --scope sensitive, of the s-dependent part of ∇_θψ_i)
// without λ, so the clip bound means the same for every λ and does not
// shrink W's ascent direction as λ grows. θ's noisy sum is then scaled by
// λ (post-processing); W's clipped sum is scaled by λ/B and Algorithm 1's
// V_t (std WNoise) added after that. With --scope all the θ part is the
// whole ∇ℓ_i + λ∇_θψ_i, clipped jointly with ∇_Wψ_i.
func (a *DPFERMI[T]) Step(m trainer.Model[T], b trainer.Batch[T]) (float64, error) {
	var draws int
	if draws, a.ahead = a.drawAhead(m); a.ahead {
		a.normals.Start(a.noiseSrc, draws)
		defer func() {
			a.normals.Wait() // a.noiseSrc (and a.noise on it) is the drawing goroutine's until then
			a.ahead = false
		}()
	}
	m.ZeroGrads()
	clear(a.w.Grad)
	n := b.N()
	l, out := a.Reg.Classes, m.OutDim()
	if c := trainer.Classes(m); c != l {
		return 0, fmt.Errorf("fermi: the model predicts %d classes but the data has %d", c, l)
	}
	var logits []T
	if n > 0 {
		logits = a.pass.Forward(m, b)
	}
	if !a.Private {
		if n > 0 {
			a.weights = grow(a.weights, n)
			for i := range a.weights {
				a.weights[i] = T(1) / T(n)
			}
			a.lossProbs(m, b, logits, out, a.weights)
			a.recordPsi(b)
			if a.Lambda > 0 {
				a.addFairness(b, out, Full, a.Lambda/float64(n), a.Lambda/float64(n), a.pass.DLogits, false)
			}
			a.pass.Backward(m)
			m.ParamGrads(nil)
		}
		return sum(a.pass.Loss[:n]), a.ascend()
	}
	if err := a.privateStep(m, b, logits, out); err != nil {
		return 0, err
	}
	if err := a.acc.Step(a.StepMechanism(), 1); err != nil {
		return 0, err
	}
	return sum(a.pass.Loss[:n]), a.ascend()
}

// drawAheadMinParams is the model size from which a private step draws θ's
// noise on a goroutine of its own while the gradients are computed
// (dpops.Normals), as DP-SGD does: the MNIST CNN's 431K draws took 3 ms at
// the end of a 35 ms step. A variable so that a test can switch it off.
var drawAheadMinParams = 1 << 15

// drawAhead reports whether this step's θ noise is drawn ahead: a private
// step with the default sampler and a noise std > 0 (AddGaussian draws
// nothing for std 0) on a large model. The draws are the ones
// NoiseAndScale would make, in the same order and before W's, so the
// results are bit for bit those of drawing after the gradients. It also
// returns the number of draws, the model's parameter count.
func (a *DPFERMI[T]) drawAhead(m trainer.Model[T]) (int, bool) {
	if !a.Private || a.HardenedNoise || a.thetaNoise != nil || !(a.StdTheta > 0) || math.IsInf(a.StdTheta, 1) {
		return 0, false
	}
	n := trainer.NumParams(m)
	return n, n >= drawAheadMinParams
}

// privateStep computes the clipped sums (Clipped), adds θ's noise and
// divides by the expected batch size (times λ where λ was left out of the
// clip), forms W's direction (λ/B)·sum + V_t, and, for --scope sensitive,
// adds the exact terms that do not depend on s.
func (a *DPFERMI[T]) privateStep(m trainer.Model[T], b trainer.Batch[T], logits []T, out int) error {
	n := b.N()
	var norms []float64
	var err error
	// With --scope sensitive and λ = 0 the release would be multiplied by
	// 0: nothing that depends on s reaches θ or W, so skip computing it (the
	// step is still charged, conservatively).
	if a.Scope == accounting.ScopeAll || a.Lambda > 0 {
		if norms, err = a.Clipped(m, b, logits, out); err != nil {
			return err
		}
	} else if a.exact && n > 0 {
		a.probabilities(logits, out, n) // for recordPsi only
	}
	a.recordPsi(b)
	clipped, clip := 0, a.Clip // counted in locals: a branch-free loop (whether a norm exceeds C is a coin flip)
	for _, g := range norms {
		if g > clip {
			clipped++
		}
	}
	a.clipped += clipped
	inv := 1 / float64(a.Batch)
	noise := dpops.NoiseAndScale[T]
	if a.HardenedNoise {
		noise = dpops.NoiseAndScaleHardened[T]
	}
	if a.thetaNoise != nil {
		noise = a.thetaNoise
	}
	if a.ahead {
		noise = func(_ *rand.Rand, params []*nn.Param[T], std, scale float64) error {
			return dpops.NoiseAndScaleDrawn(a.normals.Wait(), params, std, scale)
		}
	}
	if err := noise(a.noise, m.Params(), a.StdTheta, a.thetaScale()); err != nil {
		return err
	}
	if err := a.wDirection(); err != nil {
		return err
	}
	if a.Scope == accounting.ScopeSensitive && n > 0 {
		// The terms that do not depend on s_i, exact and already divided by B.
		a.weights = grow(a.weights, n)
		for i := range a.weights {
			a.weights[i] = T(inv)
		}
		a.pass.LossGrad(m, b, logits, a.weights)
		if a.Lambda > 0 {
			a.addFairness(b, out, NonSensitive, a.Lambda*inv, a.Lambda*inv, a.pass.DLogits, false)
		}
		a.pass.Backward(m)
		m.ParamGrads(nil)
	}
	return nil
}

// thetaScale is what θ's noisy clipped sum is multiplied by: 1/B, times λ
// when λ was left out of the clip (lambdaAfterClip).
func (a *DPFERMI[T]) thetaScale() float64 {
	inv := 1 / float64(a.Batch)
	if a.lambdaAfterClip() {
		return a.Lambda * inv
	}
	return inv
}

// wDirection turns W's clipped sum in a.w.Grad into Algorithm 1's ascent
// direction (λ/B) Σ_i clip_i + V_t, V_t drawn from the noise stream with
// the floating-point-safe sampler (dpops.AddGaussianHardened) in every run,
// on the device too: W is float64 and leaves the process as it is
// (report.json extra.fermi.w, a SteFFLe silo's message), where no rounding
// to float32 weights covers the textbook sampler's low-order bits, and its
// few k·l values per step make the hardened draws cheap.
func (a *DPFERMI[T]) wDirection() error {
	inv := 1 / float64(a.Batch)
	for i := range a.w.Grad {
		a.w.Grad[i] *= a.Lambda * inv
	}
	return dpops.AddGaussianHardened(a.noise, a.w.Grad, a.WNoise)
}

// Clipped is the privacy-critical part of a private step: it leaves in the
// model's gradients and in W's gradient the per-sample clipped sums
// Σ_i c_i g_i before noise, and returns the per-sample norms (and leaves
// the batch's class probabilities in a.probs). For --scope
// all g_i = (∇_θ[ℓ_i + λψ_i], ∇_Wψ_i); for --scope sensitive g_i is the
// s-dependent part of (∇_θψ_i, ∇_Wψ_i) (of (λ∇_θψ_i, ∇_Wψ_i) with
// --calibration paper). θ and κ·W are clipped jointly, so
// changing one record moves (θ sum, κ·W sum) by at most Sensitivity
// (under --calibration paper only θ is clipped, and W's sum moves by at
// most WSensitivity). logits must be the model's output for b (nil for an
// empty batch).
func (a *DPFERMI[T]) Clipped(m trainer.Model[T], b trainer.Batch[T], logits []T, out int) ([]float64, error) {
	n := b.N()
	a.w.start(n)
	if n == 0 { // an empty Poisson batch still releases noise
		return nil, nil
	}
	if a.Scope == accounting.ScopeAll {
		a.lossProbs(m, b, logits, out, nil)
		a.addFairness(b, out, Full, a.Lambda, 1, a.pass.DLogits, true)
	} else {
		a.pass.Zero(m, b) // only the fairness term is back-propagated
		a.probabilities(logits, out, n)
		thetaScale := a.Lambda
		if a.lambdaAfterClip() {
			thetaScale = 1
		}
		a.addFairness(b, out, Sensitive, thetaScale, 1, a.pass.DLogits, true)
	}
	a.pass.Backward(m)
	if a.WWeight == 0 { // --calibration paper: W's part is bounded without clipping
		a.w.ParamGrads(nil)
		return a.clipper.Clip(n, dpops.Flat(a.Clip), m)
	}
	return a.clipper.Clip(n, dpops.Flat(a.Clip), m, a.w)
}

// lossProber is a model that computes its loss and its class probabilities
// in one pass (models.Model).
type lossProber[T nn.Float] interface {
	LossProbs(logits []T, labels []int, weight, loss, dlogits, probs []T)
}

// lossProbs is the pass's LossGrad (weight nil: 1 each) and the class
// probabilities of logits into a.probs: in one pass for a one-logit model
// that can (models.Model computes each sample's exponential once for
// both), else LossGrad then probabilities as two passes cost the same.
// out is m.OutDim(); the batch must not be empty.
func (a *DPFERMI[T]) lossProbs(m trainer.Model[T], b trainer.Batch[T], logits []T, out int, weight []T) {
	if lp, ok := m.(lossProber[T]); ok && out == 1 {
		a.probs = grow(a.probs, b.N()*a.Reg.Classes)
		a.pass.Zero(m, b) // sizes the loss buffers, which LossProbs fills
		lp.LossProbs(logits, b.Labels, weight, a.pass.Loss, a.pass.DLogits, a.probs)
		return
	}
	a.pass.LossGrad(m, b, logits, weight)
	a.probabilities(logits, out, b.N())
}

// probabilities writes the class probabilities of n samples' logits into
// a.probs.
func (a *DPFERMI[T]) probabilities(logits []T, out, n int) {
	a.probs = grow(a.probs, n*a.Reg.Classes)
	models.Probabilities(logits, out, n, a.probs)
}

// lambdaAfterClip reports whether θ's clipped release leaves λ out (and
// λ scales it afterwards): --scope sensitive with the accountant's
// calibration. With --scope all θ's release is ∇ℓ_i + λ∇_θψ_i; with
// --calibration paper it is λ times the s-dependent part, clipped to L_θ
// with Theorem 3.3's noise added unscaled, as in the paper.
func (a *DPFERMI[T]) lambdaAfterClip() bool {
	return a.Scope == accounting.ScopeSensitive && a.WWeight != 0
}

// addFairness adds thetaScale·∂ψ_i(part)/∂logits of every sample of the
// batch into dl and wScale·∂ψ_i(part)/∂W either into the per-sample rows
// of the W block (perSample, for clipping) or straight into its gradient.
//
// It is Coefficients, LogitGrad and GradW per sample (the test
// TestAddFairnessMatchesPerSample checks it against exactly that, bit for
// bit), with what depends only on the sample's matrix t and group s taken
// out of the loop: W is fixed within a step, so the coefficients are a
// table of Mats·k rows (fairTable). Only products Go would evaluate first
// anyway are precomputed ((scale·2)·W_rj of GradW's NonSensitive term,
// scale·(c_1 − c_0) of LogitGrad's one-logit case), so every value is the
// one the per-sample calls compute.
func (a *DPFERMI[T]) addFairness(b trainer.Batch[T], out int, part Part, thetaScale, wScale float64, dl []T, perSample bool) {
	reg := a.Reg
	k, l := reg.Groups, reg.Classes
	size := k * l
	a.fairTable(part, thetaScale, wScale)
	// Everything the loop reads, in locals: the compiler cannot keep a's
	// fields in registers across the stores.
	n := b.N()
	groups, labels, probs := b.Groups[:n], b.Labels[:n], a.probs[:n*l]
	coef, dz, wTerm, invSqrt := a.coef, a.dz, a.wTerm, reg.invSqrt
	per, mat, grad := a.w.per, a.w.mat, a.w.Grad
	eo := reg.EqualizedOdds
	nonSensitive, sensitive := part != Sensitive, part != NonSensitive
	twice := wScale * 2 // GradW's Sensitive term is (wScale·2)·F_j·invSqrt
	if out == 1 && perSample {
		oneLogitRows(groups, labels, probs, k, eo, dz, wTerm, invSqrt, thetaScale != 0, nonSensitive, sensitive, twice, dl, per, mat)
		return
	}
	for i, s := range groups {
		t := 0 // MatOf(y)
		if eo {
			t = labels[i]
		}
		ts := t*k + s
		pr := probs[i*l : (i+1)*l]
		if thetaScale != 0 {
			if out == 1 {
				dl[i] += T(dz[ts] * float64(pr[0]) * float64(pr[1]))
			} else {
				LogitGrad(pr, coef[ts*l:(ts+1)*l], out, thetaScale, dl[i*out:(i+1)*out])
			}
		}
		var dst []float64
		if perSample {
			mat[i] = t
			dst = per[i*size : (i+1)*size]
		} else {
			dst = grad[t*size : (t+1)*size]
		}
		if nonSensitive {
			wt := wTerm[t*size : (t+1)*size]
			if l == 2 {
				p0, p1 := float64(pr[0]), float64(pr[1])
				for g := range k {
					dst[2*g] -= wt[2*g] * p0
					dst[2*g+1] -= wt[2*g+1] * p1
				}
			} else {
				for g := range k {
					for j, p := range pr {
						dst[g*l+j] -= wt[g*l+j] * float64(p)
					}
				}
			}
		}
		if sensitive {
			inv := invSqrt[ts]
			row := dst[s*l : (s+1)*l]
			for j, p := range pr {
				row[j] += twice * float64(p) * inv
			}
		}
	}
}

// oneLogitRows is addFairness's loop for a one-logit model (l = 2, so F =
// (1 − p, p)) writing per-sample W rows (the clipped pass): the same
// operations on the same values as the general loop, with nothing but the
// arithmetic left in it.
func oneLogitRows[T nn.Float](groups, labels []int, probs []T, k int, eo bool, dz, wTerm, invSqrt []float64,
	theta, nonSensitive, sensitive bool, twice float64, dl []T, per []float64, mat []int) {
	size := 2 * k
	probs, dl, mat = probs[:2*len(groups)], dl[:len(groups)], mat[:len(groups)]
	if k == 2 && !eo && theta && nonSensitive && sensitive {
		// The default shape (two groups, demographic parity, --scope all):
		// one 2×2 matrix held in registers, every sample's matrix is 0
		// (mat as start left it) and its row is written whole.
		w0, w1, w2, w3 := wTerm[0], wTerm[1], wTerm[2], wTerm[3]
		per = per[:4*len(groups)]
		for i, s := range groups {
			p0, p1 := float64(probs[2*i]), float64(probs[2*i+1])
			dl[i] += T(dz[s] * p0 * p1)
			r0, r1, r2, r3 := 0.0, 0.0, 0.0, 0.0
			r0 -= w0 * p0
			r1 -= w1 * p1
			r2 -= w2 * p0
			r3 -= w3 * p1
			row := per[4*i : 4*i+4]
			row[0], row[1], row[2], row[3] = r0, r1, r2, r3
			inv := invSqrt[s]
			row[2*s] += twice * p0 * inv
			row[2*s+1] += twice * p1 * inv
		}
		return
	}
	for i, s := range groups {
		t := 0
		if eo {
			t = labels[i]
		}
		ts := t*k + s
		p0, p1 := float64(probs[2*i]), float64(probs[2*i+1])
		if theta {
			dl[i] += T(dz[ts] * p0 * p1)
		}
		mat[i] = t
		row := per[i*size : (i+1)*size]
		if nonSensitive {
			wt := wTerm[t*size : (t+1)*size]
			for g := 0; g+1 < len(row) && g+1 < len(wt); g += 2 {
				row[g] -= wt[g] * p0
				row[g+1] -= wt[g+1] * p1
			}
		}
		if sensitive {
			inv := invSqrt[ts]
			row[2*s] += twice * p0 * inv
			row[2*s+1] += twice * p1 * inv
		}
	}
}

// fairTable fills addFairness's per-step tables: a.coef, Mats·k rows of
// the l coefficients of part (row t·k+s for matrix t and group s); a.dz,
// thetaScale·(c_1 − c_0) per row, LogitGrad's factor for a one-logit model;
// and a.wTerm, (wScale·2)·W in W's layout, GradW's NonSensitive factor.
func (a *DPFERMI[T]) fairTable(part Part, thetaScale, wScale float64) {
	reg := a.Reg
	k, l, mats := reg.Groups, reg.Classes, reg.Mats()
	a.coef = grow(a.coef, mats*k*l)
	a.dz = grow(a.dz, mats*k)
	for t := range mats {
		for s := range k {
			ts := t*k + s
			c := a.coef[ts*l : (ts+1)*l]
			reg.matCoefficients(t, s, part, c)
			a.dz[ts] = thetaScale * (c[1] - c[0])
		}
	}
	a.wTerm = grow(a.wTerm, len(reg.W))
	for i, w := range reg.W {
		a.wTerm[i] = wScale * 2 * w
	}
}

// recordPsi adds the batch's ψ_i to the epoch statistics. They are
// reported only when exact statistics are allowed, so otherwise (a private
// run's default) nothing is computed: it was 12 % of a DP-FERMI step on the
// logistic benchmark.
func (a *DPFERMI[T]) recordPsi(b trainer.Batch[T]) {
	if !a.exact {
		return
	}
	l := a.Reg.Classes
	a.row = grow(a.row, l)
	for i := range b.N() {
		for j, p := range a.probs[i*l : (i+1)*l] {
			a.row[j] = float64(p)
		}
		a.psiSum += a.Reg.Psi(a.row, b.Groups[i], b.Labels[i])
	}
	a.seen += b.N()
}

// ascend is W's projected ascent step W ← Π_D(W + η_W ĝ_W), where ĝ_W
// is this step's estimate of λ·mean ∇_Wψ (plus V_t for private runs).
func (a *DPFERMI[T]) ascend() error {
	for i, g := range a.w.Grad {
		a.Reg.W[i] += a.LRW * g
	}
	a.Reg.Project(a.Radius)
	for _, v := range a.Reg.W {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("fermi: W diverged (%v); lower Fair.LRW", v)
		}
	}
	return nil
}

// protects describes the per-step mechanism for the receipt.
func (a *DPFERMI[T]) protects() string {
	if a.Scope == accounting.ScopeSensitive {
		return "each record's sensitive attribute: the s-dependent ψ gradients, θ and W jointly clipped to C (sensitivity 2C); " +
			"charged with q = 1, no amplification by sampling: the exact s-independent terms show which records were sampled"
	}
	return "each record: its whole θ and W gradient, jointly clipped to C"
}

// Receipt implements trainer.Algorithm.
func (a *DPFERMI[T]) Receipt() (accounting.Receipt, error) {
	if !a.Private {
		return accounting.NotPrivate(), nil
	}
	r, err := a.acc.Receipt(a.Delta, accounting.RunInfo{Scope: a.Scope, Sampling: a.Sampling, Seed: a.Seed, Records: a.records,
		StepsPerEpoch: a.ShuffledStepsPerEpoch()})
	if err != nil {
		return accounting.Receipt{}, fmt.Errorf("fermi: %w", err)
	}
	note := fmt.Sprintf("DP-FERMI: noise std %.4g on θ gradient sums, std %.4g (V_t, floating-point-safe sampler) on W's ascent direction (λ/B)·sum; θ and %.3g·W clipped jointly to %.4g (sensitivity %.4g); calibration %s",
		a.StdTheta, a.WNoise, a.WWeight, a.Clip, a.Sensitivity, a.Calibration)
	if a.WWeight == 0 {
		note = fmt.Sprintf("DP-FERMI (Theorem 3.3 noise): std %.4g on θ gradient sums clipped to %.4g (sensitivity %.4g), std %.4g (V_t, floating-point-safe sampler) on W's ascent direction (λ/B)·sum (sensitivity λ·%.4g/B by construction)",
			a.StdTheta, a.Clip, a.Sensitivity, a.WNoise, a.WSensitivity)
	}
	if a.CountSigma > 0 {
		note += fmt.Sprintf("; group counts released once with noise multiplier %.4g", a.CountSigma)
	} else {
		note += "; group sizes declared public (--public-group-sizes): no budget spent on them"
	}
	if a.calibratedBy != "" && a.calibratedBy != a.acc.Kind() {
		note += "; " + trainer.CalibrationFallbackNote
	}
	if r.Note != "" {
		note = r.Note + "; " + note
	}
	r.Note = note
	return r, nil
}

// NotCovered is trainer.Hooks.NotCovered: group frequencies taken as
// public are exact statistics of the training records. (Under --scope
// sensitive the sample is not hidden; the ledger charges that itself,
// AccountedQ, so it is covered.)
func (a *DPFERMI[T]) NotCovered() []accounting.NotCovered {
	if !a.Private {
		return nil
	}
	var nc []accounting.NotCovered
	if a.publicSizes {
		nc = append(nc, accounting.NotCovered{Item: "group_sizes", Detail: "the sensitive groups' frequencies p̂_S were computed " +
			"from the exact training counts and treated as public (public group sizes): they are in report.json extra.fermi.group_freq"})
	}
	return nc
}

// Hooks implements trainer.Algorithm: whether exact statistics may be
// released (OnStart), ‖W‖ and the epoch's statistics (OnEpoch), the
// results (OnEnd), the public group sizes (NotCovered), the checkpoint
// state and the planned ε.
func (a *DPFERMI[T]) Hooks() trainer.Hooks[T] {
	return trainer.Hooks[T]{OnStart: a.ExactStatistics, OnEpoch: a.EpochFields, OnEnd: a.Finish,
		NotCovered: a.NotCovered, Resume: a, PlannedRunEpsilon: a.PlannedRunEpsilon}
}

// ExactStatistics is trainer.Hooks.OnStart: whether EpochFields may report
// exact statistics of the training data (the trainer turns it off for a
// private run unless the user asks for them).
func (a *DPFERMI[T]) ExactStatistics(on bool) { a.exact = on }

// EpochFields is trainer.Hooks.OnEpoch: ‖W‖ (a function of released
// quantities) and, when exact statistics are allowed, the mean ψ of the
// epoch's samples (near the ERMI of the training batches when W is near W*)
// and, for private runs, the fraction of samples clipped.
func (a *DPFERMI[T]) EpochFields() map[string]any {
	out := map[string]any{"w_norm": a.Reg.Norm()}
	if a.seen > 0 && a.exact {
		out["psi_mean"] = a.psiSum / float64(a.seen)
		if a.Private {
			out["clipped_frac"] = float64(a.clipped) / float64(a.seen)
		}
	}
	a.psiSum, a.seen, a.clipped = 0, 0, 0
	return out
}

// Finish is trainer.Hooks.OnEnd: DP-FERMI's settings, the final W and
// the ERMI of the model's soft predictions on the test set go into the
// report's "extra" object.
func (a *DPFERMI[T]) Finish(m trainer.Model[T], job *trainer.Job, rep *trainer.Report) error {
	ermi := a.ERMI(m, job.Test)
	res := &Result{Lambda: a.Lambda, Fairness: job.Cfg.Fair.Fairness, LRW: a.LRW, Radius: a.Radius,
		GroupFreq: a.Reg.Freq(), W: append([]float64(nil), a.Reg.W...), ERMI: ermi, Private: a.Private}
	if a.Private {
		res.Noise = &Noise{Scope: a.Scope, Calibration: a.Calibration, Clip: a.Clip, Sensitivity: a.Sensitivity, Sigma: a.Sigma,
			WWeight: a.WWeight, WSensitivity: a.WSensitivity, StdTheta: a.StdTheta, StdW: a.StdW, WNoise: a.WNoise,
			GroupCountsSigma: a.CountSigma}
	}
	rep.SetExtra(Name, res)
	return nil
}

// softPredictions returns the class probabilities of every record of d
// (N × Classes), predicted in chunks.
func softPredictions[T nn.Float](m trainer.Model[T], d *loaders.Dataset) []float64 {
	l := trainer.Classes(m)
	out := make([]float64, d.N()*l)
	var probs []T
	trainer.ForwardChunks(m, d, nil, func(lo, n int, logits []T) {
		probs = grow(probs, n*l)
		models.Probabilities(logits, m.OutDim(), n, probs)
		for i, p := range probs {
			out[lo*l+i] = float64(p)
		}
	})
	return out
}

func sum[T nn.Float](s []T) float64 {
	t := 0.0
	for _, v := range s {
		t += float64(v)
	}
	return t
}
