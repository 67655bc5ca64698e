package trainer

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/metrics"
)

// TestPlanTuneFermiAccounting recomputes a DP-FERMI plan independently:
// each trial's curve is its steps' subsampled Gaussian (T times the
// per-step RDP at rate q and the planned σ) plus the group counts'
// Gaussian of multiplier σ·sqrt(T), α/(2σ²T) at order α, written out here;
// the pointwise largest curve plus the score's αρ, through Theorem 2
// (accounting.TunedEpsilon), must give the plan's ε, at most the target.
// The counts cost something, so every shape's σ is larger than a DP-SGD
// plan's for the same shapes; with public group sizes there is nothing
// else to count and the plan is DP-SGD's, σ for σ.
func TestPlanTuneFermiAccounting(t *testing.T) {
	q := map[tuneShape]float64{{40, 5}: 0.05, {100, 15}: 0.125, {200, 3}: 0.25}
	steps := map[tuneShape]int{{40, 5}: 100, {100, 15}: 120, {200, 3}: 12}
	for k, c := range []struct{ eta, mean, target, delta float64 }{{0, 10, 1, 1e-6}, {1, 5, 3, 1e-5}, {0.5, 20, 0.5, 1e-6}} {
		law, err := accounting.TNBWithMean(c.eta, c.mean)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := planTuneWith(q, steps, law, c.delta, c.target, 0.1, fermiTrialCurve(q, steps, false))
		if err != nil {
			t.Fatal(err)
		}
		var sgd tunePlan // DP-SGD's plan for the same shapes, in the first case (each plan takes seconds)
		if k == 0 {
			if sgd, err = planTune(q, steps, law, c.delta, c.target, 0.1); err != nil {
				t.Fatal(err)
			}
		}
		orders := accounting.TuningOrders()
		worst := make([]float64, len(orders))
		for sh := range q {
			s, n := plan.sigma[sh], float64(steps[sh])
			for i, a := range orders {
				v := n*accounting.SubsampledGaussianRDP(q[sh], s, a) + a/(2*s*s*n)
				if math.Abs(v-plan.curve[sh][i]) > 1e-9*v {
					t.Errorf("%+v %v: planned RDP %v at order %v, recomputed %v", c, sh, plan.curve[sh][i], a, v)
				}
				worst[i] = math.Max(worst[i], v)
			}
			if k == 0 && !(s > sgd.sigma[sh]) {
				t.Errorf("%+v %v: σ %v with the counts, %v without: the counts cost nothing?", c, sh, s, sgd.sigma[sh])
			}
		}
		for i, a := range orders {
			worst[i] += a * plan.scoreRho
		}
		eps, _, err := accounting.TunedEpsilon(law, orders, worst, c.delta)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(eps-plan.eps) > 1e-9*eps || !(eps <= c.target && eps > 0.99*c.target) {
			t.Errorf("%+v: plan ε %v, recomputed %v: want them equal, at most the target and within 1 %% of it", c, plan.eps, eps)
		}
		if k > 0 {
			continue
		}
		public, err := planTuneWith(q, steps, law, c.delta, c.target, 0.1, fermiTrialCurve(q, steps, true))
		if err != nil {
			t.Fatal(err)
		}
		for sh := range q {
			if public.sigma[sh] != sgd.sigma[sh] {
				t.Errorf("%+v %v: public group sizes σ %v, DP-SGD's %v", c, sh, public.sigma[sh], sgd.sigma[sh])
			}
		}
	}
}

// TestCheckFermiTrialReceipt: a DP-FERMI trial whose receipt costs more
// than its planned curve (steps and counts) at any order is refused:
// more steps, less noise on the steps or on the counts, a mechanism the
// RDP accountant does not compose. A trial that spent less passes.
func TestCheckFermiTrialReceipt(t *testing.T) {
	orders := accounting.TuningOrders()
	planned, err := accounting.ComposedRDP(0.1, 2, 100, orders)
	if err != nil {
		t.Fatal(err)
	}
	counts, _ := fermiCountRDP(2, 100, false, orders)
	for i := range planned {
		planned[i] += counts[i]
	}
	rec, sg := trialReceipt, subsampledSteps
	cases := []receiptCase{
		{"as planned", rec(sg(1, 20, 1), sg(0.1, 2, 100)), ""},
		{"public sizes", rec(sg(0.1, 2, 100)), ""},
		{"fewer steps", rec(sg(1, 20, 1), sg(0.1, 2, 90)), ""},
		{"more steps", rec(sg(1, 20, 1), sg(0.1, 2, 101)), "more than the"},
		{"noisier counts", rec(sg(1, 30, 1), sg(0.1, 2, 100)), ""},
		{"cheaper counts", rec(sg(1, 10, 1), sg(0.1, 2, 100)), "more than the"},
		{"counts twice", rec(sg(1, 20, 2), sg(0.1, 2, 100)), "more than the"},
		{"other sigma", rec(sg(1, 20, 1), sg(0.1, 1.9, 100)), "more than the"},
		{"laplace", rec(sg(0.1, 2, 100), accounting.Mechanism{Kind: accounting.KindLaplace, Epsilon: 0.1}), "outside the tuning plan"},
		{"not private", accounting.NotPrivate(), "not private"},
	}
	for _, c := range cases {
		c.check(t, checkFermiTrialReceipt(c.r, orders, planned))
	}
}

// trialReceipt is a private receipt (ε 0.5) listing ms, as a trial's.
func trialReceipt(ms ...accounting.Mechanism) accounting.Receipt {
	eps := 0.5
	return accounting.Receipt{Epsilon: &eps, Delta: 1e-5, Mechanisms: ms}
}

// subsampledSteps is steps Poisson-subsampled Gaussians at rate q and
// multiplier s.
func subsampledSteps(q, s float64, steps int) accounting.Mechanism {
	return accounting.Mechanism{Kind: accounting.KindSubsampledGaussian, SampleRate: q, NoiseMultiplier: s, Steps: steps}
}

// receiptCase is a trial receipt and the error a check of it against the
// plan must give ("" accepted).
type receiptCase struct {
	name string
	r    accounting.Receipt
	want string
}

func (c receiptCase) check(t *testing.T, err error) {
	t.Helper()
	if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
		t.Errorf("%s: error %v, want %q", c.name, err, c.want)
	}
}

// TestConfusionScoreMatchesMetrics: on exact per-group confusion counts
// the score's accuracy and violations are the metrics package's (an
// independent computation from the predictions), for two and three
// classes, with a group that has no records and one without positives.
func TestConfusionScoreMatchesMetrics(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct{ classes, groups, n int }{{2, 2, 500}, {3, 4, 300}, {2, 3, 40}} {
		pred, labels, groups := make([]int, c.n), make([]int, c.n), make([]int, c.n)
		for i := range c.n {
			pred[i], labels[i] = r.IntN(c.classes), r.IntN(c.classes)
			groups[i] = r.IntN(c.groups - 1) // the last group has no records
			if groups[i] == 0 && labels[i] == 1 {
				labels[i] = 0 // group 0 has no records of label 1
			}
		}
		cells := groupConfusion(pred, labels, groups, c.classes, c.groups)
		for _, eo := range []bool{false, true} {
			acc, v := confusionScore(cells, c.classes, c.groups, c.n, eo)
			correct := 0
			for i := range pred {
				if pred[i] == labels[i] {
					correct++
				}
			}
			want := metrics.DemographicParity(pred, groups, c.classes, c.groups)
			if eo {
				want = metrics.EqualizedOdds(pred, labels, groups, c.classes, c.groups)
			}
			if math.Abs(acc-float64(correct)/float64(c.n)) > 1e-12 || math.Abs(v-want) > 1e-12 {
				t.Errorf("%+v eo %v: accuracy %v violation %v, metrics %v and %v", c, eo, acc, v, float64(correct)/float64(c.n), want)
			}
		}
		// Noise may make cells negative: the score stays a rate.
		for i := range cells {
			cells[i] += 30 * r.NormFloat64()
		}
		if _, v := confusionScore(cells, c.classes, c.groups, c.n, true); !(v >= 0 && v <= 1) {
			t.Errorf("%+v: noisy violation %v, want a number in [0, 1]", c, v)
		}
	}
}

// TestFermiLambdas: the search's λ are half, the same and twice the run's
// (0 stays 0); a space the caller gave without λ keeps the run's; other
// algorithms get none.
func TestFermiLambdas(t *testing.T) {
	cfg := Defaults()
	cfg.Fair.Lambda = 2
	if got := withFermiLambdas(TuneSpace{}, cfg, true).Lambda; len(got) != 3 || got[0] != 1 || got[1] != 2 || got[2] != 4 {
		t.Errorf("default space λ %v, want [1 2 4]", got)
	}
	if got := withFermiLambdas(TuneSpace{}, cfg, false).Lambda; len(got) != 1 || got[0] != 2 {
		t.Errorf("given space λ %v, want [2]", got)
	}
	if got := fermiLambdas(0); len(got) != 1 || got[0] != 0 {
		t.Errorf("λ 0: %v, want [0]", got)
	}
	cfg.Algo = AlgoDPSGD
	if got := withFermiLambdas(TuneSpace{}, cfg, true).Lambda; got != nil {
		t.Errorf("dpsgd: λ %v, want none", got)
	}
}
