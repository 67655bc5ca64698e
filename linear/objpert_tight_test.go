package linear

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/fairdp/fairdp/trainer"
)

// opPureLoss is the exact privacy loss log p_D(θ)/p_D'(θ) of the pure
// mechanism (noise density ∝ exp(−ε'/2 ‖b‖) in 2-D) at a released θ, for
// D = rest ∪ {z} against D' = rest ∪ {z'}, split into its noise term and
// its Jacobian term: the change of variables b ↦ θ gives
// p_D(θ) ∝ exp(−ε'/2 ‖b_D(θ)‖) |det H_D(θ)|, b_D(θ) = −Σ_D ∇ℓ − λθ.
func opPureLoss(loss opLoss, d, dp []opRecord, lambda, epsPrime float64, th []float64) (noise, jac float64) {
	g, h := opGradHess(loss, d, lambda, th)
	gp, hp := opGradHess(loss, dp, lambda, th)
	var nb, nbp float64
	for i := range 2 {
		bi, bpi := -g[i]-lambda*th[i], -gp[i]-lambda*th[i]
		nb += bi * bi
		nbp += bpi * bpi
	}
	logdet := func(m [2][2]float64) float64 { return math.Log(m[0][0]*m[1][1] - m[0][1]*m[1][0]) }
	return epsPrime / 2 * (math.Sqrt(nbp) - math.Sqrt(nb)), logdet(h) - logdet(hp)
}

// TestObjPertTightPureLossBounded: the slow path of CalibrationTight's
// pure mechanism. On worst-case neighbouring pairs (a label flipped on the
// same row, a row and its negation, orthogonal rows, with other records
// pushing the margins to where |ℓ'| ≈ 1) the exact privacy loss, at
// released models drawn from the mechanism and on a grid of models far
// beyond them, never exceeds ε = ε' + ε_J in either direction, and its
// Jacobian term never exceeds ε_J = TightPureEpsilonPrime's charge; a
// small λ makes the Jacobian term matter, and on the pairs built for it
// each term comes within 2 % of its bound (ε_J, ε'), so neither bound is
// loose (the logistic loss's slopes cannot make ‖u‖ reach 2; a
// pseudo-Huber loss with far targets can).
func TestObjPertTightPureLossBounded(t *testing.T) {
	e1, e2 := []float64{1, 0}, []float64{0, 1}
	neg := []float64{-1, 0}
	diag := []float64{math.Sqrt(0.5), math.Sqrt(0.5)}
	var extreme, pull []opRecord
	for range 20 {
		extreme = append(extreme, opRecord{e1, 0}, opRecord{e2, 1})
		pull = append(pull, opRecord{e1, 20}, opRecord{e1, 20})
	}
	for _, tc := range []struct {
		name  string
		loss  opLoss
		c     float64
		z, zp opRecord
		rest  []opRecord
		// The pair attains the Jacobian bound (s = c against s' ≈ 0 with
		// nothing else along x) or the noise term's (‖u‖ ≈ 2 along a
		// large b: residuals of ±20 at margin 0, 40 records pulling b
		// along x).
		jacTight, noiseTight bool
	}{
		{"logistic, label flipped", logisticOP, LogisticCurvature, opRecord{e1, 1}, opRecord{e1, 0}, nil, false, false},
		{"logistic, row negated", logisticOP, LogisticCurvature, opRecord{e1, 1}, opRecord{neg, 1}, []opRecord{{x: []float64{0.3, -0.4}, y: 1}}, false, false},
		{"logistic, orthogonal rows", logisticOP, LogisticCurvature, opRecord{e1, 1}, opRecord{e2, 0}, nil, true, false},
		{"logistic, orthogonal rows at extreme margins", logisticOP, LogisticCurvature, opRecord{e1, 1}, opRecord{e2, 0}, extreme, false, false},
		{"pseudo-Huber, target flipped", huberOP, 1, opRecord{diag, 1}, opRecord{diag, -1}, nil, false, false},
		{"pseudo-Huber, far targets", huberOP, 1, opRecord{e1, 20}, opRecord{e1, -20}, pull, false, true},
	} {
		for _, p := range []struct{ lambda, eps float64 }{{0.3, 1}, {1, 0.5}, {2, 4}} {
			// Summed form: n·(Λ+Δ) = λ with n = 1.
			epsJ := ObjPertJacobianEpsilon(1, p.lambda, tc.c)
			epsPrime := TightPureEpsilonPrime(p.eps, 1, p.lambda, tc.c)
			if math.Abs(epsPrime+epsJ-p.eps) > 1e-12 || math.Abs(epsJ-math.Log(1+tc.c/p.lambda)) > 1e-12 {
				t.Fatalf("ε' = %v, ε_J = %v at ε = %v, λ = %v, c = %v", epsPrime, epsJ, p.eps, p.lambda, tc.c)
			}
			if !(epsPrime > 0) {
				continue
			}
			r := rand.New(rand.NewPCG(11, uint64(p.lambda*100)))
			var maxNoiseBoth, maxJBoth float64
			for dir, pair := range [][2]opRecord{{tc.z, tc.zp}, {tc.zp, tc.z}} {
				d := append(append([]opRecord{}, tc.rest...), pair[0])
				dp := append(append([]opRecord{}, tc.rest...), pair[1])
				var maxL, maxJ, maxNoise float64
				check := func(th []float64) {
					noise, jac := opPureLoss(tc.loss, d, dp, p.lambda, epsPrime, th)
					maxL, maxJ, maxNoise = math.Max(maxL, noise+jac), math.Max(maxJ, math.Abs(jac)), math.Max(maxNoise, noise)
				}
				for range 5000 {
					check(opSolve(tc.loss, d, p.lambda, SphereGammaNoise(r, 2, 2/epsPrime)))
				}
				for i := -60; i <= 60; i++ {
					for j := -60; j <= 60; j++ {
						check([]float64{float64(i) * 2, float64(j) * 2})
					}
				}
				maxNoiseBoth, maxJBoth = math.Max(maxNoiseBoth, maxNoise), math.Max(maxJBoth, maxJ)
				t.Logf("%s λ %v ε %v direction %d: max loss %.4f (ε %v), max |Jacobian| %.4f (ε_J %.4f), max noise term %.4f (ε' %.4f)",
					tc.name, p.lambda, p.eps, dir, maxL, p.eps, maxJ, epsJ, maxNoise, epsPrime)
				if maxL > p.eps+1e-9 || maxJ > epsJ+1e-9 {
					t.Errorf("%s λ %v ε %v direction %d: privacy loss %.6f (Jacobian %.6f) exceeds ε = %v (ε_J = %v)",
						tc.name, p.lambda, p.eps, dir, maxL, maxJ, p.eps, epsJ)
				}
			}
			if tc.noiseTight && maxNoiseBoth < 0.98*epsPrime {
				t.Errorf("%s λ %v ε %v: the noise term reaches only %.4f of ε' = %.4f", tc.name, p.lambda, p.eps, maxNoiseBoth, epsPrime)
			}
			if tc.jacTight && maxJBoth < 0.98*epsJ {
				t.Errorf("%s λ %v ε %v: the Jacobian term reaches only %.4f of ε_J = %.4f", tc.name, p.lambda, p.eps, maxJBoth, epsJ)
			}
		}
	}
}

// TestObjPertTightPureFit: the pure mechanism under CalibrationTight
// draws its noise norm from Gamma(d+1, 2/ε') with ε' = ε − log(1 +
// c/(n(Λ+Δ))) computed here from Algorithm 2's Δ (cmsBudget, the
// independent path of objpert_test.go), and its receipt is pure ε-DP at
// the whole ε, naming the single charge.
func TestObjPertTightPureFit(t *testing.T) {
	const n, dim, draws = 40, 2, 3000
	x, label := objPertData(n, dim, 5)
	r := rand.New(rand.NewPCG(3, 4))
	for _, lambda := range []float64{1e-4, 0.5} {
		norms := make([]float64, draws)
		var res *ObjPertResult
		for i := range norms {
			var b []float64
			var err error
			res, b, err = objectivePerturbation(r, x, n, dim, label, ObjPertOptions{Epsilon: 2, RowBound: 1, L2: lambda, Calibration: CalibrationTight})
			if err != nil {
				t.Fatal(err)
			}
			norms[i] = math.Sqrt(dotSelf(b))
		}
		_, delta := cmsBudget(2, n, paperL2(2, n, lambda))
		whole := lambda + delta
		want := 2 - math.Log(1+LogisticCurvature/(n*whole))
		if math.Abs(res.EpsilonPrime-want) > 1e-12 || math.Abs(res.JacobianEpsilon-(2-want)) > 1e-12 || res.Calibration != CalibrationTight {
			t.Errorf("Λ = %v: ε' = %v, ε_J = %v, calibration %q; want ε' = %v", lambda, res.EpsilonPrime, res.JacobianEpsilon, res.Calibration, want)
		}
		g := distuv.Gamma{Alpha: dim + 1, Beta: want / 2}
		if d := ksStatistic(norms, g.CDF); d > ksCritical(draws) {
			t.Errorf("Λ = %v: KS distance of ‖b‖ from Gamma(%d, 2/ε' = %v) is %.4f > %.4f", lambda, dim+1, 2/want, d, ksCritical(draws))
		}
		rec, err := res.Receipt(nil)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Epsilon == nil || *rec.Epsilon != 2 || rec.Delta != 0 || !strings.Contains(rec.Note, "charged once") && !strings.Contains(rec.Note, "charges it twice") {
			t.Errorf("Λ = %v: receipt ε %v δ %v, note %q", lambda, rec.Epsilon, rec.Delta, rec.Note)
		}
	}
	// The pure mechanism takes no other calibration.
	if _, err := ObjectivePerturbation(r, x, n, dim, label, ObjPertOptions{Epsilon: 1, RowBound: 1, Calibration: CalibrationProfile}); err == nil {
		t.Error("the pure mechanism accepted the profile calibration")
	}
}

// TestObjPertTightSettings: the defaults run the pure mechanism on a
// narrow table with its Jacobian term charged once and say so; settings
// recorded with CalibrationProfile (the default before) rerun with
// Algorithm 2's ε', as they ran. The auto rule compares the pure noise at
// the ε' that will run.
func TestObjPertTightSettings(t *testing.T) {
	schema := wideTable(t, t.TempDir(), 1500, 5, 0.3, 2)
	s := uint64(4)
	for _, tc := range []struct {
		name string
		o    *ObjPertConfig
		want string
	}{
		{"defaults", nil, CalibrationTight},
		{"auto, profile", &ObjPertConfig{Mechanism: MechanismAuto, Calibration: CalibrationProfile}, ""},
		{"pure, no calibration key", &ObjPertConfig{Mechanism: MechanismPure}, ""},
		{"pure, tight", &ObjPertConfig{Mechanism: MechanismPure, Calibration: CalibrationTight}, CalibrationTight},
	} {
		rep := runTableObjPert(t, schema, s, 1, tc.o)
		x := ObjPertExtra(rep)
		n := rep.TrainRecords
		cmsEps, extra := ObjPertBudget(1, n, x.L2)
		want := cmsEps
		if tc.want == CalibrationTight {
			want = 1 - math.Log1p(LogisticCurvature/(float64(n)*(x.L2+extra)))
		}
		if x.Mechanism != MechanismPure && tc.o != nil && tc.o.Mechanism != "" || x.EpsilonPrime == nil || math.Abs(*x.EpsilonPrime-want) > 1e-12 ||
			x.Calibration != tc.want || *rep.Privacy.Epsilon != 1 {
			t.Errorf("%s: mechanism %s, ε' %v, calibration %q, receipt ε %v; want pure, ε' %v (%q), ε 1", tc.name, x.Mechanism,
				x.EpsilonPrime, x.Calibration, *rep.Privacy.Epsilon, want, tc.want)
		}
		if tc.want == CalibrationTight && (x.JacobianEpsilon == nil || math.Abs(*x.JacobianEpsilon+want-1) > 1e-12) {
			t.Errorf("%s: ε_J %v, want %v", tc.name, x.JacobianEpsilon, 1-want)
		}
		if tc.want == CalibrationTight && !strings.Contains(x.Choice+rep.Privacy.Note, "ε_J") {
			t.Errorf("%s: the receipt does not name ε_J: %q", tc.name, rep.Privacy.Note)
		}
		checkRecordedCalibration(t, tc.name, rep, tc.o)
	}
	// The auto rule's pure noise norm uses the ε' that runs.
	for _, cal := range []string{CalibrationProfile, CalibrationTight} {
		ch, err := ChooseObjPert(ObjPertFacts{N: 1000, D: 5, Epsilon: 1, Delta: 1e-6, Curvature: LogisticCurvature, Calibration: cal})
		if err != nil {
			t.Fatal(err)
		}
		l2 := DefaultObjPertL2(1, 1000)
		ep, _ := ObjPertBudget(1, 1000, l2)
		if cal == CalibrationTight {
			ep = 1 - math.Log1p(LogisticCurvature/(1000*l2))
		}
		if ch.Mechanism != MechanismPure || !strings.Contains(ch.Reason, fmt.Sprintf("ε' = %.4g", ep)) {
			t.Errorf("%s: %s (%s), want pure at ε' = %v", cal, ch.Mechanism, ch.Reason, ep)
		}
	}
}

// checkRecordedCalibration: the settings a run records name the
// calibration it was given, CalibrationTight when it was given none, so
// that `--config` of its report repeats it.
func checkRecordedCalibration(t *testing.T, name string, rep *trainer.Report, o *ObjPertConfig) {
	t.Helper()
	if got := ObjPertConfigOf(rep.Config).Calibration; o != nil && got != o.Calibration || o == nil && got != CalibrationTight {
		t.Errorf("%s: recorded calibration %q", name, got)
	}
}

// runTableObjPert runs `--algo objpert` at ε on the generated table schema
// (wideTable), split and noise seeded by s, with settings o (nil: none,
// the defaults).
func runTableObjPert(t *testing.T, schema string, s uint64, eps float64, o *ObjPertConfig) *trainer.Report {
	t.Helper()
	cfg := trainer.Defaults()
	cfg.Algo, cfg.Dataset, cfg.Schema, cfg.DataDir, cfg.Seed = "objpert", strings.TrimSuffix(schema, ".schema.json")+".csv", schema, "", &s
	cfg.Privacy.Epsilon = eps
	if o != nil {
		cfg = WithObjPertConfig(cfg, *o)
	}
	rep, err := RunObjPert(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}
