package linear

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/fairdp/fairdp/dpops"
	"gonum.org/v1/gonum/mat"
)

// cscData draws n rows of d features with one one-hot pair (collinear with
// the intercept, as Adult's one-hot blocks are) and costs c0, c1.
func cscData(r *rand.Rand, n, d int) (x, c0, c1 []float64) {
	x = make([]float64, n*d)
	c0, c1 = make([]float64, n), make([]float64, n)
	for i := range n {
		for j := range d - 2 {
			x[i*d+j] = r.NormFloat64()
		}
		hot := r.IntN(2)
		x[i*d+d-2+hot] = 1
		c0[i] = float64(r.IntN(2))
		c1[i] = 1 - c0[i] + 0.5*x[i*d]*r.Float64()
	}
	return x, c0, c1
}

// ridgeByQR solves argmin ‖X̃β − c‖² + ρ‖β‖² as ordinary least squares on
// the augmented system [X̃; √ρ I] β ≈ [c; 0] with a QR factorisation: a
// path independent of the normal equations the learner uses.
func ridgeByQR(t *testing.T, x []float64, n, d int, rho float64, c []float64) []float64 {
	t.Helper()
	a := mat.NewDense(n+d+1, d+1, nil)
	rhs := mat.NewDense(n+d+1, 1, nil)
	for i := range n {
		a.Set(i, 0, 1)
		for j := range d {
			a.Set(i, j+1, x[i*d+j])
		}
		rhs.Set(i, 0, c[i])
	}
	for j := range d + 1 {
		a.Set(n+j, j, math.Sqrt(rho))
	}
	var qr mat.QR
	qr.Factorize(a)
	var beta mat.Dense
	if err := qr.SolveTo(&beta, false, rhs); err != nil {
		t.Fatal(err)
	}
	return mat.Col(nil, 0, &beta)
}

// TestLeastSquaresCSCMatchesQR: without noise the classifier's weights are
// β⁰ − β¹ of the two ridge regressions, each checked against QR.
func TestLeastSquaresCSCMatchesQR(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 7))
	const n, d, rho = 500, 5, 0.5
	x, c0, c1 := cscData(r, n, d)
	l, err := NewLeastSquaresCSC(x, n, d, rho)
	if err != nil {
		t.Fatal(err)
	}
	h, err := l.Fit(nil, c0, c1, 1, math.Inf(1))
	if err != nil {
		t.Fatal(err)
	}
	b0, b1 := ridgeByQR(t, x, n, d, rho, c0), ridgeByQR(t, x, n, d, rho, c1)
	for j := range h.W {
		if want := b0[j] - b1[j]; math.Abs(h.W[j]-want) > 1e-9 {
			t.Errorf("w[%d] = %.12f, want %.12f", j, h.W[j], want)
		}
	}
	// Predictions: 1 exactly where the fitted cost of 1 is lower.
	pred, err := h.Predict(x, n)
	if err != nil {
		t.Fatal(err)
	}
	scores := l.Scores(h)
	for i := range n {
		fit0, fit1 := b0[0], b1[0]
		for j := range d {
			fit0 += b0[j+1] * x[i*d+j]
			fit1 += b1[j+1] * x[i*d+j]
		}
		if want := fit1 < fit0; (pred[i] == 1) != want || math.Abs(scores[i]-(fit0-fit1)) > 1e-9 {
			t.Fatalf("row %d: prediction %d, score %v; fitted costs %v (0) and %v (1)", i, pred[i], scores[i], fit0, fit1)
		}
	}
	l1 := 0.0
	for i := range n {
		s := 1.0 // the intercept
		for j := range d {
			s += math.Abs(x[i*d+j])
		}
		l1 = max(l1, s)
	}
	if l.L1Max() != l1 || l.Rows() != n {
		t.Errorf("L1Max %v, rows %d; want %v, %d", l.L1Max(), l.Rows(), l1, n)
	}
}

// TestLeastSquaresCSCNoise recovers the noise the private fit put on Xᵀc¹
// (the Gram matrix is public, so noise = (XᵀX + ρI)(β¹_noisy − β¹)) and
// checks it is Laplace with scale L1Max·sensitivity/ε: mean |noise| = scale.
// It also checks the sensitivity itself: changing one cost c¹ᵢ by s moves
// Xᵀc¹ by s·‖x̃ᵢ‖₁ ≤ s·L1Max in L1 norm, with equality at the largest row.
func TestLeastSquaresCSCNoise(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	const n, d, rho, sens, eps = 300, 4, 1.0, 0.7, 2.0
	x, c0, c1 := cscData(r, n, d)
	l, err := NewLeastSquaresCSC(x, n, d, rho)
	if err != nil {
		t.Fatal(err)
	}
	exact, _ := l.Fit(nil, c0, c1, sens, math.Inf(1))
	seed := uint64(9)
	noise, _ := dpops.NewRand(&seed)
	var sumAbs float64
	k := 0
	for range 400 {
		h, err := l.Fit(noise, c0, c1, sens, eps)
		if err != nil {
			t.Fatal(err)
		}
		diff := make([]float64, d+1)
		for j := range diff {
			diff[j] = exact.W[j] - h.W[j] // = β¹_noisy − β¹
		}
		var z mat.VecDense
		z.MulVec(l.gram, mat.NewVecDense(d+1, diff))
		for j := range d + 1 {
			sumAbs += math.Abs(z.AtVec(j))
			k++
		}
	}
	scale := l.L1Max() * sens / eps
	if got, tol := sumAbs/float64(k), 4*scale/math.Sqrt(float64(k)); math.Abs(got-scale) > tol {
		t.Errorf("mean |noise on Xᵀc¹| = %v, want %v ± %v", got, scale, tol)
	}

	// Sensitivity: brute force over every row.
	xtc := func(c []float64) []float64 {
		out := make([]float64, d+1)
		mat.NewVecDense(d+1, out).MulVec(l.x.T(), mat.NewVecDense(n, c))
		return out
	}
	base := xtc(c1)
	worst := 0.0
	for i := range n {
		c := slices.Clone(c1)
		c[i] += sens
		moved := 0.0
		for j, v := range xtc(c) {
			moved += math.Abs(v - base[j])
		}
		worst = max(worst, moved)
	}
	if math.Abs(worst-scale*eps) > 1e-9 {
		t.Errorf("largest L1 move of Xᵀc¹ is %v, want L1Max·sensitivity = %v", worst, scale*eps)
	}
}

func TestLeastSquaresCSCErrors(t *testing.T) {
	if _, err := NewLeastSquaresCSC([]float64{1, 2, 3}, 2, 2, 1); err == nil {
		t.Error("short X accepted")
	}
	if _, err := NewLeastSquaresCSC([]float64{1, math.NaN()}, 1, 2, 1); err == nil {
		t.Error("NaN feature accepted")
	}
	if _, err := NewLeastSquaresCSC([]float64{1, 2}, 1, 2, -1); err == nil {
		t.Error("negative ridge accepted")
	}
	l, err := NewLeastSquaresCSC([]float64{1, 2, 3, 4}, 2, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Fit(nil, []float64{1}, []float64{1, 2}, 1, math.Inf(1)); err == nil {
		t.Error("short costs accepted")
	}
	if _, err := l.Fit(nil, []float64{1, 0}, []float64{1, 2}, 1, 1); err == nil {
		t.Error("private fit without a rand accepted")
	}
	if _, err := (LinearClassifier{W: []float64{0, 1}}).Predict([]float64{1, 2}, 1); err == nil {
		t.Error("wrong feature count accepted")
	}
}
