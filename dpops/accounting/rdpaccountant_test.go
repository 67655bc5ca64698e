package accounting

import (
	"math"
	"slices"
	"testing"
)

func TestRDPZeroValueUsesOpacusOrders(t *testing.T) {
	var a RDP
	if !slices.Equal(a.Orders(), OpacusOrders()) {
		t.Fatal("zero RDP accountant does not track OpacusOrders()")
	}
	if eps, _ := a.Epsilon(1e-5); eps != 0 {
		t.Errorf("nothing composed: ε = %v, want 0", eps)
	}
	// Opacus's test_rdp_accountant vector on the zero value.
	if err := a.Step(SubsampledGaussian(0.04, 1.5, 1, "gradients"), 2250); err != nil {
		t.Fatal(err)
	}
	if eps, _ := a.Epsilon(1e-5); relErr(eps, 7.32911117143) > 1e-6 {
		t.Errorf("ε = %.12g, want 7.32911117143", eps)
	}
}

// TestStepPerStepEqualsBulk: calling Step every step (as a trainer does)
// gives the same total as one call with all steps, and the history merges
// the calls. Interleaved DPSGD-F mechanisms stay separate.
func TestStepPerStepEqualsBulk(t *testing.T) {
	grads := SubsampledGaussian(1.0/214, 0.8, 1, "gradients")
	counts := SubsampledGaussian(1.0/214, 8, 0, "group counts")
	var perStep, bulk RDP
	for range 500 {
		if err := perStep.Step(counts, 1); err != nil {
			t.Fatal(err)
		}
		if err := perStep.Step(grads, 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := bulk.Step(grads, 500); err != nil {
		t.Fatal(err)
	}
	if err := bulk.Step(counts, 500); err != nil {
		t.Fatal(err)
	}
	a, b := perStep.Values(), bulk.Values()
	for i := range a {
		if relErr(a[i], b[i]) > 1e-12 {
			t.Fatalf("order %v: per-step %v, bulk %v", perStep.Orders()[i], a[i], b[i])
		}
	}
	h := perStep.History()
	if len(h) != 2 || h[0].Protects != "group counts" || h[0].Steps != 500 || h[1].NoiseMultiplier != 0.8 || h[1].Steps != 500 {
		t.Errorf("history = %+v, want counts×500 then gradients×500", h)
	}
	eg, _ := perStep.Epsilon(1e-6)
	var gradsOnly RDP
	_ = gradsOnly.Step(grads, 500)
	eo, _ := gradsOnly.Epsilon(1e-6)
	if !(eg > eo) {
		t.Errorf("adding the counts mechanism must raise ε: both %v, gradients only %v", eg, eo)
	}
}

func TestStepRejectsBadMechanisms(t *testing.T) {
	cases := []struct {
		name  string
		m     Mechanism
		steps int
	}{
		{"wrong kind", Mechanism{Kind: KindLaplace, SampleRate: 0.1, NoiseMultiplier: 1}, 1},
		{"empty kind", Mechanism{SampleRate: 0.1, NoiseMultiplier: 1}, 1},
		{"q above 1", SubsampledGaussian(1.2, 1, 1, ""), 1},
		{"q NaN", SubsampledGaussian(math.NaN(), 1, 1, ""), 1},
		{"negative sigma", SubsampledGaussian(0.1, -1, 1, ""), 1},
		{"negative steps", SubsampledGaussian(0.1, 1, 1, ""), -3},
	}
	for _, c := range cases {
		var a RDP
		if err := a.Step(c.m, c.steps); err == nil {
			t.Errorf("%s: Step accepted it", c.name)
		}
		if len(a.History()) != 0 {
			t.Errorf("%s: a rejected step entered the history", c.name)
		}
	}
}

func TestNewRDPOrders(t *testing.T) {
	if _, err := NewRDP([]float64{2, 0.5}); err == nil {
		t.Error("NewRDP accepted order 0.5")
	}
	if _, err := NewRDP([]float64{}); err == nil {
		t.Error("NewRDP accepted an empty order list")
	}
	a, err := NewRDP(TFOrders())
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Orders(); !slices.Equal(got, TFOrders()) {
		t.Errorf("Orders() = %v", got)
	}
}

func TestEpsilonBadDeltaIsNaN(t *testing.T) {
	var a RDP
	_ = a.Step(SubsampledGaussian(0.01, 1, 1, ""), 10)
	for _, d := range []float64{0, -1, 1, math.NaN()} {
		if e, o := a.Epsilon(d); !math.IsNaN(e) || !math.IsNaN(o) {
			t.Errorf("Epsilon(%v) = %v, %v; want NaN", d, e, o)
		}
		if e, _ := a.EpsilonClassic(d); !math.IsNaN(e) {
			t.Errorf("EpsilonClassic(%v) = %v; want NaN", d, e)
		}
	}
}

func TestNoNoiseIsInfinite(t *testing.T) {
	var a RDP
	_ = a.Step(SubsampledGaussian(0.01, 0, 1, ""), 10)
	if e, _ := a.Epsilon(1e-5); !math.IsInf(e, 1) {
		t.Errorf("σ = 0: ε = %v, want +Inf", e)
	}
}

// BenchmarkStepCached is the per-step cost a trainer pays (one mechanism
// already in the history).
func BenchmarkStepCached(b *testing.B) {
	var a RDP
	m := SubsampledGaussian(0.04, 1.5, 1, "gradients")
	for b.Loop() {
		_ = a.Step(m, 1)
	}
}

// BenchmarkEpsilon is the cost of one ε query over the Opacus orders (a
// progress line or receipt).
func BenchmarkEpsilon(b *testing.B) {
	a := RDP{}
	_ = a.Step(SubsampledGaussian(0.04, 1.5, 1, "gradients"), 2250)
	for b.Loop() {
		_, _ = a.Epsilon(1e-5)
	}
}

// BenchmarkFirstStep is the one-off cost of a new mechanism: its RDP at all
// 151 Opacus orders (99 of them fractional).
func BenchmarkFirstStep(b *testing.B) {
	m := SubsampledGaussian(0.04, 1.5, 1, "gradients")
	for b.Loop() {
		var a RDP
		_ = a.Step(m, 1)
	}
}

// TestRDPStateRestores: an accountant restored from State reports the same
// ε bit for bit and keeps composing like the original; a state whose
// totals are below its history is refused.
func TestRDPStateRestores(t *testing.T) {
	var a RDP
	m := SubsampledGaussian(0.01, 1.1, 1, "gradients")
	for range 37 {
		if err := a.Step(m, 1); err != nil {
			t.Fatal(err)
		}
	}
	var b RDP
	if err := b.Restore(a.State()); err != nil {
		t.Fatal(err)
	}
	a.Step(m, 5)
	b.Step(m, 5)
	ea, _ := a.Epsilon(1e-5)
	eb, _ := b.Epsilon(1e-5)
	if ea != eb || a.History()[0].Steps != 42 || b.History()[0].Steps != 42 {
		t.Errorf("restored ε %v (%d steps), original %v (%d steps)", eb, b.History()[0].Steps, ea, a.History()[0].Steps)
	}
	low := a.State()
	low.Total[3] /= 2
	if err := b.Restore(low); err == nil {
		t.Error("a state with a lowered total was restored")
	}
}
