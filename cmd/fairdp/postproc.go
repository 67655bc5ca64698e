package main

// `fairdp train --algo postproc|oracle` and `fairdp sweep --algo
// postproc|oracle`: the flags and the printing of Jagielski et al.'s DP
// post-processing and DP oracle learner (Jagielski et al. 2019). The pipeline is
// linear.RunFair; sweeps go through trainer.Sweep and its resumable
// results file.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"runtime"
	"time"

	"github.com/fairdp/fairdp/linear"
	"github.com/fairdp/fairdp/trainer"
)

// postprocDefaults is cfg with the post-processing and oracle defaults.
func postprocDefaults(cfg trainer.Config) trainer.Config {
	if linear.PostprocConfigOf(cfg) == (linear.PostprocConfig{}) {
		cfg = linear.WithPostprocConfig(cfg, linear.PostprocDefaults())
	}
	return cfg
}

// postprocFlags registers the flags shared by train and sweep (not
// --gamma and --epsilon, whose forms differ) on c and on j, the
// post-processing settings, which the caller puts back into c after
// parsing (linear.WithPostprocConfig). delta is --delta's value: -1
// (default) keeps cfg's.
func postprocFlags(fs *flag.FlagSet, c *trainer.Config, j *linear.PostprocConfig, delta *float64) {
	dataFlags(fs, c)
	kindVar(fs, &c.Algo, "algo", "postproc (DP post-processing) or oracle (DP oracle learner)")
	fs.StringVar(&j.Fairness, "fairness", j.Fairness, "eo (equal false- and true-positive rates), fpr (equal false-positive rates) or dp (equal positive rates; postproc only)")
	fs.BoolVar(&j.AllPairs, "all-pairs", j.AllPairs, "constrain every pair of groups, not every group against group 0 (the paper); same for two groups")
	fs.Float64Var(delta, "delta", -1, "oracle: δ of advanced composition (-1: 1/n² of the training records; 0: basic composition, pure ε-DP)")
	fs.BoolVar(&c.Privacy.AllowLargeDelta, "allow-large-delta", c.Privacy.AllowLargeDelta, "oracle: accept δ ≥ 1/n (a weak guarantee; the receipt says so)")
	fs.StringVar(&c.Out, "out", c.Out, "output directory")
	fs.BoolVar(&c.Quiet, "quiet", c.Quiet, "print only the summary")
	fs.BoolVar(&c.ReportTrainStats, "report-train-stats", c.ReportTrainStats, "also report exact statistics of the private training split (marked NOT PRIVATE)")
	fs.Float64Var(&j.Beta, "beta", j.Beta, "postproc: failure probability of the LP's slack")
	fs.StringVar(&j.Slack, "slack", j.Slack, "postproc: the LP's privacy slack: union (the paper's: holds with probability 1-β; the default without --base), sd (--slack-z standard deviations of the noisy rate difference) or none (γ alone; the default with --base objpert|dpsgd)")
	fs.Float64Var(&j.SlackZ, "slack-z", j.SlackZ, "postproc: standard deviations of --slack sd (0: 1)")
	fs.Float64Var(&j.GammaShare, "gamma-share", j.GammaShare, fmt.Sprintf("postproc: data-aware γ: the larger of --gamma and this share of the noisy cells' "+
		"violation of the unconstrained post-processed classifier (0: γ fixed; with --base the default is %g for --fairness dp when "+
		"training records × the cells' ε ≥ %d, else 0)", linear.DefaultPrivateGammaShare, linear.PrivateGammaShareBudget))
	fs.BoolVar(&j.Monotone, "monotone-cells", j.Monotone, "postproc: smooth the noisy cells so that in every group the positive share rises with the score bin "+
		"(isotonic regression of the released counts: no privacy cost; the default with --base objpert|dpsgd, --monotone-cells=false to turn it off)")
	fs.IntVar(&j.Bins, "bins", j.Bins, "postproc: score bins; 2 is the paper's Ŷ = [score ≥ --threshold], more are score quantiles (with --base objpert|dpsgd: public edges j/K)")
	fs.Float64Var(&j.Threshold, "threshold", j.Threshold, "postproc: score threshold of the base prediction Ŷ (with --bins 2)")
	fs.Float64Var(&j.L2, "l2", j.L2, "postproc: L2 penalty of the base logistic regression")
	fs.StringVar(&j.Base, "base", j.Base, "postproc: base classifier: empty (logistic regression without privacy, the paper's), objpert or dpsgd (logistic regression private for whole records: --base-epsilon of the total --epsilon, the rest to post-processing)")
	fs.Float64Var(&j.BaseEpsilon, "base-epsilon", j.BaseEpsilon, "postproc with --base objpert|dpsgd: the base classifier's part of --epsilon (0: the default share)")
	fs.StringVar(&j.Scores.File, "scores", j.Scores.File, "postproc: CSV of an external model's scores (one row per record, with a header) instead of --dataset")
	fs.StringVar(&j.Scores.ScoreColumn, "score-column", j.Scores.ScoreColumn, "postproc: --scores column holding the score")
	fs.StringVar(&j.Scores.GroupColumn, "group-column", j.Scores.GroupColumn, "postproc: --scores column holding the sensitive group")
	fs.StringVar(&j.Scores.LabelColumn, "label-column", j.Scores.LabelColumn, "postproc: --scores column holding the true label")
	fs.StringVar(&j.Scores.Positive, "positive", j.Scores.Positive, "postproc: label value of the positive class in --scores (others are negative; with the default 1, labels must be 0 or 1)")
	fs.StringVar(&j.Scores.SplitColumn, "split-column", j.Scores.SplitColumn, "postproc: --scores column saying train or test (default: a seeded --train-frac split)")
	fs.IntVar(&j.Rounds, "rounds", j.Rounds, "oracle: rounds T of the auditor–learner game")
	fs.Float64Var(&j.Bound, "bound", j.Bound, "oracle: B, the largest ‖λ‖₁ of the auditor's multipliers")
	fs.Float64Var(&j.Eta, "eta", j.Eta, "oracle: exponentiated-gradient learning rate")
	fs.Float64Var(&j.CountShare, "count-share", j.CountShare, "oracle: fraction of ε spent on the group-label counts")
	fs.Float64Var(&j.Ridge, "ridge", j.Ridge, "oracle: ridge of the least-squares learner (0: 1e-4 per record)")
	fs.StringVar(&j.Fallback, "fallback", j.Fallback, "oracle: let rounds answer with a constant classifier: none (the default: the paper's learner), cost (private selection by the learner's cost, charged), error (by public training error, free)")
	fs.String("config", "", "repeat a run: its report.json; flags given with it win")
}

// setPostprocDelta applies --delta when it was given: -1 is the default
// δ, 0 basic composition.
func setPostprocDelta(fs *flag.FlagSet, c *trainer.Config, j *linear.PostprocConfig, delta float64) {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "delta" })
	if !given {
		return
	}
	c.Privacy.Delta, j.BasicComposition = max(delta, 0), delta == 0
}

// privateBaseDefaults gives a run with --base objpert|dpsgd the private
// pipeline's defaults where the flags were not given: the library's bin
// rule (Bins 0), linear.DefaultPrivateGamma, linear.DefaultPrivateSlack,
// the library's data-aware γ share (linear.GammaShareAuto) and monotone
// cells (PostprocConfig.Monotone) (the paper's two bins, γ = 0.05,
// union-bound slack, a fixed γ and the raw noisy cells stay the defaults
// of a non-private base).
func privateBaseDefaults(fs *flag.FlagSet, j *linear.PostprocConfig) {
	if j.Base == "" {
		return
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if !given["bins"] && !given["config"] {
		j.Bins = 0
	}
	if !given["gamma"] && !given["config"] {
		j.Gamma = linear.DefaultPrivateGamma
	}
	if !given["slack"] && !given["config"] {
		j.Slack = string(linear.DefaultPrivateSlack)
	}
	if !given["gamma-share"] && !given["config"] {
		j.GammaShare = linear.GammaShareAuto
	}
	if !given["monotone-cells"] && !given["config"] {
		j.Monotone = true
	}
}

// runPostproc is `fairdp train --algo postproc|oracle ...` from cfg (the
// defaults, or the --config file's settings); args are the train flags.
func runPostproc(ctx context.Context, cfg trainer.Config, args []string, stdout, stderr io.Writer) error {
	c := postprocDefaults(cfg)
	fs := newFlagSet("train", "train --algo postproc|oracle --gamma G --epsilon E [--dataset adult] [--fairness eo|fpr|dp] [--base objpert|dpsgd] [--seed S] [--out D]", stderr)
	var delta float64
	j := linear.PostprocConfigOf(c)
	postprocFlags(fs, &c, &j, &delta)
	fs.Float64Var(&j.Gamma, "gamma", j.Gamma, "allowed difference γ of the equalised rates")
	fs.Var(epsilonFlag{&c.Privacy.Epsilon}, "epsilon", "privacy budget ε for the sensitive attribute (inf: not private)")
	overwrite := overwriteFlag(fs)
	tune := postprocTuneFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := tune.check(fs, c.Algo); err != nil {
		return err
	}
	if err := checkOut(c.Out, *overwrite, trainer.CheckpointOptions{}); err != nil {
		return err
	}
	setPostprocDelta(fs, &c, &j, delta)
	privateBaseDefaults(fs, &j)
	c = linear.WithPostprocConfig(c, j)
	dataOwnTrainFrac(fs, args, &c)
	if err := configRelativePaths(fs, args, &c); err != nil {
		return err
	}
	var rep *trainer.Report
	var err error
	if tune.on {
		rep, err = tunePostproc(ctx, c, tune, stdout)
	} else {
		rep, err = runFairOnce(ctx, c, stdout)
	}
	if err != nil {
		return err
	}
	if c.Out != "" {
		if err := linear.WriteFairOutputs(c.Out, rep); err != nil {
			return err
		}
	}
	res := linear.FairExtra(rep)
	if err := linear.FairFailure(rep); err != nil {
		fmt.Fprintf(stdout, "privacy: %s\n", rep.Privacy.String())
		return err
	}
	if !c.Quiet {
		printSplits(stdout, rep, " (randomised predictions)")
	}
	fmt.Fprint(stdout, "expected over the classifier's coins: ")
	if e := res.ExpectedTrain; e != nil {
		fmt.Fprintf(stdout, "train error %.4f DP violation %.4f EO violation %.4f; ", e.Error, e.DPViolation, e.EOViolation)
	}
	fmt.Fprintf(stdout, "test error %.4f DP violation %.4f EO violation %.4f\n", res.ExpectedTest.Error, res.ExpectedTest.DPViolation, res.ExpectedTest.EOViolation)
	fmt.Fprintf(stdout, "%s, %s, %.1f s\n", rep.Algorithm, rep.Model, rep.Seconds)
	if err := rep.Privacy.WriteText(stdout); err != nil {
		return err
	}
	printWarnings(stdout, rep.Warnings)
	if c.Out != "" {
		fmt.Fprintf(stdout, "wrote %s\n", filepath.Join(c.Out, "report.json"))
	}
	return nil
}

// runFairOnce loads c's data with its base and runs the pipeline once.
func runFairOnce(ctx context.Context, c trainer.Config, stdout io.Writer) (*trainer.Report, error) {
	d, err := linear.LoadFairData(c)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stdout, "fairdp %s: %s on %s (%d train / %d test records, %d groups), γ = %g, ε = %s, %s\n",
		versionString(), c.Algo, d.Name, d.Train.N(), d.Test.N(), len(d.GroupNames), linear.PostprocConfigOf(c).Gamma,
		epsilonFlag{&c.Privacy.Epsilon}, trainer.NoiseSource(c.Seed))
	return linear.RunFair(ctx, d, c)
}

// runPostprocSweep is `fairdp sweep --algo postproc|oracle --gamma g1,g2,..
// --epsilon e1,..,inf --seeds N --out D`: every (ε, γ) with N noise seeds
// through the library's grid sweep (trainer.OpenSweep: its seed rule,
// resumable sweep.csv and privacy total), and pareto.png with expected
// test error against expected test EO violation, one curve per ε (the
// paper's Figure 1). The data split (and the base classifier) come from
// --seed S (default 0).
func runPostprocSweep(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := postprocDefaults(trainer.Defaults())
	gammas := []float64{0, 0.01, 0.02, 0.05, 0.1}
	epsilons := []float64{1, 5, 20, math.Inf(1)}
	seeds, workers := 5, runtime.GOMAXPROCS(0)
	fs := newFlagSet("sweep", "sweep --algo postproc|oracle --gamma g1,g2,.. --epsilon e1,..,inf --seeds N --out D", stderr)
	var delta float64
	j := linear.PostprocConfigOf(c)
	postprocFlags(fs, &c, &j, &delta)
	fs.Var(floatsFlag{p: &gammas, unique: true, check: nonNegative}, "gamma", "values of γ, comma-separated")
	fs.Var(floatsFlag{p: &epsilons, allowInf: true, unique: true, check: positiveOrInf}, "epsilon", "values of ε, comma-separated (inf: not private)")
	fs.IntVar(&seeds, "seeds", seeds, "noise seeds per (ε, γ)")
	fs.IntVar(&workers, "workers", workers, "runs in parallel")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	setPostprocDelta(fs, &c, &j, delta)
	// Each cell is the run `fairdp train` would make with its ε and γ, so a
	// private base gets the private pipeline's bins and slack here too.
	privateBaseDefaults(fs, &j)
	switch {
	case c.Out == "":
		return errors.New("sweep: --out D is required (sweep.csv and pareto.png go there)")
	case seeds < 1 || workers < 1:
		return fmt.Errorf("--seeds and --workers must be ≥ 1 (got %d, %d)", seeds, workers)
	case len(gammas) == 0 || len(epsilons) == 0:
		return errors.New("sweep: --gamma and --epsilon need at least one value each")
	}
	base := uint64(0)
	if c.Seed != nil {
		base = *c.Seed
	}
	j.Gamma = gammas[0]
	c = linear.WithPostprocConfig(c, j)
	c.SplitSeed, c.Privacy.Epsilon = &base, epsilons[0]
	d, err := linear.LoadFairData(c)
	if err != nil {
		return err
	}
	out := c.Out
	neutral := c
	neutral.Out, neutral.Quiet, neutral.Privacy.Epsilon, neutral.Seed = "", false, 1, nil
	nj := j
	nj.Gamma = 0
	neutral = linear.WithPostprocConfig(neutral, nj)
	grid := trainer.SweepGrid{Prefix: []string{string(c.Algo)}, Seeds: seeds,
		Axes: []trainer.SweepAxis{{Column: "epsilon", Values: epsilons}, {Column: "gamma", Values: gammas}}}
	plan, err := trainer.OpenSweep(trainer.SweepOptions{Dir: out, Grid: grid, Columns: linear.FairSweepColumns,
		OldColumns: linear.FairSweepOldColumns, Settings: neutral, Seed: &base,
		Configure: func(cell []float64) trainer.Config {
			r := c
			rj := j
			rj.Gamma = cell[1]
			r.Out, r.Privacy.Epsilon = "", cell[0]
			return linear.WithPostprocConfig(r, rj)
		},
		Row: func(run trainer.SweepRun, rep *trainer.Report) []string { return linear.FairSweepRow(run.Cfg, rep) },
	})
	if err != nil {
		return err
	}
	defer plan.Close()
	runs := plan.Pending()
	fmt.Fprintf(stdout, "fairdp sweep: %s on %s (%d train / %d test), %d ε × %d γ × %d seeds = %d runs (%d to do), %d workers\n",
		c.Algo, d.Name, d.Train.N(), d.Test.N(), len(epsilons), len(gammas), seeds, grid.Size(), len(runs), workers)
	start := time.Now()
	sw := &trainer.Sweep{Workers: workers, Pipeline: func(ctx context.Context, cfg trainer.Config) (*trainer.Report, error) {
		return linear.RunFair(ctx, d, cfg)
	}}
	var errs []error
	if err := plan.Run(ctx, sw, func(r trainer.SweepResult, _ []string) error {
		if r.Err != nil {
			errs = append(errs, fmt.Errorf("run %s: %w", r.Run.Key, r.Err))
		}
		return nil
	}); err != nil {
		return err
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	cells, err := plan.Summary(trainer.SweepSummaryOptions{Metrics: []string{"expected_test_error", "expected_test_eo"},
		Skip: func(row []string) bool { return row[4] != "false" }})
	if err != nil {
		return err
	}
	epsName := func(cell trainer.SweepCellSummary) string { return "ε = " + trainer.FormatSweepValue(cell.Cell[0]) }
	if _, err := plan.Plot(cells, trainer.SweepPlotOptions{Title: fmt.Sprintf("%s on %s: expected test error vs EO violation", c.Algo, d.Name),
		XLabel: "equalized-odds violation (test)", YLabel: "error (test)", X: 1, Y: 0, Curve: epsName}); err != nil {
		return err
	}
	if !c.Quiet {
		for i, cell := range cells {
			if i == 0 || cell.Cell[0] != cells[i-1].Cell[0] {
				if i > 0 {
					fmt.Fprintln(stdout)
				}
				fmt.Fprintf(stdout, "%s:", epsName(cell))
			}
			fmt.Fprintf(stdout, "  γ=%g error %.4f EO %.4f", cell.Cell[1], cell.Mean[0], cell.Mean[1])
		}
		if len(cells) > 0 {
			fmt.Fprintln(stdout)
		}
	}
	failed := 0
	for _, r := range plan.Rows() {
		if r[4] == "true" {
			failed++
		}
	}
	fmt.Fprintf(stdout, "%d runs (%d failed) in %.1f s; wrote %s and %s\n", len(plan.Rows()), failed, time.Since(start).Seconds(),
		filepath.Join(out, "sweep.csv"), filepath.Join(out, "pareto.png"))
	printSweepTotal(stdout, plan.Total())
	return nil
}
