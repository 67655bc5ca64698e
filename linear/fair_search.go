package linear

// What the private searches of post-processing (TunePostproc) and of the
// oracle learner (TuneOracle) share beyond trainer.Search (the search's δ,
// K's law and draw, the noise streams, the best trial so far): what they
// keep of a trial, its score, their options and extra.tune's common part.

import (
	"errors"
	"io"
	"math"
	"math/rand/v2"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/trainer"
)

// FairTuneSummary is the part of a tuned report's extra.tune that every
// search of this package writes: how the search ran, nothing of the trials
// it did not choose.
type FairTuneSummary struct {
	Trials     int     `json:"trials"` // K, drawn independently of the data
	MeanTrials float64 `json:"mean_trials"`
	Eta        float64 `json:"eta"`
	Gamma      float64 `json:"gamma"`
	// TrialEpsilon is the costliest trial's ε at the search's δ, score
	// included.
	TrialEpsilon float64 `json:"trial_epsilon"`
	TrainRecords int     `json:"train_records"`
	// Relation is the neighbour relation of the whole search.
	Relation string `json:"relation"`
	// ScoreNoise is the standard deviation of the Gaussian on each of a
	// trial's per-group confusion counts.
	ScoreNoise float64 `json:"score_noise_std"`
	Fairness   string  `json:"fairness"`
	// Score and Violation are the chosen trial's noisy training accuracy
	// and violation (its score was Score − Violation).
	Score     float64 `json:"chosen_noisy_training_accuracy"`
	Violation float64 `json:"chosen_noisy_training_violation"`
}

// fairTrial is what a search of this package keeps of a trial: its
// report, its setting of type C, and its noisy accuracy and violation.
type fairTrial[C any] struct {
	rep       *trainer.Report
	choice    C
	acc, viol float64
}

// newFairSearch sets up a search (trainer.NewSearch) on n training records
// under p (δ 0: 1/n², checked against n) with K drawn from the law of mean
// meanTrials and η eta, from stream "tune/trials" of cfg's seed
// (crypto-seeded when cfg's is nil), progress lines to log.
func newFairSearch[C any](cfg trainer.Config, p privacy, n int, meanTrials, eta float64, log io.Writer) (*trainer.Search[fairTrial[C]], error) {
	_, src := dpops.NewRand(cfg.Seed)
	return trainer.NewSearch[fairTrial[C]](trainer.SearchOptions{Source: src, Delta: p.Delta, Records: n, AllowLargeDelta: p.AllowLargeDelta,
		MeanTrials: meanTrials, Eta: eta, Log: log})
}

// scoreFairTrial is what a search keeps of trial rep with setting c, and
// its score: unless the trial failed, its predictions on the training
// records (predict, drawing any coins from the search's Coins) released
// as its noisy accuracy and violation (score, with the search's
// ScoreNoise), scored acc − viol; a failed trial scores −∞ (its failure
// is a function of its noisy releases), so that it is kept only when
// every trial failed and the search reports the failure.
func scoreFairTrial[C any](srch *trainer.Search[fairTrial[C]], rep *trainer.Report, c C, failed bool,
	predict func(coins *rand.Rand) ([]int, error),
	score func(noise *rand.Rand, pred []int) (acc, viol float64, err error)) (fairTrial[C], float64, error) {
	if failed {
		return fairTrial[C]{rep: rep, choice: c}, math.Inf(-1), nil
	}
	pred, err := predict(srch.Coins)
	if err != nil {
		return fairTrial[C]{}, 0, err
	}
	acc, viol, err := score(srch.ScoreNoise, pred)
	if err != nil {
		return fairTrial[C]{}, 0, err
	}
	return fairTrial[C]{rep: rep, choice: c, acc: acc, viol: viol}, acc - viol, nil
}

// fairTuneSummary is extra.tune's common part: the search's (ts) and the
// relation, the notion and the chosen trial's noisy accuracy and violation.
func fairTuneSummary[C any](ts trainer.TuneSearch, relation, fairness string, best fairTrial[C]) FairTuneSummary {
	return FairTuneSummary{Trials: ts.Trials, MeanTrials: ts.MeanTrials, Eta: ts.Eta, Gamma: ts.Gamma, TrialEpsilon: ts.TrialEpsilon,
		TrainRecords: ts.TrainRecords, Relation: relation, ScoreNoise: ts.ScoreNoise, Fairness: fairness, Score: best.acc, Violation: best.viol}
}

// fillFairTuneOptions fills a search's options in place: E[K], η and the
// score share as trainer.TuneOptions.WithDefaults does for every search
// (0: 10, the logarithmic law, 0.1), the space (nil: def()), the log (nil:
// none); it returns the errors of the three and of the space.
func fillFairTuneOptions[S interface{ check() trainer.FieldErrors }](meanTrials, scoreShare *float64, eta float64, log *io.Writer,
	space **S, def func() S) error {
	if *space == nil {
		sp := def()
		*space = &sp
	}
	if *log == nil {
		*log = io.Discard
	}
	t, err := trainer.TuneOptions{MeanTrials: *meanTrials, Eta: eta, ScoreShare: *scoreShare}.WithDefaults()
	var errs trainer.FieldErrors
	if err != nil && !errors.As(err, &errs) {
		return err
	}
	*meanTrials, *scoreShare = t.MeanTrials, t.ScoreShare
	if errs = append(errs, (**space).check()...); len(errs) > 0 {
		return errs
	}
	return nil
}
