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

// ObjPertDefaults are the settings of a run that names none: the
// mechanism and Λ chosen from public facts (MechanismAuto, ChooseObjPert),
// the Gaussian mechanism's σ from its privacy profile and the pure
// mechanism's Jacobian term charged once (CalibrationTight), B = √d, and
// the released model clipping the rows it scores to B (ClipAtPredict). The
// CLI starts from them; RunObjPert uses them when cfg holds no
// objective-perturbation settings at all.
func ObjPertDefaults() ObjPertConfig {
	return ObjPertConfig{Mechanism: MechanismAuto, Calibration: CalibrationTight, ClipAtPredict: true}
}

// ObjPertConfig is the part of a trainer.Config only objective
// perturbation (Algo "objpert") reads. It uses trainer.Config's data
// settings, Seed, Privacy.Epsilon and, for the Gaussian mechanism,
// Privacy.Delta (0: 1/n² of the training records) and
// Privacy.AllowLargeDelta.
type ObjPertConfig struct {
	// Mechanism is MechanismPure, MechanismGaussian or MechanismAuto (the
	// default, ObjPertDefaults: ChooseObjPert picks the mechanism and, when
	// L2 is 0, Λ from n, d, ε and δ). "" is MechanismPure: the mechanism
	// every report written before the choice existed ran, so its settings
	// rerun unchanged. A report records the mechanism as asked (auto
	// decides again from the same public facts and recorded δ on a rerun)
	// and, in extra.objpert.mechanism, the one that ran.
	Mechanism string `json:"mechanism,omitempty"`
	// Calibration is how the noise is calibrated: CalibrationTight
	// (ObjPertDefaults: the Gaussian mechanism's σ the smallest its privacy
	// profile allows, the pure mechanism's Jacobian term charged once),
	// CalibrationProfile (the same σ, the pure mechanism as Algorithm 2)
	// or CalibrationKST. "" is CalibrationKST: the calibration every
	// report written before the profile one ran, so its settings rerun
	// unchanged; CalibrationProfile likewise repeats the runs recorded
	// with it.
	Calibration string `json:"calibration,omitempty"`
	// RowBound is the public bound B on a preprocessed feature row's L2
	// norm: rows are clipped to it, never measured to choose it (0:
	// DefaultRowBound, √ of the schema's source columns).
	RowBound float64 `json:"row_bound"`
	// ClipAtPredict makes the released model clip every row it scores to
	// RowBound, as its training rows were (the checkpoint's model spec
	// carries B: models.Spec.InputNormBound), so the test metrics, `fairdp
	// eval` and the library all score the transform the weights were
	// fitted on. It is post-processing with a public transform: no privacy
	// cost. ObjPertDefaults sets it; false (absent from reports written
	// before it) scores unclipped rows, as those runs did.
	ClipAtPredict bool `json:"clip_at_predict,omitempty"`
	// L2 is the regulariser Λ of (Λ/2)‖w‖² on the rescaled rows (0: a
	// rule on ε and the record count, DefaultObjPertL2).
	L2 float64 `json:"l2"`
	// WeightL2 is a further penalty (WeightL2/2)‖w‖² on the feature
	// weights only (ObjPertOptions.WeightL2; 0 with MechanismAuto and L2
	// 0: the rule's, ChooseObjPert).
	WeightL2 float64 `json:"weight_l2,omitempty"`
	// LabelRange is the public range [lo, hi] of a regression target
	// (least squares, for a schema with a target): labels outside it are
	// clipped into it. Never read off the private data.
	LabelRange []float64 `json:"label_range,omitempty"`
	// ResidualScale is h of least squares' smoothly clipped residuals, in
	// units of half the label range (0: DefaultResidualScale).
	ResidualScale float64 `json:"residual_scale,omitempty"`
}
