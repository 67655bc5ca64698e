package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func runCLI(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(context.Background(), args, &out, &errb)
	return out.String(), errb.String(), err
}

// TestTrainEvalDescribe drives the binary's commands end to end on the
// embedded Adult data.
func TestTrainEvalDescribe(t *testing.T) {
	dir := t.TempDir()
	out, _, err := runCLI(t, "train", "--algo", "sgd", "--epochs", "1", "--seed", "3", "--quiet", "--out", dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Male", "Female", "DP violation", "privacy: none", "report.json"} {
		if !strings.Contains(out, want) {
			t.Errorf("train output lacks %q:\n%s", want, out)
		}
	}
	out, _, err = runCLI(t, "eval", "--model", filepath.Join(dir, "model.ckpt"), "--seed", "3",
		"--out", filepath.Join(dir, "eval.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "overall") || !strings.Contains(out, "logistic") {
		t.Errorf("eval output:\n%s", out)
	}
	out, _, err = runCLI(t, "data", "describe", "--seed", "1")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "Female") || !strings.Contains(out, "102") {
		t.Errorf("describe output:\n%s", out)
	}
}

func TestCLIErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{}, "missing command"},
		{[]string{"fly"}, "unknown command"},
		{[]string{"train", "--epochs", "0"}, "--epochs"},
		// sgd used to accept a batch larger than the data (--limit caps the
		// training records).
		{[]string{"train", "--algo", "sgd", "--batch", "100000", "--limit", "400", "--quiet"}, "--batch 100000 must be between 1 and the 400 training records"},
		{[]string{"train", "--algo", "dpsgd", "--batch", "100000", "--limit", "400", "--quiet"}, "--batch 100000 must be between 1 and the 400 training records"},
		{[]string{"train", "--epsilon", "-1"}, "positive number or inf"},
		{[]string{"train", "--algo", "magic"}, `--algo "magic" is unknown`},
		{[]string{"train", "--dataset", "nosuch.csv"}, "--schema"},
		{[]string{"train", "stray"}, "unexpected argument"},
		{[]string{"eval"}, "--model"},
		{[]string{"data"}, "describe"},
	} {
		_, _, err := runCLI(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("fairdp %v: error %v, want one mentioning %q", tc.args, err, tc.want)
		}
	}
}

// TestSchemaFiles: --schema alone trains on the
// schema's files and test_files (not on the default built-in data), the
// README's --dataset + --schema honours the declared test file, and a data
// file outside the schema's files says the test_files were not used.
func TestSchemaFiles(t *testing.T) {
	schema := filepath.Join("..", "..", "loaders", "testdata", "adult_sample.schema.json")
	data := filepath.Join("..", "..", "loaders", "testdata", "adult_sample.data")
	other := filepath.Join("..", "..", "loaders", "testdata", "adult_sample.test")
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"schema alone", []string{"--schema", schema}, []string{"on adult-sample/train (186 train / 90 test records)", "the given training files"}},
		{"dataset in schema", []string{"--dataset", data, "--schema", schema}, []string{"(186 train / 90 test records)"}},
		{"other dataset", []string{"--dataset", other, "--schema", schema}, []string{"test_files (adult_sample.test) were not used"}},
	} {
		out, _, err := runCLI(t, append([]string{"train", "--algo", "sgd", "--epochs", "1", "--batch", "16", "--quiet", "--seed", "1"}, tc.args...)...)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: output lacks %q:\n%s", tc.name, w, out)
			}
		}
		if strings.Contains(out, "adult/train") {
			t.Errorf("%s: trained on the built-in Adult data:\n%s", tc.name, out)
		}
	}
}

// TestOneGroup: a sensitive column with one group is
// refused by the algorithms defined over groups and warned about by the
// others, on screen and in report.json.
func TestOneGroup(t *testing.T) {
	dir := t.TempDir()
	csv := "x,s,y\n"
	for i := range 200 {
		csv += strconv.Itoa(i%7) + ",a," + strconv.Itoa(i%2) + "\n"
	}
	data, schema := filepath.Join(dir, "one.csv"), filepath.Join(dir, "one.json")
	os.WriteFile(data, []byte(csv), 0o644)
	os.WriteFile(schema, []byte(`{"format": {"header": true}, "label": {"column": "y", "positive": ["1"]}, "sensitive": {"columns": ["s"]}, "numeric": ["x"]}`), 0o644)
	for _, algo := range []string{"fermi", "dpsgdf", "naive", "steffle"} {
		_, _, err := runCLI(t, "train", "--algo", algo, "--dataset", data, "--schema", schema, "--epochs", "1", "--batch", "16", "--quiet")
		if err == nil || !strings.Contains(err.Error(), "undefined there") {
			t.Errorf("%s with one group: %v", algo, err)
		}
	}
	out, _, err := runCLI(t, "train", "--algo", "sgd", "--dataset", data, "--schema", schema, "--epochs", "1", "--batch", "16",
		"--quiet", "--out", dir)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "report.json"))
	if !strings.Contains(out, "warning: the sensitive attribute has one group") || !strings.Contains(string(raw), `"warnings"`) {
		t.Errorf("no one-group warning:\n%s\n%s", out, raw)
	}
}

// TestFieldErrorsNameFlags: the library names Config fields; the command
// line names the flags that set them.
func TestFieldErrorsNameFlags(t *testing.T) {
	_, _, err := runCLI(t, "train", "--epochs", "0", "--lr-w", "-1", "--count-noise-ratio", "0")
	for _, want := range []string{"--epochs must be ≥ 1 (got 0)", "--lr-w must be ≥ 0 (got -1)", "--count-noise-ratio must be > 0"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
	_, _, err = runCLI(t, "train", "--algo", "dpsgdf", "--epsilon", "2", "--count-guard", "zero")
	if err == nil || !strings.Contains(err.Error(), `--count-guard "zero", want "c0", "floor" or "smooth"`) {
		t.Errorf("unknown count guard: %v", err)
	}
	_, _, err = runCLI(t, "train", "--algo", "naive", "--epsilon", "2", "--naive-guard", "zero")
	if err == nil || !strings.Contains(err.Error(), `--naive-guard "zero", want "one" or "smooth"`) {
		t.Errorf("unknown naive guard: %v", err)
	}
	_, _, err = runCLI(t, "train", "--algo", "steffle", "--federation", "mapping")
	if err == nil || !strings.Contains(err.Error(), "--federation mapping needs --mapping FILE.csv") {
		t.Errorf("mapping without a file: %v", err)
	}
}

// TestModelSpecFile: --model-spec trains a network described in JSON,
// saves it in a checkpoint that eval reads back.
func TestModelSpecFile(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "net.json")
	os.WriteFile(spec, []byte(`{"arch": "tiny-mlp", "layers": [{"kind": "linear", "in": 102, "out": 8}, {"kind": "tanh"}, {"kind": "linear", "in": 8, "out": 1}]}`), 0o644)
	out, _, err := runCLI(t, "train", "--algo", "dpsgd", "--epsilon", "2", "--model-spec", spec, "--epochs", "1", "--limit", "2000",
		"--seed", "5", "--quiet", "--out", dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "dpsgd, tiny-mlp (833 parameters)") {
		t.Errorf("train output:\n%s", out)
	}
	out, _, err = runCLI(t, "eval", "--model", filepath.Join(dir, "model.ckpt"), "--limit", "2000", "--seed", "5")
	if err != nil || !strings.Contains(out, "tiny-mlp") {
		t.Errorf("eval of the custom checkpoint: %v\n%s", err, out)
	}
	// A layer without a bias has no bias parameters: 102·8 + 8 + 1.
	os.WriteFile(spec, []byte(`{"arch": "tiny-mlp", "layers": [{"kind": "linear", "in": 102, "out": 8, "no_bias": true}, {"kind": "tanh"}, {"kind": "linear", "in": 8, "out": 1}]}`), 0o644)
	if out, _, err := runCLI(t, "train", "--algo", "dpsgd", "--epsilon", "2", "--model-spec", spec, "--epochs", "1", "--limit", "300", "--quiet"); err != nil ||
		!strings.Contains(out, "dpsgd, tiny-mlp (825 parameters)") {
		t.Errorf("a spec with a bias-free layer: %v\n%s", err, out)
	}
	os.WriteFile(spec, []byte(`{"layers": [{"kind": "linear", "in": 7, "out": 1}]}`), 0o644)
	if _, _, err := runCLI(t, "train", "--algo", "sgd", "--model-spec", spec, "--epochs", "1", "--limit", "300", "--quiet"); err == nil ||
		!strings.Contains(err.Error(), "takes 7 inputs") {
		t.Errorf("a spec that does not fit the data: %v", err)
	}
	// An empty spec used to say `unknown arch "custom"`.
	for _, body := range []string{"", "{}", `{"layers": []}`, " \n"} {
		os.WriteFile(spec, []byte(body), 0o644)
		_, _, err := runCLI(t, "train", "--algo", "sgd", "--model-spec", spec, "--epochs", "1", "--limit", "300", "--quiet")
		if err == nil || !strings.Contains(err.Error(), "--model-spec "+spec+" describes no layers") || !strings.Contains(err.Error(), `"in": 102`) {
			t.Errorf("spec %q: error %v, want it to say the file describes no layers", body, err)
		}
	}
}

// TestSigmaWithEpsilon, on the command line: --sigma with
// --epsilon is refused for every σ-taking algorithm when σ spends more,
// quoting the ε that --sigma alone then spends (its receipt, derived, not
// hard-coded) and naming the flags that fix it; --sigma alone is uncapped
// (config ε inf), and --sigma within --epsilon runs with ε as its cap.
func TestSigmaWithEpsilon(t *testing.T) {
	for _, algo := range []string{"dpsgd", "dpsgdf", "fermi"} {
		t.Run(algo, func(t *testing.T) {
			base := []string{"train", "--algo", algo, "--limit", "600", "--epochs", "1", "--batch", "64", "--seed", "2", "--quiet"}
			alone := t.TempDir()
			if _, _, err := runCLI(t, append(base, "--sigma", "0.4", "--out", alone)...); err != nil {
				t.Fatal(err)
			}
			rep := reportOf(t, alone)
			if !math.IsInf(rep.Config.Privacy.Epsilon, 1) {
				t.Fatalf("--sigma alone: config ε %v, want inf (no cap)", rep.Config.Privacy.Epsilon)
			}
			spent := *rep.Privacy.Epsilon
			capped := t.TempDir()
			_, _, err := runCLI(t, append(base, "--sigma", "0.4", "--epsilon", "1", "--out", capped)...)
			want := fmt.Sprintf("--sigma 0.4 spends ε = %.4g", spent)
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--epsilon") || strings.Contains(err.Error(), "Privacy.") {
				t.Fatalf("--sigma 0.4 --epsilon 1 (σ alone spends %v): error %v, want %q and the flags to fix it", spent, err, want)
			}
			if _, err := os.Stat(filepath.Join(capped, "report.json")); !os.IsNotExist(err) {
				t.Fatalf("the refused run wrote a report (stat: %v)", err)
			}
			cap := strconv.FormatFloat(spent*1.01, 'g', -1, 64)
			if _, _, err := runCLI(t, append(base, "--sigma", "0.4", "--epsilon", cap, "--out", capped)...); err != nil {
				t.Fatalf("--sigma within --epsilon %s: %v", cap, err)
			}
			if rep := reportOf(t, capped); *rep.Privacy.Epsilon > spent*1.01 {
				t.Fatalf("receipt ε %v above the cap %s", *rep.Privacy.Epsilon, cap)
			}
		})
	}
}

// TestOutRefusesEarlierRun: --out DIR holding an
// earlier run's model and report is refused (the model is left untouched)
// unless --overwrite, and --resume of a checkpointed run into its own
// directory still works.
func TestOutRefusesEarlierRun(t *testing.T) {
	dir := t.TempDir()
	args := []string{"train", "--algo", "sgd", "--limit", "400", "--epochs", "1", "--seed", "1", "--quiet", "--out", dir}
	if _, _, err := runCLI(t, args...); err != nil {
		t.Fatal(err)
	}
	model := filepath.Join(dir, "model.ckpt")
	before, err := os.ReadFile(model)
	if err != nil {
		t.Fatal(err)
	}
	for _, extra := range [][]string{{"--seed", "2"}, {"--config", filepath.Join(dir, "report.json"), "--seed", "2"}} {
		_, _, err = runCLI(t, append(args, extra...)...)
		if err == nil || !strings.Contains(err.Error(), "--out "+dir+" already holds model.ckpt") || !strings.Contains(err.Error(), "--overwrite") {
			t.Fatalf("second run into %s %v: error %v, want a refusal naming --overwrite", dir, extra, err)
		}
	}
	if after, _ := os.ReadFile(model); !bytes.Equal(before, after) {
		t.Fatal("the refused run replaced model.ckpt")
	}
	if _, _, err := runCLI(t, append(args, "--seed", "2", "--overwrite")...); err != nil {
		t.Fatalf("--overwrite: %v", err)
	}
	if after, _ := os.ReadFile(model); bytes.Equal(before, after) {
		t.Fatal("--overwrite left the earlier model in place")
	}
	ck := t.TempDir()
	resume := []string{"train", "--algo", "dpsgd", "--limit", "400", "--epochs", "1", "--seed", "1", "--quiet",
		"--checkpoint", ck, "--resume", "--out", ck}
	for i := range 2 {
		if _, _, err := runCLI(t, resume...); err != nil {
			t.Fatalf("--resume into its own directory, run %d: %v", i+1, err)
		}
	}
}

// TestOtherCommandsRefuseEarlierRun: budget tailoring, post-processing and
// federate write a report (and a model) into --out too, so they refuse a
// directory holding an earlier run's before doing any work, as train does.
func TestOtherCommandsRefuseEarlierRun(t *testing.T) {
	for _, args := range [][]string{
		{"train", "--algo", "tailoring", "--task", "regression", "--rho", "2", "--trials", "1", "--seed", "1", "--quiet"},
		{"train", "--algo", "postproc", "--gamma", "0.05", "--epsilon", "1", "--limit", "400", "--seed", "1", "--quiet"},
		{"federate", "--silos", "127.0.0.1:1", "--insecure", "--dataset", "adult", "--seed", "1"},
	} {
		dir := t.TempDir()
		report := filepath.Join(dir, "report.json")
		if err := os.WriteFile(report, []byte(`{"earlier": true}`), 0o644); err != nil {
			t.Fatal(err)
		}
		_, _, err := runCLI(t, append(args, "--out", dir)...)
		if err == nil || !strings.Contains(err.Error(), "already holds report.json") || !strings.Contains(err.Error(), "--overwrite") {
			t.Errorf("%v into a directory with an earlier report: error %v, want a refusal naming --overwrite", args[:3], err)
		}
		if b, _ := os.ReadFile(report); string(b) != `{"earlier": true}` {
			t.Errorf("%v replaced the earlier report.json", args[:3])
		}
	}
}

// TestBadFlagIsOneLine: a bad flag value is reported
// in one line pointing at -h (the old code printed ~110 lines of usage
// first), and -h still prints the flags.
func TestBadFlagIsOneLine(t *testing.T) {
	for _, args := range [][]string{
		{"train", "--epsilon", "0"},
		{"train", "--no-such-flag"},
		{"train", "--epochs", "many"},
		{"eval", "--limit", "x"},
	} {
		_, stderr, err := runCLI(t, args...)
		if err == nil || !strings.Contains(err.Error(), "-h lists the flags") || strings.Count(err.Error(), "\n") > 0 {
			t.Errorf("%v: error %q, want one line pointing at -h", args, err)
		}
		if stderr != "" {
			t.Errorf("%v: printed %d lines before the error:\n%s", args, strings.Count(stderr, "\n"), stderr)
		}
	}
	_, stderr, err := runCLI(t, "train", "-h")
	if err == nil || !strings.Contains(stderr, "usage: fairdp train") || !strings.Contains(stderr, "-epsilon") {
		t.Errorf("train -h: error %v, printed:\n%s", err, stderr)
	}
}
