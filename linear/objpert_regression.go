package linear

// Private least squares by objective perturbation (Chaudhuri, Monteleoni
// and Sarwate 2011, Algorithm 2), the regression twin of
// ObjectivePerturbation.
//
// Algorithm 2 needs a convex, twice differentiable loss with |ℓ'| ≤ 1 and
// 0 ≤ ℓ'' ≤ c; the squared loss has an unbounded slope. The slope is
// bounded here by clipping the residual smoothly: the loss of a residual
// r = m − t (margin m = vᵀx̃, target t) is
//
//	ℓ_h(r) = h (√(1 + (r/h)²) − 1)
//
// (the pseudo-Huber loss divided by h), which is r²/(2h) to within 6 %
// for |r| ≤ h/2 and grows linearly beyond h, with ℓ' = u/√(1+u²) ∈ (−1, 1)
// and ℓ'' = (1/h)(1+u²)^{−3/2} ∈ (0, 1/h] for u = r/h. So c = 1/h.
//
// Chaudhuri et al. prove Theorem 9 for margin losses ℓ(y·vᵀx); the proof
// (the change of variables from the noise b to the minimiser) uses only
// that a record's gradient is ℓ'·x with |ℓ'| ≤ 1 and its Hessian ℓ''·xxᵀ,
// of rank one with 0 ≤ ℓ'' ≤ c, which holds for ℓ_h(vᵀx − t) too. Kifer,
// Smith and Thakurta, "Private Convex Empirical Risk Minimization and
// High-dimensional Regression" (COLT 2012), Theorem 2, state objective
// perturbation for any convex loss with a bounded gradient and a bounded
// rank-one Hessian in this generality; we keep Algorithm 2's constants
// (ε', Δ), which that proof gives with c = 1/h.
//
// The assumptions and how they are met: rows are clipped to the public
// bound B and rescaled with their intercept feature as for logistic
// regression (objPertRows); the labels' range [lo, hi] is public (a
// setting, never read off the data), labels outside it are clipped into
// it and counted, and t = (2y − lo − hi)/(hi − lo) ∈ [−1, 1]. The privacy
// guarantee does not depend on the label bound (ℓ_h's slope is bounded for
// any t); the bound sets the scale on which h = 1 means "half the range".

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/floats"
)

// ObjPertLeastSquaresLoss names the loss in receipts and reports.
const ObjPertLeastSquaresLoss = "least squares with smoothly clipped residuals h(√(1+(r/h)²) − 1) (pseudo-Huber)"

// DefaultResidualScale is h when none is given: residuals up to half the
// label range are fitted almost quadratically.
const DefaultResidualScale = 1

// ObjPertRegressionOptions are the public settings of
// ObjectivePerturbationLeastSquares.
type ObjPertRegressionOptions struct {
	ObjPertOptions
	// LabelLo < LabelHi is the public range of the label (e.g. a score's
	// scale); labels outside it are clipped into it.
	LabelLo, LabelHi float64
	// ResidualScale is h > 0 of the loss, in units of half the label
	// range (0: DefaultResidualScale). A larger h is closer to plain least
	// squares but scales the data's gradient down by h against the noise.
	ResidualScale float64
}

func (o ObjPertRegressionOptions) validate() error {
	if err := o.ObjPertOptions.validate(); err != nil {
		return err
	}
	if !(o.LabelLo < o.LabelHi) || math.IsInf(o.LabelLo, 0) || math.IsInf(o.LabelHi, 0) {
		return fmt.Errorf("linear: objective perturbation: the label range [%v, %v] must be finite with lo < hi; set it from public knowledge of the label", o.LabelLo, o.LabelHi)
	}
	if !(o.ResidualScale >= 0) || math.IsInf(o.ResidualScale, 1) {
		return fmt.Errorf("linear: objective perturbation: residual scale h must be a finite number > 0, or 0 for %v (got %v)", DefaultResidualScale, o.ResidualScale)
	}
	return nil
}

// ObjPertRegression is what a least-squares fit adds to ObjPertResult.
type ObjPertRegression struct {
	// LabelLo, LabelHi are the public label range and ResidualScale h.
	LabelLo, LabelHi, ResidualScale float64
	// ClippedLabels counts the training labels outside the range: an exact
	// statistic of the private data, reported only on request.
	ClippedLabels int
}

func (g *ObjPertRegression) note() string {
	return fmt.Sprintf("loss %s with h = %g on labels clipped to the public range [%g, %g] and mapped to [−1, 1], so |ℓ'| ≤ 1 and "+
		"ℓ'' ≤ c = 1/h with a rank-one Hessian (the conditions of Kifer, Smith, Thakurta 2012, Theorem 2)",
		ObjPertLeastSquaresLoss, g.ResidualScale, g.LabelLo, g.LabelHi)
}

// ObjectivePerturbationLeastSquares fits a linear regression of y on n ×
// dim features privately by Algorithm 2 with the loss ℓ_h (see the file's
// comment): it returns the minimiser v of (1/n) Σ ℓ_h(vᵀx̃_i − t_i) +
// (Λ+Δ)/2 ‖v‖² + (1/n) bᵀv. The result's Weights and Intercept predict in
// the label's units: ŷ = Weights·x + Intercept for a preprocessed row x.
func ObjectivePerturbationLeastSquares(r *rand.Rand, x []float64, n, dim int, y []float64, opt ObjPertRegressionOptions) (*ObjPertResult, error) {
	res, _, err := objectivePerturbationLeastSquares(r, x, n, dim, y, opt)
	return res, err
}

// objectivePerturbationLeastSquares also returns the noise b, for the
// tests only (see objectivePerturbation).
func objectivePerturbationLeastSquares(r *rand.Rand, x []float64, n, dim int, y []float64, opt ObjPertRegressionOptions) (*ObjPertResult, []float64, error) {
	if err := opt.validate(); err != nil {
		return nil, nil, err
	}
	if n < 1 || dim < 1 || len(x) != n*dim || len(y) != n {
		return nil, nil, fmt.Errorf("linear: %d feature values and %d labels for %d rows × %d features", len(x), len(y), n, dim)
	}
	h := opt.ResidualScale
	if h == 0 {
		h = DefaultResidualScale
	}
	reg := &ObjPertRegression{LabelLo: opt.LabelLo, LabelHi: opt.LabelHi, ResidualScale: h}
	mid, half := (opt.LabelLo+opt.LabelHi)/2, (opt.LabelHi-opt.LabelLo)/2
	t := make([]float64, n)
	for i, v := range y {
		if math.IsNaN(v) {
			return nil, nil, fmt.Errorf("linear: record %d has no label (NaN)", i)
		}
		if c := min(max(v, opt.LabelLo), opt.LabelHi); c != v {
			v = c
			reg.ClippedLabels++
		}
		t[i] = (v - mid) / half
	}
	minimise := func(e *Examples, p penalty) ([]float64, error) {
		return minimiseNewton(e, p, "least squares", pseudoHuberSums(e, h), func(m, t float64) float64 {
			_, _, d2 := pseudoHuber(m-t, h)
			return d2
		})
	}
	res, b, err := objPertFit(r, x, n, dim, t, opt.ObjPertOptions, 1/h, false, "least-squares regression weights", minimise)
	if err != nil {
		return nil, nil, err
	}
	res.Regression = reg
	res.Weights = make([]float64, dim)
	floats.ScaleTo(res.Weights, half/res.Scale, res.Scaled[:dim])
	res.Intercept = mid + half*res.Scaled[dim]/res.Scale
	return res, b, nil
}

// pseudoHuber is ℓ_h(r) = h(√(1+(r/h)²) − 1) and its first two
// derivatives; the value is computed as h·u²/(√(1+u²) + 1), which does
// not cancel for small u = r/h.
func pseudoHuber(r, h float64) (loss, d1, d2 float64) {
	u := r / h
	q := math.Sqrt(1 + u*u)
	return h * u * u / (q + 1), u / q, 1 / (h * q * q * q)
}

// pseudoHuberSums is minimiseNewton's sums for ℓ_h on ex (targets ex.Y).
func pseudoHuberSums(ex *Examples, h float64) func(w, grad []float64) float64 {
	return func(w, grad []float64) float64 {
		clear(grad)
		total := 0.0
		for i := range ex.Len() {
			row := ex.X.RawRowView(i)
			l, d1, _ := pseudoHuber(floats.Dot(row, w)-ex.Y[i], h)
			total += l
			floats.AddScaled(grad, d1, row)
		}
		return total
	}
}

// Predict is Weights·x + Intercept for each row of the preprocessed
// features x (row-major, len(Weights) a row).
func (r *ObjPertResult) Predict(x []float64) []float64 {
	d := len(r.Weights)
	out := make([]float64, len(x)/d)
	for i := range out {
		out[i] = floats.Dot(r.Weights, x[i*d:(i+1)*d]) + r.Intercept
	}
	return out
}
