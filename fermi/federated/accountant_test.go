package federated

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/models"
	"github.com/fairdp/fairdp/trainer"
)

// TestSiloAccountant checks that a silo's ledger uses the run's accountant
// (PLD by default, RDP when asked) and calibrates its σ with the same one,
// so the planned rounds fit the budget; that its receipt equals the PLD
// composition of its releases built independently (and is below RDP's, so
// PLD is what was stated); and that a restart under another accountant is
// refused naming Privacy.Accountant, leaving the state file as it was.
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
	if err != nil || eps > info.Epsilon*(1+1e-9) || eps < 0.9*info.Epsilon {
		t.Errorf("the %d rounds σ was calibrated for spend ε = %v (%v) by the silo's ledger, want just under its budget %v", info.Rounds, eps, err, info.Epsilon)
	}
	if info.Receipt.Accountant != accounting.AccountantPLD || s.State().Release.Accountant != accounting.AccountantPLD || info.Accountant != accounting.AccountantPLD {
		t.Errorf("silo receipt by %q, state's accountant %q, info's %q; want pld", info.Receipt.Accountant, s.State().Release.Accountant, info.Accountant)
	}
	const rounds = 6
	for r := 1; r <= rounds; r++ {
		if _, err := s.Round(request(s, r, 0.01)); err != nil {
			t.Fatalf("round %d: %v", r, err)
		}
	}
	// testConfig is --scope sensitive: rounds are plain Gaussians (q = 1).
	steps := []accounting.Mechanism{{SampleRate: 1, NoiseMultiplier: s.alg.Sigma, Steps: rounds}}
	want := ledgerEpsilon(t, accounting.AccountantPLD, s.delta, s.alg.CountSigma, steps)
	rdp := rdpLedgerEpsilon(t, s.delta, s.alg.CountSigma, steps)
	r := must[accounting.Receipt](t)(s.FullReceipt())
	if r.Epsilon == nil || math.Abs(*r.Epsilon-want) > 1e-9*want || r.Accountant != accounting.AccountantPLD {
		t.Errorf("receipt ε %v by %q, independent PLD composition %v", r.Epsilon, r.Accountant, want)
	}
	if !(want < rdp) {
		t.Errorf("PLD composition %v is not below RDP's %v: the test would not tell the accountants apart", want, rdp)
	}
	if got := s.SpentEpsilon(); math.Abs(got-want) > 1e-9*want {
		t.Errorf("spent ε %v, receipt %v", got, want)
	}

	refused := func(what string, err error) {
		t.Helper()
		var fields trainer.FieldErrors
		if !errors.As(err, &fields) || len(fields) != 1 || fields[0].Field != "Privacy.Accountant" {
			t.Errorf("%s: %v, want a refusal naming Privacy.Accountant", what, err)
		}
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	other := cfg
	other.Privacy.Accountant = accounting.AccountantRDP
	st, err := LoadSiloState(path)
	if err != nil {
		t.Fatal(err)
	}
	_, run := dpops.NewRand(cfg.Seed)
	_, err = NewSilo[float64](other, data, SiloSource(run, 0, st.Generation+1), SiloOptions{Index: 0, State: st, StatePath: path})
	refused("an RDP restart on a PLD ledger", err)
	if err != nil && !strings.Contains(err.Error(), "pld") {
		t.Errorf("the refusal does not name the state's accountant: %v", err)
	}
	if after, err := os.ReadFile(path); err != nil || !bytes.Equal(before, after) {
		t.Errorf("the refused restart changed the state file (%v)", err)
	}

	// A state file from before the accountant was recorded was kept by RDP:
	// a restart continues it under RDP only.
	st.Release.Accountant = ""
	_, err = NewSilo[float64](cfg, data, SiloSource(run, 0, st.Generation+1), SiloOptions{Index: 0, State: st})
	refused("a PLD restart on an old (RDP) state", err)
	if _, err := NewSilo[float64](other, data, SiloSource(run, 0, st.Generation+1), SiloOptions{Index: 0, State: st}); err != nil {
		t.Errorf("an RDP restart on an old (RDP) state: %v", err)
	}

	bad := cfg
	bad.Privacy.Accountant = "prv"
	_, err = NewSilo[float64](bad, data, SiloSource(run, 1, 0), SiloOptions{Index: 1})
	refused("an unknown accountant", err)
}

// TestRDPSilo: a silo told RDP keeps an RDP ledger whose receipt is the
// RDP composition of its releases.
func TestRDPSilo(t *testing.T) {
	data := synthetic(300, 9)
	cfg := testConfig(32)
	cfg.Privacy.Accountant = accounting.AccountantRDP
	_, run := dpops.NewRand(cfg.Seed)
	s, err := NewSilo[float64](cfg, data, SiloSource(run, 0, 0), SiloOptions{Index: 0})
	if err != nil {
		t.Fatal(err)
	}
	for r := 1; r <= 3; r++ {
		if _, err := s.Round(request(s, r, 0.01)); err != nil {
			t.Fatalf("round %d: %v", r, err)
		}
	}
	want := ledgerEpsilon(t, accounting.AccountantRDP, s.delta, s.alg.CountSigma, []accounting.Mechanism{{SampleRate: 1, NoiseMultiplier: s.alg.Sigma, Steps: 3}})
	r := must[accounting.Receipt](t)(s.FullReceipt())
	if r.Epsilon == nil || math.Abs(*r.Epsilon-want) > 1e-9 || r.Accountant != accounting.AccountantRDP || s.State().Release.Accountant != accounting.AccountantRDP {
		t.Errorf("receipt ε %v by %q (state %q), want RDP's %v", r.Epsilon, r.Accountant, s.State().Release.Accountant, want)
	}
}

// TestServerRefusesMixedAccountants: the server refuses silos that state ε
// under different accountants, or under another than its own setting; a
// silo that does not say (older fairdp) counts as RDP.
func TestServerRefusesMixedAccountants(t *testing.T) {
	spec := models.Spec{Arch: "logistic", InShape: []int{3}, Classes: 2}
	base := Info{Records: 10, Spec: spec, NumParams: 8, Groups: 2, Classes: 2, WLen: 4, Rounds: 1}
	silo := func(acc string) Client {
		i := base
		i.Accountant = acc
		return fixedSilo{info: i}
	}
	ctx := context.Background()
	sc := ServerConfig{LR: 0.1, Retries: 1}
	for _, tc := range []struct {
		server string
		silos  []string
		ok     bool
	}{
		{"", []string{"pld", "pld"}, true},
		{"pld", []string{"pld", "rdp"}, false},
		{"", []string{"pld", "rdp"}, false},
		{"", []string{"rdp", ""}, true},
		{"rdp", []string{""}, true},
		{"pld", []string{""}, false},
		{"rdp", []string{"pld"}, false},
		{"prv", []string{"pld"}, false},
	} {
		sc.Accountant = tc.server
		var cs []Client
		for _, a := range tc.silos {
			cs = append(cs, silo(a))
		}
		_, err := NewServer[float64](ctx, sc, cs)
		if (err == nil) != tc.ok || (err != nil && !strings.Contains(err.Error(), "accountant")) {
			t.Errorf("server %q, silos %q: %v, want ok %v", tc.server, tc.silos, err, tc.ok)
		}
	}
}
