package main

// `fairdp train --algo tailoring|dpnose`: the flags and the printing of
// group-aware privacy-budget tailoring (Alabi and Wiggins 2023). The pipeline is
// tailoring.Run (Prepare, then Finish).

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"text/tabwriter"

	"github.com/fairdp/fairdp/tailoring"
	"github.com/fairdp/fairdp/trainer"
)

const tailoringSynopsis = "train --algo tailoring|dpnose --task regression --rho R[,R…] --trials N [flags]"

// runTailoring is `fairdp train` for group-aware privacy-budget tailoring
// (--algo tailoring, the paper's DPSE) and its baseline (--algo dpnose),
// from cfg (tailoring's defaults, or the --config file's settings). With
// one ρ it fits --trials times and reports the per-group mean test MSPE and
// its spread; with a list of ρ it runs both methods at each and prints the
// DPSE/DPNoSE ratio per group.
func runTailoring(ctx context.Context, cfg trainer.Config, args []string, stdout, stderr io.Writer) error {
	if tailoring.ConfigOf(cfg).Task == "" {
		cfg = tailoring.Defaults(cfg)
	}
	// The flags edit tailoring's own settings, which go back into cfg once
	// parsed.
	tc := tailoring.ConfigOf(cfg)
	t := &tc
	fs := newFlagSet("train", tailoringSynopsis, stderr)
	kindVar(fs, &cfg.Algo, "algo", "tailoring (DPSE: budget split by DP standard errors) or dpnose (the uniform-split baseline)")
	fs.StringVar(&t.Task, "task", t.Task, "regression (squared loss, MSPE) or classification (logistic loss, error rate)")
	fs.Var(floatsFlag{p: &t.Rho, unique: true}, "rho", "total zCDP budget ρ; a list (2,4.5,8) sweeps ρ and compares both methods")
	fs.IntVar(&t.Trials, "trials", t.Trials, "Monte Carlo trials: independent private fits of the same data; the report summarises all of them, so the receipt charges trials × ρ")
	fs.IntVar(&t.Workers, "workers", t.Workers, "parallel trials (0: GOMAXPROCS)")
	fs.StringVar(&cfg.Dataset, "dataset", cfg.Dataset, "synthetic (the paper's grouped mixture) or a CSV file (needs --schema)")
	fs.StringVar(&cfg.Schema, "schema", cfg.Schema, "schema JSON for a CSV --dataset: a numeric \"target\" (regression) or a binary label, and a sensitive column")
	fs.Float64Var(&cfg.TrainFrac, "train-frac", cfg.TrainFrac, "CSV: training fraction (0: the schema's, else 0.75)")
	fs.Var(floatsFlag{p: &t.Groups}, "groups", "synthetic: group sizes (training; the test set has the same)")
	fs.Var(floatsFlag{p: &t.Slopes}, "slopes", "synthetic: slope β_k of each group (one feature x ~ N(0,1))")
	fs.Var(floatsFlag{p: &t.Noise}, "noise", "synthetic: noise sd σ_e, one for all groups or one per group")
	fs.StringVar(&cfg.Out, "out", cfg.Out, "directory for report.json (and for a sweep sweep.csv, ratio.png and planned_receipt.json, the charge for every fit, written before the first runs; a killed sweep rerun with the same flags resumes from its rho_runs.csv)")
	fs.Var(seedFlag{&cfg.Seed}, "seed", "seed for a bit-reproducible run (default: crypto-seeded, not reproducible)")
	fs.Float64Var(&cfg.Privacy.Delta, "delta", cfg.Privacy.Delta, "δ of the reported (ε, δ) (0: 1/n², n = training records); δ ≥ 1/n is refused unless --allow-large-delta")
	fs.BoolVar(&cfg.Privacy.AllowLargeDelta, "allow-large-delta", cfg.Privacy.AllowLargeDelta, "accept δ ≥ 1/n (a weak guarantee; the receipt says so)")
	fs.BoolVar(&cfg.ReportTrainStats, "report-train-stats", cfg.ReportTrainStats, "also write exact per-group statistics of the training split (marked NOT PRIVATE)")
	fs.StringVar(&t.Model, "model", t.Model, "pooled (one β for all groups) or per-group (one coefficient block per group)")
	fs.StringVar(&t.Variant, "variant", t.Variant, "gd (stage 2: Lagrangian gradient descent) or ols (unconstrained sufficient statistics, the paper's Algorithm 3)")
	fs.StringVar(&t.NoseBudget, "nose-budget", t.NoseBudget, "DPNoSE spends all of ρ (rho) or only μ, DPSE's stage-2 budget (mu)")
	fs.Float64Var(&t.TauShare, "tau-share", t.TauShare, "τ/ρ, stage 1's share of the budget")
	fs.IntVar(&t.Steps, "steps", t.Steps, "stage-2 iterations T")
	fs.Float64Var(&t.LR, "lr", t.LR, "stage-2 step size")
	fs.Float64Var(&cfg.Privacy.Clip, "clip", cfg.Privacy.Clip, "per-example gradient clip Δ")
	fs.Float64Var(&t.LossClip, "loss-clip", t.LossClip, "per-example loss clip of the released group losses (0: y-bound², 10 for logistic)")
	fs.Float64Var(&t.ResidualClip, "residual-clip", t.ResidualClip, "stage-1 squared-residual clip (0: y-bound²)")
	fs.Float64Var(&t.Box, "box", t.Box, "projection: β ∈ [−box, box]^P")
	fs.Float64Var(&t.Eta, "eta", t.Eta, "bounded group loss: max_k ℓ_k ≤ eta (with --multiplier > 0)")
	fs.Float64Var(&t.Multiplier, "multiplier", t.Multiplier, "bounded group loss: Lagrange multiplier G (0: constraint off)")
	fs.Float64Var(&t.XBound, "x-bound", t.XBound, "public bound on a feature row's L2 norm, intercept included (0: synthetic's own; required for CSV)")
	fs.Float64Var(&t.YBound, "y-bound", t.YBound, "public bound on |y| (0: synthetic's own; required for CSV regression)")
	fs.Float64Var(&t.Ridge, "ridge", t.Ridge, "public ridge λ added to every noisy XᵀX")
	fs.Float64Var(&t.NoiseRidge, "noise-ridge", t.NoiseRidge, "adds c·σ·√P to every noisy XᵀX (σ its noise std); c ≈ 2 keeps it positive definite")
	fs.BoolVar(&t.Average, "average", t.Average, "return the mean of the last half of the stage-2 iterates")
	fs.StringVar(&t.Objective, "objective", t.Objective, "stage-2 group losses: means (Algorithm 2; default) or sums (the paper's synthetic study: every record weighs the same)")
	fs.BoolVar(&t.WarmStart, "warm-start", t.WarmStart, "start stage 2 at stage 1's private OLS fit instead of 0 (gd)")
	fs.BoolVar(&cfg.Quiet, "quiet", cfg.Quiet, "print only the result tables")
	fs.String("config", "", "repeat a run: its report.json; flags given with it win")
	overwrite := overwriteFlag(fs)
	tune := tuneFlags(fs)
	fs.Lookup("tune").Usage = "choose --tau-share, --lr and --steps by private random search (Papernot & Steinke 2022): a random number of fits, " +
		"each scored with noise on the training records by stage 2's objective, the best one returned; the receipt's ε (--epsilon) covers the whole search"
	epsilon := fs.Float64("epsilon", 0, "with --tune: the whole search's ε at --delta (0: the ε that --rho converts to, so a tuned run states what a plain run at that ρ does)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg = tailoring.WithConfig(cfg, tc)
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if tune.on {
		return runTailoringTune(ctx, cfg, tune, *epsilon, set, *overwrite, stdout)
	}
	if set["epsilon"] {
		return fmt.Errorf("--epsilon is for --tune: a tailoring run's budget is --rho")
	}
	// A ρ comparison reruns from its log (rho_runs.csv: the logged fits are
	// reused, never refitted, and other settings are refused), so its
	// report is the same run's. A single fit's report and receipt are kept
	// unless --overwrite.
	if len(tc.Rho) <= 1 {
		if err := checkOut(cfg.Out, *overwrite, trainer.CheckpointOptions{}); err != nil {
			return err
		}
	}
	rep, err := tailoring.Prepare(cfg)
	if err != nil {
		return err
	}
	ex := tailoring.Extra(rep)
	if !cfg.Quiet {
		fmt.Fprintf(stdout, "fairdp %s: %s on %s (%d train / %d test records, %d groups), %s model, %s variant, %d trials, %s\n",
			versionString(), cfg.Algo, rep.Dataset, len(ex.Data[0].Y), len(ex.Data[1].Y), ex.Data[0].K(), ex.Options.Model, ex.Variant,
			t.Trials, ex.Source)
	}
	if err := tailoring.Finish(ctx, rep, cfg.Out); err != nil {
		return err
	}
	for _, row := range ex.Summaries {
		if len(row) == 1 || !cfg.Quiet {
			for _, s := range row {
				printTailoringSummary(stdout, s)
			}
		}
	}
	if len(ex.Sweep) > 0 {
		printTailoringRatios(stdout, ex.Sweep)
	}
	if !cfg.Quiet {
		fits := t.Trials * len(ex.Methods) * len(t.Rho)
		fmt.Fprintf(stdout, "privacy of all %d fits released (trials × methods × ρ values = %d × %d × %d), composed to ρ = %.4g: %s\n",
			fits, t.Trials, len(ex.Methods), len(t.Rho), *rep.Privacy.Rho, rep.Privacy.String())
		if ex.FitPrivacy != nil && fits > 1 {
			fmt.Fprintf(stdout, "  each fit alone (ρ = %.4g): %s\n", *ex.FitPrivacy.Rho, ex.FitPrivacy.String())
		}
		if cfg.Out != "" {
			fmt.Fprintf(stdout, "wrote %s\n", filepath.Join(cfg.Out, "report.json"))
		}
	}
	return nil
}

func printTailoringSummary(w io.Writer, s *tailoring.Summary) {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "\n%s, ρ = %g, %d trials", s.Method, s.Rho, s.Trials)
	if s.Failed > 0 {
		fmt.Fprintf(&buf, " (%d failed: noisy XᵀX not positive definite)", s.Failed)
	}
	if s.Fallbacks > 0 {
		fmt.Fprintf(&buf, " (%d stage-1 fallbacks to a uniform split)", s.Fallbacks)
	}
	fmt.Fprintln(&buf)
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "group\tn\tbudget share\ttest %s (mean)\tsd\tmin\tmax\n", s.Metric)
	for _, g := range s.Test {
		share := fmt.Sprintf("%.3f", g.Share)
		if g.Overall() {
			share = ""
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.4f\t%.4f\t%.4f\t%.4f\n", g.Group, g.N, share, g.Mean, g.Std, g.Min, g.Max)
	}
	tw.Flush()
	w.Write(buf.Bytes())
}

func printTailoringRatios(w io.Writer, sweep []tailoring.SweepEntry) {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "\nDPSE/DPNoSE ratio of the mean test %s (below 1: tailoring helps)\n", sweep[0].Metric)
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "ρ")
	for _, g := range sweep[0].Groups {
		fmt.Fprintf(tw, "\t%s", g)
	}
	fmt.Fprintln(tw)
	for _, e := range sweep {
		fmt.Fprintf(tw, "%g", e.Rho)
		for _, g := range e.Groups {
			fmt.Fprintf(tw, "\t%.3f", e.Ratio[g])
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	w.Write(buf.Bytes())
}

// runTailoringTune is `fairdp train --algo tailoring|dpnose --tune`: a
// private search (tailoring.Tune) at the budget --epsilon, or the ε that
// the one --rho converts to; set are the flags given.
func runTailoringTune(ctx context.Context, cfg trainer.Config, tune *tuneFlagValues, epsilon float64, set map[string]bool, overwrite bool, stdout io.Writer) error {
	switch {
	case set["epsilon"] && set["rho"]:
		return fmt.Errorf("--tune takes its budget from --epsilon or from --rho (the ε it converts to), not both")
	case tune.opts.ValidFrac != 0:
		return fmt.Errorf("--tune-valid-frac is not for tailoring: its search scores every fit on the training records it was fitted on")
	}
	if err := checkOut(cfg.Out, overwrite, trainer.CheckpointOptions{}); err != nil {
		return err
	}
	opts := tailoring.TuneOptions{Epsilon: epsilon, MeanTrials: tune.opts.MeanTrials, Eta: tune.opts.Eta}
	if !cfg.Quiet {
		opts.Log = stdout
	}
	rep, err := tailoring.Tune(ctx, cfg, opts)
	if err != nil {
		return err
	}
	res, ex := tailoring.TuneResultOf(rep), tailoring.Extra(rep)
	c := res.Chosen
	tau := ""
	if c.TauShare > 0 {
		tau = fmt.Sprintf("--tau-share %g ", c.TauShare)
	}
	fmt.Fprintf(stdout, "tune: chose %s--lr %g --steps %d (ρ = %.4g) after %d trials\n", tau, c.LR, c.Steps, c.Rho, res.Trials)
	printTailoringSummary(stdout, ex.Summaries[0][0])
	if !cfg.Quiet {
		fmt.Fprintf(stdout, "privacy of the whole search (%d fits, the chosen one published): %s\n", res.Trials, rep.Privacy.String())
		if cfg.Out != "" {
			fmt.Fprintf(stdout, "wrote %s\n", filepath.Join(cfg.Out, "report.json"))
		}
	}
	return nil
}
