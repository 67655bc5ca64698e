package linear

import "github.com/fairdp/fairdp/trainer"

// ObjPertSectionKey is the key of ObjPertConfig in report.json's "config"
// (and in a trainer.Config JSON given to `fairdp train --config`): the key
// the settings had when they were a field of trainer.Config, so `--config
// report.json` still repeats those runs.
const ObjPertSectionKey = "objpert"

// ObjPertConfigOf returns the objective-perturbation settings cfg holds
// (zero if none).
func ObjPertConfigOf(cfg trainer.Config) ObjPertConfig {
	return trainer.Section[ObjPertConfig](cfg, ObjPertSectionKey)
}

// WithObjPertConfig returns cfg holding o as its objective-perturbation
// settings; cfg itself is not changed.
func WithObjPertConfig(cfg trainer.Config, o ObjPertConfig) trainer.Config {
	return trainer.WithSection(cfg, ObjPertSectionKey, o)
}

// ObjPertConfig is the part of a trainer.Config only objective
// perturbation (Algo "objpert") reads. It uses trainer.Config's data
// settings, Seed and Privacy.Epsilon (pure ε-DP: Privacy.Delta is not
// read).
type ObjPertConfig struct {
	// RowBound is the public bound B on a preprocessed feature row's L2
	// norm: rows are clipped to it, never measured to choose it (0: √d for
	// d encoded features, DefaultRowBound).
	RowBound float64 `json:"row_bound"`
	// L2 is the regulariser Λ of (Λ/2)‖w‖² on the rescaled rows (0: a
	// rule on ε and the record count, DefaultObjPertL2).
	L2 float64 `json:"l2"`
	// LabelRange is the public range [lo, hi] of a regression target
	// (least squares, for a schema with a target): labels outside it are
	// clipped into it. Never read off the private data.
	LabelRange []float64 `json:"label_range,omitempty"`
	// ResidualScale is h of least squares' smoothly clipped residuals, in
	// units of half the label range (0: DefaultResidualScale).
	ResidualScale float64 `json:"residual_scale,omitempty"`
}
