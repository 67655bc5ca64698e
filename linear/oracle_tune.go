package linear

// Private tuning of Jagielski et al.'s DP oracle learner (2019,
// Algorithm 3) in the manner of Papernot and Steinke, "Hyperparameter
// Tuning with Rényi Differential Privacy" (ICLR 2022, Theorem 2), as
// TunePostproc searches the private fair pipeline: a random number K of
// complete oracle runs, each with settings drawn uniformly from a small
// space independently of the data, each scored privately on the training
// records, and only the best one published. accounting.PlanTuning
// calibrates the runs so that the WHOLE search, its scores included,
// spends the target ε at δ.
//
// Scope and neighbour relation: the oracle's own. The learner protects the
// sensitive attribute only (features, labels and the record count are
// public; see TrainOracle), under the relation "one record's group
// replaced". Every release of a trial is a Laplace mechanism that is pure
// ε-DP under that relation (the counts at ε_c, every per-round release at
// ε'), so its RDP curve is PureRDP of each (Bun and Steinke 2016,
// Proposition 3.3 with zCDP's ρ = ε²/2 ⇒ RDP ρα, capped at ε), composed
// by addition. The score's per-group confusion counts move by one record
// between two cells when its group changes: L2 sensitivity √2.
//
// The score. A trial's model (the mixture) is a function of its noisy
// releases; features and labels are public; so the trial's training
// accuracy reads no sensitive attribute and would need no noise under
// this scope. The violation reads the groups and is released with
// Gaussian noise (trainer.NoisyFairScore). The accuracy is nevertheless
// taken from the same noisy counts, exactly postproc's score: one scoring
// path for both searches, and its extra noise (√(2·cells)·σ/n) is far
// below the differences between settings at the sizes measured.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/trainer"
)

// OracleTuneOptions configure TuneOracle. Zero values take the defaults
// (trainer.TuneOptions': E[K] = 10, the logarithmic law, a tenth of a
// trial's RDP on its score).
type OracleTuneOptions struct {
	// MeanTrials is E[K] (0: 10); K itself is random and unbounded.
	MeanTrials float64
	// Eta is η of K's truncated negative binomial law (0: logarithmic).
	Eta float64
	// ScoreShare is the share of a trial's RDP spent on its score (0: 0.1).
	ScoreShare float64
	// Space is the search space (nil: DefaultOracleTuneSpace).
	Space *OracleTuneSpace
	// Log receives the progress lines (nil: none).
	Log io.Writer
}

func (o OracleTuneOptions) withDefaults() (OracleTuneOptions, error) {
	err := fillFairTuneOptions(&o.MeanTrials, &o.ScoreShare, o.Eta, &o.Log, &o.Space, DefaultOracleTuneSpace)
	return o, err
}

// OracleTuneSpace is what a trial of the oracle learner draws, uniformly
// and independently of the data: the rounds T, the bound B, the
// exponentiated-gradient rate η and the fallback. γ and the counts' share
// are the run's.
type OracleTuneSpace struct {
	Rounds   []int     `json:"rounds"`
	Bound    []float64 `json:"bound"`
	Eta      []float64 `json:"eta"`
	Fallback []string  `json:"fallback"`
}

// DefaultOracleTuneSpace is the space measured in bench/results/tabular.md
// ("`--algo oracle --tune`"). Rounds: fewer rounds give each release more
// of a trial's ε (ε' ∝ 1/T), so fewer, less noisy fits; at a trial's
// budget on Adult and the 3,750-record table (ε = 0.6, seed 1, `--fallback
// error`, B = 1) T = 2 erred .207 / .201 at EO .033 / .027, T = 5 .210 /
// .243 at .033 / .023, T = 20 .241 / .255 at .008 / .005 and T = 100 sat
// at the majority class (.247 / .259) at EO ≈ .001: the space spans that
// trade-off, and the score (accuracy less violation) picks along it. The
// fallback is "error" alone: free under the oracle's scope (its choice
// reads only public features and labels), it keeps every round no worse
// than the majority class in training; "none" (the paper's learner) erred
// .41–.49 at ε = 1 and a search that drew it chose it when K = 1, and
// "cost" is charged one more release per round and did as well or worse
// in 23 of 24 settings measured. B = 10 moved the error by up to .021
// from B = 1, in neither direction consistently, and a trial's cost does
// not depend on B, so both are drawn; η is the default's.
func DefaultOracleTuneSpace() OracleTuneSpace {
	return OracleTuneSpace{Rounds: []int{2, 5, 20}, Bound: []float64{DefaultOracleBound, 10},
		Eta: []float64{DefaultOracleLearningRate}, Fallback: []string{string(FallbackError)}}
}

func (s OracleTuneSpace) check() trainer.FieldErrors {
	var errs trainer.FieldErrors
	if len(s.Rounds) == 0 || len(s.Bound) == 0 || len(s.Eta) == 0 || len(s.Fallback) == 0 {
		errs.Add("Tune.Space", "needs at least one number of rounds, bound, learning rate and fallback")
	}
	for _, v := range s.Rounds {
		if v < 1 {
			errs.Add("Tune.Space.Rounds", "%d: want at least 1 round", v)
		}
	}
	for _, v := range s.Bound {
		if !(v > 0) || math.IsInf(v, 1) {
			errs.Add("Tune.Space.Bound", "%v: want finite bounds > 0", v)
		}
	}
	for _, v := range s.Eta {
		if !(v > 0) || math.IsInf(v, 1) {
			errs.Add("Tune.Space.Eta", "%v: want finite learning rates > 0", v)
		}
	}
	for _, v := range s.Fallback {
		if !slices.Contains(OracleFallbacks, OracleFallback(v)) {
			errs.Add("Tune.Space.Fallback", "%q: want one of %q", v, OracleFallbacks)
		}
	}
	return errs
}

// OracleTuneChoice is one trial's setting and its budget.
type OracleTuneChoice struct {
	Rounds   int     `json:"rounds"`
	Bound    float64 `json:"bound"`
	Eta      float64 `json:"eta"`
	Fallback string  `json:"fallback"`
	// NominalEpsilon is the trial's nominal ε ν (the plan's "noise"): the
	// trial runs the oracle at Privacy.Epsilon ν with basic composition,
	// which gives the counts CountsEpsilon and each per-round release
	// PerRoundEpsilon (ε'). What it costs is the RDP composition of those
	// releases, which the plan charges, not ν.
	NominalEpsilon  float64 `json:"nominal_epsilon"`
	CountsEpsilon   float64 `json:"counts_epsilon"`
	PerRoundEpsilon float64 `json:"per_round_epsilon"`
}

// OracleTuneResult is report.json's extra.tune for a tuned oracle learner:
// how the search ran and what it chose, nothing of the other trials. Its
// relation is one record's sensitive attribute replaced.
type OracleTuneResult struct {
	FairTuneSummary
	Chosen OracleTuneChoice `json:"chosen"`
	Space  OracleTuneSpace  `json:"space"`
}

// OracleTuneOf returns a tuned oracle report's extra.tune (nil for others).
func OracleTuneOf(rep *trainer.Report) *OracleTuneResult {
	r, _ := trainer.ExtraOf[*OracleTuneResult](rep, "tune")
	return r
}

// oracleScoreSensitivity is the L2 sensitivity of a trial's per-group
// confusion counts when one record's group is replaced: it leaves one cell
// and enters another.
var oracleScoreSensitivity = math.Sqrt2

// oracleTunePlan is a calibrated search of the oracle: the plan and each
// kind's rounds and fallback (a kind is a pair of them: they fix the
// number of releases).
type oracleTunePlan struct {
	accounting.TuningPlan
	rounds     []int
	fallbacks  []OracleFallback
	countShare float64
}

// kind is the index of the pair (rounds index r, fallback index f).
func (p *oracleTunePlan) kind(r, f int) int { return r*len(p.fallbacks) + f }

// budget is the split a trial of kind i makes of its nominal ε tau: the
// oracle's own (SplitOracleBudget with δ = 0, basic composition), which
// is exactly what TrainOracle computes when the trial runs at ε = tau
// with BasicComposition.
func (p *oracleTunePlan) budget(i int, tau float64) (OracleBudget, error) {
	return SplitOracleBudget(tau, 0, p.rounds[i/len(p.fallbacks)], p.countShare, p.fallbacks[i%len(p.fallbacks)] == FallbackCost)
}

// oracleCurve is the RDP curve at orders of an oracle run that spent b:
// the counts' ε_c and every per-round release's ε', each pure (PureRDP),
// composed.
func oracleCurve(b OracleBudget, orders []float64) []float64 {
	c := accounting.PureRDP(b.Counts, orders)
	n := float64(b.Rounds * b.releasesPerRound())
	for j, v := range accounting.PureRDP(b.PerRound, orders) {
		c[j] += n * v
	}
	return c
}

// planOracleTune calibrates the search for the target ε at δ: one trial
// kind per (rounds, fallback) pair of space. The "noise" of a kind is its
// nominal ε ν: the trial runs the oracle at Privacy.Epsilon ν with basic
// composition, whose split (SplitOracleBudget at δ = 0) fixes the counts'
// ε_c = share·ν and the per-release ε'; ν is the largest for which those
// releases, composed in RDP, cost at most the per-trial ε τ at δ (so kinds
// with many rounds, which RDP composes better, get a larger ν).
func planOracleTune(p privacy, delta, countShare float64, space OracleTuneSpace, law accounting.TruncatedNegativeBinomial,
	scoreShare float64) (*oracleTunePlan, error) {
	pl := &oracleTunePlan{rounds: space.Rounds, countShare: countShare}
	for _, f := range space.Fallback {
		pl.fallbacks = append(pl.fallbacks, OracleFallback(f))
	}
	plan, err := accounting.PlanTuning(len(pl.rounds)*len(pl.fallbacks), func(i int, tau, delta float64, orders []float64) (float64, []float64, error) {
		nu, err := pl.calibrate(i, tau, delta, orders)
		if err != nil {
			return 0, nil, err
		}
		b, err := pl.budget(i, nu)
		if err != nil {
			return 0, nil, err
		}
		return nu, oracleCurve(b, orders), nil
	}, law, delta, p.Epsilon, scoreShare)
	if err != nil {
		return nil, trainer.TuningBudgetError(err, p.Epsilon, law.Mean())
	}
	pl.TuningPlan = plan
	return pl, nil
}

// calibrate is the largest nominal ε ν (to 10⁻⁹ relative, by bisection)
// whose split, composed in RDP at orders, spends at most tau at delta.
// The bracket starts at [tau/4, tau] and widens either way until it
// holds the answer.
func (p *oracleTunePlan) calibrate(kind int, tau, delta float64, orders []float64) (float64, error) {
	cost := func(nu float64) (float64, error) {
		b, err := p.budget(kind, nu)
		if err != nil {
			return 0, err
		}
		e, _, err := accounting.EpsilonFromRDP(orders, oracleCurve(b, orders), delta)
		return e, err
	}
	lo, hi := tau/4, tau
	for {
		e, err := cost(lo)
		if err != nil {
			return 0, err
		}
		if e <= tau {
			break
		}
		if lo < tau*1e-6 {
			return 0, fmt.Errorf("linear: no oracle split fits a trial ε of %v", tau)
		}
		lo, hi = lo/4, lo
	}
	for {
		e, err := cost(hi)
		if err != nil {
			return 0, err
		}
		if e > tau {
			break
		}
		lo, hi = hi, hi*2
	}
	for hi/lo > 1+1e-9 {
		mid := math.Sqrt(lo * hi)
		e, err := cost(mid)
		if err != nil {
			return 0, err
		}
		if e <= tau {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, nil
}

// score is a trial's noisy accuracy and equalized-odds violation of its
// sampled predictions pred on s, from one Gaussian release of its
// per-group confusion counts at the plan's multiplier and sensitivity √2
// (trainer.NoisyFairScore).
func (p *oracleTunePlan) score(r *rand.Rand, pred []int, s *FairSplit, groups int) (acc, violation float64, err error) {
	return trainer.NoisyFairScore(r, pred, s.Label, s.Group, 2, groups, oracleScoreSensitivity, p.ScoreSigma, true)
}

// checkTrial holds a trial to the plan: every mechanism of its receipt
// must be pure (Laplace or pure ε-DP), at δ = 0 under basic composition,
// its counts' ε and per-round ε' must be the planned ones, and their
// PureRDP curves (per release) composed must cost at most the kind's
// planned curve at every order (up to rounding, 1e-9 relative). A trial that released anything else would void
// the search's guarantee, so it is refused rather than published.
func (p *oracleTunePlan) checkTrial(kind int, or *OracleResult, rc accounting.Receipt) error {
	if !rc.Private() || rc.Accountant != accounting.AccountantPure || rc.Delta != 0 || len(rc.Mechanisms) == 0 {
		return fmt.Errorf("the trial is not pure ε-DP as planned (accountant %s, δ = %v)", rc.Accountant, rc.Delta)
	}
	want, err := p.budget(kind, p.Noise[kind])
	if err != nil {
		return err
	}
	if or.Budget == nil || or.Budget.PerRound != want.PerRound || or.Budget.Counts != want.Counts {
		return errors.New("the trial did not run at the per-release ε the tuning plan set")
	}
	c := make([]float64, len(p.Orders))
	for _, m := range rc.Mechanisms {
		if m.Kind != accounting.KindLaplace && m.Kind != accounting.KindPureDP {
			return fmt.Errorf("the trial released %s (%s), outside the tuning plan", m.Kind, m.Protects)
		}
		// The pure accountant merges repeated releases of one label:
		// Epsilon is their sum over Steps. The oracle spends the same ε'
		// in every release of a label (OracleBudget.spendRound), pinned
		// to the plan's above, so each release is Epsilon/Steps (a mean
		// of unequal ε could understate PureRDP, which is not convex).
		steps := float64(max(m.Steps, 1))
		for j, v := range accounting.PureRDP(m.Epsilon/steps, p.Orders) {
			c[j] += steps * v
		}
	}
	for j, v := range c {
		if !(v <= p.Curves[kind][j]*(1+1e-9)) {
			return fmt.Errorf("the trial's releases cost RDP %.6g at order %v, more than the %.6g the tuning plan charged", v, p.Orders[j], p.Curves[kind][j])
		}
	}
	return nil
}

// checkTunableOracle refuses what a search of the oracle cannot cover.
func checkTunableOracle(cfg trainer.Config) error {
	var errs trainer.FieldErrors
	j := PostprocConfigOf(cfg)
	if cfg.Algo != OracleName {
		errs.Add("Algo", "%s is not the oracle learner (TunePostproc searches post-processing)", cfg.Algo)
	}
	if j.Fairness != "eo" {
		errs.Add("Postproc.Fairness", "must be eo to tune the oracle (got %q): the search scores equalized odds", j.Fairness)
	}
	if j.BasicComposition {
		errs.Add("Postproc.BasicComposition", "is the search's to set: its trials compose by RDP and the search's receipt is at Privacy.Delta")
	}
	if p := privacyOf(cfg); !p.Private() || !(p.Epsilon > 0) {
		errs.Add("Privacy.Epsilon", "must be finite to tune (got %v): the search is calibrated to it", p.Epsilon)
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// TuneOracle runs the DP oracle learner (Algo oracle) by private random
// search (Papernot and Steinke 2022, Theorem 2) on d (LoadFairSplits): K
// trials, K drawn from a truncated negative binomial law independently of
// the data; each trial runs the oracle (RunFair) with rounds, bound,
// learning rate and fallback drawn from the space and the per-release ε'
// of the plan (accounting.PlanTuning), its receipt is checked against the
// plan, and it is scored by its noisy training accuracy less its noisy
// equalized-odds violation, from one Gaussian release of its per-group
// confusion counts of its sampled (randomised) predictions on the training
// records, as the report's own metrics are sampled. The best trial's report
// is returned with the search's receipt (ε the whole search's, at most
// cfg's Privacy.Epsilon at its δ; scope: the sensitive attribute, as the
// oracle's own) and extra.tune. Its config is the chosen trial's setting
// at its own budget (repeating it runs that trial once). A trial whose
// noisy counts failed scores −∞; if every trial failed the report says so
// (FairFailure).
func TuneOracle(ctx context.Context, d *FairData, cfg trainer.Config, opts OracleTuneOptions) (*trainer.Report, error) {
	p := privacyOf(cfg)
	if _, err := validatePostproc(cfg, p); err != nil {
		return nil, err
	}
	if err := checkTunableOracle(cfg); err != nil {
		return nil, err
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	j := PostprocConfigOf(cfg)
	n := d.Train.N()
	srch, err := newFairSearch[OracleTuneChoice](cfg, p, n, opts.MeanTrials, opts.Eta, opts.Log)
	if err != nil {
		return nil, err
	}
	countShare := j.CountShare
	if countShare == 0 {
		countShare = DefaultCountShare
	}
	space, delta := *opts.Space, srch.Delta
	plan, err := planOracleTune(p, delta, countShare, space, srch.Law, opts.ScoreShare)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(opts.Log, "tune: %d trials (K drawn with E[K] = %g), each the oracle learner on the %d training records and scored on them; "+
		"the whole search spends ε = %.4g at δ = %.3g for the sensitive attribute, charged before the first trial\n",
		srch.K, opts.MeanTrials, n, plan.Epsilon, delta)
	choose := srch.Choose
	err = srch.Run(ctx, trainer.SearchProgress{Spent: plan.Epsilon, Target: p.Epsilon}, func(i int) (fairTrial[OracleTuneChoice], float64, error) {
		var none fairTrial[OracleTuneChoice]
		ri, fi := choose.IntN(len(space.Rounds)), choose.IntN(len(space.Fallback))
		kind := plan.kind(ri, fi)
		c := OracleTuneChoice{Rounds: space.Rounds[ri], Fallback: space.Fallback[fi],
			Bound: space.Bound[choose.IntN(len(space.Bound))], Eta: space.Eta[choose.IntN(len(space.Eta))]}
		b, err := plan.budget(kind, plan.Noise[kind])
		if err != nil {
			return none, 0, err
		}
		c.NominalEpsilon, c.CountsEpsilon, c.PerRoundEpsilon = plan.Noise[kind], b.Counts, b.PerRound
		rep, err := oracleTrial(ctx, d, cfg, c, countShare, srch.Source, i)
		if err != nil {
			return none, 0, err
		}
		res := FairExtra(rep)
		if err := plan.checkTrial(kind, res.Oracle, rep.Privacy); err != nil {
			return none, 0, err
		}
		return scoreFairTrial(srch, rep, c, res.Failed, func(coins *rand.Rand) ([]int, error) {
			// The sampled predictions, as the report's test metrics are.
			prob, err := res.Oracle.Model.ProbPositive(d.Train.X, n)
			if err != nil {
				return nil, err
			}
			return SamplePredictions(coins, prob)
		}, func(noise *rand.Rand, pred []int) (float64, float64, error) {
			return plan.score(noise, pred, d.Train, len(d.GroupNames))
		})
	})
	if err != nil {
		return nil, err
	}
	best, _ := srch.Best()
	tr := OracleTuneResult{FairTuneSummary: fairTuneSummary(srch.Summary(plan.TrialEpsilon, n, plan.ScoreSigma*oracleScoreSensitivity),
		accounting.RelationReplaceOne, j.Fairness, best), Chosen: best.choice, Space: space}
	rep := tunedFairReport(best.rep, cfg, tunedFairOptions{plan: plan.TuningPlan, delta: delta, trials: srch.K, meanTrials: opts.MeanTrials,
		fairness: j.Fairness, trialNoise: "every release's ε' calibrated", sampling: accounting.SamplingNone,
		relation: accounting.RelationReplaceOne, sensitivity: oracleScoreSensitivity,
		relationNote: fmt.Sprintf("neighbouring data sets: one record's sensitive attribute replaced (features, labels and the record count "+
			"are public, as the oracle learner's own receipt states), under which every part of a trial is private as charged (its "+
			"Laplace releases, pure ε-DP each; the score's counts with L2 sensitivity %.4g)", oracleScoreSensitivity),
		sensitiveOnly: true, src: srch.Source, extra: &tr})
	rep.Seconds = time.Since(start).Seconds()
	return rep, nil
}

// oracleTrial is one complete trial: RunFair of the oracle learner with
// the choice's rounds, bound, learning rate and fallback at the nominal ε
// ν with basic composition (so TrainOracle's own split gives exactly the
// planned per-release ε'), the run's γ and count share. Its noise comes
// from stream "tune/trial/i" of the run's seed (crypto-seeded when the run
// is).
func oracleTrial(ctx context.Context, d *FairData, cfg trainer.Config, c OracleTuneChoice, countShare float64,
	src dpops.Source, i int) (*trainer.Report, error) {
	seed := trainer.TrialSeed(src, i)
	j := PostprocConfigOf(cfg)
	j.Rounds, j.Bound, j.Eta, j.Fallback, j.CountShare, j.BasicComposition = c.Rounds, c.Bound, c.Eta, c.Fallback, countShare, true
	tc := WithPostprocConfig(cfg, j)
	tc.Seed, tc.Out = seed, ""
	tc.Privacy.Epsilon, tc.Privacy.Delta = c.NominalEpsilon, 0
	return RunFair(ctx, d, tc)
}
