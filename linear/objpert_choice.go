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

// ObjPertFacts are the public facts the auto rule decides from.
type ObjPertFacts struct {
	// N training records of D encoded features, budget (Epsilon, Delta).
	N, D           int
	Epsilon, Delta float64
	// Curvature is c, the bound on the loss's second derivative.
	Curvature float64
	// Calibration is the Gaussian mechanism's (CalibrationProfile, ""
	// too, or CalibrationKST, the rule before the profile calibration);
	// CalibrationTight also charges the pure mechanism's Jacobian term
	// once (TightPureEpsilonPrime), which enters its noise norm.
	Calibration string
	// Regression is set for least squares, whose loss slope may take
	// either sign within a record (ObjPertProfileDelta's fixedSign).
	Regression bool
}

// ChooseObjPert picks the objective-perturbation mechanism and Λ from
// public facts f.
//
// Both mechanisms move the minimiser by about H⁻¹b/n, so the one with the
// shorter noise vector b wins: the pure mechanism's ‖b‖ has mean
// 2(d+1)/ε', the Gaussian one's about σ√(d+1). Their ratio depends on d
// and δ mainly, so the Gaussian mechanism is chosen for wide tables: with
// δ = 1/n² and CalibrationTight it wins from d = 17 (n = 1,000) to
// d = 34 (n = 100,000) at ε = 1 (d = 16 to 31 with CalibrationProfile,
// whose pure noise is at Algorithm 2's smaller ε'; d = 29 to 48 with
// CalibrationKST's σ). The pure mechanism's noise norm is taken at the ε'
// it will run with (TightPureEpsilonPrime under CalibrationTight).
// The two norms are compared at the same Λ, DefaultObjPertL2 (8 times the
// smallest the budget allows), which the pure mechanism and CalibrationKST
// then use; the profile-calibrated Gaussian mechanism uses
// ProfileObjPertL2 (6 times). The weight-only penalty is
// WeightNoiseFactor times the expected noise over n.
func ChooseObjPert(f ObjPertFacts) (ObjPertChoice, error) {
	l2 := defaultObjPertL2(f.Epsilon, f.N, f.Curvature)
	epsPrime, extra := objPertBudget(f.Epsilon, f.N, l2, f.Curvature)
	g, err := gaussianCalibration(f.Calibration, f.Epsilon, epsPrime, f.Delta, f.N, l2+extra, f.Curvature, !f.Regression)
	if err != nil {
		return ObjPertChoice{}, err
	}
	pureEps := epsPrime
	if f.Calibration == CalibrationTight {
		pureEps = TightPureEpsilonPrime(f.Epsilon, f.N, l2+extra, f.Curvature)
	}
	pure := ObjPertNoiseNorm(MechanismPure, f.D, pureEps, f.Delta)
	gauss := g.sigma * math.Sqrt(float64(f.D+1))
	ch := ObjPertChoice{Mechanism: MechanismPure, L2: l2}
	noise := pure
	if gauss < pure {
		ch.Mechanism, noise = MechanismGaussian, gauss
	}
	ch.WeightL2 = WeightNoiseFactor * noise / float64(f.N)
	factor := float64(DefaultL2Factor)
	if ch.Mechanism == MechanismGaussian && f.Calibration != CalibrationKST {
		ch.L2, factor = ProfileObjPertL2(f.Epsilon, f.N, f.Curvature), DefaultProfileL2Factor
	}
	if f.Calibration == CalibrationKST {
		ch.Reason = fmt.Sprintf("n = %d, d = %d, ε = %g, δ = %.3g: expected noise norm %.4g (pure, 2(d+1)/ε') against %.4g "+
			"(Gaussian, σ√(d+1)) at ε' = %.4g, so %s; Λ = %.4g (%g times the smallest the budget allows)",
			f.N, f.D, f.Epsilon, f.Delta, pure, gauss, epsPrime, ch.Mechanism, l2, float64(DefaultL2Factor))
	} else {
		ch.Reason = fmt.Sprintf("n = %d, d = %d, ε = %g, δ = %.3g: expected noise norm %.4g (pure, 2(d+1)/ε' at ε' = %.4g) against %.4g "+
			"(Gaussian, σ√(d+1), σ = %.4g from its privacy profile) at Λ = %.4g (%g times the smallest the budget allows), "+
			"so %s, with Λ = %.4g (%g times)",
			f.N, f.D, f.Epsilon, f.Delta, pure, pureEps, gauss, g.sigma, l2, float64(DefaultL2Factor), ch.Mechanism, ch.L2, factor)
	}
	if ch.WeightL2 > 0 {
		ch.Reason += fmt.Sprintf(", weight penalty %.4g (%g times the expected noise over n)", ch.WeightL2, WeightNoiseFactor)
	}
	return ch, nil
}

// ObjPertNoiseNorm is the expected norm of the mechanism's noise b (on
// the summed loss) for d features (d+1 coordinates with the intercept) at
// noise budget ε' and δ: 2(d+1)/ε' for the pure mechanism (the mean of
// Gamma(d+1, 2/ε')), and σ√(d+1) for the Gaussian one calibrated by
// CalibrationKST (σ = GaussianObjPertSigma; the mean of σ·χ_{d+1} is
// within 1/(4(d+1)) of it; ChooseObjPert computes the profile
// calibration's). The minimiser moves by about H⁻¹b/n, so this over n is the size of
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
	switch {
	case r.Mechanism == MechanismGaussian && r.Calibration == CalibrationRDP:
		return ObjPertRDPMethod
	case r.Mechanism == MechanismGaussian && profileCalibrated(r.Calibration):
		return ObjPertProfileMethod
	case r.Mechanism == MechanismGaussian:
		return ObjPertGaussianMethod
	case r.Calibration == CalibrationTight:
		return ObjPertTightMethod
	}
	return ObjPertMethod
}
