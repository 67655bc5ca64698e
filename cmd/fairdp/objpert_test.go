package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestObjPertTrainEval: `fairdp train --algo objpert --out D` writes a
// checkpoint that `fairdp eval` scores exactly as the run did, with the
// receipt inside, and bad settings name their flags.
func TestObjPertTrainEval(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--limit", "3000", "--seed", "4"}
	out, stderr, err := runCLI(t, append([]string{"train", "--algo", "objpert", "--epsilon", "2", "--out", dir}, args...)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	rep := validateReport(t, dir, "objpert")
	test := rep["test"].(map[string]any)
	evalOut, stderr, err := runCLI(t, append([]string{"eval", "--model", filepath.Join(dir, "model.ckpt")}, args...)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	// The printed test tables of train and eval agree line for line (their
	// titles differ: eval says the held-out split is what it scored).
	table := func(s string) string {
		i := strings.Index(s, "\ngroup ")
		j := strings.Index(s[i+1:], "error ")
		if i < 0 || j < 0 {
			t.Fatalf("no test table in\n%s", s)
		}
		return s[i+1 : i+1+j+len("error 0.0000")]
	}
	if a, b := table(out), table(evalOut); a != b {
		t.Errorf("train and eval test tables differ:\n%s\n%s", a, b)
	}
	if !strings.Contains(evalOut, `"exact_minimiser"`) || !strings.Contains(evalOut, `"epsilon":2`) {
		t.Errorf("eval does not show the run's receipt:\n%s", evalOut)
	}
	if test["error"].(float64) > 0.3 {
		t.Errorf("test error %v at ε = 2", test["error"])
	}
	for _, tc := range []struct{ flag, value, want string }{
		{"--row-bound", "-1", "--row-bound must be"},
		{"--l2", "-1", "--l2 must be"},
		{"--epsilon", "0", "epsilon"},
	} {
		_, _, err := runCLI(t, "train", "--algo", "objpert", "--limit", "1000", tc.flag, tc.value)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s: error %v, want one naming %q", tc.flag, tc.value, err, tc.want)
		}
	}
}
