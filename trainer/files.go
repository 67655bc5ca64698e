package trainer

import (
	"encoding/json"
	"path/filepath"

	"fairdp/atomicfile"
	"fairdp/models"
	"fairdp/nn"
)

// writeOutputs writes report.json and model.ckpt (with the receipt inside).
func writeOutputs[T nn.Float](dir string, rep *Report, m *models.Model[T], job *Job) error {
	receipt, err := json.Marshal(rep.Privacy)
	if err != nil {
		return err
	}
	meta := models.Meta{
		Version:    Version,
		Privacy:    receipt,
		Preprocess: job.Preprocess,
		Info: map[string]string{
			"algorithm": rep.Algorithm, "dataset": rep.Dataset, "backend": rep.Backend,
			"seed": job.Source.String(),
		},
	}
	if job.split != nil {
		// What eval needs to score the records the model did not train on.
		b, err := json.Marshal(job.split)
		if err != nil {
			return err
		}
		meta.Info[SplitInfoKey] = string(b)
	}
	if err := models.SaveFile(filepath.Join(dir, "model.ckpt"), m, meta); err != nil {
		return err
	}
	return atomicfile.WriteJSON(filepath.Join(dir, "report.json"), rep)
}
