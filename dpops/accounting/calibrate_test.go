package accounting

import (
	"math"
	"strings"
	"testing"
)

// TestCalibrateOpacusRows reproduces Opacus's get_noise_multiplier test
// values (σ ≈ 1.416 and 1.3562 with its default ε tolerance 0.01; Opacus
// asserts them to 4 places).
func TestCalibrateOpacusRows(t *testing.T) {
	cases := []struct {
		name  string
		steps int
		want  float64
	}{
		{"row2: 90 epochs at q=0.04", 2250, 1.416},
		{"row3: 2000 steps", 2000, 1.3562},
	}
	for _, c := range cases {
		sigma, err := CalibrateSigma(8, 1e-5, 0.04, c.steps, WithEpsilonTolerance(0.01))
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(sigma-c.want) > 5e-5 {
			t.Errorf("%s: σ = %.10g, want %v to 4 places", c.name, sigma, c.want)
		}
		eps := epsilonFor(t, 0.04, c.steps, 1e-5, sigma)
		if eps > 8 || eps < 8-0.01 {
			t.Errorf("%s: ε(σ) = %v, want within [7.99, 8]", c.name, eps)
		}
	}
}

func epsilonFor(t *testing.T, q float64, steps int, delta float64, sigmas ...float64) float64 {
	t.Helper()
	var a RDP
	for _, s := range sigmas {
		if err := a.Step(SubsampledGaussian(q, s, 1, ""), steps); err != nil {
			t.Fatal(err)
		}
	}
	eps, _ := a.Epsilon(delta)
	return eps
}

// TestCalibrateExact: without a tolerance σ is the smallest that meets the
// target: ε(σ) ≤ target < ε(σ·(1 - 1e-8)).
func TestCalibrateExact(t *testing.T) {
	cases := []struct {
		target, delta, q float64
		steps            int
	}{
		{8, 1e-5, 0.04, 2250}, {8, 1e-5, 0.04, 2000}, {1, 1e-5, 0.01, 1000}, {3, 1e-6, 256.0 / 36177, 2820}, {0.5, 1e-5, 1, 10},
	}
	for _, c := range cases {
		sigma, err := CalibrateSigma(c.target, c.delta, c.q, c.steps)
		if err != nil {
			t.Fatal(err)
		}
		at := epsilonFor(t, c.q, c.steps, c.delta, sigma)
		below := epsilonFor(t, c.q, c.steps, c.delta, sigma*(1-1e-8))
		if at > c.target || below <= c.target {
			t.Errorf("%+v: σ = %.12g gives ε %.12g, σ(1-1e-8) gives %.12g; want ε(σ) ≤ %v < ε(σ-)", c, sigma, at, below, c.target)
		}
	}
	// Opacus's tolerance-0.01 answers bracket the exact answers from above.
	if s, _ := CalibrateSigma(8, 1e-5, 0.04, 2250); !(s < 1.416015625 && s > 1.41) {
		t.Errorf("exact σ for row 2 = %v, want just below Opacus's 1.416015625", s)
	}
}

// TestCalibrateCompanionAndClassic: DPSGD-F's counts mechanism (σ1 = 10σ,
// Xu, Du and Wu 2021) needs a little more noise; the classic conversion needs more.
func TestCalibrateCompanionAndClassic(t *testing.T) {
	const target, delta, q, steps = 5.0, 1e-6, 256.0 / 54649, 12808
	plain, err := CalibrateSigma(target, delta, q, steps)
	if err != nil {
		t.Fatal(err)
	}
	withCounts, err := CalibrateSigma(target, delta, q, steps, WithCompanion(10))
	if err != nil {
		t.Fatal(err)
	}
	if !(withCounts > plain) {
		t.Errorf("companion σ %v should exceed plain σ %v", withCounts, plain)
	}
	joint := JointSigma(withCounts, 10*withCounts)
	if eps := epsilonFor(t, q, steps, delta, joint); eps > target || eps < target-1e-6 {
		t.Errorf("joint mechanism at σ = %v (σ_eff %v): ε = %v, want just under %v", withCounts, joint, eps, target)
	}
	// The old, additive charge of the two releases would have reported less
	// than the target for the same σ: the calibration must not use it.
	if eps := epsilonFor(t, q, steps, delta, withCounts, 10*withCounts); !(eps < target-1e-3) {
		t.Errorf("additive charge at σ = %v gives ε = %v; expected it to understate the target %v", withCounts, eps, target)
	}
	classic, err := CalibrateSigma(target, delta, q, steps, WithClassic())
	if err != nil {
		t.Fatal(err)
	}
	var a RDP
	_ = a.Step(SubsampledGaussian(q, classic, 1, ""), steps)
	if eps, _ := a.EpsilonClassic(delta); !(classic > plain) || eps > target || eps < target-1e-6 {
		t.Errorf("classic σ = %v (plain %v) gives classic ε %v, want just under %v", classic, plain, eps, target)
	}
	tf, err := CalibrateSigma(target, delta, q, steps, WithOrders(TFOrders()))
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(tf-plain) > 0.02*plain {
		t.Errorf("TF orders σ = %v, Opacus orders σ = %v: should be close", tf, plain)
	}
}

func TestCalibrateErrors(t *testing.T) {
	cases := []struct {
		name             string
		target, delta, q float64
		steps            int
		opts             []CalibrateOption
		msg              string
	}{
		{"epsilon zero", 0, 1e-5, 0.01, 100, nil, "target epsilon"},
		{"epsilon negative", -1, 1e-5, 0.01, 100, nil, "target epsilon"},
		{"epsilon NaN", math.NaN(), 1e-5, 0.01, 100, nil, "target epsilon"},
		{"epsilon inf", math.Inf(1), 1e-5, 0.01, 100, nil, "target epsilon"},
		{"delta zero", 1, 0, 0.01, 100, nil, "delta"},
		{"delta one", 1, 1, 0.01, 100, nil, "delta"},
		{"q zero", 1, 1e-5, 0, 100, nil, "sample rate"},
		{"q above one", 1, 1e-5, 1.5, 100, nil, "sample rate"},
		{"steps zero", 1, 1e-5, 0.01, 0, nil, "steps"},
		{"bad tolerance", 1, 1e-5, 0.01, 100, []CalibrateOption{WithEpsilonTolerance(0)}, "tolerance"},
		{"bad ratio", 1, 1e-5, 0.01, 100, []CalibrateOption{WithCompanion(-2)}, "ratio"},
		{"bad orders", 1, 1e-5, 0.01, 100, []CalibrateOption{WithOrders([]float64{0.9})}, "order"},
		// The classic conversion cannot go below ln(1/δ)/(63-1) ≈ 0.186 at any σ.
		{"unreachable", 0.01, 1e-5, 0.04, 2250, []CalibrateOption{WithClassic()}, "unreachable"},
	}
	for _, c := range cases {
		_, err := CalibrateSigma(c.target, c.delta, c.q, c.steps, c.opts...)
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: err = %v, want one mentioning %q", c.name, err, c.msg)
		}
	}
}

func BenchmarkCalibrateSigma(b *testing.B) {
	for b.Loop() {
		_, _ = CalibrateSigma(8, 1e-5, 0.04, 2250)
	}
}

// TestCalibrateWithSpent: a spent part of zeros changes nothing; a real one
// (one full-batch Gaussian release, σ = 20) is composed exactly as the RDP
// accountant composes it, so the accountant reports ε ≤ target at the
// returned σ and > target at 0.1 % less; a spent part that alone exceeds the
// target, negative or mis-sized spends are errors.
func TestCalibrateWithSpent(t *testing.T) {
	const eps, delta, q, steps = 1.0, 1e-9, 0.03, 6600
	orders := OpacusOrders()
	plain, err := CalibrateSigma(eps, delta, q, steps)
	if err != nil {
		t.Fatal(err)
	}
	zero, err := CalibrateSigma(eps, delta, q, steps, WithSpent(make([]float64, len(orders))))
	if err != nil || zero != plain {
		t.Errorf("zero spend: σ = %v (%v), want %v", zero, err, plain)
	}
	spent := make([]float64, len(orders))
	for i, a := range orders {
		spent[i] = SubsampledGaussianRDP(1, 20, a)
	}
	s, err := CalibrateSigma(eps, delta, q, steps, WithSpent(spent))
	if err != nil {
		t.Fatal(err)
	}
	epsAt := func(sigma float64) float64 {
		acc, err := NewRDP(nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := acc.Step(SubsampledGaussian(1, 20, 1, "counts"), 1); err != nil {
			t.Fatal(err)
		}
		if err := acc.Step(SubsampledGaussian(q, sigma, 1, "gradients"), steps); err != nil {
			t.Fatal(err)
		}
		e, _ := acc.Epsilon(delta)
		return e
	}
	if at, below := epsAt(s), epsAt(0.999*s); at > eps || below <= eps || s <= plain {
		t.Errorf("σ = %v: accountant ε %v (0.999σ: %v), σ without the spend %v", s, at, below, plain)
	}
	for _, bad := range [][]float64{spent[:3], {-1}, nil} {
		if bad == nil {
			huge := make([]float64, len(orders))
			for i, a := range orders {
				huge[i] = SubsampledGaussianRDP(1, 0.5, a)
			}
			bad = huge
		}
		if _, err := CalibrateSigma(eps, delta, q, steps, WithSpent(bad)); err == nil {
			t.Errorf("spend of %d values accepted", len(bad))
		}
	}
}
