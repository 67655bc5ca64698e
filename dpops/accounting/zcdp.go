package accounting

import (
	"errors"
	"fmt"
	"math"
)

// ErrBudgetExceeded is returned (wrapped) by ZCDP.Spend when a charge would
// take the total past the accountant's budget; nothing is charged then.
var ErrBudgetExceeded = errors.New("accounting: privacy budget exceeded")

// budgetSlack is the relative amount by which a total may exceed a budget
// and still count as within it. It absorbs floating-point rounding when a
// budget is split into equal parts (five charges of 0.2 must fit in 1) and
// is far below any privacy-relevant difference.
const budgetSlack = 1e-12

// GaussianRho is the zCDP cost ρ = Δ²/(2σ²) of one Gaussian mechanism with
// L2 sensitivity Δ and noise standard deviation σ (Bun and Steinke 2016); +Inf when
// σ = 0 (no noise, no privacy).
func GaussianRho(sensitivity, std float64) float64 {
	return sensitivity * sensitivity / (2 * std * std)
}

// GaussianStdForRho is the noise standard deviation Δ/√(2ρ) that makes a
// Gaussian mechanism with L2 sensitivity Δ exactly ρ-zCDP (the inverse of
// GaussianRho), used to spend a planned budget share.
func GaussianStdForRho(sensitivity, rho float64) (float64, error) {
	if !(sensitivity > 0) || math.IsInf(sensitivity, 1) {
		return 0, fmt.Errorf("accounting: sensitivity must be a positive number (got %v)", sensitivity)
	}
	if !(rho > 0) || math.IsInf(rho, 1) {
		return 0, fmt.Errorf("accounting: rho must be a positive number (got %v)", rho)
	}
	return sensitivity / math.Sqrt(2*rho), nil
}

// PureToRho is the zCDP cost ε²/2 of an ε-DP mechanism (Bun–Steinke 2016),
// so pure releases can be charged to a zCDP budget.
func PureToRho(eps float64) float64 { return eps * eps / 2 }

// ZCDPToEpsilon is the smallest ε, over Rényi orders α > 1, for which
// ρ-zCDP implies (ε, δ)-DP by Canonne, Kamath and Steinke 2020
// (Proposition 12), computed as OpenDP's cdp_epsilon does:
// ε = min_α αρ + (ln(1/δ) + (α-1) ln((α-1)/α) - ln α)/(α-1), the minimising α
// found by bisection on the sign of the derivative ρ + ln(αδ)/(α-1)² over
// α ≥ 1.01.
func ZCDPToEpsilon(rho, delta float64) (float64, error) {
	if err := checkRhoDelta(rho, delta); err != nil {
		return 0, err
	}
	switch {
	case rho == 0:
		return 0, nil
	case math.IsInf(rho, 1):
		return math.Inf(1), nil
	}
	derivativePositive := func(a float64) bool { return rho > -math.Log(a*delta)/((a-1)*(a-1)) }
	lo, hi := 1.01, 2.0
	for !derivativePositive(hi) {
		hi *= 2
	}
	for {
		mid := lo + (hi-lo)/2
		if mid == lo || mid == hi {
			break
		}
		if derivativePositive(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	a := hi
	eps := a*rho + (math.Log(1/delta)+(a-1)*math.Log((a-1)/a)-math.Log(a))/(a-1)
	return math.Max(0, eps), nil
}

// ZCDPToEpsilonBunSteinke is the simpler conversion ρ + 2√(ρ ln(1/δ)) of
// Bun and Steinke 2016 (Proposition 1.3); it is larger than ZCDPToEpsilon
// and is what older papers report.
func ZCDPToEpsilonBunSteinke(rho, delta float64) (float64, error) {
	if err := checkRhoDelta(rho, delta); err != nil {
		return 0, err
	}
	return rho + 2*math.Sqrt(rho*math.Log(1/delta)), nil
}

func checkRhoDelta(rho, delta float64) error {
	if !(rho >= 0) {
		return fmt.Errorf("accounting: rho must be ≥ 0 (got %v)", rho)
	}
	return checkDelta(delta)
}

// ZCDP is the zero-concentrated-DP accountant of privacy-budget tailoring:
// charges add up in ρ, and an optional budget refuses any charge that would
// exceed it, so a stage can never overspend its share (τ for stage 1, μ for
// stage 2: use one accountant per share). The zero value has no budget.
// Not safe for concurrent use.
type ZCDP struct {
	budget    float64 // +Inf or 0 with hasBudget false: unlimited
	hasBudget bool
	rho       float64
	spends    []Mechanism
}

// NewZCDP returns an accountant that refuses to spend more than budget ρ in
// total; +Inf means no limit.
func NewZCDP(budget float64) (*ZCDP, error) {
	if !(budget > 0) {
		return nil, fmt.Errorf("accounting: zCDP budget must be > 0 or +Inf (got %v)", budget)
	}
	return &ZCDP{budget: budget, hasBudget: !math.IsInf(budget, 1)}, nil
}

// Spend charges rho, labelled with what it protects or releases. It returns
// an error wrapping ErrBudgetExceeded, and charges nothing, if the total
// would exceed the budget.
func (z *ZCDP) Spend(rho float64, label string) error {
	return z.charge(Mechanism{Kind: KindZCDP, Steps: 1, Protects: label, Rho: rho})
}

// SpendGaussian charges one Gaussian mechanism with L2 sensitivity Δ and
// noise standard deviation std (ρ = Δ²/(2 std²)); the receipt records its
// noise multiplier std/Δ and sensitivity.
func (z *ZCDP) SpendGaussian(sensitivity, std float64, label string) error {
	if !(sensitivity > 0) || math.IsInf(sensitivity, 1) {
		return fmt.Errorf("accounting: %s: sensitivity must be a positive number (got %v)", label, sensitivity)
	}
	if !(std > 0) || math.IsInf(std, 1) {
		return fmt.Errorf("accounting: %s: noise std must be a positive number (got %v)", label, std)
	}
	return z.charge(Mechanism{Kind: KindGaussian, NoiseMultiplier: std / sensitivity, Sensitivity: sensitivity,
		Steps: 1, Protects: label, Rho: GaussianRho(sensitivity, std)})
}

func (z *ZCDP) charge(m Mechanism) error {
	if !(m.Rho >= 0) || math.IsInf(m.Rho, 1) {
		return fmt.Errorf("accounting: %s: rho must be a finite number ≥ 0 (got %v)", m.Protects, m.Rho)
	}
	total := z.rho + m.Rho
	if z.hasBudget && total > z.budget*(1+budgetSlack) {
		return fmt.Errorf("%w: %s needs rho=%v but only %v of %v remains", ErrBudgetExceeded, m.Protects, m.Rho, z.Remaining(), z.budget)
	}
	z.rho = total
	for i := range z.spends {
		if sameRelease(z.spends[i], m) {
			z.spends[i].Steps += m.Steps
			z.spends[i].Rho += m.Rho
			return nil
		}
	}
	z.spends = append(z.spends, m)
	return nil
}

// Rho is the total ρ spent.
func (z *ZCDP) Rho() float64 { return z.rho }

// Budget is the total ρ this accountant may spend (+Inf without a budget).
func (z *ZCDP) Budget() float64 {
	if !z.hasBudget {
		return math.Inf(1)
	}
	return z.budget
}

// Remaining is the ρ that can still be spent (+Inf without a budget).
func (z *ZCDP) Remaining() float64 { return math.Max(0, z.Budget()-z.rho) }

// Spends returns the charges so far; identical charges are merged (their
// Steps and Rho added).
func (z *ZCDP) Spends() []Mechanism { return append([]Mechanism(nil), z.spends...) }

// Epsilon is the (ε, δ) guarantee of the total ρ with the optimal conversion
// (ZCDPToEpsilon); NaN for δ outside (0,1).
func (z *ZCDP) Epsilon(delta float64) float64 {
	eps, err := ZCDPToEpsilon(z.rho, delta)
	if err != nil {
		return math.NaN()
	}
	return eps
}

// EpsilonBunSteinke is Epsilon with the Bun–Steinke conversion.
func (z *ZCDP) EpsilonBunSteinke(delta float64) float64 {
	eps, err := ZCDPToEpsilonBunSteinke(z.rho, delta)
	if err != nil {
		return math.NaN()
	}
	return eps
}

// PureRDP is the Rényi DP curve at orders of an ε-DP mechanism (any
// mechanism, under the neighbour relation its ε is for): min(ε, αε²/2),
// the smaller of D_α ≤ D_∞ = ε and the ε²/2-zCDP of Bun and Steinke 2016
// (Proposition 3.3). It lets a pure release (objective perturbation's pure
// mechanism, Laplace cells) join an RDP composition or a tuned search.
func PureRDP(eps float64, orders []float64) []float64 {
	c := make([]float64, len(orders))
	for i, a := range orders {
		c[i] = math.Min(eps, a*PureToRho(eps))
	}
	return c
}
