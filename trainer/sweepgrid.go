package trainer

// The one grid sweep: a grid of settings, one seed rule, one resumable
// results file and one privacy ledger, shared by every sweep fairdp makes
// (the SGD family and SteFFLe, DP post-processing and the oracle learner).

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// FormatSweepValue writes a grid value the same way every time, since it is
// part of a run's key in sweep.csv: the shortest decimal that reads back as
// v, and "inf" for +∞ (ε = inf: not private).
func FormatSweepValue(v float64) string {
	if math.IsInf(v, 1) {
		return "inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// SweepAxis is one swept setting: its sweep.csv column and its values.
type SweepAxis struct {
	Column string
	Values []float64
}

// SweepGrid is a sweep's grid: every combination of the axes' values (the
// first axis varies slowest), Seeds runs each. Prefix holds constant
// leading key cells (the algorithm of a post-processing sweep), so a run's
// key in sweep.csv is Prefix, the axes' values and the seed.
type SweepGrid struct {
	Prefix []string
	Axes   []SweepAxis
	Seeds  int
}

// Cells lists the grid's cells in sweep order: each is one value per axis.
func (g SweepGrid) Cells() [][]float64 {
	cells := [][]float64{{}}
	for _, ax := range g.Axes {
		var next [][]float64
		for _, c := range cells {
			for _, v := range ax.Values {
				next = append(next, append(append([]float64(nil), c...), v))
			}
		}
		cells = next
	}
	return cells
}

// CellKey is the cell's leading sweep.csv cells, before the seed.
func (g SweepGrid) CellKey(cell []float64) []string {
	key := append([]string(nil), g.Prefix...)
	for _, v := range cell {
		key = append(key, FormatSweepValue(v))
	}
	return key
}

// KeyColumns is the number of leading sweep.csv cells that name a run: the
// prefix, the axes and the seed.
func (g SweepGrid) KeyColumns() int { return len(g.Prefix) + len(g.Axes) + 1 }

// Size is the number of runs of the whole grid.
func (g SweepGrid) Size() int {
	n := g.Seeds
	for _, ax := range g.Axes {
		n *= len(ax.Values)
	}
	return n
}

// SweepOptions describe a grid sweep for OpenSweep.
type SweepOptions struct {
	// Dir receives sweep.json (Settings, the seed rule and the privacy
	// total), sweep.csv (one row per finished run) and receipts.jsonl.
	Dir  string
	Grid SweepGrid
	// Columns is sweep.csv's header; its first Grid.KeyColumns() name a run.
	Columns []string
	// Settings are the runs' settings without the grid axes (sweep.json's
	// config): a resumed sweep must have the same.
	Settings Config
	// Seed is the base seed of a reproducible sweep (nil: every run's
	// noise comes from crypto/rand and the seed column is the run's index).
	Seed *uint64
	// Configure is the configuration of a cell (Settings with the cell's
	// values); OpenSweep sets its Seed and SplitSeed.
	Configure func(cell []float64) Config
	// Row is a finished run's sweep.csv row (len(Columns) cells, its key
	// first).
	Row func(run SweepRun, rep *Report) []string
	// Total are the choices about the sweep's privacy total.
	Total SweepTotalOptions
	// LogHint is added to the error of a sweep.csv whose header does not
	// match Columns.
	LogHint string
	// OldColumns are headers earlier fairdp versions wrote for this sweep,
	// each a prefix of Columns (columns are only ever added at the end): a
	// sweep.csv with one is rewritten with Columns, its rows' new cells
	// empty, and resumed.
	OldColumns [][]string
}

// SweepPlan is an opened grid sweep: its settings checked against the
// directory, its results file and privacy ledger open, and the runs still
// to do.
//
// Seed rule (one for every sweep): with a base seed S, run i of the cell
// with key cells K gets the noise seed SweepSeed(S, K joined by commas, i),
// and every run shares the data split of S (Config.SplitSeed), so a row is
// the run of `fairdp train --seed SEED --split-seed S` and no two cells
// share noise (OpenSweep refuses to resume a sweep.json that names
// another rule). Without a base seed run i's noise comes from
// crypto/rand and its seed cell is i.
type SweepPlan struct {
	opts     SweepOptions
	settings SweepSettings
	log      *SweepLog
	receipts *SweepReceipts
	privacy  *SweepPrivacy
	pending  []SweepRun
}

// OpenSweep creates (or resumes) the sweep in o.Dir. A resumed sweep keeps
// its rows and counts them in the privacy total before anything runs.
func OpenSweep(o SweepOptions) (*SweepPlan, error) {
	if o.Grid.Seeds < 1 {
		return nil, fmt.Errorf("sweep: %d seeds per cell, want ≥ 1", o.Grid.Seeds)
	}
	if o.Configure == nil || o.Row == nil {
		return nil, errors.New("sweep: SweepOptions.Configure and Row are required")
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	p := &SweepPlan{opts: o, settings: SweepSettings{Version: Version, Seeded: o.Seed != nil}}
	if o.Seed != nil {
		p.settings.BaseSeed, p.settings.SeedDerivation = *o.Seed, SweepSeedDerivation
	}
	if err := CheckSweepSettings(o.Dir, o.Settings, &p.settings); err != nil {
		return nil, err
	}
	if p.settings.Seeded && p.settings.SeedDerivation != SweepSeedDerivation {
		return nil, fmt.Errorf("%s: a seeded sweep whose runs' seeds are not %q (seed_derivation %q) was made by an earlier fairdp "+
			"whose runs used other noise seeds: it cannot be extended; use another output directory",
			filepath.Join(o.Dir, "sweep.json"), SweepSeedDerivation, p.settings.SeedDerivation)
	}
	var err error
	if p.log, err = openSweepLog(filepath.Join(o.Dir, "sweep.csv"), o.Columns, o.OldColumns, o.Grid.KeyColumns()); err != nil {
		if o.LogHint != "" {
			err = fmt.Errorf("%w; %s", err, o.LogHint)
		}
		return nil, err
	}
	if p.receipts, err = openSweepReceipts(filepath.Join(o.Dir, "receipts.jsonl")); err != nil {
		p.log.Close()
		return nil, err
	}
	p.privacy = publishedPrivacy(p.log, p.receipts, o.Total)
	if p.privacy.Len() > 0 {
		if err := writeSweepTotal(o.Dir, p.privacy.Total()); err != nil {
			p.Close()
			return nil, err
		}
	}
	for _, cell := range o.Grid.Cells() {
		key := o.Grid.CellKey(cell)
		for i := range o.Grid.Seeds {
			cfg := o.Configure(cell)
			seed := p.seed(strings.Join(key, ","), i)
			if p.settings.Seeded {
				split := p.settings.BaseSeed
				cfg.Seed, cfg.SplitSeed = &seed, &split
			}
			if k := strings.Join(append(key, strconv.FormatUint(seed, 10)), ","); !p.log.Done(k) {
				p.pending = append(p.pending, SweepRun{Key: k, Cfg: cfg})
			}
		}
	}
	return p, nil
}

// seed is run i's seed in the cell (see SweepPlan).
func (p *SweepPlan) seed(cell string, i int) uint64 {
	if !p.settings.Seeded {
		return uint64(i)
	}
	return SweepSeed(p.settings.BaseSeed, cell, i)
}

// Pending are the runs without a row yet, in grid order.
func (p *SweepPlan) Pending() []SweepRun { return p.pending }

// Settings is the sweep's sweep.json as opened (the seed rule it keeps).
func (p *SweepPlan) Settings() SweepSettings { return p.settings }

// Rows are sweep.csv's rows (without the header) in file order.
func (p *SweepPlan) Rows() [][]string { return p.log.Rows() }

// Total is the guarantee of publishing every run with a row.
func (p *SweepPlan) Total() SweepTotal { return p.privacy.Total() }

// Run trains the pending runs on sw and calls finished once per run as it
// ends (never concurrently). A run that succeeded is published before
// finished sees it: its receipt and the new privacy total reach the disk,
// then its row (the release) is appended, and row is that row; a failed
// run has r.Err set, row nil and no row. Errors from finished or from
// writing stop the sweep as Sweep.Run does.
func (p *SweepPlan) Run(ctx context.Context, sw *Sweep, finished func(r SweepResult, row []string) error) error {
	return sw.Run(ctx, p.pending, func(r SweepResult) error {
		if r.Err != nil {
			return finished(r, nil)
		}
		row := p.opts.Row(r.Run, r.Report)
		if err := p.receipts.Append(r.Run.Key, r.Report.Privacy); err != nil {
			return err
		}
		p.privacy.Add(r.Run.Key, r.Report.Privacy)
		if err := writeSweepTotal(p.opts.Dir, p.privacy.Total()); err != nil {
			return err
		}
		if err := p.log.Append(row); err != nil {
			return err
		}
		return finished(r, row)
	})
}

// Close closes the results and receipts files.
func (p *SweepPlan) Close() error {
	return errors.Join(p.log.Close(), p.receipts.Close())
}
