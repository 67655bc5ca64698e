package accounting

import "math"

// GaussianDelta is the exact privacy profile of one Gaussian mechanism
// whose L2 sensitivity is mu times its noise standard deviation (Balle and
// Wang 2018, "Improving the Gaussian Mechanism for Differential Privacy",
// Theorem 8): δ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ), for ε ≥ 0. It is
// 0 for μ = 0 and increases with μ. Mechanisms whose privacy loss is
// bounded by Gaussian ones (objective perturbation's, in linear) sum it.
//
// For ε beyond about 709, e^ε overflows and Φ(−t) underflows, and their
// product (never above the first term) would be Inf·0 = NaN; there the
// second term is computed as exp(ε + log Φ(−t)). Elsewhere the product is
// kept as it was, so every δ (and every σ calibrated from it) below that
// range is bit for bit what it was.
func GaussianDelta(mu, eps float64) float64 {
	if mu == 0 {
		return 0
	}
	// Φ(x) = normTail(−x).
	second := math.Exp(eps) * normTail(mu/2+eps/mu)
	if math.IsNaN(second) || math.IsInf(second, 1) {
		// Φ(−t) = erfc(t/√2)/2, its log from logErfc (accurate where it underflows).
		second = math.Exp(eps + math.Log(0.5) + logErfc((mu/2+eps/mu)/math.Sqrt2))
	}
	// Rounding can leave a tiny negative difference far in the tail.
	return math.Max(normTail(eps/mu-mu/2)-second, 0)
}
