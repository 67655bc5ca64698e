package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/fairdp/fairdp/fermi/federated"
	"github.com/fairdp/fairdp/linear"
	"github.com/fairdp/fairdp/trainer"
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

// runSweep is `fairdp sweep`.
func runSweep(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if algo, _ := flagValue(args, "algo"); trainer.AlgoName(algo) == linear.PostprocName || trainer.AlgoName(algo) == linear.OracleName {
		return runPostprocSweep(ctx, args, stdout, stderr)
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
	neutral := base // the settings without the grid axes
	neutral.Fair.Lambda, neutral.Privacy.Epsilon = 0, math.Inf(1)
	if ax.federated {
		neutral.Federation.Silos, neutral.Federation.Heterogeneity = 0, 0
	}
	grid := ax.grid(seeds)
	opts := ax.options(dir, grid, base, neutral, cfg.Seed)
	plan, err := trainer.OpenSweep(opts)
	if err != nil {
		return err
	}
	defer plan.Close()
	total, runs := grid.Size(), len(plan.Pending())
	sw, err := trainer.NewSweep(base, plan.Settings().BaseSeed, workers)
	if err != nil {
		return err
	}
	gridText := ""
	if ax.federated {
		gridText = fmt.Sprintf("%d N × %d h × ", len(ax.silos), len(ax.hets))
	}
	fmt.Fprintf(stdout, "fairdp sweep: %s on %s (%d train / %d test), %s%d ε × %d λ × %d seeds = %d runs, %d already in %s, %d workers\n",
		base.Algo, sw.Train.Name, sw.Train.N(), sw.Test.N(), gridText, len(epsilons), len(lambdas), seeds, total,
		total-runs, filepath.Join(dir, "sweep.csv"), min(workers, max(1, runs)))
	start, done, failed := time.Now(), total-runs, 0
	err = plan.Run(ctx, sw, func(r trainer.SweepResult, row []string) error {
		if r.Err != nil {
			failed++
			fmt.Fprintf(stdout, "run %s failed: %v\n", r.Run.Key, r.Err)
			return nil
		}
		done++
		k, cell := grid.KeyColumns(), ""
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
	summary, err := plan.Summary(trainer.SweepSummaryOptions{Metrics: []string{"error", "violation"}, Spent: "spent_epsilon"})
	if err != nil {
		return err
	}
	printSweepSummary(stdout, summary, base.Fair.Fairness, ax.federated)
	printSweepTotal(stdout, plan.Total())
	plots, err := plotSweep(plan, base, ax, summary)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s and %s\n", filepath.Join(dir, "sweep.csv"), strings.Join(plots, ", "))
	if failed > 0 {
		return fmt.Errorf("sweep: %d runs failed (see above); run the same command to retry them", failed)
	}
	return nil
}

// sweepAxes are the values of a sweep's grid flags: (N, h) only for
// --algo steffle.
type sweepAxes struct {
	federated         bool
	silos             []int
	hets              []float64
	epsilons, lambdas []float64
}

// grid is the library's grid: N, h (--algo steffle only), ε, λ.
func (a sweepAxes) grid(seeds int) trainer.SweepGrid {
	g := trainer.SweepGrid{Seeds: seeds, Axes: []trainer.SweepAxis{{Column: "epsilon", Values: a.epsilons}, {Column: "lambda", Values: a.lambdas}}}
	if a.federated {
		silos := make([]float64, len(a.silos))
		for i, n := range a.silos {
			silos[i] = float64(n)
		}
		g.Axes = append([]trainer.SweepAxis{{Column: "silos", Values: silos}, {Column: "heterogeneity", Values: a.hets}}, g.Axes...)
	}
	return g
}

// options are the library's sweep options for the grid: each cell is base
// with the cell's N, h, ε and λ; neutral (base without the axes) goes to
// sweep.json.
func (a sweepAxes) options(dir string, grid trainer.SweepGrid, base, neutral trainer.Config, seed *uint64) trainer.SweepOptions {
	opts := trainer.SweepOptions{Dir: dir, Grid: grid, Columns: trainer.SweepColumns, Settings: neutral, Seed: seed,
		Configure: func(cell []float64) trainer.Config {
			c := base
			if a.federated {
				c.Federation.Silos, c.Federation.Heterogeneity = int(cell[0]), cell[1]
				cell = cell[2:]
			}
			c.Privacy.Epsilon, c.Fair.Lambda = cell[0], cell[1]
			return c
		},
		Row: trainer.SweepRow,
	}
	if a.federated {
		opts.Columns = append(slices.Clone(federationColumns), trainer.SweepColumns...)
		opts.Total.BasicOnly = federatedBasicOnly
		opts.LogHint = fmt.Sprintf("a --algo steffle sweep.csv starts with the columns %s (sweeps made before they existed cannot be resumed: use another --out)",
			strings.Join(federationColumns, ","))
	}
	return opts
}
