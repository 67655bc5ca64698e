package trainer

// Evaluation of a saved model: `fairdp eval`'s pipeline, as a library call.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/fairdp/fairdp/atomicfile"
	"github.com/fairdp/fairdp/backend"
	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/loaders"
	"github.com/fairdp/fairdp/metrics"
)

// EvalOptions say which checkpoint EvaluateCheckpoint scores, and on what.
type EvalOptions struct {
	// Checkpoint is the model file written by a training run (model.ckpt,
	// or the model.json of a randomised classifier: RegisterModelFile), or
	// the run's output directory, whose model file is then scored.
	Checkpoint string
	// Data names the data to score (Dataset, Schema, DataDir, …). The
	// split's seed, fraction and limit are never read from it: they are the
	// model's own, from its checkpoint.
	Data Config
	// DataGiven is true when Data names the data (the user gave a data set
	// or schema); otherwise the model is scored on the data its checkpoint
	// names, so that eval of a model trained on a CSV scores that CSV and
	// not the default built-in data set.
	DataGiven bool
}

// EvalResult is a scored checkpoint.
type EvalResult struct {
	Checkpoint  string
	Arch, DType string
	// Data is the data scored; Scored says which part of it (the held-out
	// split, or the whole file) and HeldOut whether those records are the
	// ones the model did not train on.
	Data    *loaders.Dataset
	Scored  string
	HeldOut bool
	Test    metrics.Split
	// Receipt is the checkpoint's privacy receipt as stored (empty for a
	// model saved without one).
	Receipt json.RawMessage

	cfg    Config
	params int
}

// EvaluateCheckpoint loads a saved model (a checkpoint, a model file a
// registered reader reads, or a run directory holding either: modelFileIn)
// and scores it on the test split of its own train/test split (read from
// the model file), or on the whole file the options name when that is not
// the data it was trained on. Tabular data is encoded with the model's own
// fitted preprocessing, never refitted: a refit from another schema file
// could put the features in another order and score the model on nonsense.
func EvaluateCheckpoint(o EvalOptions) (*EvalResult, error) {
	cfg := o.Data
	if o.Checkpoint == "" {
		return nil, errors.New("eval: no checkpoint given")
	}
	ckpt, err := modelFileIn(o.Checkpoint)
	if err != nil {
		return nil, err
	}
	sm, err := openSavedModel(ckpt)
	if err != nil {
		return nil, err
	}
	rec := sm.Split
	own := !o.DataGiven && rec != nil
	if own {
		cfg.Dataset, cfg.Schema = rec.Dataset, rec.Schema
	}
	var fitted *loaders.Preprocessor
	if p := bytes.TrimSpace(sm.Preprocess); len(p) > 0 && !bytes.Equal(p, []byte("null")) {
		fitted = new(loaders.Preprocessor)
		if err := json.Unmarshal(p, fitted); err != nil {
			return nil, fmt.Errorf("%s: stored preprocessing: %w", ckpt, err)
		}
	}
	ev, err := loadEvalData(cfg, fitted, rec)
	if err != nil {
		if own {
			return nil, fmt.Errorf("%s: the data it was trained on (dataset %q, schema %q, paths as given to train): %w; "+
				"give --dataset (and --schema) to name them from here", ckpt, rec.Dataset, rec.Schema, err)
		}
		return nil, fmt.Errorf("%s: %w", ckpt, err)
	}
	if fitted == nil && ev.Data.X != nil {
		return nil, fmt.Errorf("%s has no stored preprocessing, so tabular data cannot be encoded the way the model was trained; "+
			"retrain it with this version of fairdp", ckpt)
	}
	if sm.Scored != "" {
		ev.Scored += "; " + sm.Scored
	}
	r := &EvalResult{Checkpoint: ckpt, Arch: sm.Arch, DType: sm.DType, Data: ev.Data, Scored: ev.Scored,
		HeldOut: ev.HeldOut, Receipt: sm.Receipt, cfg: cfg, params: sm.Params}
	if r.Test, err = sm.Score(ev.Data); err != nil {
		return nil, fmt.Errorf("%s: %w", ckpt, err)
	}
	// Not used: the report's config says what eval read.
	r.cfg.TrainFrac, r.cfg.Limit, r.cfg.Seed, r.cfg.SplitSeed = 0, 0, nil, nil
	if rec != nil {
		r.cfg.TrainFrac, r.cfg.Limit = rec.TrainFrac, rec.Limit
	}
	return r, nil
}

// Title names what was scored: "test" only for the records the model was
// not trained on.
func (r *EvalResult) Title() string {
	if r.HeldOut {
		return "test (held-out split of the training data)"
	}
	return "whole file (not the training data's held-out split)"
}

// WriteText prints the evaluation for people: the model, the data, the
// per-group table and the checkpoint's receipt.
func (r *EvalResult) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "%s (%s, %s) on %s\n", r.Checkpoint, r.Arch, r.DType, r.Data.Name)
	fmt.Fprintf(w, "scored: %s\n", r.Scored)
	for _, n := range r.Data.Notes {
		fmt.Fprintln(w, "data:", n)
	}
	if err := metrics.WriteTable(w, r.Title(), r.Test); err != nil {
		return err
	}
	if len(r.Receipt) > 0 {
		_, err := fmt.Fprintf(w, "privacy receipt: %s\n", r.Receipt)
		return err
	}
	return nil
}

// Report is the evaluation as a report (evalReport; extra.eval also says
// what was scored).
func (r *EvalResult) Report() (*Report, error) {
	rep, err := evalReport(r.cfg, r.Data.Name, r.Checkpoint, r.Arch, r.DType, r.Receipt, r.params, r.Test)
	if err != nil {
		return nil, err
	}
	if e := EvalResultOf(rep); e != nil {
		e.Scored = r.Scored
	}
	return rep, nil
}

// WriteReport writes Report as JSON to path (atomically).
func (r *EvalResult) WriteReport(path string) error {
	rep, err := r.Report()
	if err != nil {
		return err
	}
	return atomicfile.WriteJSON(path, rep)
}

// MatrixBackend describes the matrix-product backend this build uses (the
// BLAS and its threads), for `fairdp version`.
func MatrixBackend() string { return backend.Describe() }

// NoiseSource describes where a run with this seed draws its noise from
// (nil: crypto/rand), as the run's first line states it.
func NoiseSource(seed *uint64) string {
	_, src := dpops.NewRand(seed)
	return src.String()
}
