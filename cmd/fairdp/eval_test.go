package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestEvalUsesStoredPreprocessing is issue 13 item 2: eval encodes data
// with the checkpoint's fitted preprocessing, so a schema listing the same
// columns in another order gives the same result as the original, and a
// schema whose columns differ is refused naming the difference.
func TestEvalUsesStoredPreprocessing(t *testing.T) {
	dir := t.TempDir()
	data, schema := filepath.Join("..", "..", "loaders", "testdata", "adult_sample.data"), filepath.Join("..", "..", "loaders", "testdata", "adult_sample.schema.json")
	if _, stderr, err := runCLI(t, "train", "--algo", "sgd", "--dataset", data, "--schema", schema, "--batch", "16", "--epochs", "3",
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
