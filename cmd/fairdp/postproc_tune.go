package main

// `fairdp train --algo postproc --base objpert|dpsgd --tune`: the private
// fair pipeline chosen by private random search (linear.TunePostproc).

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/fairdp/fairdp/linear"
	"github.com/fairdp/fairdp/trainer"
)

// postprocTuneValues are --tune and its options for post-processing.
type postprocTuneValues struct {
	on              bool
	meanTrials, eta float64
	validFrac       float64
}

// postprocTuneFlags registers --tune, --tune-trials and --tune-eta on fs
// (the same names as the SGD algorithms' search), and --tune-valid-frac
// only to refuse it: the pipeline's trials are scored on the records they

// trained on.
func postprocTuneFlags(fs *flag.FlagSet) *postprocTuneValues {
	t := &postprocTuneValues{}
	fs.BoolVar(&t.on, "tune", false, "postproc with --base objpert|dpsgd: choose the base's share of ε, --bins and --gamma-share by private random search "+
		"(Papernot & Steinke 2022): a random number of complete private pipelines, each scored with noise on the training records "+
		"(accuracy less the --fairness violation), the best one returned; the receipt's ε (--epsilon) covers the whole search")
	fs.Float64Var(&t.meanTrials, "tune-trials", linear.DefaultPostprocTuneTrials, "with --tune: expected number of trials (the number itself is random: its law is part of the privacy analysis)")
	fs.Float64Var(&t.eta, "tune-eta", 0, "with --tune: η of the number of trials' truncated negative binomial law (0: logarithmic, 1: geometric)")
	fs.Float64Var(&t.validFrac, "tune-valid-frac", 0, "not for postproc: its trials are scored on the records they trained on")
	return t
}

// check refuses what the pipeline's search does not take, with the flags'
// names: the oracle learner, a hold-out, the tune options without --tune.
func (t *postprocTuneValues) check(fs *flag.FlagSet, algo trainer.AlgoName) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	switch {
	case !t.on && (given["tune-trials"] || given["tune-eta"] || given["tune-valid-frac"]):
		return fmt.Errorf("--tune-trials, --tune-eta and --tune-valid-frac need --tune")
	case !t.on:
		return nil
	case algo != linear.PostprocName:
		return fmt.Errorf("--algo %s cannot be tuned privately yet (postproc with --base objpert|dpsgd can)", algo)
	case given["tune-valid-frac"] && t.validFrac != 0:
		return fmt.Errorf("--tune-valid-frac is not taken by --algo postproc: each trial is scored on the training records it post-processed")
	case given["config"]:
		return fmt.Errorf("--tune cannot be combined with --config: a report's configuration is one setting, run it without --tune")
	}
	return nil
}

// tunePostproc runs the search on c's data and says which setting it
// chose (part of what its receipt covers).
func tunePostproc(ctx context.Context, c trainer.Config, t *postprocTuneValues, stdout io.Writer) (*trainer.Report, error) {
	d, err := linear.LoadFairSplits(c)
	if err != nil {
		return nil, err
	}
	j := linear.PostprocConfigOf(c)
	fmt.Fprintf(stdout, "fairdp %s: %s (tuned) on %s (%d train / %d test records, %d groups), %s base, γ = %g, ε = %s, %s\n",
		versionString(), c.Algo, d.Name, d.Train.N(), d.Test.N(), len(d.GroupNames), j.Base, j.Gamma, epsilonFlag{&c.Privacy.Epsilon},
		trainer.NoiseSource(c.Seed))
	var log io.Writer = stdout
	if c.Quiet {
		log = nil
	}
	rep, err := linear.TunePostproc(ctx, d, c, linear.PostprocTuneOptions{MeanTrials: t.meanTrials, Eta: t.eta, Log: log})
	if err != nil {
		return nil, err
	}
	ch := linear.PostprocTuneOf(rep).Chosen
	sigma := ""
	if ch.Sigma > 0 {
		sigma = fmt.Sprintf(", base σ = %.4g", ch.Sigma)
	}
	fmt.Fprintf(stdout, "tune: chose --base-epsilon %.4g (share %g of the trial's ε = %.4g) --bins %d --gamma-share %g --slack %s%s after %d trials\n",
		ch.BaseEpsilon, ch.BaseShare, ch.Epsilon, ch.Bins, ch.GammaShare, ch.Slack, sigma, linear.PostprocTuneOf(rep).Trials)
	return rep, nil
}
