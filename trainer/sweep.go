package trainer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/fairdp/fairdp/atomicfile"
	"github.com/fairdp/fairdp/backend"
	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/loaders"
	"github.com/fairdp/fairdp/nn"
)

// SweepRun is one run of a grid: its complete settings and the key that
// names it in the sweep's results file (e.g. "1,0.5,7" for ε, λ, seed).
type SweepRun struct {
	Key string
	Cfg Config
}

// SweepResult is what one run of a sweep gave: its report, or why it failed.
type SweepResult struct {
	Run    SweepRun
	Report *Report
	Err    error
}

// Sweep trains many configurations of one data set side by side: the data
// is loaded and split once and shared read-only by every run, Workers runs
// train at a time, and each run gets GOMAXPROCS/Workers cores for its layers
// (one each when the sweep fills the machine) with single-threaded BLAS, so
// parallel runs do not fight over cores.
type Sweep struct {
	Train, Test *loaders.Dataset
	Preprocess  json.RawMessage
	Workers     int // runs at a time (0: GOMAXPROCS)
	// Pipeline, if set, runs one configuration instead of the SGD training
	// loop: the pipelines that are not Algorithms (post-processing, the
	// oracle learner, budget tailoring) sweep through the same runner and
	// results file. It must be safe to call concurrently.
	Pipeline func(ctx context.Context, cfg Config) (*Report, error)
	// split is the shared split's record, for each run's model.ckpt.
	split *SplitRecord
}

// SweepSeed is the seed of run `run` of the sweep cell named cell (its key,
// e.g. "1,0.5" for ε, λ) in a sweep seeded with base: the first 8 bytes of
// SHA-256("fairdp sweep seed v1", base, cell, run). Every cell and run gets
// its own noise stream, so two cells that differ only in λ do not share
// their noise (with base+run they did), and a rerun of the same sweep is
// bit-identical. The runs share the data split of base (Config.SplitSeed).
func SweepSeed(base uint64, cell string, run int) uint64 {
	h := sha256.New()
	fmt.Fprintf(h, "fairdp sweep seed v1\x00%d\x00%s\x00%d", base, cell, run)
	return binary.LittleEndian.Uint64(h.Sum(nil)[:8])
}

// SweepSeedDerivation names SweepSeed in a sweep's settings file.
const SweepSeedDerivation = "sha256(base seed, cell, run) v1"

// NewSweep loads and splits the data cfg names once, with the split seed
// given (the split of `fairdp train --seed splitSeed`).
func NewSweep(cfg Config, splitSeed uint64, workers int) (*Sweep, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg, err := resolveTrainFrac(cfg, nil)
	if err != nil {
		return nil, err
	}
	_, src := dpops.NewRand(&splitSeed)
	key := src.DeriveKey("data")
	train, test, prep, err := LoadData(cfg, rand.New(rand.NewChaCha8(key)))
	if err != nil {
		return nil, err
	}
	return &Sweep{Train: train, Test: test, Preprocess: prep, Workers: workers, split: NewSplitRecord(cfg, key, train, test)}, nil
}

// Run trains every run in order of the slice, Workers at a time, and calls
// finished once per run as it ends (never concurrently), with the report
// or the run's error. A run's randomness comes from its own Cfg.Seed (nil:
// crypto/rand), so a seeded run gives the same result as `fairdp train`
// with the same flags and the sweep's split seed. When ctx is cancelled no
// new run starts, the runs in flight stop at their next step and are not
// reported (nor is one that ends before it notices), and Run returns ctx's
// error; an error from finished stops the
// sweep the same way and is returned.
func (s *Sweep) Run(ctx context.Context, runs []SweepRun, finished func(SweepResult) error) error {
	workers := s.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = max(1, min(workers, len(runs)))
	prev := nn.Workers()
	nn.SetWorkers(max(1, runtime.GOMAXPROCS(0)/workers))
	if workers > 1 {
		backend.SetThreads(1)
	}
	defer nn.SetWorkers(prev)

	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	todo := make(chan SweepRun)
	results := make(chan SweepResult)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for run := range todo {
				if ctx.Err() != nil {
					continue // handed over as the sweep stopped: never started
				}
				// A run in flight when the sweep stops is dropped by the
				// loop below, however it ended.
				rep, err := s.train(ctx, run)
				results <- SweepResult{Run: run, Report: rep, Err: err}
			}
		}()
	}
	go func() {
		defer close(todo)
		for _, run := range runs {
			select {
			case todo <- run:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() {
		wg.Wait()
		close(results)
	}()
	var stopErr error
	for res := range results {
		// A result that reaches here after the caller cancelled (or after
		// finished failed) belongs to a run in flight at that moment: not
		// reported, as the runs stopped mid-way are not.
		if stopErr != nil || parent.Err() != nil {
			continue
		}
		if err := finished(res); err != nil {
			stopErr = err
			cancel()
		}
	}
	if stopErr != nil {
		return stopErr
	}
	return ctx.Err()
}

// train runs one configuration on the shared data.
func (s *Sweep) train(ctx context.Context, run SweepRun) (*Report, error) {
	cfg := run.Cfg
	if s.Pipeline != nil {
		return s.Pipeline(ctx, cfg)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r, src := dpops.NewRand(cfg.Seed)
	job := &Job{Cfg: cfg, Train: s.Train, Test: s.Test, Preprocess: s.Preprocess, Rand: r, Source: src, Log: io.Discard, split: s.split}
	return Train(ctx, job)
}

// SweepLog is a sweep's results file: a CSV with a fixed header and one row
// per finished run, identified by its first KeyColumns cells. Every row is
// appended with a single write and synced to disk before Append returns, so
// a sweep killed at any moment leaves at most one torn last line, which
// OpenSweepLog removes; finished runs are never redone.
type SweepLog struct {
	path       string
	header     []string
	keyColumns int
	f          *os.File
	rows       [][]string
}

// OpenSweepLog opens the results file at path, creating it with header, or
// reading the rows already there (the header must match; a torn last line
// left by a crash is cut off).
func OpenSweepLog(path string, header []string, keyColumns int) (*SweepLog, error) {
	return openSweepLog(path, header, nil, keyColumns)
}

// openSweepLog is OpenSweepLog that also takes a file whose header is one
// of old, headers an earlier fairdp wrote before columns were added at the
// end (each a prefix of header): it rewrites that file, atomically, with
// header and its rows padded with empty cells, so a sweep started before
// the new columns resumes.
func openSweepLog(path string, header []string, old [][]string, keyColumns int) (*SweepLog, error) {
	if keyColumns < 1 || keyColumns > len(header) {
		return nil, fmt.Errorf("sweep log %s: %d key columns for a header of %d", path, keyColumns, len(header))
	}
	l := &SweepLog{path: path, header: slices.Clone(header), keyColumns: keyColumns}
	raw, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return l, l.create()
	case err != nil:
		return nil, fmt.Errorf("sweep log: %w", err)
	}
	if raw, err = cutTornLine(path, raw); err != nil {
		return nil, fmt.Errorf("sweep log: %w", err)
	}
	recs, err := csv.NewReader(bytes.NewReader(raw)).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("sweep log %s: %w", path, err)
	}
	if len(recs) == 0 {
		return l, l.create()
	}
	if !slices.Equal(recs[0], header) && slices.ContainsFunc(old, func(o []string) bool {
		return len(o) >= keyColumns && len(o) < len(header) && slices.Equal(o, header[:len(o)]) && slices.Equal(recs[0], o)
	}) {
		if recs, err = upgradeSweepLog(path, recs, header); err != nil {
			return nil, err
		}
	}
	if !slices.Equal(recs[0], header) {
		return nil, fmt.Errorf("sweep log %s: header %q, want %q (a results file of another kind of sweep?)",
			path, strings.Join(recs[0], ","), strings.Join(header, ","))
	}
	seen := map[string]int{}
	for i, rec := range recs[1:] {
		k := l.key(rec)
		if j, dup := seen[k]; dup {
			return nil, fmt.Errorf("sweep log %s: line %d repeats the run of line %d (%s)", path, i+2, j+2, k)
		}
		seen[k] = i
	}
	l.rows = recs[1:]
	if l.f, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0); err != nil {
		return nil, fmt.Errorf("sweep log: %w", err)
	}
	return l, nil
}

// upgradeSweepLog rewrites the results file at path, whose records recs
// have a header that is a prefix of header, with header and every row
// padded with empty cells for the added columns; it returns the new
// records.
func upgradeSweepLog(path string, recs [][]string, header []string) ([][]string, error) {
	out := [][]string{slices.Clone(header)}
	for _, r := range recs[1:] {
		out = append(out, append(slices.Clone(r), make([]string, max(0, len(header)-len(r)))...))
	}
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	if err := w.WriteAll(out); err != nil {
		return nil, fmt.Errorf("sweep log %s: %w", path, err)
	}
	if err := atomicfile.WriteBytes(path, buf.Bytes()); err != nil {
		return nil, fmt.Errorf("sweep log %s: adding the columns %s: %w", path, strings.Join(header[len(recs[0]):], ","), err)
	}
	return out, nil
}

func (l *SweepLog) create() error {
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("sweep log: %w", err)
	}
	l.f = f
	if err := l.write(l.header); err != nil {
		return err
	}
	// Make the new file's name durable too.
	if dir, err := os.Open(filepath.Dir(l.path)); err == nil {
		dir.Sync()
		dir.Close()
	}
	return nil
}

// key is the run key of a row: its key cells joined by commas.
func (l *SweepLog) key(rec []string) string {
	return strings.Join(rec[:min(l.keyColumns, len(rec))], ",")
}

// Done reports whether the run with this key has a row.
func (l *SweepLog) Done(key string) bool {
	return slices.ContainsFunc(l.rows, func(r []string) bool { return l.key(r) == key })
}

// Rows returns the finished rows (without the header) in file order.
func (l *SweepLog) Rows() [][]string { return l.rows }

// Append writes one finished run's row (len(header) cells) and syncs it.
func (l *SweepLog) Append(row []string) error {
	if len(row) != len(l.header) {
		return fmt.Errorf("sweep log %s: row of %d cells, want %d", l.path, len(row), len(l.header))
	}
	if l.Done(l.key(row)) {
		return fmt.Errorf("sweep log %s: run %s already has a row", l.path, l.key(row))
	}
	if err := l.write(row); err != nil {
		return err
	}
	l.rows = append(l.rows, slices.Clone(row))
	return nil
}

// write appends one CSV record with a single write call and syncs the file.
func (l *SweepLog) write(rec []string) error {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write(rec)
	w.Flush()
	if _, err := l.f.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("sweep log %s: %w", l.path, err)
	}
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("sweep log %s: %w", l.path, err)
	}
	return nil
}

// Close closes the file.
func (l *SweepLog) Close() error { return l.f.Close() }

// SweepSettings is a sweep directory's sweep.json: everything a run
// depends on except the grid axes, so that a resumed sweep can check it
// continues the same experiment (extending the grid is fine; changing the
// settings is not).
type SweepSettings struct {
	Version  string          `json:"fairdp_version"`
	Config   json.RawMessage `json:"config"`
	Seeded   bool            `json:"seeded"`
	BaseSeed uint64          `json:"base_seed"`
	// SeedDerivation says how a seeded run's seed comes from BaseSeed:
	// SweepSeedDerivation (OpenSweep refuses a seeded grid without it).
	SeedDerivation string `json:"seed_derivation,omitempty"`
	// PrivacyTotal is the guarantee of publishing every run in the
	// results file (see SweepPrivacy), rewritten before each run's row is
	// appended; CheckSweepSettings does not compare it.
	PrivacyTotal *SweepTotal `json:"privacy_total,omitempty"`
}

// CheckSweepSettings writes dir/sweep.json for a new sweep with base (the
// settings without the grid axes), or checks that a resumed one has the
// same settings; s.SeedDerivation is set from the file, for OpenSweep to
// check that a resumed grid keeps the one seed rule (SweepPlan's doc).
func CheckSweepSettings(dir string, base Config, s *SweepSettings) error {
	raw, err := json.Marshal(base)
	if err != nil {
		return err
	}
	s.Config = raw
	path := filepath.Join(dir, "sweep.json")
	old, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return atomicfile.WriteJSON(path, s)
	}
	if err != nil {
		return err
	}
	var prev SweepSettings
	if err := json.Unmarshal(old, &prev); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	s.SeedDerivation = prev.SeedDerivation
	var stored Config
	if err := decodeConfigStrict(prev.Config, &stored); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if prev.Config, err = json.Marshal(stored); err != nil {
		return err
	}
	if !bytes.Equal(prev.Config, raw) || prev.Seeded != s.Seeded || prev.BaseSeed != s.BaseSeed {
		return fmt.Errorf("%s holds a sweep with other settings (%s, seeded %v from %d); resume it with the same settings "+
			"(only the grid's values and the number of seeds may change) or use another output directory",
			dir, diffConfigs(prev.Config, raw), prev.Seeded, prev.BaseSeed)
	}
	return nil
}

// diffConfigs names the settings that differ between two config JSONs.
func diffConfigs(a, b json.RawMessage) string {
	var x, y map[string]any
	json.Unmarshal(a, &x)
	json.Unmarshal(b, &y)
	var diff []string
	for k, v := range y {
		if fmt.Sprint(x[k]) != fmt.Sprint(v) {
			diff = append(diff, fmt.Sprintf("%s %v, now %v", k, x[k], v))
		}
	}
	slices.Sort(diff)
	if len(diff) == 0 {
		return "same config"
	}
	return strings.Join(diff, "; ")
}

// SweepColumns are the sweep.csv columns of an SGD-family sweep after the
// key cells of the grid (ε, λ, seed; SteFFLe sweeps put N and h first).
var SweepColumns = []string{"epsilon", "lambda", "seed", "error", "violation", "spent_epsilon", "delta",
	"dp_violation", "eo_violation", "train_error", "test_ermi", "sigma", "seconds"}

// SweepRow is one finished SGD-family run's sweep.csv row: the run's key
// cells, then the metrics of SweepColumns. A private run's training error
// is not released: its cell stays empty.
func SweepRow(run SweepRun, rep *Report) []string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	opt := func(p *float64) string {
		if p == nil {
			return "inf"
		}
		return f(*p)
	}
	violation := rep.Test.DPViolation
	if run.Cfg.Fair.Fairness == "eo" {
		violation = rep.Test.EOViolation
	}
	ermi, sigma := "", ""
	if v, ok := testERMI(rep); ok {
		ermi = f(v)
	}
	if m := rep.Privacy.Mechanisms; len(m) > 0 {
		sigma = f(m[len(m)-1].NoiseMultiplier)
	}
	delta := ""
	if rep.Privacy.Private() {
		delta = f(rep.Privacy.Delta)
	}
	trainErr := ""
	if rep.Train != nil {
		trainErr = f(rep.Train.Error)
	}
	return append(strings.Split(run.Key, ","), f(rep.Test.Error), f(violation), opt(rep.Privacy.Epsilon), delta,
		f(rep.Test.DPViolation), f(rep.Test.EOViolation), trainErr, ermi, sigma, strconv.FormatFloat(rep.Seconds, 'f', 2, 64))
}
