package dpops

import (
	"fmt"
	"math"
	mrand "math/rand/v2"
	"strings"
	"testing"
)

// seeded returns a fixed-seed stream: statistical tests below use 6σ
// tolerances derived from the variance of each statistic, so they would
// essentially never fail for a correct sampler with any seed, and the fixed
// seed makes them deterministic anyway.
func seeded(seed uint64) *mrand.Rand {
	r, _ := NewRand(&seed)
	return r
}

// within fails the test when got is more than 6 standard deviations sd from want.
func within(t *testing.T, what string, got, want, sd float64) {
	t.Helper()
	if math.Abs(got-want) > 6*sd {
		t.Errorf("%s = %.6g, want %.6g ± %.3g (6σ)", what, got, want, 6*sd)
	}
}

// moments returns the mean of x − centre, the mean of (x − centre)² and the
// fraction with |x − centre| > cut.
func moments[T Float](x []T, centre, cut float64) (mean, meanSq, tail float64) {
	for _, v := range x {
		d := float64(v) - centre
		mean += d
		meanSq += d * d
		if math.Abs(d) > cut {
			tail++
		}
	}
	n := float64(len(x))
	return mean / n, meanSq / n, tail / n
}

// sameSignNext returns the fraction of neighbours x[i], x[i+1] on the same
// side of centre: 1/2 ± √(1/(4(n−1))) for independent symmetric noise, a
// check that consecutive draws (e.g. shared sign bits) are not correlated.
func sameSignNext[T Float](x []T, centre float64) float64 {
	same := 0
	for i := 1; i < len(x); i++ {
		if (float64(x[i-1]) > centre) == (float64(x[i]) > centre) {
			same++
		}
	}
	return float64(same) / float64(len(x)-1)
}

// Closed forms for N(0, s²): E x² = s², Var x² = 2s⁴, P(|x| > 2s) = erfc(√2).
// For Laplace(0, b): E x² = 2b², Var x² = E x⁴ − (E x²)² = 24b⁴ − 4b⁴ = 20b⁴,
// P(|x| > 2b) = e⁻².
const (
	gaussTail2   = 0.04550026389635842 // erfc(√2)
	laplaceTail2 = 0.1353352832366127  // e⁻²
)

func TestAddGaussianMoments(t *testing.T) {
	const n, std, centre = 1_000_000, 2.5, 10.0
	x := make([]float64, n)
	for i := range x {
		x[i] = centre
	}
	if err := AddGaussian(seeded(1), x, std); err != nil {
		t.Fatal(err)
	}
	mean, meanSq, tail := moments(x, centre, 2*std)
	within(t, "mean", mean, 0, std/math.Sqrt(n))
	within(t, "variance", meanSq, std*std, std*std*math.Sqrt(2.0/n))
	within(t, "P(|x|>2σ)", tail, gaussTail2, math.Sqrt(gaussTail2*(1-gaussTail2)/n))
	within(t, "P(neighbours on the same side)", sameSignNext(x, centre), 0.5, math.Sqrt(0.25/(n-1)))
}

func TestAddLaplaceMoments(t *testing.T) {
	const n, b, centre = 1_000_000, 1.5, -3.0
	x := make([]float32, n)
	for i := range x {
		x[i] = centre
	}
	if err := AddLaplace(seeded(2), x, b); err != nil {
		t.Fatal(err)
	}
	mean, meanSq, tail := moments(x, centre, 2*b)
	within(t, "mean", mean, 0, math.Sqrt(2*b*b/n))
	within(t, "variance", meanSq, 2*b*b, b*b*math.Sqrt(20.0/n))
	within(t, "P(|x|>2b)", tail, laplaceTail2, math.Sqrt(laplaceTail2*(1-laplaceTail2)/n))
	within(t, "P(neighbours on the same side)", sameSignNext(x, centre), 0.5, math.Sqrt(0.25/(n-1)))
}

// Noise is drawn and added in float64 and rounded once: a float32 buffer
// must end up bit-identical to the float64 result rounded to float32.
func TestAddNoiseFloat32RoundsOnce(t *testing.T) {
	const n = 10000
	for _, tc := range []struct {
		name  string
		add32 func(*mrand.Rand, []float32) error
		add64 func(*mrand.Rand, []float64) error
	}{
		{"gaussian",
			func(r *mrand.Rand, x []float32) error { return AddGaussian(r, x, 0.3) },
			func(r *mrand.Rand, x []float64) error { return AddGaussian(r, x, 0.3) }},
		{"laplace",
			func(r *mrand.Rand, x []float32) error { return AddLaplace(r, x, 0.3) },
			func(r *mrand.Rand, x []float64) error { return AddLaplace(r, x, 0.3) }},
	} {
		x32, x64 := make([]float32, n), make([]float64, n)
		for i := range x32 {
			x32[i] = float32(i)*0.37 - 1000
			x64[i] = float64(x32[i])
		}
		if err := tc.add32(seeded(9), x32); err != nil {
			t.Fatal(err)
		}
		if err := tc.add64(seeded(9), x64); err != nil {
			t.Fatal(err)
		}
		for i := range x32 {
			if x32[i] != float32(x64[i]) {
				t.Fatalf("%s: element %d = %v, want float32(%v) = %v", tc.name, i, x32[i], x64[i], float32(x64[i]))
			}
		}
	}
}

func TestAddNoiseZeroScaleIsIdentity(t *testing.T) {
	x := []float32{1, -2, 3.5}
	if err := AddGaussian(seeded(1), x, 0); err != nil {
		t.Fatal(err)
	}
	if err := AddLaplace(seeded(1), x, 0); err != nil {
		t.Fatal(err)
	}
	if x[0] != 1 || x[1] != -2 || x[2] != 3.5 {
		t.Errorf("zero-scale noise changed the buffer: %v", x)
	}
}

func TestAddNoiseErrors(t *testing.T) {
	r := seeded(1)
	x := []float64{0}
	tests := []struct {
		name    string
		err     error
		mention string
	}{
		{"gaussian nil rand", AddGaussian(nil, x, 1), "nil *rand.Rand"},
		{"gaussian negative", AddGaussian(r, x, -1), "std = -1"},
		{"gaussian NaN", AddGaussian(r, x, math.NaN()), "std = NaN"},
		{"gaussian Inf", AddGaussian(r, x, math.Inf(1)), "std = +Inf"},
		{"laplace nil rand", AddLaplace(nil, x, 1), "nil *rand.Rand"},
		{"laplace negative", AddLaplace(r, x, -0.5), "scale = -0.5"},
		{"laplace NaN", AddLaplace(r, x, math.NaN()), "scale = NaN"},
	}
	for _, tc := range tests {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.mention) {
			t.Errorf("%s: error = %v, want one mentioning %q", tc.name, tc.err, tc.mention)
		}
	}
	if x[0] != 0 {
		t.Errorf("a rejected call changed the buffer to %v", x)
	}
}

func TestCeilPowerOfTwo(t *testing.T) {
	tests := []struct{ x, want float64 }{
		{1, 1},
		{3, 4},
		{4, 4},
		{0.3, 0.5},
		{4.0 / (1 << 40), 0x1p-38},
		{9.0 / (1 << 57), 0x1p-53},
		{math.Nextafter(8, 9), 16},
		{0x1p-1022, 0x1p-1022},
		{3 * 0x1p-1074, 0x1p-1022}, // subnormal: rounded up to the smallest normal power
		{0x1p1023, 0x1p1023},
	}
	for _, tc := range tests {
		if got := ceilPowerOfTwo(tc.x); got != tc.want {
			t.Errorf("ceilPowerOfTwo(%v) = %v, want %v", tc.x, got, tc.want)
		}
	}
	for _, bad := range []float64{0, -1, math.Inf(1), math.NaN(), math.MaxFloat64} {
		if got := ceilPowerOfTwo(bad); !math.IsNaN(got) {
			t.Errorf("ceilPowerOfTwo(%v) = %v, want NaN", bad, got)
		}
	}
}

func TestRoundToMultipleOfPowerOfTwo(t *testing.T) {
	tests := []struct{ x, g, want float64 }{
		{3.7, 0.5, 3.5},
		{3.75, 0.5, 4},
		{-3.75, 0.5, -4},
		{0.1, 0x1p-38, math.Round(0.1*(1<<38)) / (1 << 38)},
		{5, 4, 4},
		{6, 4, 8},
	}
	for _, tc := range tests {
		if got := roundToMultipleOfPowerOfTwo(tc.x, tc.g); got != tc.want {
			t.Errorf("roundToMultipleOfPowerOfTwo(%v, %v) = %v, want %v", tc.x, tc.g, got, tc.want)
		}
	}
}

// chiSquareLimit is a 6σ-style acceptance limit for a χ² statistic with df
// degrees of freedom (mean df, variance 2·df).
func chiSquareLimit(df int) float64 { return float64(df) + 6*math.Sqrt(2*float64(df)) }

// twoSidedGeometric against its closed-form pmf
// P(k) = tanh(λ/2)·e^{−λ|k|}, by a χ² test over k ∈ [−10, 10] plus both tails.
func TestTwoSidedGeometricPMF(t *testing.T) {
	const lambda, n, kmax = 0.7, 200_000, 10
	r := seeded(4)
	counts := make(map[int]int)
	for range n {
		k := twoSidedGeometric(r, lambda)
		switch {
		case k > kmax:
			k = kmax + 1
		case k < -kmax:
			k = -kmax - 1
		}
		counts[int(k)]++
	}
	c := math.Tanh(lambda / 2)
	tail := c * math.Exp(-lambda*(kmax+1)) / (1 - math.Exp(-lambda))
	chi2 := 0.0
	for k := -kmax - 1; k <= kmax+1; k++ {
		p := c * math.Exp(-lambda*math.Abs(float64(k)))
		if k > kmax || k < -kmax {
			p = tail
		}
		e := n * p
		d := float64(counts[k]) - e
		chi2 += d * d / e
	}
	if df := 2*kmax + 2; chi2 > chiSquareLimit(df) {
		t.Errorf("χ² = %.1f over %d bins, want ≤ %.1f: twoSidedGeometric does not follow tanh(λ/2)e^{−λ|k|}", chi2, df+1, chiSquareLimit(df))
	}
}

// symmetricBinomial at √n = 2²⁰ against the normal limit of Binomial(n, ½) −
// n/2 (std √n/2 = 2¹⁹; at this n the normal approximation of the binomial is
// far more accurate than the test can resolve): χ² over half-σ bins.
func TestSymmetricBinomialIsGaussian(t *testing.T) {
	const sqrtN, n = 1 << 20, 100_000
	const sd = sqrtN / 2.0
	r := seeded(5)
	edges := []float64{math.Inf(-1)}
	for z := -4.0; z <= 4; z += 0.5 {
		edges = append(edges, z)
	}
	edges = append(edges, math.Inf(1))
	counts := make([]int, len(edges)-1)
	var sum, sumSq float64
	for range n {
		z := float64(symmetricBinomial(r, sqrtN)) / sd
		sum += z
		sumSq += z * z
		for b := range counts {
			if z < edges[b+1] {
				counts[b]++
				break
			}
		}
	}
	phi := func(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }
	chi2 := 0.0
	for b, c := range counts {
		e := n * (phi(edges[b+1]) - phi(edges[b]))
		chi2 += (float64(c) - e) * (float64(c) - e) / e
	}
	if df := len(counts) - 1; chi2 > chiSquareLimit(df) {
		t.Errorf("χ² = %.1f over %d bins, want ≤ %.1f", chi2, len(counts), chiSquareLimit(df))
	}
	within(t, "mean/sd", sum/n, 0, 1/math.Sqrt(n))
	within(t, "variance/sd²", sumSq/n, 1, math.Sqrt(2.0/n))
}

func TestScalarLaplaceMoments(t *testing.T) {
	const n, value, l1, eps = 100_000, 3.7, 2.0, 0.5
	const b = l1 / eps
	r := seeded(6)
	x := make([]float64, n)
	for i := range x {
		var err error
		if x[i], err = ScalarLaplace(r, value, l1, eps); err != nil {
			t.Fatal(err)
		}
	}
	mean, meanSq, tail := moments(x, value, 2*b)
	within(t, "mean", mean, 0, math.Sqrt(2*b*b/n))
	within(t, "variance", meanSq, 2*b*b, b*b*math.Sqrt(20.0/n))
	within(t, "P(|x−value|>2b)", tail, laplaceTail2, math.Sqrt(laplaceTail2*(1-laplaceTail2)/n))
}

func TestScalarGaussianMoments(t *testing.T) {
	const n, value, l2, sigma = 200_000, -12.25, 3.0, 1.5
	const std = l2 * sigma
	r := seeded(7)
	x := make([]float64, n)
	for i := range x {
		var err error
		if x[i], err = ScalarGaussian(r, value, l2, sigma); err != nil {
			t.Fatal(err)
		}
	}
	mean, meanSq, tail := moments(x, value, 2*std)
	within(t, "mean", mean, 0, std/math.Sqrt(n))
	within(t, "variance", meanSq, std*std, std*std*math.Sqrt(2.0/n))
	within(t, "P(|x−value|>2σ)", tail, gaussTail2, math.Sqrt(gaussTail2*(1-gaussTail2)/n))
}

// The defence against Mironov's attack: outputs lie on the lattice gZ and
// output − round(value to g) has the same distribution whatever the value —
// with the same stream it is the very same number, so an output carries no
// trace of value's low-order bits. (Textbook value + b·sign·ln U does not
// have this property: its set of reachable doubles moves with value.)
func TestScalarNoiseDoesNotDependOnValue(t *testing.T) {
	const l1, eps = 2.0, 0.5
	const g = 0x1p-38 // ceilPowerOfTwo((l1/eps) / 2⁴⁰)
	values := []float64{0.1, 0.1 + 1e-15, 0.2, 1.0 / 3, -2.5}
	for seed := uint64(0); seed < 20; seed++ {
		var noise0 float64
		for i, v := range values {
			out, err := ScalarLaplace(seeded(seed), v, l1, eps)
			if err != nil {
				t.Fatal(err)
			}
			if k := out / g; k != math.Trunc(k) {
				t.Fatalf("ScalarLaplace output %v is not a multiple of g = 2⁻³⁸", out)
			}
			noise := out - math.Round(v/g)*g
			if i == 0 {
				noise0 = noise
			} else if noise != noise0 {
				t.Errorf("seed %d: noise for value %v = %v, for value %v = %v; want equal", seed, v, noise, values[0], noise0)
			}
		}
	}
	// Gaussian: the integer draw is identical; only the final float64 sum
	// rounds (at |out| ≈ 10, ulp 2⁻⁴⁹ > g = 2⁻⁵³).
	const gG = 0x1p-53 // ceilPowerOfTwo(2·4.5 / 2⁵⁷)
	for seed := uint64(0); seed < 20; seed++ {
		a, errA := ScalarGaussian(seeded(seed), 0.1, 3, 1.5)
		b, errB := ScalarGaussian(seeded(seed), 0.2, 3, 1.5)
		if errA != nil || errB != nil {
			t.Fatal(errA, errB)
		}
		da, db := a-math.Round(0.1/gG)*gG, b-math.Round(0.2/gG)*gG
		if math.Abs(da-db) > 4*0x1p-49 {
			t.Errorf("seed %d: Gaussian noise for 0.1 = %v, for 0.2 = %v; want equal up to rounding", seed, da, db)
		}
	}
}

func TestScalarReproducible(t *testing.T) {
	for seed := uint64(0); seed < 5; seed++ {
		a, _ := ScalarLaplace(seeded(seed), 10, 1, 1)
		b, _ := ScalarLaplace(seeded(seed), 10, 1, 1)
		c, _ := ScalarGaussian(seeded(seed), 10, 1, 1)
		d, _ := ScalarGaussian(seeded(seed), 10, 1, 1)
		if a != b || c != d {
			t.Errorf("seed %d: repeated draws differ: %v/%v, %v/%v", seed, a, b, c, d)
		}
	}
}

func TestScalarErrors(t *testing.T) {
	r := seeded(1)
	nan, inf := math.NaN(), math.Inf(1)
	lap := func(value, sens, eps float64) error { _, err := ScalarLaplace(r, value, sens, eps); return err }
	gau := func(value, sens, sigma float64) error { _, err := ScalarGaussian(r, value, sens, sigma); return err }
	_, nilLap := ScalarLaplace(nil, 1, 1, 1)
	_, nilGau := ScalarGaussian(nil, 1, 1, 1)
	tests := []struct {
		name    string
		err     error
		mention string
	}{
		{"laplace nil rand", nilLap, "nil *rand.Rand"},
		{"laplace NaN value", lap(nan, 1, 1), "value = NaN"},
		{"laplace Inf value", lap(inf, 1, 1), "value = +Inf"},
		{"laplace zero sensitivity", lap(1, 0, 1), "l1Sensitivity = 0"},
		{"laplace negative sensitivity", lap(1, -1, 1), "l1Sensitivity = -1"},
		{"laplace zero epsilon", lap(1, 1, 0), "epsilon = 0"},
		{"laplace tiny epsilon", lap(1, 1, 1e-16), "epsilon = 1e-16"},
		{"laplace Inf epsilon", lap(1, 1, inf), "epsilon = +Inf"},
		{"laplace huge scale", lap(1, math.MaxFloat64, 0.5), "too large"},
		{"gaussian nil rand", nilGau, "nil *rand.Rand"},
		{"gaussian NaN value", gau(nan, 1, 1), "value = NaN"},
		{"gaussian zero sensitivity", gau(1, 0, 1), "l2Sensitivity = 0"},
		{"gaussian zero sigma", gau(1, 1, 0), "sigma = 0"},
		{"gaussian NaN sigma", gau(1, 1, nan), "sigma = NaN"},
		{"gaussian tiny std", gau(1, 1e-300, 1e-300), "below 2⁻⁹⁶⁶"},
		{"gaussian overflowing std", gau(1, 1e300, 1e300), "infinite"},
	}
	for _, tc := range tests {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.mention) {
			t.Errorf("%s: error = %v, want one mentioning %q", tc.name, tc.err, tc.mention)
		}
	}
	// Near the float64 limit the result may overflow: that must be an error,
	// never ±Inf or a panic.
	for range 50 {
		out, err := ScalarGaussian(r, math.MaxFloat64, 1e300, 100)
		if err == nil && (math.IsInf(out, 0) || math.IsNaN(out)) {
			t.Fatalf("ScalarGaussian returned %v without an error", out)
		}
	}
}

// The extremes the checks accept still sample (no truncation, no hang) and
// give finite values.
func TestScalarAcceptedExtremes(t *testing.T) {
	r := seeded(8)
	tests := []struct {
		name string
		draw func() (float64, error)
	}{
		{"laplace ε = 2⁻⁵⁰", func() (float64, error) { return ScalarLaplace(r, 1, 1, 0x1p-50) }},
		{"laplace ε = 1e12", func() (float64, error) { return ScalarLaplace(r, 1, 1, 1e12) }},
		{"laplace tiny Δ", func() (float64, error) { return ScalarLaplace(r, 1, 1e-200, 1) }},
		{"gaussian std = 2⁻⁹⁶⁰", func() (float64, error) { return ScalarGaussian(r, 0, 0x1p-480, 0x1p-480) }},
		{"gaussian std = 1e300", func() (float64, error) { return ScalarGaussian(r, 0, 1e150, 1e150) }},
	}
	for _, tc := range tests {
		for range 5 {
			out, err := tc.draw()
			if err != nil || math.IsInf(out, 0) || math.IsNaN(out) {
				t.Errorf("%s: got %v, %v; want a finite value", tc.name, out, err)
			}
		}
	}
}

// A private count: Laplace noise for ε = 1 on a count with sensitivity 1.
func ExampleScalarLaplace() {
	seed := uint64(1)
	_, src := NewRand(&seed)
	noisy, err := ScalarLaplace(src.Derive("counts"), 1234, 1, 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%.2f\n", noisy)
	_, err = ScalarLaplace(src.Derive("counts"), 1234, 1, 0)
	fmt.Println(err)
	// Output:
	// 1233.26
	// dpops.ScalarLaplace: epsilon = 0, want a finite number ≥ 2⁻⁵⁰
}

// The DP-SGD noise step: N(0, (σ·C)²) on every coordinate of the clipped
// gradient sum.
func ExampleAddGaussian() {
	seed := uint64(1)
	_, src := NewRand(&seed)
	const sigma, clip = 1.1, 1.0
	grad := make([]float32, 4)
	if err := AddGaussian(src.Derive("noise"), grad, sigma*clip); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%.3f\n", grad)
	// Output:
	// [-0.876 0.528 0.188 -0.870]
}

const benchParams = 1_600_000 // the VGG-like CNN

func BenchmarkAddGaussianFloat32(b *testing.B) {
	x := make([]float32, benchParams)
	r := seeded(1)
	b.SetBytes(4 * benchParams)
	for b.Loop() {
		_ = AddGaussian(r, x, 1.1)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchParams, "ns/value")
}

func BenchmarkAddLaplaceFloat32(b *testing.B) {
	x := make([]float32, benchParams)
	r := seeded(1)
	b.SetBytes(4 * benchParams)
	for b.Loop() {
		_ = AddLaplace(r, x, 1.1)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchParams, "ns/value")
}

func BenchmarkScalarGaussian(b *testing.B) {
	r := seeded(1)
	for b.Loop() {
		_, _ = ScalarGaussian(r, 1000, 1, 1)
	}
}

func BenchmarkScalarLaplace(b *testing.B) {
	r := seeded(1)
	for b.Loop() {
		_, _ = ScalarLaplace(r, 1000, 1, 1)
	}
}

// TestAddGaussianHardened: the hardened buffer noise has the requested
// spread, leaves a zero std alone, and every output lies on ScalarGaussian's
// lattice (a multiple of a power of two far below the std).
func TestAddGaussianHardened(t *testing.T) {
	seed := uint64(5)
	r, _ := NewRand(&seed)
	const n, std = 20000, 3.0
	x := make([]float64, n)
	if err := AddGaussianHardened(r, x, std); err != nil {
		t.Fatal(err)
	}
	var s, s2 float64
	for _, v := range x {
		s += v
		s2 += v * v
	}
	mean, sd := s/n, math.Sqrt(s2/n-(s/n)*(s/n))
	// 5 standard errors: the mean's is std/√n, the sd's about std/√(2n).
	if math.Abs(mean) > 5*std/math.Sqrt(n) || math.Abs(sd-std) > 5*std/math.Sqrt(2*n) {
		t.Errorf("mean %v, sd %v; want 0, %v", mean, sd, std)
	}
	g := ceilPowerOfTwo(2 * std / binomialBound)
	for i, v := range x[:100] {
		if math.Mod(v, g) != 0 {
			t.Fatalf("element %d = %v is not a multiple of the lattice %v", i, v, g)
		}
	}
	y := []float32{1, 2}
	if err := AddGaussianHardened(r, y, 0); err != nil || y[0] != 1 || y[1] != 2 {
		t.Errorf("std 0 changed the buffer: %v %v", y, err)
	}
	if err := AddGaussianHardened(r, y, -1); err == nil {
		t.Error("negative std accepted")
	}
}

func BenchmarkAddGaussianHardened(b *testing.B) {
	seed := uint64(1)
	r, _ := NewRand(&seed)
	x := make([]float64, 1000)
	for b.Loop() {
		AddGaussianHardened(r, x, 1)
	}
}
