package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigRelativePaths: `train --config report.json`
// run from another directory than the original run read the report's
// relative schema path from the working directory and failed on the bare
// file. A path found next to the config is read from there; one found
// nowhere is refused naming the config and the flag that fixes it.
func TestConfigRelativePaths(t *testing.T) {
	proj, elsewhere := t.TempDir(), t.TempDir()
	sampleSchema(t, proj, "sample.json", nil)
	// The original runs, in proj, with a relative --schema: one writes its
	// report next to the schema, one below it.
	t.Chdir(proj)
	for _, out := range []string{".", "run"} {
		if _, stderr, err := runCLI(t, "train", "--algo", "sgd", "--batch", "32", "--schema", "sample.json", "--epochs", "1", "--seed", "1", "--quiet", "--out", out); err != nil {
			t.Fatalf("%v\n%s", err, stderr)
		}
	}
	t.Chdir(elsewhere)
	next, below := filepath.Join(proj, "report.json"), filepath.Join(proj, "run", "report.json")
	for _, tc := range []struct {
		name string
		args []string
		err  string // "" for success
	}{
		{"the schema next to the config", []string{"--config", next}, ""},
		{"the schema found nowhere", []string{"--config", below}, `--config ` + below + `: its schema "sample.json" is not found`},
		{"the schema given", []string{"--config", below, "--schema", filepath.Join(proj, "sample.json")}, ""},
	} {
		_, _, err := runCLI(t, append([]string{"train", "--quiet"}, tc.args...)...)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "--schema")):
			t.Errorf("%s: got %v, want an error containing %q and naming --schema", tc.name, err, tc.err)
		}
	}
}
