package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOldReportsRerun: report.json files written when the settings of
// budget tailoring ("tailoring"), post-processing ("jagielski") and
// objective perturbation ("objpert") were fields of trainer.Config rerun
// with `fairdp train --config` to the same configuration, numbers and
// receipt. The fixtures in testdata were written by that earlier build (a
// seeded tailoring run of 2 trials on small synthetic data, seeded
// post-processing and objective-perturbation runs on 2000 adult records).
// report_objpert_profile_v2.json is a default objpert run written when the
// default calibration was "profile" (the pure mechanism with Chaudhuri et
// al.'s ε' = ε − 2ε_J), on the 375 training records of a 5-feature table
// (testdata/objpert_narrow.csv, bench/tabular_synthetic.py 500 5 0.5 1):
// it reruns with that ε', not the "tight" default's.
// report_postproc_dpsgd_base_v3.json is `fairdp train --algo postproc --base
// dpsgd --fairness dp --epsilon 2 --limit 8000 --seed 5` written when a
// private base's γ was fixed (no gamma_share): 8,000 records at the cells'
// ε = 1 now take the data-aware γ by default, and the report still reruns
// with the fixed γ it ran with; likewise with the paper's Laplace(2/ε₂) on
// the cells (no add_remove_cells) and its raw cells (no monotone).
func TestOldReportsRerun(t *testing.T) {
	for _, name := range []string{"report_tailoring_v1.json", "report_postproc_v1.json", "report_objpert_v1.json", "report_objpert_profile_v2.json",
		"report_postproc_dpsgd_base_v3.json"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join("testdata", name)
			dir := t.TempDir()
			var out, errb bytes.Buffer
			if err := flagError(runTrain(context.Background(), []string{"--config", path, "--out", dir, "--quiet"}, &out, &errb)); err != nil {
				t.Fatalf("%v\n%s%s", err, out.String(), errb.String())
			}
			// Read as generic JSON: maps are written back with sorted keys,
			// so the two reports compare by content.
			reports := make([]map[string]any, 2)
			for i, p := range []string{path, filepath.Join(dir, "report.json")} {
				raw, err := os.ReadFile(p)
				if err == nil {
					err = json.Unmarshal(raw, &reports[i])
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			want, got := reports[0], reports[1]
			for _, key := range []string{"algorithm", "dataset", "model", "train_records", "test", "privacy", "config", "extra"} {
				a, _ := json.Marshal(want[key])
				// One change is intended: post-processing's not_covered says
				// what its model.json holds (postprocNotCoveredNow).
				if key == "privacy" && strings.HasPrefix(name, "report_postproc_") {
					a = postprocNotCoveredNow(t, a)
				}
				// And budget tailoring's receipts (the run's and each fit's in
				// extra) say that its full-data releases are not subsampled:
				// sampling "none", where the receipt builder's default said
				// "poisson".
				if (key == "privacy" || key == "extra") && name == "report_tailoring_v1.json" {
					if !bytes.Contains(a, []byte(`"sampling":"poisson"`)) {
						t.Fatalf("the old tailoring %s says no sampling \"poisson\": %s", key, a)
					}
					a = bytes.ReplaceAll(a, []byte(`"sampling":"poisson"`), []byte(`"sampling":"none"`))
				}
				g := got[key]
				if key == "extra" {
					// Fields added to extra since (e.g. the expected DP violation)
					// are new outputs, not changed ones.
					g = onlyKeysOf(g, want[key])
				}
				b, _ := json.Marshal(g)
				if !bytes.Equal(a, b) {
					t.Errorf("%s differs:\nold %s\nnew %s", key, a, b)
				}
			}
		})
	}
}

// postprocNotCoveredNow is an old post-processing receipt (JSON) with its
// not_covered sentences as post-processing states them now: v1 said that
// a model.ckpt it never wrote holds the split's key and the preprocessing;
// v3 said that model.json holds neither; model.json now keeps both (so that
// eval scores the model's own held-out records) and the receipt says so.
func postprocNotCoveredNow(t *testing.T, receipt []byte) []byte {
	t.Helper()
	changed := false
	for _, r := range [][2]string{
		{"metrics of the test split (report.json test, metrics.jsonl test_*, the printed test table) are exact statistics of the held-out records: " +
			"the guarantee covers the training records only; model.ckpt also holds the split's key and a SHA-256 of the held-out records " +
			"(so eval scores only them), which tell whoever holds the data file which records were held out and which trained the model",
			"metrics of the test split (report.json test and the printed test table) are exact statistics of the held-out records: " +
				"the guarantee covers the training records only"},
		{"without noise and is stored in model.ckpt", "without noise and the model in model.json scores features scaled by it"},
		{`the guarantee covers the training records only"`, "the guarantee covers the training records only; model.json also holds the split's key " +
			"and a SHA-256 of the held-out records (so eval scores only them), which tell whoever holds the data file which records were " +
			`held out and which trained the model"`},
		{"without noise and the model in model.json scores features scaled by it", "without noise and is stored in model.json, whose model scores features scaled by it"},
		// A private base's composed note names the cells' noise (Laplace(2/ε)
		// under the old configuration, which had no add_remove_cells).
		{"(substituting a record moves one count between two cells; adding or removing one moves one count)",
			"(substituting a record moves one count between two cells: Laplace(2/ε) on each count)"},
	} {
		changed = changed || bytes.Contains(receipt, []byte(r[0]))
		receipt = bytes.ReplaceAll(receipt, []byte(r[0]), []byte(r[1]))
	}
	if !changed {
		t.Fatalf("the old post-processing receipt holds none of the sentences that changed: %s", receipt)
	}
	return receipt
}

// onlyKeysOf is v without the object keys that old lacks, at every depth.
func onlyKeysOf(v, old any) any {
	switch o := old.(type) {
	case map[string]any:
		m, ok := v.(map[string]any)
		if !ok {
			return v
		}
		out := map[string]any{}
		for k, ov := range o {
			if nv, ok := m[k]; ok {
				out[k] = onlyKeysOf(nv, ov)
			}
		}
		return out
	case []any:
		a, ok := v.([]any)
		if !ok || len(a) != len(o) {
			return v
		}
		out := make([]any, len(a))
		for i := range a {
			out[i] = onlyKeysOf(a[i], o[i])
		}
		return out
	}
	return v
}
