package linear

// What the private searches of post-processing (TunePostproc) and of the
// oracle learner (TuneOracle) share: the search's δ, K's law and draw, the
// noise streams, the best trial so far, and extra.tune's common part.

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/dpops/accounting"
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

// fairSearch is a running search whose trials' settings are of type C.
type fairSearch[C any] struct {
	delta float64
	law   accounting.TruncatedNegativeBinomial
	k     int // K, drawn from law
	src   dpops.Source
	// choose draws the trials' settings, scoreNoise their scores' noise,
	// coins their randomised predictions.
	choose, scoreNoise, coins *rand.Rand

	best             *trainer.Report
	choice           C
	score, acc, viol float64
}

// newFairSearch sets up a search on n training records under p (δ 0: 1/n²,
// checked against n) with K drawn from the law of mean meanTrials and η
// eta, from stream "tune/trials" of cfg's seed (crypto-seeded when cfg's
// is nil).
func newFairSearch[C any](cfg trainer.Config, p privacy, n int, meanTrials, eta float64) (*fairSearch[C], error) {
	s := &fairSearch[C]{delta: p.Delta, score: math.Inf(-1)}
	if s.delta == 0 {
		s.delta = accounting.DefaultDelta(n)
	}
	if err := accounting.CheckDelta(s.delta, n, p.AllowLargeDelta); err != nil {
		return nil, err
	}
	var err error
	if s.law, err = accounting.TNBWithMean(eta, meanTrials); err != nil {
		return nil, err
	}
	_, s.src = dpops.NewRand(cfg.Seed)
	if s.k, err = s.law.Sample(s.src.Derive("tune/trials")); err != nil {
		return nil, err
	}
	s.choose, s.scoreNoise, s.coins = s.src.Derive("tune/choice"), s.src.Derive("tune/score"), s.src.Derive("tune/coins")
	return s, nil
}

// offer records trial rep with setting c and its noisy accuracy and
// violation, scored acc − viol (−∞ when it failed: its failure is a
// function of its noisy releases), if it is the best so far (the first
// trial always is, so a search of failed trials reports a failure).
func (s *fairSearch[C]) offer(rep *trainer.Report, c C, acc, viol float64, failed bool) {
	score := acc - viol
	if failed {
		score, acc, viol = math.Inf(-1), 0, 0
	}
	if s.best == nil || score > s.score {
		s.best, s.choice, s.score, s.acc, s.viol = rep, c, score, acc, viol
	}
}

// logDone writes the progress line of trial i (from 0).
func (s *fairSearch[C]) logDone(log io.Writer, i int, spent, target float64) {
	fmt.Fprintf(log, "tune: trial %d of %d done; ε spent: %.4g of %.4g (the search's bound holds whatever K is)\n",
		i+1, s.k, spent, target)
}

// summary is extra.tune's common part for a search of plan on n records.
func (s *fairSearch[C]) summary(meanTrials float64, plan accounting.TuningPlan, n int, relation string, sensitivity float64,
	fairness string) FairTuneSummary {
	return FairTuneSummary{Trials: s.k, MeanTrials: meanTrials, Eta: s.law.Eta, Gamma: s.law.Gamma, TrialEpsilon: plan.TrialEpsilon,
		TrainRecords: n, Relation: relation, ScoreNoise: plan.ScoreSigma * sensitivity, Fairness: fairness, Score: s.acc, Violation: s.viol}
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
