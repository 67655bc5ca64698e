package fermi

import (
	"math"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/dpops/accounting/accountingtest"
	"github.com/fairdp/fairdp/trainer"
)

// TestAccountantReceipt checks DP-FERMI under each accountant and scope:
// σ is calibrated with the run's accountant so that the whole run, the
// group counts included, states ε within the target, recomputed
// independently from the run's mechanisms; PLD (the default) needs less
// noise than RDP; a checkpoint kept by one accountant is refused by a run
// of the other, naming it.
func TestAccountantReceipt(t *testing.T) {
	for _, scope := range []string{accounting.ScopeAll, accounting.ScopeSensitive} {
		sigmas := map[string]float64{}
		states := map[string]*trainer.State{}
		for _, kind := range []string{"", accounting.AccountantRDP} {
			job := syntheticJob(t, func(c *trainer.Config) { c.Fair.Scope, c.Privacy.Accountant = scope, kind })
			a, err := New[float64](job)
			if err != nil {
				t.Fatal(err)
			}
			if err := a.ChargeLost(a.Steps); err != nil {
				t.Fatal(err)
			}
			r, err := a.Receipt()
			if err != nil {
				t.Fatal(err)
			}
			// Under --scope sensitive the sample is not hidden: plain
			// Gaussian steps (q = 1), whatever the sampling rate.
			q := a.Q
			if scope == accounting.ScopeSensitive {
				q = 1
			}
			step := accounting.SubsampledGaussian(q, a.Sigma, 0, "")
			step.Steps = a.Steps
			counts := accounting.SubsampledGaussian(1, a.CountSigma, 0, "")
			counts.Steps = 1
			mechs := []accounting.Mechanism{step, counts}
			want, wantKind := 0.0, accounting.AccountantPLD
			if kind == "" {
				if want, err = accounting.PLDEpsilon(mechs, a.Delta, accounting.PLDOptions{}); err != nil {
					t.Fatal(err)
				}
			} else {
				wantKind = kind
				rdp := &accounting.RDP{}
				for _, m := range mechs {
					if err := rdp.Step(m, m.Steps); err != nil {
						t.Fatal(err)
					}
				}
				want, _ = rdp.Epsilon(a.Delta)
			}
			if r.Accountant != wantKind || r.Epsilon == nil || *r.Epsilon != want || want > 1 || want < 0.99 {
				t.Errorf("%s %q: receipt %s ε %v, want %s ε %v in [0.99, 1]", scope, kind, r.Accountant, r.Epsilon, wantKind, want)
			}
			if scope == accounting.ScopeSensitive && (a.Sensitivity != 2*job.Cfg.Privacy.Clip ||
				wantKind == accounting.AccountantPLD && r.Relation != accounting.RelationAddRemove) {
				t.Errorf("sensitive scope: sensitivity %v, relation %q; want 2C under add/remove", a.Sensitivity, r.Relation)
			}
			sigmas[wantKind] = a.Sigma
			s := &trainer.State{}
			if err := a.SaveState(s); err != nil {
				t.Fatal(err)
			}
			states[wantKind] = s
		}
		if !(sigmas["pld"] < sigmas["rdp"]) {
			t.Errorf("%s: PLD σ %v not below RDP's %v", scope, sigmas["pld"], sigmas["rdp"])
		}
		pld, err := New[float64](syntheticJob(t, func(c *trainer.Config) { c.Fair.Scope = scope }))
		if err != nil {
			t.Fatal(err)
		}
		if err := pld.LoadState(states["rdp"]); err == nil || !strings.Contains(err.Error(), "resume with accountant rdp") {
			t.Errorf("%s: a PLD run resumed an RDP checkpoint: %v", scope, err)
		}
		if err := pld.LoadState(states["pld"]); err != nil {
			t.Errorf("%s: a PLD run refused its own checkpoint: %v", scope, err)
		}
	}
}

// TestSensitiveScopeChargesGaussian: under --scope sensitive the exact
// s-independent terms show which records a step sampled, so no step is
// amplified by sampling. At a fixed σ the receipt must be the composition of
// plain Gaussian mechanisms, checked against closed forms: the T steps
// (multiplier σ) and the group counts (multiplier σ_c) are together one
// Gaussian with μ² = T/σ² + 1/σ_c² (Dong, Roth and Su 2022, Corollary 3.3),
// whose exact ε at δ is Balle and Wang 2018's Theorem 8, and whose RDP is
// α·μ²/2 at every order (Mironov 2017, Proposition 7). The old ledger
// charged the steps at q = batch/n and stated a far smaller ε; the
// sampling_hidden exclusion it declared is gone.
func TestSensitiveScopeChargesGaussian(t *testing.T) {
	for _, kind := range []string{accounting.AccountantPLD, accounting.AccountantRDP} {
		job := syntheticJob(t, func(c *trainer.Config) {
			c.Fair.Scope, c.Privacy.Accountant = accounting.ScopeSensitive, kind
			c.Privacy.Epsilon, c.Privacy.Sigma = math.Inf(1), 40
		})
		a, err := New[float64](job)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.ChargeLost(a.Steps); err != nil {
			t.Fatal(err)
		}
		r, err := a.Receipt()
		if err != nil {
			t.Fatal(err)
		}
		mu2 := float64(a.Steps)/(a.Sigma*a.Sigma) + 1/(a.CountSigma*a.CountSigma)
		exact := accountingtest.GaussianEpsilon(math.Sqrt(mu2), a.Delta)
		rho := mu2 / 2
		zcdp := rho + 2*math.Sqrt(rho*math.Log(1/a.Delta)) // Bun and Steinke 2016, Proposition 1.3
		if r.Epsilon == nil || r.Accountant != kind {
			t.Fatalf("%s: receipt %s ε %v", kind, r.Accountant, r.Epsilon)
		}
		got := *r.Epsilon
		if got < exact || got > zcdp {
			t.Errorf("%s: ε %v outside [%v (exact Gaussian), %v (zCDP)]", kind, got, exact, zcdp)
		}
		if kind == accounting.AccountantPLD && got > exact*1.003 {
			t.Errorf("PLD ε %v more than 0.3 %% above the exact Gaussian composition's %v", got, exact)
		}
		if kind == accounting.AccountantRDP {
			rdp := a.acc.RDP()
			orders, values := rdp.Orders(), rdp.Values()
			want := make([]float64, len(orders))
			for i, o := range orders {
				want[i] = o * rho
				if math.Abs(values[i]-want[i]) > 1e-12*want[i] {
					t.Errorf("RDP at order %v: %v, want α·μ²/2 = %v", o, values[i], want[i])
				}
			}
			conv, _, err := accounting.EpsilonFromRDP(orders, want, a.Delta)
			if err != nil || math.Abs(conv-got) > 1e-12*conv {
				t.Errorf("RDP ε %v, want %v from the closed-form RDP curve (%v)", got, conv, err)
			}
		}
		for _, m := range r.Mechanisms {
			if m.SampleRate != 1 {
				t.Errorf("%s: mechanism charged at q = %v under --scope sensitive: %+v", kind, m.SampleRate, m)
			}
		}
		for _, nc := range a.NotCovered() {
			if nc.Item == "sampling_hidden" {
				t.Errorf("%s: sampling_hidden still declared although the ledger charges it", kind)
			}
		}
	}
}

// TestOldSensitiveCheckpointRefused: a checkpoint whose ledger charged
// --scope sensitive steps at the Poisson rate (what fairdp did before it
// charged that scope without amplification) understates ε, so resuming it
// is refused; a checkpoint charged as now resumes.
func TestOldSensitiveCheckpointRefused(t *testing.T) {
	sensitive := func(c *trainer.Config) { c.Fair.Scope = accounting.ScopeSensitive }
	old, err := New[float64](syntheticJob(t, sensitive))
	if err != nil {
		t.Fatal(err)
	}
	amplified := old.StepMechanism()
	amplified.SampleRate = old.Q
	if err := old.acc.Step(amplified, 5); err != nil {
		t.Fatal(err)
	}
	s := &trainer.State{}
	if err := old.SaveState(s); err != nil {
		t.Fatal(err)
	}
	resumed, err := New[float64](syntheticJob(t, sensitive))
	if err != nil {
		t.Fatal(err)
	}
	if err := resumed.LoadState(s); err == nil || !strings.Contains(err.Error(), "cannot be resumed") {
		t.Errorf("an amplified sensitive-scope checkpoint resumed: %v", err)
	}
	current, err := New[float64](syntheticJob(t, sensitive))
	if err != nil {
		t.Fatal(err)
	}
	if err := current.ChargeLost(5); err != nil {
		t.Fatal(err)
	}
	s = &trainer.State{}
	if err := current.SaveState(s); err != nil {
		t.Fatal(err)
	}
	again, err := New[float64](syntheticJob(t, sensitive))
	if err != nil {
		t.Fatal(err)
	}
	if err := again.LoadState(s); err != nil {
		t.Errorf("a current sensitive-scope checkpoint was refused: %v", err)
	}
}
