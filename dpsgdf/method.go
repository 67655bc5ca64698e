package dpsgdf

import (
	"math"

	"github.com/fairdp/fairdp/trainer"
)

// Method is DPSGD-F or Naïve as a trainer.PrivateOptions method. Naming it
// imports this package, which registers both algorithms, so a program
// using them cannot compile without it.
type Method struct {
	// Policy is Adaptive (DPSGD-F, Xu, Du and Wu 2021; also when empty) or
	// Naive (DP-SGD with noisy group reweighting). Flat is plain DP-SGD:
	// use trainer.DPSGDMethod.
	Policy Policy
	// CountNoiseRatio is σ1/σ2, the noise on the released per-group counts
	// relative to the gradient noise (0: the default).
	CountNoiseRatio float64
	// CountGuard is DPSGD-F's rule for a group whose noisy counts are ≤ 0
	// ("": GuardSmooth on tabular data, whose defaults adapt to the data,
	// else DefaultCountGuard); Naïve refuses one.
	CountGuard CountGuard
	// NaiveGuard is Naïve's rule for turning a noisy group count into a
	// weight ("": NaiveGuardSmooth on tabular data, else
	// DefaultNaiveGuard); DPSGD-F refuses one.
	NaiveGuard NaiveGuard
}

// Algo is the policy's registered name (Name or NaiveName).
func (m Method) Algo() trainer.AlgoName {
	if m.Policy == "" {
		return Name
	}
	return trainer.AlgoName(m.Policy)
}

// Configure sets the count-noise ratio and the count or Naïve guard,
// naming a bad policy, ratio or guard.
func (m Method) Configure(cfg *trainer.Config) error {
	var errs trainer.FieldErrors
	switch m.Policy {
	case "", Adaptive, Naive:
	default:
		errs = append(errs, trainer.FieldError{Field: "Policy", Msg: `must be dpsgdf.Adaptive or dpsgdf.Naive (got "` + string(m.Policy) +
			`"; plain DP-SGD is trainer.DPSGDMethod)`})
	}
	if !(m.CountNoiseRatio >= 0) || math.IsInf(m.CountNoiseRatio, 1) {
		errs = append(errs, trainer.FieldError{Field: "CountNoiseRatio", Msg: "must be a finite number ≥ 0 (0: the default)"})
	}
	if m.CountGuard != "" {
		if err := m.CountGuard.check(); err != nil {
			errs = append(errs, trainer.FieldError{Field: "CountGuard", Msg: err.Error()})
		} else if m.Policy == Naive {
			errs = append(errs, trainer.FieldError{Field: "CountGuard", Msg: "is DPSGD-F's (Naïve's is NaiveGuard)"})
		}
	}
	if m.NaiveGuard != "" {
		if err := m.NaiveGuard.check(); err != nil {
			errs = append(errs, trainer.FieldError{Field: "NaiveGuard", Msg: err.Error()})
		} else if m.Policy != Naive {
			errs = append(errs, trainer.FieldError{Field: "NaiveGuard", Msg: "is Naïve's (DPSGD-F's is CountGuard)"})
		}
	}
	if len(errs) > 0 {
		return errs
	}
	if m.CountNoiseRatio > 0 {
		cfg.Fair.CountNoiseRatio = m.CountNoiseRatio
	}
	if m.CountGuard != "" {
		cfg.Fair.CountGuard = string(m.CountGuard)
	}
	if m.NaiveGuard != "" {
		cfg.Fair.NaiveGuard = string(m.NaiveGuard)
	}
	return nil
}
