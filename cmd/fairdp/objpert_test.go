package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
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
	if a, b := printedTestTable(t, out), printedTestTable(t, evalOut); a != b {
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
		{"--mechanism", "laplace", "--mechanism must be"},
		{"--weight-l2", "-1", "--weight-l2 must be"},
	} {
		_, _, err := runCLI(t, "train", "--algo", "objpert", "--limit", "1000", tc.flag, tc.value)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s: error %v, want one naming %q", tc.flag, tc.value, err, tc.want)
		}
	}
}

// TestObjPertTune: `fairdp train --algo objpert --tune` says how many
// trials ran and what it chose, writes a report whose receipt is the
// search's (replace-one neighbours) and whose config is the chosen
// setting, and a checkpoint `fairdp eval` scores exactly as the run did.
func TestObjPertTune(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--limit", "3000", "--seed", "4"}
	out, stderr, err := runCLI(t, append([]string{"train", "--algo", "objpert", "--tune", "--tune-trials", "3", "--epsilon", "2", "--out", dir}, args...)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	for _, want := range []string{"tune: chose --mechanism ", "trial 1 of ", "done; ε spent: "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	rep := validateReport(t, dir, "objpert")
	priv := rep["privacy"].(map[string]any)
	if eps := priv["epsilon"].(float64); eps > 2 || eps < 1.98 || priv["accountant"] != "rdp" || priv["relation"] != "replace-one" {
		t.Errorf("receipt %v: want the search's ε ≤ 2 by the RDP accountant for replace-one neighbours", priv)
	}
	chosen := rep["extra"].(map[string]any)["tune"].(map[string]any)["chosen"].(map[string]any)
	if o := rep["config"].(map[string]any)["objpert"].(map[string]any); o["l2"] != chosen["l2"] || o["mechanism"] != chosen["mechanism"] {
		t.Errorf("config %v is not the chosen setting %v", o, chosen)
	}
	evalOut, stderr, err := runCLI(t, append([]string{"eval", "--model", filepath.Join(dir, "model.ckpt")}, args...)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if a, b := printedTestTable(t, out), printedTestTable(t, evalOut); a != b {
		t.Errorf("train and eval test tables differ:\n%s\n%s", a, b)
	}
}

// printedTestTable is the test table printed in s, from its header line
// to its error line.
func printedTestTable(t *testing.T, s string) string {
	t.Helper()
	i := strings.Index(s, "\ngroup ")
	j := strings.Index(s[i+1:], "error ")
	if i < 0 || j < 0 {
		t.Fatalf("no test table in\n%s", s)
	}
	return s[i+1 : i+1+j+len("error 0.0000")]
}

// TestObjPertMechanismFlag: --mechanism gaussian with --delta runs the
// Gaussian mechanism at that δ and the report records both, so its
// --config repeats the run; --mechanism pure gives a pure ε receipt.
func TestObjPertMechanismFlag(t *testing.T) {
	for _, tc := range []struct {
		mech  string
		delta float64
	}{{"gaussian", 1e-6}, {"pure", 0}} {
		dir := t.TempDir()
		_, stderr, err := runCLI(t, "train", "--algo", "objpert", "--limit", "1000", "--seed", "2", "--epsilon", "1",
			"--mechanism", tc.mech, "--delta", fmt.Sprint(tc.delta), "--out", dir)
		if err != nil {
			t.Fatalf("%s: %v\n%s", tc.mech, err, stderr)
		}
		rep := validateReport(t, dir, "objpert")
		priv := rep["privacy"].(map[string]any)
		extra := rep["extra"].(map[string]any)["objpert"].(map[string]any)
		cfg := rep["config"].(map[string]any)
		if priv["delta"].(float64) != tc.delta || extra["mechanism"] != tc.mech ||
			cfg["objpert"].(map[string]any)["mechanism"] != tc.mech || cfg["privacy"].(map[string]any)["delta"].(float64) != tc.delta {
			t.Errorf("%s: receipt δ %v, extra %v, config %v; want δ %v", tc.mech, priv["delta"], extra, cfg["objpert"], tc.delta)
		}
		again := t.TempDir()
		if _, stderr, err := runCLI(t, "train", "--config", filepath.Join(dir, "report.json"), "--out", again); err != nil {
			t.Fatalf("%s rerun: %v\n%s", tc.mech, err, stderr)
		}
		rerun := validateReport(t, again, "objpert")
		a, _ := json.Marshal(rep["test"])
		b, _ := json.Marshal(rerun["test"])
		if string(a) != string(b) {
			t.Errorf("%s: --config rerun scored %s, the run %s", tc.mech, b, a)
		}
	}
}

// TestObjPertLeastSquaresEval: objpert least squares on a regression
// schema (`--label-range`) writes model.ckpt, and `fairdp eval --model`
// scores it on the same held-out records with the MSPE the run reported,
// overall and per group.
func TestObjPertLeastSquaresEval(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("x0,x1,s,y\n")
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 2000 {
		x0, x1 := r.NormFloat64(), r.NormFloat64()
		fmt.Fprintf(&b, "%g,%g,%d,%g\n", x0, x1, i%2, 1+2*x0-x1+0.5*r.NormFloat64())
	}
	csv, schema := filepath.Join(dir, "reg.csv"), filepath.Join(dir, "reg.schema.json")
	if err := os.WriteFile(csv, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(schema, []byte(`{"name": "reg", "files": ["reg.csv"], "format": {"header": true}, "target": "y",
	  "sensitive": {"columns": ["s"]}, "numeric": ["x0", "x1"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	if _, stderr, err := runCLI(t, "train", "--algo", "objpert", "--dataset", csv, "--schema", schema, "--label-range", "-6,8",
		"--epsilon", "2", "--seed", "3", "--out", out); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	// A regression's report keeps the results contract too, objpert's and
	// DP-SGD's (squared loss) alike.
	validateReport(t, out, "objpert")
	sgdOut := filepath.Join(dir, "dpsgd")
	if _, stderr, err := runCLI(t, "train", "--algo", "dpsgd", "--dataset", csv, "--schema", schema, "--epochs", "1",
		"--epsilon", "2", "--seed", "3", "--quiet", "--out", sgdOut); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	validateReport(t, sgdOut, "dpsgd")
	evalJSON := filepath.Join(dir, "eval.json")
	if _, stderr, err := runCLI(t, "eval", "--model", filepath.Join(out, "model.ckpt"), "--out", evalJSON); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var train, eval struct {
		Test struct {
			MSPE   *float64 `json:"mspe"`
			Groups []struct {
				N    int      `json:"n"`
				MSPE *float64 `json:"mspe"`
			} `json:"groups"`
		} `json:"test"`
	}
	for _, f := range []struct {
		path string
		into any
	}{{filepath.Join(out, "report.json"), &train}, {evalJSON, &eval}} {
		raw, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, f.into); err != nil {
			t.Fatalf("%s: %v", f.path, err)
		}
	}
	if train.Test.MSPE == nil || eval.Test.MSPE == nil || *train.Test.MSPE != *eval.Test.MSPE ||
		len(train.Test.Groups) != 2 || len(eval.Test.Groups) != 2 {
		t.Fatalf("train test %+v, eval test %+v", train.Test, eval.Test)
	}
	for i, g := range eval.Test.Groups {
		if w := train.Test.Groups[i]; g.N != w.N || g.MSPE == nil || w.MSPE == nil || *g.MSPE != *w.MSPE {
			t.Errorf("group %d: eval n %d MSPE %v, train n %d MSPE %v", i, g.N, g.MSPE, w.N, w.MSPE)
		}
	}
	if m := *eval.Test.MSPE; !(m < 1.5) {
		t.Errorf("test MSPE %v at ε = 2 (noise variance 0.25, target variance ≈ 5.25)", m)
	}
}
