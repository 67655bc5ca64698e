package linear

import (
	"errors"
	"fmt"
	"math"
	"strings"

	_ "github.com/fairdp/fairdp/backend" // OpenBLAS for gonum in the openblas build
	"gonum.org/v1/gonum/mat"
)

// ErrNotPositiveDefinite is returned (wrapped) when a Gram matrix XᵀX, plain
// or noisy, cannot be Cholesky-factorised: the normal equations then have no
// unique solution. Budget tailoring's stage 1 falls back on it.
var ErrNotPositiveDefinite = errors.New("linear: XᵀX is not positive definite")

// Loss is the per-example loss of a linear model with margin m = xᵀβ, the
// one thing that differs between linear and logistic regression.
type Loss int

const (
	// Squared is the squared error (m − y)², so a group's mean loss is its
	// mean squared prediction error (MSPE, the measure of Alabi and Wiggins 2023).
	Squared Loss = iota
	// Logistic is the negative log-likelihood log(1 + eᵐ) − y·m of a
	// label y ∈ {0, 1} under P(y = 1) = 1/(1 + e⁻ᵐ).
	Logistic
)

// String is the name ParseLoss accepts.
func (l Loss) String() string {
	switch l {
	case Squared:
		return "squared"
	case Logistic:
		return "logistic"
	}
	return fmt.Sprintf("Loss(%d)", int(l))
}

// ParseLoss reads "squared" or "logistic" (as in a config file or a flag).
func ParseLoss(s string) (Loss, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "squared", "linear", "mse":
		return Squared, nil
	case "logistic", "log", "logloss":
		return Logistic, nil
	}
	return 0, fmt.Errorf("linear: loss %q, expected squared or logistic", s)
}

func (l Loss) valid() error {
	if l != Squared && l != Logistic {
		return fmt.Errorf("linear: unknown loss %d, expected Squared or Logistic", int(l))
	}
	return nil
}

// Value is the loss of one example with margin m and target y.
func (l Loss) Value(m, y float64) float64 {
	if l == Logistic {
		return softplus(m) - y*m
	}
	d := m - y
	return d * d
}

// Derivative is ∂Value/∂m; the example's gradient with respect to β is
// Derivative·x.
func (l Loss) Derivative(m, y float64) float64 {
	if l == Logistic {
		return sigmoid(m) - y
	}
	return 2 * (m - y)
}

// softplus is log(1 + eᵐ) without overflow for large |m|.
func softplus(m float64) float64 {
	if m > 0 {
		return m + math.Log1p(math.Exp(-m))
	}
	return math.Log1p(math.Exp(m))
}

// sigmoid is 1/(1 + e⁻ᵐ) without overflow.
func sigmoid(m float64) float64 {
	if m >= 0 {
		return 1 / (1 + math.Exp(-m))
	}
	e := math.Exp(m)
	return e / (1 + e)
}

// Predict returns Xβ: fitted values for squared loss, log-odds for logistic.
// It panics if β has the wrong length (a programming error).
func Predict(x *mat.Dense, beta []float64) []float64 {
	n, d := x.Dims()
	if len(beta) != d {
		panic(fmt.Sprintf("linear.Predict: %d coefficients for %d columns", len(beta), d))
	}
	out := make([]float64, n)
	if n == 0 {
		return out
	}
	mat.NewVecDense(n, out).MulVec(x, mat.NewVecDense(d, beta))
	return out
}

// AddIntercept returns [1 | X]: a constant first column, so the fitted
// model has an intercept β₀.
func AddIntercept(x *mat.Dense) *mat.Dense {
	n, d := x.Dims()
	if n == 0 {
		return &mat.Dense{}
	}
	out := mat.NewDense(n, d+1, nil)
	for i := range n {
		out.Set(i, 0, 1)
		for j := range d {
			out.Set(i, j+1, x.At(i, j))
		}
	}
	return out
}

// checkXY validates a design matrix and its targets: matching lengths, at
// least one row and one column, every value finite. Errors name the row.
func checkXY(x *mat.Dense, y []float64) (n, d int, err error) {
	if x == nil || x.IsEmpty() {
		return 0, 0, errors.New("linear: empty design matrix X")
	}
	n, d = x.Dims()
	if len(y) != n {
		return 0, 0, fmt.Errorf("linear: %d targets for %d rows of X, want one per row", len(y), n)
	}
	for i := range n {
		for j := range d {
			if v := x.At(i, j); math.IsNaN(v) || math.IsInf(v, 0) {
				return 0, 0, fmt.Errorf("linear: X[%d][%d] = %v, want a finite number", i, j, v)
			}
		}
		if math.IsNaN(y[i]) || math.IsInf(y[i], 0) {
			return 0, 0, fmt.Errorf("linear: y[%d] = %v, want a finite number", i, y[i])
		}
	}
	return n, d, nil
}

// OLS is the least-squares fit argmin ‖Xβ − y‖², computed by a QR
// factorisation of X (more accurate than forming XᵀX). It fails when X has
// fewer rows than columns or is (numerically) rank deficient.
func OLS(x *mat.Dense, y []float64) ([]float64, error) {
	n, d, err := checkXY(x, y)
	if err != nil {
		return nil, err
	}
	if n < d {
		return nil, fmt.Errorf("linear: OLS needs at least as many rows as columns, got %d×%d", n, d)
	}
	var qr mat.QR
	qr.Factorize(x)
	var b mat.Dense
	if err := qr.SolveTo(&b, false, mat.NewDense(n, 1, append([]float64(nil), y...))); err != nil {
		return nil, fmt.Errorf("linear: OLS: X is rank deficient (%v); drop collinear columns or use Ridge", err)
	}
	return mat.Col(nil, 0, &b), nil
}

// Ridge is argmin ‖Xβ − y‖² + λ‖β‖², solved from (XᵀX + λI)β = Xᵀy. Every
// coefficient is penalised, the intercept column included; λ = 0 is OLS
// through the normal equations.
func Ridge(x *mat.Dense, y []float64, lambda float64) ([]float64, error) {
	if !(lambda >= 0) || math.IsInf(lambda, 1) {
		return nil, fmt.Errorf("linear: ridge λ = %v, want a finite number ≥ 0", lambda)
	}
	if _, _, err := checkXY(x, y); err != nil {
		return nil, err
	}
	xtx, xty := gram(x, y)
	return SolveNormal(addDiagonal(xtx, lambda), xty)
}

// gram returns XᵀX and Xᵀy.
func gram(x *mat.Dense, y []float64) (*mat.SymDense, []float64) {
	n, d := x.Dims()
	xtx := mat.NewSymDense(d, nil)
	xtx.SymOuterK(1, x.T())
	xty := make([]float64, d)
	mat.NewVecDense(d, xty).MulVec(x.T(), mat.NewVecDense(n, y))
	return xtx, xty
}

// addDiagonal returns a + λI (a copy; a is unchanged).
func addDiagonal(a *mat.SymDense, lambda float64) *mat.SymDense {
	out := mat.NewSymDense(a.SymmetricDim(), nil)
	out.CopySym(a)
	if lambda != 0 {
		for i := range out.SymmetricDim() {
			out.SetSym(i, i, out.At(i, i)+lambda)
		}
	}
	return out
}

// SolveNormal solves the normal equations (XᵀX)β = Xᵀy by Cholesky. It
// returns an error wrapping ErrNotPositiveDefinite when XᵀX is not
// (numerically) positive definite, which for a noisy XᵀX is a real outcome,
// not a bug.
func SolveNormal(xtx mat.Symmetric, xty []float64) ([]float64, error) {
	d := xtx.SymmetricDim()
	if len(xty) != d {
		return nil, fmt.Errorf("linear: XᵀY has %d entries for a %d×%d XᵀX", len(xty), d, d)
	}
	for i := range d {
		for j := i; j < d; j++ {
			if v := xtx.At(i, j); math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("linear: XᵀX[%d][%d] = %v, want a finite number", i, j, v)
			}
		}
		if math.IsNaN(xty[i]) || math.IsInf(xty[i], 0) {
			return nil, fmt.Errorf("linear: XᵀY[%d] = %v, want a finite number", i, xty[i])
		}
	}
	var ch mat.Cholesky
	if ok := ch.Factorize(xtx); !ok {
		return nil, fmt.Errorf("%w (Cholesky failed)", ErrNotPositiveDefinite)
	}
	var b mat.VecDense
	if err := ch.SolveVecTo(&b, mat.NewVecDense(d, append([]float64(nil), xty...))); err != nil {
		return nil, fmt.Errorf("%w (%v)", ErrNotPositiveDefinite, err)
	}
	return append([]float64(nil), b.RawVector().Data...), nil
}
