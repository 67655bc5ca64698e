package accounting

import (
	"errors"
	"math"
	"testing"
)

// TestZCDPConversionsRow9 reproduces OpenDP's cdp_epsilon: ρ = 1/32,
// δ = 1e-3 → optimal ε = 0.6880024554878085, Bun–Steinke ≈ 0.96048.
func TestZCDPConversionsRow9(t *testing.T) {
	eps, err := ZCDPToEpsilon(1.0/32, 1e-3)
	if err != nil {
		t.Fatal(err)
	}
	if relErr(eps, 0.6880024554878085) > 1e-6 {
		t.Errorf("optimal ε = %.16g, want 0.6880024554878085", eps)
	}
	bs, err := ZCDPToEpsilonBunSteinke(1.0/32, 1e-3)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(bs-0.96048) > 5e-6 {
		t.Errorf("Bun–Steinke ε = %.8g, want 0.96048", bs)
	}
}

// zcdpObjective is ε(α) = αρ + ln((α-1)/α) - (ln δ + ln α)/(α-1), the RDP →
// (ε,δ) bound of Balle et al. 2020 applied to RDP(α) = ρα.
func zcdpObjective(rho, delta, a float64) float64 {
	return a*rho + math.Log((a-1)/a) - (math.Log(delta)+math.Log(a))/(a-1)
}

// TestZCDPToEpsilonIsTheMinimum compares the bisection with a brute-force
// scan of α on a fine logarithmic grid (an independent path), and with the
// RDP conversion applied to RDP(α) = ρα on the same grid.
func TestZCDPToEpsilonIsTheMinimum(t *testing.T) {
	for _, c := range []struct{ rho, delta float64 }{
		{1.0 / 32, 1e-3}, {0.5, 1e-5}, {2, 1e-6}, {8, 1e-6}, {1e-4, 1e-5}, {0.1, 0.1},
	} {
		got, err := ZCDPToEpsilon(c.rho, c.delta)
		if err != nil {
			t.Fatal(err)
		}
		var orders, rdp []float64
		best := math.Inf(1)
		for a := 1.01; a < 1e7; a *= 1.0001 {
			best = math.Min(best, zcdpObjective(c.rho, c.delta, a))
			if len(orders) == 0 || a > orders[len(orders)-1]*1.01 {
				orders = append(orders, a)
				rdp = append(rdp, c.rho*a)
			}
		}
		if got > best+1e-12 || relErr(got, best) > 1e-6 {
			t.Errorf("ρ=%v δ=%v: bisection ε = %.12g, grid minimum %.12g", c.rho, c.delta, got, best)
		}
		viaRDP, _, err := EpsilonFromRDP(orders, rdp, c.delta)
		if err != nil {
			t.Fatal(err)
		}
		if got > viaRDP+1e-12 || relErr(got, viaRDP) > 1e-3 {
			t.Errorf("ρ=%v δ=%v: ZCDPToEpsilon %.12g, RDP conversion on a coarse grid %.12g", c.rho, c.delta, got, viaRDP)
		}
		bs, _ := ZCDPToEpsilonBunSteinke(c.rho, c.delta)
		if !(got < bs) {
			t.Errorf("ρ=%v δ=%v: optimal ε %v not below Bun–Steinke %v", c.rho, c.delta, got, bs)
		}
	}
}

func TestZCDPConversionEdgesAndErrors(t *testing.T) {
	if e, err := ZCDPToEpsilon(0, 1e-5); err != nil || e != 0 {
		t.Errorf("ρ = 0: ε = %v, %v; want 0", e, err)
	}
	if e, err := ZCDPToEpsilon(math.Inf(1), 1e-5); err != nil || !math.IsInf(e, 1) {
		t.Errorf("ρ = ∞: ε = %v, %v; want +Inf", e, err)
	}
	for _, c := range []struct{ rho, delta float64 }{{-1, 1e-5}, {math.NaN(), 1e-5}, {1, 0}, {1, 1}, {1, -0.1}} {
		if _, err := ZCDPToEpsilon(c.rho, c.delta); err == nil {
			t.Errorf("ZCDPToEpsilon(%v, %v) accepted bad input", c.rho, c.delta)
		}
		if _, err := ZCDPToEpsilonBunSteinke(c.rho, c.delta); err == nil {
			t.Errorf("ZCDPToEpsilonBunSteinke(%v, %v) accepted bad input", c.rho, c.delta)
		}
	}
	if got, want := mustF(ZCDPToEpsilonBunSteinke(0.5, 1e-5)), 5.298525912188081; relErr(got, want) > 1e-15 {
		t.Errorf("Bun–Steinke(0.5, 1e-5) = %.16g, want %.16g", got, want)
	}
}

func mustF(x float64, err error) float64 {
	if err != nil {
		panic(err)
	}
	return x
}

// TestGaussianRho checks ρ = Δ²/(2σ²), its inverse, and pure ε → ε²/2
// (Bun and Steinke 2016).
func TestGaussianRho(t *testing.T) {
	cases := []struct{ sens, std, rho float64 }{
		{1, 1, 0.5}, {2, 1, 2}, {1, 2, 0.125}, {0.5, 4, 1.0 / 128},
	}
	for _, c := range cases {
		if got := GaussianRho(c.sens, c.std); got != c.rho {
			t.Errorf("GaussianRho(%v, %v) = %v, want %v", c.sens, c.std, got, c.rho)
		}
		std, err := GaussianStdForRho(c.sens, c.rho)
		if err != nil || relErr(std, c.std) > 1e-15 {
			t.Errorf("GaussianStdForRho(%v, %v) = %v, %v; want %v", c.sens, c.rho, std, err, c.std)
		}
	}
	if !math.IsInf(GaussianRho(1, 0), 1) {
		t.Error("GaussianRho without noise should be +Inf")
	}
	for _, bad := range [][2]float64{{0, 1}, {1, 0}, {-1, 1}, {1, math.Inf(1)}} {
		if _, err := GaussianStdForRho(bad[0], bad[1]); err == nil {
			t.Errorf("GaussianStdForRho(%v, %v) accepted bad input", bad[0], bad[1])
		}
	}
	if got := PureToRho(2); got != 2 {
		t.Errorf("PureToRho(2) = %v, want 2", got)
	}
	if got := PureToRho(0.1); relErr(got, 0.005) > 1e-15 {
		t.Errorf("PureToRho(0.1) = %v, want 0.005", got)
	}
}

// TestZCDPBudget: a τ/μ split (Alabi and Wiggins 2023, τ = 0.2ρ, μ = 0.8ρ) with K+1
// equal stage-1 shares fits exactly; one more charge is refused and leaves
// the total unchanged.
func TestZCDPBudget(t *testing.T) {
	const rho, groups = 2.0, 5
	tau, err := NewZCDP(0.2 * rho)
	if err != nil {
		t.Fatal(err)
	}
	for k := 0; k <= groups; k++ {
		if err := tau.Spend(0.2*rho/(groups+1), "stage 1 share"); err != nil {
			t.Fatalf("share %d of %d refused: %v", k+1, groups+1, err)
		}
	}
	if relErr(tau.Rho(), 0.4) > 1e-15 || tau.Remaining() > 1e-15 {
		t.Errorf("after all shares: ρ = %v, remaining %v; want 0.4, 0", tau.Rho(), tau.Remaining())
	}
	err = tau.Spend(1e-6, "one too many")
	if !errors.Is(err, ErrBudgetExceeded) {
		t.Fatalf("overspend: err = %v, want ErrBudgetExceeded", err)
	}
	if relErr(tau.Rho(), 0.4) > 1e-15 {
		t.Errorf("a refused charge changed ρ to %v", tau.Rho())
	}
	if s := tau.Spends(); len(s) != 1 || s[0].Steps != groups+1 || relErr(s[0].Rho, 0.4) > 1e-15 {
		t.Errorf("spends = %+v, want one merged entry ×6 with ρ 0.4", s)
	}

	mu, _ := NewZCDP(0.8 * rho)
	if err := mu.SpendGaussian(2, 4, "stage 2 gradient"); err != nil { // ρ = 4/32
		t.Fatal(err)
	}
	if got := mu.Remaining(); relErr(got, 1.6-0.125) > 1e-15 {
		t.Errorf("remaining = %v, want 1.475", got)
	}
	if err := mu.SpendGaussian(2, 0.5, "too little noise"); !errors.Is(err, ErrBudgetExceeded) { // ρ = 8
		t.Errorf("err = %v, want ErrBudgetExceeded", err)
	}
	if m := mu.Spends()[0]; m.Kind != KindGaussian || m.NoiseMultiplier != 2 || m.Sensitivity != 2 || m.Rho != 0.125 {
		t.Errorf("gaussian spend recorded as %+v", m)
	}
}

func TestZCDPUnlimitedAndErrors(t *testing.T) {
	var z ZCDP
	if !math.IsInf(z.Budget(), 1) || !math.IsInf(z.Remaining(), 1) {
		t.Errorf("zero ZCDP: budget %v remaining %v, want +Inf", z.Budget(), z.Remaining())
	}
	if err := z.Spend(1.0/32, "x"); err != nil {
		t.Fatal(err)
	}
	if got := z.Epsilon(1e-3); relErr(got, 0.6880024554878085) > 1e-6 {
		t.Errorf("Epsilon = %v", got)
	}
	if got := z.EpsilonBunSteinke(1e-3); math.Abs(got-0.96048) > 5e-6 {
		t.Errorf("EpsilonBunSteinke = %v", got)
	}
	if !math.IsNaN(z.Epsilon(0)) || !math.IsNaN(z.EpsilonBunSteinke(2)) {
		t.Error("bad δ should give NaN")
	}
	for _, bad := range []float64{-1, math.NaN(), math.Inf(1)} {
		if err := z.Spend(bad, "bad"); err == nil {
			t.Errorf("Spend(%v) accepted", bad)
		}
	}
	if err := z.SpendGaussian(1, 0, "no noise"); err == nil {
		t.Error("SpendGaussian without noise accepted")
	}
	if err := z.SpendGaussian(0, 1, "no sensitivity"); err == nil {
		t.Error("SpendGaussian with sensitivity 0 accepted")
	}
	for _, bad := range []float64{0, -1, math.NaN()} {
		if _, err := NewZCDP(bad); err == nil {
			t.Errorf("NewZCDP(%v) accepted", bad)
		}
	}
	inf, err := NewZCDP(math.Inf(1))
	if err != nil || !math.IsInf(inf.Remaining(), 1) {
		t.Errorf("NewZCDP(+Inf): %v, remaining %v", err, inf.Remaining())
	}
}

// TestPureRDP checks the pure curve at orders where each branch binds
// (αε/2 < 1: the zCDP one, else ε) against values computed by hand.
func TestPureRDP(t *testing.T) {
	for _, c := range []struct{ eps, alpha, want float64 }{
		{0.1, 2, 0.01},     // 2·0.01/2
		{0.1, 20, 0.1},     // 20·0.01/2 = 0.1: both
		{0.1, 40, 0.1},     // min(0.1, 0.2)
		{1, 1.5, 0.75},     // 1.5/2
		{1, 64, 1},         // min(1, 32)
		{0.5, 4, 0.5},      // min(0.5, 0.5)
		{0.5, 1.1, 0.1375}, // 1.1·0.125
	} {
		got := PureRDP(c.eps, []float64{c.alpha})[0]
		if math.Abs(got-c.want) > 1e-12 {
			t.Errorf("PureRDP(%v) at α = %v: %v, want %v", c.eps, c.alpha, got, c.want)
		}
	}
}

// TestReceiptSamplingNone: a receipt of full-data releases states sampling
// "none" when its RunInfo says so (budget tailoring's); an empty sampling
// still means Poisson, and an unknown one is refused.
func TestReceiptSamplingNone(t *testing.T) {
	z, err := NewZCDP(1)
	if err != nil {
		t.Fatal(err)
	}
	if err := z.SpendGaussian(1, 2, "sums"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ in, want string }{{SamplingNone, "none"}, {"", SamplingPoisson}} {
		r, err := z.Receipt(1e-6, RunInfo{Sampling: c.in})
		if err != nil || r.Sampling != c.want {
			t.Errorf("sampling %q: receipt says %q (%v), want %q", c.in, r.Sampling, err, c.want)
		}
	}
	if _, err := z.Receipt(1e-6, RunInfo{Sampling: "bogus"}); err == nil {
		t.Error("sampling \"bogus\" accepted")
	}
}
