package trainer

import "math"

// CheckPrivacy checks the privacy values every private algorithm shares:
// ε > 0 (+Inf: not private), δ in [0, 1), a finite clip > 0 and a finite
// σ ≥ 0 (0: calibrated from ε). Config.Validate and the algorithms' own
// options (fermi.Options, dpsgdf.Config) all check through it, so a value
// one of them would refuse cannot reach another by a different road.
// Every comparison is written so that NaN fails it: a NaN σ or δ would
// otherwise pass a "< 0" test and reach the accountant, whose receipt
// would then state NaN. The returned errors name Config's fields.
func CheckPrivacy(epsilon, delta, clip, sigma float64) FieldErrors {
	var errs FieldErrors
	if !(epsilon > 0) {
		errs.Add("Privacy.Epsilon", "must be > 0 or inf (got %v)", epsilon)
	}
	if !(delta >= 0 && delta < 1) {
		errs.Add("Privacy.Delta", "must be in [0,1) (got %v)", delta)
	}
	if !(clip > 0) || math.IsInf(clip, 1) {
		errs.Add("Privacy.Clip", "must be a finite number > 0 (got %v)", clip)
	}
	if !(sigma >= 0) || math.IsInf(sigma, 1) {
		errs.Add("Privacy.Sigma", "must be a finite number ≥ 0 (got %v)", sigma)
	}
	return errs
}
