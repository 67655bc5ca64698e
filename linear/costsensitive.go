package linear

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/fairdp/fairdp/models"
	"gonum.org/v1/gonum/mat"
)

// LeastSquaresCSC is the private cost-sensitive classification oracle of
// Jagielski et al.'s DP oracle learner (2019), after Agarwal et al.'s
// least-squares learner: given for every record the cost c⁰ᵢ of predicting 0
// and c¹ᵢ of predicting 1, it fits one least-squares regression per cost
// vector, β^j = (XᵀX + ρI)⁻¹ Xᵀc^j, and predicts 1 where the fitted cost of
// 1 is lower.
//
// Privacy: the design X does not contain the sensitive attribute (it is
// "A-blind") and features are public, so XᵀX is released without noise and
// factorised once. Only costs that depend on the sensitive attribute are
// private: Fit adds Laplace noise to Xᵀc¹ with L1 sensitivity
// max‖x̃ᵢ‖₁ · (largest change of one c¹ᵢ), x̃ᵢ being the row with its
// intercept. c⁰ (the label cost) is public and gets no noise.
type LeastSquaresCSC struct {
	x     *mat.Dense    // n × (d+1), intercept first
	gram  *mat.SymDense // XᵀX + ρI
	l1Max float64       // max_i ‖x̃_i‖₁
}

// NewLeastSquaresCSC prepares the learner on n rows of dim features (x is
// row-major). ridge ρ ≥ 0 regularises XᵀX, which one-hot features with an
// intercept make singular; DefaultRidge(n) is a mild choice.
func NewLeastSquaresCSC(x []float64, n, dim int, ridge float64) (*LeastSquaresCSC, error) {
	if n < 1 || dim < 1 || len(x) != n*dim {
		return nil, fmt.Errorf("linear: %d feature values for %d rows × %d features", len(x), n, dim)
	}
	if !(ridge >= 0) || math.IsInf(ridge, 1) {
		return nil, fmt.Errorf("linear: ridge = %v, want a finite number ≥ 0", ridge)
	}
	for i, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("linear: feature %d of row %d is %v, want a finite number", i%dim, i/dim, v)
		}
	}
	xi := AddIntercept(mat.NewDense(n, dim, x))
	l := &LeastSquaresCSC{x: xi, gram: mat.NewSymDense(dim+1, nil)}
	l.gram.SymOuterK(1, xi.T())
	for j := range dim + 1 {
		l.gram.SetSym(j, j, l.gram.At(j, j)+ridge)
	}
	for i := range n {
		s := 0.0
		for _, v := range xi.RawRowView(i) {
			s += math.Abs(v)
		}
		l.l1Max = max(l.l1Max, s)
	}
	return l, nil
}

// DefaultRidge is the ridge NewLeastSquaresCSC gets from the oracle learner
// when none is set: 10⁻⁴ per record, small next to the Gram matrix's
// diagonal for any feature that is not almost always zero.
func DefaultRidge(n int) float64 { return 1e-4 * float64(n) }

// Rows is the number of records the learner was prepared on.
func (l *LeastSquaresCSC) Rows() int { r, _ := l.x.Dims(); return r }

// L1Max is max‖x̃ᵢ‖₁ over the rows with their intercept: the factor between
// a cost's sensitivity and that of Xᵀc.
func (l *LeastSquaresCSC) L1Max() float64 { return l.l1Max }

// LinearClassifier predicts 1 where x̃·W > 0, x̃ = (1, x).
type LinearClassifier struct {
	W []float64 `json:"w"` // intercept first
	// RowBound, when > 0, clips every scored row to this L2 norm first
	// (models.ClipRows), as objective perturbation clipped the rows its
	// weights were fitted on (PostprocConfig.BaseClipAtPredict).
	RowBound float64 `json:"row_bound,omitempty"`
}

// Fit solves the cost-sensitive problem for costs c0 (public) and c1
// (private): one change of the data moves any single c1ᵢ by at most
// c1Sensitivity. For finite epsilon, Xᵀc¹ gets Laplace noise of scale
// L1Max·c1Sensitivity/epsilon (an epsilon-DP release); epsilon = +Inf fits
// without noise. The classifier predicts 1 where x̃·(β⁰ − β¹) > 0.
func (l *LeastSquaresCSC) Fit(r *rand.Rand, c0, c1 []float64, c1Sensitivity, epsilon float64) (LinearClassifier, error) {
	n, d := l.x.Dims()
	if len(c0) != n || len(c1) != n {
		return LinearClassifier{}, fmt.Errorf("linear: %d and %d costs for %d rows, want one of each per row", len(c0), len(c1), n)
	}
	xtc0 := make([]float64, d)
	mat.NewVecDense(d, xtc0).MulVec(l.x.T(), mat.NewVecDense(n, c0))
	xtc1 := make([]float64, d)
	mat.NewVecDense(d, xtc1).MulVec(l.x.T(), mat.NewVecDense(n, c1))
	if !math.IsInf(epsilon, 1) {
		if r == nil {
			return LinearClassifier{}, errors.New("linear: private cost-sensitive fit needs a *rand.Rand for its noise")
		}
		if !(c1Sensitivity >= 0) || math.IsInf(c1Sensitivity, 1) {
			return LinearClassifier{}, fmt.Errorf("linear: cost sensitivity %v, want a finite number ≥ 0", c1Sensitivity)
		}
		if c1Sensitivity > 0 {
			if err := laplaceVector(r, xtc1, l.l1Max*c1Sensitivity, epsilon, d); err != nil {
				return LinearClassifier{}, err
			}
		}
	}
	b0, err := SolveNormal(l.gram, xtc0)
	if err != nil {
		return LinearClassifier{}, err
	}
	b1, err := SolveNormal(l.gram, xtc1)
	if err != nil {
		return LinearClassifier{}, err
	}
	w := make([]float64, d)
	for j := range w {
		w[j] = b0[j] - b1[j]
	}
	return LinearClassifier{W: w}, nil
}

// Scores returns x̃·W for every row the learner was prepared on.
func (l *LeastSquaresCSC) Scores(h LinearClassifier) []float64 {
	n, d := l.x.Dims()
	out := make([]float64, n)
	mat.NewVecDense(n, out).MulVec(l.x, mat.NewVecDense(d, h.W))
	return out
}

// Margins returns x̃·W for n rows of features x (row-major, without
// intercept).
func (h LinearClassifier) Margins(x []float64, n int) ([]float64, error) {
	d := len(h.W) - 1
	if d < 1 || n < 0 || len(x) != n*d {
		return nil, fmt.Errorf("linear: %d feature values for %d rows of a classifier with %d features", len(x), n, d)
	}
	out := make([]float64, n)
	if n == 0 {
		return out, nil
	}
	if h.RowBound > 0 {
		x = models.ClipRows(nil, x, d, h.RowBound)
	}
	mat.NewVecDense(n, out).MulVec(mat.NewDense(n, d, x), mat.NewVecDense(d, h.W[1:]))
	for i := range out {
		out[i] += h.W[0]
	}
	return out, nil
}

// Probabilities returns the logistic model's P(y = 1 | x) = σ(x̃·W) for n
// rows of features x.
func (h LinearClassifier) Probabilities(x []float64, n int) ([]float64, error) {
	m, err := h.Margins(x, n)
	for i, v := range m {
		m[i] = sigmoid(v)
	}
	return m, err
}

// Predict returns h's 0/1 predictions (1 where x̃·W > 0) on n rows of
// features x (row-major, without intercept).
func (h LinearClassifier) Predict(x []float64, n int) ([]int, error) {
	m, err := h.Margins(x, n)
	if err != nil {
		return nil, err
	}
	out := make([]int, n)
	for i, v := range m {
		if v > 0 {
			out[i] = 1
		}
	}
	return out, nil
}
