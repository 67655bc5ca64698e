package trainer

// Private hyperparameter tuning (Papernot and Steinke, "Hyperparameter
// Tuning with Rényi Differential Privacy", ICLR 2022). Choosing a learning
// rate by looking at test or training results is itself a release of the
// private records; a search that runs a random number K of complete private
// trials, scores each privately on TRAINING records (never the test split)
// and publishes only the best one is private with a modest overhead
// (Theorem 2), so a tuned run's receipt covers the choice of its
// hyperparameters too.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/loaders"
	"github.com/fairdp/fairdp/nn"
)

// TuneOptions configure Tune. Zero values take the defaults.
type TuneOptions struct {
	// MeanTrials is E[K], the expected number of trials (0: 10). K itself
	// is random and unbounded: its law is part of the privacy analysis, so
	// the search is never cut short.
	MeanTrials float64
	// Eta is η of K's truncated negative binomial law; 0 (the default) is
	// the logarithmic law, which at E[K] = 10 leaves each trial about 0.59
	// of a total ε = 1 against 0.48 for the geometric law (η = 1).
	Eta float64
	// ValidFrac is the share of the training records held out to score the
	// trials; 0 (the default) holds none out: every trial trains on all the
	// training records and is scored on them. The test split is never used
	// to choose. Scoring on the trained-on records is as private (the
	// score is a noisy count of sensitivity 1 whichever records it counts,
	// charged on top of the trial) and, on small tables, much better: on
	// Communities (1,495 records, ε = 1) a 20 % hold-out left the trials
	// 1,196 records to train on and a score whose noise alone had standard
	// deviation 0.08 in accuracy (24 of 299 records), so the search chose
	// at random among settings 0.03 apart (test error .183 over 6 seeds,
	// the data-aware default .160); scored on all 1,495 records the noise
	// is 0.016 and the search chose the best of its trials in 5 of 6 seeds
	// (.168). A private model's training accuracy is a fair proxy for its
	// test accuracy because the noise keeps it from fitting single records
	// (DP bounds the generalisation gap); a hold-out is for models that can.
	ValidFrac float64
	// ScoreShare is the share of a trial's Rényi DP (at the order that
	// attains the search's ε) spent on its noisy validation score (0: 0.1).
	ScoreShare float64
	// Space is the search space; nil: defaultTuneSpace from the data and
	// the job's settings.
	Space *TuneSpace
}

// WithDefaults fills o's zero values with the defaults and checks it
// (every search's options: Tune's, and the pipelines' own searches).
func (o TuneOptions) WithDefaults() (TuneOptions, error) {
	if o.MeanTrials == 0 {
		o.MeanTrials = 10
	}
	if o.ScoreShare == 0 {
		o.ScoreShare = 0.1
	}
	var errs FieldErrors
	if !(o.MeanTrials > 1) || math.IsInf(o.MeanTrials, 1) {
		errs.Add("Tune.MeanTrials", "must be a finite number > 1 (got %v): it is the expected number of trials", o.MeanTrials)
	}
	if !(o.Eta > -1) || math.IsInf(o.Eta, 1) {
		errs.Add("Tune.Eta", "must be a finite number > −1 (got %v; 0: logarithmic law, 1: geometric)", o.Eta)
	}
	if !(o.ValidFrac >= 0 && o.ValidFrac < 1) {
		errs.Add("Tune.ValidFrac", "must be in [0, 1) (got %v; 0: score the trials on the records they train on)", o.ValidFrac)
	}
	if !(o.ScoreShare > 0 && o.ScoreShare < 1) {
		errs.Add("Tune.ScoreShare", "must be in (0, 1) (got %v)", o.ScoreShare)
	}
	return o, errs.err()
}

// TuneSpace is the grid a trial draws its settings from, uniformly and
// independently of the data.
type TuneSpace struct {
	LR []float64 `json:"lr"`
	// Movement, when set, replaces LR: a trial's learning rate is a
	// movement drawn from it divided by the trial's number of noisy steps
	// (epochs × steps an epoch at its batch). Adam moves each weight by
	// about the learning rate a step, so the rate times the steps bounds
	// how far a trial can move, and under DP's noise every step beyond
	// what the data need is a random walk; a grid of rates times a grid
	// of step counts spans movements a hundred times apart, most of them
	// too short or too long (see defaultTuneSpace).
	Movement []float64 `json:"movement,omitempty"`
	Epochs   []int     `json:"epochs"`
	Batch    []int     `json:"batch"`
	Clip     []float64 `json:"clip"`
	// Lambda is DP-FERMI's λ (fermiLambdas); empty for the algorithms
	// without one.
	Lambda []float64 `json:"lambda,omitempty"`
}

// tuneMovementShares are the movements of a trial in the default space of
// a large-budget run (ε·n ≥ dataDefaultBudget), as shares of the run's own
// (its learning rate times its noisy steps: 0.03 × 800 = 24 for the
// data-aware rule's setting). The rule was derived from full-ε runs; a
// trial gets about 0.6 of ε (Papernot and Steinke 2022's bound at
// E[K] = 10), and on the synthetic 15,000 × 100 table with 10 % positives
// at ε = 0.5 (majority class .0998, seeds 1–5) the rule's own setting at a
// trial's σ gave .108 (worse than the majority class in every seed), and
// 40 of the 54 points of the old grid (learning rates a third to 3 times
// the rule's × sampling rates 5, 10 and 25 % × 20 or 40 epochs × clips a
// third to 3 times) were worse than the majority class on the mean. By
// movement the old grid's points averaged .096 at 4, .098 at 8, .109 at
// the rule's 24, .126–.135 at 36–72 and .14–.26 below 2.5
// (bench/results/tabular.md, "`--tune` on a wide table at a small
// budget"). Parkinsons (4,406 records, 19 features, a strong signal)
// prefers 8 to 4 (a search over 8 alone: .060 at ε = 0.5, over 4 alone:
// .067), so both are in: a sixth and a third. A third, 8, is also the small-budget rule's own movement
// (0.1 × 80 steps).
var tuneMovementShares = []float64{1.0 / 6, 1.0 / 3}

// tuneLargeBudgetRates are the default space's sampling rates in the
// large-budget regime: the rule's 5 % and 10 % (400 to 800 steps at 20 or
// 40 epochs). 25 % (80 or 160 steps) is the small-budget regime's.
var tuneLargeBudgetRates = []float64{0.05, 0.1}

// defaultTuneSpace is the search space for n training records (those a
// trial trains on) around cfg's settings, which for a default run are
// already the data-aware ones (AdaptToData). It stays near the rule's
// settings because a trial is drawn at random and K is often small
// (P[K = 1] ≈ 0.27 for the default law): every point of the space must be
// a reasonable run. cfg's own batch (at most n) and epochs are always in
// it.
//
// Below the data-aware rule's budget (ε·n < dataDefaultBudget) it is a
// grid: the learning rate from a third to 3 times cfg.LR, sampling rates
// of 5, 10 and 25 % (the two regimes of the data-aware rule and between),
// 20 or 40 epochs and the clip bound from a third to 3 times cfg's; it
// contains cfg's setting itself.
//
// From that budget on, the trials' learning rates follow their step
// counts: sampling rates tuneLargeBudgetRates, 20 or 40 epochs, the same
// clips, and every trial moving tuneMovementShares of cfg's movement
// (cfg.LR × cfg's steps), whatever its shape. It reads ε and n only (as
// AdaptToData does), never the labels.
func defaultTuneSpace(cfg Config, n int) TuneSpace {
	s := TuneSpace{Epochs: []int{20, 40}}
	if cfg.Epochs >= 1 && !slices.Contains(s.Epochs, cfg.Epochs) {
		s.Epochs = append(s.Epochs, cfg.Epochs)
	}
	// The movement rule was measured on the DP-SGD family's data-aware
	// settings; DP-FERMI's searches were measured on the grid (its
	// large-budget defaults are Adult's, not the rule's), so it keeps it.
	large := cfg.Privacy.Epsilon*float64(n) >= dataDefaultBudget && cfg.Algo != algoFermi
	rates := []float64{0.05, 0.1, 0.25}
	if large {
		rates = tuneLargeBudgetRates
		for _, f := range tuneMovementShares {
			s.Movement = append(s.Movement, f*cfg.LR*float64(max(1, cfg.Epochs)*tuneStepsPerEpoch(min(n, max(1, cfg.Batch)), n)))
		}
	} else {
		for _, f := range []float64{1.0 / 3, 1, 3} {
			s.LR = append(s.LR, ShortDecimal(cfg.LR*f))
		}
	}
	batches := []int{}
	for _, q := range rates {
		batches = append(batches, max(8, int(math.Round(q*float64(n)))))
	}
	if cfg.Batch >= 1 {
		batches = append(batches, cfg.Batch)
	}
	for _, b := range batches {
		if b = min(n, b); !slices.Contains(s.Batch, b) {
			s.Batch = append(s.Batch, b)
		}
	}
	s.Clip = []float64{ShortDecimal(cfg.Privacy.Clip / 3), cfg.Privacy.Clip, ShortDecimal(cfg.Privacy.Clip * 3)}
	return s
}

// ShortDecimal is v rounded to 4 significant digits: the float64 nearest
// the decimal that %g then prints. A search rounds the values it builds
// (a third of a learning rate, a movement over a trial's steps) with it
// before any trial runs, so that the chosen trial trains with exactly the
// short value its "tune: chose" line prints and its report's config holds,
// and those flags rerun it. The relative change is at most 5·10⁻⁴, well
// inside the spacing of any search's grid.
func ShortDecimal(v float64) float64 {
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 4, 64), 64)
	if err != nil { // unreachable: FormatFloat writes a number
		return v
	}
	return r
}

// tuneStepsPerEpoch is the noisy steps an epoch of batch b over n records
// takes with Poisson sampling at q = b/n, as a trial samples them.
func tuneStepsPerEpoch(b, n int) int {
	p, err := dpops.NewPoisson(n, float64(b)/float64(n), rand.New(rand.NewPCG(0, 0)))
	if err != nil { // unreachable: 1 ≤ b ≤ n
		return 1
	}
	return p.StepsPerEpoch()
}

func (s TuneSpace) check(n int) error {
	var errs FieldErrors
	if (len(s.LR) == 0) == (len(s.Movement) == 0) || len(s.Epochs) == 0 || len(s.Batch) == 0 || len(s.Clip) == 0 {
		errs.Add("Tune.Space", "needs learning rates or movements (one of the two), and at least one epoch count, batch size and clip bound")
	}
	for _, v := range s.LR {
		if !(v > 0) || math.IsInf(v, 1) {
			errs.Add("Tune.Space.LR", "%v: want finite numbers > 0", v)
		}
	}
	for _, v := range s.Movement {
		if !(v > 0) || math.IsInf(v, 1) {
			errs.Add("Tune.Space.Movement", "%v: want finite numbers > 0", v)
		}
	}
	for _, v := range s.Clip {
		if !(v > 0) || math.IsInf(v, 1) {
			errs.Add("Tune.Space.Clip", "%v: want finite numbers > 0", v)
		}
	}
	for _, v := range s.Epochs {
		if v < 1 {
			errs.Add("Tune.Space.Epochs", "%d: want integers ≥ 1", v)
		}
	}
	for _, v := range s.Batch {
		if v < 1 || v > n {
			errs.Add("Tune.Space.Batch", "%d: want sizes between 1 and the %d records a trial trains on", v, n)
		}
	}
	return errs.err()
}

// draw is one trial's setting, drawn uniformly from the space with r
// (the learning rate's or movement's index first, then the epochs, the
// batch and the clip), and its shape; steps are the shapes' noisy steps,
// which turn a movement into a learning rate.
func (s TuneSpace) draw(r interface{ IntN(int) int }, steps map[tuneShape]int) (TuneChoice, tuneShape) {
	i := r.IntN(max(len(s.LR), len(s.Movement)))
	return s.choice(i, s.Epochs[r.IntN(len(s.Epochs))], s.Batch[r.IntN(len(s.Batch))], s.Clip[r.IntN(len(s.Clip))], steps)
}

// choice is the setting with the space's i-th learning rate or movement
// and the given shape and clip.
func (s TuneSpace) choice(i, epochs, batch int, clip float64, steps map[tuneShape]int) (TuneChoice, tuneShape) {
	c, sh := TuneChoice{Epochs: epochs, Batch: batch, Clip: clip}, tuneShape{batch, epochs}
	if len(s.Movement) > 0 {
		c.LR = ShortDecimal(s.Movement[i] / float64(steps[sh]))
	} else {
		c.LR = s.LR[i]
	}
	return c, sh
}

// TuneChoice is the setting of one trial.
type TuneChoice struct {
	LR     float64 `json:"lr"`
	Epochs int     `json:"epochs"`
	Batch  int     `json:"batch"`
	Clip   float64 `json:"clip"`
	// Sigma is the trial's Privacy.Sigma (σ2 for DPSGD-F and Naïve, see
	// trialSigma).
	Sigma float64 `json:"sigma"`
	// Lambda is DP-FERMI's λ; nil for the algorithms without one.
	Lambda *float64 `json:"lambda,omitempty"`
}

// TuneResult is report.json's extra.tune: how the search ran and what it
// chose. It holds nothing of the trials that were not chosen: the analysis
// covers publishing the best trial alone.
type TuneResult struct {
	TuneSearch
	Chosen TuneChoice `json:"chosen"`
	// Score is the chosen trial's noisy validation accuracy (part of what
	// the analysis lets the search publish).
	Score float64   `json:"chosen_noisy_validation_accuracy"`
	Space TuneSpace `json:"space"`
	// Fairness and Violation, for a search that scores fairness too
	// (DP-FERMI, fairScored): the notion ("dp" or "eo") and the chosen
	// trial's noisy validation violation of it; its score was Score −
	// Violation.
	Fairness  string   `json:"fairness,omitempty"`
	Violation *float64 `json:"chosen_noisy_validation_violation,omitempty"`
}

// TuneSearch is how a private search ran, as every search's extra.tune
// states it first (TuneResult here; the pipelines' searches add their own
// choice and space).
type TuneSearch struct {
	Trials     int     `json:"trials"` // K, drawn independently of the data
	MeanTrials float64 `json:"mean_trials"`
	Eta        float64 `json:"eta"`
	Gamma      float64 `json:"gamma"`
	// TrialEpsilon is the ε (at the search's δ, RDP) that the costliest
	// trial alone would spend, score included.
	TrialEpsilon float64 `json:"trial_epsilon"`
	TrainRecords int     `json:"train_records"` // what a trial trains on
	// ValidRecords are the training records that score a trial: held out
	// (HeldOut), or the TrainRecords it trained on.
	ValidRecords int  `json:"validation_records"`
	HeldOut      bool `json:"held_out"`
	// ScoreNoise is the standard deviation of the Gaussian noise added to
	// a trial's count of correct validation predictions.
	ScoreNoise float64 `json:"score_noise_std"`
}

// Scored says which records scored the search's trials, as its receipt
// names them.
func (s TuneSearch) Scored() string {
	if s.HeldOut {
		return fmt.Sprintf("%d held-out training records", s.ValidRecords)
	}
	return "the training records it trained on"
}

// DeclareSplit lists in rc, for a search whose trials were scored on
// held-out records, the sizes of the two parts as not covered (public, as
// the record count is).
func (s TuneSearch) DeclareSplit(rc *accounting.Receipt) {
	if s.HeldOut {
		rc.AddNotCovered("tuning_split", fmt.Sprintf("the sizes of the tuning's parts (%d records a trial trains on, %d that score it) "+
			"are treated as public, as the record count is", s.TrainRecords, s.ValidRecords))
	}
}

// tunable are the algorithms Tune can search: those whose whole release is
// one Poisson-subsampled Gaussian per step with a σ the plan sets.
// DP-FERMI (tune_fermi.go) adds its one-off noisy group counts to each
// trial's curve.
var tunable = []AlgoName{AlgoDPSGD, algoDPSGDF, algoNaive, algoFermi}

// tunablePipelines are the pipelines with a private search of their own
// (RegisterTunablePipeline).
var tunablePipelines []AlgoName

// RegisterTunablePipeline records that the pipeline registered as name
// has a private search of its own (its package's call, reached by `fairdp
// train --algo name --tune`), so that Tunable lists it. Call it from an
// init function, as RegisterPipeline.
func RegisterTunablePipeline(name AlgoName) {
	if _, ok := pipelines[name]; !ok {
		panic("trainer: tunable pipeline " + string(name) + " is not a registered pipeline")
	}
	tunablePipelines = append(tunablePipelines, name)
}

// Tunable is the algorithms that can be searched privately, for a
// caller's message: those Tune searches (its own, then those with a
// registered search, RegisterTuner), then the pipelines with a search of
// their own.
func Tunable() []AlgoName { return slices.Concat(tunable, tunerNames, tunablePipelines) }

// trialSigma is the Privacy.Sigma that gives a trial of cfg's algorithm
// the planned noise multiplier sigma per step. DPSGD-F and Naïve release
// their group counts (σ1 = ratio·σ2) from the same Poisson sample as the
// gradient (σ2): one joint mechanism with σ_eff = (σ1⁻² + σ2⁻²)^(-1/2) =
// σ2/sqrt(1 + ratio⁻²) (accounting.JointSubsampledGaussian), so σ2 is
// σ_eff·sqrt(1 + ratio⁻²).
func trialSigma(cfg Config, sigma float64) float64 {
	switch cfg.Algo {
	case algoDPSGDF, algoNaive:
		r := cfg.Fair.CountNoiseRatio
		return sigma * math.Sqrt(1+1/(r*r))
	}
	return sigma
}

// Tune trains job's algorithm by private random search (Papernot and
// Steinke 2022): it holds out opts.ValidFrac of the training records, draws
// K from a truncated negative binomial law, runs K complete private trials
// on the rest, each with settings drawn from the space, its own noise and
// its validation accuracy released with Gaussian noise, and returns the
// report of the trial with the best noisy score. The noise of every trial
// is calibrated so that the WHOLE search spends job's Privacy.Epsilon at
// its δ (Theorem 2, converted with Balle et al. 2020); the receipt states
// that guarantee. Nothing of the other trials leaves Tune: progress lines
// say how many trials are done and the ε the search spends.
func Tune(ctx context.Context, job *Job, opts TuneOptions) (*Report, error) {
	if t, ok := tuners[job.Cfg.Algo]; ok {
		return t(ctx, job, opts)
	}
	if job.Cfg.DType == DTypeFloat64 {
		return tune[float64](ctx, job, opts)
	}
	return tune[float32](ctx, job, opts)
}

func checkTunable(job *Job) error {
	cfg := job.Cfg
	var errs FieldErrors
	switch {
	case slices.Contains(tunablePipelines, cfg.Algo):
		errs.Add("Algo", "%s is a pipeline with a private search of its own (its package's call; `fairdp train --algo %s --tune`), not Tune's", cfg.Algo, cfg.Algo)
	case !slices.Contains(tunable, cfg.Algo) && !slices.Contains(tunerNames, cfg.Algo):
		errs.Add("Algo", "%s cannot be tuned privately yet (tunable: %v)", cfg.Algo, Tunable())
	}
	if regressionRun(job) {
		errs.Add("Model", "is a regression output (one prediction per record), which cannot be tuned yet: the search scores class predictions on held-out records")
	}
	if !(cfg.Privacy.Epsilon > 0) || math.IsInf(cfg.Privacy.Epsilon, 1) {
		errs.Add("Privacy.Epsilon", "must be finite to tune (got %v): the search is calibrated to it", cfg.Privacy.Epsilon)
	}
	if cfg.Privacy.Sigma != 0 {
		errs.Add("Privacy.Sigma", "is set by the tuning's calibration: leave it 0")
	}
	if cfg.Privacy.Sampling != string(SamplingPoisson) && cfg.Privacy.Sampling != "" {
		errs.Add("Privacy.Sampling", "must be poisson to tune (the RDP analysis does not cover %s)", cfg.Privacy.Sampling)
	}
	if cfg.Baseline {
		errs.Add("Baseline", "cannot be combined with tuning")
	}
	if cfg.Device != DeviceCPU && cfg.Device != "" {
		errs.Add("Device", "tuning runs on the cpu so far")
	}
	if job.Model != nil || job.checkpoint != nil {
		errs.Add("Model", "tuning builds a fresh model per trial and keeps no checkpoint: leave Job.Model and the checkpoint unset")
	}
	if cfg.Algo == algoFermi {
		checkTunableFermi(cfg, &errs)
	}
	return errs.err()
}

// tuneShape is what a trial's accounting depends on.
type tuneShape struct{ batch, epochs int }

// tunePlan is the calibrated search: each shape's σ and RDP curve, the
// score's noise, and the guarantee of the whole search.
type tunePlan struct {
	law        accounting.TruncatedNegativeBinomial
	orders     []float64
	sigma      map[tuneShape]float64
	steps      map[tuneShape]int
	q          map[tuneShape]float64
	scoreSigma float64 // noise multiplier of the correct-count (sensitivity 1)
	scoreRho   float64
	trialEps   float64
	eps, order float64
	// curve is each shape's RDP curve at orders, the trial's release
	// without its score (what checkFermiTrialReceipt holds a trial to).
	curve map[tuneShape][]float64
}

// tuneCurve calibrates a trial of shape sh to a per-trial ε tau at δ (RDP,
// at orders) and returns its noise multiplier per step and its exact RDP
// curve, score excluded. A larger tau must give a smaller σ and a larger
// curve at every order (planTune bisects on it); the curve may exceed tau
// where the calibration leaves a small release out (DP-FERMI's counts,
// fermiTrialCurve): the search's ε is computed from the curves.
type tuneCurve func(sh tuneShape, tau, delta float64, orders []float64) (sigma float64, curve []float64, err error)

// sgdTrialCurve is the curve of the DP-SGD family's trials: one
// Poisson-subsampled Gaussian per step at rate q[sh], steps[sh] times.
func sgdTrialCurve(q map[tuneShape]float64, steps map[tuneShape]int) tuneCurve {
	return func(sh tuneShape, tau, delta float64, orders []float64) (float64, []float64, error) {
		s, err := accounting.CalibrateSigma(tau, delta, q[sh], steps[sh], accounting.WithOrders(orders))
		if err != nil {
			return 0, nil, err
		}
		c, err := accounting.ComposedRDP(q[sh], s, steps[sh], orders)
		return s, c, err
	}
}

// planTune finds the largest per-trial ε τ (every shape's σ calibrated to
// τ at δ) for which the search, scores included, spends at most target at
// δ, by bisection: a larger τ gives every shape a smaller σ and so a larger
// curve at every order.
func planTune(q map[tuneShape]float64, steps map[tuneShape]int, law accounting.TruncatedNegativeBinomial, delta, target, scoreShare float64) (tunePlan, error) {
	return planTuneWith(q, steps, law, delta, target, scoreShare, sgdTrialCurve(q, steps))
}

// planTuneWith is planTune for trials whose curve (and calibration) is
// trialCurve's: accounting.PlanTuning with one trial kind per shape.
func planTuneWith(q map[tuneShape]float64, steps map[tuneShape]int, law accounting.TruncatedNegativeBinomial, delta, target, scoreShare float64,
	trialCurve tuneCurve) (tunePlan, error) {
	shapes := slices.SortedFunc(maps.Keys(q), func(a, b tuneShape) int {
		if a.batch != b.batch {
			return a.batch - b.batch
		}
		return a.epochs - b.epochs
	})
	pl, err := accounting.PlanTuning(len(shapes), func(i int, tau, delta float64, orders []float64) (float64, []float64, error) {
		return trialCurve(shapes[i], tau, delta, orders)
	}, law, delta, target, scoreShare)
	if err != nil {
		return tunePlan{}, TuningBudgetError(err, target, law.Mean())
	}
	p := tunePlan{law: law, orders: pl.Orders, q: q, steps: steps, sigma: map[tuneShape]float64{}, curve: map[tuneShape][]float64{},
		scoreSigma: pl.ScoreSigma, scoreRho: pl.ScoreRho, trialEps: pl.TrialEpsilon, eps: pl.Epsilon, order: pl.Order}
	for i, sh := range shapes {
		p.sigma[sh], p.curve[sh] = pl.Noise[i], pl.Curves[i]
	}
	return p, nil
}

// TuningBudgetError is err, from accounting.PlanTuning, with the setting
// to change named when the budget target cannot pay for a search of
// meanTrials expected trials (accounting.ErrTuningBudget); every search
// says it alike.
func TuningBudgetError(err error, target, meanTrials float64) error {
	if !errors.Is(err, accounting.ErrTuningBudget) {
		return err
	}
	return FieldErrors{{Field: "Privacy.Epsilon", Msg: fmt.Sprintf("%v is too small to tune with %v expected trials "+
		"(the search alone costs more): raise it or lower Tune.MeanTrials", target, meanTrials)}}
}

// planSpace is planTune for the shapes (batch × epochs) of space on n
// training records and cfg's algorithm: each shape's sampling rate b/n and
// noisy steps (Poisson sampling, tuneStepsPerEpoch), as a trial takes them.
// The space must have passed check(n).
func planSpace(cfg Config, n int, space TuneSpace, law accounting.TruncatedNegativeBinomial, delta, target, scoreShare float64) (tunePlan, error) {
	q, steps := map[tuneShape]float64{}, map[tuneShape]int{}
	for _, b := range space.Batch {
		for _, e := range space.Epochs {
			sh := tuneShape{b, e}
			q[sh], steps[sh] = float64(b)/float64(n), e*tuneStepsPerEpoch(b, n)
		}
	}
	return planTuneWith(q, steps, law, delta, target, scoreShare, trialCurveFor(cfg, q, steps))
}

// TuneSplit divides the training records into the part the trials train
// on and the part that scores them: each record goes to the scoring part
// with probability frac, independently of the others and of the data (as
// Poisson sampling draws batches). A record added to or removed from the
// data then changes one part by that record and leaves the law of the
// others' assignment alone, which is the adjacency the trials' RDP curves
// (and the score's Gaussian, charged on top) are computed for; given the
// split, the trials are independent runs of one algorithm, as Theorem 2
// needs, and the split's own randomness is a data-independent mixture,
// whose RDP is at most the largest of its parts'.
func TuneSplit(d *loaders.Dataset, frac float64, r interface{ Float64() float64 }) (train, valid *loaders.Dataset, err error) {
	var ti, vi []int
	for i := range d.N() {
		if r.Float64() < frac {
			vi = append(vi, i)
		} else {
			ti = append(ti, i)
		}
	}
	if len(vi) < 1 || len(ti) < 2 {
		return nil, nil, FieldErrors{{Field: "Tune.ValidFrac", Msg: fmt.Sprintf("%v of %d training records left %d to score the trials and %d to train them: "+
			"too few records to tune", frac, d.N(), len(vi), len(ti))}}
	}
	return loaders.Subset(d, ti), loaders.Subset(d, vi), nil
}

func tune[T nn.Float](ctx context.Context, job *Job, opts TuneOptions) (*Report, error) {
	if err := checkTunable(job); err != nil {
		return nil, err
	}
	opts, err := opts.WithDefaults()
	if err != nil {
		return nil, err
	}
	cfg := job.Cfg
	log := job.Log
	if log == nil || cfg.Quiet {
		log = io.Discard
	}
	trainAll := job.Train
	// The target the whole search is calibrated to, read once: the trials
	// get their own settings (tuneTrial), the report the chosen one's.
	target := cfg.Privacy
	srch, err := NewSearch[tuneBest[T]](SearchOptions{Source: job.Source, Delta: target.Delta, Records: trainAll.N(),
		AllowLargeDelta: target.AllowLargeDelta, MeanTrials: opts.MeanTrials, Eta: opts.Eta, Log: log})
	if err != nil {
		return nil, err
	}
	delta := srch.Delta
	train, valid := trainAll, trainAll
	if opts.ValidFrac > 0 {
		if train, valid, err = TuneSplit(trainAll, opts.ValidFrac, job.Source.Derive("tune/split")); err != nil {
			return nil, err
		}
	}
	heldOut := opts.ValidFrac > 0
	space := defaultTuneSpace(cfg, train.N())
	if opts.Space != nil {
		space = *opts.Space
	}
	space = withFermiLambdas(space, cfg, opts.Space == nil)
	if err := space.check(train.N()); err != nil {
		return nil, err
	}
	if err := checkLambdaSpace(space, cfg); err != nil {
		return nil, err
	}
	start := time.Now()
	plan, err := planSpace(cfg, train.N(), space, srch.Law, delta, target.Epsilon, opts.ScoreShare)
	if err != nil {
		return nil, err
	}
	scored := "the same records"
	if heldOut {
		scored = fmt.Sprintf("%d held-out training records", valid.N())
	}
	fmt.Fprintf(log, "tune: %d trials (K drawn with E[K] = %g), each trains on %d records and is scored on %s; "+
		"the whole search spends ε = %.4g at δ = %.3g, charged before the first trial\n",
		srch.K, opts.MeanTrials, train.N(), scored, plan.eps, delta)
	err = srch.Run(ctx, SearchProgress{Spent: plan.eps, Target: target.Epsilon}, func(i int) (tuneBest[T], float64, error) {
		c, sh := space.draw(srch.Choose, plan.steps)
		if len(space.Lambda) > 0 {
			l := space.Lambda[srch.Choose.IntN(len(space.Lambda))]
			c.Lambda = &l
		}
		c.Sigma = trialSigma(cfg, plan.sigma[sh])
		rep, m, pred, err := tuneTrial[T](ctx, job, train, valid, c, delta, i)
		if err != nil {
			return tuneBest[T]{}, 0, err
		}
		if err := checkTrialReceiptFor(cfg, rep.Privacy, plan, sh); err != nil {
			return tuneBest[T]{}, 0, err
		}
		acc, viol, err := trialScore(cfg, space, pred, valid, srch.ScoreNoise, plan.scoreSigma)
		if err != nil {
			return tuneBest[T]{}, 0, err
		}
		score := acc
		if viol != nil {
			score -= *viol
		}
		return tuneBest[T]{rep: rep, model: m, choice: c, acc: acc, viol: viol}, score, nil
	})
	if err != nil {
		return nil, err
	}
	best, _ := srch.Best()
	ts := srch.Summary(plan.trialEps, train.N(), plan.scoreSigma)
	ts.ValidRecords, ts.HeldOut = valid.N(), heldOut
	res := TuneResult{TuneSearch: ts, Chosen: best.choice, Score: best.acc, Space: space}
	if best.viol != nil {
		res.Fairness, res.Violation = cfg.Fair.Fairness, best.viol
	}
	rep, err := tunedReport(best.rep, job, plan, res, delta)
	if err != nil {
		return nil, err
	}
	rep.Seconds = time.Since(start).Seconds() // the whole search's
	if w := ScoreNoiseWarning(plan.scoreSigma*accuracyNoiseScale(cfg, valid), valid.N()); w != "" {
		rep.Warnings = append(rep.Warnings, w)
	}
	if cfg.Out != "" {
		// Train makes its output folder when it opens metrics.jsonl; the
		// trials run without one, so the search makes it here.
		if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
			return nil, FieldErrors{{Field: "Out", Msg: fmt.Sprintf("%s: %v", cfg.Out, err)}}
		}
		if err := writeModelOutputs(cfg.Out, rep, best.model, job); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// tuneBest is what Tune keeps of a trial: its report, model and setting,
// and its noisy accuracy and violation (nil unless fairness-scored).
type tuneBest[T nn.Float] struct {
	rep    *Report
	model  Model[T]
	choice TuneChoice
	acc    float64
	viol   *float64
}

// tuneTrial is one complete private run of the search: a fresh model
// trained on train with setting c (σ fixed by the plan), and its
// predictions on valid (exact: the caller scores them with noise,
// trialScore). valid may be train itself: the score's counts have
// sensitivity 1 either way (one record added or removed changes one of
// them by at most one for the released model), and the Gaussian on them
// composes with the trial's own release.
func tuneTrial[T nn.Float](ctx context.Context, job *Job, train, valid *loaders.Dataset, c TuneChoice, delta float64, i int) (*Report, Model[T], []int, error) {
	cfg := job.Cfg
	cfg.Epochs, cfg.Batch, cfg.LR, cfg.Privacy.Clip, cfg.Privacy.Sigma = c.Epochs, c.Batch, c.LR, c.Clip, c.Sigma
	if c.Lambda != nil {
		cfg.Fair.Lambda = *c.Lambda
	}
	// σ is set by the plan, whose guarantee is the search's: ε +Inf runs it
	// uncapped (checkTrialReceipt then holds the trial to the plan).
	cfg.Privacy.Epsilon, cfg.Privacy.Delta, cfg.Privacy.AllowLargeDelta = math.Inf(1), delta, true
	cfg.Out, cfg.Quiet = "", true
	var (
		r   *rand.Rand
		src dpops.Source
	)
	cfg.Seed, r, src = TrialRandomness(job, i)
	tj := &Job{Cfg: cfg, Train: train, Test: job.Test, Preprocess: job.Preprocess, Rand: r, Source: src, Log: io.Discard}
	m, err := jobModel[T](tj, ModelSpec(cfg, train))
	if err != nil {
		return nil, nil, nil, err
	}
	rep, err := trainModel(ctx, tj, m)
	if err != nil {
		return nil, nil, nil, err
	}
	return rep, m, newEvaluator(m).predict(valid), nil
}

// correctCount is the number of records of d whose label pred predicts.
func correctCount(pred []int, d *loaders.Dataset) int {
	correct := 0
	for j, p := range pred {
		if p == d.Labels[j] {
			correct++
		}
	}
	return correct
}

// checkTrialReceipt holds a trial to the plan: its receipt may list only
// Poisson-subsampled Gaussian steps at the planned rate and at least the
// planned σ (up to rounding, 1e-12 relative: a joint mechanism's σ_eff is
// recomputed from its parts), at most the planned number. A trial that
// spent anything else would void the search's guarantee, so its result is
// refused rather than published.
func checkTrialReceipt(r accounting.Receipt, q, sigma float64, steps int) error {
	if !r.Private() {
		return fmt.Errorf("the trial's receipt is not private")
	}
	total := 0
	for _, m := range r.Mechanisms {
		if m.Kind != accounting.KindSubsampledGaussian || m.SampleRate != q || !(m.NoiseMultiplier >= sigma*(1-1e-12)) {
			return fmt.Errorf("the trial released %s (q = %v, σ = %v), outside the tuning plan (q = %v, σ = %v)",
				m.Kind, m.SampleRate, m.NoiseMultiplier, q, sigma)
		}
		total += m.Steps
	}
	if total > steps {
		return fmt.Errorf("the trial took %d noisy steps, more than the %d the tuning plan charged", total, steps)
	}
	return nil
}

// tunedReport is the chosen trial's report with the search's receipt: its
// guarantee is Theorem 2's, its mechanisms the chosen trial's plus its
// score's, and the config the chosen setting (repeating it retrains that
// setting once, not the search).
func tunedReport(best *Report, job *Job, plan tunePlan, res TuneResult, delta float64) (*Report, error) {
	rep := *best
	cfg := job.Cfg
	cfg.Epochs, cfg.Batch, cfg.LR = res.Chosen.Epochs, res.Chosen.Batch, res.Chosen.LR
	cfg.Privacy.Clip, cfg.Privacy.Sigma, cfg.Privacy.Delta = res.Chosen.Clip, res.Chosen.Sigma, delta
	if res.Chosen.Lambda != nil {
		cfg.Fair.Lambda = *res.Chosen.Lambda
	}
	rep.Config, rep.Epochs, rep.Batch, rep.LR = cfg, cfg.Epochs, cfg.Batch, cfg.LR
	rep.Train, rep.TrainNotPrivate = nil, false
	scored := res.Scored()
	rc := TunedReceipt(TunedReceiptOptions{Epsilon: plan.eps, Order: plan.order, Delta: delta, Law: plan.law, Trials: res.Trials,
		MeanTrials: res.MeanTrials, TrialEpsilon: plan.trialEps, TrialNoise: "σ calibrated", Chosen: best.Privacy,
		Score: accounting.Mechanism{Kind: accounting.KindGaussian, NoiseMultiplier: plan.scoreSigma, Sensitivity: 1,
			Steps: 1, Rho: plan.scoreRho, Protects: scoreRelease(cfg) + " on " + scored},
		ScoreName: scoreName(cfg), Scored: scored, Sampling: accounting.SamplingPoisson, Seeded: job.Source.Seeded, Seed: job.Source.Seed})
	DeclareNotCovered(&rc, job.Train.N(), job.Preprocess, cfg)
	res.DeclareSplit(&rc)
	for _, n := range best.Privacy.NotCovered {
		rc.AddNotCovered(n.Item, n.Detail)
	}
	rep.Privacy = rc
	rep.TrainRecords = job.Train.N()
	rep.Extra = maps.Clone(best.Extra) // the chosen trial's own results (DPSGD-F's), covered as its output
	rep.SetExtra("tune", res)
	return &rep, nil
}

// maxScoreNoise is the largest standard deviation of a trial's noisy
// validation accuracy at which the search can still tell settings apart
// (private DP-SGD settings on a table typically differ by a few points).
const maxScoreNoise = 0.05

// ScoreNoiseWarning says when the scores' noise (std sigma correct
// predictions out of valid) is too large for the search to choose better
// than at random. It depends on n, ε and the options only, never on the
// records, so it may be published.
func ScoreNoiseWarning(sigma float64, valid int) string {
	if std := sigma / float64(valid); std > maxScoreNoise {
		return fmt.Sprintf("the trials' validation accuracies carry noise of standard deviation %.3f, too much for the search "+
			"to tell settings apart at this number of records and ε: the data-aware defaults (no tuning) are likely as good", std)
	}
	return ""
}
