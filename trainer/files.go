package trainer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"

	"github.com/fairdp/fairdp/atomicfile"
	"github.com/fairdp/fairdp/models"
	"github.com/fairdp/fairdp/nn"
)

// The files a run writes in Config.Out (besides metrics.jsonl).
const (
	modelFile  = "model.ckpt"
	ReportFile = "report.json"
)

// CheckOut refuses an output directory that already holds a run's model or
// report: a new run there would silently replace a private model and its
// receipt, the record of what that model cost. A missing dir, or one
// without them, is fine. Callers that mean to replace them (or continue the
// same run) skip the check.
func CheckOut(dir string) error {
	for _, name := range []string{modelFile, ReportFile} {
		_, err := os.Lstat(filepath.Join(dir, name))
		switch {
		case err == nil:
			return FieldErrors{{Field: "Out", Msg: fmt.Sprintf("%s already holds %s of an earlier run (a model and its privacy receipt): "+
				"choose another directory, or replace them on purpose", dir, name)}}
		case !errors.Is(err, fs.ErrNotExist):
			return FieldErrors{{Field: "Out", Msg: err.Error()}}
		}
	}
	return nil
}

// staleTemp matches the temporary files atomicfile leaves (".NAME.tmpDIGITS")
// when a process is killed before it commits one of the run's files.
var staleTemp = regexp.MustCompile(`^\.(.+)\.tmp[0-9]+$`)

// removeStaleTemps removes from dir the leftover temporary files of the
// given names: a run killed with SIGKILL cannot remove its own, and a
// resumed or repeated run would otherwise leave them beside its results.
// Two runs writing into one directory at once are not supported (their
// results would overwrite each other); this may then fail the other's
// commit, loudly. Errors are ignored: a file left over is only clutter.
func removeStaleTemps(dir string, names ...string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		m := staleTemp.FindStringSubmatch(e.Name())
		if m == nil || !e.Type().IsRegular() {
			continue
		}
		for _, n := range names {
			if m[1] == n {
				os.Remove(filepath.Join(dir, e.Name()))
			}
		}
	}
}

// writeOutputs writes report.json and model.ckpt (with the receipt inside).
func writeOutputs[T nn.Float](dir string, rep *Report, m *models.Model[T], job *Job) error {
	return WriteModelOutputs(dir, rep, m, job.Preprocess, job.Source.String(), job.split)
}

// WriteModelOutputs writes model.ckpt, which carries the receipt, the
// fitted preprocessing and the split (what eval needs to score the records
// the model did not train on), and then report.json, each atomically. It is
// how every algorithm that ends in a fairdp model (the SGD family, objective
// perturbation) saves one, so their checkpoints are read the same way.
func WriteModelOutputs[T nn.Float](dir string, rep *Report, m *models.Model[T], preprocess []byte, seed string, split *SplitRecord) error {
	receipt, err := json.Marshal(rep.Privacy)
	if err != nil {
		return err
	}
	meta := models.Meta{
		Version:    Version,
		Privacy:    receipt,
		Preprocess: preprocess,
		Info: map[string]string{
			"algorithm": rep.Algorithm, "dataset": rep.Dataset, "backend": rep.Backend,
			"seed": seed,
		},
	}
	if split != nil {
		b, err := json.Marshal(split)
		if err != nil {
			return err
		}
		meta.Info[SplitInfoKey] = string(b)
	}
	if err := models.SaveFile(filepath.Join(dir, modelFile), m, meta); err != nil {
		return err
	}
	return atomicfile.WriteJSON(filepath.Join(dir, ReportFile), rep)
}
