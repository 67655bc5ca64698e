package trainer

// Tune's parts for searches that run outside this package. SteFFLe
// (package fermi/federated, which imports this one) runs its trials as
// federations this package cannot build, and states its guarantee per
// silo; it registers its own search (RegisterTuner), runs it on Search as
// every search does, and shares Tune's options, search space, score,
// receipt check and tuned receipt through the wrappers below, so that
// every search follows one rule.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/loaders"
	"github.com/fairdp/fairdp/nn"
)

// tuner is a private search (Papernot and Steinke 2022) for one algorithm,
// run by Tune for a job of that algorithm.
type tuner = func(ctx context.Context, job *Job, opts TuneOptions) (*Report, error)

var (
	tuners     = map[AlgoName]tuner{}
	tunerNames []AlgoName // registration order, for Tunable
)

// RegisterTuner makes Tune run t, a private search for --algo name, for a
// job of that algorithm. It panics on a name registered twice or one Tune
// searches itself; call it from an init function.
func RegisterTuner(name AlgoName, t func(ctx context.Context, job *Job, opts TuneOptions) (*Report, error)) {
	if _, dup := tuners[name]; dup || slices.Contains(tunable, name) {
		panic(fmt.Sprintf("trainer: a tuner for %s is already registered", name))
	}
	tuners[name] = t
	tunerNames = append(tunerNames, name)
}

// CheckTunable refuses a job whose run settings no search covers
// (infinite ε, a given σ, shuffled batches, a baseline, a device, a model
// or checkpoint of the caller's, a regression output, an algorithm that
// cannot be tuned).
func CheckTunable(job *Job) error { return checkTunable(job) }

// FairTuneSpace is DP-FERMI's default search space for n records (the
// ones a trial's party trains on) around cfg's settings: the grid of
// learning rates, sampling rates, epochs and clips defaultTuneSpace gives
// DP-FERMI, and λ/2, λ and 2λ (fermiLambdas).
func FairTuneSpace(cfg Config, n int) TuneSpace {
	cfg.Algo = algoFermi
	return withFermiLambdas(defaultTuneSpace(cfg, n), cfg, true)
}

// Check refuses a space a search of trials on n records cannot draw from.
func (s TuneSpace) Check(n int) error { return s.check(n) }

// DrawGrid draws a setting of a grid space (learning rates, not
// movements) uniformly with r: the learning rate, epochs, batch and clip
// as Tune draws them, then λ when the space has any.
func (s TuneSpace) DrawGrid(r interface{ IntN(int) int }) TuneChoice {
	c, _ := s.draw(r, nil)
	if len(s.Lambda) > 0 {
		l := s.Lambda[r.IntN(len(s.Lambda))]
		c.Lambda = &l
	}
	return c
}

// CheckTrialRDP holds a trial's receipt r to its planned RDP curve at
// orders (checkFermiTrialReceipt): its mechanisms, composed, must cost at
// most planned at every order, else the trial is refused.
func CheckTrialRDP(r accounting.Receipt, orders, planned []float64) error {
	return checkFermiTrialReceipt(r, orders, planned)
}

// Predict is m's predicted class for every record of d.
func Predict[T nn.Float](m Model[T], d *loaders.Dataset) []int { return newEvaluator(m).predict(d) }

// NoisyGroupConfusion is the per-group confusion table (label × group ×
// predicted class, groupConfusion's layout) of the records ids of d whose
// predicted classes are pred (indexed like d), each cell with Gaussian
// noise of multiplier sigma on sensitivity 1, drawn from r: what one party
// releases to score a trial on its own records.
func NoisyGroupConfusion(pred []int, d *loaders.Dataset, ids []int, r *rand.Rand, sigma float64) ([]float64, error) {
	p, labels, groups := make([]int, len(ids)), make([]int, len(ids)), make([]int, len(ids))
	for i, j := range ids {
		p[i], labels[i], groups[i] = pred[j], d.Labels[j], d.Groups[j]
	}
	cells := groupConfusion(p, labels, groups, scoreClasses(d), len(d.GroupNames))
	return cells, addCellNoise(r, cells, 1, sigma)
}

// ConfusionScore is the accuracy over n records and the demographic-parity
// (eo false) or equalized-odds (eo true) violation read from a possibly
// noisy per-group confusion table of d's classes and groups
// (confusionScore).
func ConfusionScore(cells []float64, d *loaders.Dataset, n int, eo bool) (acc, violation float64) {
	return confusionScore(cells, scoreClasses(d), len(d.GroupNames), n, eo)
}

// TunedPlan is what a search's receipt states of its calibration, for one
// party: the law of K, the search's ε at the order that attains it, the
// costliest trial's ε, and the score's noise.
type TunedPlan struct {
	Law                  accounting.TruncatedNegativeBinomial
	Epsilon, Order       float64
	TrialEpsilon         float64
	ScoreSigma, ScoreRho float64
}

// TunedReport is tunedReport for a search planned elsewhere: the chosen
// trial's report best (its Privacy the receipt of the release p covers)
// with the search's receipt, the chosen setting in its config and res as
// extra.tune.
func TunedReport(best *Report, job *Job, p TunedPlan, res TuneResult, delta float64) (*Report, error) {
	return tunedReport(best, job, tunePlan{law: p.Law, eps: p.Epsilon, order: p.Order, trialEps: p.TrialEpsilon,
		scoreSigma: p.ScoreSigma, scoreRho: p.ScoreRho}, res, delta)
}

// TrialRandomness is the seed (nil for an unseeded run) and randomness of
// trial i of a search of job: derived from job's seed when it has one,
// fresh otherwise, so that a seeded search is reproducible and its trials
// draw independent noise.
func TrialRandomness(job *Job, i int) (*uint64, *rand.Rand, dpops.Source) {
	seed := TrialSeed(job.Source, i)
	r, src := dpops.NewRand(seed)
	return seed, r, src
}

// TrialSeed is the seed of trial i of a search run with src: derived from
// stream "tune/trial/i" of src's seed when it has one, nil (crypto-seeded)
// otherwise, so that a seeded search is reproducible and its trials draw
// independent noise.
func TrialSeed(src dpops.Source, i int) *uint64 {
	if !src.Seeded {
		return nil
	}
	s := src.Derive(fmt.Sprintf("tune/trial/%d", i)).Uint64()
	return &s
}
