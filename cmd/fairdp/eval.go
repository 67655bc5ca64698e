package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"fairdp/atomicfile"
	"fairdp/loaders"
	"fairdp/metrics"
	"fairdp/models"
	"fairdp/trainer"
)

func runEval(args []string, stdout, stderr io.Writer) error {
	cfg := trainer.Defaults()
	var ckpt, out string
	fs := newFlagSet("eval", "eval --model CKPT [--dataset D --seed S ...]", stderr)
	fs.StringVar(&ckpt, "model", "", "checkpoint written by 'fairdp train --out' (model.ckpt)")
	fs.StringVar(&out, "out", "", "write the evaluation as JSON to this file")
	dataFlags(fs, &cfg)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if ckpt == "" {
		return errors.New("eval: --model CKPT is required")
	}
	m, meta, err := models.LoadFile(ckpt)
	if err != nil {
		return err
	}
	if cfg.Seed == nil {
		fmt.Fprintln(stderr, "fairdp eval: no --seed: the test split is a fresh random one, not necessarily the one held out in training")
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
	job, err := trainer.PrepareFitted(cfg, stdout, fitted)
	if err != nil {
		return err
	}
	if fitted == nil && job.Test.X != nil {
		return fmt.Errorf("%s has no stored preprocessing, so tabular data cannot be encoded the way the model was trained; "+
			"retrain it with this version of fairdp", ckpt)
	}
	var sp metrics.Split
	params := 0
	switch mm := m.(type) {
	case *models.Model[float32]:
		sp, err = trainer.Evaluate(mm, job.Test)
		params = mm.NumParams()
	case *models.Model[float64]:
		sp, err = trainer.Evaluate(mm, job.Test)
		params = mm.NumParams()
	default:
		err = fmt.Errorf("%s: unsupported model type %T", ckpt, m)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s (%s, %s) on %s\n", ckpt, meta.Spec.Arch, meta.DType, job.Test.Name)
	metrics.WriteTable(stdout, "test", sp)
	if len(meta.Privacy) > 0 {
		fmt.Fprintf(stdout, "privacy receipt: %s\n", meta.Privacy)
	}
	if out == "" {
		return nil
	}
	rep, err := trainer.EvalReport(cfg, job.Test.Name, ckpt, meta, params, sp)
	if err != nil {
		return err
	}
	return atomicfile.WriteJSON(out, rep)
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
