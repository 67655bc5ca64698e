package main

// What a run's settings mean before it starts: the data's own training
// fraction, paths read from a --config file, --sigma without --epsilon, and
// an --out that already holds an earlier run.

import (
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/fairdp/fairdp/loaders"
	"github.com/fairdp/fairdp/trainer"
)

// dataOwnTrainFrac lets the data's own training fraction (a schema's
// train_frac, a built-in set's split) take effect when --train-frac is not
// given: the flag's default is only the fraction of data that names none.
// A --config file (a report records the fraction its run used) or a
// preset that sets a fraction of its own counts as giving it. A schema
// that cannot be read is left for the run to report.
func dataOwnTrainFrac(fs *flag.FlagSet, args []string, cfg *trainer.Config) {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "train-frac" })
	if _, ok := flagValue(args, "config"); ok || given || cfg.TrainFrac != trainer.Defaults().TrainFrac {
		return
	}
	c := *cfg
	c.TrainFrac = 0
	if c, err := trainer.ResolveTrainFrac(c); err == nil {
		*cfg = c
	}
}

// configRelativePaths makes the file paths a --config file gives (its
// schema, CSV data set and model spec, unless given as flags) work from
// another directory: a relative path that does not exist from the working
// directory but does next to the config file is read from there. One found
// in neither place is an error naming the config, not the bare file
// (report.json records the paths as the original run was given them,
// relative to the directory it ran in).
func configRelativePaths(fs *flag.FlagSet, args []string, cfg *trainer.Config) error {
	path, ok := flagValue(args, "config")
	if !ok {
		return nil
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, f := range []struct {
		flag string
		p    *string
	}{{"schema", &cfg.Schema}, {"dataset", &cfg.Dataset}, {"model-spec", &cfg.ModelSpecFile}} {
		v := *f.p
		if set[f.flag] || v == "" || filepath.IsAbs(v) || (f.flag == "dataset" && slices.Contains(loaders.Names(), v)) {
			continue
		}
		if _, err := os.Stat(v); err == nil {
			continue
		}
		if alt := filepath.Join(filepath.Dir(path), v); fileExists(alt) {
			*f.p = alt
			continue
		}
		return fmt.Errorf("--config %s: its %s %q is not found from the working directory nor next to the config "+
			"(paths in a report are relative to the directory its run ran in): run from there, or give --%s", path, f.flag, v, f.flag)
	}
	return nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// uncapSigma: --sigma alone asks for a noise level, not an ε target, so the
// built-in default ε = 1 is not made its cap (trainer refuses a σ that
// spends more than a finite ε): ε becomes inf and the receipt alone states
// what σ spends. An ε the user gave (--epsilon, --preset, --config) stays a
// cap the run must honour.
func uncapSigma(fs *flag.FlagSet, cfg *trainer.Config) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["sigma"] && cfg.Privacy.Sigma > 0 && !set["epsilon"] && !set["preset"] && !set["config"] {
		cfg.Privacy.Epsilon = math.Inf(1)
	}
}

// overwriteFlag adds --overwrite: every command that writes a model or a
// report into --out refuses a directory that holds an earlier run's without
// it, so a private model and its receipt are never replaced by accident.
func overwriteFlag(fs *flag.FlagSet) *bool {
	return fs.Bool("overwrite", false, "replace the model.ckpt and report.json an earlier run left in --out (refused otherwise)")
}

// checkOut refuses an --out that holds an earlier run's model or report
// (trainer.CheckOut) unless --overwrite, or --resume continues the run a
// --checkpoint holds (its outputs are that run's own).
func checkOut(out string, overwrite bool, ck trainer.CheckpointOptions) error {
	if out == "" || overwrite {
		return nil
	}
	if ck.Resume && ck.Dir != "" {
		if _, err := os.Stat(filepath.Join(ck.Dir, trainer.CheckpointFile)); err == nil {
			return nil
		}
	}
	if err := trainer.CheckOut(out); err != nil {
		return fmt.Errorf("%w (--overwrite)", err)
	}
	return nil
}
