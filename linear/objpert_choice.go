package linear

import (
	"fmt"
	"math"
)

// ObjPertChoice is what MechanismAuto runs: a mechanism, its Λ and the
// reason, all from public facts (n, d, ε, δ, the loss's curvature bound).
type ObjPertChoice struct {
	Mechanism    string
	L2, WeightL2 float64
	Reason       string
}

// WeightNoiseFactor is κ of ChooseObjPert's weight-only penalty: κ times
// the expected noise in the mean gradient, ObjPertNoiseNorm/n.
const WeightNoiseFactor = 0.0

// ChooseObjPert picks the objective-perturbation mechanism and Λ for n
// training records of d encoded features at budget ε (and δ for the
// Gaussian mechanism), for a loss whose second derivative is at most c.
//
// Both mechanisms move the minimiser by about H⁻¹b/n, so the one with the
// shorter noise vector b wins (ObjPertNoiseNorm): the pure mechanism's
// ‖b‖ has mean 2(d+1)/ε', the Gaussian one's about σ√(d+1). Their ratio
// depends on d and δ only (ε' cancels but for the small 4ε' in σ), so the
// Gaussian mechanism is chosen for wide tables: with δ = 1/n² it wins
// from d ≈ 29 (n = 1,000) to d ≈ 48 (n = 100,000) at ε = 1. Λ is DefaultObjPertL2
// for both (8 times the smallest the budget allows), and the weight-only
// penalty WeightNoiseFactor times the expected noise over n.
func ChooseObjPert(n, d int, epsilon, delta, c float64) ObjPertChoice {
	l2 := defaultObjPertL2(epsilon, n, c)
	epsPrime, _ := objPertBudget(epsilon, n, l2, c)
	pure := ObjPertNoiseNorm(MechanismPure, d, epsPrime, delta)
	gauss := ObjPertNoiseNorm(MechanismGaussian, d, epsPrime, delta)
	ch := ObjPertChoice{Mechanism: MechanismPure, L2: l2}
	noise := pure
	if gauss < pure {
		ch.Mechanism, noise = MechanismGaussian, gauss
	}
	ch.WeightL2 = WeightNoiseFactor * noise / float64(n)
	ch.Reason = fmt.Sprintf("n = %d, d = %d, ε = %g, δ = %.3g: expected noise norm %.4g (pure, 2(d+1)/ε') against %.4g "+
		"(Gaussian, σ√(d+1)) at ε' = %.4g, so %s; Λ = %.4g (%g times the smallest the budget allows)",
		n, d, epsilon, delta, pure, gauss, epsPrime, ch.Mechanism, l2, float64(DefaultL2Factor))
	if ch.WeightL2 > 0 {
		ch.Reason += fmt.Sprintf(", weight penalty %.4g (%g times the expected noise over n)", ch.WeightL2, WeightNoiseFactor)
	}
	return ch
}

// ObjPertNoiseNorm is the expected norm of the mechanism's noise b (on
// the summed loss) for d features (d+1 coordinates with the intercept) at
// noise budget ε' and δ: 2(d+1)/ε' for the pure mechanism (the mean of
// Gamma(d+1, 2/ε')), and σ√(d+1) for the Gaussian one (σ =
// GaussianObjPertSigma; the mean of σ·χ_{d+1} is within 1/(4(d+1)) of
// it). The minimiser moves by about H⁻¹b/n, so this over n is the size of
// the noise in the mean gradient.
func ObjPertNoiseNorm(mechanism string, d int, epsPrime, delta float64) float64 {
	if mechanism == MechanismGaussian {
		return GaussianObjPertSigma(epsPrime, delta) * math.Sqrt(float64(d+1))
	}
	return 2 * float64(d+1) / epsPrime
}

// curvatureOf is c of the pipeline's loss: the logistic loss's bound, or
// 1/h for least squares with residual scale h (0: DefaultResidualScale).
func curvatureOf(regression bool, h float64) float64 {
	if !regression {
		return LogisticCurvature
	}
	if h == 0 {
		h = DefaultResidualScale
	}
	return 1 / h
}

// method names the mechanism r ran, for reports and receipts.
func (r *ObjPertResult) method() string {
	if r.Mechanism == MechanismGaussian {
		return ObjPertGaussianMethod
	}
	return ObjPertMethod
}
