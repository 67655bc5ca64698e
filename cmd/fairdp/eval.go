package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"fairdp/atomicfile"
	"fairdp/loaders"
	"fairdp/metrics"
	"fairdp/models"
	"fairdp/trainer"
)

// evalIgnored are the data flags eval accepts (its synopsis has always
// shown them) but does not use: the split, its fraction and limit are the
// model's own, read from its checkpoint.
var evalIgnored = []string{"seed", "split-seed", "train-frac", "limit"}

func runEval(args []string, stdout, stderr io.Writer) error {
	cfg := trainer.Defaults()
	var ckpt, out string
	fs := newFlagSet("eval", "eval --model CKPT [--dataset D --schema S]", stderr)
	fs.StringVar(&ckpt, "model", "", "checkpoint written by 'fairdp train --out' (model.ckpt)")
	fs.StringVar(&out, "out", "", "write the evaluation as JSON to this file")
	dataFlags(fs, &cfg)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if ckpt == "" {
		return errors.New("eval: --model CKPT is required")
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	m, meta, err := models.LoadFile(ckpt)
	if err != nil {
		return err
	}
	rec, err := trainer.ReadSplitRecord(meta)
	if err != nil {
		return fmt.Errorf("%s: %w", ckpt, err)
	}
	for _, f := range evalIgnored {
		if set[f] {
			fmt.Fprintf(stderr, "fairdp eval: --%s is not used: the model's own train/test split is read from its checkpoint\n", f)
		}
	}
	// Without --dataset and --schema the data is the model's own, as its
	// checkpoint names it (not the default built-in data set).
	own := !set["dataset"] && !set["schema"] && rec != nil
	if own {
		cfg.Dataset, cfg.Schema = rec.Dataset, rec.Schema
	}
	// Tabular data is encoded with the checkpoint's own fitted
	// preprocessing, never refitted: a refit from another schema file could
	// put the features in another order and score the model on nonsense.
	var fitted *loaders.Preprocessor
	if p := bytes.TrimSpace(meta.Preprocess); len(p) > 0 && !bytes.Equal(p, []byte("null")) {
		fitted = new(loaders.Preprocessor)
		if err := json.Unmarshal(p, fitted); err != nil {
			return fmt.Errorf("%s: stored preprocessing: %w", ckpt, err)
		}
	}
	ev, err := trainer.LoadEvalData(cfg, fitted, rec)
	if err != nil {
		if own {
			return fmt.Errorf("%s: the data it was trained on (dataset %q, schema %q, paths as given to train): %w; "+
				"give --dataset (and --schema) to name them from here", ckpt, rec.Dataset, rec.Schema, err)
		}
		return fmt.Errorf("%s: %w", ckpt, err)
	}
	if fitted == nil && ev.Data.X != nil {
		return fmt.Errorf("%s has no stored preprocessing, so tabular data cannot be encoded the way the model was trained; "+
			"retrain it with this version of fairdp", ckpt)
	}
	var sp metrics.Split
	params := 0
	switch mm := m.(type) {
	case *models.Model[float32]:
		sp, err = trainer.Evaluate(mm, ev.Data)
		params = mm.NumParams()
	case *models.Model[float64]:
		sp, err = trainer.Evaluate(mm, ev.Data)
		params = mm.NumParams()
	default:
		err = fmt.Errorf("%s: unsupported model type %T", ckpt, m)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s (%s, %s) on %s\n", ckpt, meta.Spec.Arch, meta.DType, ev.Data.Name)
	fmt.Fprintf(stdout, "scored: %s\n", ev.Scored)
	for _, n := range ev.Data.Notes {
		fmt.Fprintln(stdout, "data:", n)
	}
	metrics.WriteTable(stdout, evalTableTitle(ev.HeldOut), sp)
	if len(meta.Privacy) > 0 {
		fmt.Fprintf(stdout, "privacy receipt: %s\n", meta.Privacy)
	}
	if out == "" {
		return nil
	}
	cfg.TrainFrac, cfg.Limit, cfg.Seed, cfg.SplitSeed = 0, 0, nil, nil // not used: the report's config says what eval read
	if rec != nil {
		cfg.TrainFrac, cfg.Limit = rec.TrainFrac, rec.Limit
	}
	rep, err := trainer.EvalReport(cfg, ev.Data.Name, ckpt, meta, params, sp)
	if err != nil {
		return err
	}
	if e := trainer.EvalResultOf(rep); e != nil {
		e.Scored = ev.Scored
	}
	return atomicfile.WriteJSON(out, rep)
}

// evalTableTitle names what eval scored: "test" only for the records the
// model was not trained on.
func evalTableTitle(heldOut bool) string {
	if heldOut {
		return "test (held-out split of the training data)"
	}
	return "whole file (not the training data's held-out split)"
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
	job, err := trainer.Prepare(cfg, stdout)
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
