package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestEvalRandomisedModel: `fairdp eval` reads the model.json that
// post-processing (with the paper's non-private base and with a private
// DP-SGD base) and the oracle learner write, given the file or the run
// directory, and scores the model's own held-out records with the metrics
// expected over its coins: the training report's expected_test numbers,
// and the training report's receipt unchanged. Before, eval refused the
// file as "not a fairdp checkpoint".
func TestEvalRandomisedModel(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"postproc", []string{"--algo", "postproc", "--epsilon", "1"}},
		{"postproc-dpsgd", []string{"--algo", "postproc", "--base", "dpsgd", "--epsilon", "2"}},
		{"oracle", []string{"--algo", "oracle", "--epsilon", "2", "--rounds", "10"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{"train", "--limit", "2000", "--seed", "1", "--quiet", "--out", dir}, tc.args...)
			if _, stderr, err := runCLI(t, args...); err != nil {
				t.Fatalf("%v\n%s", err, stderr)
			}
			var train struct {
				Privacy json.RawMessage
				Extra   struct {
					Jagielski struct {
						ExpectedTest struct {
							Error       float64 `json:"error"`
							DPViolation float64 `json:"dp_violation"`
							EOViolation float64 `json:"eo_violation"`
						} `json:"expected_test"`
					}
				}
			}
			readJSON(t, filepath.Join(dir, "report.json"), &train)
			want := train.Extra.Jagielski.ExpectedTest
			for _, model := range []string{filepath.Join(dir, "model.json"), dir} {
				out := filepath.Join(t.TempDir(), "eval.json")
				stdout, stderr, err := runCLI(t, "eval", "--model", model, "--out", out)
				if err != nil {
					t.Fatalf("eval --model %s: %v\n%s", model, err, stderr)
				}
				if !strings.Contains(stdout, "expected over the randomised classifier's coins") || !strings.Contains(stdout, "held-out split") {
					t.Errorf("eval does not say it scored the held-out split expected over the coins:\n%s", stdout)
				}
				var ev struct {
					Algorithm string
					Privacy   json.RawMessage
					Test      struct {
						Error       float64 `json:"error"`
						DPViolation float64 `json:"dp_violation"`
						EOViolation float64 `json:"eo_violation"`
					}
				}
				readJSON(t, out, &ev)
				if ev.Algorithm != "eval" {
					t.Errorf("eval report's algorithm %q", ev.Algorithm)
				}
				for _, c := range [][3]any{{"error", ev.Test.Error, want.Error}, {"DP violation", ev.Test.DPViolation, want.DPViolation},
					{"EO violation", ev.Test.EOViolation, want.EOViolation}} {
					if got, w := c[1].(float64), c[2].(float64); math.Abs(got-w) > 1e-12 {
						t.Errorf("eval's test %s %v, the training report's expected %v", c[0], got, w)
					}
				}
				var a, b any
				json.Unmarshal(train.Privacy, &a)
				json.Unmarshal(ev.Privacy, &b)
				if a == nil || !reflect.DeepEqual(a, b) {
					t.Errorf("eval's receipt differs from the model's:\nmodel %s\neval  %s", train.Privacy, ev.Privacy)
				}
			}
		})
	}
}

// TestEvalForeignJSON: a JSON file that is not a model eval reads is
// refused naming the file and the models eval reads.
func TestEvalForeignJSON(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"foreign.json": `{"weights": [1, 2]}`,
		"broken.json":  `{"kind": "postproc", `,
		"kind.json":    `{"kind": "svm"}`,
		"extra.json":   `{"kind": "oracle", "groups": ["a", "b"], "mixture": {"classifiers": []}, "surprise": 1}`,
		"nosplit.json": `{"kind": "postproc", "groups": ["a", "b"], "bins": [0.5], "postprocessor": {"bins": 2, "groups": 2, "p": [0, 0, 1, 1]}}`,
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, _, err := runCLI(t, "eval", "--model", path)
		if err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error %v, want one naming the file", name, err)
			continue
		}
		if name != "nosplit.json" && name != "extra.json" && (!strings.Contains(err.Error(), "model.ckpt") || !strings.Contains(err.Error(), "postproc")) {
			t.Errorf("%s: error %v does not say what eval reads", name, err)
		}
	}
}

// readJSON decodes the JSON file path into v.
func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(raw, v)
	}
	if err != nil {
		t.Fatal(err)
	}
}
