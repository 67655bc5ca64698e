package accountingtest

import "math"

// GaussianDelta is the exact privacy profile of the Gaussian mechanism
// whose sensitivity is mu times its noise std (Balle and Wang 2018,
// Theorem 8): δ(ε) = Φ(μ/2 − ε/μ) − e^ε·Φ(−μ/2 − ε/μ). T compositions of
// the Gaussian with multiplier σ are one Gaussian with μ = √T/σ (Dong, Roth
// and Su 2022, Corollary 3.3).
func GaussianDelta(mu, eps float64) float64 {
	phi := func(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
	return phi(mu/2-eps/mu) - math.Exp(eps)*phi(-mu/2-eps/mu)
}

// GaussianEpsilon is the smallest ε with GaussianDelta(mu, ε) ≤ delta, by
// bisection (δ decreases in ε), to the last bits of a float64.
func GaussianEpsilon(mu, delta float64) float64 {
	lo, hi := 0.0, 1.0
	for GaussianDelta(mu, hi) > delta {
		hi *= 2
	}
	for range 200 {
		mid := (lo + hi) / 2
		if GaussianDelta(mu, mid) > delta {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}
