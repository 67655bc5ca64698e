package accounting

// Private hyperparameter tuning (Papernot and Steinke, "Hyperparameter
// Tuning with Rényi Differential Privacy", ICLR 2022). A search that runs a
// private trial a RANDOM number of times K, each with its own noise and its
// own privately computed score, and publishes only the best trial, costs far
// less than K trials composed: Theorem 2 bounds its Rényi DP by one trial's
// RDP plus a term that grows with ln E[K], not with K. The bound is stated
// in RDP (there is no PLD form of it), so a tuned run is accounted in RDP
// whatever accountant its trials would use alone.

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// TruncatedNegativeBinomial is the law of the number of trials K of
// Papernot and Steinke 2022 (Definition 1): P[K = k] ∝
// C(k+η−1, k)·(1−γ)^k for k = 1, 2, … (the negative binomial with shape η
// and success probability γ, conditioned on K ≥ 1). η = 1 is the geometric
// law, η = 0 the logarithmic law (the limit η → 0), and η ∈ (−1, 0) is
// allowed.
type TruncatedNegativeBinomial struct {
	Eta   float64 // η > −1
	Gamma float64 // γ ∈ (0, 1)
}

func (d TruncatedNegativeBinomial) check() error {
	if !(d.Eta > -1) || math.IsInf(d.Eta, 1) {
		return fmt.Errorf("accounting: the truncated negative binomial's η must be a finite number > −1 (got %v)", d.Eta)
	}
	if !(d.Gamma > 0 && d.Gamma < 1) {
		return fmt.Errorf("accounting: the truncated negative binomial's γ must be in (0, 1) (got %v)", d.Gamma)
	}
	return nil
}

// Mean is E[K]: η(1−γ)/(γ(1−γ^η)) for η ≠ 0 and (1/γ − 1)/ln(1/γ) for
// η = 0 (Papernot and Steinke 2022, Section 2).
func (d TruncatedNegativeBinomial) Mean() float64 {
	if d.Eta == 0 {
		return (1/d.Gamma - 1) / math.Log(1/d.Gamma)
	}
	// 1−γ^η as −expm1(η ln γ): exact for η near 0 too.
	return d.Eta * (1 - d.Gamma) / (d.Gamma * -math.Expm1(d.Eta*math.Log(d.Gamma)))
}

// TNBWithMean is the truncated negative binomial of shape eta whose mean is
// mean (> 1), γ found by bisection (E[K] falls from ∞ to 1 as γ goes from 0
// to 1).
func TNBWithMean(eta, mean float64) (TruncatedNegativeBinomial, error) {
	d := TruncatedNegativeBinomial{Eta: eta, Gamma: 0.5}
	if err := d.check(); err != nil {
		return d, err
	}
	if !(mean > 1) || math.IsInf(mean, 1) {
		return d, fmt.Errorf("accounting: the expected number of trials must be a finite number > 1 (got %v)", mean)
	}
	lo, hi := 0.0, 1.0 // Mean(lo) > mean > Mean(hi)
	for range 200 {
		d.Gamma = (lo + hi) / 2
		if d.Gamma == lo || d.Gamma == hi {
			break
		}
		if d.Mean() > mean {
			lo = d.Gamma
		} else {
			hi = d.Gamma
		}
	}
	return d, nil
}

// Prob is P[K = k].
func (d TruncatedNegativeBinomial) Prob(k int) float64 {
	if k < 1 {
		return 0
	}
	p := d.first()
	for j := 1; j < k; j++ {
		p *= d.ratio(j)
	}
	return p
}

// first is P[K = 1]: η(1−γ)/(γ^−η − 1), or (1−γ)/ln(1/γ) for η = 0.
func (d TruncatedNegativeBinomial) first() float64 {
	if d.Eta == 0 {
		return (1 - d.Gamma) / math.Log(1/d.Gamma)
	}
	return d.Eta * (1 - d.Gamma) / math.Expm1(-d.Eta*math.Log(d.Gamma))
}

// ratio is P[K = j+1] / P[K = j] = (1−γ)(j+η)/(j+1).
func (d TruncatedNegativeBinomial) ratio(j int) float64 {
	return (1 - d.Gamma) * (float64(j) + d.Eta) / float64(j+1)
}

// Sample draws K by inverting the distribution function with one uniform
// from r. r must be secret (a stream of the run's Source) for the same
// reason as the noise: the analysis assumes the adversary does not know K.
func (d TruncatedNegativeBinomial) Sample(r *rand.Rand) (int, error) {
	if err := d.check(); err != nil {
		return 0, err
	}
	u := r.Float64()
	k, p := 1, d.first()
	c := p
	// The tail mass left when p underflows is below 1e-300; stopping there
	// changes K's law by less than any probability a float64 can show.
	for c < u && p > 0 {
		p *= d.ratio(k)
		k++
		c += p
	}
	return k, nil
}

// TunedRDP is Theorem 2 of Papernot and Steinke 2022: if one trial Q is
// (λ, ε(λ))-RDP at every order λ of orders (curve[i] = ε(orders[i])), the
// search that runs Q K ~ d times and returns the best trial is (λ, ε'(λ))-RDP
// with
//
//	ε'(λ) = ε(λ) + (1+η)(1 − 1/λ̂)ε(λ̂) + (1+η) ln(1/γ)/λ̂ + ln(E[K])/(λ−1)
//
// for any λ̂ ≥ 1; TunedRDP takes the best λ̂ among the orders (λ̂ need not
// equal λ). It also returns, for each λ, the λ̂ used. Q's RDP must hold for
// every trial: when trials differ (their hyperparameters are drawn at
// random, independently of the data), curve is the pointwise largest of
// their curves, which bounds the mixture's RDP by the joint quasi-convexity
// of Rényi divergence.
func TunedRDP(d TruncatedNegativeBinomial, orders, curve []float64) (tuned, hat []float64, err error) {
	if err := d.check(); err != nil {
		return nil, nil, err
	}
	if err := checkOrders(orders); err != nil {
		return nil, nil, err
	}
	if len(curve) != len(orders) {
		return nil, nil, fmt.Errorf("accounting: %d RDP values for %d orders", len(curve), len(orders))
	}
	for i, r := range curve {
		if !(r >= 0) {
			return nil, nil, fmt.Errorf("accounting: a trial's RDP at order %v must be a number ≥ 0 (got %v)", orders[i], r)
		}
	}
	// The λ̂ term does not depend on λ: minimise it once.
	bestHat, bestTerm := math.NaN(), math.Inf(1)
	for i, a := range orders {
		t := (1 + d.Eta) * ((1-1/a)*curve[i] + math.Log(1/d.Gamma)/a)
		if t < bestTerm {
			bestHat, bestTerm = a, t
		}
	}
	logMean := math.Log(d.Mean())
	tuned, hat = make([]float64, len(orders)), make([]float64, len(orders))
	for i, a := range orders {
		tuned[i] = curve[i] + bestTerm + logMean/(a-1)
		hat[i] = bestHat
	}
	return tuned, hat, nil
}

// TunedEpsilon is the (ε, δ) guarantee of the search (TunedRDP converted
// with Balle et al. 2020's conversion, EpsilonFromRDP) and the order λ
// attaining it.
func TunedEpsilon(d TruncatedNegativeBinomial, orders, curve []float64, delta float64) (eps, order float64, err error) {
	tuned, _, err := TunedRDP(d, orders, curve)
	if err != nil {
		return 0, 0, err
	}
	return EpsilonFromRDP(orders, tuned, delta)
}

// TuningOrders are the Rényi orders a tuned run is accounted at: Opacus's
// (1.1 … 63) and 64 … 512 beyond them, because Theorem 2's ln(1/γ)/λ̂ term
// favours a large λ̂ when the trials are few and cheap.
func TuningOrders() []float64 {
	orders := OpacusOrders()
	for a := 64.0; a <= 512; a *= 1.25 {
		orders = append(orders, math.Round(a))
	}
	return orders
}
