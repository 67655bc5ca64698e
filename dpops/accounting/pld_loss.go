package accounting

import (
	"math"
)

// This file holds the single-release privacy-loss models of the PLD
// accountant and their pessimistic discretisation.
//
// A release is described by a dominating pair (P, Q): P is the output
// distribution with the protected record's contribution, Q without it (or
// the other way round, see pldDirection). Its privacy loss is
// L = log(dP/dQ) and its privacy profile δ(ε) = P(L > ε) - e^ε·Q(L > ε)
// (the hockey-stick divergence). Each model maps the loss back to the
// output coordinate x, in which L is monotone, so that P(L ∈ (a, b]) and
// Q(L ∈ (a, b]) are masses of intervals of x under Gaussian or Laplace
// distributions, computed with erfc to full relative precision in the tails.

// lossModel is one release in one direction. The discretisation walks the
// loss grid in increasing order, asking for a lossPoint at each grid loss
// once and for the masses between consecutive points, so that the costly
// part (inverting the loss, erfc) runs once per grid point.
type lossModel interface {
	// point describes the loss eps (±Inf allowed).
	point(eps float64) lossPoint
	// between returns P(a < L ≤ b) and Q(a < L ≤ b) for the points of
	// losses a < b.
	between(a, b lossPoint) (p, q float64)
	// lossRange returns losses lo ≤ hi such that P(L < lo) + P(L > hi) ≤
	// tail: the part of the loss axis that the discretisation must cover.
	lossRange(tail float64) (lo, hi float64)
	// lossScale is the typical spread of one release's loss (about its
	// standard deviation): the discretisation interval must be well below
	// it for the composition to stay tight (see pldGridPerScale).
	lossScale() float64
}

// lossPoint is a model's view of one loss value: for a Gaussian mixture,
// the standardised output coordinate z of the loss threshold for each
// component and t = P(Z > |z|), from which interval masses follow without
// cancellation; for Laplace, the tails P(L > ε), Q(L > ε) in t[0], t[1].
type lossPoint struct {
	z, t [3]float64
}

// normTail is P(Z > z) for a standard normal Z.
func normTail(z float64) float64 { return 0.5 * math.Erfc(z/math.Sqrt2) }

// massBetween is P(za < Z ≤ zb) for a standard normal Z, given ta =
// P(Z > |za|) and tb = P(Z > |zb|): the difference of the two upper tails,
// or of the two lower tails, or the complement of both, whichever keeps its
// relative precision.
func massBetween(za, ta, zb, tb float64) float64 {
	switch {
	case !(za < zb):
		return 0
	case za >= 0:
		return math.Max(0, ta-tb)
	case zb <= 0:
		return math.Max(0, tb-ta)
	}
	return math.Max(0, 1-ta-tb)
}

// normQuantileTail is the z with P(Z > z) ≈ tail (tail ≤ 0.5), rounded
// outwards by a bisection on normTail so that P(Z > z) ≤ tail holds.
func normQuantileTail(tail float64) float64 {
	lo, hi := 0.0, 40.0
	for range 80 {
		mid := (lo + hi) / 2
		if normTail(mid) > tail {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// logMixRatio is log((1-q) + q·e^u), the privacy loss of a Poisson
// subsampled release whose Gaussian log-likelihood ratio is u, computed
// without overflow for large u, without cancellation for small q, and
// without underflow to log 0 for q near 1 and u ≪ 0.
func logMixRatio(q, u float64) float64 {
	if q == 1 {
		return u
	}
	if u > 0 {
		return u + math.Log(q-(q-1)*math.Exp(-u))
	}
	if s := q * math.Expm1(u); s > -0.5 {
		return math.Log1p(s)
	}
	// Far below 1 (q near 1, u ≪ 0): a sum of two positive terms, no
	// cancellation; at q = 1 it is u exactly.
	return math.Log((1 - q) + q*math.Exp(u))
}

// subsampledGaussianLoss is the Poisson-subsampled Gaussian mechanism with
// sampling rate q and noise multiplier sigma (sensitivity 1) under
// add/remove adjacency. remove: P = (1-q)·N(0, σ²) + q·N(1, σ²) and
// Q = N(0, σ²) (the record removed from the data set that P saw); !remove:
// the pair swapped (the record added). Both directions are needed: the composed ε is the larger of the
// two (Zhu, Dong and Wang 2022). q = 1 is the plain Gaussian, whose two
// directions coincide.
type subsampledGaussianLoss struct {
	q, sigma float64
	remove   bool
}

// u is the Gaussian log-likelihood ratio log(N(1,σ²)/N(0,σ²)) at x.
func (m subsampledGaussianLoss) u(x float64) float64 { return (2*x - 1) / (2 * m.sigma * m.sigma) }

// loss is L(x) for output x.
func (m subsampledGaussianLoss) loss(x float64) float64 {
	l := logMixRatio(m.q, m.u(x))
	if !m.remove {
		return -l
	}
	return l
}

// threshold is the x where L(x) = eps: L > eps ⇔ x > threshold (remove)
// or x < threshold (add). ±Inf where eps is outside L's range.
func (m subsampledGaussianLoss) threshold(eps float64) float64 {
	s2 := m.sigma * m.sigma
	if m.remove {
		// (1-q) + q·e^u > e^ε ⇔ u > log1p(expm1(ε)/q).
		r := math.Expm1(eps) / m.q
		if r <= -1 {
			return math.Inf(-1)
		}
		return s2*math.Log1p(r) + 0.5
	}
	// (1-q) + q·e^u < e^-ε ⇔ u < log1p(expm1(-ε)/q).
	r := math.Expm1(-eps) / m.q
	if r <= -1 {
		return math.Inf(-1)
	}
	return s2*math.Log1p(r) + 0.5
}

// gaussPoint is the lossPoint of output threshold x for Gaussian
// components with noise sigma and the given means.
func gaussPoint(x, sigma float64, means ...float64) lossPoint {
	var pt lossPoint
	for c, mu := range means {
		z := (x - mu) / sigma
		pt.z[c], pt.t[c] = z, normTail(math.Abs(z))
	}
	return pt
}

// gaussBetween is the mass of each component between the output
// thresholds of a and b (x increasing from a to b).
func gaussBetween(a, b lossPoint, n int) (mass [3]float64) {
	for c := range n {
		mass[c] = massBetween(a.z[c], a.t[c], b.z[c], b.t[c])
	}
	return mass
}

// Components of subsampledGaussianLoss: N(0, σ²) and N(1, σ²).
var subsampledMeans = []float64{0, 1}

func (m subsampledGaussianLoss) point(eps float64) lossPoint {
	return gaussPoint(m.threshold(eps), m.sigma, subsampledMeans...)
}

func (m subsampledGaussianLoss) between(a, b lossPoint) (p, q float64) {
	if !m.remove {
		a, b = b, a // L decreasing: a < L ≤ b ⇔ threshold(b) ≤ x < threshold(a)
	}
	n := gaussBetween(a, b, 2)
	mix := (1-m.q)*n[0] + m.q*n[1]
	if m.remove {
		return mix, n[0]
	}
	return n[0], mix
}

// lossScale is q·sqrt(e^(1/σ²) - 1), the standard deviation of the loss
// to first order in q (from its χ² divergence); at q = 1 it exceeds the
// Gaussian's 1/σ, which is harmless: only its order of magnitude is used.
func (m subsampledGaussianLoss) lossScale() float64 {
	return m.q * math.Sqrt(math.Expm1(1/(m.sigma*m.sigma)))
}

func (m subsampledGaussianLoss) lossRange(tail float64) (lo, hi float64) {
	z := normQuantileTail(tail / 2)
	xLo, xHi := -z*m.sigma, 1+z*m.sigma
	lo, hi = m.loss(xLo), m.loss(xHi)
	if !m.remove {
		lo, hi = hi, lo
	}
	return lo, hi
}

// laplaceLoss is the Laplace mechanism with scale b = 1/eps0 (sensitivity
// 1): P = Lap(0, b), Q = Lap(1, b). L(x) = (|x-1| - |x|)/b takes values in
// [-ε0, ε0], with atoms at both ends; it is symmetric, so one direction
// covers add and remove.
type laplaceLoss struct{ eps0 float64 }

// laplaceCDF is P(X ≤ t) for X ~ Lap(mu, b).
func laplaceCDF(t, mu, b float64) float64 {
	if t < mu {
		return 0.5 * math.Exp((t-mu)/b)
	}
	return 1 - 0.5*math.Exp(-(t-mu)/b)
}

// tails returns P(L > eps) and Q(L > eps). For -ε0 ≤ ε < ε0, L > ε ⇔
// x < (1 - ε·b)/2.
func (m laplaceLoss) tails(eps float64) (p, q float64) {
	switch {
	case eps >= m.eps0:
		return 0, 0
	case eps < -m.eps0:
		return 1, 1
	}
	b := 1 / m.eps0
	t := (1 - eps*b) / 2
	return laplaceCDF(t, 0, b), laplaceCDF(t, 1, b)
}

func (m laplaceLoss) point(eps float64) lossPoint {
	var pt lossPoint
	pt.t[0], pt.t[1] = m.tails(eps)
	return pt
}

func (m laplaceLoss) between(a, b lossPoint) (p, q float64) {
	return math.Max(0, a.t[0]-b.t[0]), math.Max(0, a.t[1]-b.t[1])
}

func (m laplaceLoss) lossScale() float64 { return m.eps0 }

func (m laplaceLoss) lossRange(float64) (lo, hi float64) { return -m.eps0, m.eps0 }

// pldPMF is a discretised privacy-loss distribution: mass p[k] at loss
// (lo+k)·h under P, and inf at loss +∞ (outputs Q never produces, or the
// truncated upper tail).
type pldPMF struct {
	lo  int
	p   []float64
	inf float64
}

// discretise turns a release into a pmf on the grid h·Z.
//
// Pessimistic (the accountant's only mode) is the "connect the dots"
// construction of Doroshenko et al. 2022: the P- and Q-mass of the losses in
// each grid interval (ε_i, ε_i+1] is split between its two ends so that
// both masses are preserved. Merging the two ends again is a
// post-processing, so the result dominates the release: its privacy
// profile is at least the true one at every ε, for every composition. The
// mass below the covered range is moved up to its lowest grid point (a
// larger loss) and the mass above it goes to +∞, both also dominating.
// Unlike rounding every loss up to the grid, it does not shift the loss by
// h/2 per release, which over T releases would cost T·h/2 in ε.
//
// !pessimistic rounds every loss DOWN to the grid and drops the upper
// tail: an optimistic lower bound, used by the tests to check the
// pessimistic one from below.
func discretise(m lossModel, h, tail float64, pessimistic bool) pldPMF {
	lossLo, lossHi := m.lossRange(tail)
	ia := int(math.Floor(lossLo / h))
	ib := int(math.Ceil(lossHi / h))
	if ib <= ia {
		ib = ia + 1
	}
	out := pldPMF{lo: ia, p: make([]float64, ib-ia+1)}
	prev := m.point(float64(ia) * h)
	below, _ := m.between(m.point(math.Inf(-1)), prev)
	out.p[0] = below
	denom := -math.Expm1(-h) // 1 - e^-h
	for i := ia; i < ib; i++ {
		a := float64(i) * h
		next := m.point(float64(i+1) * h)
		pm, qm := m.between(prev, next)
		prev = next
		if pm == 0 {
			continue
		}
		if !pessimistic {
			out.p[i-ia] += pm
			continue
		}
		// On (a, a+h], dP = e^L dQ: the share of P-mass that must sit at
		// a+h to keep both masses is (P - e^a·Q)/(1 - e^-h) ∈ [0, P].
		right := (pm - math.Exp(a)*qm) / denom
		right = math.Min(pm, math.Max(0, right))
		out.p[i-ia] += pm - right
		out.p[i+1-ia] += right
	}
	if pessimistic {
		out.inf, _ = m.between(prev, m.point(math.Inf(1)))
		// Round-off in the interval masses (~1e-16 each) can lose P-mass;
		// whatever is missing from 1 goes to +∞, the pessimistic place.
		// (Summed compensated, so that the sum's own round-off is not
		// charged.)
		out.inf = math.Max(out.inf, 1-neumaierSum(out.p))
	}
	out = out.trim()
	return out
}

// replaceOneLoss is the Poisson-subsampled Gaussian under replace-one
// adjacency, with the noise multiplier relative to the replace-one
// sensitivity Δ = 2C: the replaced record's clipped contribution moves from
// +C to -C, so P = (1-q)·N(0, σ²) + q·N(1/2, σ²) and Q = (1-q)·N(0, σ²) +
// q·N(-1/2, σ²) in units of Δ (dp_accounting's REPLACE_ONE pair). It is
// tighter than add/remove at sensitivity 2C, because the record's
// absence still leaves the common (1-q)·N(0, σ²) part. The pair is
// symmetric (x ↦ -x swaps P and Q), so one direction covers both.
type replaceOneLoss struct {
	q, sigma float64
	// xMax bounds the output coordinates searched for a loss threshold.
	xMax float64
}

func newReplaceOneLoss(q, sigma float64) replaceOneLoss {
	return replaceOneLoss{q: q, sigma: sigma, xMax: 1 + 50*sigma}
}

// loss is L(x) = log P(x)/Q(x), increasing in x.
func (m replaceOneLoss) loss(x float64) float64 {
	s2 := 2 * m.sigma * m.sigma
	return logMixRatio(m.q, (x-0.25)/s2) - logMixRatio(m.q, (-x-0.25)/s2)
}

// threshold is the x with L(x) = eps, by Newton's method safeguarded by
// bisection (L has no closed-form inverse); ±Inf beyond the searched range.
// L'(x) = (w(u₊) + w(u₋))/(2σ²) with w(u) = q·e^u/((1-q) + q·e^u).
func (m replaceOneLoss) threshold(eps float64) float64 {
	if math.IsInf(eps, 0) {
		return eps
	}
	lo, hi := -m.xMax, m.xMax
	if m.loss(lo) > eps {
		return math.Inf(-1)
	}
	if m.loss(hi) <= eps {
		return math.Inf(1)
	}
	s2 := 2 * m.sigma * m.sigma
	w := func(u float64) float64 { return 1 / (1 + (1-m.q)/m.q*math.Exp(-u)) }
	x := 0.0
	for range 200 {
		f := m.loss(x) - eps
		if f > 0 {
			hi = x
		} else {
			lo = x
		}
		d := (w((x-0.25)/s2) + w((-x-0.25)/s2)) / s2
		next := x - f/d
		if !(next > lo && next < hi) {
			next = lo + (hi-lo)/2
		}
		if math.Abs(next-x) <= 1e-13*(1+math.Abs(x)) || next == lo || next == hi {
			return next
		}
		x = next
	}
	return x
}

// Components of replaceOneLoss: N(0, σ²), N(1/2, σ²), N(-1/2, σ²).
var replaceOneMeans = []float64{0, 0.5, -0.5}

func (m replaceOneLoss) point(eps float64) lossPoint {
	return gaussPoint(m.threshold(eps), m.sigma, replaceOneMeans...)
}

func (m replaceOneLoss) between(a, b lossPoint) (p, q float64) {
	n := gaussBetween(a, b, 3)
	return (1-m.q)*n[0] + m.q*n[1], (1-m.q)*n[0] + m.q*n[2]
}

// lossScale is that of the add/remove pair at the same σ (the ±1/2 shifts
// are 1 apart).
func (m replaceOneLoss) lossScale() float64 {
	return subsampledGaussianLoss{q: m.q, sigma: m.sigma}.lossScale()
}

func (m replaceOneLoss) lossRange(tail float64) (lo, hi float64) {
	z := normQuantileTail(tail / 2)
	return m.loss(-0.5 - z*m.sigma), m.loss(0.5 + z*m.sigma)
}

// neumaierSum is Σ xs with Neumaier's compensated summation: its error
// does not grow with len(xs).
func neumaierSum(xs []float64) float64 {
	var sum, comp float64
	for _, x := range xs {
		t := sum + x
		if math.Abs(sum) >= math.Abs(x) {
			comp += (sum - t) + x
		} else {
			comp += (x - t) + sum
		}
		sum = t
	}
	return sum + comp
}
