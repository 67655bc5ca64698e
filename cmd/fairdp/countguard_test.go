package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestCountGuardFlag: --count-guard reaches DPSGD-F and --naive-guard
// Naïve, and report.json records the guard twice, in the configuration
// that reruns the job and in the algorithm's result; the receipt (ε) is
// that of the default guard, the guard being post-processing of the
// released counts.
func TestCountGuardFlag(t *testing.T) {
	for _, tc := range []struct{ algo, flag, key, def, other string }{
		{"dpsgdf", "--count-guard", "count_guard", "smooth", "c0"}, // dpsgdf.DefaultCountGuard
		{"naive", "--naive-guard", "naive_guard", "one", "smooth"}, // dpsgdf.DefaultNaiveGuard
	} {
		eps := map[string]float64{}
		for _, guard := range []string{"", tc.other} {
			dir := t.TempDir()
			args := []string{"train", "--algo", tc.algo, "--sigma", "1", "--epochs", "1", "--limit", "1200", "--seed", "4", "--quiet", "--out", dir}
			if guard != "" {
				args = append(args, tc.flag, guard)
			}
			if _, _, err := runCLI(t, args...); err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(filepath.Join(dir, "report.json"))
			if err != nil {
				t.Fatal(err)
			}
			var rep struct {
				Config struct {
					Fair map[string]any `json:"fair"`
				} `json:"config"`
				Privacy struct {
					Epsilon float64 `json:"epsilon"`
				} `json:"privacy"`
				Extra map[string]any `json:"extra"`
			}
			if err := json.Unmarshal(raw, &rep); err != nil {
				t.Fatal(err)
			}
			ran := guard
			if ran == "" {
				ran = tc.def
			}
			configured, _ := rep.Config.Fair[tc.key].(string)
			if configured != guard || rep.Extra[tc.key] != ran {
				t.Errorf("%s %q: config %q, result %v; want %q, %q", tc.flag, guard, configured, rep.Extra[tc.key], guard, ran)
			}
			eps[guard] = rep.Privacy.Epsilon
		}
		if eps[""] != eps[tc.other] || !(eps[""] > 0) {
			t.Errorf("%s: ε with the default guard %v, with %s %v: want equal", tc.algo, eps[""], tc.other, eps[tc.other])
		}
	}
}
