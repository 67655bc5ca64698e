package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/fairdp/fairdp/trainer"
)

// tuneFlagValues are `fairdp train --tune` and its options.
type tuneFlagValues struct {
	on   bool
	opts trainer.TuneOptions
}

func init() {
	// The options' fields, named by trainer's errors, and their flags.
	for field, name := range map[string]string{"Tune.MeanTrials": "--tune-trials", "Tune.ValidFrac": "--tune-valid-frac",
		"Tune.Eta": "--tune-eta"} {
		fieldFlags[field] = name
	}
}

// tuneFlags registers --tune and its options on fs.
func tuneFlags(fs *flag.FlagSet) *tuneFlagValues {
	t := &tuneFlagValues{}
	fs.BoolVar(&t.on, "tune", false, "choose --lr, --epochs, --batch and --clip (fermi: and --lambda; objpert: --l2) by private random search (Papernot & Steinke 2022): "+
		"a random number of complete private trials, each scored with noise on training records (never the test split; fermi: accuracy less the fairness violation), "+
		"the best one returned; the receipt's ε (--epsilon) covers the whole search ("+tunableList()+")")
	fs.Float64Var(&t.opts.MeanTrials, "tune-trials", 10, "with --tune: expected number of trials (the number itself is random: its law is part of the privacy analysis)")
	fs.Float64Var(&t.opts.Eta, "tune-eta", 0, "with --tune: η of the number of trials' truncated negative binomial law (0: logarithmic, 1: geometric)")
	fs.Float64Var(&t.opts.ValidFrac, "tune-valid-frac", 0, "with --tune: share of the training records held out to score the trials "+
		"(0: none, each trial is scored on the records it trained on)")
	return t
}

// tunableList is the algorithms --tune searches, for its help.
func tunableList() string {
	names := []string{}
	for _, a := range trainer.Tunable() {
		names = append(names, string(a))
	}
	return strings.Join(names, ", ")
}

// refuseTune refuses --tune for algo, a pipeline command whose own flags
// have none: the same message trainer.Tune gives an algorithm it cannot
// search, rather than the flag parser's "not defined".
func refuseTune(algo trainer.AlgoName, args []string) error {
	if tuneAsked(args) && !slices.Contains(trainer.Tunable(), algo) {
		return fmt.Errorf("--algo %s cannot be tuned privately yet (tunable: %v)", algo, trainer.Tunable())
	}
	return nil
}

// tuneAsked says whether args (before any "--") ask for --tune.
func tuneAsked(args []string) bool {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "--tune" || a == "-tune" || (strings.HasPrefix(a, "--tune=") || strings.HasPrefix(a, "-tune=")) && !strings.HasSuffix(a, "=false") {
			return true
		}
	}
	return false
}

// trainOrTune trains job, by private search when --tune is given, and
// says which setting the search chose (part of what its receipt covers).
func trainOrTune(ctx context.Context, job *trainer.Job, t *tuneFlagValues, checkpoint string, stdout io.Writer) (*trainer.Report, error) {
	if !t.on {
		return trainer.Train(ctx, job)
	}
	if checkpoint != "" {
		return nil, fmt.Errorf("--tune cannot be combined with --checkpoint: a search runs whole or not at all")
	}
	rep, err := trainer.Tune(ctx, job, t.opts)
	if err != nil {
		return nil, flagError(err)
	}
	res := trainer.TuneResultOf(rep)
	c := res.Chosen
	lambda := ""
	if c.Lambda != nil {
		lambda = fmt.Sprintf(" --lambda %g", *c.Lambda)
	}
	fmt.Fprintf(stdout, "tune: chose --lr %g --epochs %d --batch %d --clip %g%s (σ = %.4g) after %d trials\n",
		c.LR, c.Epochs, c.Batch, c.Clip, lambda, c.Sigma, res.Trials)
	return rep, nil
}

// refuseRemoteTune refuses --tune for cmd, a command of a federation whose
// silos run in other processes (`fairdp federate`, `fairdp silo serve`):
// a search there would need every silo to run the same random trials and
// release its score under one plan, which the protocol does not carry.
func refuseRemoteTune(cmd string, args []string) error {
	if tuneAsked(args) {
		return fmt.Errorf("%s: --tune is not available for silos in other processes: tune in one process with "+
			"`fairdp train --algo steffle --tune` (each silo's ε covers the whole search)", cmd)
	}
	return nil
}
