package trainer

// Private tuning of DP-FERMI (--algo fermi). A DP-FERMI trial releases
// more than the DP-SGD family's: besides one Poisson-subsampled Gaussian
// per step (at rate batch/n under --scope all) it releases the group
// counts behind p̂_S once, with Gaussian noise of multiplier σ·sqrt(T) when
// σ is given, as a trial's is (package fermi). Its curve, and so the
// plan's calibration, includes that release. λ is searched too, and
// because a larger λ buys fairness with accuracy, a trial is scored by
// its noisy accuracy less its noisy violation of the run's fairness
// notion: a score of accuracy alone would always prefer the smallest λ.
// The weight is 1 (a point of violation costs a point of accuracy), so a
// model that predicts one class, whose violation is 0 and accuracy the
// majority's, outscores a model that beats the majority class by less
// than its own violation: on such data the search may return it.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/loaders"
)

// checkTunableFermi adds to errs what a DP-FERMI search cannot cover.
// The sensitive scope protects only the sensitive attribute and charges
// its steps at rate 1 (the batch is not hidden); the search's score and
// its receipt are stated for adding or removing a whole record, so the two
// would not compose into one guarantee. The paper's calibration is a
// closed form for one run's ε, which the search replaces by its own σ.
func checkTunableFermi(cfg Config, errs *FieldErrors) {
	if cfg.Fair.Scope != accounting.ScopeAll {
		errs.Add("Fair.Scope", "must be %s to tune DP-FERMI (got %q): the search's score and receipt protect whole records, "+
			"which the sensitive scope's steps (charged at rate 1 for the sensitive attribute alone) do not", accounting.ScopeAll, cfg.Fair.Scope)
	}
	if cfg.Fair.Calibration == "paper" {
		errs.Add("Fair.Calibration", "paper cannot be tuned: the search calibrates every trial's σ itself (leave it accountant)")
	}
}

// fermiLambdas is the λ of a DP-FERMI search around lambda (the caller's,
// or the data-aware default): half, the same and twice. A factor of two
// each way spans the data-aware rule's steps (0.5, 2, 10) only in part, on
// purpose: K is often small (P[K = 1] ≈ 0.27 for the default law), so
// every value must be a reasonable run near the default. λ = 0 (no
// fairness asked) stays 0.
func fermiLambdas(lambda float64) []float64 {
	if lambda == 0 {
		return []float64{0}
	}
	return []float64{ShortDecimal(lambda / 2), lambda, ShortDecimal(2 * lambda)}
}

// withFermiLambdas fills space's λ for a DP-FERMI search that has none:
// fermiLambdas of cfg's λ for the default space (searched), cfg's λ alone
// for a space the caller gave without one (kept).
func withFermiLambdas(space TuneSpace, cfg Config, searched bool) TuneSpace {
	if cfg.Algo != algoFermi || len(space.Lambda) > 0 {
		return space
	}
	space.Lambda = []float64{cfg.Fair.Lambda}
	if searched {
		space.Lambda = fermiLambdas(cfg.Fair.Lambda)
	}
	return space
}

// checkLambdaSpace refuses λ for an algorithm without one (it would be
// reported as chosen and never used) and λ values DP-FERMI refuses.
func checkLambdaSpace(space TuneSpace, cfg Config) error {
	var errs FieldErrors
	if len(space.Lambda) > 0 && cfg.Algo != algoFermi {
		errs.Add("Tune.Space.Lambda", "only DP-FERMI (%s) has a λ to search; %s has none", algoFermi, cfg.Algo)
	}
	for _, v := range space.Lambda {
		if !(v >= 0) || math.IsInf(v, 1) {
			errs.Add("Tune.Space.Lambda", "%v: want finite numbers ≥ 0", v)
		}
	}
	return errs.err()
}

// trialCurveFor is the curve of cfg's trials: DP-FERMI's (counts and
// steps) or the DP-SGD family's (steps).
func trialCurveFor(cfg Config, q map[tuneShape]float64, steps map[tuneShape]int) tuneCurve {
	if cfg.Algo == algoFermi {
		return fermiTrialCurve(q, steps, cfg.Fair.PublicGroupSizes)
	}
	return sgdTrialCurve(q, steps)
}

// fermiCountRDP is the RDP at orders of DP-FERMI's one-off group-count
// release in a run of steps steps with σ given: a Gaussian of noise
// multiplier σ·sqrt(steps) on counts of L2 sensitivity 1 (--scope all),
// α/(2σ²·steps) at order α (Mironov 2017, Proposition 7; here as the
// subsampled Gaussian at rate 1). Nil when the group sizes are public.
func fermiCountRDP(sigma float64, steps int, public bool, orders []float64) ([]float64, error) {
	if public {
		return nil, nil
	}
	return accounting.ComposedRDP(1, sigma*math.Sqrt(float64(steps)), 1, orders)
}

// fermiTrialCurve is the curve of a DP-FERMI trial: steps[sh] subsampled
// Gaussians at rate q[sh] and multiplier σ composed with the group-count
// release (fermiCountRDP). σ is the one that meets tau by the steps alone
// (sgdTrialCurve's calibration); the counts are then added at that σ, so
// the trial alone spends a little more than tau. That is all the plan
// needs: it bisects on tau until the search, computed from these exact
// curves, meets the target, and a larger tau still gives a smaller σ and a
// larger curve at every order. (Calibrating each shape to tau with the
// counts included would move the noise between shapes by the counts'
// share, which is small — about 1/(2·epochs²) of the steps' cost — at
// five times the calibrations.)
func fermiTrialCurve(q map[tuneShape]float64, steps map[tuneShape]int, public bool) tuneCurve {
	sgd := sgdTrialCurve(q, steps)
	return func(sh tuneShape, tau, delta float64, orders []float64) (float64, []float64, error) {
		s, c, err := sgd(sh, tau, delta, orders)
		if err != nil {
			return 0, nil, err
		}
		counts, err := fermiCountRDP(s, steps[sh], public, orders)
		if err != nil {
			return 0, nil, err
		}
		for i, v := range counts {
			c[i] += v
		}
		return s, c, nil
	}
}

// checkTrialReceiptFor holds a trial to the plan: checkTrialReceipt for
// the DP-SGD family, checkFermiTrialReceipt for DP-FERMI.
func checkTrialReceiptFor(cfg Config, r accounting.Receipt, plan tunePlan, sh tuneShape) error {
	if cfg.Algo == algoFermi {
		return checkFermiTrialReceipt(r, plan.orders, plan.curve[sh])
	}
	return checkTrialReceipt(r, plan.q[sh], plan.sigma[sh], plan.steps[sh])
}

// checkFermiTrialReceipt holds a DP-FERMI trial to its planned curve: the
// mechanisms its receipt lists, composed by the RDP accountant, must cost
// at most the planned curve at every order (up to rounding, 1e-9
// relative). A release the plan did not count (a mechanism of another
// kind, more steps, less noise, a count release the plan took as public)
// fails, and the trial is refused rather than published.
func checkFermiTrialReceipt(r accounting.Receipt, orders, planned []float64) error {
	if !r.Private() {
		return fmt.Errorf("the trial's receipt is not private")
	}
	acc, err := accounting.NewRDP(orders)
	if err != nil {
		return err
	}
	for _, m := range r.Mechanisms {
		if err := acc.Step(m, m.Steps); err != nil {
			return fmt.Errorf("the trial released %s (%s), outside the tuning plan: %w", m.Kind, m.Protects, err)
		}
	}
	for i, v := range acc.Values() {
		if !(v <= planned[i]*(1+1e-9)) {
			return fmt.Errorf("the trial's releases cost RDP %.6g at order %v, more than the %.6g the tuning plan charged", v, orders[i], planned[i])
		}
	}
	return nil
}

// fairScored says whether cfg's search scores fairness as well as
// accuracy: DP-FERMI with some λ > 0 in the space (with λ = 0 the user
// asked for no fairness, and accuracy alone decides).
func fairScored(cfg Config, space TuneSpace) bool {
	return cfg.Algo == algoFermi && slices.ContainsFunc(space.Lambda, func(l float64) bool { return l > 0 })
}

// scoreName is what a trial's score is, as the receipt's note says it.
func scoreName(cfg Config) string {
	if cfg.Algo == algoSteffle {
		// SteFFLe's search scores fairness whenever λ > 0 (it refuses a
		// space that mixes λ = 0 with positive λ); the chosen λ says which.
		what := "noisy accuracy"
		if cfg.Fair.Lambda > 0 {
			what = fmt.Sprintf("noisy accuracy less its noisy %s violation", cfg.Fair.Fairness)
		}
		return what + " (from per-group confusion counts each silo released on its own records with Gaussian noise, summed)"
	}
	if cfg.Algo == algoFermi {
		return fmt.Sprintf("noisy accuracy less its noisy %s violation (from Gaussian-noised per-group confusion counts)", cfg.Fair.Fairness)
	}
	return "Gaussian-noised accuracy"
}

// scoreRelease is what the score's Gaussian protects, as the receipt's
// mechanism names it.
func scoreRelease(cfg Config) string {
	if cfg.Algo == algoFermi || cfg.Algo == algoSteffle {
		return "the trial's per-group confusion counts (label × group × predicted class, L2 sensitivity 1)"
	}
	return "the trial's count of correct predictions"
}

// accuracyNoiseScale is the standard deviation of a trial's noisy count of
// correct predictions in units of the score's noise: 1 for one noisy
// count, sqrt(classes·groups) for DP-FERMI's sum of that many noisy
// diagonal cells.
func accuracyNoiseScale(cfg Config, valid *loaders.Dataset) float64 {
	if cfg.Algo != algoFermi {
		return 1
	}
	return math.Sqrt(float64(scoreClasses(valid) * len(valid.GroupNames)))
}

// scoreClasses is the number of classes a trial's model predicts (as
// ModelSpec sets it): public, from the schema.
func scoreClasses(d *loaders.Dataset) int { return max(2, len(d.LabelNames)) }

// trialScore is a trial's noisy validation accuracy and, for a search that
// scores fairness (fairScored), its noisy violation (nil otherwise), from
// the trial's predictions pred on valid with Gaussian noise of multiplier
// sigma on counts of L2 sensitivity 1. The DP-SGD family releases the
// count of correct predictions. DP-FERMI releases the per-group confusion
// table, one count per (label, group, predicted class): one record added
// or removed changes one cell by one, so the table's L2 sensitivity is 1
// and it costs what the single count does (the plan's scoreRho); the
// accuracy and the violation are post-processing of it.
func trialScore(cfg Config, space TuneSpace, pred []int, valid *loaders.Dataset, r *rand.Rand, sigma float64) (acc float64, violation *float64, err error) {
	if cfg.Algo != algoFermi {
		noisy, err := dpops.ScalarGaussian(r, float64(correctCount(pred, valid)), 1, sigma)
		return noisy / float64(valid.N()), nil, err
	}
	acc, v, err := NoisyFairScore(r, pred, valid.Labels, valid.Groups, scoreClasses(valid), len(valid.GroupNames), 1, sigma, cfg.Fair.Fairness == "eo")
	if err != nil {
		return 0, nil, err
	}
	if !fairScored(cfg, space) {
		return acc, nil, nil
	}
	return acc, &v, nil
}

// NoisyFairScore is a search trial's fair score (Papernot and Steinke
// 2022 let a trial's score be any release that is private within the
// trial): the accuracy and the demographic-parity (eo false) or
// equalized-odds (eo true) violation of predictions pred on records with
// these labels and groups, read (confusionScore) from ONE release of the
// per-group confusion counts (groupConfusion) with Gaussian noise of
// standard deviation sigma × sensitivity on every cell. sensitivity is the
// table's L2 sensitivity under the search's neighbour relation: 1 when one
// record is added or removed (one cell moves by one), √2 when one is
// replaced (one cell down, another up). Every cell is noised, so the
// release costs one Gaussian mechanism of multiplier sigma whatever the
// predictions; the accuracy and the violation are post-processing of it.
func NoisyFairScore(r *rand.Rand, pred, labels, groups []int, classes, nGroups int, sensitivity, sigma float64, eo bool) (acc, violation float64, err error) {
	cells := groupConfusion(pred, labels, groups, classes, nGroups)
	if err := addCellNoise(r, cells, sensitivity, sigma); err != nil {
		return 0, 0, err
	}
	acc, violation = confusionScore(cells, classes, nGroups, len(pred), eo)
	return acc, violation, nil
}

// addCellNoise adds Gaussian noise of standard deviation sigma ×
// sensitivity to every cell of a confusion table, in place.
func addCellNoise(r *rand.Rand, cells []float64, sensitivity, sigma float64) error {
	for i, c := range cells {
		v, err := dpops.ScalarGaussian(r, c, sensitivity, sigma)
		if err != nil {
			return err
		}
		cells[i] = v
	}
	return nil
}

// groupConfusion counts the records of each (label y, group g, predicted
// class c) in cell (y·groups + g)·classes + c.
func groupConfusion(pred, labels, groups []int, classes, nGroups int) []float64 {
	cells := make([]float64, classes*nGroups*classes)
	for i, p := range pred {
		cells[(labels[i]*nGroups+groups[i])*classes+p]++
	}
	return cells
}

// confusionScore is the accuracy (correct predictions over the n records,
// n public) and the demographic-parity violation (eo false) or the
// equalized-odds violation (eo true) read from per-group confusion counts
// (groupConfusion's layout) that may be noisy, with the definitions of
// metrics.DemographicParity and metrics.EqualizedOdds (Lowy et al. 2022,
// appendix F.1): the largest gap, over classes c and pairs of groups, of
// P[ŷ = c | s] (dp), or of P[ŷ = c | s, y = c] and P[ŷ = c | s, y ≠ c]
// (eo). Noisy counts are taken at 0 when negative, a rate's numerator at
// most its denominator, and a group takes part in a rate only where its
// denominator is at least 1 (the exact metric's "has records"); with
// exact counts both equal the metrics package's.
func confusionScore(cells []float64, classes, groups, n int, eo bool) (acc, violation float64) {
	at := func(y, g, c int) float64 { return max(0, cells[(y*groups+g)*classes+c]) }
	correct := 0.0
	for y := range classes {
		for g := range groups {
			correct += at(y, g, y)
		}
	}
	// gap is the spread over the groups of num(g)/den(g), for the groups
	// whose den is at least 1.
	gap := func(num, den func(g int) float64) float64 {
		lo, hi, seen := 0.0, 0.0, false
		for g := range groups {
			d := den(g)
			if d < 1 {
				continue
			}
			r := min(num(g), d) / d
			if !seen {
				lo, hi, seen = r, r, true
			}
			lo, hi = min(lo, r), max(hi, r)
		}
		return hi - lo
	}
	sum := func(g int, label func(y int) bool, class func(c int) bool) float64 {
		s := 0.0
		for y := range classes {
			for c := range classes {
				if label(y) && class(c) {
					s += at(y, g, c)
				}
			}
		}
		return s
	}
	all := func(int) bool { return true }
	for c := range classes {
		is := func(x int) bool { return x == c }
		not := func(x int) bool { return x != c }
		if !eo {
			violation = max(violation, gap(func(g int) float64 { return sum(g, all, is) }, func(g int) float64 { return sum(g, all, all) }))
			continue
		}
		violation = max(violation,
			gap(func(g int) float64 { return sum(g, is, is) }, func(g int) float64 { return sum(g, is, all) }),
			gap(func(g int) float64 { return sum(g, not, is) }, func(g int) float64 { return sum(g, not, all) }))
	}
	return correct / float64(n), violation
}
