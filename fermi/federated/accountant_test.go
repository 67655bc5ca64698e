package federated

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/trainer"
)

// TestSiloAccountant checks that a silo keeps an RDP ledger and calibrates
// its σ with RDP too, whatever the default accountant: a σ calibrated by
// PLD (smaller) would have the RDP ledger exceed the budget before the
// rounds it was calibrated for. A silo asked for PLD, or restarted on a
// state kept by another accountant, is refused naming Privacy.Accountant.
func TestSiloAccountant(t *testing.T) {
	data := synthetic(300, 8)
	cfg := testConfig(31) // Privacy.Accountant "": the default, PLD
	path := filepath.Join(t.TempDir(), "silo.json")
	s := startFromFile(t, cfg, data, 0, path)
	info, err := s.Info()
	if err != nil {
		t.Fatal(err)
	}
	eps, err := s.Epsilon(info.Rounds)
	if err != nil || eps > info.Epsilon*(1+1e-9) {
		t.Errorf("the %d rounds σ was calibrated for spend ε = %v (%v) by the silo's ledger, above its budget %v", info.Rounds, eps, err, info.Epsilon)
	}
	if info.Receipt.Accountant != accounting.AccountantRDP || s.State().Release.Accountant != accounting.AccountantRDP {
		t.Errorf("silo receipt by %q, state's accountant %q; want rdp", info.Receipt.Accountant, s.State().Release.Accountant)
	}

	refused := func(what string, err error) {
		t.Helper()
		var fields trainer.FieldErrors
		if !errors.As(err, &fields) || len(fields) != 1 || fields[0].Field != "Privacy.Accountant" {
			t.Errorf("%s: %v, want a refusal naming Privacy.Accountant", what, err)
		}
	}
	pld := cfg
	pld.Privacy.Accountant = accounting.AccountantPLD
	_, run := dpops.NewRand(cfg.Seed)
	_, err = NewSilo[float64](pld, data, SiloSource(run, 1, 0), SiloOptions{Index: 1})
	refused("a PLD silo", err)

	st, err := LoadSiloState(path)
	if err != nil {
		t.Fatal(err)
	}
	st.Release.Accountant = accounting.AccountantPLD // as a silo keeping a PLD ledger would have written it
	_, err = NewSilo[float64](cfg, data, SiloSource(run, 0, st.Generation+1), SiloOptions{Index: 0, State: st})
	refused("a restart on a PLD ledger", err)
	if err != nil && !strings.Contains(err.Error(), "pld") {
		t.Errorf("the refusal does not name the state's accountant: %v", err)
	}
	st.Release.Accountant = "" // a state file from before the accountant was recorded: RDP
	if _, err := NewSilo[float64](cfg, data, SiloSource(run, 0, st.Generation+1), SiloOptions{Index: 0, State: st}); err != nil {
		t.Errorf("a restart on an old (RDP) state: %v", err)
	}
}
