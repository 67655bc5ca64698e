package linear

import "github.com/fairdp/fairdp/trainer"

// PostprocSectionKey is the key of PostprocConfig in report.json's
// "config" (and in a trainer.Config JSON given to `fairdp train
// --config`). It keeps the name of the paper's authors that every
// report.json and sweep.json written so far carries, so `--config
// report.json` still repeats those runs.
const PostprocSectionKey = "jagielski"

// PostprocConfigOf returns the post-processing and oracle settings cfg
// holds (zero if none).
func PostprocConfigOf(cfg trainer.Config) PostprocConfig {
	return trainer.Section[PostprocConfig](cfg, PostprocSectionKey)
}

// WithPostprocConfig returns cfg holding p as its post-processing and
// oracle settings; cfg itself is not changed.
func WithPostprocConfig(cfg trainer.Config, p PostprocConfig) trainer.Config {
	return trainer.WithSection(cfg, PostprocSectionKey, p)
}

// PostprocConfig is the part of a trainer.Config only DP post-processing
// and the DP oracle learner read (Jagielski et al. 2019). They use
// trainer.Config's data settings (Dataset, Schema, DataDir, TrainFrac, Limit,
// Seed), Privacy.Epsilon (ε for the sensitive attribute), and for the
// oracle Privacy.Delta (0: 1/n² of the training records) and
// Privacy.AllowLargeDelta.
type PostprocConfig struct {
	Gamma    float64 `json:"gamma"`     // allowed difference γ of the equalised rates
	Fairness string  `json:"fairness"`  // "eo" (false- and true-positive rates), "fpr" (false-positive rates) or "dp" (positive rates; post-processing only)
	AllPairs bool    `json:"all_pairs"` // constrain every pair of groups, not every group against group 0
	// Post-processing: failure probability of the LP's slack, score bins
	// (2: Ŷ = [score ≥ Threshold]; more: quantiles), the base logistic
	// regression's L2 penalty, and optionally an external model's scores.
	Beta float64 `json:"beta"`
	Bins int     `json:"bins"`
	// Slack is the rule of the LP's privacy slack ("" or "union": the
	// paper's, at Beta; "sd": SlackZ standard deviations of the noisy
	// constrained difference; "none"), and GammaShare > 0 makes γ the
	// larger of Gamma and GammaShare times the noisy violation of the
	// unconstrained post-processed classifier (PostProcessConfig);
	// GammaShareAuto (a private base only) takes PrivateGammaShare's
	// rule, and the report records the share it resolved to.
	// Monotone smooths the noisy cells so the positive share rises with
	// the score bin in every group (PostProcessConfig.Monotone).
	Monotone   bool         `json:"monotone,omitempty"`
	Slack      string       `json:"slack,omitempty"`
	SlackZ     float64      `json:"slack_z,omitempty"`
	GammaShare float64      `json:"gamma_share,omitempty"`
	Threshold  float64      `json:"threshold"`
	L2         float64      `json:"l2"`
	Scores     ScoresConfig `json:"scores,omitzero"`
	// Base is post-processing's base classifier: "" (plain logistic
	// regression fitted without privacy, the paper's setting), "objpert"
	// (logistic regression by objective perturbation at BaseEpsilon, pure
	// ε-DP for whole records) or "dpsgd" (logistic regression by DP-SGD
	// at BaseEpsilon and Privacy.Delta, (ε, δ)-DP for whole records); with
	// either the pipeline protects every attribute. Privacy.Epsilon is
	// then the total: the base spends BaseEpsilon of it (0:
	// DefaultBaseEpsilon), post-processing the rest, and the receipt
	// composes the two (composeBaseReceipt).
	Base        string  `json:"base,omitempty"`
	BaseEpsilon float64 `json:"base_epsilon,omitempty"`
	// BaseClipAtPredict makes the objpert base score rows clipped to its
	// row bound, the transform its weights were fitted on
	// (ObjPertConfig.ClipAtPredict; post-processing of a public transform,
	// no privacy cost). PostprocDefaults sets it; false (absent from
	// reports written before it) scores unclipped rows, as those runs did.
	BaseClipAtPredict bool `json:"base_clip_at_predict,omitempty"`
	// AddRemoveCells lets the cell counts on a base private under
	// add-remove (DP-SGD) carry Laplace(1/ε₂), their sensitivity under
	// that relation (cellRelation, PostProcessConfig.Relation).
	// PostprocDefaults sets it; false (absent from reports written before
	// it) keeps the paper's Laplace(2/ε₂), as those runs had.
	AddRemoveCells bool `json:"add_remove_cells,omitempty"`
	// Oracle learner: rounds T, the largest ‖λ‖₁ B of the auditor,
	// exponentiated-gradient rate, share of ε on the group-label counts,
	// ridge of the least-squares learner (0: 1e-4 per record), and basic
	// composition (pure ε-DP, δ = 0) instead of advanced composition.
	// Fallback lets a round answer with a constant classifier ("" or
	// "none": never, "cost" or "error"; see OracleConfig.Fallback).
	Rounds           int     `json:"rounds"`
	Bound            float64 `json:"bound"`
	Eta              float64 `json:"eta"`
	CountShare       float64 `json:"count_share"`
	Ridge            float64 `json:"ridge"`
	BasicComposition bool    `json:"basic_composition,omitempty"`
	Fallback         string  `json:"fallback,omitempty"`
}

// ScoresConfig names an external model's scores for post-processing: a CSV
// with a header, one row per record (then Dataset is not read).
type ScoresConfig struct {
	File        string `json:"file"`
	ScoreColumn string `json:"score_column"`
	GroupColumn string `json:"group_column"`
	LabelColumn string `json:"label_column"`
	// SplitColumn says train or test per row ("": a TrainFrac split).
	SplitColumn string `json:"split_column,omitempty"`
	// Positive is the label value of the positive class (others are
	// negative; with "1", labels must be 0 or 1).
	Positive string `json:"positive"`
}
