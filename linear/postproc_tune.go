package linear

// Private tuning of the fully private fair pipeline (post-processing on a
// private base, Postproc.Base objpert or dpsgd), in the manner of Papernot
// and Steinke, "Hyperparameter Tuning with Rényi Differential Privacy"
// (ICLR 2022, Theorem 2), as trainer.Tune searches DP-SGD: a random number
// K of complete trials, each the whole pipeline (a private base, then the
// Laplace cell counts and the LP) with settings drawn uniformly from a
// small space, each scored privately on the training records, and only the
// best one published. accounting.PlanTuning calibrates the trials so that
// the WHOLE search, its scores included, spends the target ε at δ.
//
// Neighbour relation. Theorem 2 holds under any one relation for which
// every trial (score included) has the RDP curve the plan charges; the
// search states the relation its base is private under, and every other
// part honours it:
//   - objpert base: replace-one. Objective perturbation's ε (Chaudhuri et
//     al. 2011, Theorem 9; the Jacobian term charged once) is for data sets
//     differing in one record's value, so the search is stated for
//     replace-one; the cell counts are ε₂-DP under it (one count moves
//     between two cells: L1 sensitivity 2, the scale Laplace(2/ε₂) has);
//     the score's confusion counts have L2 sensitivity √2 (a record leaves
//     one cell and enters another). objpert's Gaussian mechanism is not
//     used in a search: the trial runs the pure mechanism, whose curve is
//     PureRDP (Bun and Steinke 2016).
//   - dpsgd base: add-remove. Its Poisson-subsampled Gaussian steps
//     (Mironov et al. 2019) are analysed for adding or removing a record;
//     the cell counts are ε₂-DP under it too (one count moves by 1, below
//     the L1 sensitivity 2 the noise is scaled for), with the record count
//     public as every receipt here states; the score's counts have L2
//     sensitivity 1.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"time"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/trainer"
)

// PostprocTuneOptions configure TunePostproc. Zero values take the
// defaults (those of trainer.TuneOptions: E[K] = 10, the logarithmic law,
// a tenth of a trial's RDP on its score).
type PostprocTuneOptions struct {
	// MeanTrials is E[K] (0: 10); K itself is random and unbounded.
	MeanTrials float64
	// Eta is η of K's truncated negative binomial law (0: logarithmic).
	Eta float64
	// ScoreShare is the share of a trial's RDP spent on its score (0: 0.1).
	ScoreShare float64
	// Space is the search space (nil: DefaultPostprocTuneSpace).
	Space *PostprocTuneSpace
	// Log receives the progress lines (nil: none).
	Log io.Writer
}

// Defaults of PostprocTuneOptions.
const (
	DefaultPostprocTuneTrials     = 10
	DefaultPostprocTuneScoreShare = 0.1
)

func (o PostprocTuneOptions) withDefaults() (PostprocTuneOptions, error) {
	err := fillFairTuneOptions(&o.MeanTrials, &o.ScoreShare, o.Eta, &o.Log, &o.Space, DefaultPostprocTuneSpace)
	return o, err
}

// PostprocTuneSpace is what a trial of the private pipeline draws,
// uniformly and independently of the data: the base's share of the
// trial's ε, the score bins K, the γ share (PostprocConfig.GammaShare; γ
// itself is the run's) and the LP's slack rule.
type PostprocTuneSpace struct {
	BaseShare  []float64 `json:"base_share"`
	Bins       []int     `json:"bins"`
	GammaShare []float64 `json:"gamma_share"`
	Slack      []string  `json:"slack"`
}

// DefaultPostprocTuneSpace is the part of the sweep of
// bench/results/tabular.md ("The private fair pipeline's base, share and
// γ": 108 settings per data set and ε) that mattered: base shares 0.3,
// 0.5 and 0.7 (each the best on some table: 0.7 where the base is the
// bottleneck, 0.3 where the cells are) and the γ share 0 or 0.25 (the
// large tables need it, the small ones can be hurt by it). The bins are 4
// alone: K = 2 met the done-when in at most 2 of 17 cells of that sweep,
// and a search that drew K ∈ {2, 4} chose K = 2 in 5 of 6 runs and
// missed it on Adult and the 3,750-record table at ε = 1 (error .189 and
// .191 against .172 and .168 with K = 4 alone; bench/results/tabular.md,
// "`--algo postproc --tune`"). Slack is "none" alone: with no slack the
// settings reached every cell any setting reached, and sd:1 never did
// better. It holds the command line's default (share 0.5, K =
// PrivateBinsNoSlack, no slack, the γ share rule's 0 or 0.25; 4 bins
// until the cells' noise was halved and smoothed, see PrivateBinsNoSlack).
func DefaultPostprocTuneSpace() PostprocTuneSpace {
	return PostprocTuneSpace{BaseShare: []float64{0.3, DefaultBaseShare, 0.7}, Bins: []int{PrivateBinsNoSlack},
		GammaShare: []float64{0, DefaultPrivateGammaShare}, Slack: []string{string(SlackNone)}}
}

func (s PostprocTuneSpace) check() trainer.FieldErrors {
	var errs trainer.FieldErrors
	if len(s.BaseShare) == 0 || len(s.Bins) == 0 || len(s.GammaShare) == 0 || len(s.Slack) == 0 {
		errs.Add("Tune.Space", "needs at least one base share, bin count, γ share and slack rule")
	}
	for _, v := range s.BaseShare {
		if !(v > 0 && v < 1) {
			errs.Add("Tune.Space.BaseShare", "%v: want shares in (0, 1) (the rest of a trial's ε goes to the cell counts)", v)
		}
	}
	for _, v := range s.Bins {
		if v < 2 {
			errs.Add("Tune.Space.Bins", "%d: want at least 2 bins", v)
		}
	}
	for _, v := range s.GammaShare {
		if !(v >= 0 && v <= 1) {
			errs.Add("Tune.Space.GammaShare", "%v: want shares in [0, 1]", v)
		}
	}
	for _, v := range s.Slack {
		if _, err := ParseSlackRule(v); err != nil {
			errs.Add("Tune.Space.Slack", "%v", err)
		}
	}
	return errs
}

// PostprocTuneChoice is one trial's setting and its budget.
type PostprocTuneChoice struct {
	BaseShare  float64 `json:"base_share"`
	Bins       int     `json:"bins"`
	GammaShare float64 `json:"gamma_share"`
	Slack      string  `json:"slack"`
	// Epsilon is the trial's ε (the plan's per-trial budget), BaseEpsilon
	// its base's part (BaseShare of it) and CellsEpsilon the rest.
	Epsilon      float64 `json:"trial_epsilon"`
	BaseEpsilon  float64 `json:"base_epsilon"`
	CellsEpsilon float64 `json:"cells_epsilon"`
	// Sigma is a DP-SGD base's noise multiplier per step (0 for objpert).
	Sigma float64 `json:"sigma,omitempty"`
}

// PostprocTuneResult is report.json's extra.tune for a tuned pipeline:
// how the search ran and what it chose, nothing of the other trials.
type PostprocTuneResult struct {
	FairTuneSummary
	Chosen PostprocTuneChoice `json:"chosen"`
	Space  PostprocTuneSpace  `json:"space"`
}

// PostprocTuneOf returns a tuned pipeline report's extra.tune (nil for
// others).
func PostprocTuneOf(rep *trainer.Report) *PostprocTuneResult {
	r, _ := trainer.ExtraOf[*PostprocTuneResult](rep, "tune")
	return r
}

// postprocTunePlan is a calibrated search of the pipeline: the plan, the
// base, the relation, each kind's share and, for a DP-SGD base, each
// kind's shape (the data-aware settings at the kind's nominal ε).
type postprocTunePlan struct {
	accounting.TuningPlan
	base     string
	relation string
	shares   []float64
	// shapes are the DP-SGD base's settings per kind (σ unset); steps and
	// q its noisy steps and sampling rate.
	shapes []dpsgdBaseSettings
	steps  []int
	q      []float64
	delta  float64
}

// scoreSensitivity is the L2 sensitivity of a trial's confusion counts
// under the search's relation.
func (p *postprocTunePlan) scoreSensitivity() float64 {
	if p.relation == accounting.RelationReplaceOne {
		return math.Sqrt2
	}
	return 1
}

// score is a trial's noisy accuracy and violation (equalized odds when
// eo, else demographic parity) of its predictions pred on s, from one
// Gaussian release of its per-group confusion counts at the plan's
// multiplier and the relation's sensitivity (trainer.NoisyFairScore).
func (p *postprocTunePlan) score(r *rand.Rand, pred []int, s *FairSplit, groups int, eo bool) (acc, violation float64, err error) {
	return trainer.NoisyFairScore(r, pred, s.Label, s.Group, 2, groups, p.scoreSensitivity(), p.ScoreSigma, eo)
}

// split is a kind's base ε, cell ε and, for DP-SGD, σ (calibrated by RDP
// at orders) at the per-trial budget tau: what its trial runs with.
func (p *postprocTunePlan) split(kind int, tau float64, orders []float64) (eps1, eps2, sigma float64, err error) {
	// A short decimal (trainer.ShortDecimal), for the plan's curves and the
	// trials alike, so that the chosen --base-epsilon prints as what its
	// trial ran; the trial's ε is unchanged (the cells get the rest).
	eps1 = trainer.ShortDecimal(p.shares[kind] * tau)
	eps2 = tau - eps1
	if p.base == BaseDPSGD {
		sigma, err = accounting.CalibrateSigma(eps1, p.delta, p.q[kind], p.steps[kind], accounting.WithOrders(orders))
	}
	return eps1, eps2, sigma, err
}

// curve is a kind's RDP curve at orders for base ε eps1 (σ for DP-SGD)
// and cell ε eps2: the base's (PureRDP for objpert's pure mechanism, the
// composed subsampled Gaussian steps for DP-SGD) plus the cells' pure ε₂
// (PureRDP), composed.
func (p *postprocTunePlan) curve(kind int, eps1, eps2, sigma float64, orders []float64) ([]float64, error) {
	var c []float64
	if p.base == BaseDPSGD {
		var err error
		if c, err = accounting.ComposedRDP(p.q[kind], sigma, p.steps[kind], orders); err != nil {
			return nil, err
		}
	} else {
		c = accounting.PureRDP(eps1, orders)
	}
	for i, v := range accounting.PureRDP(eps2, orders) {
		c[i] += v
	}
	return c, nil
}

// planPostprocTune calibrates the search of base on d's training split
// (n records) for the target ε at δ: one trial kind per base share of
// space, the "noise" of a kind its per-trial ε τ (the base gets share·τ,
// the cells the rest; a DP-SGD base the σ that meets share·τ with its
// shape). A DP-SGD kind's shape is the base's data-aware settings at the
// kind's nominal ε (share × target), read before any record is touched.
func planPostprocTune(base string, d *FairData, p privacy, delta float64, space PostprocTuneSpace,
	law accounting.TruncatedNegativeBinomial, scoreShare float64) (*postprocTunePlan, error) {
	pl := &postprocTunePlan{base: base, relation: accounting.RelationAddRemove, shares: space.BaseShare, delta: delta}
	if base == BaseObjPert {
		pl.relation = accounting.RelationReplaceOne
	} else {
		n := d.Train.N()
		for _, s := range space.BaseShare {
			run, err := dpsgdBaseRun(privacy{Delta: delta, AllowLargeDelta: p.AllowLargeDelta}, d, s*p.Epsilon, nil, dpsgdBaseSettings{})
			if err != nil {
				return nil, err
			}
			cf := run.Config()
			if cf.Privacy.Sampling != "" && cf.Privacy.Sampling != string(trainer.SamplingPoisson) {
				return nil, fmt.Errorf("linear: the DP-SGD base samples by %s; a search's RDP analysis needs Poisson sampling", cf.Privacy.Sampling)
			}
			q := float64(cf.Batch) / float64(n)
			ps, err := dpops.NewPoisson(n, q, rand.New(rand.NewPCG(0, 0)))
			if err != nil {
				return nil, err
			}
			pl.shapes = append(pl.shapes, dpsgdBaseSettings{Batch: cf.Batch, Epochs: cf.Epochs, LR: cf.LR, Clip: cf.Privacy.Clip})
			pl.steps = append(pl.steps, cf.Epochs*ps.StepsPerEpoch())
			pl.q = append(pl.q, q)
		}
	}
	plan, err := accounting.PlanTuning(len(space.BaseShare), func(i int, tau, _ float64, orders []float64) (float64, []float64, error) {
		eps1, eps2, sigma, err := pl.split(i, tau, orders)
		if err != nil {
			return 0, nil, err
		}
		c, err := pl.curve(i, eps1, eps2, sigma, orders)
		return tau, c, err
	}, law, delta, p.Epsilon, scoreShare)
	if err != nil {
		return nil, trainer.TuningBudgetError(err, p.Epsilon, law.Mean())
	}
	pl.TuningPlan = plan
	return pl, nil
}

// checkTrial holds a trial to the plan: its base's receipt (pure at most
// ε₁ for objpert; for DP-SGD, subsampled Gaussian steps only) and its
// cells' (pure) composed at the plan's orders must cost at most the
// kind's planned curve at every order (up to rounding, 1e-9 relative). A
// trial that released anything else would void the search's guarantee,
// so it is refused rather than published.
func (p *postprocTunePlan) checkTrial(kind int, base accounting.Receipt, cells *PostProcessResult) error {
	lp, err := cells.Receipt(nil)
	if err != nil {
		return err
	}
	if !base.Private() || !lp.Private() || lp.Epsilon == nil || lp.Delta != 0 {
		return errors.New("the trial's base or cell counts are not private as planned")
	}
	var c []float64
	switch p.base {
	case BaseObjPert:
		if base.Epsilon == nil || base.Delta != 0 || base.Accountant != accounting.AccountantPure {
			return fmt.Errorf("the trial's objpert base is not pure ε-DP (accountant %s, δ = %v)", base.Accountant, base.Delta)
		}
		c = accounting.PureRDP(*base.Epsilon, p.Orders)
	case BaseDPSGD:
		acc, err := accounting.NewRDP(p.Orders)
		if err != nil {
			return err
		}
		if len(base.Mechanisms) == 0 {
			return errors.New("the trial's DP-SGD base lists no mechanisms")
		}
		for _, m := range base.Mechanisms {
			if err := acc.Step(m, m.Steps); err != nil {
				return fmt.Errorf("the trial's base released %s (%s), outside the tuning plan: %w", m.Kind, m.Protects, err)
			}
		}
		c = acc.Values()
	}
	for i, v := range accounting.PureRDP(*lp.Epsilon, p.Orders) {
		c[i] += v
	}
	for i, v := range c {
		if !(v <= p.Curves[kind][i]*(1+1e-9)) {
			return fmt.Errorf("the trial's releases cost RDP %.6g at order %v, more than the %.6g the tuning plan charged", v, p.Orders[i], p.Curves[kind][i])
		}
	}
	return nil
}

// LoadFairSplits loads and splits the data set cfg names for a search
// (TunePostproc), with no base classifier: each trial fits its own.
func LoadFairSplits(cfg trainer.Config) (*FairData, error) {
	if _, err := validatePostproc(cfg, privacyOf(cfg)); err != nil {
		return nil, err
	}
	return loadFairSplits(cfg)
}

// checkTunablePostproc refuses what a search of the pipeline cannot cover.
func checkTunablePostproc(cfg trainer.Config, d *FairData) error {
	var errs trainer.FieldErrors
	j := PostprocConfigOf(cfg)
	if cfg.Algo != PostprocName {
		errs.Add("Algo", "%s cannot be tuned privately (only post-processing on a private base can)", cfg.Algo)
	}
	if j.Base != BaseObjPert && j.Base != BaseDPSGD {
		errs.Add("Postproc.Base", "must be objpert or dpsgd to tune (got %q): only a private base can be tuned; the non-private base's "+
			"receipt protects the sensitive attribute alone, and a search over it would choose with the other attributes unprotected", j.Base)
	}
	if j.BaseEpsilon != 0 {
		errs.Add("Postproc.BaseEpsilon", "is chosen by the search (its base shares): leave it 0 (got %v)", j.BaseEpsilon)
	}
	if j.Fairness != "eo" && j.Fairness != "dp" {
		errs.Add("Postproc.Fairness", "must be eo or dp to tune (got %q): the search scores equalized odds or demographic parity", j.Fairness)
	}
	if p := privacyOf(cfg); !p.Private() || !(p.Epsilon > 0) {
		errs.Add("Privacy.Epsilon", "must be finite to tune (got %v): the search is calibrated to it", p.Epsilon)
	}
	if d.BaseFit != nil || d.Base != nil {
		errs.Add("Postproc.Base", "the data were loaded with a base classifier (LoadFairData); a search fits one per trial: load them with LoadFairSplits")
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// TunePostproc runs the private pipeline (post-processing on the private
// base cfg's Postproc.Base names) by private random search (Papernot and
// Steinke 2022, Theorem 2) on d (LoadFairSplits): K trials, K drawn from
// a truncated negative binomial law independently of the data; each trial
// fits its base and post-processes it with a setting drawn from the space
// and the per-trial budget of the plan (accounting.PlanTuning), its
// receipt is checked against the plan, and it is scored by its noisy
// training accuracy less its noisy violation of cfg's fairness notion, from
// one Gaussian release of its per-group confusion counts on the training
// records (never the test split). The best trial's report is returned with
// the search's receipt (ε the whole search's, at most cfg's Privacy.Epsilon
// at its δ) and extra.tune. The report's config is the chosen trial's
// setting at its own budget (repeating it runs that trial once, not the
// search). A failed LP scores −∞ (its failure is a function of the
// trial's noisy cells); if every trial failed the report says so, as a
// plain run's does (FairFailure).
func TunePostproc(ctx context.Context, d *FairData, cfg trainer.Config, opts PostprocTuneOptions) (*trainer.Report, error) {
	p := privacyOf(cfg)
	if _, err := validatePostproc(cfg, p); err != nil {
		return nil, err
	}
	if err := checkTunablePostproc(cfg, d); err != nil {
		return nil, err
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	j := PostprocConfigOf(cfg)
	n := d.Train.N()
	srch, err := newFairSearch[PostprocTuneChoice](cfg, p, n, opts.MeanTrials, opts.Eta, opts.Log)
	if err != nil {
		return nil, err
	}
	space, delta := *opts.Space, srch.Delta
	plan, err := planPostprocTune(j.Base, d, p, delta, space, srch.Law, opts.ScoreShare)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(opts.Log, "tune: %d trials (K drawn with E[K] = %g), each the whole pipeline (%s base) on the %d training records and scored on them; "+
		"the whole search spends ε = %.4g at δ = %.3g (%s), charged before the first trial\n",
		srch.K, opts.MeanTrials, j.Base, n, plan.Epsilon, delta, plan.relation)
	choose := srch.Choose
	eo := j.Fairness == "eo"
	err = srch.Run(ctx, trainer.SearchProgress{Spent: plan.Epsilon, Target: p.Epsilon}, func(i int) (fairTrial[PostprocTuneChoice], float64, error) {
		var none fairTrial[PostprocTuneChoice]
		kind := choose.IntN(len(space.BaseShare))
		c := PostprocTuneChoice{BaseShare: space.BaseShare[kind], Bins: space.Bins[choose.IntN(len(space.Bins))],
			GammaShare: space.GammaShare[choose.IntN(len(space.GammaShare))], Slack: space.Slack[choose.IntN(len(space.Slack))],
			Epsilon: plan.Noise[kind]}
		var (
			sigma float64
			err   error
		)
		if c.BaseEpsilon, c.CellsEpsilon, sigma, err = plan.split(kind, c.Epsilon, plan.Orders); err != nil {
			return none, 0, err
		}
		if j.Base == BaseDPSGD {
			c.Sigma = sigma
		}
		rep, fit, td, err := postprocTrial(ctx, d, cfg, plan, kind, c, delta, srch.Source, i)
		if err != nil {
			return none, 0, err
		}
		res := FairExtra(rep)
		if err := plan.checkTrial(kind, fit.Receipt, res.PostProcessing); err != nil {
			return none, 0, err
		}
		return scoreFairTrial(srch, rep, c, res.Failed, func(coins *rand.Rand) ([]int, error) {
			return trialPredictions(res, td.Train, coins)
		}, func(noise *rand.Rand, pred []int) (float64, float64, error) {
			return plan.score(noise, pred, td.Train, len(d.GroupNames), eo)
		})
	})
	if err != nil {
		return nil, err
	}
	best, _ := srch.Best()
	tr := PostprocTuneResult{FairTuneSummary: fairTuneSummary(srch.Summary(plan.TrialEpsilon, n, plan.ScoreSigma*plan.scoreSensitivity()),
		plan.relation, j.Fairness, best), Chosen: best.choice, Space: space}
	rep := tunedPostprocReport(best.rep, cfg, plan, tr, delta, srch.Source)
	rep.Seconds = time.Since(start).Seconds()
	return rep, nil
}

// postprocTrial is one complete trial: the base fitted at the choice's ε₁
// (objpert's pure mechanism, or DP-SGD with the kind's shape at the
// planned σ), then RunFair at the trial's ε with the choice's bins, γ
// share and slack, on a copy of d's splits scored by that base. Its noise
// comes from stream "tune/trial/i" of the run's seed (crypto-seeded when
// the run is).
func postprocTrial(ctx context.Context, d *FairData, cfg trainer.Config, plan *postprocTunePlan, kind int, c PostprocTuneChoice,
	delta float64, src dpops.Source, i int) (*trainer.Report, *PrivateBaseFit, *FairData, error) {
	seed := trainer.TrialSeed(src, i)
	j := PostprocConfigOf(cfg)
	j.BaseEpsilon, j.Bins, j.GammaShare, j.Slack = c.BaseEpsilon, c.Bins, c.GammaShare, c.Slack
	tc := WithPostprocConfig(cfg, j)
	tc.Seed, tc.Out = seed, ""
	tc.Privacy.Epsilon, tc.Privacy.Delta = c.Epsilon, delta
	td := &FairData{Name: d.Name, GroupNames: d.GroupNames, Preprocess: d.Preprocess, Split: d.Split}
	tr, te := *d.Train, *d.Test
	td.Train, td.Test = &tr, &te
	p := privacy{Epsilon: c.Epsilon, Delta: delta, AllowLargeDelta: true}
	_, tsrc := dpops.NewRand(seed)
	var (
		fit *PrivateBaseFit
		err error
	)
	switch plan.base {
	case BaseObjPert:
		// The pure mechanism: its curve is PureRDP (the Gaussian
		// mechanism's is not what the plan charged).
		o := ObjPertDefaults()
		o.Mechanism, o.ClipAtPredict = MechanismPure, j.BaseClipAtPredict
		fit, err = fitObjPertBase(o, c.BaseEpsilon, p, td, tsrc.Derive("base"), seed)
	case BaseDPSGD:
		set := plan.shapes[kind]
		set.Sigma = c.Sigma
		// The base's ε is a cap its own accountant checks the planned σ
		// against; the search's plan is what charges it (checkTrial).
		fit, err = fitDPSGDBase(p, td, c.BaseEpsilon, tsrc.Derive("base"), seed, set)
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("private base classifier: %w", err)
	}
	td.BaseFit = fit
	if err := setBaseScores(td, LinearClassifier{W: fit.W, RowBound: fit.RowBound}); err != nil {
		return nil, nil, nil, err
	}
	rep, err := RunFair(ctx, td, tc)
	if err != nil {
		return nil, nil, nil, err
	}
	return rep, fit, td, nil
}

// trialPredictions are a trial's randomised predictions on its training
// split, drawn with coins from the post-processed model it released.
func trialPredictions(res *FairResult, s *FairSplit, coins *rand.Rand) ([]int, error) {
	bins, err := ScoreBins{Edges: res.Bins}.Assign(s.Scores)
	if err != nil {
		return nil, err
	}
	prob, err := res.PostProcessing.Model.ProbPositive(bins, s.Group)
	if err != nil {
		return nil, err
	}
	return SamplePredictions(coins, prob)
}

// tunedPostprocReport is the chosen trial's report with the search's
// receipt (tunedFairReport) for a search of the private pipeline: its
// base's sampling and relation, and every attribute in scope.
func tunedPostprocReport(best *trainer.Report, cfg trainer.Config, plan *postprocTunePlan, tr PostprocTuneResult,
	delta float64, src dpops.Source) *trainer.Report {
	sampling := accounting.SamplingNone
	if plan.base == BaseDPSGD {
		sampling = accounting.SamplingPoisson
	}
	return tunedFairReport(best, cfg, tunedFairOptions{plan: plan.TuningPlan, delta: delta, trials: tr.Trials, meanTrials: tr.MeanTrials,
		fairness: tr.Fairness, trialNoise: "the base's and the cell counts' budgets (the base's σ for DP-SGD) calibrated",
		sampling: sampling, relation: plan.relation, sensitivity: plan.scoreSensitivity(),
		relationNote: fmt.Sprintf("neighbouring data sets: %s, under which every part of a trial is private as charged (the %s base, the Laplace "+
			"cell counts, the score's counts with L2 sensitivity %.4g)", plan.relation, plan.base, plan.scoreSensitivity()),
		src: src, extra: &tr})
}

// tunedFairOptions are what tunedFairReport needs of a search of
// post-processing or of the oracle learner.
type tunedFairOptions struct {
	plan               accounting.TuningPlan
	delta              float64
	trials             int
	meanTrials         float64
	fairness           string // "eo" or "dp"
	trialNoise         string // TunedReceiptOptions.TrialNoise
	sampling, relation string
	// sensitivity is the L2 sensitivity of the score's confusion counts
	// under relation, relationNote the note that states the relation.
	sensitivity  float64
	relationNote string
	// sensitiveOnly: the search protects the sensitive attribute only (the
	// oracle learner's scope), not whole records.
	sensitiveOnly bool
	src           dpops.Source
	extra         any // extra.tune
}

// tunedFairReport is the chosen trial's report with the search's receipt
// (trainer.TunedReceipt: Theorem 2's ε, the chosen trial's mechanisms, its
// score's Gaussian, the search's relation and scope) and extra.tune. The
// not_covered items are the chosen trial's (its outputs are the run's).
func tunedFairReport(best *trainer.Report, cfg trainer.Config, o tunedFairOptions) *trainer.Report {
	rep := *best
	rep.Config.Seed, rep.Config.Out, rep.Config.Quiet = cfg.Seed, "", false
	fairness := "demographic-parity"
	if o.fairness == "eo" {
		fairness = "equalized-odds"
	}
	rc := trainer.TunedReceipt(trainer.TunedReceiptOptions{Epsilon: o.plan.Epsilon, Order: o.plan.Order, Delta: o.delta, Law: o.plan.Law,
		Trials: o.trials, MeanTrials: o.meanTrials, TrialEpsilon: o.plan.TrialEpsilon, TrialNoise: o.trialNoise,
		Chosen: best.Privacy,
		Score: accounting.Mechanism{Kind: accounting.KindGaussian, NoiseMultiplier: o.plan.ScoreSigma, Sensitivity: o.sensitivity,
			Steps: 1, Rho: o.plan.ScoreRho, Protects: "the trial's per-group confusion counts (label × group × predicted class) on the training records"},
		ScoreName: fmt.Sprintf("noisy accuracy less its noisy %s violation (from Gaussian-noised per-group confusion counts)", fairness),
		Scored:    trainer.TuneSearch{}.Scored(), Sampling: o.sampling, Relation: o.relation, Seeded: o.src.Seeded, Seed: o.src.Seed})
	if o.sensitiveOnly {
		// TunedReceipt states whole records; the oracle's trials protect
		// the sensitive attribute alone, and so does the search.
		rc.Scope = accounting.ScopeSensitive
	}
	rc.AddNote(o.relationNote)
	for _, nc := range best.Privacy.NotCovered {
		rc.AddNotCovered(nc.Item, nc.Detail)
	}
	rep.Privacy = rc
	rep.Extra = trainer.Extras{"jagielski": FairExtra(best)}
	rep.SetExtra("tune", o.extra)
	return &rep
}
