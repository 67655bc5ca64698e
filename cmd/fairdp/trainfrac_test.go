package main

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/loaders"
)

// TestTrainFracFromSchema: the schema's train_frac takes
// effect when --train-frac is not given (the old code always split 75/25,
// the flag's default); a --train-frac given wins, and so does the fraction
// a --config report recorded.
func TestTrainFracFromSchema(t *testing.T) {
	dir := t.TempDir()
	schema := sampleSchema(t, dir, "sixty.json", func(s map[string]any) { s["train_frac"] = 0.6 })
	s, err := loaders.LoadSchema(schema)
	if err != nil {
		t.Fatal(err)
	}
	tr, te, _, err := loaders.LoadCSV(loaders.CSVOptions{Schema: s, Split: loaders.SplitOptions{TrainFrac: 0.5, Rand: rand.New(rand.NewPCG(1, 2))}})
	if err != nil {
		t.Fatal(err)
	}
	n := tr.N() + te.N()
	split := func(frac float64) string {
		train := int(math.Floor(frac*float64(n) + 1e-9))
		return fmt.Sprintf("(%d train / %d test records)", train, n-train)
	}
	run := filepath.Join(dir, "run")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no flag: the schema's", []string{"--schema", schema, "--out", run}, split(0.6)},
		{"the flag wins", []string{"--schema", schema, "--train-frac", "0.5"}, split(0.5)},
		{"the flag at the default value wins", []string{"--schema", schema, "--train-frac", "0.75"}, split(0.75)},
		{"a report's config: the fraction it used", []string{"--config", filepath.Join(run, "report.json"), "--out", filepath.Join(dir, "again")}, split(0.6)},
	} {
		out, stderr, err := runCLI(t, append([]string{"train", "--algo", "sgd", "--batch", "32", "--epochs", "1", "--seed", "1", "--quiet"}, tc.args...)...)
		if err != nil {
			t.Fatalf("%s: %v\n%s", tc.name, err, stderr)
		}
		if !strings.Contains(out, tc.want) {
			t.Errorf("%s: want %s in\n%s", tc.name, tc.want, out)
		}
	}
}

// sampleSchema writes a copy of loaders/testdata/adult_sample.schema.json to
// dir that reads adult_sample.data alone (no test_files: the test split is a
// random part of it), changed by change, and returns its path.
func sampleSchema(t *testing.T, dir, name string, change func(map[string]any)) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "loaders", "testdata", "adult_sample.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	data, err := filepath.Abs(filepath.Join("..", "..", "loaders", "testdata", "adult_sample.data"))
	if err != nil {
		t.Fatal(err)
	}
	s["files"] = []any{data}
	delete(s, "test_files")
	if change != nil {
		change(s)
	}
	b, _ := json.Marshal(s)
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
