package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDefaultDeltaRule: every private algorithm's
// default δ is 1/n² of the records its guarantee covers (the training
// split; for SteFFLe each silo's own records), δ ≥ 1/n is refused unless
// --allow-large-delta is given, and then the receipt says so.
func TestDefaultDeltaRule(t *testing.T) {
	type privacy struct {
		Delta      float64
		Conversion string
		Note       string
	}
	data := []string{"--dataset", "adult", "--limit", "800", "--seed", "2", "--quiet"}
	for _, tc := range []struct {
		algo  string
		extra []string
		n     int // training records: --limit 800, or 15,000 synthetic for tailoring
	}{
		{"dpsgd", append([]string{"--epsilon", "2", "--epochs", "1"}, data...), 800},
		{"dpsgdf", append([]string{"--epsilon", "2", "--epochs", "1"}, data...), 800},
		{"naive", append([]string{"--epsilon", "2", "--epochs", "1"}, data...), 800},
		{"fermi", append([]string{"--epsilon", "2", "--epochs", "1"}, data...), 800},
		{"steffle", append([]string{"--epsilon", "2", "--epochs", "1", "--silos", "1"}, data...), 800},
		{"oracle", append([]string{"--epsilon", "2"}, data...), 800},
		{"tailoring", []string{"--task", "regression", "--rho", "1", "--seed", "2", "--trials", "1"}, 15000},
	} {
		t.Run(tc.algo, func(t *testing.T) {
			dir := t.TempDir()
			if _, stderr, err := runCLI(t, append([]string{"train", "--algo", tc.algo, "--out", dir}, tc.extra...)...); err != nil {
				t.Fatalf("%v\n%s", err, stderr)
			}
			var rep struct{ Privacy privacy }
			raw, err := os.ReadFile(filepath.Join(dir, "report.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(raw, &rep); err != nil {
				t.Fatal(err)
			}
			if want := 1 / (float64(tc.n) * float64(tc.n)); math.Abs(rep.Privacy.Delta-want) > 1e-12*want {
				t.Errorf("δ = %v, want 1/n² = %v (n = %d)", rep.Privacy.Delta, want, tc.n)
			}
		})
	}
	common := append([]string{"--epochs", "1"}, data...)
	for _, algo := range []string{"dpsgd", "fermi"} {
		_, _, err := runCLI(t, append([]string{"train", "--algo", algo, "--epsilon", "1", "--delta", "0.5"}, common...)...)
		if err == nil || !strings.Contains(err.Error(), "not below 1/n") || !strings.Contains(err.Error(), "--allow-large-delta") {
			t.Errorf("%s --delta 0.5: %v", algo, err)
		}
		out, _, err := runCLI(t, append([]string{"train", "--algo", algo, "--epsilon", "1", "--delta", "0.5", "--allow-large-delta"}, common...)...)
		if err != nil || !strings.Contains(out, "allowed by the user: the guarantee is weak") {
			t.Errorf("%s --delta 0.5 --allow-large-delta: %v\n%s", algo, err, out)
		}
	}
}
