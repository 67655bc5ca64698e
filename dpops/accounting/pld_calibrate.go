package accounting

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// PLDCalibration configures CalibrateSigmaPLD. The zero value calibrates
// one subsampled Gaussian under add/remove adjacency at DefaultPLDInterval.
type PLDCalibration struct {
	PLDOptions
	// Companions are the noise-multiplier ratios of releases made every step
	// on the same Poisson sample (see WithCompanion): the step is charged
	// as one subsampled Gaussian with σ_eff = JointSigma(σ, ratio·σ, …).
	Companions []float64
	// Spent are releases the calibrated steps compose with, each with its
	// Steps and as receipts report them (a Laplace release's Epsilon is the
	// total over its steps), e.g. DP-FERMI's one-off noisy group counts.
	Spent []Mechanism
}

// pldSigmaPrecision is the relative width of the final σ bracket: far
// below any σ difference that matters, and reached in a handful of
// evaluations by false position.
const pldSigmaPrecision = 1e-6

// pldCoarseFactor is how much coarser the grid of the first search is: a
// grid of interval k·h has every k-th point of the fine one, so its
// connect-the-dots pmf dominates the fine one's and its σ is a valid upper
// end for the fine search, found ~10× faster.
const pldCoarseFactor = 10

// CalibrateSigmaPLD returns the smallest noise multiplier σ (to relative
// precision 1e-6) for which steps steps of the Poisson-subsampled Gaussian
// with rate q (plus companions, composed with c.Spent) are (ε, δ)-DP with
// ε ≤ targetEps by the PLD accountant. The returned σ always satisfies the
// target: it is the upper end of the final bracket, and its ε was computed.
// An error wrapping ErrPLDRange means the PLD accountant cannot bound the
// run (fall back to CalibrateSigma, the RDP accountant, and say so).
//
// The search runs first on a grid 10× coarser (valid, looser), then on the
// fine grid by false position on log ε against log σ, which is nearly
// linear; the 60-epoch MNIST calibration takes well under a second
// (BenchmarkCalibrateSigmaPLD).
func CalibrateSigmaPLD(targetEps, delta, q float64, steps int, c PLDCalibration) (float64, error) {
	opts, err := c.PLDOptions.normalised()
	if err != nil {
		return 0, err
	}
	if !(targetEps > 0) || math.IsInf(targetEps, 1) {
		return 0, fmt.Errorf("accounting: target epsilon must be a positive number (got %v)", targetEps)
	}
	if err := checkPLDDelta(delta); err != nil {
		return 0, err
	}
	if !(q > 0 && q <= 1) {
		return 0, fmt.Errorf("accounting: sample rate q must be in (0,1] (got %v)", q)
	}
	if steps < 1 {
		return 0, fmt.Errorf("accounting: steps must be ≥ 1 (got %d)", steps)
	}
	joint := calibration{}
	for _, r := range c.Companions {
		if err := WithCompanion(r)(&joint); err != nil {
			return 0, err
		}
	}
	// epsilonAt is ε at sigma on o's grid, in direction only (0 remove,
	// 1 add, or allDirections: the larger).
	epsilonAt := func(sigma float64, o PLDOptions, only int) (float64, error) {
		a, err := NewPLD(o)
		if err != nil {
			return 0, err
		}
		for _, m := range c.Spent {
			if err := a.add(m); err != nil {
				return 0, err
			}
		}
		if !math.IsInf(sigma, 1) {
			if err := a.Step(SubsampledGaussian(q, joint.jointSigma(sigma), 0, ""), steps); err != nil {
				return 0, err
			}
		}
		eps, err := a.directionEpsilon(delta, only)
		if err != nil {
			return 0, err
		}
		return slices.Max(eps), nil
	}

	if len(c.Spent) > 0 {
		floor, err := epsilonAt(math.Inf(1), opts, allDirections)
		if err != nil {
			return 0, err
		}
		if floor >= targetEps {
			return 0, fmt.Errorf("accounting: the budget already spent is ε = %.4g of the target %v on its own; nothing is left for the steps",
				floor, targetEps)
		}
	}

	coarse := opts
	coarse.Interval = math.Min(0.1, opts.Interval*pldCoarseFactor)
	coarse.singleGrid = true
	coarseEps := func(s float64) (float64, error) { return epsilonAt(s, coarse, allDirections) }

	// Bracket on the coarse grid as CalibrateSigma does: hi = 1, 2, 4, …
	// until ε(hi) ≤ target, then lo = hi/2, hi/4, … until ε(lo) > target.
	// Below the supported σ the PLD window may not fit (ErrPLDRange), which
	// counts as "too small".
	lo, hi, epsLo, epsHi := 0.0, 1.0, math.Inf(1), math.Inf(1)
	for {
		if epsHi, err = evalSigma(coarseEps, hi); err != nil {
			return 0, err
		}
		if epsHi <= targetEps {
			break
		}
		lo, epsLo = hi, epsHi
		if hi *= 2; hi > MaxSigma {
			return 0, fmt.Errorf("accounting: target epsilon %v at delta %v is unreachable: even sigma = %v gives epsilon %.6g",
				targetEps, delta, lo, epsLo)
		}
	}
	for lo == 0 {
		cand := hi / 2
		if cand < pldMinSigma {
			return 0, fmt.Errorf("accounting: target epsilon %v needs a noise multiplier below %v, outside the PLD accountant's range: %w",
				targetEps, pldMinSigma, ErrPLDRange)
		}
		e, err := evalSigma(coarseEps, cand)
		if err != nil {
			return 0, err
		}
		if e > targetEps {
			lo, epsLo = cand, e
		} else {
			hi, epsHi = cand, e
		}
	}
	lo, hi, epsLo, epsHi, err = narrowSigma(lo, hi, epsLo, epsHi, 1e-3, coarseEps, targetEps)
	if err != nil {
		return 0, err
	}
	// d log ε / d log σ, to aim the fine search.
	slope := (math.Log(epsLo) - math.Log(epsHi)) / (math.Log(lo) - math.Log(hi))

	// Fine grid. Search in the direction of the record removed, whose ε is
	// the larger one for the subsampled Gaussian in every case we measured,
	// at half the cost, and check the other direction at the end: ε
	// decreases in σ in each direction, so if the other one meets the
	// target at the result it does above it too; if not, search again with
	// both.
	const dir = 0
	dirEps := func(s float64) (float64, error) { return epsilonAt(s, opts, dir) }
	// The coarse σ usually meets the target on the fine grid too (a coarser
	// grid is looser); where a release's loss scale switched the fine grid
	// to a finer one it need not, so step up until it does.
	if epsHi, err = evalSigma(dirEps, hi); err != nil {
		return 0, err
	}
	for gap := 0.01; epsHi > targetEps; gap = math.Min(0.5, 2*gap) {
		if hi *= 1 + gap; hi > MaxSigma {
			return 0, fmt.Errorf("accounting: target epsilon %v at delta %v is unreachable", targetEps, delta)
		}
		if epsHi, err = evalSigma(dirEps, hi); err != nil {
			return 0, err
		}
	}
	sigma, err := fineSearch(hi, epsHi, targetEps, slope, dirEps)
	if err != nil {
		return 0, err
	}
	other, err := evalSigma(func(s float64) (float64, error) { return epsilonAt(s, opts, 1-dir) }, sigma)
	if err != nil || other <= targetEps {
		return sigma, err
	}
	// The other direction binds: search again above sigma with both.
	both := func(s float64) (float64, error) { return epsilonAt(s, opts, allDirections) }
	lo, epsLo = sigma, other
	hi, epsHi = sigma, other
	for gap := 0.01; epsHi > targetEps; gap = math.Min(0.5, 2*gap) {
		lo, epsLo = hi, epsHi
		if hi *= 1 + gap; hi > MaxSigma {
			return 0, fmt.Errorf("accounting: target epsilon %v at delta %v is unreachable", targetEps, delta)
		}
		if epsHi, err = evalSigma(both, hi); err != nil {
			return 0, err
		}
	}
	_, sigma, _, _, err = narrowSigma(lo, hi, epsLo, epsHi, pldSigmaPrecision, both, targetEps)
	return sigma, err
}

// fineSearch is the smallest σ ≤ hi with eps(σ) ≤ target, to relative
// precision pldSigmaPrecision, given eps(hi) = epsHi ≤ target and an
// estimate of d log ε / d log σ: it aims just below the σ the slope
// predicts, widens the step (doubling) until ε exceeds the target, then
// narrows.
func fineSearch(hi, epsHi, target, slope float64, eps func(float64) (float64, error)) (float64, error) {
	gap := 0.01
	if slope < 0 && !math.IsInf(slope, -1) {
		predicted := math.Exp((math.Log(target) - math.Log(epsHi)) / slope) // σ*/hi
		gap = math.Min(0.5, math.Max(1e-4, 1-predicted*(1-5e-4)))
	}
	var lo, epsLo float64
	for ; ; gap = math.Min(0.5, 2*gap) {
		lo = hi * (1 - gap)
		var err error
		if epsLo, err = evalSigma(eps, lo); err != nil {
			return 0, err
		}
		if epsLo > target {
			break
		}
		if lo < pldMinSigma {
			return 0, fmt.Errorf("accounting: PLD calibration: epsilon stays below the target %v down to sigma %v", target, lo)
		}
		hi, epsHi = lo, epsLo
	}
	_, hi, _, _, err := narrowSigma(lo, hi, epsLo, epsHi, pldSigmaPrecision, eps, target)
	return hi, err
}

// pldMinSigma is the smallest noise multiplier the calibration tries.
const pldMinSigma = 1e-3

// evalSigma is eps(sigma), with an ε the PLD window cannot show (an error
// wrapping ErrPLDRange, which happens only for small σ) reported as +Inf:
// larger than any target.
func evalSigma(eps func(float64) (float64, error), sigma float64) (float64, error) {
	e, err := eps(sigma)
	if errors.Is(err, ErrPLDRange) {
		return math.Inf(1), nil
	}
	return e, err
}

// narrowSigma narrows [lo, hi], ε(lo) > target ≥ ε(hi), until hi - lo ≤
// rel·hi, by the Illinois variant of false position on (log σ, log ε),
// which is nearly linear, so a handful of evaluations suffice; it bisects
// where ε(lo) is +Inf. It returns the final bracket and ε at its ends; hi
// meets the target.
func narrowSigma(lo, hi, epsLo, epsHi, rel float64, eps func(float64) (float64, error), target float64) (float64, float64, float64, float64, error) {
	logT := math.Log(target)
	f := func(e float64) float64 { return math.Log(math.Max(e, 1e-300)) - logT }
	x0, x1, f0, f1 := math.Log(lo), math.Log(hi), f(epsLo), f(epsHi)
	side := 0
	for math.Exp(x1)-math.Exp(x0) > rel*math.Exp(x1) {
		x := x1 - f1*(x1-x0)/(f1-f0)
		if !(x > x0 && x < x1) { // f0 infinite, or round-off at the ends
			x = x0 + (x1-x0)/2
		}
		e, err := evalSigma(eps, math.Exp(x))
		if err != nil {
			return 0, 0, 0, 0, err
		}
		if fx := f(e); fx <= 0 {
			x1, f1, epsHi = x, fx, e
			if side == 1 {
				f0 /= 2
			}
			side = 1
		} else {
			x0, f0, epsLo = x, fx, e
			if side == -1 {
				f1 /= 2
			}
			side = -1
		}
	}
	return math.Exp(x0), math.Exp(x1), epsLo, epsHi, nil
}
