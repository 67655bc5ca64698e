package accounting

import (
	"fmt"
	"math"
)

// OpacusOrders returns the Rényi orders Opacus uses by default
// (1.1, 1.2, …, 10.9, then 12, 13, …, 63), so that fairdp's ε can be compared
// with Opacus's digit for digit. The values are computed as Opacus computes
// them (1 + x/10.0) because the fractional-order formula is sensitive to the
// last bit of α only through which branch it takes (integer or not).
func OpacusOrders() []float64 {
	orders := make([]float64, 0, 99+52)
	for x := 1; x < 100; x++ {
		orders = append(orders, 1+float64(x)/10.0)
	}
	for a := 12; a < 64; a++ {
		orders = append(orders, float64(a))
	}
	return orders
}

// TFOrders returns TF-Privacy's order list (1.25, 1.5, 1.75, 2, 2.25, 2.5, 3,
// 3.5, 4, 4.5, 5, 6, …, 63, 128, 256, 512), needed to reproduce TF-Privacy's
// compute_dp_sgd_privacy test and tutorial numbers.
func TFOrders() []float64 {
	orders := []float64{1.25, 1.5, 1.75, 2, 2.25, 2.5, 3, 3.5, 4, 4.5}
	for a := 5; a < 64; a++ {
		orders = append(orders, float64(a))
	}
	return append(orders, 128, 256, 512)
}

// SubsampledGaussianRDP is the Rényi DP at order alpha of one step of the
// Poisson-subsampled Gaussian mechanism with sampling rate q and noise
// multiplier sigma (noise std divided by the L2 sensitivity), following
// Mironov, Talwar and Zhang 2019 as implemented by Opacus and TF-Privacy.
// Special cases: q = 0 gives 0, sigma = 0 gives +Inf, q = 1 gives the plain
// Gaussian α/(2σ²). It returns NaN for inputs outside q ∈ [0,1], σ ≥ 0,
// α > 1, or when the fractional-order series loses all precision (a NaN order
// is skipped by the conversions).
func SubsampledGaussianRDP(q, sigma, alpha float64) float64 {
	switch {
	case !(q >= 0 && q <= 1) || !(sigma >= 0) || !(alpha > 1):
		return math.NaN()
	case q == 0:
		return 0
	case sigma == 0 || math.IsInf(alpha, 1):
		return math.Inf(1)
	case math.IsInf(sigma, 1):
		return 0
	case q == 1:
		return alpha / (2 * sigma * sigma)
	}
	var logA float64
	if alpha == math.Trunc(alpha) {
		logA = logAIntegerOrder(q, sigma, alpha)
	} else {
		logA = logAFractionalOrder(q, sigma, alpha)
	}
	// A_α ≥ 1 in exact arithmetic, but when the RDP is below ~1e-16 rounding
	// can leave ln A_α slightly negative; 0 is then the nearest valid value.
	return math.Max(0, logA/(alpha-1))
}

// logAIntegerOrder is ln A_α = ln Σ_{i=0..α} C(α,i) q^i (1-q)^{α-i}
// exp((i²-i)/(2σ²)) for integer α (Mironov, Talwar and Zhang 2019), summed
// in log space so that large orders do not overflow.
func logAIntegerOrder(q, sigma, alpha float64) float64 {
	n := int(alpha)
	logQ, log1mQ := math.Log(q), math.Log1p(-q)
	twoVar := 2 * sigma * sigma
	logA := math.Inf(-1)
	for i := 0; i <= n; i++ {
		fi := float64(i)
		term := logBinomial(n, i) + fi*logQ + float64(n-i)*log1mQ + (fi*fi-fi)/twoVar
		logA = logAdd(logA, term)
	}
	return logA
}

// logAFractionalOrder is ln A_α for fractional α: the two series of Mironov,
// Talwar and Zhang 2019 (Section 3.3), split at z0 = σ² ln(1/q - 1) + 1/2,
// with generalised binomial coefficients whose sign alternates once i > α
// (terms with a negative coefficient are subtracted in log space, as in
// Opacus/TF-Privacy's _compute_log_a_frac). The series stops once both new
// terms are below e^-30 relative to 1.
func logAFractionalOrder(q, sigma, alpha float64) float64 {
	logA0, logA1 := math.Inf(-1), math.Inf(-1)
	z0 := sigma*sigma*math.Log(1/q-1) + 0.5
	logQ, log1mQ := math.Log(q), math.Log1p(-q)
	twoVar := 2 * sigma * sigma
	sqrt2Sigma := math.Sqrt2 * sigma
	logAbsCoef, coefPositive := 0.0, true // C(α, 0) = 1
	const maxTerms = 1_000_000
	for i := 0; i < maxTerms; i++ {
		fi := float64(i)
		j := alpha - fi
		logT0 := logAbsCoef + fi*logQ + j*log1mQ
		logT1 := logAbsCoef + j*logQ + fi*log1mQ
		logE0 := math.Log(0.5) + logErfc((fi-z0)/sqrt2Sigma)
		logE1 := math.Log(0.5) + logErfc((z0-j)/sqrt2Sigma)
		logS0 := logT0 + (fi*fi-fi)/twoVar + logE0
		logS1 := logT1 + (j*j-j)/twoVar + logE1
		if coefPositive {
			logA0 = logAdd(logA0, logS0)
			logA1 = logAdd(logA1, logS1)
		} else {
			logA0 = logSub(logA0, logS0)
			logA1 = logSub(logA1, logS1)
		}
		if math.IsNaN(logA0) || math.IsNaN(logA1) {
			return math.NaN()
		}
		if math.Max(logS0, logS1) < -30 {
			return logAdd(logA0, logA1)
		}
		// C(α, i+1) = C(α, i) · (α - i) / (i + 1).
		logAbsCoef += math.Log(math.Abs(j)) - math.Log(fi+1)
		if j < 0 {
			coefPositive = !coefPositive
		}
	}
	return math.NaN()
}

// logBinomial is ln C(n, k) for integers 0 ≤ k ≤ n.
func logBinomial(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}

// logAdd is ln(e^x + e^y) without overflow.
func logAdd(x, y float64) float64 {
	lo, hi := math.Min(x, y), math.Max(x, y)
	if math.IsInf(lo, -1) {
		return hi
	}
	return math.Log1p(math.Exp(lo-hi)) + hi
}

// logSub is ln(e^x - e^y) for x ≥ y; NaN when x < y (the difference would be
// negative, which only happens when rounding has destroyed the series).
func logSub(x, y float64) float64 {
	switch {
	case x < y:
		return math.NaN()
	case math.IsInf(y, -1):
		return x
	case x == y:
		return math.Inf(-1)
	}
	d := math.Expm1(x - y)
	if math.IsInf(d, 1) {
		return x
	}
	return math.Log(d) + y
}

// logErfc is ln(erfc(x)), accurate where erfc(x) underflows (x ≳ 26): there
// the asymptotic series erfc(x) = e^{-x²}/(x√π) · Σ_k (-1)^k (2k-1)!!/(2x²)^k
// is used, whose terms after k = 7 are below 1e-16 relative for x > 25.
func logErfc(x float64) float64 {
	if x < 25 {
		return math.Log(math.Erfc(x))
	}
	inv := 1 / (2 * x * x)
	sum, term := 1.0, 1.0
	for k := 1; k <= 8; k++ {
		term *= -float64(2*k-1) * inv
		sum += term
	}
	return -x*x - math.Log(x) - 0.5*math.Log(math.Pi) + math.Log(sum)
}

// ComposedRDP is the Rényi DP at each order of steps applications of the
// Poisson-subsampled Gaussian mechanism (steps add per order).
func ComposedRDP(q, sigma float64, steps int, orders []float64) ([]float64, error) {
	if err := checkMechanismParams(q, sigma, steps); err != nil {
		return nil, err
	}
	if err := checkOrders(orders); err != nil {
		return nil, err
	}
	out := make([]float64, len(orders))
	for i, a := range orders {
		out[i] = scaleRDP(SubsampledGaussianRDP(q, sigma, a), steps)
	}
	return out, nil
}

// scaleRDP is steps·r with 0·∞ taken as 0 (zero steps of a non-private
// mechanism cost nothing).
func scaleRDP(r float64, steps int) float64 {
	if steps == 0 {
		return 0
	}
	return r * float64(steps)
}

func checkMechanismParams(q, sigma float64, steps int) error {
	if !(q >= 0 && q <= 1) {
		return fmt.Errorf("accounting: sample rate q must be in [0,1] (got %v)", q)
	}
	if !(sigma >= 0) {
		return fmt.Errorf("accounting: noise multiplier sigma must be ≥ 0 (got %v)", sigma)
	}
	if steps < 0 {
		return fmt.Errorf("accounting: steps must be ≥ 0 (got %d)", steps)
	}
	return nil
}

func checkOrders(orders []float64) error {
	if len(orders) == 0 {
		return fmt.Errorf("accounting: the list of Rényi orders is empty")
	}
	for i, a := range orders {
		if !(a > 1) || math.IsInf(a, 1) {
			return fmt.Errorf("accounting: Rényi order #%d must be a finite number > 1 (got %v)", i, a)
		}
	}
	return nil
}

func checkDelta(delta float64) error {
	if !(delta > 0 && delta < 1) {
		return fmt.Errorf("accounting: delta must be in (0,1) (got %v)", delta)
	}
	return nil
}

// EpsilonFromRDP converts Rényi DP values at the given orders to the
// smallest ε over the orders for which the mechanism is (ε, δ)-DP, with the
// conversion of Balle et al. 2020 (Proposition 12 of Canonne–Kamath–Steinke
// 2020, as in TF-Privacy's compute_epsilon):
// ε = min_α [RDP(α) + ln((α-1)/α) - (ln δ + ln α)/(α-1)], where orders
// whose RDP is tiny enough that δ² > 1 - e^{-RDP} give ε = 0 and orders
// α ≤ 1.01 are not used (the bound is unstable there). It returns the order
// that attains the minimum; NaN RDP values are skipped.
func EpsilonFromRDP(orders, rdp []float64, delta float64) (eps, order float64, err error) {
	return convertRDP(orders, rdp, delta, improvedEpsilon)
}

// EpsilonFromRDPClassic is the conversion of Mironov 2017 (Proposition 3),
// ε = min_α [RDP(α) + ln(1/δ)/(α-1)], which gives a larger ε than
// EpsilonFromRDP; papers before 2020 (among them Xu, Du and Wu 2021,
// Table 1) report this one.
func EpsilonFromRDPClassic(orders, rdp []float64, delta float64) (eps, order float64, err error) {
	return convertRDP(orders, rdp, delta, classicEpsilon)
}

func improvedEpsilon(alpha, r, delta float64) float64 {
	switch {
	case delta*delta+math.Expm1(-r) > 0:
		return 0
	case alpha > 1.01:
		return r + math.Log1p(-1/alpha) - math.Log(delta*alpha)/(alpha-1)
	default:
		return math.Inf(1)
	}
}

func classicEpsilon(alpha, r, delta float64) float64 {
	return r - math.Log(delta)/(alpha-1)
}

func convertRDP(orders, rdp []float64, delta float64, bound func(alpha, r, delta float64) float64) (float64, float64, error) {
	if err := checkOrders(orders); err != nil {
		return 0, 0, err
	}
	if len(rdp) != len(orders) {
		return 0, 0, fmt.Errorf("accounting: %d RDP values for %d orders", len(rdp), len(orders))
	}
	if err := checkDelta(delta); err != nil {
		return 0, 0, err
	}
	bestEps, bestOrder := math.Inf(1), math.NaN()
	for i, a := range orders {
		r := rdp[i]
		if math.IsNaN(r) {
			continue
		}
		if r < 0 {
			return 0, 0, fmt.Errorf("accounting: RDP at order %v is negative (%v); Rényi divergences are ≥ 0", a, r)
		}
		e := bound(a, r, delta)
		if math.IsNaN(bestOrder) || e < bestEps {
			bestEps, bestOrder = e, a
		}
	}
	return math.Max(0, bestEps), bestOrder, nil
}
