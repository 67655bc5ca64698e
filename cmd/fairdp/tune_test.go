package main

import (
	"slices"
	"strings"
	"testing"
)

// TestTrainTune drives `fairdp train --tune` on 2,000 records of the
// embedded Adult data: the report validates, its receipt is the search's
// (ε at most --epsilon, RDP by Papernot–Steinke Theorem 2), extra.tune
// names the chosen setting, and the output says which setting won. DPSGD-F
// runs with a hold-out (--tune-valid-frac), whose part sizes the receipt
// lists as not covered; DP-SGD scores on the trained-on records (the
// default), which leaves nothing of the kind to list. DP-FERMI's search
// chooses λ too: the output names it and the config repeats it.
func TestTrainTune(t *testing.T) {
	for _, algo := range []string{"dpsgd", "dpsgdf", "fermi"} {
		dir := t.TempDir()
		args := []string{"train", "--algo", algo, "--limit", "2000", "--seed", "5", "--epsilon", "2", "--tune",
			"--tune-trials", "3", "--out", dir}
		heldOut := algo == "dpsgdf"
		if heldOut {
			args = append(args, "--tune-valid-frac", "0.2")
		}
		out, _, err := runCLI(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"tune: chose --lr", "Theorem 2"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: output lacks %q:\n%s", algo, want, out)
			}
		}
		if strings.Contains(out, "not covered (tuning_split)") != heldOut {
			t.Errorf("%s: output lists the tuning split as not covered: %v, want %v:\n%s", algo, !heldOut, heldOut, out)
		}
		doc := validateReport(t, dir, algo)
		priv := doc["privacy"].(map[string]any)
		if eps, ok := priv["epsilon"].(float64); !ok || eps > 2 || eps < 1.98 || priv["accountant"] != "rdp" {
			t.Errorf("%s: receipt %v: want the search's ε ≤ 2 (calibrated to it) from the RDP accountant", algo, priv)
		}
		tune := doc["extra"].(map[string]any)["tune"].(map[string]any)
		chosen := tune["chosen"].(map[string]any)
		cfg := doc["config"].(map[string]any)
		sigma := cfg["privacy"].(map[string]any)["sigma"]
		if chosen["lr"] != cfg["lr"] || chosen["batch"] != cfg["batch"] || chosen["sigma"] != sigma {
			t.Errorf("%s: config (lr %v, batch %v, σ %v) is not the chosen setting %v", algo, cfg["lr"], cfg["batch"], sigma, chosen)
		}
		lambda, ok := chosen["lambda"]
		if fermi := algo == "fermi"; ok != fermi || strings.Contains(out, "--lambda") != fermi ||
			(fermi && lambda != cfg["fair"].(map[string]any)["lambda"]) {
			t.Errorf("%s: chosen λ %v (config's %v), output names it: %v; want λ chosen, named and repeated for fermi only",
				algo, lambda, cfg["fair"], strings.Contains(out, "--lambda"))
		}
	}
}

// TestTrainTuneErrors: bad --tune combinations get one line naming the flag.
func TestTrainTuneErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--algo", "steffle", "--scope", "sensitive"}, "--scope must be all to tune SteFFLe"},
		{[]string{"--algo", "steffle", "--tune-valid-frac", "0.2"}, "--tune-valid-frac must be 0 to tune SteFFLe"},
		{[]string{"--algo", "postproc"}, "--base must be objpert or dpsgd to tune"},
		{[]string{"--algo", "oracle", "--fallback", "error"}, "--fallback is what --algo oracle --tune chooses"},
		{[]string{"--algo", "objpert", "--l2", "0.01"}, "--l2 is what the search chooses"},
		{[]string{"--algo", "objpert", "--epsilon", "inf"}, "--epsilon must be finite to tune"},
		{[]string{"--algo", "objpert", "--tune-trials", "1"}, "--tune-trials must be a finite number > 1"},
		{[]string{"--algo", "fermi", "--scope", "sensitive"}, "--scope must be all to tune DP-FERMI"},
		{[]string{"--algo", "dpsgd", "--tune-trials", "1"}, "--tune-trials must be a finite number > 1"},
		{[]string{"--algo", "dpsgd", "--tune-valid-frac", "1"}, "--tune-valid-frac must be in [0, 1)"},
		{[]string{"--algo", "dpsgd", "--epsilon", "1", "--sigma", "2"}, "--sigma is set by the tuning's calibration"},
		{[]string{"--algo", "dpsgd", "--epsilon", "inf"}, "--epsilon must be finite to tune"},
		{[]string{"--algo", "dpsgd", "--checkpoint", "x"}, "--tune cannot be combined with --checkpoint"},
	} {
		args := append([]string{"train", "--limit", "300", "--quiet", "--seed", "1", "--tune"}, tc.args...)
		if slices.Contains(tc.args, "--checkpoint") {
			args[len(args)-1] = t.TempDir()
		}
		_, _, err := runCLI(t, args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: error %v, want one line containing %q", tc.args, err, tc.want)
		}
	}
}

// TestTrainDataAwareDefaults: a default private run takes the data-aware
// batch, epochs, learning rate and clip (see trainer's datadefaults.go) and
// says so; a flag the user gave is kept.
func TestTrainDataAwareDefaults(t *testing.T) {
	for _, tc := range []struct {
		flags         []string
		batch, epochs float64
		lr, clip      float64
		note          bool
	}{
		// --limit 1000 leaves 1,000 training records; at ε = 1, ε·n < 2000, so q = 0.25 (batch 250),
		// 20 epochs, η = 0.1, clip 1/10.
		{nil, 250, 20, 0.1, 0.1, true},
		{[]string{"--batch", "50", "--clip", "1"}, 50, 20, 0.1, 1, true},
		// ε = 3: ε·n ≥ 2000, so q = 0.05 (batch 50), 40 epochs, η = 0.03, clip 1.
		{[]string{"--epsilon", "3"}, 50, 40, 0.03, 1, true},
		{[]string{"--batch", "64", "--epochs", "20", "--lr", "0.005", "--clip", "1"}, 64, 20, 0.005, 1, false},
	} {
		dir := t.TempDir()
		args := append([]string{"train", "--algo", "dpsgd", "--limit", "1000", "--seed", "2", "--quiet", "--out", dir}, tc.flags...)
		out, _, err := runCLI(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out, "defaults adapted to the 1000 training records") != tc.note {
			t.Errorf("%v: output %q, want the adaptation note: %v", tc.flags, out, tc.note)
		}
		cfg := validateReport(t, dir, "dpsgd")["config"].(map[string]any)
		clip := cfg["privacy"].(map[string]any)["clip"]
		if cfg["batch"] != tc.batch || cfg["epochs"] != tc.epochs || cfg["lr"] != tc.lr || clip != tc.clip {
			t.Errorf("%v: batch %v epochs %v lr %v clip %v, want %v %v %v %v", tc.flags, cfg["batch"], cfg["epochs"], cfg["lr"], clip,
				tc.batch, tc.epochs, tc.lr, tc.clip)
		}
	}
}
