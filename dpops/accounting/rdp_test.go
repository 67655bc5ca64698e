package accounting

import (
	"math"
	"math/big"
	"testing"
)

func relErr(got, want float64) float64 { return math.Abs(got-want) / math.Abs(want) }

func intOrders(lo, hi int) []float64 {
	var out []float64
	for a := lo; a <= hi; a++ {
		out = append(out, float64(a))
	}
	return out
}

func TestOrderLists(t *testing.T) {
	op := OpacusOrders()
	if len(op) != 99+52 {
		t.Fatalf("OpacusOrders has %d orders, want 151", len(op))
	}
	for _, c := range []struct {
		i    int
		want float64
	}{{0, 1.1}, {8, 1.9}, {9, 2}, {98, 10.9}, {99, 12}, {150, 63}} {
		if op[c.i] != c.want {
			t.Errorf("OpacusOrders()[%d] = %v, want %v", c.i, op[c.i], c.want)
		}
	}
	tf := TFOrders()
	if len(tf) != 10+59+3 {
		t.Fatalf("TFOrders has %d orders, want 72", len(tf))
	}
	for _, c := range []struct {
		i    int
		want float64
	}{{0, 1.25}, {3, 2}, {9, 4.5}, {10, 5}, {68, 63}, {69, 128}, {71, 512}} {
		if tf[c.i] != c.want {
			t.Errorf("TFOrders()[%d] = %v, want %v", c.i, tf[c.i], c.want)
		}
	}
}

type gaussianRun struct {
	q, sigma float64
	steps    int
}

func composedEpsilons(t *testing.T, orders []float64, delta float64, runs ...gaussianRun) (eps, order, classic float64) {
	t.Helper()
	a, err := NewRDP(orders)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if err := a.Step(SubsampledGaussian(r.q, r.sigma, 1, "gradients"), r.steps); err != nil {
			t.Fatal(err)
		}
	}
	eps, order = a.Epsilon(delta)
	classic, _ = a.EpsilonClassic(delta)
	return eps, order, classic
}

// TestReferenceEpsilons checks the published ε of Opacus's test_rdp_accountant
// and rdp docstring, TF-Privacy's compute_dp_sgd_privacy test and tutorial,
// DPSGD-F's gradients and counts composed per order, and the two ε pairs
// behind Xu, Du and Wu 2021, Table 1 (MNIST and Adult).
func TestReferenceEpsilons(t *testing.T) {
	cases := []struct {
		name      string
		orders    []float64
		delta     float64
		runs      []gaussianRun
		eps       float64 // improved conversion
		epsTol    float64 // relative
		order     float64 // 0: not checked
		classic   float64 // 0: not checked
		classicTo float64 // absolute
	}{
		// Opacus test_rdp_accountant.
		{"row1", nil, 1e-5, []gaussianRun{{0.04, 1.5, 2250}}, 7.32911117143, 1e-6, 0, 0, 0},
		// Opacus rdp docstring, two mechanisms, orders 2..32, ε ≈ 0.336 at order 23.
		{"row4", intOrders(2, 32), 1e-5, []gaussianRun{{1e-5, 1.0, 10}, {1e-4, 3.0, 4}}, 0.336, 1.5e-3, 23, 0, 0},
		// TF-Privacy, n=60000, batch 150, σ=1.3, 15 epochs → 6000 steps, order 19.
		{"row5", TFOrders(), 1e-5, []gaussianRun{{150.0 / 60000, 1.3, 6000}}, 0.7242234026109595, 1e-6, 19, 0, 0},
		// TF-Privacy, n=100000, batch 100, σ=1.0, 30 epochs → 30000 steps, order 13.
		{"row6", TFOrders(), 1e-7, []gaussianRun{{100.0 / 100000, 1.0, 30000}}, 1.4154988495444842, 1e-6, 13, 0, 0},
		// TF-Privacy tutorial, q=256/60000, σ=1.1, 60 epochs → ceil(14062.5) steps: 3.01 old, ≈2.597 new.
		{"row7", TFOrders(), 1e-5, []gaussianRun{{256.0 / 60000, 1.1, 14063}}, 2.597, 2e-4, 0, 3.01, 0.005},
		// DPSGD-F on MNIST-unbalanced, q=1/214, 60 epochs = 12840 steps: gradients alone ≈ 5.90.
		{"row10-gradients", nil, 1e-6, []gaussianRun{{1.0 / 214, 0.8, 12840}}, 5.90, 1e-3, 0, 0, 0},
		// DPSGD-F: gradients (σ=0.8) plus counts (σ1=8) composed per order ≈ 5.91.
		{"row10-both", nil, 1e-6, []gaussianRun{{1.0 / 214, 0.8, 12840}, {1.0 / 214, 8, 12840}}, 5.91, 1e-3, 0, 0, 0},
		// Xu, Du and Wu 2021, Table 1: MNIST q=256/54649, 12808 steps, σ=0.8: 5.911 improved, 6.550 classic.
		{"sec4-mnist", nil, 1e-6, []gaussianRun{{256.0 / 54649, 0.8, 12808}}, 5.911, 2e-4, 0, 6.550, 0.0005},
		// Xu, Du and Wu 2021, Table 1: Adult q=256/36177, 2820 steps, σ=1: 2.660 improved, 3.075 classic.
		{"sec4-adult", nil, 1e-6, []gaussianRun{{256.0 / 36177, 1, 2820}}, 2.660, 2e-4, 0, 3.075, 0.0005},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			eps, order, classic := composedEpsilons(t, c.orders, c.delta, c.runs...)
			if relErr(eps, c.eps) > c.epsTol {
				t.Errorf("ε = %.15g, want %.15g (rel. tol %g)", eps, c.eps, c.epsTol)
			}
			if c.order != 0 && order != c.order {
				t.Errorf("optimal order = %v, want %v", order, c.order)
			}
			if c.classic != 0 && math.Abs(classic-c.classic) > c.classicTo {
				t.Errorf("classic ε = %.6g, want %.6g ± %g", classic, c.classic, c.classicTo)
			}
			if !(classic > eps) {
				t.Errorf("classic ε %v should exceed improved ε %v", classic, eps)
			}
		})
	}
}

// TestConstantRDPConversion reproduces a dp_accounting test: RDP ≡ 1.1 at
// orders 2..32, δ = 1e-5 → ε = 1.32783806176 at order 32.
func TestConstantRDPConversion(t *testing.T) {
	orders := intOrders(2, 32)
	rdp := make([]float64, len(orders))
	for i := range rdp {
		rdp[i] = 1.1
	}
	eps, order, err := EpsilonFromRDP(orders, rdp, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if relErr(eps, 1.32783806176) > 1e-6 || order != 32 {
		t.Errorf("ε = %.12g at order %v, want 1.32783806176 at order 32", eps, order)
	}
	// Classic: 1.1 + ln(1e5)/31 at order 32.
	eps, order, err = EpsilonFromRDPClassic(orders, rdp, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if want := 1.1 + math.Log(1e5)/31; relErr(eps, want) > 1e-14 || order != 32 {
		t.Errorf("classic ε = %.15g at order %v, want %.15g at 32", eps, order, want)
	}
}

func TestSpecialCases(t *testing.T) {
	cases := []struct {
		q, sigma, alpha, want float64
	}{
		{0, 1, 2, 0},             // nothing sampled
		{0, 0, 7.5, 0},           // nothing sampled, even without noise
		{0.1, 0, 3, math.Inf(1)}, // no noise
		{1, 2, 3, 3.0 / 8},       // plain Gaussian α/(2σ²)
		{1, 0.5, 2.5, 2.5 / 0.5}, // plain Gaussian, fractional order
		{0.3, math.Inf(1), 4, 0}, // infinite noise
		{-0.1, 1, 2, math.NaN()}, // invalid q
		{0.1, -1, 2, math.NaN()}, // invalid σ
		{0.1, 1, 1, math.NaN()},  // order must exceed 1
		{0.1, 1, math.NaN(), math.NaN()},
	}
	for _, c := range cases {
		got := SubsampledGaussianRDP(c.q, c.sigma, c.alpha)
		if !(got == c.want || math.IsNaN(got) && math.IsNaN(c.want)) {
			t.Errorf("SubsampledGaussianRDP(%v, %v, %v) = %v, want %v", c.q, c.sigma, c.alpha, got, c.want)
		}
	}
}

// directIntegerRDP is the slow path for integer orders: the binomial sum of
// Mironov, Talwar and Zhang 2019 in plain float64 with exact binomial coefficients (only for
// small α and σ, where nothing overflows).
func directIntegerRDP(q, sigma float64, alpha int) float64 {
	var sum float64
	for i := 0; i <= alpha; i++ {
		c, _ := new(big.Float).SetInt(new(big.Int).Binomial(int64(alpha), int64(i))).Float64()
		fi := float64(i)
		sum += c * math.Pow(q, fi) * math.Pow(1-q, float64(alpha-i)) * math.Exp((fi*fi-fi)/(2*sigma*sigma))
	}
	return math.Log(sum) / float64(alpha-1)
}

func TestIntegerOrderAgainstDirectSum(t *testing.T) {
	for _, q := range []float64{1e-4, 0.01, 0.04, 0.3, 0.9} {
		for _, sigma := range []float64{0.8, 1, 1.5, 4} {
			for alpha := 2; alpha <= 20; alpha++ {
				got := SubsampledGaussianRDP(q, sigma, float64(alpha))
				want := directIntegerRDP(q, sigma, alpha)
				// A_α ≈ 1 + O(q²) for tiny q, so both paths lose digits to
				// cancellation: compare to 1e-11 relative or 1e-15 absolute.
				if math.Abs(got-want) > 1e-11*want+1e-15 {
					t.Errorf("q=%v σ=%v α=%d: log-space %.15g, direct %.15g", q, sigma, alpha, got, want)
				}
			}
		}
	}
}

// integratedRDP is an independent path for any order: ln A_α/(α-1) with
// A_α = E_{z~N(0,σ²)}[(μ(z)/μ0(z))^α], μ = (1-q)N(0,σ²) + qN(1,σ²) (the
// definition in Mironov, Talwar, Zhang 2019), by composite Simpson's rule in
// log space over [-40σ, α+40σ].
func integratedRDP(q, sigma, alpha float64) float64 {
	const n = 200_000 // even
	lo, hi := -40*sigma, alpha+40*sigma
	h := (hi - lo) / n
	twoVar := 2 * sigma * sigma
	logF := func(z float64) float64 {
		ratio := math.Log1p(-q) + math.Log1p(q/(1-q)*math.Exp((2*z-1)/twoVar))
		return -z*z/twoVar - math.Log(sigma*math.Sqrt(2*math.Pi)) + alpha*ratio
	}
	vals := make([]float64, n+1)
	peak := math.Inf(-1)
	for i := range vals {
		vals[i] = logF(lo + float64(i)*h)
		peak = math.Max(peak, vals[i])
	}
	var sum float64
	for i, v := range vals {
		w := 2.0
		switch {
		case i == 0 || i == n:
			w = 1
		case i%2 == 1:
			w = 4
		}
		sum += w * math.Exp(v-peak)
	}
	return (peak + math.Log(sum*h/3)) / (alpha - 1)
}

func TestRDPAgainstNumericalIntegration(t *testing.T) {
	cases := []struct{ q, sigma, alpha float64 }{
		{0.01, 1, 2}, {0.01, 1, 3.5}, {0.01, 1, 10}, {0.01, 1, 32.7},
		{0.04, 1.5, 1.1}, {0.04, 1.5, 2.5}, {0.04, 1.5, 7.3}, {0.04, 1.5, 63},
		{0.2, 0.7, 1.5}, {0.2, 0.7, 4}, {0.2, 0.7, 8.25},
		{0.5, 2, 20.5}, {1.0 / 214, 8, 12.5}, {0.001, 0.8, 4.8},
	}
	for _, c := range cases {
		got := SubsampledGaussianRDP(c.q, c.sigma, c.alpha)
		want := integratedRDP(c.q, c.sigma, c.alpha)
		if relErr(got, want) > 1e-7 {
			t.Errorf("q=%v σ=%v α=%v: series %.12g, integral %.12g", c.q, c.sigma, c.alpha, got, want)
		}
	}
}

// TestFractionalIntegerContinuity checks that the fractional-order series
// meets the integer-order sum: RDP(k ± 1e-9) is within 1e-7 of RDP(k).
func TestFractionalIntegerContinuity(t *testing.T) {
	for _, c := range []struct{ q, sigma float64 }{{0.04, 1.5}, {0.01, 0.8}, {0.3, 2}} {
		for _, k := range []float64{2, 3, 5, 12, 40} {
			at := SubsampledGaussianRDP(c.q, c.sigma, k)
			for _, h := range []float64{-1e-9, 1e-9} {
				near := SubsampledGaussianRDP(c.q, c.sigma, k+h)
				if relErr(near, at) > 1e-7 {
					t.Errorf("q=%v σ=%v: RDP(%v) = %.12g but RDP(%v%+g) = %.12g", c.q, c.sigma, k, at, k, h, near)
				}
			}
		}
	}
}

func TestEpsilonMonotonicity(t *testing.T) {
	eps := func(q, sigma float64, steps int) float64 {
		e, _, _ := composedEpsilons(t, nil, 1e-5, gaussianRun{q, sigma, steps})
		return e
	}
	prev := math.Inf(1)
	for _, sigma := range []float64{0.5, 0.7, 1, 1.3, 2, 4, 10} {
		e := eps(0.01, sigma, 1000)
		if !(e < prev) {
			t.Errorf("ε should decrease in σ: σ=%v gives %v after %v", sigma, e, prev)
		}
		prev = e
	}
	prev = 0
	for _, steps := range []int{1, 10, 100, 1000, 10000} {
		e := eps(0.01, 1, steps)
		if !(e > prev) {
			t.Errorf("ε should increase in steps: %d steps give %v after %v", steps, e, prev)
		}
		prev = e
	}
	prev = 0
	for _, q := range []float64{0.001, 0.005, 0.02, 0.1, 0.5, 1} {
		e := eps(q, 1, 100)
		if !(e > prev) {
			t.Errorf("ε should increase in q: q=%v gives %v after %v", q, e, prev)
		}
		prev = e
	}
}

func TestLogErfc(t *testing.T) {
	for _, x := range []float64{-3, -0.5, 0, 0.5, 3, 10, 24.9} {
		if got, want := logErfc(x), math.Log(math.Erfc(x)); relErr(got, want) > 1e-14 {
			t.Errorf("logErfc(%v) = %.16g, want %.16g", x, got, want)
		}
	}
	// Beyond 25 the series is used; just below 26.5 erfc is still
	// representable, so the two must agree there.
	for _, x := range []float64{25, 25.5, 26} {
		if got, want := logErfc(x), math.Log(math.Erfc(x)); relErr(got, want) > 1e-13 {
			t.Errorf("logErfc(%v) = %.16g, want %.16g", x, got, want)
		}
	}
	// Far tail: leading term -x² - ln(x√π) dominates.
	if got, want := logErfc(100), -1e4-math.Log(100*math.Sqrt(math.Pi))+math.Log1p(-1.0/2e4+3.0/(4e8)); relErr(got, want) > 1e-15 {
		t.Errorf("logErfc(100) = %.16g, want %.16g", got, want)
	}
}

func TestConversionErrors(t *testing.T) {
	orders := []float64{2, 3}
	cases := []struct {
		name   string
		orders []float64
		rdp    []float64
		delta  float64
	}{
		{"length mismatch", orders, []float64{1}, 1e-5},
		{"delta zero", orders, []float64{1, 1}, 0},
		{"delta one", orders, []float64{1, 1}, 1},
		{"delta NaN", orders, []float64{1, 1}, math.NaN()},
		{"negative rdp", orders, []float64{1, -0.5}, 1e-5},
		{"empty orders", nil, nil, 1e-5},
		{"order 1", []float64{1, 2}, []float64{1, 1}, 1e-5},
		{"order inf", []float64{2, math.Inf(1)}, []float64{1, 1}, 1e-5},
	}
	for _, c := range cases {
		if _, _, err := EpsilonFromRDP(c.orders, c.rdp, c.delta); err == nil {
			t.Errorf("%s: EpsilonFromRDP accepted bad input", c.name)
		}
		if _, _, err := EpsilonFromRDPClassic(c.orders, c.rdp, c.delta); err == nil {
			t.Errorf("%s: EpsilonFromRDPClassic accepted bad input", c.name)
		}
	}
	// No noise at all: ε is infinite, not an error.
	eps, _, err := EpsilonFromRDP(orders, []float64{math.Inf(1), math.Inf(1)}, 1e-5)
	if err != nil || !math.IsInf(eps, 1) {
		t.Errorf("infinite RDP: ε = %v, err = %v; want +Inf, nil", eps, err)
	}
	// Nothing spent: ε = 0.
	if eps, _, err := EpsilonFromRDP(orders, []float64{0, 0}, 1e-5); err != nil || eps != 0 {
		t.Errorf("zero RDP: ε = %v, err = %v; want 0", eps, err)
	}
}

func TestComposedRDP(t *testing.T) {
	orders := []float64{1.5, 2, 10.5}
	got, err := ComposedRDP(0.04, 1.5, 100, orders)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range orders {
		if want := 100 * SubsampledGaussianRDP(0.04, 1.5, a); relErr(got[i], want) > 1e-15 {
			t.Errorf("order %v: %v, want %v", a, got[i], want)
		}
	}
	for _, bad := range []struct {
		q, sigma float64
		steps    int
		orders   []float64
	}{{1.5, 1, 1, orders}, {0.1, -1, 1, orders}, {0.1, 1, -1, orders}, {0.1, 1, 1, []float64{0.5}}} {
		if _, err := ComposedRDP(bad.q, bad.sigma, bad.steps, bad.orders); err == nil {
			t.Errorf("ComposedRDP(%v, %v, %d, %v) accepted bad input", bad.q, bad.sigma, bad.steps, bad.orders)
		}
	}
}
