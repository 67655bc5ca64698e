package accounting

import (
	"errors"
	"strings"
	"testing"
)

// TestCalibrateSigmaPLDMNIST inverts the issue-32 MNIST row (σ = 1.0 gives
// PLD ε 2.82020 over 14,040 steps at q = 256/60000, δ = 1e-5): the
// calibrated σ meets the target, 1e-5 less does not, and it is below the
// RDP accountant's σ for the same target.
func TestCalibrateSigmaPLDMNIST(t *testing.T) {
	const target, delta, q, steps = 2.82020, 1e-5, 256.0 / 60000, 14040
	sigma, err := CalibrateSigmaPLD(target, delta, q, steps, PLDCalibration{})
	if err != nil {
		t.Fatal(err)
	}
	if relErr(sigma, 1) > 1e-4 {
		t.Errorf("σ = %.8f, want 1.0 (the row's σ) to 1e-4", sigma)
	}
	if e := pldEps(t, q, sigma, steps, delta, PLDOptions{}); e > target {
		t.Errorf("ε(σ = %v) = %v exceeds the target %v", sigma, e, target)
	}
	if e := pldEps(t, q, sigma*(1-1e-5), steps, delta, PLDOptions{}); !(e > target) {
		t.Errorf("ε(σ·(1-1e-5)) = %v is within the target %v: σ is not the smallest", e, target)
	}
	rdp, err := CalibrateSigma(target, delta, q, steps)
	if err != nil {
		t.Fatal(err)
	}
	if !(sigma < rdp) {
		t.Errorf("PLD σ %v should be below RDP's %v for the same target", sigma, rdp)
	}
}

// TestCalibrateSigmaPLDOptions: a companion release is charged as the
// joint σ_eff (so the calibrated σ_eff equals the plain calibration's σ),
// replace-one needs less noise than add/remove at the same σ scale, a spent
// release raises σ, and one that spends the whole target is refused.
func TestCalibrateSigmaPLDOptions(t *testing.T) {
	const target, delta, q, steps = 1.5, 1e-6, 0.01, 800
	coarse := PLDOptions{Interval: 1e-3}
	plain, err := CalibrateSigmaPLD(target, delta, q, steps, PLDCalibration{PLDOptions: coarse})
	if err != nil {
		t.Fatal(err)
	}
	withCounts, err := CalibrateSigmaPLD(target, delta, q, steps, PLDCalibration{PLDOptions: coarse, Companions: []float64{10}})
	if err != nil {
		t.Fatal(err)
	}
	if eff := JointSigma(withCounts, 10*withCounts); relErr(eff, plain) > 1e-5 {
		t.Errorf("with a companion at 10σ: σ_eff = %v, want the plain σ %v", eff, plain)
	}
	ro, err := CalibrateSigmaPLD(target, delta, q, steps, PLDCalibration{PLDOptions: PLDOptions{Interval: 1e-3, Relation: RelationReplaceOne}})
	if err != nil {
		t.Fatal(err)
	}
	if !(ro < plain) {
		t.Errorf("replace-one σ %v should be below add/remove's %v", ro, plain)
	}
	spent := []Mechanism{{Kind: KindGaussian, NoiseMultiplier: 8, Steps: 1}, {Kind: KindLaplace, Epsilon: 0.05, Steps: 2}}
	more, err := CalibrateSigmaPLD(target, delta, q, steps, PLDCalibration{PLDOptions: coarse, Spent: spent})
	if err != nil {
		t.Fatal(err)
	}
	total, err := PLDEpsilon(append(spent, Mechanism{Kind: KindSubsampledGaussian, SampleRate: q, NoiseMultiplier: more, Steps: steps}), delta, coarse)
	if err != nil {
		t.Fatal(err)
	}
	if !(more > plain) || total > target {
		t.Errorf("with spent releases: σ %v (plain %v), total ε %v (target %v)", more, plain, total, target)
	}
	_, err = CalibrateSigmaPLD(0.1, delta, q, steps, PLDCalibration{PLDOptions: coarse, Spent: []Mechanism{{Kind: KindLaplace, Epsilon: 0.2, Steps: 1}}})
	if err == nil || !strings.Contains(err.Error(), "already spent") {
		t.Errorf("spent beyond the target: err = %v", err)
	}
}

func TestCalibrateSigmaPLDErrors(t *testing.T) {
	for _, c := range []struct {
		name          string
		target, delta float64
		q             float64
		steps         int
		cal           PLDCalibration
		msg           string
		range_        bool
	}{
		{"target", 0, 1e-5, 0.01, 100, PLDCalibration{}, "target epsilon", false},
		{"delta", 1, 1e-13, 0.01, 100, PLDCalibration{}, "δ in [1e-12, 1)", true},
		{"q", 1, 1e-5, 0, 100, PLDCalibration{}, "sample rate", false},
		{"steps", 1, 1e-5, 0.01, 0, PLDCalibration{}, "steps", false},
		{"companion", 1, 1e-5, 0.01, 100, PLDCalibration{Companions: []float64{-1}}, "companion", false},
		{"relation", 1, 1e-5, 0.01, 100, PLDCalibration{PLDOptions: PLDOptions{Relation: "x"}}, "relation", false},
	} {
		_, err := CalibrateSigmaPLD(c.target, c.delta, c.q, c.steps, c.cal)
		if err == nil || !strings.Contains(err.Error(), c.msg) || errors.Is(err, ErrPLDRange) != c.range_ {
			t.Errorf("%s: err = %v, want one mentioning %q (ErrPLDRange: %v)", c.name, err, c.msg, c.range_)
		}
	}
}

// BenchmarkCalibrateSigmaPLD is the issue-32 requirement: calibrating σ
// for a 60-epoch MNIST run (q = 256/60000, 14,040 steps, δ = 1e-5) at the
// default interval must take under a second.
func BenchmarkCalibrateSigmaPLD(b *testing.B) {
	for b.Loop() {
		if _, err := CalibrateSigmaPLD(2.82020, 1e-5, 256.0/60000, 14040, PLDCalibration{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPLDEpsilonMNIST is one PLD ε of the same run.
func BenchmarkPLDEpsilonMNIST(b *testing.B) {
	m := []Mechanism{{Kind: KindSubsampledGaussian, SampleRate: 256.0 / 60000, NoiseMultiplier: 1, Steps: 14040}}
	for b.Loop() {
		if _, err := PLDEpsilon(m, 1e-5, PLDOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
