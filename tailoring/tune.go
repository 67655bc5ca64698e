package tailoring

// Private hyperparameter search for budget tailoring (Papernot and
// Steinke, "Hyperparameter Tuning with Rényi Differential Privacy", ICLR
// 2022, Theorem 2), as trainer.Tune does for the SGD algorithms: a random
// number K of complete private fits, each with settings drawn at random
// from a small space and scored with noise on the TRAINING records, the
// best one published, the whole search charged in one RDP receipt.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/fairdp/fairdp/atomicfile"
	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/linear"
	"github.com/fairdp/fairdp/trainer"
)

// TuneOptions configure Tune. Zero values take the defaults.
type TuneOptions struct {
	// Epsilon is the whole search's ε at the run's δ. 0: the ε that the
	// Config's one ρ converts to (accounting.ZCDPToEpsilon), so that a
	// tuned run spends what a plain run at that ρ states.
	Epsilon float64
	// MeanTrials, Eta and ScoreShare are trainer.TuneOptions' (E[K], 0:
	// 10; η of K's law, 0: logarithmic; the score's share of a trial's RDP,
	// 0: 0.1).
	MeanTrials, Eta, ScoreShare float64
	// Space is the search space; nil: DefaultTuneSpace of the Config.
	Space *TuneSpace
	// Log receives the progress lines (nil: none).
	Log io.Writer
}

// TuneSpace is what a trial draws its settings from, uniformly and
// independently of the data: stage 1's share τ/ρ (empty for DPNoSE, which
// has no stage 1: the Config's is kept) and the distance stage 2 may
// travel, its Movement LR·T; the number of iterations T is the Config's
// (Steps) and a trial's step size is its movement divided by T.
type TuneSpace struct {
	TauShare []float64 `json:"tau_share,omitempty"`
	Movement []float64 `json:"movement"`
	Steps    int       `json:"steps"`
}

// tuneMovementScales are the default space's movements as multiples of
// the public scale movementScale. Stage 2 is clipped gradient descent,
// whose fixed point is not the loss's minimiser, so how far it travels
// decides the fit, and at a fixed distance the number of iterations
// barely matters (bench/results/tailoring.md, "--tune"): on the paper's
// five synthetic groups (pooled model, group means, box 5, Δ = 2: scale
// 0.5; ρ = 2, seed 1, 3 fits each) the mean over groups of the per-group
// test MSPE was 13.0 at a movement of 0.17, 11.8 at 0.5, 11.0 at 1.5 and
// 12.4 at 5 (the default, 200 steps of 0.1, travels 20: 12.4), whether in
// 50 or 200 steps; on Parkinsons (two groups, box 60: scale 15) it was
// 683 at 5, 338 at 15, 96 at 45 and 97 at 150. The best distance was 3 to
// 10 times the scale on both.
var tuneMovementScales = []float64{1.0 / 3, 1, 3, 10}

// tuneTauScales are stage 1's shares as multiples of the Config's (the
// largest capped below 1), the paper's knob between a better placed and a
// larger stage-2 budget.
var tuneTauScales = []float64{0.5, 1, 2}

// movementScale is the distance Box/(gradient bound) that stage 2 must
// travel to cross the box [−Box, Box] in one coordinate at full speed: a
// step moves β by at most LR × the clipped gradient's bound, Δ per group
// term, K·Δ for a pooled model whose Lagrangian sums K group means, Δ for
// a per-group block or a record-weighted sum (GroupSums). It reads public
// settings only.
func movementScale(o Options, k int) float64 {
	bound := o.GradClip
	if o.Model == Pooled && o.Objective == GroupMeans {
		bound *= float64(k)
	}
	return o.Box / bound
}

// DefaultTuneSpace is the search space of a fit of method m with stage 2
// variant v, with o the run's options (defaults filled in) on k groups:
// movements tuneMovementScales × movementScale and t's own (LR × Steps),
// at t's Steps, and for DPSE stage 1's share scaled by tuneTauScales. The
// OLS variant has no stage-2 iterations: its one movement is t's. It
// reads the settings only, never the data.
func DefaultTuneSpace(t Config, o Options, m Method, v Variant, k int) TuneSpace {
	own := t.LR * float64(t.Steps)
	s := TuneSpace{Movement: []float64{own}, Steps: t.Steps}
	if v == GD {
		s.Movement = nil
		for _, f := range tuneMovementScales {
			s.Movement = append(s.Movement, f*movementScale(o, k))
		}
		if !slices.Contains(s.Movement, own) {
			s.Movement = append(s.Movement, own)
		}
	}
	if m == DPSE {
		for _, f := range tuneTauScales {
			s.TauShare = append(s.TauShare, math.Min(f*t.TauShare, (1+t.TauShare)/2))
		}
	}
	return s
}

func (s TuneSpace) check(m Method) error {
	var errs trainer.FieldErrors
	if len(s.Movement) == 0 || s.Steps < 1 || (m == DPSE) != (len(s.TauShare) > 0) {
		errs.Add("Tune.Space", "needs movements, a number of iterations ≥ 1, and stage-1 shares for DPSE only (DPNoSE has no stage 1)")
	}
	for _, v := range s.Movement {
		if !(v > 0) || math.IsInf(v, 1) {
			errs.Add("Tune.Space.Movement", "%v: want finite numbers > 0", v)
		}
	}
	for _, v := range s.TauShare {
		if !(v > 0 && v < 1) {
			errs.Add("Tune.Space.TauShare", "%v: want shares in (0, 1)", v)
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// draw is one trial's setting, drawn uniformly with r: the movement's
// index first, then stage 1's share's.
func (s TuneSpace) draw(r interface{ IntN(int) int }) TuneChoice {
	m := s.Movement[r.IntN(len(s.Movement))]
	// A short decimal, so that the chosen --lr prints as what its fit ran
	// (trainer.ShortDecimal).
	c := TuneChoice{Movement: m, LR: trainer.ShortDecimal(m / float64(s.Steps)), Steps: s.Steps}
	if len(s.TauShare) > 0 {
		c.TauShare = s.TauShare[r.IntN(len(s.TauShare))]
	}
	return c
}

// TuneChoice is one trial's setting.
type TuneChoice struct {
	TauShare float64 `json:"tau_share,omitempty"` // 0 for DPNoSE: the Config's
	Movement float64 `json:"movement"`
	LR       float64 `json:"lr"` // Movement / Steps
	Steps    int     `json:"steps"`
	// Rho is the trial's zCDP budget ρ_t, set by the plan.
	Rho float64 `json:"rho"`
}

// TuneResult is a tuned report's extra.tune: how the search ran and what it
// chose, nothing of the trials that were not chosen (the analysis covers
// publishing the best trial alone).
type TuneResult struct {
	Trials     int     `json:"trials"` // K, drawn independently of the data
	MeanTrials float64 `json:"mean_trials"`
	Eta        float64 `json:"eta"`
	Gamma      float64 `json:"gamma"`
	// Epsilon is the target the search was calibrated to (the receipt
	// states what it spends, at most this); TrialEpsilon what one trial
	// alone spends, score included.
	Epsilon      float64 `json:"target_epsilon"`
	TrialEpsilon float64 `json:"trial_epsilon"`
	// Score says what scored a trial (lower wins); ScoreSensitivity is the
	// L2 sensitivity of the released vector of group statistics and
	// ScoreNoise the standard deviation of the Gaussian noise on each.
	Score            string     `json:"score"`
	ScoreSensitivity float64    `json:"score_sensitivity"`
	ScoreNoise       float64    `json:"score_noise_std"`
	Chosen           TuneChoice `json:"chosen"`
	// ChosenScore is the chosen trial's noisy score (part of what the
	// analysis lets the search publish).
	ChosenScore float64   `json:"chosen_noisy_score"`
	Space       TuneSpace `json:"space"`
}

// TuneResultOf is a tuned tailoring report's extra.tune (nil for others).
func TuneResultOf(rep *trainer.Report) *TuneResult {
	if r, ok := trainer.ExtraOf[*TuneResult](rep, "tune"); ok {
		return r
	}
	if r, ok := trainer.ExtraOf[TuneResult](rep, "tune"); ok {
		return &r
	}
	return nil
}

// PlanTune calibrates a search of fits to target ε at δ under law (Theorem
// 2 of Papernot and Steinke 2022, through accounting.PlanTuning): the
// plan's one Noise is every trial's zCDP budget ρ_t and its ScoreSigma the
// noise multiplier of a trial's score. A fit is ρ_t-zCDP, i.e. (α, αρ_t)-
// RDP at every order α > 1 (Bun and Steinke 2016, Definition 1.1), whatever
// its settings: the trials are one kind.
func PlanTune(law accounting.TruncatedNegativeBinomial, delta, target, scoreShare float64) (accounting.TuningPlan, error) {
	return accounting.PlanTuning(1, fitCalibration, law, delta, target, scoreShare)
}

// fitCalibration is the largest zCDP budget ρ whose RDP curve αρ converts
// (accounting.EpsilonFromRDP, at orders) to at most tau at δ, found by
// bisection: the conversion grows with ρ.
func fitCalibration(_ int, tau, delta float64, orders []float64) (float64, []float64, error) {
	curve := func(rho float64) []float64 {
		c := make([]float64, len(orders))
		for j, a := range orders {
			c[j] = a * rho
		}
		return c
	}
	fits := func(rho float64) (bool, error) {
		eps, _, err := accounting.EpsilonFromRDP(orders, curve(rho), delta)
		return eps <= tau, err
	}
	lo, hi := 1e-12, 1.0
	if ok, err := fits(lo); err != nil || !ok {
		return 0, nil, fmt.Errorf("tailoring: a per-fit ε of %v at δ = %v buys no zCDP budget (%v)", tau, delta, err)
	}
	for {
		ok, err := fits(hi)
		if err != nil {
			return 0, nil, err
		}
		if !ok {
			break
		}
		lo, hi = hi, 2*hi
	}
	for hi/lo > 1+1e-12 {
		mid := math.Sqrt(lo * hi)
		ok, err := fits(mid)
		if err != nil {
			return 0, nil, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, curve(lo), nil
}

// scoreStatistic is what one record contributes to its group's score
// statistic, and its bound C (the statistic's sensitivity): its clipped
// squared error min(r², LossClip) for regression, its 0/1 error for
// classification (the reported metric; the error count is n_k minus the
// correct count, n_k public).
func scoreStatistic(o Options) (name string, sensitivity float64) {
	if o.Loss == linear.Logistic {
		return "misclassified records", 1
	}
	return fmt.Sprintf("squared errors clipped at %.4g", o.LossClip), o.LossClip
}

// groupStatistics are each group's score statistic on d for fit res: the
// sum over its records of the clipped squared error, or its count of
// misclassified records.
func groupStatistics(res *Result, d *Data, o Options) ([]float64, error) {
	pred, err := res.Predict(d)
	if err != nil {
		return nil, err
	}
	sums := make([]float64, d.K())
	for i, g := range d.Groups {
		if o.Loss == linear.Logistic {
			if (pred[i] >= 0) != (d.Y[i] == 1) {
				sums[g]++
			}
			continue
		}
		r := d.Y[i] - pred[i]
		sums[g] += math.Min(r*r, o.LossClip)
	}
	return sums, nil
}

// noisyScore releases each group's statistic with Gaussian noise of
// standard deviation std (ScoreSigma × the sensitivity) and scores the
// trial by the objective its stage 2 minimises, evaluated on the noisy
// statistics: h = Σ_k ℓ̂_k + G·max(0, max_k ℓ̂_k − η), ℓ̂_k a group's
// noisy mean (Objective GroupMeans) or noisy sum (GroupSums); lower wins.
// Why not the overall loss: tailoring exists for each group's error, and
// with GroupMeans (the default) its fits weigh every group equally, so the
// search does too; the bounded-group-loss term (regression only: for
// classification η bounds the logistic loss, not the error counted here)
// makes the score prefer the fits that meet the constraint. The released
// vector has L2 sensitivity C: a record added or removed is in one group
// and changes that group's sum by at most C (the groups' sizes are public).
func noisyScore(r interface{ NormFloat64() float64 }, stats []float64, d *Data, o Options, std float64) float64 {
	h, worst := 0.0, math.Inf(-1)
	for k, v := range stats {
		l := v + std*r.NormFloat64()
		if o.Objective == GroupMeans {
			l /= float64(d.Sizes[k])
		}
		h += l
		worst = math.Max(worst, l)
	}
	if o.Constraint.On() && o.Loss == linear.Squared {
		h += o.Constraint.G * math.Max(0, worst-o.Constraint.Eta)
	}
	return h
}

// Tune runs budget tailoring (cfg's method, DPSE or DPNoSE, at one ρ and
// one trial) by private random search: K fits drawn from a truncated
// negative binomial law with E[K] = opts.MeanTrials, each at the zCDP
// budget ρ_t the plan (PlanTune) gives so that the whole search spends at
// most opts.Epsilon at the run's δ, with a setting drawn from the space,
// scored by noisyScore on the training records, the best published. The
// report is the chosen fit's (its per-group test metrics, one fit, no
// Monte Carlo), its config the chosen setting (repeating it refits that
// setting once, not the search), extra.tune the search's TuneResult and
// the receipt the search's: Theorem 2 in RDP converted by Balle et al.
// 2020. With cfg.Out set it writes report.json there.
func Tune(ctx context.Context, cfg trainer.Config, opts TuneOptions) (*trainer.Report, error) {
	t := ConfigOf(cfg)
	var errs trainer.FieldErrors
	if len(t.Rho) > 1 {
		errs = append(errs, trainer.FieldError{Field: "Tailoring.Rho", Msg: "lists several ρ: a search is calibrated to one budget, and a comparison of ρ values cannot be tuned"})
	}
	if t.Trials != 1 {
		errs = append(errs, trainer.FieldError{Field: "Tailoring.Trials", Msg: fmt.Sprintf("is %d: a search publishes one fit, so it needs Trials 1 "+
			"(a Monte Carlo summary of several fits would release them all)", t.Trials)})
	}
	if !(opts.Epsilon >= 0) || math.IsInf(opts.Epsilon, 1) {
		errs = append(errs, trainer.FieldError{Field: "Privacy.Epsilon", Msg: fmt.Sprintf("must be finite to tune (got %v): the search is calibrated to it", opts.Epsilon)})
	}
	if len(errs) > 0 {
		return nil, errs
	}
	search, err := trainer.TuneOptions{MeanTrials: opts.MeanTrials, Eta: opts.Eta, ScoreShare: opts.ScoreShare}.WithDefaults()
	if err != nil {
		return nil, err
	}
	rep, err := Prepare(cfg)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	ex := Extra(rep)
	method, train := ex.Methods[0], ex.Data[0]
	target := opts.Epsilon
	if target == 0 {
		if target, err = accounting.ZCDPToEpsilon(t.Rho[0], ex.Delta); err != nil {
			return nil, err
		}
	}
	// The fits' own defaults (the loss clip among them) are the space's
	// and the score's.
	base := ex.Options
	base.Rho = t.Rho[0]
	if base, err = base.withDefaults(); err != nil {
		return nil, err
	}
	space := DefaultTuneSpace(t, base, method, ex.Variant, train.K())
	if opts.Space != nil {
		space = *opts.Space
	}
	if err := space.check(method); err != nil {
		return nil, err
	}
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	// Prepare set the run's δ and checked it against the training records.
	srch, err := trainer.NewSearch[tuneTrial](trainer.SearchOptions{Source: ex.Source, Delta: ex.Delta, Records: len(train.Y),
		AllowLargeDelta: cfg.Privacy.AllowLargeDelta, MeanTrials: search.MeanTrials, Eta: search.Eta, Log: log})
	if err != nil {
		return nil, err
	}
	plan, err := PlanTune(srch.Law, ex.Delta, target, search.ScoreShare)
	if err != nil {
		return nil, trainer.TuningBudgetError(err, target, search.MeanTrials)
	}
	rhoT := plan.Noise[0]
	base.Rho = rhoT
	scoreName, sens := scoreStatistic(base)
	scoreStd := plan.ScoreSigma * sens
	fmt.Fprintf(log, "tune: %d trials (K drawn with E[K] = %g), each one %s fit at ρ = %.4g scored on the %d training records; "+
		"the whole search spends ε = %.4g at δ = %.3g, charged before the first trial\n",
		srch.K, search.MeanTrials, method, rhoT, len(train.Y), plan.Epsilon, ex.Delta)
	// The runner keeps the highest score: a trial is offered at minus its
	// noisy objective (exactly: negation is exact), a failed fit at −∞.
	err = srch.Run(ctx, trainer.SearchProgress{Spent: plan.Epsilon, Target: target}, func(i int) (tuneTrial, float64, error) {
		c := space.draw(srch.Choose)
		c.Rho = rhoT
		o := base
		o.Method, o.LR, o.Steps = method, c.LR, c.Steps
		if c.TauShare > 0 {
			o.StageOneShare = c.TauShare
		}
		// Every trial draws from its own stream (see trialLabel): trials
		// of one search share ρ_t, so the label names the trial.
		res, err := ex.Variant.Fit(ex.Source, fmt.Sprintf("tune trial %d", i), train, o)
		switch {
		case errors.Is(err, linear.ErrNotPositiveDefinite):
			// A failed fit (a released singular XᵀX) loses, not counted:
			// how many unchosen trials failed is not the chosen trial's,
			// and the analysis publishes that one only.
			return tuneTrial{}, math.Inf(-1), nil
		case err != nil:
			return tuneTrial{}, 0, err
		}
		if spent := res.Accountant.Rho(); !(spent <= rhoT*(1+1e-12)) {
			return tuneTrial{}, 0, fmt.Errorf("spent ρ = %v, more than the plan's %v", spent, rhoT)
		}
		stats, err := groupStatistics(res, train, o)
		if err != nil {
			return tuneTrial{}, 0, err
		}
		score := noisyScore(srch.ScoreNoise, stats, train, o, scoreStd)
		return tuneTrial{res: res, choice: c, opts: o, score: score}, -score, nil
	})
	if err != nil {
		return nil, err
	}
	best, _ := srch.Best()
	if best.res == nil {
		return nil, fmt.Errorf("tailoring: all %d trials of the search failed (the noisy XᵀX was never positive definite: raise ρ or the ridge)", srch.K)
	}
	ts := srch.Summary(plan.TrialEpsilon, len(train.Y), scoreStd)
	res := TuneResult{Trials: ts.Trials, MeanTrials: ts.MeanTrials, Eta: ts.Eta, Gamma: ts.Gamma, Epsilon: target,
		TrialEpsilon: ts.TrialEpsilon, Score: scoreLabel(best.opts, scoreName), ScoreSensitivity: sens, ScoreNoise: ts.ScoreNoise,
		Chosen: best.choice, ChosenScore: best.score, Space: space}
	if err := tunedReport(rep, ex, best.res, best.opts, plan, res); err != nil {
		return nil, err
	}
	rep.Seconds = time.Since(start).Seconds()
	if cfg.Out == "" {
		return rep, nil
	}
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return nil, trainer.FieldErrors{{Field: "Out", Msg: fmt.Sprintf("%s: %v", cfg.Out, err)}}
	}
	return rep, atomicfile.WriteJSON(filepath.Join(cfg.Out, "report.json"), rep)
}

// tuneTrial is what Tune keeps of a trial: its fit, setting and options,
// and its noisy score (lower is better).
type tuneTrial struct {
	res    *Result
	choice TuneChoice
	opts   Options
	score  float64
}

// scoreLabel says what noisyScore computed with o, for the report.
func scoreLabel(o Options, stat string) string {
	l := "Σ_k of each group's noisy mean of its " + stat
	if o.Objective == GroupSums {
		l = "Σ_k of each group's noisy sum of its " + stat
	}
	if o.Constraint.On() && o.Loss == linear.Squared {
		l += fmt.Sprintf(", plus G·max(0, max_k ℓ̂_k − η) with G = %g, η = %g", o.Constraint.G, o.Constraint.Eta)
	}
	return l + " (stage 2's objective; lower wins)"
}

// tunedReport fills the prepared report rep with the chosen fit best (run
// with o) and the search's receipt: its config becomes the chosen setting
// at ρ_t with one trial, its test metrics the fit's.
func tunedReport(rep *trainer.Report, ex *ReportExtra, best *Result, o Options, plan accounting.TuningPlan, res TuneResult) error {
	train, test := ex.Data[0], ex.Data[1]
	sum, err := summarise([]outcome{fitOutcome(best, nil, train, test, o.Loss, ex.Delta, ex.Source)}, train, test, o, ex.Variant)
	if err != nil {
		return err
	}
	t := ConfigOf(rep.Config)
	t.Rho, t.Trials, t.LR, t.Steps, t.TauShare = []float64{o.Rho}, 1, o.LR, o.Steps, o.StageOneShare
	rep.Config = WithConfig(rep.Config, t)
	ex.Options, ex.Summaries = o, [][]*Summary{{sum}}
	reportSummary(rep, ex, sum)
	scoreName, sens := scoreStatistic(o)
	scored := fmt.Sprintf("the %d training records it was fitted on", len(train.Y))
	rc := trainer.TunedReceipt(trainer.TunedReceiptOptions{Trials: res.Trials, Law: plan.Law, MeanTrials: res.MeanTrials,
		TrialNoise: "ρ calibrated", TrialEpsilon: plan.TrialEpsilon, Epsilon: plan.Epsilon, Order: plan.Order, Delta: ex.Delta,
		Chosen: sum.Receipt,
		Score: accounting.Mechanism{Kind: accounting.KindGaussian, NoiseMultiplier: plan.ScoreSigma, Sensitivity: sens, Steps: 1, Rho: plan.ScoreRho,
			Protects: "trial score: each group's " + scoreName + " on " + scored},
		ScoreName: res.Score, Scored: scored, Sampling: accounting.SamplingNone, Seeded: ex.Source.Seeded, Seed: ex.Source.Seed})
	rc.AddNote(fmt.Sprintf("neighbouring data sets differ by one record added or removed (the sensitivities of the clipped sums), "+
		"the group sizes n_k public; a fit at ρ_t = %.6g is ρ_t-zCDP, i.e. RDP αρ_t at every order α, "+
		"and a trial's score adds α/(2·%.4g²) (Gaussian noise of %.4g × the sensitivity %g on every group's statistic; "+
		"a record is in one group, so the vector's L2 sensitivity is that of one sum)", o.Rho, plan.ScoreSigma, plan.ScoreSigma, sens))
	declareRun(&rc, rep.Config, len(train.Y))
	rep.Privacy = rc
	// The budget is the search's ε; it is recorded with the configuration
	// the report repeats, as a plain run records the ε its ρ converts to.
	rep.Config.Privacy.Epsilon = plan.Epsilon
	rep.SetExtra("tune", &res)
	return nil
}
