package accounting

import "math"

// GaussianDelta is the exact privacy profile of one Gaussian mechanism
// whose L2 sensitivity is mu times its noise standard deviation (Balle and
// Wang 2018, "Improving the Gaussian Mechanism for Differential Privacy",
// Theorem 8): δ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ), for ε ≥ 0. It is
// 0 for μ = 0 and increases with μ. Mechanisms whose privacy loss is
// bounded by Gaussian ones (objective perturbation's, in linear) sum it.
func GaussianDelta(mu, eps float64) float64 {
	if mu == 0 {
		return 0
	}
	phi := func(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
	// Rounding can leave a tiny negative difference far in the tail.
	return math.Max(phi(mu/2-eps/mu)-math.Exp(eps)*phi(-mu/2-eps/mu), 0)
}
