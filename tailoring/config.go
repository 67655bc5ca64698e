package tailoring

import "github.com/fairdp/fairdp/trainer"

// SectionKey is the key of Config in report.json's "config" (and in a
// trainer.Config JSON given to `fairdp train --config`).
const SectionKey = "tailoring"

// ConfigOf returns the tailoring settings cfg holds (zero if none).
func ConfigOf(cfg trainer.Config) Config { return trainer.Section[Config](cfg, SectionKey) }

// WithConfig returns cfg holding t as its tailoring settings; cfg itself is
// not changed.
func WithConfig(cfg trainer.Config, t Config) trainer.Config {
	return trainer.WithSection(cfg, SectionKey, t)
}

// Config is the part of a trainer.Config only privacy-budget tailoring
// (Algo "tailoring", the paper's DPSE) and its baseline ("dpnose") read
// (Alabi and Wiggins 2023). They use trainer.Config's Dataset
// ("synthetic" or a CSV with Schema), TrainFrac (0: the schema's, else
// 0.75), Seed, Privacy.Delta (0: 1/n²), Privacy.AllowLargeDelta and
// Privacy.Clip (the per-example gradient clip Δ). Privacy.Epsilon is
// recorded from the receipt: the budget is Rho.
type Config struct {
	Task   string    `json:"task"`   // "regression" or "classification"
	Rho    []float64 `json:"rho"`    // total zCDP budget(s) ρ; several compare DPSE and DPNoSE at each
	Trials int       `json:"trials"` // independent private fits of the same data
	// Workers runs trials in parallel (0: GOMAXPROCS); results do not
	// depend on it.
	Workers int `json:"workers,omitempty"`
	// Synthetic data: group sizes, slopes β_k, noise sd (one or one per group).
	Groups  []float64 `json:"groups,omitempty"`
	Slopes  []float64 `json:"slopes,omitempty"`
	Noise   []float64 `json:"noise,omitempty"`
	Model   string    `json:"model"`   // "pooled" or "per-group"
	Variant string    `json:"variant"` // "gd" or "ols"
	// NoseBudget: DPNoSE spends all of ρ ("rho") or only DPSE's stage-2
	// budget μ ("mu").
	NoseBudget   string  `json:"nose_budget"`
	TauShare     float64 `json:"tau_share"` // τ/ρ, stage 1's share
	Steps        int     `json:"steps"`
	LR           float64 `json:"lr"`
	LossClip     float64 `json:"loss_clip"`     // 0: y-bound², 10 for logistic
	ResidualClip float64 `json:"residual_clip"` // 0: y-bound²
	Box          float64 `json:"box"`
	Eta          float64 `json:"eta"`        // bounded group loss: max_k ℓ_k ≤ Eta
	Multiplier   float64 `json:"multiplier"` // its Lagrange multiplier G (0: off)
	// XBound and YBound are the public bounds on a feature row's L2 norm
	// (intercept included) and on |y|; 0 for synthetic data: the
	// generator's (SyntheticBounds). The report records the
	// bounds used.
	XBound     float64 `json:"x_bound"`
	YBound     float64 `json:"y_bound"`
	Ridge      float64 `json:"ridge"`
	NoiseRidge float64 `json:"noise_ridge"`
	Average    bool    `json:"average"`
	// Objective reads stage 2's group losses: "means" (Algorithm 2, the
	// default when empty) or "sums" (the paper's synthetic study).
	Objective string `json:"objective,omitempty"`
	// WarmStart starts stage 2 at stage 1's private OLS fit (gd only).
	WarmStart bool `json:"warm_start,omitempty"`
}
