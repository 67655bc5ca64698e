package linear

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

// cmsBudget is Algorithm 2's steps 1–2 (Chaudhuri, Monteleoni, Sarwate
// 2011) written the way the paper writes them, independently of
// ObjPertBudget: ε' = ε − log(1 + 2c/(nΛ) + c²/(n²Λ²)); if ε' ≤ 0,
// Δ = c/(n(e^{ε/4} − 1)) − Λ and ε' = ε/2.
func cmsBudget(eps float64, n int, lambda float64) (epsPrime, delta float64) {
	const c = 0.25 // logistic: ℓ'' = σ(1−σ) ≤ 1/4
	nl := float64(n) * lambda
	epsPrime = eps - math.Log(1+2*c/nl+c*c/(nl*nl))
	if lambda == 0 || epsPrime <= 0 {
		return eps / 2, c/(float64(n)*(math.Exp(eps/4)-1)) - lambda
	}
	return epsPrime, 0
}

func TestObjPertBudget(t *testing.T) {
	for _, tc := range []struct {
		name   string
		eps    float64
		n      int
		lambda float64
	}{
		{"large regulariser: no Δ", 1, 1000, 0.01},
		{"small regulariser: Δ added", 1, 1000, 1e-5},
		{"Λ = 0: the budget chooses", 0.5, 30000, 0},
		{"tiny ε", 0.01, 100, 0.1},
		{"large ε, small n", 8, 10, 1e-3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantEps, wantDelta := cmsBudget(tc.eps, tc.n, tc.lambda)
			gotEps, gotDelta := ObjPertBudget(tc.eps, tc.n, tc.lambda)
			if math.Abs(gotEps-wantEps) > 1e-12*tc.eps || math.Abs(gotDelta-wantDelta) > 1e-12*max(1, wantDelta) {
				t.Fatalf("ObjPertBudget(%v, %d, %v) = (ε' %v, Δ %v), want (%v, %v)", tc.eps, tc.n, tc.lambda, gotEps, gotDelta, wantEps, wantDelta)
			}
			if !(gotEps > 0) || gotDelta < 0 || !(tc.lambda+gotDelta > 0) {
				t.Fatalf("ε' %v, Δ %v with Λ %v: want ε' > 0, Δ ≥ 0 and a strongly convex objective", gotEps, gotDelta, tc.lambda)
			}
		})
	}
	// The branches meet: at the total regulariser the second branch picks,
	// the first branch's formula gives ε' = ε/2 exactly.
	eps, n := 1.0, 5000
	_, delta := cmsBudget(eps, n, 0)
	if e, _ := cmsBudget(eps, n, delta*(1+1e-9)); math.Abs(e-eps/2) > 1e-6 {
		t.Fatalf("at Λ = %v the first branch gives ε' = %v, want ε/2 = %v", delta, e, eps/2)
	}
}

// paperL2 is Λ as given, or for 0 the default 8 c/(n(e^{ε/4} − 1)).
func paperL2(eps float64, n int, lambda float64) float64 {
	if lambda == 0 {
		return 8 * 0.25 / (float64(n) * (math.Exp(eps/4) - 1))
	}
	return lambda
}

// TestDefaultObjPertL2: the default is 8 times the second branch's
// regulariser, so it takes the first branch and leaves ε' =
// ε − 2 log(1 + (e^{ε/4} − 1)/8) to the noise.
func TestDefaultObjPertL2(t *testing.T) {
	for _, eps := range []float64{0.1, 0.5, 1, 4, 10} {
		n := 30000
		lambda := DefaultObjPertL2(eps, n)
		_, minimum := cmsBudget(eps, n, 0)
		if math.Abs(lambda/minimum-8) > 1e-9 {
			t.Errorf("ε %v: default Λ %v is %v times the smallest %v, want 8", eps, lambda, lambda/minimum, minimum)
		}
		gotEps, delta := ObjPertBudget(eps, n, lambda)
		if want := eps - 2*math.Log(1+(math.Exp(eps/4)-1)/8); delta != 0 || math.Abs(gotEps-want) > 1e-12 {
			t.Errorf("ε %v: default Λ gives ε' %v and Δ %v, want %v and 0", eps, gotEps, delta, want)
		}
	}
}

// ksStatistic is the Kolmogorov–Smirnov distance between the sample and
// the CDF.
func ksStatistic(sample []float64, cdf func(float64) float64) float64 {
	s := slices.Clone(sample)
	slices.Sort(s)
	d := 0.0
	for i, x := range s {
		f := cdf(x)
		d = max(d, math.Abs(f-float64(i)/float64(len(s))), math.Abs(float64(i+1)/float64(len(s))-f))
	}
	return d
}

// ksCritical is the KS test's critical distance at level 0.001 for n
// draws (Kolmogorov's asymptotic 1.95/√n).
func ksCritical(n int) float64 { return 1.95 / math.Sqrt(float64(n)) }

func TestSphereGammaNoise(t *testing.T) {
	const draws = 20000
	for _, tc := range []struct {
		dim   int
		scale float64
	}{{1, 1}, {5, 2 / 0.7}, {40, 0.3}} {
		r := rand.New(rand.NewPCG(uint64(tc.dim), 7))
		norms := make([]float64, draws)
		mean := make([]float64, tc.dim)
		second := 0.0
		for i := range norms {
			b := SphereGammaNoise(r, tc.dim, tc.scale)
			sq := 0.0
			for _, v := range b {
				sq += v * v
			}
			norms[i] = math.Sqrt(sq)
			for j, v := range b {
				mean[j] += v / norms[i] / draws
			}
			second += b[0] * b[0] / sq / draws
		}
		// ‖b‖ ~ Gamma(shape dim, scale): the density ∝ exp(−‖b‖/scale) in
		// polar coordinates.
		g := distuv.Gamma{Alpha: float64(tc.dim), Beta: 1 / tc.scale}
		if d := ksStatistic(norms, g.CDF); d > ksCritical(draws) {
			t.Errorf("dim %d scale %v: KS distance of ‖b‖ from Gamma(%d, %v) is %.4f > %.4f", tc.dim, tc.scale, tc.dim, tc.scale, d, ksCritical(draws))
		}
		// Direction uniform on the sphere: each coordinate u_j of b/‖b‖ has
		// mean 0 and variance 1/dim, and u_j² has mean 1/dim and variance
		// 3/(dim(dim+2)) − 1/dim².
		sdMean := math.Sqrt(1 / float64(tc.dim) / draws)
		for j, m := range mean {
			if math.Abs(m) > 5*sdMean {
				t.Errorf("dim %d: mean of direction coordinate %d is %.4f, want 0 ± %.4f", tc.dim, j, m, 5*sdMean)
			}
		}
		fd := float64(tc.dim)
		sdSecond := math.Sqrt((3/(fd*(fd+2)) - 1/(fd*fd)) / draws)
		if math.Abs(second-1/fd) > 5*sdSecond+1e-12 {
			t.Errorf("dim %d: mean of u₀² is %.4f, want %.4f ± %.4f", tc.dim, second, 1/fd, 5*sdSecond)
		}
	}
}

// objPertData is a small classification problem with some rows longer
// than the bound 1.5, so clipping is exercised.
func objPertData(n, dim int, seed uint64) (x []float64, label []int) {
	r := rand.New(rand.NewPCG(seed, 11))
	x = make([]float64, n*dim)
	label = make([]int, n)
	for i := range n {
		m := 0.3
		for j := range dim {
			v := r.NormFloat64()
			x[i*dim+j] = v
			m += v * float64(j+1) / float64(dim)
		}
		if r.Float64() < 1/(1+math.Exp(-2*m)) {
			label[i] = 1
		}
	}
	return x, label
}

// perturbedGradient is the gradient of Algorithm 2's objective
// (1/n) Σ ℓ(vᵀx̃_i, y_i) + (Λ+Δ)/2 ‖v‖² + (1/n) bᵀv at v, a record at a
// time from the raw rows: the slow path of ObjectivePerturbation.
func perturbedGradient(x []float64, label []int, n, dim int, bound, l2 float64, b, v []float64) []float64 {
	grad := make([]float64, dim+1)
	for i, row := range slowRows(x, n, dim, bound) {
		m := 0.0
		for j := range row {
			m += row[j] * v[j]
		}
		d := 1/(1+math.Exp(-m)) - float64(label[i])
		for j := range row {
			grad[j] += d * row[j] / float64(n)
		}
	}
	for j := range grad {
		grad[j] += l2 * v[j]
		if b != nil {
			grad[j] += b[j] / float64(n)
		}
	}
	return grad
}

func TestObjectivePerturbationSolvesPerturbedObjective(t *testing.T) {
	const n, dim, bound = 300, 4, 1.5
	x, label := objPertData(n, dim, 3)
	wantClipped := 0
	for i := range n {
		if s := math.Sqrt(dotSelf(x[i*dim : (i+1)*dim])); s > bound {
			wantClipped++
		}
	}
	if wantClipped == 0 || wantClipped == n {
		t.Fatalf("test data: %d of %d rows beyond the bound; want some", wantClipped, n)
	}
	for _, tc := range []struct {
		name   string
		eps    float64
		lambda float64
	}{
		{"ε=1, default Λ", 1, 0},
		{"ε=4, Λ given", 4, 0.05},
		{"ε=0.1, Λ too small", 0.1, 1e-4},
		{"not private", math.Inf(1), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, b, err := objectivePerturbation(rand.New(rand.NewPCG(1, 2)), x, n, dim, label,
				ObjPertOptions{Epsilon: tc.eps, RowBound: bound, L2: tc.lambda})
			if err != nil {
				t.Fatal(err)
			}
			wantL2, wantEps := 1.0/n, math.Inf(1) // scikit-learn's C = 1 without privacy
			if !math.IsInf(tc.eps, 1) {
				lambda := paperL2(tc.eps, n, tc.lambda)
				var delta float64
				wantEps, delta = cmsBudget(tc.eps, n, lambda)
				wantL2 = lambda + delta
				if len(b) != dim+1 {
					t.Fatalf("noise has %d entries, want %d", len(b), dim+1)
				}
			} else if b != nil {
				t.Fatalf("noise %v without privacy", b)
			}
			if got := res.L2 + res.ExtraL2; math.Abs(got-wantL2) > 1e-12*wantL2 || res.EpsilonPrime != wantEps && math.Abs(res.EpsilonPrime-wantEps) > 1e-12 {
				t.Fatalf("Λ+Δ = %v, ε' = %v; want %v, %v", got, res.EpsilonPrime, wantL2, wantEps)
			}
			if res.Clipped != wantClipped {
				t.Errorf("clipped %d rows, want %d", res.Clipped, wantClipped)
			}
			g := perturbedGradient(x, label, n, dim, bound, wantL2, b, res.Scaled)
			for j, v := range g {
				if math.Abs(v) > 1e-8 {
					t.Fatalf("gradient of the perturbed objective at the solution: coordinate %d is %g (all: %v), want ≈ 0", j, v, g)
				}
			}
			// The released model scores an unclipped row as the scaled
			// problem scores its rescaled copy.
			scale := math.Sqrt(bound*bound + 1)
			for i := range n {
				xi := x[i*dim : (i+1)*dim]
				if math.Sqrt(dotSelf(xi)) > bound {
					continue
				}
				got, want := res.Intercept, res.Scaled[dim]/scale
				for j, v := range xi {
					got += res.Weights[j] * v
					want += res.Scaled[j] * v / scale
				}
				if math.Abs(got-want) > 1e-12*max(1, math.Abs(want)) {
					t.Fatalf("row %d: released logit %v, scaled problem's %v", i, got, want)
				}
			}
		})
	}
}

func dotSelf(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x * x
	}
	return s
}

// TestObjectivePerturbationNoiseLaw checks the noise ObjectivePerturbation
// actually adds: dimension d+1 (the intercept feature) and norm law
// Gamma(d+1, 2/ε') with ε' from the paper's formula, over many fits.
func TestObjectivePerturbationNoiseLaw(t *testing.T) {
	const n, dim, draws = 40, 2, 3000
	x, label := objPertData(n, dim, 5)
	r := rand.New(rand.NewPCG(9, 9))
	for _, lambda := range []float64{0, 1e-4, 0.5} {
		norms := make([]float64, draws)
		for i := range norms {
			_, b, err := objectivePerturbation(r, x, n, dim, label, ObjPertOptions{Epsilon: 2, RowBound: 1, L2: lambda})
			if err != nil {
				t.Fatal(err)
			}
			if len(b) != dim+1 {
				t.Fatalf("noise of dimension %d, want %d", len(b), dim+1)
			}
			norms[i] = math.Sqrt(dotSelf(b))
		}
		epsPrime, _ := cmsBudget(2, n, paperL2(2, n, lambda))
		g := distuv.Gamma{Alpha: dim + 1, Beta: epsPrime / 2}
		if d := ksStatistic(norms, g.CDF); d > ksCritical(draws) {
			t.Errorf("Λ = %v: KS distance of ‖b‖ from Gamma(%d, 2/ε' = %v) is %.4f > %.4f", lambda, dim+1, 2/epsPrime, d, ksCritical(draws))
		}
	}
}

func TestObjectivePerturbationRefusesBadInput(t *testing.T) {
	x, label := objPertData(10, 2, 1)
	r := rand.New(rand.NewPCG(1, 1))
	for _, tc := range []struct {
		name  string
		opt   ObjPertOptions
		label []int
	}{
		{"ε = 0", ObjPertOptions{Epsilon: 0, RowBound: 1}, label},
		{"no bound", ObjPertOptions{Epsilon: 1}, label},
		{"infinite bound", ObjPertOptions{Epsilon: 1, RowBound: math.Inf(1)}, label},
		{"negative L2", ObjPertOptions{Epsilon: 1, RowBound: 1, L2: -1}, label},
		{"label 2", ObjPertOptions{Epsilon: 1, RowBound: 1}, append(slices.Clone(label[:9]), 2)},
	} {
		if _, err := ObjectivePerturbation(r, x, 10, 2, tc.label, tc.opt); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

// TestObjPertLargeEpsilon: at ε = 1000 the default regulariser would be
// about e^{-250}/n, leaving Newton's Hessian singular on collinear columns
// (one-hot blocks); the floor l2Floor keeps the fit solvable there, and
// the default rules are above the floor for every ε below 29 (so no run
// there changed).
func TestObjPertLargeEpsilon(t *testing.T) {
	const n = 400
	x := make([]float64, n*3)
	label := make([]int, n)
	for i := range n {
		// Two one-hot columns that sum to 1 and their duplicate: XᵀX is singular.
		x[3*i+i%2] = 1
		x[3*i+2] = x[3*i]
		if i%3 == 0 {
			label[i] = 1
		}
	}
	for _, mech := range []string{MechanismPure, MechanismGaussian} {
		opt := ObjPertOptions{Epsilon: 1000, RowBound: 1, Mechanism: mech}
		if mech == MechanismGaussian {
			opt.Delta = 1e-6
		}
		res, err := ObjectivePerturbation(rand.New(rand.NewPCG(1, 2)), x, n, 3, label, opt)
		if err != nil {
			t.Fatalf("%s mechanism at ε = 1000: %v", mech, err)
		}
		if res.L2 != l2Floor(n) {
			t.Errorf("%s: Λ = %v, want the floor %v", mech, res.L2, l2Floor(n))
		}
	}
	for _, c := range []float64{LogisticCurvature, 1} {
		for _, eps := range []float64{0.1, 1, 4, 20, 29} {
			if defaultObjPertL2(eps, n, c) == l2Floor(n) || ProfileObjPertL2(eps, n, c) == l2Floor(n) {
				t.Errorf("c %v ε %v: the default Λ sits on the floor", c, eps)
			}
		}
	}
}
