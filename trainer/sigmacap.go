package trainer

import (
	"fmt"
	"math"

	"github.com/fairdp/fairdp/nn"
)

// checkSigmaCap refuses a private run whose given noise multiplier
// (Privacy.Sigma, p.Sigma) would spend more than its finite
// Privacy.Epsilon (p.Epsilon). With both set, ε is a cap the run honours:
// otherwise report.json would show the target beside a receipt many times
// larger, and a user who set both would believe the smaller one.
// Privacy.Epsilon +Inf runs σ uncapped (the receipt alone states what it
// spent). It reads only ε and σ, so it takes the privacy settings, not the
// whole Config.
func checkSigmaCap[T nn.Float](p DPConfig, alg Algorithm[T]) error {
	if p.Sigma == 0 || math.IsInf(p.Epsilon, 1) {
		return nil
	}
	plan := alg.Hooks().PlannedRunEpsilon
	if plan == nil {
		r, err := alg.Receipt()
		if err != nil {
			return err
		}
		if !r.Private() {
			return nil // σ does not apply (sgd)
		}
		return FieldErrors{{Field: "Privacy.Sigma", Msg: fmt.Sprintf("%v with Privacy.Epsilon %v: %s cannot state before training the ε a given σ spends; "+
			"give Privacy.Epsilon alone (σ calibrated to it), or Privacy.Sigma with Privacy.Epsilon inf", p.Sigma, p.Epsilon, alg.Name())}}
	}
	eps, delta, err := plan()
	if err != nil {
		return fmt.Errorf("the ε that Privacy.Sigma %v spends: %w", p.Sigma, err)
	}
	if !(eps <= p.Epsilon) { // NaN too: unknown is not within the cap
		return FieldErrors{{Field: "Privacy.Sigma", Msg: fmt.Sprintf("%v spends ε = %.4g (δ = %.3g) over this run, more than Privacy.Epsilon %v: "+
			"drop Privacy.Sigma to calibrate σ to Privacy.Epsilon, raise Privacy.Epsilon to at least %.4g, or give Privacy.Epsilon inf to run σ uncapped",
			p.Sigma, eps, delta, p.Epsilon, eps)}}
	}
	return nil
}
