package linear

// The privacy profile of Gaussian objective perturbation, and the σ it
// calibrates (CalibrationProfile). The derivation is in doc.go ("A tight
// calibration of Gaussian objective perturbation"); in short, following
// Redberg, Koskela and Wang, "Improving the Privacy and Practicality of
// Objective Perturbation for Differentially Private Linear Learners"
// (NeurIPS 2023), the privacy loss of objective perturbation at a released
// minimiser is a Jacobian term, bounded uniformly by
// ε_J = log(1 + c/(n(Λ+Δ))), plus a Gaussian-mechanism-like term, so
// that δ(ε) is a sum of Balle and Wang 2018's exact Gaussian δ at ε − ε_J.
// Their bound is for add/remove neighbours; ours is for replace-one
// neighbours (the relation of Chaudhuri et al.'s Theorem 9), where the
// Gaussian term has sensitivity up to 2.

import (
	"fmt"
	"math"

	"github.com/fairdp/fairdp/dpops/accounting"
)

// Calibrations of the Gaussian mechanism's σ (ObjPertOptions.Calibration,
// ObjPertConfig.Calibration).
const (
	// CalibrationKST is Kifer, Smith and Thakurta 2012's Theorem 2 σ on
	// Chaudhuri et al.'s budget split (GaussianObjPertSigma): the only
	// calibration before CalibrationProfile, kept so old settings rerun.
	CalibrationKST = "kst2012"
	// CalibrationProfile is the smallest σ whose privacy-profile bound
	// (ObjPertProfileDelta) meets δ at ε (ProfileObjPertSigma). The pure
	// mechanism keeps Chaudhuri et al.'s ε' = ε − 2ε_J under it, as it ran
	// when this was the default.
	CalibrationProfile = "profile"
	// CalibrationTight is CalibrationProfile for the Gaussian mechanism
	// and, for the pure one, the Jacobian term charged once:
	// ε' = ε − ε_J instead of Algorithm 2's ε − 2ε_J (doc.go, "The pure
	// mechanism under replace-one neighbours"). It is a value of its own
	// so that settings recorded with CalibrationProfile rerun unchanged.
	CalibrationTight = "tight"
)

// profileCalibrated says whether calibration cal sets the Gaussian
// mechanism's σ from its privacy profile (CalibrationProfile and
// CalibrationTight do).
func profileCalibrated(cal string) bool { return cal == CalibrationProfile || cal == CalibrationTight }

// TightPureEpsilonPrime is the pure mechanism's noise budget under
// CalibrationTight: ε' = ε − ε_J, ε_J = ObjPertJacobianEpsilon(n, l2, c)
// for the whole regulariser l2 = Λ+Δ (Algorithm 2's Δ, which keeps
// ε_J ≤ ε/4, so ε' ≥ 3ε/4).
func TightPureEpsilonPrime(eps float64, n int, l2, c float64) float64 {
	return eps - ObjPertJacobianEpsilon(n, l2, c)
}

// ObjPertProfileMethod names the profile calibration in receipts and
// reports.
const ObjPertProfileMethod = "objective perturbation with Gaussian noise calibrated to its privacy profile " +
	"(Redberg, Koskela, Wang 2023: a Jacobian term plus Gaussian-mechanism terms; replace-one neighbours)"

// ObjPertJacobianEpsilon is ε_J = log(1 + c/(n·l2)): the bound on the
// log-ratio of the Jacobians of the map from the noise to the minimiser
// under neighbouring data sets, for n rows of norm ≤ 1, a loss whose
// second derivative is at most c and the whole regulariser l2 = Λ+Δ (on
// the mean loss). By the matrix determinant lemma the ratio is
// (1 + s xᵀA⁻¹x)/(1 + s' x'ᵀA⁻¹x') for the same A ⪰ n·l2·I, with s, s' in
// [0, c] the two differing records' second derivatives, so each factor is
// in [1, 1 + c/(n·l2)] (Chaudhuri et al.'s Theorem 9 bounds the
// same ratio by the square of that).
func ObjPertJacobianEpsilon(n int, l2, c float64) float64 {
	return math.Log1p(c / (float64(n) * l2))
}

// ObjPertProfileDelta is the δ(ε) bound of Gaussian objective perturbation
// with noise N(0, σ² I) on the summed loss (|ℓ'| ≤ 1, rows of norm ≤ 1)
// whose Jacobian term is at most epsJ, under replace-one neighbours
// (doc.go derives it): with ε̃ = ε − epsJ and δ_G Balle and Wang's
// Gaussian δ,
//
//   - fixedSign (each record's ℓ' keeps one sign, as the logistic loss's
//     σ(m) − y does): δ_G(ε̃; 2/σ) + 2 δ_G(ε̃; 1/σ);
//   - otherwise (least squares): 2 δ_G(ε̃; 2/σ) + 2 δ_G(ε̃; √2/σ).
//
// It is 1 (no guarantee) when ε < epsJ.
func ObjPertProfileDelta(eps, sigma, epsJ float64, fixedSign bool) float64 {
	et := eps - epsJ
	if !(et >= 0) || !(sigma > 0) {
		return 1
	}
	var d float64
	if fixedSign {
		d = accounting.GaussianDelta(2/sigma, et) + 2*accounting.GaussianDelta(1/sigma, et)
	} else {
		d = 2*accounting.GaussianDelta(2/sigma, et) + 2*accounting.GaussianDelta(math.Sqrt2/sigma, et)
	}
	return math.Min(d, 1)
}

// ProfileObjPertSigma is the smallest σ (to a relative 1e-12, rounded up)
// with ObjPertProfileDelta(ε, σ, epsJ, fixedSign) ≤ δ: bisection on
// log σ, the bound falling as σ grows. It needs 0 ≤ epsJ < ε and δ in
// (0, 1).
func ProfileObjPertSigma(eps, delta, epsJ float64, fixedSign bool) (float64, error) {
	if !(eps > epsJ) || !(epsJ >= 0) || math.IsInf(eps, 1) {
		return 0, fmt.Errorf("linear: objective perturbation: the Jacobian term ε_J = %v leaves none of ε = %v to the noise", epsJ, eps)
	}
	if !(delta > 0 && delta < 1) {
		return 0, fmt.Errorf("linear: objective perturbation: δ must be in (0, 1) (got %v)", delta)
	}
	meets := func(s float64) bool { return ObjPertProfileDelta(eps, s, epsJ, fixedSign) <= delta }
	return smallestSigma(meets, func() error {
		return fmt.Errorf("linear: objective perturbation: no σ ≤ 1e12 meets δ = %v at ε − ε_J = %v", delta, eps-epsJ)
	})
}

// smallestSigma is the smallest σ (to a relative 1e-12, rounded up) that
// meets, a test that holds from some σ on: bisection on log σ from 1,
// doubling or halving to bracket it; tooLarge's error when no σ ≤ 1e12
// meets it. ProfileObjPertSigma and RDPObjPertSigma share it.
func smallestSigma(meets func(float64) bool, tooLarge func() error) (float64, error) {
	hi := 1.0
	for !meets(hi) {
		if hi *= 2; hi > 1e12 {
			return 0, tooLarge()
		}
	}
	lo := hi / 2
	for meets(lo) {
		if hi, lo = lo, lo/2; lo < 1e-12 {
			return hi, nil
		}
	}
	for hi/lo-1 > 1e-12 {
		mid := math.Sqrt(lo * hi)
		if meets(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, nil
}

// profileReceipt turns the pure accountant's receipt of one ε charge into
// the profile-calibrated Gaussian mechanism's: one (ε, δ)-DP release by
// the bound of ObjPertProfileDelta (no composition, so no conversion).
func (r *ObjPertResult) profileReceipt(rec *accounting.Receipt) {
	rec.Delta = r.Delta
	rec.Accountant, rec.Conversion = "theorem", "none: one release"
	// No mechanism list, as for CalibrationKST: part of ε bounds the
	// Jacobian, so no accountant may re-derive the cost from σ alone.
	rec.Mechanisms = nil
	terms := "δ_G(ε − ε_J; 2/σ) + 2 δ_G(ε − ε_J; 1/σ) (each record's loss slope keeps its sign)"
	if r.Regression != nil {
		terms = "2 δ_G(ε − ε_J; 2/σ) + 2 δ_G(ε − ε_J; √2/σ)"
	}
	rec.Note = fmt.Sprintf("%s, (ε, δ)-DP for data sets differing in one record's value: rows clipped to the public bound B = %g "+
		"and scaled by 1/√(B²+1) with the intercept feature counted; c = %g, Λ = %g, Δ = %g, weight penalty %g (a convex "+
		"regulariser, which only lowers the Jacobian term); the Jacobian term is at most ε_J = log(1 + c/(n(Λ+Δ))) = %g; "+
		"noise b ~ N(0, σ² I) on the summed loss with σ = %g, the smallest with %s ≤ δ = %g, δ_G being the Gaussian "+
		"mechanism's exact δ (Balle and Wang 2018, Theorem 8)",
		ObjPertProfileMethod, r.RowBound, r.Curvature, r.L2, r.ExtraL2, r.WeightL2, r.JacobianEpsilon, r.NoiseStd, terms, r.Delta)
	if g := r.Regression; g != nil {
		rec.Note += fmt.Sprintf("; least squares: %s", g.note())
	}
	addExactMinimiser(rec)
}

// gaussianNoise is a calibrated Gaussian mechanism: σ, the part of ε
// the noise term gets (ε' of Algorithm 2 for CalibrationKST, ε − ε_J for
// CalibrationProfile) and ε_J (0 for CalibrationKST, whose ε' already
// leaves 2 log(1 + c/(n l2)) to the Jacobian).
type gaussianNoise struct{ sigma, epsPrime, epsJ float64 }

// gaussianCalibration is the Gaussian mechanism's σ under calibration cal
// for n rows, budget (ε, δ), whole regulariser l2 = Λ+Δ and curvature
// bound c; cmsEpsPrime is Algorithm 2's ε' for them (objPertBudget), which
// CalibrationKST uses; fixedSign as in ObjPertProfileDelta. The fit and
// the auto rule (ChooseObjPert) share it.
func gaussianCalibration(cal string, eps, cmsEpsPrime, delta float64, n int, l2, c float64, fixedSign bool) (gaussianNoise, error) {
	if cal == CalibrationKST {
		return gaussianNoise{sigma: GaussianObjPertSigma(cmsEpsPrime, delta), epsPrime: cmsEpsPrime}, nil
	}
	epsJ := ObjPertJacobianEpsilon(n, l2, c)
	if cal == CalibrationRDP {
		sigma, err := RDPObjPertSigma(eps, delta, epsJ, accounting.TuningOrders())
		return gaussianNoise{sigma: sigma, epsPrime: eps - epsJ, epsJ: epsJ}, err
	}
	sigma, err := ProfileObjPertSigma(eps, delta, epsJ, fixedSign)
	return gaussianNoise{sigma: sigma, epsPrime: eps - epsJ, epsJ: epsJ}, err
}
