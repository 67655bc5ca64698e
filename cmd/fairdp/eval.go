package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/fairdp/fairdp/loaders"
	"github.com/fairdp/fairdp/trainer"
)

// evalIgnored are the data flags eval accepts (its synopsis has always
// shown them) but does not use: the split, its fraction and limit are the
// model's own, read from its model file.
var evalIgnored = []string{"seed", "split-seed", "train-frac", "limit"}

func runEval(args []string, stdout, stderr io.Writer) error {
	cfg := trainer.Defaults()
	var ckpt, out string
	fs := newFlagSet("eval", "eval --model FILE|DIR [--dataset D --schema S]", stderr)
	fs.StringVar(&ckpt, "model", "", "model written by 'fairdp train --out': model.ckpt, the model.json of --algo postproc|oracle "+
		"(scored expected over its coins), or the --out directory holding either")
	fs.StringVar(&out, "out", "", "write the evaluation as JSON to this file")
	dataFlags(fs, &cfg)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if ckpt == "" {
		return errors.New("eval: --model FILE|DIR is required (model.ckpt, a postproc or oracle model.json, or a train --out directory)")
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, f := range evalIgnored {
		if set[f] {
			fmt.Fprintf(stderr, "fairdp eval: --%s is not used: the model's own train/test split is read from its model file\n", f)
		}
	}
	res, err := trainer.EvaluateCheckpoint(trainer.EvalOptions{Checkpoint: ckpt, Data: cfg, DataGiven: set["dataset"] || set["schema"]})
	if err != nil {
		return err
	}
	if err := res.WriteText(stdout); err != nil {
		return err
	}
	if out == "" {
		return nil
	}
	return res.WriteReport(out)
}

func runData(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "describe" {
		return errors.New("usage: fairdp data describe [--dataset D --schema S ...]")
	}
	cfg := trainer.Defaults()
	fs := newFlagSet("data describe", "data describe [--dataset D ...]", stderr)
	dataFlags(fs, &cfg)
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	dataOwnTrainFrac(fs, args[1:], &cfg)
	job, err := trainer.Prepare(cfg, trainer.PrepareOptions{Log: stdout})
	if err != nil {
		return err
	}
	for _, d := range []*loaders.Dataset{job.Train, job.Test} {
		if err := loaders.Describe(d).WriteText(stdout); err != nil {
			return err
		}
		fmt.Fprintln(stdout)
	}
	return nil
}
