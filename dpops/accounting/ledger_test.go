package accounting

import (
	"errors"
	"strings"
	"testing"
)

// ledgerRun is a small run every ledger test charges: 200 steps of the
// subsampled Gaussian and a one-off count release.
func ledgerRun(t *testing.T, l *Ledger) []Mechanism {
	t.Helper()
	step := SubsampledGaussian(0.02, 1.1, 1, "gradients")
	counts := SubsampledGaussian(1, 40, 1, "counts")
	if err := l.Step(counts, 1); err != nil {
		t.Fatal(err)
	}
	if err := l.Step(step, 200); err != nil {
		t.Fatal(err)
	}
	step.Steps, counts.Steps = 200, 1
	return []Mechanism{counts, step}
}

// TestLedgerReceiptByKind checks that each kind's receipt states the ε
// its own accountant gives for the same charges, computed independently.
func TestLedgerReceiptByKind(t *testing.T) {
	const delta = 1e-5
	for _, kind := range []string{"", AccountantPLD, AccountantRDP} {
		t.Run(kind, func(t *testing.T) {
			l, err := NewLedger(kind, PLDOptions{})
			if err != nil {
				t.Fatal(err)
			}
			mechs := ledgerRun(t, l)
			r, err := l.Receipt(delta, RunInfo{})
			if err != nil {
				t.Fatal(err)
			}
			var want float64
			wantKind := kind
			if kind == "" {
				wantKind = DefaultAccountant
			}
			if wantKind == AccountantPLD {
				if want, err = PLDEpsilon(mechs, delta, PLDOptions{}); err != nil {
					t.Fatal(err)
				}
				if r.PLDInterval == nil || *r.PLDInterval != DefaultPLDInterval || r.Relation != RelationAddRemove {
					t.Errorf("PLD receipt's discretisation: interval %v, relation %q", r.PLDInterval, r.Relation)
				}
			} else {
				rdp := &RDP{}
				for _, m := range mechs {
					if err := rdp.Step(m, m.Steps); err != nil {
						t.Fatal(err)
					}
				}
				want, _ = rdp.Epsilon(delta)
			}
			if r.Accountant != wantKind || r.Epsilon == nil || *r.Epsilon != want {
				t.Fatalf("receipt %s ε %v, want %s ε %v", r.Accountant, r.Epsilon, wantKind, want)
			}
			if r.RDPValid == nil || !*r.RDPValid {
				t.Errorf("a Poisson run's receipt must say the analysis covers its sampling (rdp_valid)")
			}
			eps, fell, err := l.Epsilon(delta)
			if err != nil || fell || eps != want {
				t.Errorf("Epsilon = %v (fell back %v, %v), want %v", eps, fell, err, want)
			}
		})
	}
}

// TestLedgerFallsBackSaying checks that where PLD cannot bound the run
// (δ below its range) the receipt is RDP's and says why.
func TestLedgerFallsBackSaying(t *testing.T) {
	const delta = 1e-14 // below the PLD accountant's range
	l, err := NewLedger(AccountantPLD, PLDOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ledgerRun(t, l)
	r, err := l.Receipt(delta, RunInfo{})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := l.RDP().Epsilon(delta)
	if r.Accountant != AccountantRDP || r.Epsilon == nil || *r.Epsilon != want {
		t.Fatalf("fallback receipt %s ε %v, want rdp ε %v", r.Accountant, r.Epsilon, want)
	}
	if !strings.Contains(r.Note, "cannot bound") {
		t.Errorf("fallback receipt's note does not say why: %q", r.Note)
	}
	if eps, fell, err := l.Epsilon(delta); err != nil || !fell || eps != want {
		t.Errorf("Epsilon = %v (fell back %v, %v), want RDP's %v and fellBack", eps, fell, err, want)
	}
}

// TestLedgerState checks that a restored ledger charges exactly as the
// original, and that another accountant's state or an inconsistent one is
// refused.
func TestLedgerState(t *testing.T) {
	const delta = 1e-5
	l, _ := NewLedger(AccountantPLD, PLDOptions{})
	ledgerRun(t, l)
	saved := l.State()
	r, _ := NewLedger(AccountantPLD, PLDOptions{})
	if err := r.Restore(saved); err != nil {
		t.Fatal(err)
	}
	for _, a := range []*Ledger{l, r} {
		if err := a.Step(SubsampledGaussian(0.02, 1.1, 1, "gradients"), 50); err != nil {
			t.Fatal(err)
		}
	}
	a, _, _ := l.Epsilon(delta)
	b, _, _ := r.Epsilon(delta)
	if a != b {
		t.Errorf("restored ledger's ε %v, original's %v", b, a)
	}

	rdp, _ := NewLedger(AccountantRDP, PLDOptions{})
	if err := rdp.Restore(saved); err == nil || !strings.Contains(err.Error(), "resume with accountant pld") {
		t.Errorf("an RDP run restored a PLD ledger: %v", err)
	}
	tampered := l.State()
	tampered.PLD.History = tampered.PLD.History[:1]
	if err := r.Restore(tampered); err == nil {
		t.Error("a ledger whose PLD side lost charges was restored")
	}
	if err := r.Step(Mechanism{Kind: KindLaplace, Epsilon: 1}, 1); err == nil {
		t.Fatal("the RDP side composed a Laplace release")
	}
	after, _, _ := r.Epsilon(delta)
	if after != b {
		t.Errorf("a refused step changed ε from %v to %v", b, after)
	}
}

// TestCalibrateRunSigma checks each accountant's σ against its own
// calibration, that PLD's needs less noise than RDP's for the same target,
// and that a cached answer is the fresh one.
func TestCalibrateRunSigma(t *testing.T) {
	const eps, delta, q, steps = 1.0, 1e-5, 0.01, 1000
	spent := []Mechanism{func() Mechanism { m := SubsampledGaussian(1, 30, 1, "counts"); m.Steps = 1; return m }()}
	for _, tc := range []struct {
		name       string
		c          SigmaCalibration
		companions []float64
	}{
		{"plain", SigmaCalibration{}, nil},
		{"companion", SigmaCalibration{Companions: []float64{10}}, []float64{10}},
		{"spent", SigmaCalibration{Spent: spent}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pld, used, err := CalibrateRunSigma(eps, delta, q, steps, tc.c)
			if err != nil || used != AccountantPLD {
				t.Fatalf("PLD: %v, %q, %v", pld, used, err)
			}
			direct, err := CalibrateSigmaPLD(eps, delta, q, steps, PLDCalibration{Companions: tc.c.Companions, Spent: tc.c.Spent})
			if err != nil || direct != pld {
				t.Fatalf("PLD σ %v, CalibrateSigmaPLD %v (%v)", pld, direct, err)
			}
			again, _, _ := CalibrateRunSigma(eps, delta, q, steps, tc.c)
			if again != pld {
				t.Errorf("cached σ %v, fresh %v", again, pld)
			}
			c := tc.c
			c.Accountant = AccountantRDP
			rdp, used, err := CalibrateRunSigma(eps, delta, q, steps, c)
			if err != nil || used != AccountantRDP {
				t.Fatalf("RDP: %v, %q, %v", rdp, used, err)
			}
			var opts []CalibrateOption
			for _, r := range tc.companions {
				opts = append(opts, WithCompanion(r))
			}
			if len(tc.c.Spent) > 0 {
				var rdpSpent []float64
				for _, a := range OpacusOrders() {
					rdpSpent = append(rdpSpent, SubsampledGaussianRDP(1, 30, a))
				}
				opts = append(opts, WithSpent(rdpSpent))
			}
			if want, _ := CalibrateSigma(eps, delta, q, steps, opts...); rdp != want {
				t.Errorf("RDP σ %v, CalibrateSigma %v", rdp, want)
			}
			if !(pld < rdp) {
				t.Errorf("PLD σ %v not below RDP's %v", pld, rdp)
			}
			// The PLD σ meets the target by the PLD accountant, recomputed.
			// (the σ itself when there is no companion, as a run charges it)
			charged := pld
			if len(tc.companions) > 0 {
				charged = JointSigma(append([]float64{pld}, scaled(pld, tc.companions)...)...)
			}
			step := SubsampledGaussian(q, charged, 0, "")
			step.Steps = steps
			got, err := PLDEpsilon(append([]Mechanism{step}, tc.c.Spent...), delta, PLDOptions{})
			if err != nil || !(got <= eps) || got < 0.99*eps {
				t.Errorf("ε at the PLD σ %v: %v (%v), want in [0.99, 1]·%v", pld, got, err, eps)
			}
		})
	}
	if _, _, err := CalibrateRunSigma(eps, delta, q, steps, SigmaCalibration{Accountant: "moments"}); err == nil ||
		!strings.Contains(err.Error(), `"pld" or "rdp"`) {
		t.Errorf("unknown accountant: %v", err)
	}
}

func scaled(s float64, ratios []float64) []float64 {
	out := make([]float64, len(ratios))
	for i, r := range ratios {
		out[i] = r * s
	}
	return out
}

// TestCalibrateRunSigmaFallsBack checks the RDP fallback where PLD cannot
// calibrate (δ below its range).
func TestCalibrateRunSigmaFallsBack(t *testing.T) {
	s, used, err := CalibrateRunSigma(1, 1e-14, 0.01, 100, SigmaCalibration{})
	if err != nil || used != AccountantRDP {
		t.Fatalf("σ %v by %q: %v", s, used, err)
	}
	if want, _ := CalibrateSigma(1, 1e-14, 0.01, 100); s != want {
		t.Errorf("fallback σ %v, RDP's %v", s, want)
	}
	if _, err := CalibrateSigmaPLD(1, 1e-14, 0.01, 100, PLDCalibration{}); !errors.Is(err, ErrPLDRange) {
		t.Errorf("the test's premise: PLD refuses δ = 1e-14 with ErrPLDRange (got %v)", err)
	}
}

// TestCalibrateSigmaPLDChargedSigma checks that the calibrated σ, charged
// as it is returned, meets the target. DP-FERMI's group counts at ε = 1,
// δ = 1e-9 once failed it: the search evaluated JointSigma(σ), two ulps
// above σ, where PLD's grid gave ε = 0.999998, and the run charging σ
// itself was stated ε = 1.0000011.
func TestCalibrateSigmaPLDChargedSigma(t *testing.T) {
	counts := SubsampledGaussian(1, 29.13439242328389, 1, "counts")
	counts.Steps = 1
	for _, tc := range []struct {
		eps, delta, q float64
		steps         int
		spent         []Mechanism
	}{
		{1, 1e-9, 0.03, 6600, []Mechanism{counts}},
		{1, 1e-9, 0.03, 6600, nil},
		{3, 1e-6, 0.007, 2000, nil},
	} {
		s, err := CalibrateSigmaPLD(tc.eps, tc.delta, tc.q, tc.steps, PLDCalibration{Spent: tc.spent})
		if err != nil {
			t.Fatal(err)
		}
		step := SubsampledGaussian(tc.q, s, 0, "")
		step.Steps = tc.steps
		if got, err := PLDEpsilon(append([]Mechanism{step}, tc.spent...), tc.delta, PLDOptions{}); err != nil || got > tc.eps {
			t.Errorf("%+v: σ %v charged gives ε %v (%v), above the target", tc, s, got, err)
		}
	}
}

// TestLedgerTakesTheSmaller checks a run far from PLD's range (ε = 100,
// as the fermi-utkface-cpu preset): PLD's search stops at the smallest σ
// it can bound, above RDP's σ, so the run is calibrated with RDP's σ and
// its receipt states RDP's (smaller) ε, saying why. Before, the run got
// PLD's σ: more noise than RDP needs.
func TestLedgerTakesTheSmaller(t *testing.T) {
	const eps, delta, q, steps = 100.0, 3.16e-9, 0.05, 200
	pld, err := CalibrateSigmaPLD(eps, delta, q, steps, PLDCalibration{})
	if err != nil {
		t.Fatal(err)
	}
	rdp, err := CalibrateSigma(eps, delta, q, steps)
	if err != nil {
		t.Fatal(err)
	}
	if !(rdp < pld) {
		t.Fatalf("premise: RDP σ %v below PLD's %v at ε = %v", rdp, pld, eps)
	}
	s, used, err := CalibrateRunSigma(eps, delta, q, steps, SigmaCalibration{})
	if err != nil || s != rdp || used != AccountantRDP {
		t.Fatalf("σ %v by %q (%v), want RDP's %v", s, used, err, rdp)
	}
	l, _ := NewLedger("", PLDOptions{})
	if err := l.Step(SubsampledGaussian(q, s, 1, ""), steps); err != nil {
		t.Fatal(err)
	}
	r, err := l.Receipt(delta, RunInfo{})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := l.RDP().Epsilon(delta)
	if r.Accountant != AccountantRDP || r.Epsilon == nil || *r.Epsilon != want || want > eps || !strings.Contains(r.Note, "RDP accountant's") {
		t.Errorf("receipt %s ε %v (note %q), want RDP's %v ≤ %v with the reason", r.Accountant, r.Epsilon, r.Note, want, eps)
	}
	if got, fell, _ := l.Epsilon(delta); got != want || !fell {
		t.Errorf("Epsilon %v (fell back %v), want RDP's %v", got, fell, want)
	}
}

// TestLedgerTinySigma checks that a noise multiplier so small that no PLD
// grid holds its loss (σ = 1e-300, which `fairdp train --sigma` accepts)
// is a receipt by RDP saying why, not a failed allocation: it panicked
// with "makeslice: len out of range" before.
func TestLedgerTinySigma(t *testing.T) {
	l, _ := NewLedger("", PLDOptions{})
	if err := l.Step(SubsampledGaussian(0.01, 1e-300, 1, ""), 10); err != nil {
		t.Fatal(err)
	}
	r, err := l.Receipt(1e-5, RunInfo{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Accountant != AccountantRDP || !strings.Contains(r.Note, "cannot bound") {
		t.Errorf("receipt %s, note %q; want RDP's, saying PLD cannot bound the run", r.Accountant, r.Note)
	}
}
