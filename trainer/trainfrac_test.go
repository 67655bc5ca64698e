package trainer_test

import (
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/fairdp/fairdp/loaders"
	"github.com/fairdp/fairdp/trainer"
)

// sampleConfig is a quick sgd run on loaders/testdata/adult_sample.data
// read through a schema written to dir: no test_files (the test split is a
// random part of the file), and train_frac trainFrac when it is not 0.
func sampleConfig(t *testing.T, dir string, trainFrac float64) trainer.Config {
	t.Helper()
	return sampleConfigOf(t, dir, filepath.Join("..", "loaders", "testdata", "adult_sample.data"), trainFrac)
}

// sampleConfigOf is sampleConfig reading the file data instead.
func sampleConfigOf(t *testing.T, dir, data string, trainFrac float64) trainer.Config {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "loaders", "testdata", "adult_sample.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	data, err = filepath.Abs(data)
	if err != nil {
		t.Fatal(err)
	}
	s["files"] = []any{data}
	delete(s, "test_files")
	if trainFrac != 0 {
		s["train_frac"] = trainFrac
	}
	b, _ := json.Marshal(s)
	schema := filepath.Join(dir, "schema.json")
	if err := os.WriteFile(schema, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := trainer.Defaults()
	cfg.Algo, cfg.Dataset, cfg.Schema, cfg.Epochs, cfg.Batch, cfg.Quiet = "sgd", "", schema, 1, 16, true
	return cfg
}

// TestPrepareResolvesTrainFrac, in the library: a
// TrainFrac of 0 takes the data's own (the schema's train_frac, the
// built-in set's, else DefaultTrainFrac) and the job's Config records the
// fraction used; a TrainFrac set wins. The old code refused 0 (Validate).
func TestPrepareResolvesTrainFrac(t *testing.T) {
	adult, err := loaders.Builtin("adult")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name             string
		builtin          bool
		schemaFrac, frac float64
		want             float64
	}{
		{"the schema's", false, 0.6, 0, 0.6},
		{"set wins over the schema's", false, 0.6, 0.5, 0.5},
		{"none named", false, 0, 0, trainer.DefaultTrainFrac},
		{"the built-in set's", true, 0, 0, adult.TrainFrac},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := sampleConfig(t, t.TempDir(), tc.schemaFrac)
			if tc.builtin {
				cfg.Dataset, cfg.Schema = "adult", ""
			}
			cfg.TrainFrac = tc.frac
			seed := uint64(1)
			cfg.Seed = &seed
			job, err := trainer.Prepare(cfg, trainer.PrepareOptions{Log: io.Discard})
			if err != nil {
				t.Fatal(err)
			}
			n := job.Train.N() + job.Test.N()
			if job.Cfg.TrainFrac != tc.want || job.Train.N() != int(math.Floor(tc.want*float64(n)+1e-9)) {
				t.Errorf("Config.TrainFrac %v, %d of %d records in training; want fraction %v", job.Cfg.TrainFrac, job.Train.N(), n, tc.want)
			}
		})
	}
}
