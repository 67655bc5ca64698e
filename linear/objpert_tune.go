package linear

// Private tuning of objective perturbation (`fairdp train --algo objpert
// --tune`): random search in the manner of Papernot and Steinke,
// "Hyperparameter Tuning with Rényi Differential Privacy" (ICLR 2022), as
// trainer.Tune runs it for the DP-SGD family. A trial is one complete
// objective-perturbation fit with its regulariser Λ (and, when asked, its
// mechanism and weight penalty) drawn uniformly from a grid that depends
// on public facts only (n, d, ε, δ, the row bound and the search's plan;
// objPertTuneSpace, objPertFallback), its own noise set by the search's plan
// (accounting.PlanTuning), and its accuracy released with Gaussian noise;
// the trial with the best noisy score is published, and the receipt charges
// the whole search by Theorem 2.
//
// A trial's Rényi curve, for data sets differing in one record's value
// (the relation objective perturbation's guarantee is for):
//   - the pure mechanism at ε_t, ε_t-DP in total (its Jacobian term charged
//     once, CalibrationTight): min(ε_t, α ε_t²/2) (Bun and Steinke 2016,
//     Proposition 3.3: ε-DP is ε²/2-zCDP; no Rényi divergence exceeds the
//     max divergence; accounting.PureRDP);
//   - the Gaussian mechanism at σ: ObjPertGaussianRDP (objpert_rdp.go).
// The score is a count of correct predictions on training records:
// replacing one record changes it by at most 1 for the released model.

import (
	"context"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"time"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/loaders"
	"github.com/fairdp/fairdp/trainer"
)

// ObjPertTuneFactors are the default search's regularisers, as multiples
// of the auto rule's K for the space's mechanism (DefaultL2Factor, 8, for
// the pure one; DefaultProfileL2Factor, 6, for the Gaussian one): the
// trials' Λ is K times the smallest Algorithm 2 allows at the run's ε and
// the trials' n (ObjPertMinL2), so the default run's own Λ is in the space.
// A trial runs at about 0.6 of the run's ε (Theorem 2's overhead; 0.45 for
// pure trials, whose ε-DP curve composes worse), so its best Λ is larger
// than the default's; measured (3 seeds, ε ∈ {0.5, 1}; bench/results/
// tabular.md, "`--algo objpert --tune` with a data-aware space"), K_auto ×
// {1, 2, 4} was within .005 of the default on Adult and Credit, and
// K_auto × {1, 4, 16} (the range before) .001–.004 worse than it there and
// .006 on the 3,750-record table at ε = 0.5.
var ObjPertTuneFactors = []float64{1, 2, 4}

// ObjPertTuneWeightFactors are the weight-only penalties
// (ObjPertOptions.WeightL2) the default search adds, as multiples of the
// same ObjPertMinL2, only where objPertFallback says a trial's noise may
// drown the signal and the score can see it: none, and one large enough
// that the model falls back to predicting the majority class. On the 15,000 × 100 table with 10 %
// positives at ε = 0.3 (about a trial's budget at ε = 0.5; 3 seeds,
// Gaussian mechanism) every Λ from K = 96 to 3,072 gave .120–.124 against
// the majority's .0990, while a weight penalty of 2.5Λ or more at K = 96
// gave exactly the majority class (.1004 / .0982 / .0984 per split).
// Elsewhere the default search has no weight penalty: with it half the
// space predicted one class, and a search drawing one trial (probability
// 0.27 under the default law) returned the majority class on Adult, Credit
// and the 3,750-record table, where the default is .03–.09 better.
var ObjPertTuneWeightFactors = []float64{0, 384}

// ObjPertFallbackBudget is the largest ε_t·n/B² (a trial's ε, the
// trials' n, the row bound B) at which the default search includes the
// majority-class fallback (ObjPertTuneWeightFactors). Objective
// perturbation's minimiser moves by about b/(nΛ) with Λ ∝ 1/(nε), so the
// noise's share of a logit on a row of norm B grows as B²/(εn) against a
// signal only the private data fix: ε·n/B² is the public half of the
// signal-to-noise ratio (the budget per unit of squared row norm; B² is the
// number of source columns with the default row bound, so Adult's one-hot
// blocks count as its 12 columns, not 102 features). Measured on the
// 15,000 × 100 table with 10 % positives (B² = 100), the one table where
// the default loses to the majority class (.0990), 3 seeds: default .1071
// at ε = 0.5 (ε·n/B² = 75), .1017 at 0.6 (90), .0978 at 0.7 (105), .0955
// at 0.8 (120). The crossing is near 100; a trial's ε_t is about 0.6 ε,
// so at ε = 1 (ε_t·n/B² = 92) the trials are on the losing side though
// the default is not, and a search without the fallback returned .1040
// against .1001 with it (seeds 1–3).
const ObjPertFallbackBudget = 100

// ObjPertFallbackScoreNoise is the largest standard deviation of a
// trial's noisy accuracy at which the default search includes the
// fallback. Where the fallback matters the models are within about .01 of
// the majority class (the wide table at ε = 1: default .0935 against
// .0990), so the score must tell .01 apart at two standard deviations;
// on the 3,750-record table at ε = 0.5 (ε_t·n/B² = 55, noise .014) a
// search with the fallback returned .2421 against .2173 without it.
const ObjPertFallbackScoreNoise = 0.005

// ObjPertTuneSpace is the grid an objpert trial draws its settings from,
// uniformly and independently of the data.
type ObjPertTuneSpace struct {
	// L2Factors are the trials' Λ as multiples K of ObjPertMinL2 at the
	// run's ε and the records a trial trains on (nil: ObjPertTuneFactors
	// times the auto rule's K for the mechanism, both mechanisms' when
	// the space has two).
	L2Factors []float64 `json:"l2_factors"`
	// WeightFactors are the trials' weight-only penalties, as multiples of
	// the same (nil: none, or ObjPertTuneWeightFactors where
	// objPertFallback says so; 0: none). They cost no privacy: a convex
	// penalty beside Λ only lowers the Jacobian term.
	WeightFactors []float64 `json:"weight_factors"`
	// Mechanisms are MechanismPure and MechanismGaussian, one or both
	// (nil: the one the settings ask for; MechanismAuto's is
	// ChooseObjPert's at the run's ε and δ).
	Mechanisms []string `json:"mechanisms"`
}

// ObjPertTuneOptions configure TuneObjPert.
type ObjPertTuneOptions struct {
	// Search is the search's law and scoring (MeanTrials, Eta, ValidFrac,
	// ScoreShare; zero values take trainer's defaults). Its Space is the
	// DP-SGD family's and must be nil: objpert's is Space below.
	Search trainer.TuneOptions
	Space  *ObjPertTuneSpace
	// Log receives the progress lines (trials done, ε spent); nil: none.
	Log io.Writer
}

// ObjPertTuneChoice is one trial's setting: its mechanism, Λ (and the K
// it came from) and its noise, the pure mechanism's ε_t or the Gaussian
// one's σ.
type ObjPertTuneChoice struct {
	Mechanism    string  `json:"mechanism"`
	L2Factor     float64 `json:"l2_factor"`
	L2           float64 `json:"l2"`
	WeightFactor float64 `json:"weight_factor"`
	WeightL2     float64 `json:"weight_l2"`
	// Epsilon is a pure trial's ε_t, NoiseStd a Gaussian trial's σ.
	Epsilon  float64 `json:"epsilon,omitempty"`
	NoiseStd float64 `json:"noise_std,omitempty"`
}

// ObjPertTuneResult is a tuned objpert report's extra.tune: how the search
// ran and what it chose, nothing of the trials not chosen.
type ObjPertTuneResult struct {
	trainer.TuneSearch
	Chosen ObjPertTuneChoice `json:"chosen"`
	// Score is the chosen trial's noisy validation accuracy.
	Score float64          `json:"chosen_noisy_validation_accuracy"`
	Space ObjPertTuneSpace `json:"space"`
	// MechanismChoice is the auto rule's reason, when it picked the
	// space's mechanism.
	MechanismChoice string `json:"mechanism_choice,omitempty"`
	// WeightChoice is objPertFallback's reason, when the default space's
	// weight penalties were chosen by it.
	WeightChoice string `json:"weight_choice,omitempty"`
}

// ObjPertTuneResultOf returns a tuned objpert report's extra.tune (nil
// for other reports).
func ObjPertTuneResultOf(rep *trainer.Report) *ObjPertTuneResult {
	if r, ok := trainer.ExtraOf[ObjPertTuneResult](rep, "tune"); ok {
		return &r
	}
	return nil
}

// objPertKind is one kind of trial: a mechanism, Λ's factor K and the
// weight penalty's.
type objPertKind struct {
	mechanism      string
	factor, weight float64
}

// checkTunableObjPert refuses what the search's analysis does not cover or
// what it would override.
func checkTunableObjPert(cfg trainer.Config, p privacy, o ObjPertConfig, opts ObjPertTuneOptions) error {
	var errs trainer.FieldErrors
	if !(p.Epsilon > 0) || math.IsInf(p.Epsilon, 1) {
		errs.Add("Privacy.Epsilon", "must be finite to tune (got %v): the search is calibrated to it", p.Epsilon)
	}
	if o.L2 != 0 || o.WeightL2 != 0 {
		errs.Add("ObjPert.L2", "is what the search chooses: leave it and the weight penalty 0 (got Λ = %v, weight penalty %v)", o.L2, o.WeightL2)
	}
	if o.Calibration != "" && o.Calibration != CalibrationTight {
		errs.Add("ObjPert.Calibration", "is set by the search (pure trials charge their Jacobian term once, Gaussian ones follow their Rényi "+
			"curve): leave it %s (got %q)", CalibrationTight, o.Calibration)
	}
	if len(o.LabelRange) > 0 {
		errs.Add("ObjPert.LabelRange", "is for least squares, which cannot be tuned: the search scores class predictions")
	}
	if opts.Search.Space != nil {
		errs.Add("Tune.Space", "is the DP-SGD family's search space; objpert's is ObjPertTuneOptions.Space")
	}
	if s := opts.Space; s != nil {
		for _, k := range s.L2Factors {
			if !(k > 0) || math.IsInf(k, 1) {
				errs.Add("Tune.Space.L2Factors", "%v: want finite numbers > 0", k)
			}
		}
		for _, k := range s.WeightFactors {
			if !(k >= 0) || math.IsInf(k, 1) {
				errs.Add("Tune.Space.WeightFactors", "%v: want finite numbers ≥ 0", k)
			}
		}
		for _, m := range s.Mechanisms {
			if m != MechanismPure && m != MechanismGaussian {
				errs.Add("Tune.Space.Mechanisms", "%q: want %s or %s", m, MechanismPure, MechanismGaussian)
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// TuneObjPert trains cfg (Algo "objpert", a binary classification table)
// by private random search (Papernot and Steinke 2022): it holds out
// opts.Search.ValidFrac of the training records (none by default), draws
// the number of trials K from a truncated negative binomial law, runs K
// objective-perturbation fits with Λ (and the mechanism, when the space
// has two) drawn from the space and the noise the search's plan sets,
// scores each by its Gaussian-noised count of correct predictions on the
// training records, and returns the report of the best, whose receipt
// charges the whole search at cfg's ε and δ (Theorem 2, converted by
// Balle et al. 2020). With cfg.Out set it writes report.json and
// model.ckpt as RunObjPert does. The report's config is the chosen setting
// at the run's ε: repeating it fits that setting once, not the search.
func TuneObjPert(ctx context.Context, cfg trainer.Config, opts ObjPertTuneOptions) (*trainer.Report, error) {
	p := privacyOf(cfg)
	if err := validateObjPert(cfg, p); err != nil {
		return nil, err
	}
	o := ObjPertConfigOf(cfg)
	if reflect.ValueOf(o).IsZero() {
		o = ObjPertDefaults() // no settings at all: the defaults
	}
	if err := checkTunableObjPert(cfg, p, o, opts); err != nil {
		return nil, err
	}
	search, err := opts.Search.WithDefaults()
	if err != nil {
		return nil, err
	}
	log := opts.Log
	if log == nil || cfg.Quiet {
		log = io.Discard
	}
	start := time.Now()
	src, trainAll, test, prep, splitRec, err := loadObjPertData(cfg)
	if err != nil {
		return nil, err
	}
	if err := checkObjPertData(trainAll, o); err != nil {
		return nil, err
	}
	if trainAll.Targets != nil {
		return nil, fmt.Errorf("data set %s has a regression target: least squares cannot be tuned (the search scores class predictions)", trainAll.Name)
	}
	srch, err := trainer.NewSearch[objPertTrial](trainer.SearchOptions{Source: src, Delta: p.Delta, Records: trainAll.N(),
		AllowLargeDelta: p.AllowLargeDelta, DeltaField: "Privacy.Delta", MeanTrials: search.MeanTrials, Eta: search.Eta, Log: log})
	if err != nil {
		return nil, err
	}
	delta := srch.Delta
	train, valid := trainAll, trainAll
	if search.ValidFrac > 0 {
		if train, valid, err = trainer.TuneSplit(trainAll, search.ValidFrac, src.Derive("tune/split")); err != nil {
			return nil, err
		}
	}
	n := train.N()
	bound := o.RowBound
	if bound == 0 {
		bound = DefaultRowBound(train.Dim, sourceColumns(prep))
	}
	space, reason, err := objPertTuneSpace(opts.Space, o, n, train.Dim, p.Epsilon, delta)
	if err != nil {
		return nil, err
	}
	unit := ObjPertMinL2(p.Epsilon, n, LogisticCurvature)
	// Short decimals (trainer.ShortDecimal), which the plan's curves and
	// the trials use alike: the chosen --l2 prints as what its trial ran.
	l2 := func(k objPertKind) float64 { return trainer.ShortDecimal(k.factor * unit) }
	planSpace := func() ([]objPertKind, accounting.TuningPlan, error) {
		kinds := objPertKinds(space)
		plan, err := accounting.PlanTuning(len(kinds), func(i int, tau, delta float64, orders []float64) (float64, []float64, error) {
			return objPertTrialCurve(kinds[i].mechanism, l2(kinds[i]), n, tau, delta, orders)
		}, srch.Law, delta, p.Epsilon, search.ScoreShare)
		return kinds, plan, trainer.TuningBudgetError(err, p.Epsilon, search.MeanTrials)
	}
	kinds, plan, err := planSpace()
	if err != nil {
		return nil, err
	}
	var weightChoice string
	if opts.Space == nil || len(opts.Space.WeightFactors) == 0 {
		// The fallback's rule reads the score's noise, which the plan
		// sets from public facts: plan without it, then with it if asked.
		var fallback bool
		fallback, weightChoice = objPertFallback(plan.TrialEpsilon, n, bound, plan.ScoreSigma, valid.N())
		if fallback {
			space.WeightFactors = slices.Clone(ObjPertTuneWeightFactors)
			if kinds, plan, err = planSpace(); err != nil {
				return nil, err
			}
		}
	}
	scored := "the same records"
	if search.ValidFrac > 0 {
		scored = fmt.Sprintf("%d held-out training records", valid.N())
	}
	fmt.Fprintf(log, "tune: %d trials (K drawn with E[K] = %g), each trains on %d records and is scored on %s; "+
		"the whole search spends ε = %.4g at δ = %.3g, charged before the first trial\n",
		srch.K, search.MeanTrials, n, scored, plan.Epsilon, delta)
	err = srch.Run(ctx, trainer.SearchProgress{Spent: plan.Epsilon, Target: p.Epsilon}, func(t int) (objPertTrial, float64, error) {
		i := srch.Choose.IntN(len(kinds))
		c := ObjPertTuneChoice{Mechanism: kinds[i].mechanism, L2Factor: kinds[i].factor, L2: l2(kinds[i]),
			WeightFactor: kinds[i].weight, WeightL2: trainer.ShortDecimal(kinds[i].weight * unit)}
		opt := ObjPertOptions{RowBound: bound, L2: c.L2, WeightL2: c.WeightL2, Mechanism: c.Mechanism}
		if c.Mechanism == MechanismPure {
			c.Epsilon, opt.Epsilon, opt.Calibration = plan.Noise[i], plan.Noise[i], CalibrationTight
		} else {
			c.NoiseStd, opt.NoiseStd, opt.Delta, opt.Calibration = plan.Noise[i], plan.Noise[i], delta, CalibrationRDP
		}
		res, err := ObjectivePerturbation(src.Derive(fmt.Sprintf("tune/trial/%d", t)), train.X, n, train.Dim, train.Labels, opt)
		if err != nil {
			return objPertTrial{}, 0, err
		}
		if err := checkObjPertTrial(res, n, plan.Orders, plan.Curves[i]); err != nil {
			return objPertTrial{}, 0, err
		}
		correct := correctPredictions(res, valid, o.ClipAtPredict)
		noisy, err := dpops.ScalarGaussian(srch.ScoreNoise, float64(correct), 1, plan.ScoreSigma)
		if err != nil {
			return objPertTrial{}, 0, err
		}
		return objPertTrial{res, c}, noisy / float64(valid.N()), nil
	})
	if err != nil {
		return nil, err
	}
	best, score := srch.Best()
	ts := srch.Summary(plan.TrialEpsilon, n, plan.ScoreSigma)
	ts.ValidRecords, ts.HeldOut = valid.N(), search.ValidFrac > 0
	res := ObjPertTuneResult{TuneSearch: ts, Chosen: best.choice, Score: score, Space: space, MechanismChoice: reason, WeightChoice: weightChoice}
	return objPertTunedReport(cfg, p, o, best.res, res, plan, delta, trainAll, test, prep, src, splitRec, start)
}

// objPertTrial is what TuneObjPert keeps of a trial: its fit and setting.
type objPertTrial struct {
	res    *ObjPertResult
	choice ObjPertTuneChoice
}

// objPertTuneSpace is the search's space: opts' (nil: the default) with
// its empty parts filled: the mechanism o's (MechanismAuto: ChooseObjPert's
// for n records of d features at the run's ε and δ, with its reason; "":
// pure, as RunObjPert runs it), the factors ObjPertTuneFactors times each
// mechanism's auto K (objPertAutoFactor), and no weight penalty (TuneObjPert
// adds ObjPertTuneWeightFactors where objPertFallback says so).
func objPertTuneSpace(given *ObjPertTuneSpace, o ObjPertConfig, n, d int, eps, delta float64) (ObjPertTuneSpace, string, error) {
	var s ObjPertTuneSpace
	if given != nil {
		s = ObjPertTuneSpace{L2Factors: slices.Clone(given.L2Factors), WeightFactors: slices.Clone(given.WeightFactors),
			Mechanisms: slices.Clone(given.Mechanisms)}
	}
	var reason string
	if len(s.Mechanisms) == 0 {
		switch o.Mechanism {
		case MechanismAuto:
			c, err := ChooseObjPert(ObjPertFacts{N: n, D: d, Epsilon: eps, Delta: delta, Curvature: LogisticCurvature, Calibration: CalibrationTight})
			if err != nil {
				return s, "", err
			}
			s.Mechanisms, reason = []string{c.Mechanism}, c.Reason
		case "":
			s.Mechanisms = []string{MechanismPure}
		default:
			s.Mechanisms = []string{o.Mechanism}
		}
	}
	if len(s.L2Factors) == 0 {
		for _, m := range s.Mechanisms {
			for _, f := range ObjPertTuneFactors {
				if k := f * objPertAutoFactor(m); !slices.Contains(s.L2Factors, k) {
					s.L2Factors = append(s.L2Factors, k)
				}
			}
		}
		slices.Sort(s.L2Factors)
	}
	if len(s.WeightFactors) == 0 {
		s.WeightFactors = []float64{0}
	}
	return s, reason, nil
}

// objPertAutoFactor is the auto rule's K for mechanism m (ChooseObjPert
// under CalibrationTight, the calibration the search's trials run).
func objPertAutoFactor(m string) float64 {
	if m == MechanismGaussian {
		return DefaultProfileL2Factor
	}
	return DefaultL2Factor
}

// objPertKinds lists the space's kinds of trial, mechanism by Λ's factor
// by the weight penalty's.
func objPertKinds(s ObjPertTuneSpace) []objPertKind {
	var kinds []objPertKind
	for _, m := range s.Mechanisms {
		for _, k := range s.L2Factors {
			for _, w := range s.WeightFactors {
				kinds = append(kinds, objPertKind{m, k, w})
			}
		}
	}
	return kinds
}

// objPertFallback says whether the default space includes the
// majority-class fallback (ObjPertTuneWeightFactors), with its reason,
// from public facts only: a trial's ε (trialEps, the search's plan's), the
// trials' n, the row bound and the score's noise (scoreSigma correct
// predictions out of valid, also the plan's). Both must hold:
//   - ε_t·n/bound² ≤ ObjPertFallbackBudget: a trial's noise may drown
//     the signal;
//   - the score's standard deviation in accuracy is at most
//     ObjPertFallbackScoreNoise: otherwise the search cannot tell the
//     fallback from a model slightly better than it, and chooses it in
//     proportion to its half of the space (the 375-record table at ε = 1
//     has ε_t·n/B² = 38 and a score noise of .18).
func objPertFallback(trialEps float64, n int, bound, scoreSigma float64, valid int) (bool, string) {
	budget := trialEps * float64(n) / (bound * bound)
	noise := scoreSigma / float64(valid)
	if budget > ObjPertFallbackBudget {
		return false, fmt.Sprintf("no weight penalty: a trial's ε_t·n/B² = %.4g is above %d, where the noise leaves the signal", budget, ObjPertFallbackBudget)
	}
	if noise > ObjPertFallbackScoreNoise {
		return false, fmt.Sprintf("no weight penalty: a trial's ε_t·n/B² = %.4g is at most %d, but the score's noise (standard deviation "+
			"%.3g in accuracy, above %g) cannot tell the majority class from a model", budget, ObjPertFallbackBudget, noise, ObjPertFallbackScoreNoise)
	}
	return true, fmt.Sprintf("weight penalties %v: a trial's ε_t·n/B² = %.4g is at most %d, where its noise may drown the signal, and the "+
		"score (noise %.3g in accuracy, at most %g) can tell the majority class from a model", ObjPertTuneWeightFactors, budget,
		ObjPertFallbackBudget, noise, ObjPertFallbackScoreNoise)
}

// objPertTrialCurve calibrates a trial of mechanism m with regulariser
// l2 on n records to a per-trial ε tau at δ: its noise (the pure
// mechanism's ε_t = tau; the Gaussian one's σ, RDPObjPertSigma) and its
// Rényi curve at orders (accounting.PureRDP; ObjPertGaussianRDP with
// ε_J = ObjPertJacobianEpsilon(n, l2)). Both grow with tau at every order.
func objPertTrialCurve(m string, l2 float64, n int, tau, delta float64, orders []float64) (float64, []float64, error) {
	if m == MechanismPure {
		return tau, accounting.PureRDP(tau, orders), nil
	}
	epsJ := ObjPertJacobianEpsilon(n, l2, LogisticCurvature)
	sigma, err := RDPObjPertSigma(tau, delta, epsJ, orders)
	if err != nil {
		return 0, nil, err
	}
	return sigma, ObjPertGaussianRDP(sigma, epsJ, orders), nil
}

// checkObjPertTrial holds a trial to its planned curve: the curve of what
// it ran, recomputed from the fit (the pure mechanism's ε charges in its
// receipt; the Gaussian mechanism's σ and the ε_J of the regulariser it
// used on n records), must be at most the planned one at every order (up
// to rounding, 1e-9 relative). A trial that ran anything else is refused
// rather than published.
func checkObjPertTrial(res *ObjPertResult, n int, orders, planned []float64) error {
	rec, err := res.Receipt(nil)
	if err != nil {
		return err
	}
	if !rec.Private() {
		return fmt.Errorf("the trial's receipt is not private")
	}
	var curve []float64
	switch res.Mechanism {
	case MechanismPure:
		eps := 0.0
		for _, m := range rec.Mechanisms {
			if m.Kind != accounting.KindPureDP {
				return fmt.Errorf("the trial released %s (%s), outside the tuning plan", m.Kind, m.Protects)
			}
			eps += m.Epsilon
		}
		curve = accounting.PureRDP(eps, orders)
	case MechanismGaussian:
		if res.Calibration != CalibrationRDP {
			return fmt.Errorf("the trial's Gaussian noise was calibrated by %q, not by its Rényi curve", res.Calibration)
		}
		curve = ObjPertGaussianRDP(res.NoiseStd, ObjPertJacobianEpsilon(n, res.L2+res.ExtraL2, res.Curvature), orders)
	default:
		return fmt.Errorf("the trial ran mechanism %q, outside the tuning plan", res.Mechanism)
	}
	for i, v := range curve {
		if !(v <= planned[i]*(1+1e-9)) {
			return fmt.Errorf("the trial's release costs RDP %.6g at order %v, more than the %.6g the tuning plan charged", v, orders[i], planned[i])
		}
	}
	return nil
}

// correctPredictions is the number of records of d whose label the fitted
// model predicts (logit Weights·x + Intercept > 0 for class 1), each row
// clipped to the row bound first when clip is set, as the released model
// scores it (ClipAtPredict).
func correctPredictions(res *ObjPertResult, d *loaders.Dataset, clip bool) int {
	correct := 0
	for i := range d.N() {
		x := d.X[i*d.Dim : (i+1)*d.Dim]
		logit, norm := res.Intercept, 0.0
		for j, v := range x {
			logit += res.Weights[j] * v
			norm += v * v
		}
		if norm = math.Sqrt(norm); clip && norm > res.RowBound {
			logit = res.Intercept + (logit-res.Intercept)*res.RowBound/norm
		}
		pred := 0
		if logit > 0 {
			pred = 1
		}
		if pred == d.Labels[i] {
			correct++
		}
	}
	return correct
}

// objPertTunedReport is the chosen trial's report (as RunObjPert writes
// one, its config the chosen setting at the run's ε) with the search's
// receipt (trainer.SearchReceipt) and extra.tune, scored on the test
// split and, with cfg.Out set, written with model.ckpt.
func objPertTunedReport(cfg trainer.Config, p privacy, o ObjPertConfig, best *ObjPertResult, res ObjPertTuneResult, plan accounting.TuningPlan,
	delta float64, trainAll, test *loaders.Dataset, prep []byte, src dpops.Source, split *trainer.SplitRecord, start time.Time) (*trainer.Report, error) {
	chosen := o
	chosen.Mechanism, chosen.Calibration = best.Mechanism, CalibrationTight
	rcfg := cfg
	rcfg.ReportTrainStats = false // a search's report carries no training statistics
	rep, _, err := objPertReport(rcfg, p, chosen, best, "", trainAll.Name, trainAll.N(), prep)
	if err != nil {
		return nil, err
	}
	// The chosen setting reruns at the run's ε, with its δ when Gaussian.
	rep.Config.Privacy.Delta = 0
	if best.Mechanism == MechanismGaussian {
		rep.Config.Privacy.Delta = delta
	}
	m, err := scoreLogistic(rep, best, o.ClipAtPredict, trainAll, test, false)
	if err != nil {
		return nil, err
	}
	noise := "ε_t"
	if best.Mechanism == MechanismGaussian {
		noise = "σ"
	}
	scored := res.Scored()
	trial := rep.Privacy
	rc := trainer.TunedReceipt(trainer.TunedReceiptOptions{Epsilon: plan.Epsilon, Order: plan.Order, Delta: delta, Law: plan.Law,
		Trials: res.Trials, MeanTrials: res.MeanTrials, TrialEpsilon: res.TrialEpsilon, TrialNoise: noise + " calibrated",
		Chosen: trial,
		Score: accounting.Mechanism{Kind: accounting.KindGaussian, NoiseMultiplier: plan.ScoreSigma, Sensitivity: 1, Steps: 1,
			Rho: plan.ScoreRho, Protects: "the trial's count of correct predictions on " + scored},
		ScoreName: "Gaussian-noised accuracy", Scored: scored, Sampling: accounting.SamplingNone, Relation: accounting.RelationReplaceOne,
		Seeded: src.Seeded, Seed: src.Seed})
	rc.AddNote("neighbouring data sets differ in one record's value (replace-one), the relation objective perturbation's " +
		"guarantee is for; every trial's Rényi curve and the score's sensitivity 1 are stated for it")
	trainer.DeclareNotCovered(&rc, trainAll.N(), prep, trainer.Config{})
	res.DeclareSplit(&rc)
	for _, n := range trial.NotCovered {
		rc.AddNotCovered(n.Item, n.Detail)
	}
	rep.Privacy = rc
	if w := trainer.ScoreNoiseWarning(plan.ScoreSigma, res.ValidRecords); w != "" {
		rep.Warnings = append(rep.Warnings, w)
	}
	rep.SetExtra("tune", res)
	rep.Seconds = time.Since(start).Seconds() // the whole search's
	if cfg.Out != "" {
		if err := writeObjPertOutputs(cfg.Out, rep, m, prep, src.String(), split); err != nil {
			return nil, err
		}
	}
	return rep, nil
}
