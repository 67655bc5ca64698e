package trainer

import (
	"strings"
	"testing"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/dpops/accounting"
)

// newLedgerDPSGD is DP-SGD on 1,000 records (q = 0.05, 20 steps per
// epoch, 5 epochs) calibrated to ε = 1 with the given accountant.
func newLedgerDPSGD(t *testing.T, accountant string) *DPSGD[float32] {
	t.Helper()
	seed := uint64(7)
	_, src := dpops.NewRand(&seed)
	a, err := NewDPSGDFrom[float32](DPSGDOptions{Records: 1000, Batch: 50, Epochs: 5, Clip: 1, Epsilon: 1,
		Seed: &seed, Accountant: accountant}, src)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestDPSGDAccountant checks that each accountant calibrates σ and states
// the receipt of the whole run within the target, recomputed
// independently from the run's mechanism, and that PLD, the default,
// needs less noise than RDP.
func TestDPSGDAccountant(t *testing.T) {
	sigmas := map[string]float64{}
	for _, kind := range []string{"", accounting.AccountantRDP} {
		a := newLedgerDPSGD(t, kind)
		steps := 5 * a.StepsPerEpoch()
		if err := a.ChargeLost(steps); err != nil {
			t.Fatal(err)
		}
		r, err := a.Receipt()
		if err != nil {
			t.Fatal(err)
		}
		m := accounting.SubsampledGaussian(a.Q, a.Sigma, 1, "")
		m.Steps = steps
		var want float64
		if kind == "" {
			want, err = accounting.PLDEpsilon([]accounting.Mechanism{m}, a.Delta, accounting.PLDOptions{})
		} else {
			rdp := &accounting.RDP{}
			err = rdp.Step(m, steps)
			want, _ = rdp.Epsilon(a.Delta)
		}
		if err != nil {
			t.Fatal(err)
		}
		wantKind := map[string]string{"": accounting.AccountantPLD, "rdp": "rdp"}[kind]
		if r.Accountant != wantKind || r.Epsilon == nil || *r.Epsilon != want || !(want <= 1) || want < 0.99 {
			t.Errorf("%q: receipt %s ε %v, want %s ε %v in [0.99, 1]", kind, r.Accountant, r.Epsilon, wantKind, want)
		}
		if planned, _ := a.PlannedEpsilon(5); planned != want {
			t.Errorf("%q: planned ε %v, receipt's %v", kind, planned, want)
		}
		sigmas[wantKind] = a.Sigma
	}
	if !(sigmas["pld"] < sigmas["rdp"]) {
		t.Errorf("PLD σ %v not below RDP's %v", sigmas["pld"], sigmas["rdp"])
	}
	if _, err := NewDPSGDFrom[float32](DPSGDOptions{Records: 1000, Batch: 50, Epochs: 5, Clip: 1, Epsilon: 1, Accountant: "moments"},
		dpops.Source{}); err == nil || !strings.Contains(err.Error(), "Privacy.Accountant") {
		t.Errorf("unknown accountant: %v", err)
	}
}

// TestDPSGDResumeAccountant checks that a checkpoint restores the ledger
// it saved, and that a resume under another accountant than the one that
// kept the checkpoint's budget is refused, naming it; a checkpoint from
// before the PLD ledger (no kind saved) was kept by RDP.
func TestDPSGDResumeAccountant(t *testing.T) {
	save := func(a *DPSGD[float32]) *State {
		s := &State{seeded: true}
		if err := a.ChargeLost(30); err != nil {
			t.Fatal(err)
		}
		if err := a.SaveState(s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	pld := save(newLedgerDPSGD(t, ""))
	b := newLedgerDPSGD(t, "")
	if err := b.LoadState(pld); err != nil {
		t.Fatal(err)
	}
	if got := b.Charges(); len(got) != 1 || got[0].Steps != 30 {
		t.Errorf("restored charges %+v, want 30 steps", got)
	}
	if err := newLedgerDPSGD(t, accounting.AccountantRDP).LoadState(pld); err == nil ||
		!strings.Contains(err.Error(), "resume with accountant pld") {
		t.Errorf("an RDP run resumed a PLD checkpoint: %v", err)
	}

	old := save(newLedgerDPSGD(t, accounting.AccountantRDP))
	delete(old.values, "dpsgd.accountant.kind") // as written before the PLD ledger
	if err := newLedgerDPSGD(t, "").LoadState(old); err == nil || !strings.Contains(err.Error(), "resume with accountant rdp") {
		t.Errorf("a PLD run resumed an RDP checkpoint: %v", err)
	}
	if err := newLedgerDPSGD(t, accounting.AccountantRDP).LoadState(old); err != nil {
		t.Errorf("an RDP run refused an old checkpoint: %v", err)
	}
}
