package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/loaders"
	"github.com/fairdp/fairdp/models"
	"github.com/fairdp/fairdp/trainer"
)

// TestEvalUsesStoredPreprocessing: eval encodes data
// with the checkpoint's fitted preprocessing, so a schema listing the same
// columns in another order gives the same result as the original, and a
// schema whose columns differ is refused naming the difference.
func TestEvalUsesStoredPreprocessing(t *testing.T) {
	dir := t.TempDir()
	data, schema := filepath.Join("..", "..", "loaders", "testdata", "adult_sample.data"), filepath.Join("..", "..", "loaders", "testdata", "adult_sample.schema.json")
	if _, stderr, err := runCLI(t, "train", "--algo", "sgd", "--batch", "32", "--dataset", data, "--schema", schema, "--batch", "16", "--epochs", "3",
		"--seed", "3", "--quiet", "--out", dir); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	raw, err := os.ReadFile(schema)
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	write := func(name string, change func(map[string]any)) string {
		c := map[string]any{}
		for k, v := range s {
			c[k] = v
		}
		delete(c, "files") // every variant reads the same file with the same random split
		delete(c, "test_files")
		change(c)
		b, _ := json.Marshal(c)
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	reversed := write("reversed.json", func(c map[string]any) {
		num := slices.Clone(c["numeric"].([]any))
		slices.Reverse(num)
		c["numeric"] = num
	})
	dropped := write("dropped.json", func(c map[string]any) {
		num := slices.Clone(c["numeric"].([]any))
		c["numeric"] = num[1:]
		c["drop"] = []any{num[0]}
	})
	eval := func(schema string) (string, error) {
		out := filepath.Join(dir, "eval-"+filepath.Base(schema))
		_, stderr, err := runCLI(t, "eval", "--model", filepath.Join(dir, "model.ckpt"), "--dataset", data, "--schema", schema,
			"--seed", "3", "--out", out)
		if err != nil {
			return stderr, err
		}
		b, err := os.ReadFile(out)
		var r struct{ Test struct{ Error float64 } }
		json.Unmarshal(b, &r)
		return strings.TrimSpace(string(b)), err
	}
	orig, err := eval(write("orig.json", func(map[string]any) {}))
	if err != nil {
		t.Fatal(err)
	}
	rev, err := eval(reversed)
	if err != nil {
		t.Fatal(err)
	}
	errorOf := func(js string) float64 {
		var r struct{ Test struct{ Error float64 } }
		if err := json.Unmarshal([]byte(js), &r); err != nil {
			t.Fatal(err)
		}
		return r.Test.Error
	}
	if errorOf(orig) != errorOf(rev) {
		t.Errorf("the same columns in another order changed the test error: %v vs %v", errorOf(orig), errorOf(rev))
	}
	if _, err := eval(dropped); err == nil || !strings.Contains(err.Error(), `numeric columns "age" are in the checkpoint but not in the schema given`) {
		t.Errorf("a schema without a fitted column: %v", err)
	}
	// With no --schema, a CSV is read with the checkpoint's own schema.
	if _, stderr, err := runCLI(t, "eval", "--model", filepath.Join(dir, "model.ckpt"), "--dataset", data, "--seed", "3"); err != nil {
		t.Errorf("eval without --schema: %v\n%s", err, stderr)
	}
}

// reportTest reads the test metrics and the test record count of a
// report.json.
func reportTest(t *testing.T, path string) (test any, n float64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Test struct {
			Overall struct{ N float64 }
		}
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	json.Unmarshal(b, &r)
	return raw["test"], r.Test.Overall.N
}

// TestEvalScoresTheModelsOwnHeldOutSplit: eval
// on the training data scores exactly the records the model did not train
// on, whatever --seed it is given and also for an unseeded run, reads the
// model's own data when no --dataset is given (not the built-in Adult), and
// scores another file whole, saying so. On the old code eval re-split with
// its own seed, so its "test" metrics differed from the training report's.
func TestEvalScoresTheModelsOwnHeldOutSplit(t *testing.T) {
	dir := t.TempDir()
	schema := sampleSchema(t, dir, "sample.json", nil)
	otherFile := filepath.Join("..", "..", "loaders", "testdata", "adult_sample.test")
	for _, tc := range []struct {
		name string
		seed []string // the training run's
		eval []string // eval's data and seed flags
	}{
		{"seeded, eval with another seed", []string{"--seed", "1"}, []string{"--dataset", "", "--schema", schema, "--seed", "42"}},
		{"seeded, eval without data flags", []string{"--seed", "1"}, nil},
		{"unseeded, eval with a seed", nil, []string{"--schema", schema, "--seed", "1"}},
		{"split seed, eval without data flags", []string{"--seed", "2", "--split-seed", "9"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := t.TempDir()
			args := append([]string{"train", "--algo", "sgd", "--batch", "32", "--schema", schema, "--epochs", "2", "--batch", "16", "--quiet", "--out", run}, tc.seed...)
			if _, stderr, err := runCLI(t, args...); err != nil {
				t.Fatalf("%v\n%s", err, stderr)
			}
			evalOut := filepath.Join(run, "eval.json")
			out, stderr, err := runCLI(t, append([]string{"eval", "--model", filepath.Join(run, "model.ckpt"), "--out", evalOut}, tc.eval...)...)
			if err != nil {
				t.Fatalf("%v\n%s", err, stderr)
			}
			trained, n := reportTest(t, filepath.Join(run, "report.json"))
			scored, _ := reportTest(t, evalOut)
			if !reflect.DeepEqual(trained, scored) {
				t.Errorf("eval scored other records than the model's held-out split:\ntrain report %v\neval         %v", trained, scored)
			}
			want := fmt.Sprintf("scored: the held-out split of the model's training data, %d records", int(n))
			if !strings.Contains(out, want) || !strings.Contains(out, "test (held-out split of the training data)") {
				t.Errorf("eval output lacks %q:\n%s", want, out)
			}
		})
	}

	// Another file is scored whole: every record it has, under a title
	// that does not say "test".
	run := t.TempDir()
	if _, stderr, err := runCLI(t, "train", "--algo", "sgd", "--batch", "32", "--schema", schema, "--epochs", "1", "--seed", "1", "--quiet", "--out", run); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	s, err := loaders.LoadSchema(schema)
	if err != nil {
		t.Fatal(err)
	}
	tr, te, _, err := loaders.LoadCSV(loaders.CSVOptions{Schema: s, Files: []string{otherFile},
		Split: loaders.SplitOptions{TrainFrac: 0.5, Rand: rand.New(rand.NewPCG(1, 2))}})
	if err != nil {
		t.Fatal(err)
	}
	evalOut := filepath.Join(run, "other.json")
	out, stderr, err := runCLI(t, "eval", "--model", filepath.Join(run, "model.ckpt"), "--dataset", otherFile, "--out", evalOut)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if _, n := reportTest(t, evalOut); int(n) != tr.N()+te.N() {
		t.Errorf("another file: scored %v records, the file has %d", n, tr.N()+te.N())
	}
	want := fmt.Sprintf("scored: the whole of %s, %d records", otherFile, tr.N()+te.N())
	if !strings.Contains(out, want) || !strings.Contains(out, "whole file (not the training data's held-out split)") {
		t.Errorf("eval of another file lacks %q:\n%s", want, out)
	}
	if strings.Contains(out, "train split") || strings.Contains(out, "test split") {
		t.Errorf("eval of a whole file describes a split it did not score:\n%s", out)
	}
}

// TestEvalRefusesCheckpointWithoutSplit: a checkpoint that does not record
// its split (written before fairdp kept it) cannot tell its held-out
// records, so eval refuses, saying how to get one that does.
func TestEvalRefusesCheckpointWithoutSplit(t *testing.T) {
	dir := t.TempDir()
	schema := sampleSchema(t, dir, "sample.json", nil)
	if _, stderr, err := runCLI(t, "train", "--algo", "sgd", "--batch", "32", "--schema", schema, "--epochs", "1", "--seed", "1", "--quiet", "--out", dir); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	ckpt := filepath.Join(dir, "model.ckpt")
	m, meta, err := models.LoadFile(ckpt)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := meta.Info[trainer.SplitInfoKey]; !ok {
		t.Fatalf("model.ckpt records no split: %v", meta.Info)
	}
	delete(meta.Info, trainer.SplitInfoKey)
	if err := models.SaveFile(ckpt, m.(*models.Model[float32]), meta); err != nil {
		t.Fatal(err)
	}
	_, _, err = runCLI(t, "eval", "--model", ckpt, "--schema", schema, "--seed", "1")
	if err == nil || !strings.Contains(err.Error(), "records no train/test split") || !strings.Contains(err.Error(), "retrain") {
		t.Errorf("eval of a checkpoint without its split: %v", err)
	}
}

// TestEvalSchemaFilter: a schema whose filter differs
// from the one the model was trained with is refused, naming the filter
// (the old code scored the checkpoint's population under the other
// filter, without a word); the same filter is applied and said.
func TestEvalSchemaFilter(t *testing.T) {
	dir := t.TempDir()
	white := func(s map[string]any) {
		s["filter"] = map[string]any{"sex": []any{"Female", "Male"}, "race": []any{"White"}}
	}
	schema := sampleSchema(t, dir, "white.json", white)
	if _, stderr, err := runCLI(t, "train", "--algo", "sgd", "--batch", "32", "--schema", schema, "--epochs", "1", "--seed", "1", "--quiet", "--out", dir); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	ckpt := filepath.Join(dir, "model.ckpt")
	for _, tc := range []struct {
		name, schema, err string
	}{
		{"no filter", sampleSchema(t, dir, "all.json", nil), "the filter differs"},
		{"another filter", sampleSchema(t, dir, "black.json", func(s map[string]any) { s["filter"] = map[string]any{"race": []any{"Black"}} }), "the filter differs"},
		{"the same filter, values reordered", sampleSchema(t, dir, "same.json", func(s map[string]any) {
			s["filter"] = map[string]any{"race": []any{"White"}, "sex": []any{"Male", "Female"}}
		}), ""},
	} {
		out, _, err := runCLI(t, "eval", "--model", ckpt, "--schema", tc.schema)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.err == "" && !strings.Contains(out, "the schema's filter dropped"):
			t.Errorf("%s: eval does not say the filter dropped rows:\n%s", tc.name, out)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: got %v, want an error containing %q", tc.name, err, tc.err)
		}
	}
}
