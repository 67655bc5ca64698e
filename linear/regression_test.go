package linear

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// gaussSolve solves A·x = b by Gauss–Jordan elimination with partial
// pivoting on plain slices: the slow independent path the gonum solvers are
// checked against.
func gaussSolve(a [][]float64, b []float64) []float64 {
	n := len(b)
	m := make([][]float64, n)
	for i := range m {
		m[i] = append(append([]float64(nil), a[i]...), b[i])
	}
	for c := range n {
		p := c
		for r := c + 1; r < n; r++ {
			if math.Abs(m[r][c]) > math.Abs(m[p][c]) {
				p = r
			}
		}
		m[c], m[p] = m[p], m[c]
		for r := range n {
			if r == c {
				continue
			}
			f := m[r][c] / m[c][c]
			for j := c; j <= n; j++ {
				m[r][j] -= f * m[c][j]
			}
		}
	}
	x := make([]float64, n)
	for i := range x {
		x[i] = m[i][n] / m[i][i]
	}
	return x
}

// normalEquations forms XᵀX and Xᵀy with plain loops.
func normalEquations(x *mat.Dense, y []float64) ([][]float64, []float64) {
	n, d := x.Dims()
	a := make([][]float64, d)
	b := make([]float64, d)
	for i := range d {
		a[i] = make([]float64, d)
		for j := range d {
			for r := range n {
				a[i][j] += x.At(r, i) * x.At(r, j)
			}
		}
		for r := range n {
			b[i] += x.At(r, i) * y[r]
		}
	}
	return a, b
}

func randomRegression(r *rand.Rand, n, d int, noise float64) (*mat.Dense, []float64, []float64) {
	x := mat.NewDense(n, d, nil)
	beta := make([]float64, d)
	for j := range beta {
		beta[j] = r.NormFloat64() * 3
	}
	y := make([]float64, n)
	for i := range n {
		for j := range d {
			x.Set(i, j, r.NormFloat64())
			y[i] += x.At(i, j) * beta[j]
		}
		y[i] += noise * r.NormFloat64()
	}
	return x, y, beta
}

func closeSlices(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d values %v, want %d %v", what, len(got), got, len(want), want)
	}
	for i := range got {
		if math.Abs(got[i]-want[i]) > tol*math.Max(1, math.Abs(want[i])) {
			t.Fatalf("%s[%d] = %.15g, want %.15g (tolerance %g); all: %v vs %v", what, i, got[i], want[i], tol, got, want)
		}
	}
}

func TestOLSExact(t *testing.T) {
	// Points on y = 1 + 2x − 3z exactly: OLS must return the coefficients.
	x := mat.NewDense(5, 3, []float64{
		1, 0, 0,
		1, 1, 0,
		1, 0, 1,
		1, 2, 1,
		1, -1, 3,
	})
	y := []float64{1, 3, -2, 2, -10}
	beta, err := OLS(x, y)
	if err != nil {
		t.Fatal(err)
	}
	closeSlices(t, "β", beta, []float64{1, 2, -3}, 1e-12)
}

func TestOLSMatchesNormalEquations(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, shape := range []struct{ n, d int }{{10, 1}, {50, 3}, {200, 8}} {
		x, y, _ := randomRegression(r, shape.n, shape.d, 0.5)
		beta, err := OLS(x, y)
		if err != nil {
			t.Fatal(err)
		}
		a, b := normalEquations(x, y)
		closeSlices(t, "OLS vs Gauss–Jordan on the normal equations", beta, gaussSolve(a, b), 1e-9)
		ridge0, err := Ridge(x, y, 0)
		if err != nil {
			t.Fatal(err)
		}
		closeSlices(t, "Ridge(λ=0) vs OLS", ridge0, beta, 1e-9)
	}
}

func TestRidge(t *testing.T) {
	// One feature: β = Σxy / (Σx² + λ) = 28 / (14 + 1).
	beta, err := Ridge(mat.NewDense(3, 1, []float64{1, 2, 3}), []float64{2, 4, 6}, 1)
	if err != nil {
		t.Fatal(err)
	}
	closeSlices(t, "β", beta, []float64{28.0 / 15}, 1e-14)

	// Ridge is OLS on the data augmented with √λ·I rows and zero targets:
	// an independent path (QR of the augmented matrix vs Cholesky).
	r := rand.New(rand.NewPCG(3, 4))
	x, y, _ := randomRegression(r, 40, 4, 1)
	const lambda = 7.5
	aug := mat.NewDense(44, 4, nil)
	aug.Slice(0, 40, 0, 4).(*mat.Dense).Copy(x)
	for j := range 4 {
		aug.Set(40+j, j, math.Sqrt(lambda))
	}
	want, err := OLS(aug, append(append([]float64(nil), y...), 0, 0, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Ridge(x, y, lambda)
	if err != nil {
		t.Fatal(err)
	}
	closeSlices(t, "ridge vs augmented OLS", got, want, 1e-10)
}

func TestSolveNormalNotPositiveDefinite(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    []float64
	}{
		{"singular", []float64{1, 1, 1, 1}},
		{"indefinite", []float64{1, 2, 2, 1}},
		{"negative", []float64{-1, 0, 0, -2}},
	} {
		_, err := SolveNormal(mat.NewSymDense(2, tc.a), []float64{1, 1})
		if !errors.Is(err, ErrNotPositiveDefinite) {
			t.Errorf("%s: err = %v, want ErrNotPositiveDefinite", tc.name, err)
		}
	}
	beta, err := SolveNormal(mat.NewSymDense(2, []float64{2, 1, 1, 3}), []float64{3, 5})
	if err != nil {
		t.Fatal(err)
	}
	closeSlices(t, "β", beta, []float64{0.8, 1.4}, 1e-14)
}

func TestInputErrors(t *testing.T) {
	x := mat.NewDense(3, 2, []float64{1, 0, 1, 1, 1, 2})
	for _, tc := range []struct {
		name string
		run  func() error
		want string
	}{
		{"NaN target", func() error { _, err := OLS(x, []float64{1, 2, math.NaN()}); return err }, "y[2]"},
		{"Inf feature", func() error {
			bad := mat.DenseCopyOf(x)
			bad.Set(1, 1, math.Inf(1))
			_, err := OLS(bad, []float64{1, 2, 3})
			return err
		}, "X[1][1]"},
		{"length", func() error { _, err := OLS(x, []float64{1, 2}); return err }, "2 targets for 3 rows"},
		{"wide", func() error { _, err := OLS(mat.NewDense(1, 2, []float64{1, 2}), []float64{1}); return err }, "at least as many rows"},
		{"collinear", func() error {
			_, err := OLS(mat.NewDense(3, 2, []float64{1, 2, 2, 4, 3, 6}), []float64{1, 2, 3})
			return err
		}, "rank deficient"},
		{"negative ridge", func() error { _, err := Ridge(x, []float64{1, 2, 3}, -1); return err }, "ridge λ"},
		{"XᵀY length", func() error { _, err := SolveNormal(mat.NewSymDense(2, nil), []float64{1}); return err }, "XᵀY has 1"},
	} {
		err := tc.run()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to mention %q", tc.name, err, tc.want)
		}
	}
}

func TestPredictAndIntercept(t *testing.T) {
	x := AddIntercept(mat.NewDense(2, 2, []float64{1, 2, 3, 4}))
	if r, c := x.Dims(); r != 2 || c != 3 || x.At(0, 0) != 1 || x.At(1, 0) != 1 || x.At(1, 2) != 4 {
		t.Fatalf("AddIntercept = %v", mat.Formatted(x))
	}
	closeSlices(t, "Xβ", Predict(x, []float64{0.5, 1, -1}), []float64{-0.5, -0.5}, 0)
}

func TestLossValues(t *testing.T) {
	// A group's mean squared loss is its MSPE (metrics.MSPE).
	for _, tc := range []struct {
		loss      Loss
		m, y      float64
		value, dv float64
	}{
		{Squared, 3, 1, 4, 4},
		{Squared, -1, 2, 9, -6},
		{Logistic, 0, 1, math.Ln2, -0.5},
		{Logistic, 2, 0, 2.1269280110429727, 0.8807970779778823},
		{Logistic, 800, 0, 800, 1},
		{Logistic, -800, 1, 800, -1},
		{Logistic, -800, 0, 0, 0},
	} {
		if v := tc.loss.Value(tc.m, tc.y); math.Abs(v-tc.value) > 1e-14*math.Max(1, tc.value) {
			t.Errorf("%v.Value(%g, %g) = %.17g, want %.17g", tc.loss, tc.m, tc.y, v, tc.value)
		}
		if dv := tc.loss.Derivative(tc.m, tc.y); math.Abs(dv-tc.dv) > 1e-15 {
			t.Errorf("%v.Derivative(%g, %g) = %.17g, want %.17g", tc.loss, tc.m, tc.y, dv, tc.dv)
		}
	}
}

func TestLossDerivativeFiniteDifferences(t *testing.T) {
	const h = 1e-5
	for _, loss := range []Loss{Squared, Logistic} {
		for _, m := range []float64{-3, -0.7, 0, 0.4, 2.5} {
			for _, y := range []float64{0, 1} {
				fd := (loss.Value(m+h, y) - loss.Value(m-h, y)) / (2 * h)
				if got := loss.Derivative(m, y); math.Abs(got-fd) > 1e-8 {
					t.Errorf("%v at m=%g y=%g: derivative %.12g, finite difference %.12g", loss, m, y, got, fd)
				}
			}
		}
	}
}

func TestParseLoss(t *testing.T) {
	for in, want := range map[string]Loss{"squared": Squared, " Logistic ": Logistic, "mse": Squared} {
		if got, err := ParseLoss(in); err != nil || got != want {
			t.Errorf("ParseLoss(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseLoss("hinge"); err == nil || !strings.Contains(err.Error(), "squared or logistic") {
		t.Errorf("ParseLoss(hinge) error = %v", err)
	}
	if Squared.String() != "squared" || Logistic.String() != "logistic" {
		t.Errorf("names: %v %v", Squared, Logistic)
	}
}
