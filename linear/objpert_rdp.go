package linear

// The Rényi DP curve of Gaussian objective perturbation, and the σ it
// calibrates (CalibrationRDP). A private search (Papernot and Steinke 2022,
// TuneObjPert) composes its trials in Rényi DP, so each trial needs its
// whole curve, not one (ε, δ) point of its privacy profile.
//
// Derivation (replace-one neighbours D, D', the relation of Chaudhuri et
// al. 2011's Theorem 9; doc.go, "A tight calibration of Gaussian objective
// perturbation", sets up the change of variables). Under D the map from the
// noise b to the released minimiser v is a bijection, so with
// b ~ N(0, σ² I) the privacy loss at v is
//
//	L = J(v) + (2bᵀg + ‖g‖²)/(2σ²),  g = ℓ'(vᵀx)x − ℓ'(vᵀx')x',
//
// for the two differing rows x, x' (‖x‖, ‖x'‖ ≤ 1, |ℓ'| ≤ 1), with
// |J| ≤ ε_J = log(1 + c/(n(Λ+Δ))) by the matrix determinant lemma and
// ‖g‖ ≤ 2. Pointwise bᵀg ≤ |U| + |V| for U = bᵀx, V = bᵀx', each
// N(0, ≤ σ²); by Cauchy–Schwarz E[e^{t|U|+t|V|}] ≤ E[e^{2t|Z|}] for
// Z ~ N(0, σ²) (E[e^{s|U|}] grows with U's variance), and
// E[e^{s|Z|}] = 2e^{s²σ²/2}Φ(sσ). With t = (α−1)/σ² and
// D_α = log E_D[e^{(α−1)L}]/(α−1):
//
//	D_α ≤ ε_J + 2α/σ² + log(2Φ(2(α−1)/σ))/(α−1).
//
// The other direction is the same with the roles of D and D' swapped. The
// bound uses |ℓ'| ≤ 1 only (no sign of the slope), so it covers least
// squares too. It is loose by the Cauchy–Schwarz and |bᵀg| steps, never
// below the truth (objpert_rdp_test.go checks it against the exact Rényi
// divergence of a one-dimensional instance).

import (
	"fmt"
	"math"

	"github.com/fairdp/fairdp/dpops/accounting"
)

// CalibrationRDP sets the Gaussian mechanism's σ from its Rényi curve
// (ObjPertGaussianRDP): the smallest whose curve converts (Balle et al.
// 2020, at accounting.TuningOrders) to (ε, δ). It is looser than
// CalibrationProfile for one release; it exists for searches, whose
// trials compose in Rényi DP. ObjPertOptions takes it; the pipeline's
// settings (ObjPertConfig) do not.
const CalibrationRDP = "rdp"

// ObjPertRDPMethod names CalibrationRDP in receipts and reports.
const ObjPertRDPMethod = "objective perturbation with Gaussian noise calibrated to its Rényi DP curve " +
	"(a Jacobian term plus a bound on the Gaussian term's moment; replace-one neighbours)"

// ObjPertGaussianRDP is the Rényi DP of Gaussian objective perturbation
// with noise N(0, σ² I) on the summed loss and Jacobian term at most epsJ,
// at each order α > 1 of orders: ε_J + 2α/σ² + log(2Φ(2(α−1)/σ))/(α−1)
// (derived at the top of this file). +Inf at orders ≤ 1 or for σ ≤ 0.
func ObjPertGaussianRDP(sigma, epsJ float64, orders []float64) []float64 {
	c := make([]float64, len(orders))
	for i, a := range orders {
		if !(a > 1) || !(sigma > 0) {
			c[i] = math.Inf(1)
			continue
		}
		// 2Φ(z) = erfc(−z/√2).
		z := 2 * (a - 1) / sigma
		c[i] = epsJ + 2*a/(sigma*sigma) + math.Log(math.Erfc(-z/math.Sqrt2))/(a-1)
	}
	return c
}

// RDPObjPertSigma is the smallest σ (to a relative 1e-12, rounded up)
// whose curve ObjPertGaussianRDP(σ, epsJ, orders) converts to at most ε at
// δ (accounting.EpsilonFromRDP): bisection on log σ, the curve falling as
// σ grows at every order. It needs 0 ≤ epsJ < ε and δ in (0, 1).
func RDPObjPertSigma(eps, delta, epsJ float64, orders []float64) (float64, error) {
	if !(eps > epsJ) || !(epsJ >= 0) || math.IsInf(eps, 1) {
		return 0, fmt.Errorf("linear: objective perturbation: the Jacobian term ε_J = %v leaves none of ε = %v to the noise", epsJ, eps)
	}
	if !(delta > 0 && delta < 1) {
		return 0, fmt.Errorf("linear: objective perturbation: δ must be in (0, 1) (got %v)", delta)
	}
	meets := func(s float64) bool {
		e, _, err := accounting.EpsilonFromRDP(orders, ObjPertGaussianRDP(s, epsJ, orders), delta)
		return err == nil && e <= eps
	}
	return smallestSigma(meets, func() error {
		return fmt.Errorf("linear: objective perturbation: no σ ≤ 1e12 meets ε = %v at δ = %v with ε_J = %v", eps, delta, epsJ)
	})
}

// objPertRDPEpsilon is the ε at δ of the curve ObjPertGaussianRDP(σ,
// ε_J) at accounting.TuningOrders (Balle et al. 2020), and the order
// attaining it.
func objPertRDPEpsilon(sigma, epsJ, delta float64) (eps, order float64, err error) {
	orders := accounting.TuningOrders()
	return accounting.EpsilonFromRDP(orders, ObjPertGaussianRDP(sigma, epsJ, orders), delta)
}

// rdpReceipt turns the pure accountant's receipt of one ε charge into
// CalibrationRDP's: the curve at σ and ε_J converted at δ (Balle et al.
// 2020), the order attaining it, replace-one neighbours.
func (r *ObjPertResult) rdpReceipt(rec *accounting.Receipt) error {
	eps, order, err := objPertRDPEpsilon(r.NoiseStd, r.JacobianEpsilon, r.Delta)
	if err != nil {
		return err
	}
	valid := true
	rec.Epsilon, rec.Delta, rec.Order, rec.RDPValid = &eps, r.Delta, &order, &valid
	rec.Accountant, rec.Conversion = accounting.AccountantRDP, accounting.ConversionBalle2020
	rec.Relation = accounting.RelationReplaceOne
	// No mechanism list, as for the other Gaussian calibrations: part of
	// the curve bounds the Jacobian, so no accountant may re-derive the
	// cost from σ alone.
	rec.Mechanisms = nil
	rec.Note = fmt.Sprintf("%s, for data sets differing in one record's value: rows clipped to the public bound B = %g "+
		"and scaled by 1/√(B²+1) with the intercept feature counted; c = %g, Λ = %g, Δ = %g, weight penalty %g; noise "+
		"b ~ N(0, σ² I) on the summed loss with σ = %g; Rényi DP at order α at most ε_J + 2α/σ² + log(2Φ(2(α−1)/σ))/(α−1), "+
		"ε_J = log(1 + c/(n(Λ+Δ))) = %g, converted at order %g by Balle et al. 2020",
		ObjPertRDPMethod, r.RowBound, r.Curvature, r.L2, r.ExtraL2, r.WeightL2, r.NoiseStd, r.JacobianEpsilon, order)
	if g := r.Regression; g != nil {
		rec.Note += fmt.Sprintf("; least squares: %s", g.note())
	}
	addExactMinimiser(rec)
	return nil
}
