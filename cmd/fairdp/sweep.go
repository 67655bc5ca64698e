package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"fairdp/dpops/accounting"
	"fairdp/fermi/federated"
	"fairdp/trainer"
)

const sweepSynopsis = `sweep --algo fermi --lambda L1,L2,.. --epsilon E1,..,inf --seeds N --out DIR [train flags]
       sweep --algo steffle --silos N1,N2,.. --heterogeneity H1,H2,.. --lambda .. --epsilon .. --seeds N --out DIR

Trains every (ε, λ) with N seeds, in parallel (--workers, default: all cores,
one core per run), on data loaded once. DIR/sweep.csv gets one row per finished
run (appended and synced as each run ends), DIR/pareto.png plots test error
against the fairness violation (--fairness), one curve per ε (mean over seeds,
error bars one standard deviation), and a summary table is printed.
Publishing every run costs more privacy than any one run: each run's receipt
goes to DIR/receipts.jsonl and DIR/sweep.json's privacy_total states the
guarantee of all runs with a row (RDP-composed where the runs' mechanisms
allow, at their largest δ, when that beats basic composition Σε at Σδ; any
ε = inf run makes it infinite), printed under the summary. Run the
same command again to resume an interrupted sweep: finished runs are kept.
The data split comes from --seed (default 0); with --seed S run i of a cell
gets its own seed, derived from S, the cell and i (sweep.csv's seed column;
bit-reproducible, NOT secure noise; the row is the run of fairdp train
--seed SEED --split-seed S), so no two cells share noise; without --seed
the noise comes from crypto/rand. Note that choosing λ or ε by looking at the results
of private runs is itself not covered by any run's privacy receipt.
--algo steffle also sweeps the number of silos N (--silos) and the
heterogeneity h (--heterogeneity): sweep.csv then starts with the columns
silos and heterogeneity, the summary has one row per (N, h, ε, λ), and with
several (N, h) pareto.png has one curve per (N, h) at the first --epsilon
value while pareto-eps-E.png holds the same plot for each ε E.
--algo postproc|oracle runs Jagielski et al.'s sweep (see fairdp sweep --algo postproc -h).`

// federationColumns lead sweep.csv for --algo steffle: with ε, λ and seed
// they name a run.
var federationColumns = []string{"silos", "heterogeneity"}

// sweepAxes is a sweep's grid: (N, h) only for --algo steffle.
type sweepAxes struct {
	federated         bool
	silos             []int
	hets              []float64
	epsilons, lambdas []float64
}

// gridCell is one (N, h, ε, λ) of the grid; N and h are 0 except for
// --algo steffle.
type gridCell struct {
	silos                int
	het, epsilon, lambda float64
}

// cells lists the grid in sweep order: N, then h, ε and λ.
func (a sweepAxes) cells() []gridCell {
	var out []gridCell
	for _, n := range a.silos {
		for _, h := range a.hets {
			for _, e := range a.epsilons {
				for _, l := range a.lambdas {
					out = append(out, gridCell{silos: n, het: h, epsilon: e, lambda: l})
				}
			}
		}
	}
	return out
}

// key is the cell's leading sweep.csv cells, before the seed.
func (a sweepAxes) key(g gridCell) []string {
	key := []string{formatGridValue(g.epsilon), formatGridValue(g.lambda)}
	if a.federated {
		key = append([]string{strconv.Itoa(g.silos), formatGridValue(g.het)}, key...)
	}
	return key
}

// keyCells is the number of leading sweep.csv cells that name a run.
func (a sweepAxes) keyCells() int {
	if a.federated {
		return len(federationColumns) + 3
	}
	return 3
}

// columns is sweep.csv's header for the grid.
func (a sweepAxes) columns() []string {
	if a.federated {
		return append(slices.Clone(federationColumns), trainer.SweepColumns...)
	}
	return trainer.SweepColumns
}

// formatGridValue writes a grid value the same way every time (it is part
// of a run's key in sweep.csv).
func formatGridValue(v float64) string {
	if math.IsInf(v, 1) {
		return "inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// runSweep is `fairdp sweep`.
func runSweep(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if algo, _ := flagValue(args, "algo"); algo == "postproc" || algo == "oracle" {
		return runJagielskiSweep(ctx, args, stdout, stderr)
	}
	cfg := defaultsFor(args)
	if err := applyPreset(&cfg, args); err != nil {
		return err
	}
	fs := newFlagSet("sweep", sweepSynopsis, stderr)
	trainFlags(fs, &cfg)
	federationFlags(fs, &cfg.Federation)
	ax := sweepAxes{silos: []int{cfg.Federation.Silos}, hets: []float64{cfg.Federation.Heterogeneity},
		lambdas: []float64{cfg.Fair.Lambda}, epsilons: []float64{cfg.Privacy.Epsilon}}
	for name, v := range map[string]flag.Value{
		"lambda":        floatsFlag{p: &ax.lambdas, unique: true, check: nonNegative},
		"epsilon":       floatsFlag{p: &ax.epsilons, allowInf: true, unique: true, check: positiveOrInf},
		"heterogeneity": floatsFlag{p: &ax.hets, unique: true, check: unitInterval},
		"silos":         intsFlag{&ax.silos},
	} {
		f := fs.Lookup(name)
		f.Value, f.DefValue = v, v.String()
		f.Usage = "values of " + name + ", comma-separated"
		switch name {
		case "epsilon":
			f.Usage += " (inf: not private)"
		case "silos", "heterogeneity":
			f.Usage += " (--algo steffle)"
		}
	}
	seeds, workers := 1, runtime.GOMAXPROCS(0)
	fs.IntVar(&seeds, "seeds", seeds, "runs (seeds) per grid cell")
	fs.IntVar(&workers, "workers", workers, "runs in parallel")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := rejectFederationFlags(fs, cfg.Algo); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	dataOwnTrainFrac(fs, args, &cfg)
	if err := configRelativePaths(fs, args, &cfg); err != nil {
		return err
	}
	ax.federated = cfg.Algo == federated.Name
	lambdas, epsilons := ax.lambdas, ax.epsilons
	switch {
	case cfg.Out == "":
		return errors.New("sweep: --out DIR is required (sweep.csv and pareto.png go there)")
	case seeds < 1 || workers < 1:
		return fmt.Errorf("sweep: --seeds and --workers must be ≥ 1 (got %d, %d)", seeds, workers)
	}
	for i, n := range ax.silos {
		if slices.Contains(ax.silos[:i], n) {
			return fmt.Errorf("sweep: %d appears twice in --silos", n)
		}
	}
	if cfg.Federation.Mode == trainer.FederationMapping && len(ax.silos)*len(ax.hets) > 1 {
		return errors.New("sweep: with --federation mapping the --mapping file places every record; --silos and --heterogeneity take one value")
	}
	for _, l := range lambdas {
		if l < 0 {
			return fmt.Errorf("sweep: --lambda values must be ≥ 0 (got %v)", l)
		}
	}
	for _, e := range epsilons {
		if !(e > 0) {
			return fmt.Errorf("sweep: --epsilon values must be > 0 or inf (got %v)", e)
		}
	}
	if !ax.federated {
		ax.silos, ax.hets = []int{0}, []float64{0} // one cell; not in the CSV
	}
	dir := cfg.Out
	base := cfg
	base.Out, base.Quiet, base.Seed = "", true, nil
	base.Fair.Lambda, base.Privacy.Epsilon = lambdas[0], epsilons[0]
	if ax.federated {
		base.Federation.Silos, base.Federation.Heterogeneity = ax.silos[0], ax.hets[0]
	} else {
		// Other algorithms ignore the federation: keep it out of
		// sweep.json, so sweeps made before it existed still resume.
		base.Federation = trainer.FederationConfig{}
	}
	if err := base.Validate(); err != nil {
		return err
	}
	settings := trainer.SweepSettings{Version: trainer.Version, Seeded: cfg.Seed != nil}
	if cfg.Seed != nil {
		settings.BaseSeed = *cfg.Seed
		settings.SeedDerivation = trainer.SweepSeedDerivation
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("--out %s: %w", dir, err)
	}
	neutral := base // the settings without the grid axes
	neutral.Fair.Lambda, neutral.Privacy.Epsilon = 0, math.Inf(1)
	if ax.federated {
		neutral.Federation.Silos, neutral.Federation.Heterogeneity = 0, 0
	}
	if err := trainer.CheckSweepSettings(dir, neutral, &settings); err != nil {
		return err
	}
	log, err := trainer.OpenSweepLog(filepath.Join(dir, "sweep.csv"), ax.columns(), ax.keyCells())
	if err != nil {
		if ax.federated {
			err = fmt.Errorf("%w; a --algo steffle sweep.csv starts with the columns %s (sweeps made before they existed cannot be resumed: use another --out)",
				err, strings.Join(federationColumns, ","))
		}
		return err
	}
	defer log.Close()
	ledger, err := openSweepLedger(dir, log, ax.federated, func(row []string) (accounting.Receipt, bool) {
		// Rows of sweeps made before receipts were kept: their ε and δ.
		k := ax.keyCells()
		return legacyReceipt(row[k+2], row[k+3])
	})
	if err != nil {
		return err
	}
	defer ledger.Close()

	var runs []trainer.SweepRun
	for _, g := range ax.cells() {
		for i := range seeds {
			c := base
			c.Privacy.Epsilon, c.Fair.Lambda = g.epsilon, g.lambda
			if ax.federated {
				c.Federation.Silos, c.Federation.Heterogeneity = g.silos, g.het
			}
			seed := uint64(i)
			if settings.Seeded {
				seed = settings.BaseSeed + uint64(i) // sweeps made before per-cell seeds
				if settings.SeedDerivation != "" {
					seed = trainer.SweepSeed(settings.BaseSeed, strings.Join(ax.key(g), ","), i)
					split := settings.BaseSeed
					c.SplitSeed = &split
				}
				c.Seed = &seed
			}
			if k := strings.Join(append(ax.key(g), strconv.FormatUint(seed, 10)), ","); !log.Done(k) {
				runs = append(runs, trainer.SweepRun{Key: k, Cfg: c})
			}
		}
	}
	total := len(ax.silos) * len(ax.hets) * len(epsilons) * len(lambdas) * seeds
	sw, err := trainer.NewSweep(base, settings.BaseSeed, workers)
	if err != nil {
		return err
	}
	grid := ""
	if ax.federated {
		grid = fmt.Sprintf("%d N × %d h × ", len(ax.silos), len(ax.hets))
	}
	fmt.Fprintf(stdout, "fairdp sweep: %s on %s (%d train / %d test), %s%d ε × %d λ × %d seeds = %d runs, %d already in %s, %d workers\n",
		base.Algo, sw.Train.Name, sw.Train.N(), sw.Test.N(), grid, len(epsilons), len(lambdas), seeds, total,
		total-len(runs), filepath.Join(dir, "sweep.csv"), min(workers, max(1, len(runs))))
	start, done, failed := time.Now(), total-len(runs), 0
	err = sw.Run(ctx, runs, func(r trainer.SweepResult) error {
		if r.Err != nil {
			failed++
			fmt.Fprintf(stdout, "run %s failed: %v\n", r.Run.Key, r.Err)
			return nil
		}
		row := trainer.SweepRow(r.Run, r.Report)
		if err := ledger.publish(r.Run.Key, r.Report.Privacy); err != nil {
			return err
		}
		if err := log.Append(row); err != nil {
			return err
		}
		done++
		k, cell := ax.keyCells(), ""
		if ax.federated {
			cell = fmt.Sprintf("N=%s h=%s ", row[0], row[1])
		}
		fmt.Fprintf(stdout, "[%d/%d] %sε=%s λ=%s seed=%s: error %s, violation %s, spent ε %s (%.1f s; %s elapsed)\n",
			done, total, cell, row[k-3], row[k-2], row[k-1], row[k], row[k+1], row[k+2], r.Report.Seconds, time.Since(start).Round(time.Second))
		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintf(stdout, "sweep interrupted: %d of %d runs are in %s; run the same command to resume\n", done, total, dir)
		}
		return err
	}
	summary := summarizeSweep(log.Rows(), ax)
	printSweepSummary(stdout, summary, base.Fair.Fairness, ax.federated)
	printSweepTotal(stdout, ledger.total())
	plots, err := plotSweep(dir, base, ax, summary)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s and %s\n", filepath.Join(dir, "sweep.csv"), strings.Join(plots, ", "))
	if failed > 0 {
		return fmt.Errorf("sweep: %d runs failed (see above); run the same command to retry them", failed)
	}
	return nil
}
