package trainer

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/dpops/accounting"
)

// testGrid is a two-axis grid with a prefix, like a post-processing sweep.
func testGrid(seeds int) SweepGrid {
	return SweepGrid{Prefix: []string{"algo"}, Seeds: seeds,
		Axes: []SweepAxis{{Column: "epsilon", Values: []float64{1, math.Inf(1)}}, {Column: "lambda", Values: []float64{0, 0.5, 2}}}}
}

var testGridColumns = []string{"algorithm", "epsilon", "lambda", "seed", "error", "spent"}

// testSweepOptions sweeps testGrid with a pipeline whose report's error is
// ε·λ + seed mod 7 and whose receipt is pure ε-DP with the cell's ε.
func testSweepOptions(dir string, seed *uint64, seeds int) (SweepOptions, *Sweep) {
	base := Defaults()
	o := SweepOptions{Dir: dir, Grid: testGrid(seeds), Columns: testGridColumns, Settings: base, Seed: seed,
		Configure: func(cell []float64) Config {
			c := base
			c.Privacy.Epsilon, c.Fair.Lambda = cell[0], cell[1]
			return c
		},
		Row: func(run SweepRun, rep *Report) []string {
			spent := "inf"
			if rep.Privacy.Epsilon != nil {
				spent = FormatSweepValue(*rep.Privacy.Epsilon)
			}
			return append(strings.Split(run.Key, ","), strconv.FormatFloat(rep.Test.Error, 'g', -1, 64), spent)
		},
	}
	sw := &Sweep{Workers: 2, Pipeline: func(_ context.Context, cfg Config) (*Report, error) {
		rep := &Report{}
		rep.Test.Error = cfg.Privacy.Epsilon*cfg.Fair.Lambda + float64(*cfg.Seed%7)
		if e := cfg.Privacy.Epsilon; !math.IsInf(e, 1) {
			rep.Privacy = accounting.Receipt{Epsilon: &e}
		}
		return rep, nil
	}}
	return o, sw
}

// TestSweepGridCells: the cells are every combination, the first axis
// slowest, and the keys are the prefix and the values written by
// FormatSweepValue.
func TestSweepGridCells(t *testing.T) {
	g := testGrid(3)
	var want []string
	for _, e := range []string{"1", "inf"} {
		for _, l := range []string{"0", "0.5", "2"} {
			want = append(want, "algo,"+e+","+l)
		}
	}
	var got []string
	for _, c := range g.Cells() {
		got = append(got, strings.Join(g.CellKey(c), ","))
	}
	if strings.Join(got, ";") != strings.Join(want, ";") || g.Size() != 18 || g.KeyColumns() != 4 {
		t.Errorf("cells %v (size %d, %d key columns), want %v (18, 4)", got, g.Size(), g.KeyColumns(), want)
	}
	if FormatSweepValue(0.1) != "0.1" || FormatSweepValue(math.Inf(1)) != "inf" || FormatSweepValue(3) != "3" {
		t.Errorf("FormatSweepValue: %s %s %s", FormatSweepValue(0.1), FormatSweepValue(math.Inf(1)), FormatSweepValue(3))
	}
}

// TestSweepPlanSeedRule: a seeded sweep's run i of a cell has the seed
// SHA-256("fairdp sweep seed v1", base, cell key, i) (computed here by
// hand) and the split of the base seed; an unseeded sweep's seed cell is
// i and its runs have no seed.
func TestSweepPlanSeedRule(t *testing.T) {
	base := uint64(11)
	o, _ := testSweepOptions(t.TempDir(), &base, 2)
	p, err := OpenSweep(o)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	runs := p.Pending()
	if len(runs) != 12 {
		t.Fatalf("%d runs, want 12", len(runs))
	}
	for j, r := range runs {
		cell := strings.Join(strings.Split(r.Key, ",")[:3], ",")
		h := sha256.Sum256([]byte(fmt.Sprintf("fairdp sweep seed v1\x00%d\x00%s\x00%d", base, cell, j%2)))
		want := binary.LittleEndian.Uint64(h[:8])
		if r.Cfg.Seed == nil || *r.Cfg.Seed != want || !strings.HasSuffix(r.Key, ","+strconv.FormatUint(want, 10)) ||
			r.Cfg.SplitSeed == nil || *r.Cfg.SplitSeed != base {
			t.Errorf("run %s: seed %v split %v, want %d split %d", r.Key, r.Cfg.Seed, r.Cfg.SplitSeed, want, base)
		}
	}
	o, _ = testSweepOptions(t.TempDir(), nil, 2)
	if p, err = OpenSweep(o); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for j, r := range p.Pending() {
		if r.Cfg.Seed != nil || !strings.HasSuffix(r.Key, ","+strconv.Itoa(j%2)) {
			t.Errorf("unseeded run %s: seed %v", r.Key, r.Cfg.Seed)
		}
	}
}

// TestSweepPlanResume: an interrupted sweep keeps its rows and their
// receipts; reopened it plans only the missing runs, counts every
// published run once in the total, and summarises all of them.
func TestSweepPlanResume(t *testing.T) {
	dir, base := t.TempDir(), uint64(3)
	o, sw := testSweepOptions(dir, &base, 2)
	p, err := OpenSweep(o)
	if err != nil {
		t.Fatal(err)
	}
	stop := errors.New("stop")
	n := 0
	err = p.Run(context.Background(), sw, func(r SweepResult, row []string) error {
		if r.Err != nil || len(row) != len(testGridColumns) {
			t.Errorf("run %s: %v, row %v", r.Run.Key, r.Err, row)
		}
		if n++; n == 5 {
			return stop
		}
		return nil
	})
	p.Close()
	if !errors.Is(err, stop) {
		t.Fatalf("interrupted sweep: %v", err)
	}
	if p, err = OpenSweep(o); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if len(p.Rows()) != 5 || len(p.Pending()) != 7 || p.Total().Runs != 5 {
		t.Fatalf("resumed: %d rows, %d pending, total over %d runs; want 5, 7, 5", len(p.Rows()), len(p.Pending()), p.Total().Runs)
	}
	if err := p.Run(context.Background(), sw, func(SweepResult, []string) error { return nil }); err != nil {
		t.Fatal(err)
	}
	tot := p.Total()
	if tot.Runs != 12 || tot.Epsilon != nil {
		t.Errorf("total %s, want none over 12 runs (ε = inf runs)", tot)
	}
	var stored SweepSettings
	raw, _ := os.ReadFile(filepath.Join(dir, "sweep.json"))
	if err := json.Unmarshal(raw, &stored); err != nil || stored.PrivacyTotal == nil || stored.PrivacyTotal.Runs != 12 {
		t.Errorf("sweep.json privacy_total %+v (%v), want 12 runs", stored.PrivacyTotal, err)
	}
	// The summary against a slow path: every cell's rows by hand.
	cells, err := p.Summary(SweepSummaryOptions{Metrics: []string{"error"}, Spent: "spent"})
	if err != nil || len(cells) != 6 {
		t.Fatalf("summary %v (%v), want 6 cells", cells, err)
	}
	for _, c := range cells {
		var errs []float64
		for _, r := range p.Rows() {
			e, _ := strconv.ParseFloat(r[1], 64)
			l, _ := strconv.ParseFloat(r[2], 64)
			if e == c.Cell[0] && l == c.Cell[1] {
				v, _ := strconv.ParseFloat(r[4], 64)
				errs = append(errs, v)
			}
		}
		mean := (errs[0] + errs[1]) / 2
		sd := math.Abs(errs[0]-errs[1]) / math.Sqrt2
		spent := "1.0000"
		if math.IsInf(c.Cell[0], 1) {
			spent = "inf"
		}
		if c.Runs != 2 || math.Abs(c.Mean[0]-mean) > 1e-12 || math.Abs(c.SD[0]-sd) > 1e-12 || c.Spent != spent {
			t.Errorf("cell %v: %+v, want mean %g sd %g spent %s", c.Cell, c, mean, sd, spent)
		}
	}
	if _, err := p.Summary(SweepSummaryOptions{Metrics: []string{"nope"}}); err == nil {
		t.Error("a summary of a missing column was accepted")
	}
}

// TestSweepPlanUnderivedSeeds: a seeded sweep made before per-cell seeds
// (sweep.json without seed_derivation), whose runs used other noise seeds,
// is refused rather than extended with a second seed rule.
func TestSweepPlanUnderivedSeeds(t *testing.T) {
	dir, base := t.TempDir(), uint64(40)
	o, _ := testSweepOptions(dir, &base, 2)
	p, err := OpenSweep(o)
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	path := filepath.Join(dir, "sweep.json")
	var fields map[string]any
	raw, _ := os.ReadFile(path)
	json.Unmarshal(raw, &fields)
	delete(fields, "seed_derivation")
	raw, _ = json.Marshal(fields)
	os.WriteFile(path, raw, 0o644)
	if _, err := OpenSweep(o); err == nil || !strings.Contains(err.Error(), "cannot be extended") {
		t.Errorf("a sweep without seed_derivation: %v, want it refused", err)
	}
}

// TestMeanSD against the closed form for three values.
func TestMeanSD(t *testing.T) {
	m, sd := MeanSD([]float64{1, 2, 4})
	if m != 7.0/3 || math.Abs(sd-math.Sqrt(((1-m)*(1-m)+(2-m)*(2-m)+(4-m)*(4-m))/2)) > 1e-15 {
		t.Errorf("MeanSD = %g, %g", m, sd)
	}
	if m, sd := MeanSD([]float64{5}); m != 5 || sd != 0 {
		t.Errorf("MeanSD of one value = %g, %g", m, sd)
	}
}
