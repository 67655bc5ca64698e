package trainer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

var sweepHeader = []string{"epsilon", "lambda", "seed", "error"}

// TestSweepLogResume: rows survive a reopen, a torn last line (a crash in
// the middle of an append) is cut off, duplicates and foreign headers are
// refused.
func TestSweepLogResume(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sweep.csv")
	l, err := OpenSweepLog(path, sweepHeader, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range [][]string{{"1", "0", "7", "0.16"}, {"inf", "0.5", "7", "0.17"}} {
		if err := l.Append(row); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Append([]string{"1", "0", "7", "0.2"}); err == nil {
		t.Error("a second row for the same run was accepted")
	}
	if err := l.Append([]string{"1", "0"}); err == nil {
		t.Error("a short row was accepted")
	}
	l.Close()
	// A crash while appending leaves a partial line.
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString("3,1,7,0.1")
	f.Close()
	l, err = OpenSweepLog(path, sweepHeader, 3)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(l.Rows()); got != 2 || !l.Done("inf,0.5,7") || l.Done("3,1,7") {
		t.Errorf("after reopen: %d rows %v, want the 2 complete ones", got, l.Rows())
	}
	if err := l.Append([]string{"3", "1", "7", "0.18"}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	want := "epsilon,lambda,seed,error\n1,0,7,0.16\ninf,0.5,7,0.17\n3,1,7,0.18\n"
	if got, _ := os.ReadFile(path); string(got) != want {
		t.Errorf("file:\n%s\nwant:\n%s", got, want)
	}
	if _, err := OpenSweepLog(path, []string{"a", "b", "c"}, 1); err == nil || !strings.Contains(err.Error(), "header") {
		t.Errorf("foreign header: %v", err)
	}
	os.WriteFile(path, []byte(want+"1,0,7,0.3\n"), 0o644)
	if _, err := OpenSweepLog(path, sweepHeader, 3); err == nil || !strings.Contains(err.Error(), "line 5 repeats") {
		t.Errorf("duplicate row: %v", err)
	}
}

func sweepConfig() Config {
	cfg := Defaults()
	cfg.Algo, cfg.Limit, cfg.Epochs, cfg.Quiet = "dpsgd", 900, 1, true
	return cfg
}

// TestSweepRunsEverything: every run is reported once, in any order, and a
// seeded run of the sweep gives exactly what the same job gives on its own
// (same split seed, same run seed).
func TestSweepRunsEverything(t *testing.T) {
	base := sweepConfig()
	s, err := NewSweep(base, 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	var runs []SweepRun
	for i, eps := range []float64{0.5, 2, 8} {
		c := base
		seed := uint64(3 + i)
		c.Privacy.Epsilon, c.Seed = eps, &seed
		runs = append(runs, SweepRun{Key: string(rune('a' + i)), Cfg: c})
	}
	got := map[string]*Report{}
	err = s.Run(context.Background(), runs, func(r SweepResult) error {
		if r.Err != nil {
			return r.Err
		}
		if got[r.Run.Key] != nil {
			t.Errorf("run %s reported twice", r.Run.Key)
		}
		got[r.Run.Key] = r.Report
		return nil
	})
	if err != nil || len(got) != 3 {
		t.Fatalf("sweep: %v, %d results", err, len(got))
	}
	// Run a alone: seed 3 is also the split seed, so Prepare reproduces it.
	job, err := Prepare(runs[0].Cfg, PrepareOptions{Log: &bytes.Buffer{}})
	if err != nil {
		t.Fatal(err)
	}
	alone, err := Train(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	if a := got["a"]; a.Test.Error != alone.Test.Error || *a.Privacy.Epsilon != *alone.Privacy.Epsilon {
		t.Errorf("sweep run a: error %v ε %v; alone: %v ε %v", a.Test.Error, *a.Privacy.Epsilon, alone.Test.Error, *alone.Privacy.Epsilon)
	}
	if !(*got["a"].Privacy.Epsilon <= 0.5 && *got["c"].Privacy.Epsilon <= 8 && *got["c"].Privacy.Epsilon > 7) {
		t.Errorf("runs did not use their own ε: %v, %v", *got["a"].Privacy.Epsilon, *got["c"].Privacy.Epsilon)
	}
}

// TestSweepStops: after cancellation no new run starts and Run returns the
// context's error; an error from the callback stops the sweep and is
// returned.
func TestSweepStops(t *testing.T) {
	base := sweepConfig()
	s, err := NewSweep(base, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	runs := sixRuns(base)
	if n, err := runCancelledAtSecond(s, runs); !errors.Is(err, context.Canceled) || n != 2 {
		t.Errorf("cancelled sweep: err %v after %d runs, want context.Canceled after 2", err, n)
	}
	stop := errors.New("disk full")
	var n atomic.Int32
	err = s.Run(context.Background(), runs, func(SweepResult) error { n.Add(1); return stop })
	if !errors.Is(err, stop) || n.Load() != 1 {
		t.Errorf("callback error: %v after %d runs", err, n.Load())
	}
}

// sixRuns is six runs of cfg, keyed a to f.
func sixRuns(cfg Config) []SweepRun {
	runs := make([]SweepRun, 6)
	for i := range runs {
		runs[i] = SweepRun{Key: string(rune('a' + i)), Cfg: cfg}
	}
	return runs
}

// runCancelledAtSecond runs s over runs, its caller cancelling the context
// when the second result is reported, and returns how many results were
// reported and Run's error.
func runCancelledAtSecond(s *Sweep, runs []SweepRun) (int32, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var n atomic.Int32
	err := s.Run(ctx, runs, func(SweepResult) error {
		if n.Add(1) == 2 {
			cancel()
		}
		return nil
	})
	return n.Load(), err
}

// A sweep's results file survives interruption: reopening it tells which
// runs are done, so only the others are trained again.
func ExampleOpenSweepLog() {
	dir, _ := os.MkdirTemp("", "sweep")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "sweep.csv")
	header := []string{"epsilon", "lambda", "seed", "error"}
	log, _ := OpenSweepLog(path, header, 3)
	log.Append([]string{"1", "0.5", "7", "0.161"})
	log.Close() // the sweep is interrupted here

	log, _ = OpenSweepLog(path, header, 3)
	defer log.Close()
	fmt.Println(log.Done("1,0.5,7"), log.Done("1,1,7"), len(log.Rows()))
	// Output: true false 1
}

// TestSweepSeed: every cell and run of a seeded sweep gets its own seed (no
// two cells share noise, as base+run made cells differing only in λ do),
// and the derivation is fixed (reruns reproduce; resumed sweeps find their
// runs).
func TestSweepSeed(t *testing.T) {
	seen := map[uint64]string{}
	for _, cell := range []string{"1,0", "1,0.5", "1,2", "inf,0", "3,0,1,0"} {
		for run := range 3 {
			s := SweepSeed(7, cell, run)
			if prev, dup := seen[s]; dup {
				t.Errorf("cell %s run %d has the seed of %s", cell, run, prev)
			}
			seen[s] = cell
			if SweepSeed(7, cell, run) != s {
				t.Errorf("cell %s run %d: seed not reproducible", cell, run)
			}
		}
	}
	if SweepSeed(7, "1,0", 0) == SweepSeed(8, "1,0", 0) {
		t.Error("the base seed does not change the run seeds")
	}
	// Pinned: changing the derivation would orphan every seeded sweep.csv.
	if got := SweepSeed(1, "1,0", 0); got != pinnedSweepSeed {
		t.Errorf("SweepSeed(1, \"1,0\", 0) = %d, pinned %d", got, pinnedSweepSeed)
	}
}

const pinnedSweepSeed uint64 = 14540822644580939070 // first 8 bytes (little-endian) of SHA-256("fairdp sweep seed v1\x001\x001,0\x000")

// TestCheckSweepSettingsLegacyKeys: a sweep directory whose sweep.json was
// written before the config keys were snake_case (Go field names) is
// refused rather than resumed through a second set of keys.
func TestCheckSweepSettingsLegacyKeys(t *testing.T) {
	dir := t.TempDir()
	base := Defaults()
	base.Limit = 500
	legacy := `{"fairdp_version": "0.1.0-dev", "seeded": true, "base_seed": 5, "seed_derivation": "` + SweepSeedDerivation + `",
	  "config": {"Algo": "fermi", "Dataset": "adult", "Schema": "", "DataDir": "", "Model": "", "Hidden": null, "DType": "float32",
	  "Epochs": 20, "Batch": 256, "LR": 0.01, "Optimizer": "adam", "Momentum": 0, "TrainFrac": 0.75, "ImageSize": 64, "Limit": 500,
	  "Seed": null, "Out": "", "Quiet": false, "Device": "cpu", "Baseline": false, "Tau": 0.05,
	  "privacy": {"Epsilon": 1, "Delta": 0, "Clip": 1, "Sigma": 0, "Sampling": "poisson"},
	  "fair": {"Lambda": 1, "Fairness": "dp", "Scope": "all", "LRW": 0.01, "Radius": 5, "PublicGroupSizes": false,
	    "Calibration": "accountant", "WeightDecay": 0, "CountNoiseRatio": 10}, "Preset": ""}}`
	if err := os.WriteFile(filepath.Join(dir, "sweep.json"), []byte(legacy), 0o644); err != nil {
		t.Fatal(err)
	}
	s := SweepSettings{Seeded: true, BaseSeed: 5, SeedDerivation: SweepSeedDerivation}
	if err := CheckSweepSettings(dir, base, &s); err == nil || !strings.Contains(err.Error(), "unknown field") {
		t.Errorf("a sweep.json with Go field names: %v, want an unknown key refused", err)
	}
}

// TestSweepLogOldColumns: a results file whose header is an earlier
// version's (a prefix of today's) is rewritten with today's header and
// empty cells in the added columns, and resumes; without the old header
// listed it is refused as before, and a header that is not a prefix is
// never taken for an old one.
func TestSweepLogOldColumns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sweep.csv")
	old := "epsilon,lambda,seed\n1,0,7\n"
	os.WriteFile(path, []byte(old), 0o644)
	if _, err := OpenSweepLog(path, sweepHeader, 3); err == nil || !strings.Contains(err.Error(), "header") {
		t.Errorf("an old header without OldColumns: %v", err)
	}
	if _, err := openSweepLog(path, sweepHeader, [][]string{{"epsilon", "lambda", "sigma"}}, 3); err == nil {
		t.Error("a header that is not a prefix was upgraded")
	}
	if got, _ := os.ReadFile(path); string(got) != old {
		t.Errorf("a refused file was changed: %q", got)
	}
	l, err := openSweepLog(path, sweepHeader, [][]string{{"epsilon", "lambda", "seed"}}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if !l.Done("1,0,7") || len(l.Rows()) != 1 || len(l.Rows()[0]) != len(sweepHeader) {
		t.Errorf("upgraded rows %q", l.Rows())
	}
	if err := l.Append([]string{"inf", "0", "7", "0.2"}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	want := "epsilon,lambda,seed,error\n1,0,7,\ninf,0,7,0.2\n"
	if got, _ := os.ReadFile(path); string(got) != want {
		t.Errorf("file:\n%s\nwant:\n%s", got, want)
	}
}

// TestSweepStopsRunsThatIgnoreCancel: a run in flight when the caller
// cancels is not reported even when it ignores the context and ends well
// (a pipeline that never looks at ctx), and no run starts after the cancel.
func TestSweepStopsRunsThatIgnoreCancel(t *testing.T) {
	s, err := NewSweep(sweepConfig(), 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	var started atomic.Int32
	s.Pipeline = func(context.Context, Config) (*Report, error) {
		started.Add(1)
		time.Sleep(20 * time.Millisecond)
		return &Report{}, nil
	}
	n, err := runCancelledAtSecond(s, sixRuns(sweepConfig()))
	if !errors.Is(err, context.Canceled) || n != 2 || started.Load() > 3 {
		t.Errorf("err %v, %d runs reported, %d started; want context.Canceled, 2 reported, at most 3 started", err, n, started.Load())
	}
}
