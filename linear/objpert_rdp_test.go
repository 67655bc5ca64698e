package linear

import (
	"math"
	"testing"

	"github.com/fairdp/fairdp/dpops/accounting"
)

// record1D is one row of a one-dimensional logistic instance: |x| ≤ 1 and
// a label 0 or 1.
type record1D struct {
	x float64
	y int
}

// logDensity1D is the log density of the released θ of one-dimensional
// Gaussian objective perturbation on recs (no intercept): θ minimises
// Σ ℓ(x_i θ, y_i) + (λ/2)θ² + bθ with b ~ N(0, σ²), so
// b(θ) = −Σ ℓ'(x_i θ)x_i − λθ, a bijection, and by the change of variables
// p(θ) = φ_σ(b(θ)) |b'(θ)| with |b'(θ)| = Σ ℓ″(x_i θ)x_i² + λ. It is
// written from the objective alone, independently of the bound.
func logDensity1D(recs []record1D, lambda, sigma, theta float64) float64 {
	b, jac := -lambda*theta, lambda
	for _, r := range recs {
		p := sigmoid(r.x * theta)
		b -= (p - float64(r.y)) * r.x
		jac += p * (1 - p) * r.x * r.x
	}
	return -b*b/(2*sigma*sigma) - math.Log(sigma*math.Sqrt(2*math.Pi)) + math.Log(jac)
}

// renyi1D is the Rényi divergence D_α(P_D ‖ P_D') of the released θ on a
// grid θ = s·sinh(u), fine near 0 (where the Jacobians differ) and wide
// enough for the noise's spread σ/λ; it also returns ∫p_D, which must be 1
// for the grid to be trusted.
func renyi1D(d, d2 []record1D, lambda, sigma, alpha float64) (div, mass float64) {
	const s, points = 0.01, 400_000
	top := math.Asinh(1e3 * (sigma + float64(len(d)+1)) / lambda / s)
	du := 2 * top / points
	maxLog := math.Inf(-1)
	logs := make([]float64, 0, points+1)
	for i := range points + 1 {
		u := -top + float64(i)*du
		theta := s * math.Sinh(u)
		w := math.Log(s * math.Cosh(u) * du)
		lp, lq := logDensity1D(d, lambda, sigma, theta), logDensity1D(d2, lambda, sigma, theta)
		mass += math.Exp(lp + w)
		l := alpha*lp + (1-alpha)*lq + w
		logs = append(logs, l)
		maxLog = math.Max(maxLog, l)
	}
	sum := 0.0
	for _, l := range logs {
		sum += math.Exp(l - maxLog)
	}
	return (maxLog + math.Log(sum)) / (alpha - 1), mass
}

// TestObjPertGaussianRDPAboveExact checks the Rényi curve of Gaussian
// objective perturbation against the exact divergence of one-dimensional
// logistic instances, both neighbours of each pair and both directions:
// one where the Jacobians differ most (a row against a zero row, a small
// regulariser) and one where only the Gaussian term does (the same row
// with the other label, a large regulariser). It also checks that the
// test has teeth: the bound without its ε_J term, or without the log 2 of
// its moment term, falls below the exact divergence somewhere.
func TestObjPertGaussianRDPAboveExact(t *testing.T) {
	shared := []record1D{{0.3, 1}, {-0.7, 0}, {0.9, 1}}
	cases := []struct {
		name   string
		x, x2  record1D
		n      int
		l2     float64 // Λ on the mean loss: λ = nΛ on the sum
		sigmas []float64
	}{
		{"jacobian", record1D{1, 0}, record1D{0, 0}, 1, 0.01, []float64{3, 10}},
		{"jacobian-shared", record1D{1, 0}, record1D{0, 1}, 4, 0.004, []float64{10}},
		{"gaussian", record1D{1, 0}, record1D{1, 1}, 4, 1, []float64{0.5, 2, 8}},
	}
	alphas := []float64{1.05, 1.5, 2, 5, 10, 30}
	var noJacobianCaught, noLog2Caught bool
	for _, c := range cases {
		d, d2 := []record1D{c.x}, []record1D{c.x2}
		if c.n > 1 {
			d, d2 = append(append([]record1D{}, shared...), c.x), append(append([]record1D{}, shared...), c.x2)
		}
		lambda := float64(c.n) * c.l2
		epsJ := ObjPertJacobianEpsilon(c.n, c.l2, LogisticCurvature)
		for _, sigma := range c.sigmas {
			bound := ObjPertGaussianRDP(sigma, epsJ, alphas)
			for i, a := range alphas {
				for dir, pair := range [][2][]record1D{{d, d2}, {d2, d}} {
					exact, mass := renyi1D(pair[0], pair[1], lambda, sigma, a)
					if math.Abs(mass-1) > 1e-6 {
						t.Fatalf("%s σ=%v: the grid holds mass %v of the release, want 1", c.name, sigma, mass)
					}
					if !(bound[i] >= exact) {
						t.Errorf("%s σ=%v α=%v direction %d: bound %.6g below the exact divergence %.6g", c.name, sigma, a, dir, bound[i], exact)
					}
					if bound[i]-epsJ < exact {
						noJacobianCaught = true
					}
					if bound[i]-math.Ln2/(a-1) < exact {
						noLog2Caught = true
					}
				}
			}
		}
	}
	if !noJacobianCaught || !noLog2Caught {
		t.Errorf("the instances cannot tell a shrunk bound: without ε_J caught %v, without log 2 caught %v", noJacobianCaught, noLog2Caught)
	}
}

// TestRDPObjPertSigmaMeetsBudget checks the calibration: the curve at the
// σ found converts to at most ε, and at a slightly smaller σ to more.
func TestRDPObjPertSigmaMeetsBudget(t *testing.T) {
	orders := accounting.TuningOrders()
	for _, c := range []struct{ eps, delta, epsJ float64 }{{0.3, 1e-9, 0.01}, {1, 1e-6, 0}, {4, 1e-5, 0.2}} {
		s, err := RDPObjPertSigma(c.eps, c.delta, c.epsJ, orders)
		if err != nil {
			t.Fatal(err)
		}
		at := func(s float64) float64 {
			e, _, err := accounting.EpsilonFromRDP(orders, ObjPertGaussianRDP(s, c.epsJ, orders), c.delta)
			if err != nil {
				t.Fatal(err)
			}
			return e
		}
		if e := at(s); e > c.eps {
			t.Errorf("%+v: σ = %v spends ε = %v", c, s, e)
		}
		if e := at(s * (1 - 1e-6)); e <= c.eps {
			t.Errorf("%+v: σ = %v is not the smallest (%v still spends %v)", c, s, s*(1-1e-6), e)
		}
	}
	if _, err := RDPObjPertSigma(0.1, 1e-6, 0.1, orders); err == nil {
		t.Error("ε_J = ε was calibrated")
	}
}
