package linear

import (
	"math"

	"github.com/fairdp/fairdp/trainer"
)

// privacy is the privacy target of the linear pipelines (objective
// perturbation, post-processing, the oracle learner and a private base
// classifier): ε (∞: not private), δ (0: 1/n² of the training records, for
// the mechanisms that have one) and whether a δ ≥ 1/n is allowed. Each
// pipeline's entry (RunObjPert, LoadFairData, RunFair) reads
// it from its trainer.Config once, with privacyOf, and passes it to the
// code that calibrates and charges the noise, so that code sees the numbers
// it uses rather than the whole configuration.
type privacy struct {
	Epsilon, Delta  float64
	AllowLargeDelta bool
}

// privacyOf is the privacy target cfg states (Privacy.Epsilon,
// Privacy.Delta, Privacy.AllowLargeDelta): the one place package linear
// reads trainer.Config's privacy section.
func privacyOf(cfg trainer.Config) privacy {
	p := cfg.Privacy
	return privacy{Epsilon: p.Epsilon, Delta: p.Delta, AllowLargeDelta: p.AllowLargeDelta}
}

// Private says whether p asks for noise: every ε but +∞.
func (p privacy) Private() bool { return !math.IsInf(p.Epsilon, 1) }
