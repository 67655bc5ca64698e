package main

// `fairdp train --algo postproc --base objpert|dpsgd --tune`: the private
// fair pipeline chosen by private random search (linear.TunePostproc);
// `fairdp train --algo oracle --tune`: the DP oracle learner's
// (linear.TuneOracle).

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/fairdp/fairdp/linear"
	"github.com/fairdp/fairdp/trainer"
)

// postprocTuneValues are --tune and its options for post-processing and
// the oracle learner.
type postprocTuneValues struct {
	on              bool
	meanTrials, eta float64
	validFrac       float64
}

// postprocTuneFlags registers --tune, --tune-trials and --tune-eta on fs
// (the same names as the SGD algorithms' search), and --tune-valid-frac
// only to refuse it: the searches' trials are scored on the records they
// trained on.
func postprocTuneFlags(fs *flag.FlagSet) *postprocTuneValues {
	t := &postprocTuneValues{}
	fs.BoolVar(&t.on, "tune", false, "postproc with --base objpert|dpsgd: choose the base's share of ε, --bins and --gamma-share; oracle: "+
		"choose --rounds, --bound, --eta and --fallback; by private random search "+
		"(Papernot & Steinke 2022): a random number of complete private runs, each scored with noise on the training records "+
		"(accuracy less the --fairness violation), the best one returned; the receipt's ε (--epsilon) covers the whole search "+
		"(for oracle, as its own: the sensitive attribute only)")
	fs.Float64Var(&t.meanTrials, "tune-trials", linear.DefaultPostprocTuneTrials, "with --tune: expected number of trials (the number itself is random: its law is part of the privacy analysis)")
	fs.Float64Var(&t.eta, "tune-eta", 0, "with --tune: η of the number of trials' truncated negative binomial law (0: logarithmic, 1: geometric)")
	fs.Float64Var(&t.validFrac, "tune-valid-frac", 0, "not for postproc or oracle: their trials are scored on the records they trained on")
	return t
}

// check refuses what the searches do not take, with the flags' names: a
// hold-out, the tune options without --tune, and for the oracle the
// settings its search chooses and the composition it sets.
func (t *postprocTuneValues) check(fs *flag.FlagSet, algo trainer.AlgoName) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	switch {
	case !t.on && (given["tune-trials"] || given["tune-eta"] || given["tune-valid-frac"]):
		return fmt.Errorf("--tune-trials, --tune-eta and --tune-valid-frac need --tune")
	case !t.on:
		return nil
	case algo != linear.PostprocName && algo != linear.OracleName:
		return fmt.Errorf("--algo %s cannot be tuned privately yet (postproc with --base objpert|dpsgd and oracle can)", algo)
	case given["tune-valid-frac"] && t.validFrac != 0:
		return fmt.Errorf("--tune-valid-frac is not taken by --algo %s: each trial is scored on the training records it trained on", algo)
	case given["config"]:
		return fmt.Errorf("--tune cannot be combined with --config: a report's configuration is one setting, run it without --tune")
	case algo == linear.OracleName:
		for _, f := range []string{"rounds", "bound", "eta", "fallback"} {
			if given[f] {
				return fmt.Errorf("--%s is what --algo oracle --tune chooses: leave it out (the search draws it from linear.DefaultOracleTuneSpace)", f)
			}
		}
		if f := fs.Lookup("delta"); given["delta"] && f != nil && f.Value.String() == "0" {
			return fmt.Errorf("--delta 0 (basic composition) cannot be tuned: the search composes its trials in Rényi DP and states (ε, δ) at --delta")
		}
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
	base := ", " + j.Base + " base"
	if c.Algo == linear.OracleName {
		base = ""
	}
	fmt.Fprintf(stdout, "fairdp %s: %s (tuned) on %s (%d train / %d test records, %d groups)%s, γ = %g, ε = %s, %s\n",
		versionString(), c.Algo, d.Name, d.Train.N(), d.Test.N(), len(d.GroupNames), base, j.Gamma, epsilonFlag{&c.Privacy.Epsilon},
		trainer.NoiseSource(c.Seed))
	var log io.Writer = stdout
	if c.Quiet {
		log = nil
	}
	if c.Algo == linear.OracleName {
		rep, err := linear.TuneOracle(ctx, d, c, linear.OracleTuneOptions{MeanTrials: t.meanTrials, Eta: t.eta, Log: log})
		if err != nil {
			return nil, err
		}
		tr := linear.OracleTuneOf(rep)
		ch := tr.Chosen
		fmt.Fprintf(stdout, "tune: chose --rounds %d --bound %g --eta %g --fallback %s (each release ε' = %.4g, the counts' %.4g) after %d trials\n",
			ch.Rounds, ch.Bound, ch.Eta, ch.Fallback, ch.PerRoundEpsilon, ch.CountsEpsilon, tr.Trials)
		return rep, nil
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
	fmt.Fprintf(stdout, "tune: chose --base-epsilon %g (share %g of the trial's ε = %.4g) --bins %d --gamma-share %g --slack %s%s after %d trials\n",
		ch.BaseEpsilon, ch.BaseShare, ch.Epsilon, ch.Bins, ch.GammaShare, ch.Slack, sigma, linear.PostprocTuneOf(rep).Trials)
	return rep, nil
}
