package main

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestTuneChoseRerunsTrial: every search's "tune: chose" line prints
// short decimals (no float of 15 or more digits, as the unrounded grid's
// --lr 0.039999999999999994 and --clip 0.3333333333333333 were), and
// its flags, parsed back, are exactly the chosen trial's settings as the
// tuned report's config (what --config reruns) and extra.tune.chosen
// state them: the search builds short values before any trial runs
// (trainer.ShortDecimal), it does not merely print them short.
func TestTuneChoseRerunsTrial(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		// want maps a printed flag to its path in report.json.
		want map[string][]string
	}{
		{"dpsgd", []string{"--algo", "dpsgd", "--epsilon", "1", "--seed", "1"}, map[string][]string{
			"lr": {"config", "lr"}, "epochs": {"config", "epochs"}, "batch": {"config", "batch"}, "clip": {"config", "privacy", "clip"}}},
		{"objpert", []string{"--algo", "objpert", "--epsilon", "1", "--seed", "1"}, map[string][]string{
			"l2": {"config", "objpert", "l2"}, "weight-l2": {"extra", "tune", "chosen", "weight_l2"}}},
		{"postproc", []string{"--algo", "postproc", "--base", "dpsgd", "--epsilon", "2", "--seed", "5", "--tune-trials", "3"}, map[string][]string{
			"base-epsilon": {"config", "jagielski", "base_epsilon"}, "bins": {"config", "jagielski", "bins"},
			"gamma-share": {"extra", "tune", "chosen", "gamma_share"}}},
		{"tailoring", []string{"--algo", "tailoring", "--task", "regression", "--seed", "1"}, map[string][]string{
			"lr": {"config", "tailoring", "lr"}, "steps": {"config", "tailoring", "steps"}, "tau-share": {"config", "tailoring", "tau_share"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{"train", "--tune", "--limit", "2000", "--quiet", "--out", dir}, tc.args...)
			if tc.name == "tailoring" {
				args = append([]string{"train", "--tune", "--quiet", "--out", dir}, tc.args...)
			}
			stdout, stderr, err := runCLI(t, args...)
			if err != nil {
				t.Fatalf("%v\n%s", err, stderr)
			}
			line := ""
			for _, l := range strings.Split(stdout, "\n") {
				if strings.HasPrefix(l, "tune: chose ") {
					line = l
				}
			}
			if line == "" {
				t.Fatalf("no tune: chose line in\n%s", stdout)
			}
			if long := regexp.MustCompile(`\d[\d.]{14,}`).FindString(line); long != "" {
				t.Errorf("the chosen line prints %s:\n%s", long, line)
			}
			var rep map[string]any
			readJSON(t, filepath.Join(dir, "report.json"), &rep)
			flags := map[string]string{}
			for _, m := range regexp.MustCompile(`--([a-z0-9-]+) (\S+)`).FindAllStringSubmatch(line, -1) {
				flags[m[1]] = m[2]
			}
			for flag, path := range tc.want {
				s, ok := flags[flag]
				if !ok {
					t.Errorf("--%s not printed: %s", flag, line)
					continue
				}
				got, err := strconv.ParseFloat(s, 64)
				if err != nil {
					t.Errorf("--%s %s: %v", flag, s, err)
					continue
				}
				var v any = rep
				for _, k := range path {
					m, _ := v.(map[string]any)
					v = m[k]
				}
				if w, ok := v.(float64); !ok || got != w {
					t.Errorf("--%s %s parses to %v; the chosen trial ran with %s = %v", flag, s, got, strings.Join(path, "."), v)
				}
			}
		})
	}
}
