package trainer_test

import (
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/loaders"
	"github.com/fairdp/fairdp/models"
	"github.com/fairdp/fairdp/trainer"
)

// TestSplitRecordFindsHeldOut, in the library: the
// model.ckpt of a run records its split, and LoadEvalData on the same data
// gives back exactly the run's test records, whatever the seed it is
// given, for Prepare with and without a checkpoint, seeded or not; another file
// is scored whole.
func TestSplitRecordFindsHeldOut(t *testing.T) {
	seed, other := uint64(3), uint64(99)
	for _, tc := range []struct {
		name         string
		seed         *uint64
		checkpointed bool
	}{
		{"seeded", &seed, false},
		{"unseeded", nil, false},
		{"checkpointed, seeded", &seed, true},
		{"checkpointed, unseeded", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := sampleConfig(t, dir, 0)
			cfg.Seed, cfg.Out = tc.seed, filepath.Join(dir, "out")
			var job *trainer.Job
			var err error
			if tc.checkpointed {
				job, err = trainer.Prepare(cfg, trainer.PrepareOptions{Log: io.Discard, Checkpoint: trainer.CheckpointOptions{Dir: filepath.Join(dir, "ck")}})
			} else {
				job, err = trainer.Prepare(cfg, trainer.PrepareOptions{Log: io.Discard})
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := trainer.Train(context.Background(), job); err != nil {
				t.Fatal(err)
			}
			_, meta, err := models.LoadFile(filepath.Join(cfg.Out, "model.ckpt"))
			if err != nil {
				t.Fatal(err)
			}
			rec, err := trainer.ReadSplitRecord(meta)
			if err != nil || rec == nil {
				t.Fatalf("split record %v, %v", rec, err)
			}
			fitted := new(loaders.Preprocessor)
			if err := json.Unmarshal(meta.Preprocess, fitted); err != nil {
				t.Fatal(err)
			}
			evalCfg := cfg
			evalCfg.Seed, evalCfg.TrainFrac = &other, 0.5 // neither is read
			ev, err := trainer.LoadEvalData(evalCfg, fitted, rec)
			if err != nil {
				t.Fatal(err)
			}
			if !ev.HeldOut || !reflect.DeepEqual(ev.Data.X, job.Test.X) || !reflect.DeepEqual(ev.Data.Labels, job.Test.Labels) {
				t.Errorf("LoadEvalData: held out %v, %d records; the run's test split has %d", ev.HeldOut, ev.Data.N(), job.Test.N())
			}
			if !strings.Contains(ev.Scored, "held-out split") {
				t.Errorf("Scored = %q", ev.Scored)
			}
			evalCfg.Dataset = filepath.Join("..", "loaders", "testdata", "adult_sample.test")
			ev, err = trainer.LoadEvalData(evalCfg, fitted, rec)
			if err != nil {
				t.Fatal(err)
			}
			tr, te, _, err := loaders.LoadCSV(loaders.CSVOptions{Schema: fitted.Schema(), Files: []string{evalCfg.Dataset}, Fitted: fitted,
				Split: loaders.SplitOptions{TrainFrac: 0.5, Rand: rand.New(rand.NewPCG(1, 2))}})
			if err != nil {
				t.Fatal(err)
			}
			if ev.HeldOut || ev.Data.N() != tr.N()+te.N() || !strings.Contains(ev.Scored, "the whole of") {
				t.Errorf("another file: held out %v, %d records (the file has %d), %q", ev.HeldOut, ev.Data.N(), tr.N()+te.N(), ev.Scored)
			}
		})
	}
	if _, err := trainer.LoadEvalData(trainer.Defaults(), nil, nil); err == nil || !strings.Contains(err.Error(), "records no train/test split") {
		t.Errorf("no split record: %v", err)
	}
}

// TestReceiptDeclaresDataCounts: the notes train prints
// ("dropped N rows with a missing cell ... before splitting") count the
// training records too, so a private run's receipt lists them under
// not_covered; a private run whose data needed no dropping, and a run that
// is not private, do not.
func TestReceiptDeclaresDataCounts(t *testing.T) {
	dir := t.TempDir()
	raw, err := os.ReadFile(filepath.Join("..", "loaders", "testdata", "adult_sample.data"))
	if err != nil {
		t.Fatal(err)
	}
	var clean []string
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.Contains(line, "?") {
			clean = append(clean, line)
		}
	}
	cleanFile := filepath.Join(dir, "clean.data")
	if err := os.WriteFile(cleanFile, []byte(strings.Join(clean, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, data string
		algo       trainer.AlgoName
		want       bool
	}{
		{"private, rows dropped", filepath.Join("..", "loaders", "testdata", "adult_sample.data"), "dpsgd", true},
		{"private, nothing dropped", cleanFile, "dpsgd", false},
		{"not private, rows dropped", filepath.Join("..", "loaders", "testdata", "adult_sample.data"), "sgd", false},
	} {
		cfg := sampleConfigOf(t, t.TempDir(), tc.data, 0)
		seed := uint64(1)
		cfg.Algo, cfg.Seed, cfg.Privacy.Epsilon, cfg.Privacy.AllowLargeDelta = tc.algo, &seed, 5, true
		rep, err := trainer.RunConfig(context.Background(), cfg, io.Discard)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got := false
		for _, n := range rep.Privacy.NotCovered {
			got = got || n.Item == trainer.NotCoveredDataCounts
		}
		if got != tc.want {
			t.Errorf("%s: not_covered %s listed %v, want %v (%v)", tc.name, trainer.NotCoveredDataCounts, got, tc.want, rep.Privacy.NotCovered)
		}
	}
}
