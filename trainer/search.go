package trainer

// The one loop of every private hyperparameter search (Papernot and
// Steinke, "Hyperparameter Tuning with Rényi Differential Privacy", ICLR
// 2022, Theorem 2): Tune's for the DP-SGD family, SteFFLe's, and the
// pipelines' (objective perturbation, post-processing, the oracle learner,
// budget tailoring).

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/dpops/accounting"
)

// SearchOptions configure NewSearch.
type SearchOptions struct {
	// Source is the run's randomness: K and the search's streams are
	// derived from it (crypto-keyed for an unseeded run).
	Source dpops.Source
	// Delta is the search's δ; 0: accounting.DefaultDelta(Records). It
	// is checked against Records (accounting.CheckDelta; Records 0 checks
	// its range only), a δ ≥ 1/Records refused unless AllowLargeDelta.
	Delta           float64
	Records         int
	AllowLargeDelta bool
	// DeltaField, when set, names the setting a refused δ is reported
	// against (a FieldErrors entry); "": accounting.CheckDelta's error as
	// it is.
	DeltaField string
	// MeanTrials (E[K], > 1) and Eta (η > −1) give K's truncated negative
	// binomial law (accounting.TNBWithMean); TuneOptions.WithDefaults
	// fills and checks them.
	MeanTrials, Eta float64
	// Log receives the progress line of every trial; nil: none.
	Log io.Writer
}

// Search is a private random search whose kept trials are of type C (the
// chosen trial's setting, report, model: whatever the caller publishes if
// it wins). It exists so that one place decides what every search's
// privacy rests on: how K is drawn (from stream "tune/trials" of the run's
// seed, independently of the data, and never cut short), which streams the
// trials' settings and scores draw from ("tune/choice", "tune/score",
// "tune/coins", each its own: a trial's setting never depends on another's
// score), that every trial runs and is scored whatever the earlier ones
// gave, and that nothing of an unchosen trial leaves the search: Run keeps
// the best trial alone, and the progress line says only how many trials
// are done and the ε the whole search spends, which K does not change.
type Search[C any] struct {
	// Delta is the search's δ, Law K's law and MeanTrials its E[K] as
	// given, K the number of trials drawn from Law.
	Delta      float64
	Law        accounting.TruncatedNegativeBinomial
	MeanTrials float64
	K          int
	// Source is the run's randomness the search was derived from; a
	// trial's own is TrialSeed(Source, i).
	Source dpops.Source
	// Choose draws the trials' settings, ScoreNoise their scores' noise
	// and Coins the randomised predictions a trial is scored on (streams
	// "tune/choice", "tune/score" and "tune/coins").
	Choose, ScoreNoise, Coins *rand.Rand

	log   io.Writer
	ran   bool
	best  C
	score float64
}

// NewSearch sets up a search: its δ (o.Delta, 0: 1/n² of o.Records,
// checked), K's law and K drawn from stream "tune/trials" of o.Source, and
// the trials' streams.
func NewSearch[C any](o SearchOptions) (*Search[C], error) {
	s := &Search[C]{Delta: o.Delta, MeanTrials: o.MeanTrials, Source: o.Source, log: o.Log}
	if s.Delta == 0 {
		s.Delta = accounting.DefaultDelta(o.Records)
	}
	if err := accounting.CheckDelta(s.Delta, o.Records, o.AllowLargeDelta); err != nil {
		if o.DeltaField != "" {
			return nil, FieldErrors{{Field: o.DeltaField, Msg: err.Error()}}
		}
		return nil, err
	}
	if s.log == nil {
		s.log = io.Discard
	}
	var err error
	if s.Law, err = accounting.TNBWithMean(o.Eta, o.MeanTrials); err != nil {
		return nil, err
	}
	if s.K, err = s.Law.Sample(o.Source.Derive("tune/trials")); err != nil {
		return nil, err
	}
	s.Choose, s.ScoreNoise, s.Coins = o.Source.Derive("tune/choice"), o.Source.Derive("tune/score"), o.Source.Derive("tune/coins")
	return s, nil
}

// SearchProgress is what the progress line states: the ε the whole
// search spends (Spent, its plan's) against the target, per Per ("": for
// the whole data set; "silo": for every silo).
type SearchProgress struct {
	Spent, Target float64
	Per           string
}

// Run runs the search's K trials in order, trial(i) for i = 0, …, K−1: a
// trial draws its setting from Choose, runs, is held to the plan, and is
// scored with noise from ScoreNoise (higher wins), returning what the
// search keeps of it. The first trial is kept, and a later one replaces
// the kept one when its score is strictly greater (a tie keeps the
// earlier), so a search whose trials all failed (scored −∞) keeps one to
// report the failure. Run checks ctx before every trial, writes the
// progress line after it, and returns a trial's error as "tuning trial
// i+1: …": an error ends the search, which publishes nothing.
func (s *Search[C]) Run(ctx context.Context, p SearchProgress, trial func(i int) (C, float64, error)) error {
	spent := "ε spent"
	if p.Per != "" {
		spent += " per " + p.Per
	}
	for i := range s.K {
		if err := ctx.Err(); err != nil {
			return err
		}
		c, score, err := trial(i)
		if err != nil {
			return fmt.Errorf("tuning trial %d: %w", i+1, err)
		}
		if !s.ran || score > s.score {
			s.best, s.score, s.ran = c, score, true
		}
		fmt.Fprintf(s.log, "tune: trial %d of %d done; %s: %.4g of %.4g (the search's bound holds whatever K is)\n",
			i+1, s.K, spent, p.Spent, p.Target)
	}
	return nil
}

// Best is the kept trial and its score (the zero C and 0 before Run).
func (s *Search[C]) Best() (C, float64) { return s.best, s.score }

// Summary is extra.tune's common part for the search: K, its law, the
// costliest trial's ε (trialEpsilon, score included), the records a trial
// trains on and the standard deviation of the score's noise; the caller
// adds how the trials were scored.
func (s *Search[C]) Summary(trialEpsilon float64, trainRecords int, scoreNoise float64) TuneSearch {
	return TuneSearch{Trials: s.K, MeanTrials: s.MeanTrials, Eta: s.Law.Eta, Gamma: s.Law.Gamma, TrialEpsilon: trialEpsilon,
		TrainRecords: trainRecords, ScoreNoise: scoreNoise}
}
