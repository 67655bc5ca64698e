package main

// `fairdp train --algo objpert`: the flags and the printing of private
// logistic regression by objective perturbation. The pipeline is
// linear.RunObjPert, reached through trainer.RunConfig like any algorithm;
// its settings are linear's configuration section (linear.ObjPertConfig).

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/fairdp/fairdp/linear"
	"github.com/fairdp/fairdp/trainer"
)

// runObjPert is `fairdp train --algo objpert ...` from cfg (the defaults,
// or the --config file's settings); args are the train flags.
func runObjPert(ctx context.Context, cfg trainer.Config, args []string, stdout, stderr io.Writer) error {
	c := cfg
	o := linear.ObjPertConfigOf(c)
	fs := newFlagSet("train", "train --algo objpert --epsilon E [--dataset adult] [--row-bound B] [--l2 Λ] [--label-range LO,HI] [--seed S] [--out D]", stderr)
	dataFlags(fs, &c)
	fs.StringVar(&c.Algo, "algo", c.Algo, "objpert (logistic regression by objective perturbation, pure ε-DP)")
	fs.Var(epsilonFlag{&c.Privacy.Epsilon}, "epsilon", "privacy budget ε, pure ε-DP for whole records (inf: the same fit without noise)")
	fs.Float64Var(&o.RowBound, "row-bound", o.RowBound, "public bound B on a preprocessed row's L2 norm; longer rows are clipped (0: √(encoded features)); choose it from knowledge of the features, never from the private rows")
	fs.Float64Var(&o.L2, "l2", o.L2, "L2 penalty Λ on the weights over rows scaled to norm ≤ 1 (0: 8 times the smallest the budget allows, linear.DefaultObjPertL2)")
	fs.Var(floatsFlag{p: &o.LabelRange}, "label-range", "lo,hi: public range of a regression target (a schema with \"target\"): least squares, labels clipped into it; never read it off the private rows")
	fs.Float64Var(&o.ResidualScale, "residual-scale", o.ResidualScale, "least squares: residuals beyond h half-ranges of the label are clipped smoothly (0: 1)")
	fs.StringVar(&c.Out, "out", c.Out, "directory for report.json and model.ckpt (scored later by fairdp eval)")
	fs.BoolVar(&c.Quiet, "quiet", c.Quiet, "print only the summary")
	fs.BoolVar(&c.ReportTrainStats, "report-train-stats", c.ReportTrainStats, "also report exact statistics of the private training split (marked NOT PRIVATE)")
	fs.String("config", "", "repeat a run: its report.json; flags given with it win")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	c = linear.WithObjPertConfig(c, o)
	rep, err := trainer.RunConfig(ctx, c, stdout)
	if err != nil {
		return flagError(err)
	}
	fmt.Fprintf(stdout, "fairdp %s: %s on %s (%d train records), ε = %s\n", versionString(), c.Algo, rep.Dataset,
		rep.TrainRecords, epsilonFlag{&c.Privacy.Epsilon})
	if !c.Quiet {
		printReport(stdout, rep)
	} else {
		if rep.Test.MSPE != nil {
			fmt.Fprintf(stdout, "test MSPE %.4f\n", *rep.Test.MSPE)
		} else {
			fmt.Fprintf(stdout, "test error %.4f\n", rep.Test.Error)
		}
		fmt.Fprintf(stdout, "privacy: %s\n", rep.Privacy.String())
	}
	if c.Out != "" {
		fmt.Fprintf(stdout, "wrote %s and model.ckpt\n", filepath.Join(c.Out, "report.json"))
	}
	return nil
}
