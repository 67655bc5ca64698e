package bench

// DP-FERMI (Lowy et al. 2022): test error and fairness
// violation of private fair logistic regression on Adult, Credit and
// Parkinsons, and of the VGG-like CNN on UTKFace, over λ and ε.
//
// Quick profile (CI, about a minute on 2 cores): Adult with shortened
// training and one seed, plus Credit, Parkinsons and a UTKFace smoke run
// when the shared data is present; it asserts the direction of the effects
// (λ = 0 is the SGD baseline at ε = ∞; a large λ cuts the violation at
// ε = 1 within the budget).
//
//	go test -run FERMIQuick -v ./bench
//
// Full profile (the issue-5 acceptance experiments, 5 seeds):
//
//	FAIRDP_FULL=1 FAIRDP_BENCH_OUT=/tmp/fermi go test -timeout 0 -run FERMIFull -v ./bench
//
// FAIRDP_FERMI_CASES picks cases (comma-separated names, default all),
// FAIRDP_FERMI_LAMBDAS replaces their λ grids,
// FAIRDP_FERMI_SEEDS (default 5) the number of seeds and
// FAIRDP_FERMI_FIRST_SEED (default 1) the first, FAIRDP_FERMI_RESPLIT=1 gives
// run seed i its own 75/25 split (split seed i) instead of split seed 1 for
// every run, FAIRDP_FERMI_WORKERS (default
// GOMAXPROCS) the parallel runs, FAIRDP_FERMI_UTK_LIMIT (default 4000) and
// FAIRDP_FERMI_UTK_EPOCHS (default 4) the UTKFace CPU profile's training
// images and epochs, FAIRDP_FERMI_UTK_SIZE (default 32: smaller than the
// fermi-utkface-cpu preset's 64 so that it fits a shared 2-core machine),
// _LR, _OPTIMIZER, _EPS and _LAMBDAS (default 0,5,20) its learning rate,
// optimizer, ε list and λ list. With FAIRDP_BENCH_OUT every run's numbers go to
// $FAIRDP_BENCH_OUT/fermi_<case>.csv. The tables are printed in markdown
// beside the DP-FERMI reference code's published results (fermiReferenceCode). The GPU-host command for UTKFace at the
// paper's settings is
//
//	fairdp train --preset fermi-utkface-paper --lambda L --out DIR
//
// TestFERMIReferenceRegulariser (also FAIRDP_FULL=1, 4–5 minutes)
// re-implements the paper's reference-code regulariser beside the paper's
// ERMI (Lowy et al. 2022) on Adult at ε = ∞: the evidence for the λ scale in
// bench/results/fermi.md.

import (
	"context"
	"encoding/csv"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/fermi"
	"github.com/fairdp/fairdp/loaders"
	"github.com/fairdp/fairdp/metrics"
	"github.com/fairdp/fairdp/trainer"

	"gonum.org/v1/gonum/floats"
)

// fermiReferenceCode holds the DP-FERMI reference code's cells (test error, DP violation;
// mean of 15 runs, demographic parity, logistic regression). They are the
// outputs of the paper's public reference code (its 1×1 W, one-group
// penalty), not numbers printed in the paper, which has only figures.
var fermiReferenceCode = map[string]map[float64]map[float64][2]float64{
	"adult": {
		0.5:         {0: {.1664, .1956}, 0.5: {.1718, .1001}, 1: {.1876, .0287}},
		1:           {0: {.1585, .2017}, 0.5: {.1663, .0983}, 1: {.1869, .0099}},
		3:           {0: {.1574, .1964}, 0.5: {.1672, .0881}, 1: {.1880, .0118}},
		9:           {0: {.1571, .1932}, 0.5: {.1663, .0937}, 1: {.1885, .0071}},
		math.Inf(1): {0: {.1555, .1980}, 0.5: {.1648, .0895}, 1: {.1869, .0055}},
	},
	"credit":     {1: {0: {.1892, .0214}, 0.5: {.1908, .0153}, 1: {.1934, .0114}}},
	"parkinsons": {1: {0: {.0473, .0733}, 0.5: {.0588, .0472}, 1: {.0865, .0183}}},
}

// fermiCase is one experiment: a preset, changes to it, and the grid.
// load, if set, replaces the trainer's data loading.
type fermiCase struct {
	name     string
	preset   string
	mutate   func(*trainer.Config)
	epsilons []float64
	lambdas  []float64
	load     func(t *testing.T, cfg trainer.Config) (train, test *loaders.Dataset)
}

// fermiCell is the result of one (ε, λ) over the seeds.
type fermiCell struct {
	eps, lambda            float64
	errs, viols, spent     []float64
	dpViols, eoViols, ermi []float64
}

func fermiEnvInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// fermiConfig is the case's base configuration; it skips the test when the
// case needs data files that are absent (Adult is embedded).
func fermiConfig(t *testing.T, c fermiCase) trainer.Config {
	t.Helper()
	cfg := trainer.Defaults()
	if c.preset != "" {
		if err := trainer.ApplyPreset(&cfg, c.preset); err != nil {
			t.Fatal(err)
		}
	}
	cfg.Quiet = true
	if c.mutate != nil {
		c.mutate(&cfg)
	}
	if dir := sharedData(); dir != "" {
		cfg.DataDir = dir
	} else if cfg.Dataset != "adult" {
		t.Skipf("%s needs the shared data (%s): set FAIRDP_DATA", c.name, cfg.Dataset)
	}
	return cfg
}

// fermiGrid trains every (ε, λ) of the case with seeds
// FAIRDP_FERMI_FIRST_SEED (default 1) onwards on one split (split seed 1,
// or split seed = run seed with FAIRDP_FERMI_RESPLIT=1), workers runs at a
// time.
//
// Its seed rule is its own, not trainer.OpenSweep's (SweepSeed), on
// purpose: every recorded DP-FERMI number (results/fermi.md and its CSVs:
// fermi_adult_sweep.csv's 200 runs, the EO, Parkinsons, resplit and
// UTKFace grids) was made with run seeds 1–5 on split seed 1, and a later
// FAIRDP_FERMI_FIRST_SEED extends a recorded grid seed by seed, which
// needs seed i to be i. SweepSeed's derived seeds would change every
// recorded run; re-deriving them is the full profile (85 minutes on 2
// dedicated cores for the Adult sweep alone). FAIRDP_FERMI_RESPLIT's new
// split per run has no form in OpenSweep's rule (one split per sweep).
// The runs themselves go through the one sweep runner's Sweep.
func fermiGrid(t *testing.T, c fermiCase, seeds, workers int) []*fermiCell {
	t.Helper()
	cfg := fermiConfig(t, c)
	resplit := os.Getenv("FAIRDP_FERMI_RESPLIT") == "1"
	if resplit && c.load != nil {
		t.Fatalf("%s: FAIRDP_FERMI_RESPLIT is for the tabular cases only", c.name)
	}
	splitOf := func(seed uint64) uint64 {
		if resplit {
			return seed
		}
		return 1
	}
	newSweep := func(splitSeed uint64) *trainer.Sweep {
		if c.load != nil {
			train, test := c.load(t, cfg)
			return &trainer.Sweep{Train: train, Test: test, Workers: workers}
		}
		sw, err := trainer.NewSweep(cfg, splitSeed, workers)
		if err != nil {
			t.Fatal(err)
		}
		return sw
	}
	firstSeed := fermiEnvInt("FAIRDP_FERMI_FIRST_SEED", 1)
	runsBySplit := map[uint64][]trainer.SweepRun{}
	var runs []trainer.SweepRun
	cells := map[string]*fermiCell{}
	var order []*fermiCell
	for _, e := range c.epsilons {
		for _, l := range c.lambdas {
			key := fmt.Sprint(e, "/", l)
			cell := &fermiCell{eps: e, lambda: l}
			cells[key] = cell
			order = append(order, cell)
			for i := range seeds {
				rc := cfg
				seed := uint64(firstSeed + i)
				rc.Seed, rc.Privacy.Epsilon, rc.Fair.Lambda = &seed, e, l
				run := trainer.SweepRun{Key: key, Cfg: rc}
				runs = append(runs, run)
				runsBySplit[splitOf(seed)] = append(runsBySplit[splitOf(seed)], run)
			}
		}
	}
	var csv *os.File
	if out := os.Getenv("FAIRDP_BENCH_OUT"); out != "" {
		if err := os.MkdirAll(out, 0o755); err != nil {
			t.Fatal(err)
		}
		name := "fermi_" + c.name + ".csv"
		if resplit {
			name = "fermi_" + c.name + "_resplit.csv" // split seed = run seed
		}
		var err error
		if csv, err = os.Create(filepath.Join(out, name)); err != nil {
			t.Fatal(err)
		}
		defer csv.Close()
		fmt.Fprintln(csv, "case,epsilon,lambda,seed,error,dp_violation,eo_violation,spent_epsilon,test_ermi,seconds")
	}
	done := 0
	finished := func(r trainer.SweepResult) error {
		if r.Err != nil {
			return fmt.Errorf("%s run %s: %w", c.name, r.Run.Key, r.Err)
		}
		cell, rep := cells[r.Run.Key], r.Report
		viol := rep.Test.DPViolation
		if r.Run.Cfg.Fair.Fairness == "eo" {
			viol = rep.Test.EOViolation
		}
		spent := math.Inf(1)
		if rep.Privacy.Epsilon != nil {
			spent = *rep.Privacy.Epsilon
		}
		ermi := math.NaN()
		if x := fermi.ResultOf(rep); x != nil {
			ermi = x.ERMI
		}
		cell.errs, cell.viols, cell.spent = append(cell.errs, rep.Test.Error), append(cell.viols, viol), append(cell.spent, spent)
		cell.dpViols, cell.eoViols = append(cell.dpViols, rep.Test.DPViolation), append(cell.eoViols, rep.Test.EOViolation)
		cell.ermi = append(cell.ermi, ermi)
		done++
		if csv != nil {
			fmt.Fprintf(csv, "%s,%v,%v,%d,%.6f,%.6f,%.6f,%.6f,%.6g,%.2f\n", c.name, cell.eps, cell.lambda, *r.Run.Cfg.Seed,
				rep.Test.Error, rep.Test.DPViolation, rep.Test.EOViolation, spent, ermi, rep.Seconds)
		}
		if done%max(1, len(runs)/10) == 0 {
			t.Logf("%s: %d/%d runs", c.name, done, len(runs))
		}
		return nil
	}
	splits := slices.Sorted(maps.Keys(runsBySplit))
	for _, split := range splits {
		sw := newSweep(split)
		if split == splits[0] {
			t.Logf("%s: %d train / %d test records (split seed %d of %d)", c.name, sw.Train.N(), sw.Test.N(), split, len(splits))
		}
		if err := sw.Run(context.Background(), runsBySplit[split], finished); err != nil {
			t.Fatal(err)
		}
	}
	return order
}

// fermiTable prints the grid as a markdown table, with the reference code's cell
// where fermiReferenceCode has one.
func fermiTable(t *testing.T, c fermiCase, cfg trainer.Config, cells []*fermiCell) {
	t.Helper()
	var b strings.Builder
	viol := "DP violation"
	if cfg.Fair.Fairness == "eo" {
		viol = "EO violation"
	}
	fmt.Fprintf(&b, "\n%s (%s, scope %s, clip %g, %d epochs, batch %d, %s lr %g, η_W %g):\n\n",
		c.name, cfg.Dataset, cfg.Fair.Scope, cfg.Privacy.Clip, cfg.Epochs, cfg.Batch, cfg.Optimizer, cfg.LR, cfg.Fair.LRW)
	fmt.Fprintf(&b, "| ε | λ | runs | test error | %s | test ERMI | spent ε | reference code (error / DP violation) |\n|---|---|---|---|---|---|---|---|\n", viol)
	for _, cell := range cells {
		e, esd := trainer.MeanSD(cell.errs)
		v, vsd := trainer.MeanSD(cell.viols)
		m, _ := trainer.MeanSD(cell.ermi)
		ref := ""
		if p, ok := fermiReferenceCode[cfg.Dataset][cell.eps][cell.lambda]; ok && cfg.Fair.Fairness == "dp" {
			ref = fmt.Sprintf("%.4f / %.4f", p[0], p[1])
		}
		eps := "∞"
		if !math.IsInf(cell.eps, 1) {
			eps = fmt.Sprint(cell.eps)
		}
		fmt.Fprintf(&b, "| %s | %g | %d | %.4f ± %.4f | %.4f ± %.4f | %.4f | %s | %s |\n",
			eps, cell.lambda, len(cell.errs), e, esd, v, vsd, m, fermiSpent(cell.spent), ref)
	}
	t.Log(b.String())
}

func fermiSpent(v []float64) string {
	m := slices.Max(v)
	if math.IsInf(m, 1) {
		return "∞"
	}
	return fmt.Sprintf("%.4f", m)
}

// fermiCheck fails the test unless the cell (ε, λ) exists and f holds.
func fermiCheck(t *testing.T, cells []*fermiCell, eps, lambda float64, what string, f func(c *fermiCell) bool) {
	t.Helper()
	for _, c := range cells {
		if c.eps == eps && c.lambda == lambda {
			if !f(c) {
				e, _ := trainer.MeanSD(c.errs)
				v, _ := trainer.MeanSD(c.viols)
				t.Errorf("ε=%v λ=%v: %s (error %.4f, violation %.4f, spent %s)", eps, lambda, what, e, v, fermiSpent(c.spent))
			}
			return
		}
	}
	t.Errorf("no cell ε=%v λ=%v", eps, lambda)
}

func cellMean(c *fermiCell, v []float64) float64 { m, _ := trainer.MeanSD(v); return m }

// fermiDirection asserts the effect of λ: the largest λ cuts the violation
// below factor times λ = 0's, within the budget.
func fermiDirection(t *testing.T, cells []*fermiCell, eps float64, lambdas []float64, factor float64) {
	t.Helper()
	var base *fermiCell
	for _, c := range cells {
		if c.eps == eps && c.lambda == 0 {
			base = c
		}
	}
	if base == nil {
		t.Fatalf("no λ = 0 cell at ε = %v", eps)
	}
	top := slices.Max(lambdas)
	what := fmt.Sprintf("want the violation below %g × λ = 0's (%.4f) and ε within budget", factor, cellMean(base, base.viols))
	fermiCheck(t, cells, eps, top, what, func(c *fermiCell) bool {
		return cellMean(c, c.viols) < factor*cellMean(base, base.viols) && (math.IsInf(eps, 1) || slices.Max(c.spent) <= eps)
	})
}

// fermiNearReferenceCode checks the acceptance for Credit and Parkinsons: test
// error and DP violation within tol of the reference code's cells (fermiReferenceCode).
func fermiNearReferenceCode(t *testing.T, cells []*fermiCell, dataset string, eps float64, lambdas []float64, tol float64) {
	t.Helper()
	for _, l := range lambdas {
		p := fermiReferenceCode[dataset][eps][l]
		fermiCheck(t, cells, eps, l, fmt.Sprintf("want error and violation within %g of the reference code's %.4f / %.4f", tol, p[0], p[1]),
			func(c *fermiCell) bool {
				return math.Abs(cellMean(c, c.errs)-p[0]) <= tol && math.Abs(cellMean(c, c.viols)-p[1]) <= tol
			})
	}
}

// fermiEnvFloats reads a comma-separated list of numbers.
func fermiEnvFloats(name string, def []float64) []float64 {
	var out []float64
	for _, f := range strings.Split(os.Getenv(name), ",") {
		if v, err := strconv.ParseFloat(strings.TrimSpace(f), 64); err == nil {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		return def
	}
	return out
}

// fermiUTKSubset loads every UTKFace image (decoded once into the
// trainer's cache), splits 75/25 with seed 1 and keeps random subsets of
// FAIRDP_FERMI_UTK_LIMIT (default 4000) training and a third as many test
// images, so that the CPU profile sees all ages and races (--limit would
// keep the first files by name, i.e. a few ages only), and standardises
// the pixels with ImageNet's channel means and deviations.
func fermiUTKSubset(t *testing.T, cfg trainer.Config) (train, test *loaders.Dataset) {
	t.Helper()
	cache := filepath.Join(os.TempDir(), "fairdp-cache")
	os.MkdirAll(cache, 0o755)
	all, stats, err := loaders.LoadUTKFace(filepath.Join(cfg.DataDir, "utkface", "UTKFace"),
		loaders.UTKOptions{Size: cfg.ImageSize, CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("UTKFace: %d images, %d skipped", stats.Loaded, len(stats.Skipped))
	_, src := dpops.NewRand(new(uint64))
	r := src.Derive("data")
	// Fixed, public per-channel statistics (ImageNet's): standardising the
	// pixels helps the CNN without spending privacy on the data's own.
	all.Standardise, all.Mean, all.Std = true, []float64{0.485, 0.456, 0.406}, []float64{0.229, 0.224, 0.225}
	train, test = loaders.Split(all, cfg.TrainFrac, r)
	limit := fermiEnvInt("FAIRDP_FERMI_UTK_LIMIT", 4000)
	if limit < train.N() {
		train, _ = loaders.Split(train, float64(limit)/float64(train.N()), r)
		test, _ = loaders.Split(test, float64(limit/3)/float64(test.N()), r)
	}
	return train, test
}

// TestFERMIQuick is the CI profile.
func TestFERMIQuick(t *testing.T) {
	inf := math.Inf(1)
	short := func(epochs int, more func(*trainer.Config)) func(*trainer.Config) {
		return func(c *trainer.Config) {
			c.Epochs = epochs
			if more != nil {
				more(c)
			}
		}
	}
	t.Run("adult-inf-baseline", func(t *testing.T) {
		// The default job's settings (20 epochs, Adam) without noise: λ = 0
		// is exactly `--algo sgd`, the foundation's baseline.
		c := fermiCase{name: "adult-inf", mutate: short(20, nil), epsilons: []float64{inf}, lambdas: []float64{0, 8}}
		cells := fermiGrid(t, c, 1, 2)
		cfg := fermiConfig(t, c)
		cfg.Algo, cfg.Privacy.Epsilon = "sgd", inf
		seed := uint64(1)
		cfg.Seed = &seed
		sw, err := trainer.NewSweep(cfg, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		var sgdErr float64
		err = sw.Run(context.Background(), []trainer.SweepRun{{Key: "sgd", Cfg: cfg}}, func(r trainer.SweepResult) error {
			if r.Err == nil {
				sgdErr = r.Report.Test.Error
			}
			return r.Err
		})
		if err != nil {
			t.Fatal(err)
		}
		fermiCheck(t, cells, inf, 0, fmt.Sprintf("want exactly the SGD baseline's test error %.4f", sgdErr), func(c *fermiCell) bool {
			return c.errs[0] == sgdErr
		})
		fermiDirection(t, cells, inf, c.lambdas, 0.5)
		fermiTable(t, c, fermiConfig(t, c), cells)
	})
	for _, c := range []fermiCase{
		// The sensitive-scope cases run at ε = 20: that scope is charged
		// without amplification by sampling (the exact s-independent terms
		// show the batch), so at ε = 1 its noise is about 35 times the
		// subsampled analysis's and λ = 8 costs error .35; ε = 20 gives
		// about the noise ε = 1 was credited with before, so the cases
		// still check that the regulariser works under this scope.
		{name: "adult-dp-sensitive", preset: "fermi-adult", mutate: short(40, nil), epsilons: []float64{20}, lambdas: []float64{0, 8}},
		{name: "adult-dp-all", preset: "fermi-adult", mutate: short(40, func(c *trainer.Config) { c.Fair.Scope, c.Privacy.Clip = "all", 2 }),
			epsilons: []float64{1}, lambdas: []float64{0, 8}},
		{name: "adult-eo-sensitive", preset: "fermi-adult", mutate: short(40, func(c *trainer.Config) { c.Fair.Fairness = "eo" }),
			epsilons: []float64{20}, lambdas: []float64{0, 8}},
		{name: "parkinsons", preset: "fermi-parkinsons", mutate: short(100, nil), epsilons: []float64{1}, lambdas: []float64{0, 8}},
		{name: "credit", preset: "fermi-credit", mutate: short(20, nil), epsilons: []float64{1}, lambdas: []float64{0, 8}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cells := fermiGrid(t, c, 1, 2)
			fermiTable(t, c, fermiConfig(t, c), cells)
			switch c.name {
			case "adult-dp-sensitive", "adult-dp-all":
				eps := c.epsilons[0]
				fermiDirection(t, cells, eps, c.lambdas, 0.5)
				fermiCheck(t, cells, eps, 8, "want test error ≤ 0.20", func(c *fermiCell) bool { return c.errs[0] <= 0.20 })
			case "adult-eo-sensitive":
				fermiDirection(t, cells, c.epsilons[0], c.lambdas, 0.7)
			default:
				// Credit and Parkinsons are nearly fair already at λ = 0
				// (reference code at λ = 0: DP violation .02 and .07, and the violation
				// depends on the split): check that the private model is as
				// accurate as the reference code's λ = 0 cell, within budget.
				p := fermiReferenceCode[c.name][1][0]
				fermiCheck(t, cells, 1, 0, fmt.Sprintf("want test error within 0.03 of the reference code's %.4f", p[0]), func(c *fermiCell) bool {
					return math.Abs(c.errs[0]-p[0]) <= 0.03 && c.spent[0] <= 1
				})
			}
		})
	}
	t.Run("utkface-smoke", func(t *testing.T) {
		// The image path end to end on 200 faces at 16×16: the VGG trains,
		// the receipt stays within ε = 100, the report has ERMI.
		c := fermiCase{name: "utkface-smoke", preset: "fermi-utkface-cpu", mutate: func(c *trainer.Config) {
			c.Limit, c.ImageSize, c.Epochs = 200, 16, 1
		}, epsilons: []float64{100}, lambdas: []float64{1}}
		cells := fermiGrid(t, c, 1, 1)
		fermiCheck(t, cells, 100, 1, "want a finite ERMI within the budget", func(c *fermiCell) bool {
			return c.spent[0] <= 100 && !math.IsNaN(c.ermi[0]) && !math.IsInf(c.ermi[0], 0)
		})
	})
}

// TestFERMIFull is the issue-5 acceptance profile (FAIRDP_FULL=1).
func TestFERMIFull(t *testing.T) {
	if os.Getenv("FAIRDP_FULL") != "1" {
		t.Skip("full profile: set FAIRDP_FULL=1 (about an hour on 2 cores)")
	}
	inf := math.Inf(1)
	seeds := fermiEnvInt("FAIRDP_FERMI_SEEDS", 5)
	workers := fermiEnvInt("FAIRDP_FERMI_WORKERS", runtime.GOMAXPROCS(0))
	lambdas := []float64{0, 0.25, 0.5, 1, 1.5, 2, 4, 8}
	utk := func(c *trainer.Config) {
		c.Epochs = fermiEnvInt("FAIRDP_FERMI_UTK_EPOCHS", 4)
		c.ImageSize = fermiEnvInt("FAIRDP_FERMI_UTK_SIZE", 32)
		if lr := fermiEnvFloats("FAIRDP_FERMI_UTK_LR", nil); lr != nil {
			c.LR = lr[0]
		}
		if opt := os.Getenv("FAIRDP_FERMI_UTK_OPTIMIZER"); opt != "" {
			c.Optimizer = trainer.OptimizerName(opt)
		}
	}
	cases := []fermiCase{
		{name: "adult-dp-inf", preset: "fermi-adult", epsilons: []float64{inf}, lambdas: []float64{0, 0.5, 1, 2, 4, 8}},
		{name: "adult-dp-sensitive", preset: "fermi-adult", epsilons: []float64{0.5, 1, 3, 9}, lambdas: lambdas},
		{name: "adult-dp-all", preset: "fermi-adult", mutate: func(c *trainer.Config) { c.Fair.Scope, c.Privacy.Clip = "all", 2 },
			epsilons: []float64{1}, lambdas: lambdas},
		// Equalized odds with the fermi-adult-eo preset (η_θ 0.005), and
		// with fermi-adult's η_θ 0.05, whose EO violation stalls at ≈ .055.
		{name: "adult-eo", preset: "fermi-adult-eo", epsilons: []float64{1}, lambdas: []float64{0, 1, 2, 3, 4, 5, 6, 8}},
		{name: "adult-eo-lr0.05", preset: "fermi-adult", mutate: func(c *trainer.Config) { c.Fair.Fairness = "eo" },
			epsilons: []float64{1}, lambdas: []float64{0, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 2, 4, 8}},
		{name: "credit", preset: "fermi-credit", epsilons: []float64{1}, lambdas: []float64{0, 0.5, 1, 2, 4, 8}},
		{name: "parkinsons", preset: "fermi-parkinsons", epsilons: []float64{1}, lambdas: []float64{0, 0.5, 1, 2, 4, 8}},
		{name: "utkface-cpu", preset: "fermi-utkface-cpu", mutate: utk, epsilons: fermiEnvFloats("FAIRDP_FERMI_UTK_EPS", []float64{100}),
			lambdas: fermiEnvFloats("FAIRDP_FERMI_UTK_LAMBDAS", []float64{0, 5, 20}), load: fermiUTKSubset},
	}
	want := map[string]bool{}
	for _, n := range strings.Split(os.Getenv("FAIRDP_FERMI_CASES"), ",") {
		if n != "" {
			want[n] = true
		}
	}
	for _, c := range cases {
		if len(want) > 0 && !want[c.name] {
			continue
		}
		c.lambdas = fermiEnvFloats("FAIRDP_FERMI_LAMBDAS", c.lambdas)
		t.Run(c.name, func(t *testing.T) {
			cells := fermiGrid(t, c, seeds, workers)
			fermiTable(t, c, fermiConfig(t, c), cells)
			switch c.name {
			case "adult-dp-inf":
				fermiCheck(t, cells, inf, 0, "want the SGD baseline's error (≈ .156)", func(c *fermiCell) bool {
					return math.Abs(cellMean(c, c.errs)-0.156) < 0.005
				})
				fermiDirection(t, cells, inf, c.lambdas, 0.5)
			case "adult-dp-sensitive", "adult-dp-all":
				reached := slices.ContainsFunc(cells, func(c *fermiCell) bool {
					return c.eps == 1 && cellMean(c, c.viols) <= 0.03 && cellMean(c, c.errs) <= 0.20
				})
				if !reached {
					t.Error("no λ reaches DP violation ≤ 0.03 at test error ≤ 0.20 with ε = 1")
				}
				fermiDirection(t, cells, 1, c.lambdas, 0.5)
			case "adult-eo", "adult-eo-lr0.05":
				// Only the preset's η_θ is expected to reach the acceptance
				// (with 0.05 the best λ stalls at ≈ .055).
				reached := slices.ContainsFunc(cells, func(c *fermiCell) bool { return cellMean(c, c.viols) <= 0.05 && cellMean(c, c.errs) <= 0.24 })
				if c.name == "adult-eo" && !reached {
					t.Error("no λ reaches EO violation ≤ 0.05 at test error ≤ 0.24 with ε = 1")
				}
				// The conditional ERMI the method minimises falls with λ even
				// where the hard-prediction EO violation does not.
				fermiCheck(t, cells, 1, slices.Max(c.lambdas), "want the test ERMI below a quarter of λ = 0's", func(top *fermiCell) bool {
					return cellMean(top, top.ermi) < 0.25*cellMean(cells[0], cells[0].ermi)
				})
			case "credit", "parkinsons":
				fermiNearReferenceCode(t, cells, c.name, 1, []float64{0, 0.5, 1}, 0.03)
			case "utkface-cpu":
				fermiDirection(t, cells, 100, c.lambdas, 1)
			}
		})
	}
}

// fermiRefReg selects which terms of ψ_i (Lowy et al. 2022, Theorem C.1) a regulariser
// keeps: the groups r (rows of W) and the class columns j of F = (1−p, p).
// All groups and both columns is ERMI; the public reference code's
// logistic path (dp_fermi.py in devanshgupta160/Stochastic-Differentially-
// Private-and-Fair-Learning) keeps F's single sigmoid column (out_attr = 1)
// and, through torch.trace of the 1×k matrix W·p̂(ŷ,s)·P_s^{-1/2}, only the
// group in column 0 of its one-hot s.
type fermiRefReg struct {
	name   string
	groups []int // rows of W
	cols   []int // columns of F: 0 is 1−p, 1 is p
}

// fermiRefSGDA trains logistic regression as the reference code does at
// ε = ∞ (test-only re-implementation, independent of package fermi): BCE
// plus λ·mean_B ψ_i(reg), shuffled batches of 1024, 200 epochs, plain SGD
// with the batch gradient clipped to norm 5 (L_θ), W ~ N(0,1) ascending
// with η_W·λ·∇_W and projected on the Frobenius ball of radius 5 (C = D),
// θ initialised as torch's nn.Linear. It returns the weights, bias last.
func fermiRefSGDA(d *loaders.Dataset, reg fermiRefReg, lambda, lrTheta float64, seed uint64) []float64 {
	const epochs, batch, lrW, radius, clip = 200, 1024, 0.01, 5.0, 5.0
	r := rand.New(rand.NewPCG(seed, 0xfe5))
	n, dim := d.N(), d.Dim
	theta := make([]float64, dim+1)
	for i := range theta {
		theta[i] = (2*r.Float64() - 1) / math.Sqrt(float64(dim))
	}
	freq := make([]float64, len(d.GroupNames))
	for _, s := range d.Groups {
		freq[s] += 1 / float64(n)
	}
	rowOf := make([]int, len(freq)) // W's row for group s, or -1
	for s := range rowOf {
		rowOf[s] = slices.Index(reg.groups, s)
	}
	w := make([]float64, len(reg.groups)*len(reg.cols))
	for i := range w {
		w[i] = r.NormFloat64()
	}
	g, gw := make([]float64, dim+1), make([]float64, len(w))
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	for range epochs {
		r.Shuffle(n, func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		for lo := 0; lo < n; lo += batch {
			idx := perm[lo:min(n, lo+batch)]
			clear(g)
			clear(gw)
			for _, i := range idx {
				x := d.X[i*dim : (i+1)*dim]
				z := theta[dim]
				for f, v := range x {
					z += theta[f] * v
				}
				p := 1 / (1 + math.Exp(-z))
				F := [2]float64{1 - p, p}
				dF := [2]float64{-p * (1 - p), p * (1 - p)}
				s, row := d.Groups[i], rowOf[d.Groups[i]]
				dz := p - float64(d.Labels[i])
				for b, j := range reg.cols {
					c := 0.0
					for a := range reg.groups {
						wab := w[a*len(reg.cols)+b]
						c -= wab * wab
						gw[a*len(reg.cols)+b] -= 2 * wab * F[j]
					}
					if row >= 0 {
						c += 2 * w[row*len(reg.cols)+b] / math.Sqrt(freq[s])
						gw[row*len(reg.cols)+b] += 2 * F[j] / math.Sqrt(freq[s])
					}
					dz += lambda * c * dF[j]
				}
				for f, v := range x {
					g[f] += dz * v
				}
				g[dim] += dz
			}
			scale := 1 / float64(len(idx))
			if norm := floats.Norm(g, 2) * scale; norm > clip {
				scale *= clip / norm
			}
			floats.AddScaled(theta, -lrTheta*scale, g)
			floats.AddScaled(w, lrW*lambda/float64(len(idx)), gw)
			if norm := floats.Norm(w, 2); norm > radius {
				floats.Scale(radius/norm, w)
			}
		}
	}
	return theta
}

// fermiRefEval is the test error and DP violation of logistic weights
// (bias last), predicting 1 when p > 0.5 as the reference code does.
func fermiRefEval(d *loaders.Dataset, theta []float64) (errRate, dpViol float64) {
	dim := d.Dim
	pred := make([]int, d.N())
	wrong := 0
	for i := range pred {
		z := theta[dim] + floats.Dot(theta[:dim], d.X[i*dim:(i+1)*dim])
		if z > 0 {
			pred[i] = 1
		}
		if pred[i] != d.Labels[i] {
			wrong++
		}
	}
	return float64(wrong) / float64(d.N()), metrics.DemographicParity(pred, d.Groups, 2, len(d.GroupNames))
}

// TestFERMIReferenceRegulariser is the evidence for the λ scale (the
// acceptance "ε = ∞, λ = 1 → DP violation ≤ 0.02"): on Adult at ε = ∞, the
// reference code's logistic regulariser (one group's term of the sigmoid
// column) against the paper's ψ (ERMI; Lowy et al. 2022, Theorem C.1), trained by the same test-only
// SGDA, same split as the bench cases, seeds 1..FAIRDP_FERMI_SEEDS.
// FAIRDP_FERMI_REF_LR lists η_θ values (default: the paper's 0.005 and the
// presets' 0.05).
func TestFERMIReferenceRegulariser(t *testing.T) {
	if os.Getenv("FAIRDP_FULL") != "1" {
		t.Skip("full profile: set FAIRDP_FULL=1 (a few minutes)")
	}
	cfg := fermiConfig(t, fermiCase{name: "adult-ref", preset: "fermi-adult"})
	sw, err := trainer.NewSweep(cfg, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	train, test := sw.Train, sw.Test
	male, female := slices.Index(train.GroupNames, "Male"), slices.Index(train.GroupNames, "Female")
	if male < 0 || female < 0 {
		t.Fatalf("adult groups %v: want Male and Female", train.GroupNames)
	}
	regs := []fermiRefReg{
		{name: "reference, group Male", groups: []int{male}, cols: []int{1}},
		{name: "reference, group Female", groups: []int{female}, cols: []int{1}},
		{name: "ERMI (paper's ψ)", groups: []int{male, female}, cols: []int{0, 1}},
	}
	grid := map[string][]float64{
		regs[0].name: {0, 0.25, 0.5, 1},
		regs[1].name: {0.5, 1},
		regs[2].name: {0.5, 1, 2, 4, 8},
	}
	seeds := fermiEnvInt("FAIRDP_FERMI_SEEDS", 5)
	type cell struct{ err, viol float64 }
	got := map[string]cell{}
	var b strings.Builder
	b.WriteString("\n| regulariser | η_θ | λ | test error | DP violation |\n|---|---|---|---|---|\n")
	for _, lr := range fermiEnvFloats("FAIRDP_FERMI_REF_LR", []float64{0.005, 0.05}) {
		for _, reg := range regs {
			for _, l := range grid[reg.name] {
				var c fermiCell
				for seed := range uint64(seeds) {
					e, v := fermiRefEval(test, fermiRefSGDA(train, reg, l, lr, seed+1))
					c.errs, c.viols = append(c.errs, e), append(c.viols, v)
				}
				e, esd := trainer.MeanSD(c.errs)
				v, vsd := trainer.MeanSD(c.viols)
				got[fmt.Sprint(reg.name, lr, l)] = cell{e, v}
				fmt.Fprintf(&b, "| %s | %g | %g | %.4f ± %.4f | %.4f ± %.4f |\n", reg.name, lr, l, e, esd, v, vsd)
			}
		}
	}
	t.Log(b.String())
	// Reference code's results, Adult ε = ∞, λ = 1: .1869 / .0055
	// (fermiReferenceCode). Measured (bench/results/fermi.md): the reference
	// regulariser's λ = 1 costs the reference code's error and cuts the violation
	// 4× more than ERMI at λ = 1, which needs λ ≈ 4–8 for the same cut;
	// penalising the low-rate group instead raises the violation.
	for _, lr := range fermiEnvFloats("FAIRDP_FERMI_REF_LR", []float64{0.005, 0.05}) {
		at := func(reg fermiRefReg, l float64) cell { return got[fmt.Sprint(reg.name, lr, l)] }
		ref, female, ermi := at(regs[0], 1), at(regs[1], 1), at(regs[2], 1)
		if ref.viol > ermi.viol/2.5 || math.Abs(ref.err-0.1869) > 0.015 {
			t.Errorf("η_θ %g, λ = 1: reference %.4f / %.4f, ERMI %.4f / %.4f: want the reference's violation below ERMI's / 2.5 and its error within .015 of the reference code's .1869",
				lr, ref.err, ref.viol, ermi.err, ermi.viol)
		}
		if base := at(regs[0], 0); female.viol <= base.viol {
			t.Errorf("η_θ %g: reference regulariser on group Female, λ = 1: violation %.4f, want above λ = 0's %.4f", lr, female.viol, base.viol)
		}
	}
	// The ERMI path is an independent re-implementation of fairdp's
	// DP-FERMI at ε = ∞ with the presets' η_θ: it must agree with the
	// adult-dp-inf case (λ = 1: .1606 / .0963; λ = 8: .1741 / .0105).
	if e1, e8 := got[fmt.Sprint(regs[2].name, 0.05, 1.0)], got[fmt.Sprint(regs[2].name, 0.05, 8.0)]; e1 != (cell{}) &&
		(math.Abs(e1.viol-0.0963) > 0.01 || math.Abs(e8.viol-0.0105) > 0.01 || math.Abs(e1.err-0.1606) > 0.005) {
		t.Errorf("ERMI η_θ 0.05: λ = 1 %.4f / %.4f, λ = 8 %.4f / %.4f: want fairdp's .1606 / .0963 and .1741 / .0105 within .01",
			e1.err, e1.viol, e8.err, e8.viol)
	}
}

// TestFERMIAdultEOPreset checks that fermi-adult-eo is fermi-adult with
// exactly the three changes its doc comment and bench/results/fermi.md
// justify: η_θ = 0.005 (the DP-FERMI reference code's tabular rate),
// equalized odds, λ = 4.
func TestFERMIAdultEOPreset(t *testing.T) {
	dp, eo := trainer.Defaults(), trainer.Defaults()
	for _, p := range []struct {
		cfg  *trainer.Config
		name string
	}{{&dp, "fermi-adult"}, {&eo, "fermi-adult-eo"}} {
		if err := trainer.ApplyPreset(p.cfg, p.name); err != nil {
			t.Fatal(err)
		}
	}
	if eo.LR != 0.005 || eo.Fair.Fairness != "eo" || eo.Fair.Lambda != 4 {
		t.Errorf("fermi-adult-eo: lr %g, fairness %q, λ %g; want 0.005, eo, 4", eo.LR, eo.Fair.Fairness, eo.Fair.Lambda)
	}
	eo.LR, eo.Fair.Fairness, eo.Fair.Lambda, eo.Preset = dp.LR, dp.Fair.Fairness, dp.Fair.Lambda, dp.Preset
	if a, b := fmt.Sprintf("%+v", eo), fmt.Sprintf("%+v", dp); a != b {
		t.Errorf("fermi-adult-eo differs from fermi-adult beyond lr, fairness, λ and its name:\n%s\n%s", a, b)
	}
}

// TestFERMITradeoffPlots draws DP-FERMI's trade-off (scope sensitive;
// demographic parity with presets fermi-adult, fermi-credit,
// fermi-parkinsons, equalized odds with fermi-adult-eo)
// from the committed sweep CSVs in results/, as test error against DP
// violation, one curve per ε (mean ± sd over seeds), beside the reference
// code's outputs (fermiReferenceCode: λ ∈ {0, 0.5, 1}, one curve per ε, named
// "reference code"). The reference points come from another regulariser
// (its λ is not ours): compare the curves, not cells. Adult:
// fermi_adult_sweep.csv (λ ≤ 8, 5 seeds) and fermi_adult_sweep_ext.csv
// (λ ∈ {12, 16}, 3 seeds); Credit and Parkinsons: fermi_credit_curve.csv
// and fermi_parkinsons_curve.csv (λ ≤ 16, ε ∈ {1, ∞}, 3 seeds); Adult
// equalized odds (preset fermi-adult-eo, ε = 0.5, the only ε with
// reference-code EO cells): fermi_adult_eo_curve.csv. It writes
// fermi_D[_eo]_tradeoff.png into $FAIRDP_BENCH_OUT when set (how the PNGs in
// results/ were made), else into a temporary directory, and checks that
// every CSV row was plotted.
func TestFERMITradeoffPlots(t *testing.T) {
	dir := os.Getenv("FAIRDP_BENCH_OUT")
	if dir == "" {
		dir = t.TempDir()
	}
	all := []float64{0.5, 1, 3, 9, math.Inf(1)}
	fermiTradeoffPlot(t, dir, "adult", "dp", all, "fermi_adult_sweep.csv", "fermi_adult_sweep_ext.csv")
	fermiTradeoffPlot(t, dir, "credit", "dp", all[1:], "fermi_credit_curve.csv")
	fermiTradeoffPlot(t, dir, "parkinsons", "dp", all[1:], "fermi_parkinsons_curve.csv")
	fermiTradeoffPlot(t, dir, "adult", "eo", all[:1], "fermi_adult_eo_curve.csv")
}

// fermiReferenceCodeEO holds the DP-FERMI reference code's equalized-odds cells (test
// error, EO violation), also reference-code outputs.
var fermiReferenceCodeEO = map[string]map[float64]map[float64][2]float64{
	"adult": {0.5: {0: {.1653, .2291}, 0.25: {.1821, .0337}, 0.5: {.2375, .0017}}},
}

// fermiTradeoffPlot draws one data set's plot for notion "dp" or "eo"
// (fermi_D_tradeoff.png or fermi_D_eo_tradeoff.png) from files in
// results/, with the curves at the given ε.
func fermiTradeoffPlot(t *testing.T, dir, dataset, notion string, epsilons []float64, files ...string) {
	t.Helper()
	type key struct{ eps, lambda float64 }
	cells := map[key][][2]float64{}
	rows := 0
	for _, name := range files {
		f, err := os.Open(filepath.Join("results", name))
		if err != nil {
			t.Fatal(err)
		}
		recs, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		col := map[string]int{}
		for j, c := range recs[0] {
			col[c] = j
		}
		for _, r := range recs[1:] {
			num := func(c string) float64 {
				v, err := strconv.ParseFloat(r[col[c]], 64)
				if err != nil {
					t.Fatalf("%s: column %s: %v", name, c, err)
				}
				return v
			}
			k := key{num("epsilon"), num("lambda")}
			cells[k] = append(cells[k], [2]float64{num("error"), num(notion + "_violation")})
			rows++
		}
	}
	label := func(e float64) string {
		if math.IsInf(e, 1) {
			return "∞"
		}
		return strconv.FormatFloat(e, 'g', -1, 64)
	}
	var curves []metrics.Curve
	used := 0
	top := 0.0
	for _, e := range epsilons {
		c := metrics.Curve{Name: "fairdp ε = " + label(e)}
		var lambdas []float64
		for k := range cells {
			if k.eps == e {
				lambdas = append(lambdas, k.lambda)
			}
		}
		slices.Sort(lambdas)
		for _, l := range lambdas {
			runs := cells[key{e, l}]
			var errs, viols []float64
			for _, r := range runs {
				errs, viols = append(errs, r[0]), append(viols, r[1])
			}
			me, se := trainer.MeanSD(errs)
			mv, sv := trainer.MeanSD(viols)
			c.Points = append(c.Points, metrics.Point{X: mv, Y: me, XErr: sv, YErr: se})
			used += len(runs)
			top = max(top, l)
		}
		curves = append(curves, c)
	}
	if used != rows {
		t.Errorf("%s: plotted %d of %d runs: an ε outside %v in the CSVs", dataset, used, rows, epsilons)
	}
	refs, axis, suffix := fermiReferenceCode, "DP violation (test)", ""
	if notion == "eo" {
		refs, axis, suffix = fermiReferenceCodeEO, "EO violation (test)", "_eo"
	}
	refTop := 0.0
	for _, e := range epsilons {
		ref, ok := refs[dataset][e]
		if !ok {
			continue
		}
		c := metrics.Curve{Name: "reference code ε = " + label(e)}
		for _, l := range slices.Sorted(maps.Keys(ref)) {
			c.Points = append(c.Points, metrics.Point{X: ref[l][1], Y: ref[l][0]})
			refTop = max(refTop, l)
		}
		curves = append(curves, c)
	}
	title := fmt.Sprintf("DP-FERMI on %s (%s): fairdp (ERMI, λ ≤ %g) vs reference-code outputs (λ ≤ %g)", dataset, notion, top, refTop)
	path := filepath.Join(dir, "fermi_"+dataset+suffix+"_tradeoff.png")
	if err := metrics.ScatterPlot(path, title, axis, "test error", curves, metrics.WithSize(1000, 700)); err != nil {
		t.Fatal(err)
	}
}
