package fermi

import (
	"strings"
	"testing"

	"fairdp/dpops/accounting"
	"fairdp/trainer"
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
			step := accounting.SubsampledGaussian(a.Q, a.Sigma, 0, "")
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

// TestSensitiveScopeDeclaresSampling: under --scope sensitive the sampled
// records' s-independent terms are added without noise, so the receipt must
// not let the subsampling's hiding of who was sampled pass unsaid.
func TestSensitiveScopeDeclaresSampling(t *testing.T) {
	for _, scope := range []string{accounting.ScopeAll, accounting.ScopeSensitive} {
		job := syntheticJob(t, func(c *trainer.Config) { c.Fair.Scope = scope })
		a, err := New[float64](job)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, nc := range a.NotCovered() {
			found = found || nc.Item == "sampling_hidden"
		}
		if found != (scope == accounting.ScopeSensitive) {
			t.Errorf("scope %s: sampling_hidden declared %v", scope, found)
		}
	}
}
