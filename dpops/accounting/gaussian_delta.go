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
	phi := func(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
	second := math.Exp(eps) * phi(-mu/2-eps/mu)
	if math.IsNaN(second) || math.IsInf(second, 1) {
		second = math.Exp(eps + logNormalTail(mu/2+eps/mu))
	}
	// Rounding can leave a tiny negative difference far in the tail.
	return math.Max(phi(mu/2-eps/mu)-second, 0)
}

// logNormalTail is log Φ(−t), the log of the standard normal's upper tail
// beyond t: directly where Φ(−t) is far from underflow, else by the
// asymptotic series Φ(−t) = φ(t)/t · (1 − 1/t² + 3/t⁴ − 15/t⁶ + …), whose
// relative error after these terms is below 105/t⁸ (< 1e-9 for t ≥ 20).
func logNormalTail(t float64) float64 {
	if t < 20 {
		return math.Log(0.5 * math.Erfc(t/math.Sqrt2))
	}
	u := 1 / (t * t)
	return -t*t/2 - math.Log(t*math.Sqrt(2*math.Pi)) + math.Log1p(u*(-1+u*(3-15*u)))
}
