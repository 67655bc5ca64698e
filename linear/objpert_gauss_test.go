package linear

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

// kstSigma is Kifer, Smith and Thakurta 2012's Theorem 2 noise scale
// β = ζ √(8 log(2/δ) + 4ε)/ε, written as the paper writes it (ζ = 1).
func kstSigma(eps, delta float64) float64 {
	zeta := 1.0
	return zeta * math.Sqrt(8*math.Log(2/delta)+4*eps) / eps
}

// TestGaussianObjPertSigmaCoversTheBound: the σ used is the paper's, and
// it is at least the σ the privacy-loss bound in GaussianObjPertSigma's
// comment needs: P[(2‖Πb‖ + 2)/σ² > ε'] ≤ δ for ‖Πb‖/σ ~ χ₂, whose tail
// is exp(−t²/2), checked here by solving for the tail directly.
func TestGaussianObjPertSigmaCoversTheBound(t *testing.T) {
	for _, eps := range []float64{0.05, 0.5, 1, 4, 10} {
		for _, delta := range []float64{1e-3, 1e-6, 1e-10} {
			s := GaussianObjPertSigma(eps, delta)
			if want := kstSigma(eps, delta); math.Abs(s-want) > 1e-12*want {
				t.Fatalf("σ(%v, %v) = %v, want the paper's %v", eps, delta, s, want)
			}
			// Probability that the Gaussian part exceeds ε': ‖Πb‖ > (ε'σ² − 2)/2.
			thr := (eps*s*s - 2) / 2 / s // in units of σ
			if thr <= 0 {
				t.Fatalf("ε %v δ %v: σ %v leaves no room for the χ₂ tail", eps, delta, s)
			}
			if p := math.Exp(-thr * thr / 2); p > delta {
				t.Errorf("ε %v δ %v: σ %v gives P[loss > ε'] = %g > δ", eps, delta, s, p)
			}
		}
	}
}

// TestGaussianObjectivePerturbationSolves: the Gaussian mechanism's
// release is the minimiser of the perturbed objective with its own noise
// (the slow gradient, record by record), with Λ+Δ from the paper's budget
// formulas and, by calibration, σ from Kifer et al.'s formula at
// Chaudhuri et al.'s ε' (CalibrationKST) or ProfileObjPertSigma at
// ε_J = log(1 + c/(n(Λ+Δ))) and the default Λ ProfileObjPertL2
// (CalibrationProfile, the library's default: no calibration named), and a
// receipt stating (ε, δ) and σ.
func TestGaussianObjectivePerturbationSolves(t *testing.T) {
	const n, dim, bound, delta = 300, 4, 1.5, 1e-6
	x, label := objPertData(n, dim, 3)
	for _, cal := range []string{CalibrationKST, ""} {
		for _, tc := range []struct {
			eps, lambda float64
		}{{1, 0}, {4, 0.05}, {0.1, 1e-4}} {
			res, b, err := objectivePerturbation(rand.New(rand.NewPCG(1, 2)), x, n, dim, label,
				ObjPertOptions{Epsilon: tc.eps, RowBound: bound, L2: tc.lambda, Mechanism: MechanismGaussian, Delta: delta, Calibration: cal})
			if err != nil {
				t.Fatal(err)
			}
			lambda := paperL2(tc.eps, n, tc.lambda)
			if cal == "" && tc.lambda == 0 { // the profile's default Λ: 6 times the smallest
				lambda *= float64(DefaultProfileL2Factor) / DefaultL2Factor
			}
			wantEps, extra := cmsBudget(tc.eps, n, lambda)
			wantSigma, wantCal, inNote := kstSigma(wantEps, delta), CalibrationKST, "= %g for δ"
			if cal == "" {
				epsJ := math.Log(1 + LogisticCurvature/(float64(n)*(lambda+extra)))
				if wantSigma, err = ProfileObjPertSigma(tc.eps, delta, epsJ, true); err != nil {
					t.Fatal(err)
				}
				wantEps, wantCal, inNote = tc.eps-epsJ, CalibrationProfile, "σ = %g, the smallest"
				if math.Abs(res.JacobianEpsilon-epsJ) > 1e-12 {
					t.Fatalf("ε %v: ε_J %v, want %v", tc.eps, res.JacobianEpsilon, epsJ)
				}
			}
			if math.Abs(res.EpsilonPrime-wantEps) > 1e-12 || math.Abs(res.L2+res.ExtraL2-(lambda+extra)) > 1e-12*lambda {
				t.Fatalf("%s ε %v: ε' %v, Λ+Δ %v; want %v, %v", wantCal, tc.eps, res.EpsilonPrime, res.L2+res.ExtraL2, wantEps, lambda+extra)
			}
			if math.Abs(res.NoiseStd-wantSigma) > 1e-12*wantSigma || res.Delta != delta || res.Mechanism != MechanismGaussian || res.Calibration != wantCal {
				t.Fatalf("%s ε %v: σ %v δ %v mechanism %q calibration %q; want %v, %v, gaussian", wantCal, tc.eps, res.NoiseStd, res.Delta,
					res.Mechanism, res.Calibration, wantSigma, delta)
			}
			if len(b) != dim+1 {
				t.Fatalf("noise of dimension %d, want %d", len(b), dim+1)
			}
			g := perturbedGradient(x, label, n, dim, bound, lambda+extra, b, res.Scaled)
			for j, v := range g {
				if math.Abs(v) > 1e-8 {
					t.Fatalf("ε %v: gradient of the perturbed objective at the solution: coordinate %d is %g", tc.eps, j, v)
				}
			}
			rec, err := res.Receipt(nil)
			if err != nil {
				t.Fatal(err)
			}
			// No mechanism list (no composer may re-derive the cost from σ);
			// the note states σ.
			if rec.Epsilon == nil || *rec.Epsilon != tc.eps || rec.Delta != delta || len(rec.Mechanisms) != 0 ||
				!strings.Contains(rec.Note, fmt.Sprintf(inNote, res.NoiseStd)) {
				t.Errorf("%s ε %v: receipt %+v; want (ε, δ) = (%v, %v), no mechanism list, σ in the note", wantCal, tc.eps, rec, tc.eps, delta)
			}
		}
	}
}

// TestGaussianObjectivePerturbationNoiseLaw: over many fits the noise is
// N(0, σ² I) with the paper's σ (CalibrationKST): each coordinate's standardised values are
// standard normal (KS), and ‖b‖²/σ² is χ² with d+1 degrees of freedom.
func TestGaussianObjectivePerturbationNoiseLaw(t *testing.T) {
	const n, dim, draws, eps, delta = 40, 2, 3000, 2.0, 1e-5
	x, label := objPertData(n, dim, 5)
	r := rand.New(rand.NewPCG(9, 10))
	epsPrime, _ := cmsBudget(eps, n, paperL2(eps, n, 0))
	sigma := kstSigma(epsPrime, delta)
	coords := make([][]float64, dim+1)
	sq := make([]float64, draws)
	for i := range draws {
		_, b, err := objectivePerturbation(r, x, n, dim, label, ObjPertOptions{Epsilon: eps, RowBound: 1, Mechanism: MechanismGaussian, Delta: delta, Calibration: CalibrationKST})
		if err != nil {
			t.Fatal(err)
		}
		for j, v := range b {
			coords[j] = append(coords[j], v/sigma)
		}
		sq[i] = dotSelf(b) / (sigma * sigma)
	}
	std := distuv.UnitNormal
	for j, c := range coords {
		if d := ksStatistic(c, std.CDF); d > ksCritical(draws) {
			t.Errorf("coordinate %d: KS distance from N(0, σ²) with σ = %v is %.4f > %.4f", j, sigma, d, ksCritical(draws))
		}
	}
	chi := distuv.ChiSquared{K: dim + 1}
	if d := ksStatistic(sq, chi.CDF); d > ksCritical(draws) {
		t.Errorf("‖b‖²/σ²: KS distance from χ²(%d) is %.4f > %.4f", dim+1, d, ksCritical(draws))
	}
}

func TestGaussianObjectivePerturbationRefuses(t *testing.T) {
	x, label := objPertData(10, 2, 1)
	r := rand.New(rand.NewPCG(1, 1))
	for name, opt := range map[string]ObjPertOptions{
		"no δ":                 {Epsilon: 1, RowBound: 1, Mechanism: MechanismGaussian},
		"δ = 1":                {Epsilon: 1, RowBound: 1, Mechanism: MechanismGaussian, Delta: 1},
		"δ for pure":           {Epsilon: 1, RowBound: 1, Mechanism: MechanismPure, Delta: 1e-5},
		"auto in library":      {Epsilon: 1, RowBound: 1, Mechanism: MechanismAuto, Delta: 1e-5},
		"unknown":              {Epsilon: 1, RowBound: 1, Mechanism: "laplace"},
		"calibration for pure": {Epsilon: 1, RowBound: 1, Mechanism: MechanismPure, Calibration: CalibrationProfile},
		"unknown calibration":  {Epsilon: 1, RowBound: 1, Mechanism: MechanismGaussian, Delta: 1e-5, Calibration: "renyi"},
	} {
		if _, err := ObjectivePerturbation(r, x, 10, 2, label, opt); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestChooseObjPert: the rule compares the two expected noise norms
// (public facts only) and keeps the pure mechanism on narrow tables.
func TestChooseObjPert(t *testing.T) {
	for _, tc := range []struct {
		n, d int
		eps  float64
		want string
	}{
		{34000, 100, 1, MechanismGaussian},
		{1500, 121, 1, MechanismGaussian},
		{15000, 100, 0.5, MechanismGaussian},
		{22500, 9, 1, MechanismPure},
		{375, 5, 0.5, MechanismPure},
		{37500, 10, 4, MechanismPure},
	} {
		delta := 1 / float64(tc.n*tc.n)
		c, err := ChooseObjPert(ObjPertFacts{N: tc.n, D: tc.d, Epsilon: tc.eps, Delta: delta, Curvature: LogisticCurvature})
		if err != nil {
			t.Fatal(err)
		}
		if c.Mechanism != tc.want || c.Reason == "" || !(c.L2 > 0) {
			t.Errorf("n %d d %d ε %v: %+v, want %s", tc.n, tc.d, tc.eps, c, tc.want)
		}
	}
}
