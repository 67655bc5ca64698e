package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/dpops/accounting"
)

// TestTailoringTune drives `fairdp train --algo tailoring|dpnose --tune` on
// small synthetic groups: it prints the chosen setting and the search's
// receipt, whose ε is at most the budget (the ε that --rho converts to, or
// --epsilon), and report.json carries the chosen setting in extra.tune and
// as its config (one fit at the trial's ρ), and validates against the
// report schema.
func TestTailoringTune(t *testing.T) {
	for _, tc := range []struct {
		algo   string
		budget []string
		target func(delta float64) float64
	}{
		{"tailoring", []string{"--rho", "2"}, func(delta float64) float64 { e, _ := accounting.ZCDPToEpsilon(2, delta); return e }},
		{"dpnose", []string{"--epsilon", "3"}, func(float64) float64 { return 3 }},
	} {
		dir := t.TempDir()
		args := append([]string{"--algo", tc.algo, "--task", "regression", "--seed", "3", "--tune", "--tune-trials", "3", "--out", dir}, tc.budget...)
		out, _, err := runTailoringArgs(t, append(args, smallSynthetic...)...)
		if err != nil {
			t.Fatalf("%s: %v", tc.algo, err)
		}
		for _, want := range []string{"tune: chose ", "trial 1 of", "privacy of the whole search", "rdp accountant"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: output lacks %q:\n%s", tc.algo, want, out)
			}
		}
		validateReport(t, dir, tc.algo)
		raw, err := os.ReadFile(filepath.Join(dir, "report.json"))
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Privacy struct {
				Epsilon *float64
				Delta   float64
			}
			Config struct {
				Tailoring struct {
					Rho    []float64
					Trials int
					LR     float64
					Steps  int
				}
			}
			Extra struct {
				Tune struct {
					Chosen struct {
						LR    float64
						Steps int
						Rho   float64
					}
				}
			}
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		target := tc.target(doc.Privacy.Delta)
		if e := doc.Privacy.Epsilon; e == nil || !(*e <= target && *e > 0.99*target) {
			t.Errorf("%s: receipt ε %v, want at most %v", tc.algo, e, target)
		}
		c, tl := doc.Extra.Tune.Chosen, doc.Config.Tailoring
		if c.Steps == 0 || tl.LR != c.LR || tl.Steps != c.Steps || tl.Trials != 1 || len(tl.Rho) != 1 || tl.Rho[0] != c.Rho {
			t.Errorf("%s: config %+v, chosen %+v", tc.algo, tl, c)
		}
	}
}

// TestTailoringTuneRefuses: --tune's combinations that make no sense for
// tailoring get one line naming the flag.
func TestTailoringTuneRefuses(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--rho", "1,2"}, "--rho lists several ρ"},
		{[]string{"--trials", "3"}, "--trials is 3: a search publishes one fit"},
		{[]string{"--rho", "2", "--epsilon", "3"}, "--epsilon or from --rho"},
		{[]string{"--epsilon", "0.001"}, "--epsilon 0.001 is too small to tune"},
		{[]string{"--tune-valid-frac", "0.2"}, "--tune-valid-frac is not for tailoring"},
		{[]string{"--tune-trials", "1"}, "--tune-trials must be a finite number > 1"},
	} {
		args := append([]string{"--algo", "tailoring", "--task", "regression", "--seed", "1", "--quiet", "--tune"}, smallSynthetic...)
		_, _, err := runTailoringArgs(t, append(args, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: error %v, want one line containing %q", tc.args, err, tc.want)
		}
	}
	_, _, err := runTailoringArgs(t, "--algo", "tailoring", "--task", "regression", "--epsilon", "1")
	if err == nil || !strings.Contains(err.Error(), "--epsilon is for --tune") {
		t.Errorf("--epsilon without --tune: %v", err)
	}
}
