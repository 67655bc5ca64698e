package linear

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distuv"
)

// cmsBudgetC is Algorithm 2's steps 1–2 for a curvature bound c, written
// as the paper writes them (the test's cmsBudget has c = 1/4).
func cmsBudgetC(eps float64, n int, lambda, c float64) (epsPrime, delta float64) {
	nl := float64(n) * lambda
	epsPrime = eps - math.Log(1+2*c/nl+c*c/(nl*nl))
	if lambda == 0 || epsPrime <= 0 {
		return eps / 2, c/(float64(n)*(math.Exp(eps/4)-1)) - lambda
	}
	return epsPrime, 0
}

// regressionData is y = 3 + 2·x₀ − x₁ + noise with a few labels outside
// [0, 8] and some rows longer than 1.5.
func regressionData(n, dim int, seed uint64) (x, y []float64) {
	r := rand.New(rand.NewPCG(seed, 13))
	x, y = make([]float64, n*dim), make([]float64, n)
	for i := range n {
		m := 3.0
		for j := range dim {
			v := r.NormFloat64()
			x[i*dim+j] = v
			switch j {
			case 0:
				m += 2 * v
			case 1:
				m -= v
			}
		}
		y[i] = m + 0.5*r.NormFloat64()
	}
	return x, y
}

// slowRows is the rescaled design matrix, a row at a time from the raw
// rows: clipped to bound, the intercept feature appended, divided by
// √(bound²+1).
func slowRows(x []float64, n, dim int, bound float64) [][]float64 {
	scale := math.Sqrt(bound*bound + 1)
	rows := make([][]float64, n)
	for i := range n {
		norm := 0.0
		for j := range dim {
			norm += x[i*dim+j] * x[i*dim+j]
		}
		f := 1.0
		if norm = math.Sqrt(norm); norm > bound {
			f = bound / norm
		}
		rows[i] = make([]float64, dim+1)
		for j := range dim {
			rows[i][j] = x[i*dim+j] * f / scale
		}
		rows[i][dim] = 1 / scale
	}
	return rows
}

// slowTargets maps labels to [−1, 1] after clipping them to [lo, hi].
func slowTargets(y []float64, lo, hi float64) []float64 {
	t := make([]float64, len(y))
	for i, v := range y {
		v = math.Max(lo, math.Min(hi, v))
		t[i] = 2*(v-lo)/(hi-lo) - 1
	}
	return t
}

// TestObjPertLeastSquaresSolvesPerturbedObjective: the constants are
// Algorithm 2's with c = 1/h, and the released minimiser zeroes the
// perturbed objective's gradient computed a record at a time from the
// loss's definition (slope (r/h)/√(1+(r/h)²)).
func TestObjPertLeastSquaresSolvesPerturbedObjective(t *testing.T) {
	const n, dim, bound, lo, hi = 400, 4, 1.5, 0.0, 8.0
	x, y := regressionData(n, dim, 3)
	clippedLabels := 0
	for _, v := range y {
		if v < lo || v > hi {
			clippedLabels++
		}
	}
	if clippedLabels == 0 {
		t.Fatal("test data: no label outside the range; want some")
	}
	rows, tg := slowRows(x, n, dim, bound), slowTargets(y, lo, hi)
	for _, tc := range []struct {
		name      string
		eps, l2   float64
		h, wantH  float64
		wantPrime bool
	}{
		{"ε=1, defaults", 1, 0, 0, 1, true},
		{"ε=4, h=0.5, Λ given", 4, 0.05, 0.5, 0.5, true},
		{"ε=0.2, Λ too small", 0.2, 1e-5, 2, 2, true},
		{"not private", math.Inf(1), 0, 0, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opt := ObjPertRegressionOptions{ObjPertOptions: ObjPertOptions{Epsilon: tc.eps, RowBound: bound, L2: tc.l2},
				LabelLo: lo, LabelHi: hi, ResidualScale: tc.h}
			res, b, err := objectivePerturbationLeastSquares(rand.New(rand.NewPCG(1, 2)), x, n, dim, y, opt)
			if err != nil {
				t.Fatal(err)
			}
			c := 1 / tc.wantH
			wantL2, wantEps := 1.0/n, math.Inf(1)
			if tc.wantPrime {
				lambda := tc.l2
				if lambda == 0 {
					lambda = 8 * c / (n * (math.Exp(tc.eps/4) - 1))
				}
				var delta float64
				wantEps, delta = cmsBudgetC(tc.eps, n, lambda, c)
				wantL2 = lambda + delta
			}
			if got := res.L2 + res.ExtraL2; math.Abs(got-wantL2) > 1e-12*wantL2 || res.EpsilonPrime != wantEps && math.Abs(res.EpsilonPrime-wantEps) > 1e-12 {
				t.Fatalf("Λ+Δ = %v, ε' = %v; want %v, %v", got, res.EpsilonPrime, wantL2, wantEps)
			}
			if res.Curvature != c || res.Regression == nil || res.Regression.ResidualScale != tc.wantH || res.Regression.ClippedLabels != clippedLabels {
				t.Fatalf("curvature %v, regression %+v; want c = %v, h = %v, %d clipped labels", res.Curvature, res.Regression, c, tc.wantH, clippedLabels)
			}
			if (b == nil) == tc.wantPrime {
				t.Fatalf("noise %v with privacy %v", b, tc.wantPrime)
			}
			v := res.Scaled
			grad := make([]float64, dim+1)
			for i, row := range rows {
				m := 0.0
				for j := range row {
					m += row[j] * v[j]
				}
				u := (m - tg[i]) / tc.wantH
				slope := u / math.Sqrt(1+u*u)
				for j := range row {
					grad[j] += slope * row[j] / n
				}
			}
			for j := range grad {
				grad[j] += wantL2 * v[j]
				if b != nil {
					grad[j] += b[j] / n
				}
				if math.Abs(grad[j]) > 1e-8 {
					t.Fatalf("gradient of the perturbed objective at the solution: %v, want ≈ 0", grad)
				}
			}
			// Predictions in the label's units: mid + half·vᵀx̃ for a row
			// within the bound.
			for i := range n {
				xi := x[i*dim : (i+1)*dim]
				if math.Sqrt(dotSelf(xi)) > bound {
					continue
				}
				got, m := res.Intercept, 0.0
				for j, w := range res.Weights {
					got += w * xi[j]
				}
				for j := range v {
					m += rows[i][j] * v[j]
				}
				if want := (lo+hi)/2 + (hi-lo)/2*m; math.Abs(got-want) > 1e-12*math.Max(1, math.Abs(want)) {
					t.Fatalf("row %d: prediction %v, scaled problem's %v", i, got, want)
				}
			}
			rec, err := res.Receipt(nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantPrime && (rec.Epsilon == nil || *rec.Epsilon != tc.eps || !strings.Contains(rec.Note, "Kifer, Smith, Thakurta 2012") ||
				!strings.Contains(rec.Note, "[0, 8]")) {
				t.Errorf("receipt ε %v, note %q: want ε %v, the label range and the theorem cited", rec.Epsilon, rec.Note, tc.eps)
			}
		})
	}
}

// TestObjPertLeastSquaresIsRidgeForLargeH: without noise and with h far
// above every residual, ℓ_h(r) ≈ r²/(2h), so the fit is ridge regression
// (XᵀX/(nh) + ΛI) v = Xᵀt/(nh), solved here directly.
func TestObjPertLeastSquaresIsRidgeForLargeH(t *testing.T) {
	const n, dim, bound, lo, hi, h, lambda = 500, 3, 4.0, -2.0, 10.0, 1e3, 1e-9
	x, y := regressionData(n, dim, 5)
	res, err := ObjectivePerturbationLeastSquares(nil, x, n, dim, y, ObjPertRegressionOptions{
		ObjPertOptions: ObjPertOptions{Epsilon: math.Inf(1), RowBound: bound, L2: lambda}, LabelLo: lo, LabelHi: hi, ResidualScale: h})
	if err != nil {
		t.Fatal(err)
	}
	rows, tg := slowRows(x, n, dim, bound), slowTargets(y, lo, hi)
	a, rhs := mat.NewDense(dim+1, dim+1, nil), mat.NewVecDense(dim+1, nil)
	for i, row := range rows {
		for j := range row {
			rhs.SetVec(j, rhs.AtVec(j)+row[j]*tg[i]/(n*h))
			for k := range row {
				a.Set(j, k, a.At(j, k)+row[j]*row[k]/(n*h))
			}
		}
	}
	for j := range dim + 1 {
		a.Set(j, j, a.At(j, j)+lambda)
	}
	var want mat.VecDense
	if err := want.SolveVec(a, rhs); err != nil {
		t.Fatal(err)
	}
	for j, v := range res.Scaled {
		if math.Abs(v-want.AtVec(j)) > 1e-4*math.Max(1, math.Abs(want.AtVec(j))) {
			t.Fatalf("coefficient %d: %v, ridge %v (all %v vs %v)", j, v, want.AtVec(j), res.Scaled, want.RawVector().Data)
		}
	}
	// And the slopes come out near the generator's 2 and −1 (rows are
	// mostly inside B = 4, so clipping barely biases them).
	if math.Abs(res.Weights[0]-2) > 0.15 || math.Abs(res.Weights[1]+1) > 0.15 {
		t.Errorf("weights %v, want ≈ [2 −1 0]", res.Weights)
	}
}

// TestObjPertLeastSquaresNoiseLaw: ‖b‖ ~ Gamma(d+1, 2/ε') with ε' from
// Algorithm 2 at c = 1/h.
func TestObjPertLeastSquaresNoiseLaw(t *testing.T) {
	const n, dim, draws, eps, h = 50, 2, 2000, 2.0, 0.5
	x, y := regressionData(n, dim, 7)
	r := rand.New(rand.NewPCG(9, 10))
	norms := make([]float64, draws)
	for i := range norms {
		_, b, err := objectivePerturbationLeastSquares(r, x, n, dim, y, ObjPertRegressionOptions{
			ObjPertOptions: ObjPertOptions{Epsilon: eps, RowBound: 1}, LabelLo: 0, LabelHi: 6, ResidualScale: h})
		if err != nil {
			t.Fatal(err)
		}
		norms[i] = math.Sqrt(dotSelf(b))
	}
	epsPrime, _ := cmsBudgetC(eps, n, 8*(1/h)/(n*(math.Exp(eps/4)-1)), 1/h)
	g := distuv.Gamma{Alpha: dim + 1, Beta: epsPrime / 2}
	if d := ksStatistic(norms, g.CDF); d > ksCritical(draws) {
		t.Errorf("KS distance of ‖b‖ from Gamma(%d, 2/ε' = %v) is %.4f > %.4f", dim+1, 2/epsPrime, d, ksCritical(draws))
	}
}

// TestPseudoHuberDerivatives: the loss's slope and curvature against
// central differences, and the bounds Algorithm 2 relies on.
func TestPseudoHuberDerivatives(t *testing.T) {
	for _, h := range []float64{0.3, 1, 5} {
		for _, r := range []float64{-40, -2, -0.5, -1e-3, 0, 0.7, 3, 100} {
			l, d1, d2 := pseudoHuber(r, h)
			const e = 1e-5
			lp, d1p, _ := pseudoHuber(r+e, h)
			lm, d1m, _ := pseudoHuber(r-e, h)
			if fd := (lp - lm) / (2 * e); math.Abs(fd-d1) > 1e-6 {
				t.Errorf("h %v r %v: ℓ' %v, central difference %v", h, r, d1, fd)
			}
			if fd := (d1p - d1m) / (2 * e); math.Abs(fd-d2) > 1e-6 {
				t.Errorf("h %v r %v: ℓ'' %v, central difference %v", h, r, d2, fd)
			}
			if want := h * (math.Sqrt(1+(r/h)*(r/h)) - 1); math.Abs(l-want) > 1e-12*math.Max(1, want) || math.Abs(d1) >= 1 || d2 <= 0 || d2 > 1/h {
				t.Errorf("h %v r %v: ℓ %v (want %v), ℓ' %v, ℓ'' %v: want |ℓ'| < 1, 0 < ℓ'' ≤ 1/h", h, r, l, want, d1, d2)
			}
		}
	}
}

func TestObjPertLeastSquaresRefusesBadInput(t *testing.T) {
	x, y := regressionData(10, 2, 1)
	good := ObjPertRegressionOptions{ObjPertOptions: ObjPertOptions{Epsilon: 1, RowBound: 1}, LabelLo: 0, LabelHi: 1}
	nan := append([]float64(nil), y...)
	nan[3] = math.NaN()
	for _, tc := range []struct {
		name string
		edit func(*ObjPertRegressionOptions)
		y    []float64
	}{
		{"ε = 0", func(o *ObjPertRegressionOptions) { o.Epsilon = 0 }, y},
		{"empty range", func(o *ObjPertRegressionOptions) { o.LabelHi = 0 }, y},
		{"infinite range", func(o *ObjPertRegressionOptions) { o.LabelHi = math.Inf(1) }, y},
		{"negative h", func(o *ObjPertRegressionOptions) { o.ResidualScale = -1 }, y},
		{"NaN label", func(*ObjPertRegressionOptions) {}, nan},
		{"short labels", func(*ObjPertRegressionOptions) {}, y[:9]},
	} {
		opt := good
		tc.edit(&opt)
		if _, err := ObjectivePerturbationLeastSquares(rand.New(rand.NewPCG(1, 1)), x, 10, 2, tc.y, opt); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}
