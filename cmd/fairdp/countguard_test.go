package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestCountGuardFlag: --count-guard reaches DPSGD-F and report.json records
// it twice, in the configuration that reruns the job and in DPSGD-F's
// result; the receipt (ε) is that of the default guard, the guard being
// post-processing of the released counts.
func TestCountGuardFlag(t *testing.T) {
	eps := map[string]float64{}
	for _, guard := range []string{"", "smooth"} {
		dir := t.TempDir()
		args := []string{"train", "--algo", "dpsgdf", "--sigma", "1", "--epochs", "1", "--limit", "1200", "--seed", "4", "--quiet", "--out", dir}
		if guard != "" {
			args = append(args, "--count-guard", guard)
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
				Fair struct {
					CountGuard string `json:"count_guard"`
				} `json:"fair"`
			} `json:"config"`
			Privacy struct {
				Epsilon float64 `json:"epsilon"`
			} `json:"privacy"`
			Extra struct {
				CountGuard string `json:"count_guard"`
			} `json:"extra"`
		}
		if err := json.Unmarshal(raw, &rep); err != nil {
			t.Fatal(err)
		}
		ran := guard
		if ran == "" {
			ran = "c0" // dpsgdf.DefaultCountGuard
		}
		if rep.Config.Fair.CountGuard != guard || rep.Extra.CountGuard != ran {
			t.Errorf("--count-guard %q: config %q, result %q; want %q, %q", guard, rep.Config.Fair.CountGuard, rep.Extra.CountGuard, guard, ran)
		}
		eps[guard] = rep.Privacy.Epsilon
	}
	if eps[""] != eps["smooth"] || !(eps[""] > 0) {
		t.Errorf("ε with the default guard %v, with smooth %v: want equal", eps[""], eps["smooth"])
	}
}
