package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/fairdp/fairdp/trainer"
)

var (
	reportSchemaOnce sync.Once
	reportSchema     *jsonschema.Schema
	reportSchemaErr  error
)

// validateReport checks dir/report.json against the committed schema
// (trainer.ReportSchema) and that it records the algorithm run; it returns
// the report as generic JSON.
func validateReport(t *testing.T, dir, algo string) map[string]any {
	t.Helper()
	reportSchemaOnce.Do(func() {
		c := jsonschema.NewCompiler()
		c.Draft = jsonschema.Draft2020
		if reportSchemaErr = c.AddResource("report.schema.json", bytes.NewReader(trainer.ReportSchema)); reportSchemaErr == nil {
			reportSchema, reportSchemaErr = c.Compile("report.schema.json")
		}
	})
	if reportSchemaErr != nil {
		t.Fatalf("report schema: %v", reportSchemaErr)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if err := reportSchema.Validate(v); err != nil {
		t.Fatalf("%s: report.json does not validate against trainer/report.schema.json: %#v", algo, err)
	}
	cfg := v["config"].(map[string]any)
	if v["algorithm"] != algo || cfg["algorithm"] != algo {
		t.Errorf("report of %s: algorithm %v, config.algorithm %v", algo, v["algorithm"], cfg["algorithm"])
	}
	return v
}

// TestReportSchemaRejects: the schema can fail: CamelCase config keys (the
// old form), a config naming another algorithm, a missing receipt and a
// tailoring report without its results are refused.
func TestReportSchemaRejects(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := runCLI(t, "train", "--algo", "postproc", "--epsilon", "1", "--limit", "2000", "--seed", "1", "--quiet", "--out", dir); err != nil {
		t.Fatal(err)
	}
	good := validateReport(t, dir, "postproc")
	for name, mutate := range map[string]func(m map[string]any){
		"CamelCase config key": func(m map[string]any) { m["config"].(map[string]any)["TrainFrac"] = 0.75 },
		"other algorithm":      func(m map[string]any) { m["config"].(map[string]any)["algorithm"] = "dpsgd" },
		"no receipt":           func(m map[string]any) { delete(m, "privacy") },
		"no extra":             func(m map[string]any) { delete(m, "extra") },
		"ε zero":               func(m map[string]any) { m["config"].(map[string]any)["privacy"].(map[string]any)["epsilon"] = 0 },
		"unknown top key":      func(m map[string]any) { m["Algo"] = "postproc" },
	} {
		raw, _ := json.Marshal(good)
		var m map[string]any
		json.Unmarshal(raw, &m)
		mutate(m)
		if err := reportSchema.Validate(m); err == nil {
			t.Errorf("%s: the schema accepts it", name)
		}
	}
}

// contractRuns are tiny runs of every algorithm of `fairdp train`.
var contractRuns = []struct {
	algo string
	args []string
}{
	{"sgd", []string{"--epochs", "1", "--limit", "1200", "--seed", "9"}},
	{"dpsgd", []string{"--epochs", "1", "--limit", "1200", "--seed", "9", "--epsilon", "3"}},
	{"dpsgdf", []string{"--epochs", "1", "--limit", "1200", "--seed", "9", "--epsilon", "3"}},
	{"naive", []string{"--epochs", "1", "--limit", "1200", "--seed", "9", "--epsilon", "3"}},
	{"fermi", []string{"--epochs", "1", "--limit", "1200", "--seed", "9", "--epsilon", "3", "--lambda", "2"}},
	{"steffle", []string{"--epochs", "1", "--limit", "1200", "--seed", "9", "--epsilon", "3", "--silos", "2"}},
	{"postproc", []string{"--limit", "3000", "--seed", "9", "--epsilon", "3", "--gamma", "0.05"}},
	{"postproc", []string{"--limit", "3000", "--seed", "9", "--epsilon", "3", "--gamma", "0.05", "--base", "objpert", "--base-epsilon", "1"}},
	{"postproc", []string{"--limit", "3000", "--seed", "9", "--epsilon", "3", "--gamma", "0", "--base", "dpsgd", "--fairness", "dp"}},
	{"oracle", []string{"--limit", "3000", "--seed", "9", "--epsilon", "3", "--rounds", "5", "--delta", "1e-7"}},
	{"oracle", []string{"--limit", "3000", "--seed", "9", "--epsilon", "3", "--rounds", "5", "--delta", "1e-7", "--fallback", "cost"}},
	{"tailoring", []string{"--seed", "9", "--rho", "2", "--trials", "2", "--groups", "400,50,100", "--slopes", "0,-4,4", "--steps", "20"}},
	{"dpnose", []string{"--seed", "9", "--rho", "1.5", "--trials", "2", "--groups", "400,50,100", "--slopes", "0,-4,4", "--steps", "20"}},
	{"objpert", []string{"--limit", "3000", "--seed", "9", "--epsilon", "3"}},
}

// TestReportContract runs every algorithm on tiny data: each report.json
// validates against the schema, records the algorithm run and the privacy
// parameters used, and fed back with --config repeats the run (same
// config, test results and receipt with the same seed).
func TestReportContract(t *testing.T) {
	for _, tc := range contractRuns {
		t.Run(tc.algo, func(t *testing.T) {
			first, second := t.TempDir(), t.TempDir()
			if _, stderr, err := runCLI(t, append([]string{"train", "--algo", tc.algo, "--quiet", "--out", first}, tc.args...)...); err != nil {
				t.Fatalf("%v\n%s", err, stderr)
			}
			rep := validateReport(t, first, tc.algo)
			cfg := rep["config"].(map[string]any)
			priv, receipt := cfg["privacy"].(map[string]any), rep["privacy"].(map[string]any)
			switch tc.algo {
			case "sgd":
				if receipt["epsilon"] != nil {
					t.Errorf("sgd receipt %v", receipt)
				}
			case "tailoring", "dpnose":
				tl := cfg["tailoring"].(map[string]any)
				// The report summarises every trial: the receipt charges trials·ρ.
				rho := tl["rho"].([]any)[0].(float64) * tl["trials"].(float64)
				if math.Abs(rho-receipt["rho"].(float64)) > 1e-9 || priv["epsilon"] != receipt["epsilon"] || priv["delta"] != receipt["delta"] {
					t.Errorf("config privacy %v, ρ %v; receipt %v", priv, rho, receipt)
				}
			default:
				// The ε asked for is recorded, and the receipt spends at most it.
				if priv["epsilon"] != 3.0 || receipt["epsilon"] == nil || receipt["epsilon"].(float64) > 3+1e-9 {
					t.Errorf("config privacy %v, receipt ε %v", priv, receipt["epsilon"])
				}
				algo := tc.algo
				extras, _ := rep["extra"].(map[string]any)
				if ex, _ := extras["objpert"].(map[string]any); ex["mechanism"] == "gaussian" {
					// objpert's default chose the Gaussian mechanism ((ε, δ)-DP,
					// δ = 1/n²) on this wide table.
					algo = "gaussian objpert"
				}
				if pc, _ := cfg["jagielski"].(map[string]any); pc["base"] == "dpsgd" {
					// DP-SGD's (ε, δ) composed with the pure cell counts: δ is
					// DP-SGD's default 1/n², recorded as used.
					algo = "postproc on dpsgd"
				} else if pc["base"] == "objpert" && receipt["delta"] != 0.0 {
					// The objpert base is `--algo objpert`'s default, which
					// chose the Gaussian mechanism on this wide table: its δ
					// (1/n²) composed with the pure cell counts.
					algo = "postproc on gaussian objpert"
				}
				switch algo {
				case "postproc", "objpert":
					if priv["delta"] != 0.0 || receipt["delta"] != 0.0 {
						t.Errorf("post-processing and objective perturbation are pure ε-DP: config δ %v, receipt δ %v", priv["delta"], receipt["delta"])
					}
				case "oracle":
					if priv["delta"] != 1e-7 || receipt["conversion"] == "basic" && receipt["delta"] != 0.0 {
						t.Errorf("oracle: config δ %v, receipt %v", priv["delta"], receipt)
					}
				case "steffle":
					// δ 0 in config is each silo's default 1/ñ², which the
					// receipt states.
					n := rep["train_records"].(float64) / cfg["federation"].(map[string]any)["silos"].(float64)
					if priv["delta"] != 0.0 || math.Abs(receipt["delta"].(float64)-1/(n*n)) > 1e-15 {
						t.Errorf("config δ %v, receipt δ %v, want 1/ñ² = %v", priv["delta"], receipt["delta"], 1/(n*n))
					}
				default:
					// The default δ = 1/n² is recorded as used.
					n := rep["train_records"].(float64)
					if priv["delta"] != receipt["delta"] || math.Abs(receipt["delta"].(float64)-1/(n*n)) > 1e-15 {
						t.Errorf("config δ %v, receipt δ %v, want 1/n² = %v", priv["delta"], receipt["delta"], 1/(n*n))
					}
				}
			}
			if _, stderr, err := runCLI(t, "train", "--config", filepath.Join(first, "report.json"), "--quiet", "--out", second); err != nil {
				t.Fatalf("rerun: %v\n%s", err, stderr)
			}
			again := validateReport(t, second, tc.algo)
			for _, key := range []string{"config", "test", "privacy", "extra"} {
				a, b := rep[key], again[key]
				if key == "config" {
					delete(a.(map[string]any), "out")
					delete(b.(map[string]any), "out")
				}
				if key == "extra" {
					a, b = stripTimes(a), stripTimes(b)
				}
				if !reflect.DeepEqual(a, b) {
					ja, _ := json.Marshal(a)
					jb, _ := json.Marshal(b)
					t.Errorf("rerun from --config: %s differs:\n%s\n%s", key, ja, jb)
				}
			}
		})
	}
}

// stripTimes drops wall-clock fields ("seconds") from generic JSON.
func stripTimes(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if !strings.Contains(k, "seconds") {
				out[k] = stripTimes(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = stripTimes(e)
		}
		return out
	}
	return v
}

// TestConfigRefusesOldReports: a report.json written before the config
// keys were snake_case (Go field names) is refused
// with the key at fault, rather than read through a second set of keys.
func TestConfigRefusesOldReports(t *testing.T) {
	old := filepath.Join(t.TempDir(), "report.json")
	// The config block of a dpsgd report as fairdp wrote it before.
	legacy := `{"algorithm": "dpsgd", "config": {"Algo": "dpsgd", "Dataset": "adult", "Schema": "", "DataDir": "", "Model": "",
	  "Hidden": null, "DType": "float32", "Epochs": 1, "Batch": 256, "LR": 0.01, "Optimizer": "adam", "Momentum": 0,
	  "TrainFrac": 0.75, "ImageSize": 64, "Limit": 1200, "Seed": 9, "Out": "x", "Quiet": true, "Device": "cpu",
	  "Baseline": false, "Tau": 0.05, "privacy": {"Epsilon": 3, "Delta": 0, "Clip": 1, "Sigma": 0, "Sampling": "poisson"},
	  "fair": {"Lambda": 1, "Fairness": "dp", "Scope": "all", "LRW": 0.01, "Radius": 5, "PublicGroupSizes": false,
	  "Calibration": "accountant", "WeightDecay": 0, "CountNoiseRatio": 10}, "Preset": ""}}`
	if err := os.WriteFile(old, []byte(legacy), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := trainer.ReadConfig(old); err == nil || !strings.Contains(err.Error(), "unknown field") {
		t.Errorf("an old report's config: %v, want an unknown key refused", err)
	}
}

// TestEvalReportContract: `fairdp eval --out` writes the same contract,
// with the checkpoint's receipt.
func TestEvalReportContract(t *testing.T) {
	dir, evalDir := t.TempDir(), t.TempDir()
	if _, _, err := runCLI(t, "train", "--algo", "dpsgd", "--epochs", "1", "--limit", "1200", "--seed", "9", "--epsilon", "3",
		"--quiet", "--out", dir); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runCLI(t, "eval", "--model", filepath.Join(dir, "model.ckpt"), "--limit", "1200", "--seed", "9",
		"--out", filepath.Join(evalDir, "report.json")); err != nil {
		t.Fatal(err)
	}
	trained, ev := validateReport(t, dir, "dpsgd"), validateReport(t, evalDir, "eval")
	if !reflect.DeepEqual(trained["test"], ev["test"]) {
		t.Errorf("eval on the training run's split differs from its report:\n%v\n%v", trained["test"], ev["test"])
	}
	if a, b := trained["privacy"].(map[string]any), ev["privacy"].(map[string]any); a["epsilon"] != b["epsilon"] || a["delta"] != b["delta"] {
		t.Errorf("eval receipt %v, the checkpoint's %v", b, a)
	}
}

// TestRunConfig: trainer.RunConfig runs any algorithm or pipeline from a
// report's config alone (the library's one entry point) and repeats the
// command's result.
func TestRunConfig(t *testing.T) {
	for _, tc := range contractRuns {
		if tc.algo != "sgd" && tc.algo != "postproc" && tc.algo != "tailoring" {
			continue
		}
		dir := t.TempDir()
		if _, _, err := runCLI(t, append([]string{"train", "--algo", tc.algo, "--quiet", "--out", dir}, tc.args...)...); err != nil {
			t.Fatal(err)
		}
		cfg, err := trainer.ReadConfig(filepath.Join(dir, "report.json"))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Out = ""
		rep, err := trainer.RunConfig(context.Background(), cfg, io.Discard)
		if err != nil {
			t.Fatalf("%s: %v", tc.algo, err)
		}
		got, _ := json.Marshal(rep.Test)
		var want struct{ Test json.RawMessage }
		raw, _ := os.ReadFile(filepath.Join(dir, "report.json"))
		json.Unmarshal(raw, &want)
		var a, b any
		json.Unmarshal(got, &a)
		json.Unmarshal(want.Test, &b)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: RunConfig's test results differ from the command's:\n%s\n%s", tc.algo, got, want.Test)
		}
	}
	if _, err := trainer.RunConfig(context.Background(), trainer.Config{Algo: "nope"}, io.Discard); err == nil ||
		!strings.Contains(err.Error(), "tailoring") {
		t.Errorf("unknown algorithm: %v", err)
	}
}
