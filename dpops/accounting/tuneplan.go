package accounting

// Calibrating a private search (Papernot and Steinke 2022) to a total
// budget: every trial's noise is set so that the WHOLE search, its trials'
// scores included, spends the target ε at δ. The planner knows nothing of
// what a trial is (DP-SGD steps, objective perturbation, a federation's
// rounds): a calibration function turns a per-trial budget into the trial's
// noise and its exact RDP curve, so every algorithm's search shares one
// plan, one bisection and one score rule.

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// TrialCalibration calibrates trials of kind i (a search whose trials
// differ in shape, e.g. batch and epochs, has one kind per shape) to a
// per-trial ε tau at δ, at the Rényi orders given: it returns the kind's
// noise (a noise multiplier, a pure ε: whatever the algorithm takes) and
// its RDP curve at orders, the trial's score excluded. A larger tau must
// give a curve at least as large at every order (PlanTuning bisects on
// tau). The curve may exceed tau where the calibration leaves a small
// release out: the search's ε is computed from the curves, never from tau.
type TrialCalibration func(i int, tau, delta float64, orders []float64) (noise float64, curve []float64, err error)

// TuningPlan is a calibrated search.
type TuningPlan struct {
	Law    TruncatedNegativeBinomial
	Orders []float64
	// Noise and Curves are each trial kind's calibration: its noise and
	// its RDP curve at Orders, score excluded.
	Noise  []float64
	Curves [][]float64
	// ScoreSigma is the noise multiplier of a trial's score: Gaussian noise
	// of standard deviation ScoreSigma × the score's L2 sensitivity, whose
	// RDP is ScoreRho·α.
	ScoreSigma, ScoreRho float64
	// TrialEpsilon is the costliest trial's ε at δ, score included.
	TrialEpsilon float64
	// Epsilon is the whole search's ε at δ (Theorem 2 converted with Balle
	// et al. 2020) and Order the Rényi order attaining it.
	Epsilon, Order float64
}

// ErrTuningBudget is returned by PlanTuning when no per-trial budget fits
// the target: the search alone (its ln E[K] terms) costs more.
var ErrTuningBudget = errors.New("accounting: the budget is too small for the search")

// PlanTuning finds the largest per-trial ε τ (every one of kinds trial
// kinds calibrated to τ at δ by calibrate) for which the search, scores
// included, spends at most target at δ under law, by bisection. Each
// trial's score gets scoreShare of the trial's RDP at the order that
// attains the trial's ε, the rest goes to the trial itself. Trials of
// different kinds drawn independently of the data are covered by the
// pointwise largest of their curves (TunedRDP).
func PlanTuning(kinds int, calibrate TrialCalibration, law TruncatedNegativeBinomial, delta, target, scoreShare float64) (TuningPlan, error) {
	if kinds < 1 {
		return TuningPlan{}, fmt.Errorf("accounting: a search needs at least one kind of trial (got %d)", kinds)
	}
	if !(target > 0) || math.IsInf(target, 1) {
		return TuningPlan{}, fmt.Errorf("accounting: a search's ε must be finite and > 0 (got %v)", target)
	}
	if !(scoreShare > 0 && scoreShare < 1) {
		return TuningPlan{}, fmt.Errorf("accounting: the score's share must be in (0, 1) (got %v)", scoreShare)
	}
	if err := law.check(); err != nil {
		return TuningPlan{}, err
	}
	p := TuningPlan{Law: law, Orders: TuningOrders()}
	eval := func(tau float64) (TuningPlan, error) {
		pl := p
		pl.Noise, pl.Curves = make([]float64, kinds), make([][]float64, kinds)
		worst := make([]float64, len(pl.Orders))
		for i := range kinds {
			s, c, err := calibrate(i, tau, delta, pl.Orders)
			if err != nil {
				return pl, err
			}
			if len(c) != len(pl.Orders) {
				return pl, fmt.Errorf("accounting: a trial calibration gave %d RDP values for %d orders", len(c), len(pl.Orders))
			}
			pl.Noise[i], pl.Curves[i] = s, c
			for j := range worst {
				worst[j] = math.Max(worst[j], c[j])
			}
		}
		_, a0, err := EpsilonFromRDP(pl.Orders, worst, delta)
		if err != nil {
			return pl, err
		}
		i0 := slices.Index(pl.Orders, a0)
		pl.ScoreRho = scoreShare / (1 - scoreShare) * worst[i0] / a0
		pl.ScoreSigma = 1 / math.Sqrt(2*pl.ScoreRho)
		for j, a := range pl.Orders {
			worst[j] += a * pl.ScoreRho
		}
		if pl.TrialEpsilon, _, err = EpsilonFromRDP(pl.Orders, worst, delta); err != nil {
			return pl, err
		}
		pl.Epsilon, pl.Order, err = TunedEpsilon(law, pl.Orders, worst, delta)
		return pl, err
	}
	tooSmall := fmt.Errorf("%w: ε = %v cannot pay for a search with %v expected trials", ErrTuningBudget, target, law.Mean())
	// The largest feasible τ is below target (the search costs more than
	// one trial): halve from target/2 until the search fits.
	lo, hi := target/2, target
	var best TuningPlan
	for {
		pl, err := eval(lo)
		if err != nil || lo < target/1e4 {
			return pl, tooSmall
		}
		if pl.Epsilon <= target {
			best = pl
			break
		}
		lo, hi = lo/2, lo
	}
	for range 40 {
		mid := math.Sqrt(lo * hi)
		pl, err := eval(mid)
		if err == nil && pl.Epsilon <= target {
			lo, best = mid, pl
		} else {
			hi = mid
		}
		if hi/lo < 1+1e-4 {
			break
		}
	}
	return best, nil
}
