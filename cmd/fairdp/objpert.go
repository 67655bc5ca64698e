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
	"reflect"

	"github.com/fairdp/fairdp/linear"
	"github.com/fairdp/fairdp/trainer"
)

// runObjPert is `fairdp train --algo objpert ...` from cfg (the defaults,
// or the --config file's settings); args are the train flags.
func runObjPert(ctx context.Context, cfg trainer.Config, args []string, stdout, stderr io.Writer) error {
	c := cfg
	o := linear.ObjPertConfigOf(c)
	if reflect.ValueOf(o).IsZero() {
		// No settings (no --config, or one without objpert's): the
		// defaults. A report's settings keep the mechanism they ran.
		o = linear.ObjPertDefaults()
	}
	fs := newFlagSet("train", "train --algo objpert --epsilon E [--dataset adult] [--mechanism auto|pure|gaussian] [--delta δ] [--row-bound B] [--l2 Λ] [--weight-l2 W] [--label-range LO,HI] [--tune [--tune-trials N]] [--seed S] [--out D]", stderr)
	dataFlags(fs, &c)
	kindVar(fs, &c.Algo, "algo", "objpert (logistic regression by objective perturbation, pure ε-DP)")
	fs.Var(epsilonFlag{&c.Privacy.Epsilon}, "epsilon", "privacy budget ε for whole records: pure ε-DP, or (ε, δ)-DP with the Gaussian mechanism (inf: the same fit without noise)")
	fs.StringVar(&o.Mechanism, "mechanism", o.Mechanism, "objective-perturbation noise: pure (ε-DP, Chaudhuri et al. 2011), gaussian ((ε, δ)-DP, Kifer et al. 2012; noise grows like √d instead of d), or auto (chosen from n, d, ε, δ; the receipt says which and why)")
	fs.Float64Var(&c.Privacy.Delta, "delta", c.Privacy.Delta, "δ of the Gaussian mechanism (0: 1/n² of the training records); the pure mechanism has none")
	fs.BoolVar(&c.Privacy.AllowLargeDelta, "allow-large-delta", c.Privacy.AllowLargeDelta, "accept a δ ≥ 1/n (the receipt says so)")
	fs.Float64Var(&o.RowBound, "row-bound", o.RowBound, "public bound B on a preprocessed row's L2 norm; longer rows are clipped, in training and by the released model at prediction (0: √(the schema's feature columns), a typical encoded row's norm); choose it from knowledge of the features, never from the private rows")
	fs.Float64Var(&o.L2, "l2", o.L2, "L2 penalty Λ on the weights and intercept over rows scaled to norm ≤ 1 (0: the mechanism's rule, linear.ChooseObjPert, or 8 times the smallest the budget allows)")
	fs.Float64Var(&o.WeightL2, "weight-l2", o.WeightL2, "a further L2 penalty on the feature weights only, not the intercept (0: none, or the auto rule's when --l2 is 0 too); costs no privacy")
	fs.Var(floatsFlag{p: &o.LabelRange}, "label-range", "lo,hi: public range of a regression target (a schema with \"target\"): least squares, labels clipped into it; never read it off the private rows")
	fs.Float64Var(&o.ResidualScale, "residual-scale", o.ResidualScale, "least squares: residuals beyond h half-ranges of the label are clipped smoothly (0: 1)")
	fs.StringVar(&c.Out, "out", c.Out, "directory for report.json and model.ckpt (scored later by fairdp eval)")
	fs.BoolVar(&c.Quiet, "quiet", c.Quiet, "print only the summary")
	fs.BoolVar(&c.ReportTrainStats, "report-train-stats", c.ReportTrainStats, "also report exact statistics of the private training split (marked NOT PRIVATE)")
	fs.String("config", "", "repeat a run: its report.json; flags given with it win")
	tune := tuneFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	c = linear.WithObjPertConfig(c, o)
	var rep *trainer.Report
	var err error
	if tune.on {
		rep, err = linear.TuneObjPert(ctx, c, linear.ObjPertTuneOptions{Search: tune.opts, Log: stdout})
	} else {
		rep, err = trainer.RunConfig(ctx, c, stdout)
	}
	if err != nil {
		return flagError(err)
	}
	if res := linear.ObjPertTuneResultOf(rep); res != nil {
		ch := res.Chosen
		noise := fmt.Sprintf("ε_t = %.4g", ch.Epsilon)
		if ch.Mechanism == linear.MechanismGaussian {
			noise = fmt.Sprintf("σ = %.4g", ch.NoiseStd)
		}
		fmt.Fprintf(stdout, "tune: chose --mechanism %s --l2 %g --weight-l2 %g (%g and %g times the smallest Λ the budget allows; "+
			"a trial's %s) after %d trials\n", ch.Mechanism, ch.L2, ch.WeightL2, ch.L2Factor, ch.WeightFactor, noise, res.Trials)
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
