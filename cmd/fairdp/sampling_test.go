package main

import (
	"path/filepath"
	"testing"
)

// TestReceiptSampling: every receipt in a run's report.json (the run's
// and those nested in its extra, e.g. each fit's) states how the records
// were sampled. Budget tailoring (DPSE) and DPNOSE release full-data
// statistics, with no subsampling, and said "poisson" (the receipt
// builder's default for an empty RunInfo.Sampling); they say "none", as
// objective perturbation, post-processing and the oracle did already. A
// DP-SGD run still says "poisson".
func TestReceiptSampling(t *testing.T) {
	for _, tc := range []struct {
		want string
		args []string
	}{
		{"none", []string{"--algo", "tailoring", "--seed", "1"}},
		{"none", []string{"--algo", "dpnose", "--seed", "1"}},
		{"none", []string{"--algo", "tailoring", "--task", "regression", "--tune", "--seed", "1"}},
		{"none", []string{"--algo", "objpert", "--epsilon", "1", "--limit", "2000", "--seed", "1"}},
		{"none", []string{"--algo", "postproc", "--epsilon", "1", "--limit", "2000", "--seed", "1"}},
		{"none", []string{"--algo", "oracle", "--epsilon", "1", "--rounds", "5", "--limit", "2000", "--seed", "1"}},
		{"poisson", []string{"--algo", "dpsgd", "--epsilon", "1", "--epochs", "1", "--limit", "2000", "--seed", "1"}},
	} {
		t.Run(tc.args[1], func(t *testing.T) {
			dir := t.TempDir()
			if _, stderr, err := runCLI(t, append([]string{"train", "--quiet", "--out", dir}, tc.args...)...); err != nil {
				t.Fatalf("%v\n%s", err, stderr)
			}
			var rep any
			readJSON(t, filepath.Join(dir, "report.json"), &rep)
			n := 0
			var walk func(path string, v any)
			walk = func(path string, v any) {
				switch x := v.(type) {
				case map[string]any:
					if _, receipt := x["seeded"]; receipt {
						n++
						if x["sampling"] != tc.want {
							t.Errorf("%v: receipt at %s says sampling %v, want %q", tc.args, path, x["sampling"], tc.want)
						}
					}
					for k, e := range x {
						walk(path+"."+k, e)
					}
				case []any:
					for _, e := range x {
						walk(path+"[]", e)
					}
				}
			}
			walk("", rep)
			if n == 0 {
				t.Fatalf("%v: no receipt in report.json", tc.args)
			}
		})
	}
}
