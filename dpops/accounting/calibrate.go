package accounting

import (
	"fmt"
	"math"
)

// MaxSigma is the largest noise multiplier CalibrateSigma tries (Opacus's
// MAX_SIGMA); a target that needs more is reported as unreachable.
const MaxSigma = 1e6

// CalibrateOption changes how CalibrateSigma searches.
type CalibrateOption func(*calibration) error

type calibration struct {
	classic    bool
	tolerance  float64   // 0: bisect σ to relative precision sigmaPrecision
	companions []float64 // noise-multiplier ratios of extra mechanisms per step
	orders     []float64
	spent      []float64 // RDP already spent at orders (nil: none)
}

// sigmaPrecision is the relative width of the final σ bracket in the default
// (exact) search: far below any σ difference that matters, and reached in
// about 50 evaluations.
const sigmaPrecision = 1e-10

// WithClassic calibrates against the classic RDP conversion
// (EpsilonFromRDPClassic) instead of Balle et al. 2020.
func WithClassic() CalibrateOption {
	return func(c *calibration) error { c.classic = true; return nil }
}

// WithEpsilonTolerance switches to Opacus's get_noise_multiplier search:
// bisect σ in [0, 10·2^k] and stop at the first σ whose ε lies in
// [target - tol, target]. Opacus's default is 0.01.
// Without this option σ is found to relative precision 1e-10.
func WithEpsilonTolerance(tol float64) CalibrateOption {
	return func(c *calibration) error {
		if !(tol > 0) || math.IsInf(tol, 1) {
			return fmt.Errorf("accounting: epsilon tolerance must be a positive number (got %v)", tol)
		}
		c.tolerance = tol
		return nil
	}
}

// WithCompanion adds a second release that runs every step on the SAME
// Poisson sample with noise multiplier ratio·σ, e.g. DPSGD-F's noisy group
// counts with σ1 = 10·σ2 (ratio 10). The releases are charged jointly, as
// one subsampled Gaussian with σ_eff = JointSigma(σ, ratio·σ, …) (see
// JointSubsampledGaussian), not as separately sampled mechanisms whose RDP
// adds, which would understate ε. It may be given more than once.
func WithCompanion(ratio float64) CalibrateOption {
	return func(c *calibration) error {
		if !(ratio > 0) || math.IsInf(ratio, 1) {
			return fmt.Errorf("accounting: companion noise ratio must be a positive number (got %v)", ratio)
		}
		c.companions = append(c.companions, ratio)
		return nil
	}
}

// WithOrders calibrates over the given Rényi orders instead of OpacusOrders().
func WithOrders(orders []float64) CalibrateOption {
	return func(c *calibration) error {
		if err := checkOrders(orders); err != nil {
			return err
		}
		c.orders = orders
		return nil
	}
}

// WithSpent composes the steps with a budget part already spent once, given
// as its RDP at the calibration orders (OpacusOrders() unless WithOrders),
// e.g. DP-FERMI's one-off noisy group counts. The target must exceed what
// the spent part alone costs.
func WithSpent(rdp []float64) CalibrateOption {
	return func(c *calibration) error {
		for i, v := range rdp {
			if !(v >= 0) || math.IsInf(v, 1) {
				return fmt.Errorf("accounting: spent RDP at order index %d must be a finite number ≥ 0 (got %v)", i, v)
			}
		}
		c.spent = rdp
		return nil
	}
}

// jointSigma is the noise multiplier charged per step when the main release
// has multiplier sigma: σ_eff of it and its companions.
func (c *calibration) jointSigma(sigma float64) float64 {
	if len(c.companions) == 0 {
		// Exactly the σ a run charges: JointSigma(σ) = 1/√(1/σ²) can be
		// an ulp or two off, and PLD's discretisation is not continuous
		// in σ at that scale (its grid follows the loss scale), so ε at
		// the σ the search saw could meet the target while ε at the σ
		// the run charges exceeds it by 1e-6.
		return sigma
	}
	sigmas := []float64{sigma}
	for _, ratio := range c.companions {
		sigmas = append(sigmas, ratio*sigma)
	}
	return JointSigma(sigmas...)
}

// CalibrateSigma returns the smallest noise multiplier σ for which steps
// steps of the Poisson-subsampled Gaussian mechanism with rate q (plus any
// companions) are (ε, δ)-DP with ε ≤ targetEps, found by bisection (ε
// decreases in σ). It is how a run with --epsilon picks its noise, so the
// returned σ always satisfies the target; with WithEpsilonTolerance it
// reproduces Opacus's get_noise_multiplier exactly.
func CalibrateSigma(targetEps, delta, q float64, steps int, opts ...CalibrateOption) (float64, error) {
	c := calibration{orders: OpacusOrders()}
	for _, opt := range opts {
		if err := opt(&c); err != nil {
			return 0, err
		}
	}
	if !(targetEps > 0) || math.IsInf(targetEps, 1) {
		return 0, fmt.Errorf("accounting: target epsilon must be a positive number (got %v)", targetEps)
	}
	if err := checkDelta(delta); err != nil {
		return 0, err
	}
	if !(q > 0 && q <= 1) {
		return 0, fmt.Errorf("accounting: sample rate q must be in (0,1] (got %v)", q)
	}
	if steps < 1 {
		return 0, fmt.Errorf("accounting: steps must be ≥ 1 (got %d)", steps)
	}
	if c.spent != nil && len(c.spent) != len(c.orders) {
		return 0, fmt.Errorf("accounting: %d spent RDP values for %d orders", len(c.spent), len(c.orders))
	}
	epsilonAt := func(sigma float64) float64 {
		rdp := make([]float64, len(c.orders))
		for i, a := range c.orders {
			if math.IsInf(sigma, 1) {
				rdp[i] = 0
			} else {
				rdp[i] = scaleRDP(SubsampledGaussianRDP(q, c.jointSigma(sigma), a), steps)
			}
			if c.spent != nil {
				rdp[i] += c.spent[i]
			}
		}
		convert := EpsilonFromRDP
		if c.classic {
			convert = EpsilonFromRDPClassic
		}
		eps, _, err := convert(c.orders, rdp, delta)
		if err != nil { // unreachable: orders and delta were checked above
			return math.NaN()
		}
		return eps
	}

	if c.spent != nil {
		if floor := epsilonAt(math.Inf(1)); floor >= targetEps {
			return 0, fmt.Errorf("accounting: the budget already spent is ε = %.4g of the target %v on its own; nothing is left for the steps",
				floor, targetEps)
		}
	}
	// Bracket as Opacus does: σ_low = 0, σ_high = 20, 40, … until ε(σ_high) ≤ target.
	lo, hi := 0.0, 10.0
	epsHi := math.Inf(1)
	for epsHi > targetEps {
		hi *= 2
		if hi > MaxSigma {
			return 0, fmt.Errorf("accounting: target epsilon %v at delta %v is unreachable: even sigma = %v gives epsilon %.6g",
				targetEps, delta, hi/2, epsHi)
		}
		epsHi = epsilonAt(hi)
	}
	if c.tolerance > 0 {
		for targetEps-epsHi > c.tolerance {
			mid := (lo + hi) / 2
			if mid == lo || mid == hi { // ε jumps (the δ² > 1-e^{-RDP} branch): hi is still valid
				break
			}
			if eps := epsilonAt(mid); eps < targetEps {
				hi, epsHi = mid, eps
			} else {
				lo = mid
			}
		}
		return hi, nil
	}
	for hi-lo > sigmaPrecision*hi {
		mid := lo + (hi-lo)/2
		if epsilonAt(mid) <= targetEps {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, nil
}
