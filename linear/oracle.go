package linear

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/dpops/accounting"
)

// Jagielski et al.'s DP oracle learner (2019, their Algorithm 3): a
// private version of Agarwal et al.'s reduction of fair classification to a
// game between an auditor and a learner. The auditor holds Lagrange
// multipliers λ ∈ R₊^K, ‖λ‖₁ ≤ B, one per sign of every constrained rate
// difference (K = 4(|A|−1) for equalized odds against group 0), and updates
// them by exponentiated gradient on Laplace-noised violations; the learner
// best-responds with a private cost-sensitive classifier (LeastSquaresCSC).
// After T rounds the output is the uniform mixture of the T classifiers,
// whose predictions are randomised: a record is scored by one of them drawn
// uniformly. It does not need the sensitive attribute at prediction time.
//
// Privacy (sensitive attribute only, as in PostProcess): the groups enter
// the computation only through the noisy releases below (the learner's
// costs depend on them, but the costs reach the classifier only through
// the noisy Xᵀc¹), and every release is a Laplace mechanism whose
// sensitivity follows from quantities already released, so adaptive
// composition applies:
//
//  1. once: the group-label counts N(a, y) (sensitivity 2), ε_c = CountShare·ε;
//  2. every round: Xᵀc¹ of the cost-sensitive fit (ε'), and the violation
//     vector of the round's classifier (ε');
//  3. every round, only with Fallback = FallbackCost: the choice between
//     the fit and the two constant classifiers (ε', see chooseCandidate).
//
// ε' is the largest per-release ε for which the 2T + 1 (3T + 1 with
// FallbackCost) releases compose to (ε, δ)-DP by the better of advanced and basic composition (basic alone
// when δ = 0), computed with the pure-DP accountant (SplitOracleBudget). The public reference code
// passes the Laplace scale as numpy's location argument (adding a constant,
// not noise); here every release goes through dpops.ScalarLaplace at scale
// sensitivity/ε.

// OracleConfig sets up the DP oracle learner.
type OracleConfig struct {
	// Gamma is the allowed difference of the constrained rates, γ ≥ 0.
	Gamma float64
	// Epsilon is the total budget (+Inf: Agarwal et al.'s non-private
	// reduction with the same learner); Delta the δ of advanced composition
	// (0: basic composition).
	Epsilon, Delta float64
	// Rounds is T (0: DefaultOracleRounds).
	Rounds int
	// Bound is B, the largest ‖λ‖₁ (0: DefaultOracleBound).
	Bound float64
	// LearningRate is η of the exponentiated-gradient update
	// θ ← θ + η·(violation − γ) (0: DefaultOracleLearningRate).
	LearningRate float64
	// CountShare is the fraction of ε spent on the group-label counts
	// (0: DefaultCountShare).
	CountShare float64
	// Ridge regularises the learner's XᵀX (0: DefaultRidge(n)).
	Ridge float64
	// Fairness and AllPairs choose the constraints, as in PostProcessConfig.
	Fairness Fairness
	AllPairs bool
	// Fallback lets every round's learner answer with a constant classifier
	// ("predict 0" or "predict 1") instead of its noisy least-squares fit
	// (OracleFallback says how it chooses; "" or FallbackNone: never, the
	// paper's learner, the default so that the reproduction runs Jagielski
	// et al.'s algorithm). It is our addition, not the paper's. Why: at small ε·m the
	// fit is noise-dominated and the uniform mixture of near-random
	// hyperplanes errs about ½ whatever the base rate, far worse than the
	// majority class (bench/results/jagielski.md); a constant classifier
	// satisfies every equalized-odds constraint exactly, so falling back to
	// one costs no fairness.
	Fallback OracleFallback
}

// OracleFallback names how the oracle learner's rounds choose between the
// noisy fit and the two constant classifiers (OracleConfig.Fallback).
type OracleFallback string

const (
	// FallbackNone always keeps the fit (Jagielski et al.'s learner); the
	// zero value "" means the same.
	FallbackNone OracleFallback = "none"
	// FallbackCost keeps the candidate of least cost-sensitive objective
	// (error plus Lagrangian, the learner's own best response), chosen by
	// report-noisy-min (chooseCandidate): one more ε' release per round,
	// charged to the accountant, so every release gets a little less. Its
	// noise, like the fit's, grows with m·‖λ‖₁/min N(a, y), so at small ε it
	// helps only partly.
	FallbackCost OracleFallback = "cost"
	// FallbackError keeps the candidate of least training error, the fit
	// only when it beats both constants. The labels and features are public
	// here (only the sensitive attribute is private) and the fit is a
	// function of the already-charged noisy Xᵀc¹, so the comparison is
	// post-processing and costs no ε. Every round's classifier then errs no
	// more than the majority class on the training data, and so does the
	// mixture. It ignores the Lagrangian when choosing; a constant is
	// exactly fair, so only the fits it keeps carry violations, and the
	// auditor keeps pricing those.
	FallbackError OracleFallback = "error"
)

// OracleFallbacks lists the accepted values of OracleConfig.Fallback.
var OracleFallbacks = []OracleFallback{FallbackNone, FallbackCost, FallbackError}

// Defaults of OracleConfig, chosen on an Adult training split at ε = ∞ (see
// bench/results/jagielski.md).
const (
	DefaultOracleRounds       = 100
	DefaultOracleBound        = 1.0
	DefaultOracleLearningRate = 1.0
	DefaultCountShare         = 0.1
)

func (c OracleConfig) withDefaults(n int) (OracleConfig, error) {
	if c.Rounds == 0 {
		c.Rounds = DefaultOracleRounds
	}
	if c.Bound == 0 {
		c.Bound = DefaultOracleBound
	}
	if c.LearningRate == 0 {
		c.LearningRate = DefaultOracleLearningRate
	}
	if c.CountShare == 0 {
		c.CountShare = DefaultCountShare
	}
	if c.Ridge == 0 {
		c.Ridge = DefaultRidge(n)
	}
	if c.Fallback == "" {
		c.Fallback = FallbackNone
	}
	var errs []error
	if !(c.Gamma >= 0) || math.IsInf(c.Gamma, 1) {
		errs = append(errs, fmt.Errorf("gamma = %v, want a finite number ≥ 0", c.Gamma))
	}
	if !(c.Epsilon > 0) {
		errs = append(errs, fmt.Errorf("epsilon = %v, want a number > 0 or +Inf", c.Epsilon))
	}
	if !(c.Delta >= 0 && c.Delta < 1) {
		errs = append(errs, fmt.Errorf("delta = %v, want a number in [0, 1)", c.Delta))
	}
	if c.Rounds < 1 {
		errs = append(errs, fmt.Errorf("rounds = %d, want ≥ 1", c.Rounds))
	}
	if !(c.Bound > 0) || math.IsInf(c.Bound, 1) {
		errs = append(errs, fmt.Errorf("bound B = %v, want a finite number > 0", c.Bound))
	}
	if !(c.LearningRate > 0) || math.IsInf(c.LearningRate, 1) {
		errs = append(errs, fmt.Errorf("learning rate = %v, want a finite number > 0", c.LearningRate))
	}
	if !(c.CountShare > 0 && c.CountShare < 1) {
		errs = append(errs, fmt.Errorf("count share = %v, want a number in (0, 1)", c.CountShare))
	}
	if _, err := c.Fairness.labels(); err != nil {
		errs = append(errs, err)
	} else if c.Fairness == DemographicParity {
		// The auditor's multipliers index (group, label) counts.
		errs = append(errs, errors.New("fairness dp: the oracle learner constrains error rates (eo or fpr); demographic parity is post-processing's"))
	}
	if !slices.Contains(OracleFallbacks, c.Fallback) {
		errs = append(errs, fmt.Errorf("fallback = %q, want one of %q", c.Fallback, OracleFallbacks))
	}
	if len(errs) > 0 {
		return c, fmt.Errorf("linear: oracle learner: %w", errors.Join(errs...))
	}
	return c, nil
}

// OracleBudget is how the oracle learner spends (Epsilon, Delta): Counts on
// the group-label counts and PerRound on each of the 2·Rounds per-round
// releases (3·Rounds with FallbackSelection, i.e. FallbackCost).
type OracleBudget struct {
	Epsilon           float64 `json:"epsilon"`
	Delta             float64 `json:"delta"`
	Rounds            int     `json:"rounds"`
	Counts            float64 `json:"counts_epsilon"`
	PerRound          float64 `json:"per_round_epsilon"`
	FallbackSelection bool    `json:"fallback_selection,omitempty"`
}

// Labels of the oracle learner's releases in its receipt.
const (
	oracleCountsLabel    = "group-label counts"
	oracleLearnerLabel   = "cost-sensitive learner: Xᵀc¹"
	oracleViolationLabel = "auditor: rate differences of the round's classifier"
	oracleFallbackLabel  = "learner: report-noisy-min over {fit, predict 0, predict 1}"
)

// spend charges the releases of the budget (counts once, then 2 or 3 per
// round for the given number of rounds) to acct, in the order TrainOracle
// makes them.
func (b OracleBudget) spend(acct *accounting.Pure, rounds int) error {
	if err := acct.SpendLaplace(2, 2/b.Counts, oracleCountsLabel); err != nil {
		return err
	}
	for range rounds {
		if err := b.spendRound(acct); err != nil {
			return err
		}
	}
	return nil
}

// spendRound charges one round's releases: the fit, the fallback's
// selection when enabled, the auditor's violations.
func (b OracleBudget) spendRound(acct *accounting.Pure) error {
	labels := []string{oracleLearnerLabel, oracleViolationLabel}
	if b.FallbackSelection {
		labels = []string{oracleLearnerLabel, oracleFallbackLabel, oracleViolationLabel}
	}
	for _, l := range labels {
		if err := acct.Spend(b.PerRound, l); err != nil {
			return err
		}
	}
	return nil
}

// releasesPerRound is 2, or 3 with the constant fallback's selection.
func (b OracleBudget) releasesPerRound() int {
	if b.FallbackSelection {
		return 3
	}
	return 2
}

// SplitOracleBudget gives ε_c = countShare·ε to the counts and finds the
// largest per-round ε' such that the counts and 2·rounds releases of ε'
// (3·rounds with fallbackSelection, the choice FallbackCost makes) compose
// to at most (ε, δ)-DP in the pure-DP accountant (the better of basic and
// advanced composition; basic alone when δ = 0). The search
// bisects to 10⁻¹² relative and keeps a 10⁻¹⁰ relative margin, so the
// receipt's ε never exceeds the target through round-off.
func SplitOracleBudget(epsilon, delta float64, rounds int, countShare float64, fallbackSelection bool) (OracleBudget, error) {
	if !(epsilon > 0) || math.IsInf(epsilon, 1) {
		return OracleBudget{}, fmt.Errorf("linear: oracle budget: epsilon = %v, want a finite number > 0", epsilon)
	}
	if !(delta >= 0 && delta < 1) || rounds < 1 || !(countShare > 0 && countShare < 1) {
		return OracleBudget{}, fmt.Errorf("linear: oracle budget: delta = %v, rounds = %d, count share = %v; want δ in [0,1), rounds ≥ 1, share in (0,1)",
			delta, rounds, countShare)
	}
	b := OracleBudget{Epsilon: epsilon, Delta: delta, Rounds: rounds, Counts: countShare * epsilon, FallbackSelection: fallbackSelection}
	target := epsilon * (1 - 1e-10)
	total := func(perRound float64) float64 {
		var acct accounting.Pure
		b := b
		b.PerRound = perRound
		if err := b.spend(&acct, rounds); err != nil {
			return math.Inf(1)
		}
		if delta == 0 {
			return acct.Epsilon()
		}
		return acct.AdvancedEpsilon(delta)
	}
	// Basic composition alone allows lo; advanced composition may allow more.
	lo := (epsilon*(1-1e-9) - b.Counts) / float64(b.releasesPerRound()*rounds)
	hi := target
	if total(lo) > target {
		return OracleBudget{}, fmt.Errorf("linear: oracle budget: no per-round epsilon fits ε = %v", epsilon)
	}
	for hi-lo > 1e-12*hi {
		mid := lo + (hi-lo)/2
		if total(mid) <= target {
			lo = mid
		} else {
			hi = mid
		}
	}
	b.PerRound = lo
	return b, nil
}

// Mixture is the oracle learner's output: the uniform mixture of its
// rounds' classifiers. Predictions are randomised; ProbPositive gives their
// expectation.
type Mixture struct {
	Classifiers []LinearClassifier `json:"classifiers"`
}

// ProbPositive returns, for each of n rows of features x, the fraction of
// the mixture's classifiers that predict 1 (the probability of a positive
// randomised prediction).
func (m *Mixture) ProbPositive(x []float64, n int) ([]float64, error) {
	if len(m.Classifiers) == 0 {
		return nil, errors.New("linear: empty mixture")
	}
	out := make([]float64, n)
	for _, h := range m.Classifiers {
		pred, err := h.Predict(x, n)
		if err != nil {
			return nil, err
		}
		for i, p := range pred {
			out[i] += float64(p)
		}
	}
	for i := range out {
		out[i] /= float64(len(m.Classifiers))
	}
	return out, nil
}

// Predict draws the randomised predictions from r (seed it for
// reproducible predictions): each record is scored by one classifier drawn
// uniformly.
func (m *Mixture) Predict(r *rand.Rand, x []float64, n int) ([]int, error) {
	prob, err := m.ProbPositive(x, n)
	if err != nil {
		return nil, err
	}
	return SamplePredictions(r, prob)
}

// OracleRound records one round for diagnostics: the multipliers the
// learner responded to (λ⁺ and λ⁻ per comparison), and the noisy rate
// differences of its classifier that the auditor saw.
type OracleRound struct {
	Lambda    []float64 `json:"lambda"`
	Violation []float64 `json:"violation"`
	// Choice is the constant fallback's pick: 0 the fit (also without the
	// fallback), 1 "predict 0", 2 "predict 1".
	Choice int `json:"choice,omitempty"`
}

// OracleResult is the outcome of TrainOracle. When the noisy group-label
// counts leave a constrained rate undefined the run fails (Failed, Reason,
// Model nil) after spending only the counts' budget.
type OracleResult struct {
	Model  *Mixture      `json:"-"`
	Failed bool          `json:"failed"`
	Reason string        `json:"reason,omitempty"`
	Budget *OracleBudget `json:"budget,omitempty"` // nil when not private
	// Counts are the (noisy) group-label counts N(a, y), index a*2+y.
	Counts []float64     `json:"counts"`
	Trace  []OracleRound `json:"trace,omitempty"`

	acct  *accounting.Pure
	delta float64
}

// Receipt states the run's privacy: (ε, δ) by the better of basic and
// advanced composition, or not private for ε = ∞. seed is the noise seed
// (nil for a crypto-seeded run).
func (r *OracleResult) Receipt(seed *uint64) (accounting.Receipt, error) {
	return pureReceipt(r.acct, r.delta, seed)
}

// TrainOracle runs the DP oracle learner on n rows of dim features x
// (row-major, without the sensitive attribute), 0/1 labels and groups in
// 0..groups-1. r draws the noise (unused for ε = ∞).
func TrainOracle(r *rand.Rand, x []float64, n, dim int, label, group []int, groups int, cfg OracleConfig) (*OracleResult, error) {
	cfg, err := cfg.withDefaults(n)
	if err != nil {
		return nil, err
	}
	if len(label) != n || len(group) != n {
		return nil, fmt.Errorf("linear: %d labels and %d groups for %d rows, want one of each per row", len(label), len(group), n)
	}
	if groups < 2 {
		return nil, fmt.Errorf("linear: %d groups, want at least 2 to be fair across", groups)
	}
	// Counting validates labels and groups; one bin holds every record.
	counts, err := CountCells(make([]int, n), group, label, 1, groups)
	if err != nil {
		return nil, err
	}
	comps, err := comparisons(groups, cfg.Fairness, cfg.AllPairs)
	if err != nil {
		return nil, err
	}
	csc, err := NewLeastSquaresCSC(x, n, dim, cfg.Ridge)
	if err != nil {
		return nil, err
	}

	private := !math.IsInf(cfg.Epsilon, 1)
	res := &OracleResult{delta: cfg.Delta}
	perRound := math.Inf(1)
	if private {
		if r == nil {
			return nil, errors.New("linear: the private oracle learner needs a *rand.Rand for its noise")
		}
		b, err := SplitOracleBudget(cfg.Epsilon, cfg.Delta, cfg.Rounds, cfg.CountShare, cfg.Fallback == FallbackCost)
		if err != nil {
			return nil, err
		}
		res.Budget, perRound = &b, b.PerRound
		res.acct = &accounting.Pure{}
		if err := laplaceVector(r, counts, 2, b.Counts, 2); err != nil {
			return nil, err
		}
		if err := res.acct.SpendLaplace(2, 2/b.Counts, oracleCountsLabel); err != nil {
			return nil, err
		}
	}
	res.Counts = counts
	for _, cmp := range comps {
		for _, a := range []int{cmp.u, cmp.v} {
			if !(counts[a*2+cmp.y] > 0) {
				res.Failed = true
				res.Reason = fmt.Sprintf("the (noisy) count of group %d with label %d is %g ≤ 0, so its rate is undefined; "+
					"use a larger ε or a larger count share", a, cmp.y, counts[a*2+cmp.y])
				return res, nil
			}
		}
	}

	coef := violationCoefficients(comps, counts, groups)
	violationSens := attributeSensitivity(groups, func(cell int) []float64 {
		v := make([]float64, len(coef))
		for k := range coef {
			v[k] = coef[k][cell]
		}
		return v
	})

	c0 := make([]float64, n)
	c1 := make([]float64, n)
	for i, y := range label {
		c0[i] = float64(y) // predicting 0 errs on positives
	}
	errorCost1 := make([]float64, n) // c¹ without the Lagrangian: predicting 1 errs on negatives
	for i, y := range label {
		errorCost1[i] = float64(1 - y)
	}
	theta := make([]float64, 2*len(comps))
	lambda := make([]float64, len(theta))
	model := &Mixture{}
	for range cfg.Rounds {
		expWeights(theta, cfg.Bound, lambda)
		extra := lagrangianCosts(coef, lambda, n, groups)
		for i := range c1 {
			c1[i] = float64(1-label[i]) + extra[group[i]*2+label[i]]
		}
		costSens := attributeSensitivity(groups, func(cell int) []float64 { return []float64{extra[cell]} })
		h, err := csc.Fit(r, c0, c1, costSens, perRound)
		if err != nil {
			return nil, fmt.Errorf("linear: oracle learner round %d: %w", len(model.Classifiers)+1, err)
		}
		scores := csc.Scores(h)
		pick := 0
		if cfg.Fallback != FallbackNone {
			if cfg.Fallback == FallbackError {
				// Public costs, sensitivity 0: chooseCandidate adds no noise.
				pick, err = chooseCandidate(r, candidateCosts(scores, c0, errorCost1), 0, perRound)
			} else {
				pick, err = chooseCandidate(r, candidateCosts(scores, c0, c1), costSens, perRound)
			}
			if err != nil {
				return nil, fmt.Errorf("linear: oracle learner round %d: %w", len(model.Classifiers)+1, err)
			}
			if pick > 0 {
				h = constantClassifier(len(h.W), pick == 2)
				scores = csc.Scores(h)
			}
		}
		model.Classifiers = append(model.Classifiers, h)

		// The auditor's view: the classifier's rate differences, noised.
		positive := make([]float64, groups*2)
		for i, s := range scores {
			if s > 0 {
				positive[group[i]*2+label[i]]++
			}
		}
		viol := rateDifferences(coef, positive)
		if private {
			if err := laplaceVector(r, viol, violationSens, perRound, len(viol)); err != nil {
				return nil, err
			}
			if err := res.Budget.spendRound(res.acct); err != nil {
				return nil, err
			}
		}
		res.Trace = append(res.Trace, OracleRound{Lambda: append([]float64(nil), lambda...), Violation: viol, Choice: pick})
		for k, v := range viol {
			theta[2*k] += cfg.LearningRate * (v - cfg.Gamma)
			theta[2*k+1] += cfg.LearningRate * (-v - cfg.Gamma)
		}
	}
	res.Model = model
	return res, nil
}

// candidateCosts returns the cost-sensitive objective Σᵢ c^{h(xᵢ)}ᵢ of the
// round's three candidates: the fit (scores > 0 predict 1), "predict 0"
// (Σ c⁰) and "predict 1" (Σ c¹), in that order.
func candidateCosts(scores, c0, c1 []float64) []float64 {
	costs := make([]float64, 3)
	for i, s := range scores {
		if s > 0 {
			costs[0] += c1[i]
		} else {
			costs[0] += c0[i]
		}
		costs[1] += c0[i]
		costs[2] += c1[i]
	}
	return costs
}

// chooseCandidate is the constant fallback's private selection, report-
// noisy-min: it returns the index of the smallest of costs[j] + Laplace
// (c1Sensitivity/epsilon), the first smallest when epsilon = +Inf.
//
// Privacy: c⁰ is public (labels); moving one record i from group a to a'
// changes c¹ᵢ by δ = extra(a', y) − extra(a, y), |δ| ≤ c1Sensitivity, and
// every candidate's cost by δ if it predicts 1 on xᵢ, else by 0. (The fit h
// is public here: it is computed from the round's already-charged noisy
// Xᵀc¹.) So all costs move in the same direction by at most c1Sensitivity,
// the monotone case in which report-noisy-max with Laplace(Δ/ε) noise is
// ε-DP (Dwork & Roth 2014, Claim 3.9, with sensitivity Δ instead of 1; a
// decrease is the same argument with the two data sets swapped). Without
// that monotonicity the scale would have to be 2Δ/ε.
// TestOracleFallbackSensitivity checks both the bound and the sign by
// brute force.
func chooseCandidate(r *rand.Rand, costs []float64, c1Sensitivity, epsilon float64) (int, error) {
	noisy := slices.Clone(costs)
	if !math.IsInf(epsilon, 1) && c1Sensitivity > 0 {
		if r == nil {
			return 0, errors.New("linear: the private fallback selection needs a *rand.Rand for its noise")
		}
		// Each coordinate is its own Laplace draw at the full ε: the
		// release is one ε-DP selection, not a vector release.
		for j, c := range noisy {
			v, err := dpops.ScalarLaplace(r, c, c1Sensitivity, epsilon)
			if err != nil {
				return 0, fmt.Errorf("linear: fallback selection: %w", err)
			}
			noisy[j] = v
		}
	}
	best := 0
	for j, c := range noisy {
		if c < noisy[best] {
			best = j
		}
	}
	return best, nil
}

// constantClassifier returns the LinearClassifier of d coefficients
// (intercept first) that predicts 1 everywhere when positive, else 0.
func constantClassifier(d int, positive bool) LinearClassifier {
	w := make([]float64, d)
	w[0] = -1
	if positive {
		w[0] = 1
	}
	return LinearClassifier{W: w}
}

// violationCoefficients returns coef[k][a*2+y] = ∂Δ_k/∂(positives in cell
// (a, y)) for the rate differences Δ_k = rate(u_k, y_k) − rate(v_k, y_k),
// rate(a, y) = positives(a, y)/N(a, y): 1/N(u,y) for cell (u, y), −1/N(v,y)
// for (v, y), 0 elsewhere. counts[a*2+y] = N(a, y) (noisy when private)
// must be positive for the cells used.
func violationCoefficients(comps []comparison, counts []float64, groups int) [][]float64 {
	coef := make([][]float64, len(comps))
	for k, cmp := range comps {
		coef[k] = make([]float64, groups*2)
		coef[k][cmp.u*2+cmp.y] += 1 / counts[cmp.u*2+cmp.y]
		coef[k][cmp.v*2+cmp.y] -= 1 / counts[cmp.v*2+cmp.y]
	}
	return coef
}

// rateDifferences is Δ_k = Σ_cell coef[k][cell]·positive[cell], given the
// number of positive predictions in every (group, label) cell.
func rateDifferences(coef [][]float64, positive []float64) []float64 {
	out := make([]float64, len(coef))
	for k := range coef {
		for cell, c := range coef[k] {
			out[k] += c * positive[cell]
		}
	}
	return out
}

// lagrangianCosts is the Lagrangian's part of the cost of predicting 1 for
// a record of cell (a, y), scaled by the number of records m like the error
// costs: m·Σ_k (λ⁺_k − λ⁻_k)·coef[k][cell], the derivative of
// Σ_k λ⁺_k(Δ_k − γ) + λ⁻_k(−Δ_k − γ) with respect to the record's
// prediction. lambda holds λ⁺_k, λ⁻_k at 2k, 2k+1.
func lagrangianCosts(coef [][]float64, lambda []float64, m, groups int) []float64 {
	extra := make([]float64, groups*2)
	for k := range coef {
		w := float64(m) * (lambda[2*k] - lambda[2*k+1])
		for cell, c := range coef[k] {
			extra[cell] += w * c
		}
	}
	return extra
}

// expWeights sets λ_k = B·exp(θ_k)/(1 + Σ_j exp(θ_j)): the exponentiated-
// gradient multipliers, with the implicit extra coordinate (θ = 0) that
// lets ‖λ‖₁ stay below B. Computed with the largest exponent factored out.
func expWeights(theta []float64, bound float64, lambda []float64) {
	top := 0.0
	for _, t := range theta {
		top = max(top, t)
	}
	sum := math.Exp(-top)
	for k, t := range theta {
		lambda[k] = math.Exp(t - top)
		sum += lambda[k]
	}
	for k := range lambda {
		lambda[k] *= bound / sum
	}
}

// attributeSensitivity is the L1 sensitivity of a release that adds
// effect(cell) for every record, where cell = a*2+y is the record's group
// and label: moving one record from group a to a' (its label fixed) changes
// the release by effect(a'·2+y) − effect(a·2+y). It is the largest L1 norm
// of that change over labels and pairs of groups.
func attributeSensitivity(groups int, effect func(cell int) []float64) float64 {
	worst := 0.0
	for y := range 2 {
		for a := range groups {
			ea := effect(a*2 + y)
			for b := range groups {
				if b == a {
					continue
				}
				eb := effect(b*2 + y)
				s := 0.0
				for k := range ea {
					s += math.Abs(eb[k] - ea[k])
				}
				worst = max(worst, s)
			}
		}
	}
	return worst
}
