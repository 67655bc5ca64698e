package accounting

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/dsp/fourier"
)

// ErrPLDRange is wrapped by every PLD error that says the PLD accountant
// cannot bound this composition (its privacy loss does not fit the FFT
// window, or the truncated tail alone exceeds δ). The caller should fall
// back to the RDP accountant and say so; it must not report the PLD value.
var ErrPLDRange = errors.New("accounting: outside the PLD accountant's range; use the RDP accountant")

// Limits of the composed privacy-loss window (see composePLD).
const (
	// pldLossCap is the largest composed loss kept on the grid: ε above
	// about this cannot be reported by PLD (the mass above it is charged to
	// δ), which covers the ε ≤ 50 that fairdp supports with room to spare.
	pldLossCap = 64.0
	// pldLossFloor is the smallest composed loss kept: P(L ≤ -40) ≤ e^-40
	// for every composition, because E_P[e^-L] ≤ 1.
	pldLossFloor = -40.0
	// pldTailMass bounds the composed P-mass outside the window on each
	// side (Chernoff), and the per-release upper tail sent to +∞ summed
	// over the releases. Both are added to δ, so they must be far below the
	// smallest δ anyone asks for (≥ 1e-12, see checkPLDDelta).
	pldTailMass = 1e-16
	// pldMaxFFT is the largest FFT the accountant runs (2^23 points, 64 MiB
	// of float64), i.e. a loss window of 838 at h = 1e-4.
	pldMaxFFT = 1 << 23
)

// pldPart is one release composed steps times.
type pldPart struct {
	pmf   pldPMF
	steps int
}

// composedPLD is the composition of all parts on the window of grid
// indices [lo, lo+len(c)): mass c[j] at loss (lo+j)·h, inf at +∞, and
// slack, an upper bound on the mass the circular FFT folded into the window
// from outside it. δ(ε) ≤ Σ_{l > ε} c(l)(1 - e^(ε-l)) + inf + slack.
type composedPLD struct {
	h     float64
	lo    int
	c     []float64
	inf   float64
	slack float64
}

// logMGF is log Σ_k p_k e^(λ·loss_k) over the finite atoms of p (trimmed:
// its end atoms are non-zero), computed by Horner's rule scaled at the end
// atom that e^(λ·loss) favours, so it cannot overflow. Terms far from that
// end can underflow; when the sum is small enough for that to matter it
// is recomputed term by term in log space.
func (p pldPMF) logMGF(lambda, h float64) float64 {
	n := len(p.p)
	var acc, top float64
	if lambda >= 0 {
		s := math.Exp(-lambda * h)
		for k := 0; k < n; k++ {
			acc = acc*s + p.p[k]
		}
		top = lambda * float64(p.lo+n-1) * h
	} else {
		s := math.Exp(lambda * h)
		for k := n - 1; k >= 0; k-- {
			acc = acc*s + p.p[k]
		}
		top = lambda * float64(p.lo) * h
	}
	if acc > 1e-250 {
		return top + math.Log(acc)
	}
	m := math.Inf(-1)
	for k, v := range p.p {
		if v > 0 {
			m = math.Max(m, math.Log(v)+lambda*float64(p.lo+k)*h)
		}
	}
	var sum float64
	for k, v := range p.p {
		if v > 0 {
			sum += math.Exp(math.Log(v) + lambda*float64(p.lo+k)*h - m)
		}
	}
	return m + math.Log(sum)
}

// trim drops the zero atoms at both ends of p.
func (p pldPMF) trim() pldPMF {
	first := slices.IndexFunc(p.p, func(v float64) bool { return v != 0 })
	if first < 0 {
		return pldPMF{lo: p.lo, inf: p.inf}
	}
	last := len(p.p) - 1
	for p.p[last] == 0 {
		last--
	}
	return pldPMF{lo: p.lo + first, p: p.p[first : last+1], inf: p.inf}
}

// cumulant is Σ_i T_i · logMGF_i(λ): the log moment generating function of
// the composed finite loss (a sub-probability measure).
func cumulant(parts []pldPart, lambda, h float64) float64 {
	var k float64
	for _, pt := range parts {
		k += float64(pt.steps) * pt.pmf.logMGF(lambda, h)
	}
	return k
}

// goldenMin minimises a unimodal f on [a, b] by 28 golden-section steps
// (to 1e-5 of the interval). Every λ gives a valid Chernoff bound, so the
// search only decides how tight the window is.
func goldenMin(f func(float64) float64, a, b float64) float64 {
	const g = 0.6180339887498949
	x1, x2 := b-g*(b-a), a+g*(b-a)
	f1, f2 := f(x1), f(x2)
	for range 28 {
		if f1 <= f2 {
			b, x2, f2 = x2, x1, f1
			x1 = b - g*(b-a)
			f1 = f(x1)
		} else {
			a, x1, f1 = x1, x2, f2
			x2 = a + g*(b-a)
			f2 = f(x2)
		}
	}
	return math.Min(f1, f2)
}

// Chernoff bounds on the composed loss S: for λ > 0, P(S ≥ x) ≤
// exp(K(λ) - λx), and for λ < 0, P(S ≤ x) ≤ exp(K(λ) - λx). The λ are
// searched on a log scale in [1e-4, 1e4].
const lambdaLogMin, lambdaLogMax = -4 * math.Ln10, 4 * math.Ln10

// chernoffEdge is the loss beyond which the composed mass is at most tau:
// upper: min over λ > 0 of (K(λ) - log τ)/λ; lower: max over λ < 0 of the
// same. (K(λ) - log τ)/λ is unimodal in λ because λK'(λ) - K(λ) grows.
func chernoffEdge(parts []pldPart, h, tau float64, upper bool) float64 {
	sign := 1.0
	if !upper {
		sign = -1
	}
	f := func(t float64) float64 {
		lam := sign * math.Exp(t)
		return sign * (cumulant(parts, lam, h) - math.Log(tau)) / lam
	}
	return sign * goldenMin(f, lambdaLogMin, lambdaLogMax)
}

// chernoffMass bounds the composed mass beyond x (above if upper, else
// below).
func chernoffMass(parts []pldPart, h, x float64, upper bool) float64 {
	sign := 1.0
	if !upper {
		sign = -1
	}
	f := func(t float64) float64 {
		lam := sign * math.Exp(t)
		return cumulant(parts, lam, h) - lam*x
	}
	return math.Min(1, math.Exp(goldenMin(f, lambdaLogMin, lambdaLogMax)))
}

// composePLD composes the parts by FFT. It chooses a window of the loss
// axis that holds all but pldTailMass of the composed mass on each side
// (Chernoff bounds from the parts' moment generating functions), clipped to
// [pldLossFloor, pldLossCap]; multiplies the parts' discrete Fourier
// transforms on that window, each raised to its number of steps by
// repeated squaring (accurate to a few ulps, unlike exp(T·log z)); and
// transforms back. The circular convolution folds the mass outside the
// window into it; that mass is bounded by the Chernoff bounds and kept as
// slack, so the result is still an upper bound.
func composePLD(parts []pldPart, h float64) (composedPLD, error) {
	out := composedPLD{h: h}
	var logKeep float64
	for _, pt := range parts {
		logKeep += float64(pt.steps) * math.Log1p(-pt.pmf.inf)
	}
	out.inf = -math.Expm1(logKeep)
	for _, pt := range parts {
		if len(pt.pmf.p) == 0 { // all of this part's mass is at +∞
			out.inf, out.lo, out.c = 1, 0, []float64{0}
			return out, nil
		}
	}

	xHi := chernoffEdge(parts, h, pldTailMass, true)
	xLo := chernoffEdge(parts, h, pldTailMass, false)
	tauHi, tauLo := pldTailMass, pldTailMass
	if !(xHi <= pldLossCap) { // also NaN
		xHi = pldLossCap
		tauHi = chernoffMass(parts, h, xHi, true)
	}
	if !(xLo >= pldLossFloor) {
		xLo = pldLossFloor
		tauLo = chernoffMass(parts, h, xLo, false)
	}
	if xLo >= pldLossCap {
		return out, fmt.Errorf("accounting: the composed privacy loss exceeds %v with probability above 1 - %g (epsilon far beyond 50): %w",
			pldLossCap, pldTailMass, ErrPLDRange)
	}
	out.slack = tauHi + tauLo
	out.lo = int(math.Floor(xLo / h))
	width := int(math.Ceil(xHi/h)) - out.lo + 1
	n := 2
	for n < width {
		n *= 2
	}
	if n > pldMaxFFT {
		return out, fmt.Errorf("accounting: the composed privacy loss spans [%.4g, %.4g], which needs an FFT of %d points at interval %g (limit %d): %w",
			xLo, xHi, n, h, pldMaxFFT, ErrPLDRange)
	}

	fft := fourier.NewFFT(n)
	seq := make([]float64, n)
	var prod []complex128
	offset := 0
	for _, pt := range parts {
		clear(seq)
		for k, v := range pt.pmf.p {
			seq[k%n] += v
		}
		coef := fft.Coefficients(nil, seq)
		powComplex(coef, pt.steps)
		if prod == nil {
			prod = coef
		} else {
			for i := range prod {
				prod[i] *= coef[i]
			}
		}
		offset += pt.steps * pt.pmf.lo
	}
	fft.Sequence(seq, prod)
	out.c = make([]float64, n)
	scale := 1 / float64(n)
	for j, v := range seq {
		// Position j holds grid index offset + j modulo n; place it in the
		// window. Negative values are FFT round-off of near-zero masses;
		// raising them to 0 only adds mass.
		idx := ((offset+j-out.lo)%n + n) % n
		out.c[idx] = math.Max(0, v*scale)
	}
	// The finite mass must be Π(1 - inf_i)^T_i; what round-off lost of it
	// could have been anywhere, so it is charged to δ.
	out.slack += math.Max(0, math.Exp(logKeep)-neumaierSum(out.c))
	return out, nil
}

// powComplex raises every z in zs to the power t ≥ 1 by repeated squaring.
func powComplex(zs []complex128, t int) {
	for i, z := range zs {
		r := complex(1, 0)
		for e := t; ; {
			if e&1 == 1 {
				r *= z
			}
			e >>= 1
			if e == 0 {
				break
			}
			z *= z
		}
		zs[i] = r
	}
}

// regrid moves c onto the coarser grid h·Z by connect the dots: the mass
// p at loss l ∈ [a, a+h] is split into p·(1 - e^(a-l))/(1 - e^-h) at a+h
// and the rest at a, which keeps both its P-mass and its Q-mass (p·e^-l).
// The privacy profile of anything composed with it can only grow, because
// the hockey-stick integrand is convex in e^-l. The slack (mass that may
// lie outside c's window) goes to +∞, which bounds it for every later
// composition too.
func (c composedPLD) regrid(h float64) pldPMF {
	lossLo := float64(c.lo) * c.h
	lossHi := float64(c.lo+len(c.c)-1) * c.h
	out := pldPMF{lo: int(math.Floor(lossLo / h)), inf: c.inf + c.slack}
	out.p = make([]float64, int(math.Ceil(lossHi/h))-out.lo+2)
	denom := -math.Expm1(-h)
	for j, v := range c.c {
		if v == 0 {
			continue
		}
		l := float64(c.lo+j) * c.h
		k := int(math.Floor(l/h)) - out.lo
		right := v * -math.Expm1(float64(out.lo+k)*h-l) / denom
		right = math.Min(v, math.Max(0, right))
		out.p[k] += v - right
		out.p[k+1] += right
	}
	return out.trim()
}

// delta is the composed privacy profile at eps: an upper bound on the
// hockey-stick divergence of the composition.
func (c composedPLD) delta(eps float64) float64 {
	d := c.inf + c.slack
	for j := len(c.c) - 1; j >= 0; j-- {
		l := float64(c.lo+j) * c.h
		if l <= eps {
			break
		}
		d += c.c[j] * -math.Expm1(eps-l)
	}
	return math.Min(1, d)
}

// epsilon is the smallest ε ≥ 0 with delta(ε) ≤ delta. Between grid losses
// δ(ε) = A - e^ε·B with A the mass above and B its Q-mass, so the crossing
// is solved exactly. It fails when the mass at +∞ and outside the window
// alone exceeds delta (the window cannot show such an ε).
func (c composedPLD) epsilon(delta float64) (float64, error) {
	base := c.inf + c.slack
	if base >= delta {
		return math.Inf(1), fmt.Errorf("accounting: the privacy loss above %.4g or outside the FFT window has mass %.3g ≥ δ = %g: %w",
			float64(c.lo+len(c.c))*c.h, base, delta, ErrPLDRange)
	}
	var a, b float64 // P- and Q-mass of the grid losses above the current one
	for j := len(c.c) - 1; j >= 0; j-- {
		l := float64(c.lo+j) * c.h
		// δ(l) with the losses above l.
		if base+a-math.Exp(l)*b > delta {
			eps := math.Log((base + a - delta) / b)
			return math.Max(0, eps), nil
		}
		a += c.c[j]
		b += c.c[j] * math.Exp(-l)
	}
	// δ(ε) ≤ delta at the lowest grid loss: below it δ(ε) = A - e^ε·B with
	// every atom above.
	if base+a > delta && b > 0 {
		return math.Max(0, math.Log((base+a-delta)/b)), nil
	}
	return 0, nil
}
