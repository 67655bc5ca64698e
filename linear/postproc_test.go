package linear

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/metrics"
)

// TestPostProcessSlack checks Jagielski et al.'s (2019) slack
// 4 ln(4|A|/β)/(min q̃_{ay} m ε) and its K-bin generalisation.
func TestPostProcessSlack(t *testing.T) {
	for _, tc := range []struct {
		minQ         float64
		m            int
		eps, beta    float64
		bins, groups int
		want         float64
	}{
		// 4·ln(160)/(0.05·10000·1) = 20.3007/500.
		{0.05, 10000, 1, 0.05, 2, 2, 0.04060139052},
		// Adult-like: 4·ln(80)/(0.036·33916·1).
		{0.036, 33916, 1, 0.1, 2, 2, 0.01435581579},
		// Three groups: 4·ln(12/0.05)/(0.02·5000·2).
		{0.02, 5000, 2, 0.05, 2, 3, 0.1096127785},
		// K = 5 bins: 4·4·ln(20/0.05)/(0.05·10000·1).
		{0.05, 10000, 1, 0.05, 5, 2, 0.1917268655},
		{0.05, 10000, math.Inf(1), 0.05, 2, 2, 0},
	} {
		got := PostProcessSlack(tc.minQ, tc.m, tc.eps, tc.beta, tc.bins, tc.groups)
		if math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("slack(minQ=%v, m=%d, ε=%v, β=%v, K=%d, |A|=%d) = %.11f, want %.11f",
				tc.minQ, tc.m, tc.eps, tc.beta, tc.bins, tc.groups, got, tc.want)
		}
	}
}

// syntheticScores makes n records in the given number of groups whose
// scores are informative about the label, with base rates and score quality
// that differ by group (so the base classifier violates equalized odds).
func syntheticScores(r *rand.Rand, n, groups int) (scores []float64, group, label []int) {
	for range n {
		a := 0
		if r.Float64() < 0.35 {
			a = 1 + r.IntN(groups-1)
		}
		y := 0
		if r.Float64() < 0.25+0.1*float64(a) {
			y = 1
		}
		s := 0.3*float64(y) + 0.1*float64(a) + (0.15+0.05*float64(a))*r.NormFloat64()
		scores = append(scores, 1/(1+math.Exp(-4*(s-0.25))))
		group, label = append(group, a), append(label, y)
	}
	return scores, group, label
}

// TestPostProcessNonPrivateIsHardt checks ε = ∞: the result is Hardt's LP on
// the exact cells, and the classifier's expected equalized-odds violation on
// the records (computed from the records, not the cells) is at most γ and
// its expected error equals the LP optimum.
func TestPostProcessNonPrivateIsHardt(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 3))
	for _, tc := range []struct {
		groups, bins int
		gamma        float64
		allPairs     bool
	}{
		{2, 2, 0, false}, {2, 2, 0.02, false}, {2, 2, 0.05, false}, {2, 4, 0.01, false}, {3, 2, 0.03, true}, {3, 3, 0, true},
	} {
		scores, group, label := syntheticScores(r, 5000, tc.groups)
		bins := ThresholdBins(0.5)
		if tc.bins > 2 {
			var err error
			if bins, err = QuantileBins(scores, tc.bins); err != nil {
				t.Fatal(err)
			}
		}
		bin, err := bins.Assign(scores)
		if err != nil {
			t.Fatal(err)
		}
		res, err := PostProcess(nil, bin, group, label, bins.Len(), tc.groups,
			PostProcessConfig{Gamma: tc.gamma, Epsilon: math.Inf(1), AllPairs: tc.allPairs})
		if err != nil || res.Failed {
			t.Fatalf("%+v: %v %s", tc, err, res.Reason)
		}
		counts, _ := CountCells(bin, group, label, bins.Len(), tc.groups)
		exact := Cells{Bins: bins.Len(), Groups: tc.groups, Q: counts}
		for i := range exact.Q {
			exact.Q[i] /= float64(len(bin))
		}
		lp, err := SolveHardtLP(exact, tc.gamma, EqualizedOdds, tc.allPairs)
		if err != nil {
			t.Fatal(err)
		}
		if res.Slack != 0 || math.Abs(res.Objective-lp.Error) > 1e-12 {
			t.Errorf("%+v: slack %v, objective %v; want 0 and Hardt's %v", tc, res.Slack, res.Objective, lp.Error)
		}
		prob, err := res.Model.ProbPositive(bin, group)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ExpectedMetrics(prob, label, group, tc.groups)
		if err != nil {
			t.Fatal(err)
		}
		if got.EOViolation > tc.gamma+1e-6 {
			t.Errorf("%+v: expected train EO violation %v > γ + 1e-6", tc, got.EOViolation)
		}
		if math.Abs(got.Error-res.Objective) > 1e-9 {
			t.Errorf("%+v: expected error %v, LP optimum %v", tc, got.Error, res.Objective)
		}
		rec, err := res.Receipt(nil)
		if err != nil || rec.Private() {
			t.Errorf("receipt of ε = ∞: %+v, %v; want not private", rec, err)
		}
	}
}

// TestPostProcessPrivate checks the private path under each neighbouring
// relation: a seeded run is reproducible, its noise moves the counts by
// about the Laplace scale the relation's L1 sensitivity s needs (s/ε on
// counts: 2 when a record's group changes, 1 when a record is added or
// removed; measured, not read from the code), the LP's slack is the
// union bound at that scale, and the receipt charges exactly ε under the
// relation it states.
func TestPostProcessPrivate(t *testing.T) {
	scores, group, label := syntheticScores(rand.New(rand.NewPCG(8, 4)), 20000, 2)
	bin, _ := ThresholdBins(0.5).Assign(scores)
	exact, _ := CountCells(bin, group, label, 2, 2)
	const eps = 0.5
	for _, tc := range []struct {
		relation, scope, stated string
		sens                    float64
	}{
		{"", accounting.ScopeSensitive, "", 2},
		{accounting.RelationAddRemove, accounting.ScopeAll, accounting.RelationAddRemove, 1},
	} {
		run := func(seed uint64) *PostProcessResult {
			r, _ := dpops.NewRand(&seed)
			res, err := PostProcess(r, bin, group, label, 2, 2, PostProcessConfig{Gamma: 0.02, Epsilon: eps, Relation: tc.relation})
			if err != nil || res.Failed {
				t.Fatalf("%q seed %d: %v %s", tc.relation, seed, err, res.Reason)
			}
			return res
		}
		a, b, c := run(1), run(1), run(2)
		if !slices.Equal(a.Cells.Q, b.Cells.Q) || !slices.Equal(a.Model.P, b.Model.P) {
			t.Errorf("%q: the same seed gave different results", tc.relation)
		}
		if slices.Equal(a.Cells.Q, c.Cells.Q) {
			t.Errorf("%q: different seeds gave the same noise", tc.relation)
		}
		// Mean absolute noise over many runs ≈ the scale s/(mε) (counts: s/ε).
		m := float64(len(bin))
		sum, k := 0.0, 0
		for seed := uint64(10); seed < 60; seed++ {
			res := run(seed)
			for i, q := range res.Cells.Q {
				sum += math.Abs(q*m - exact[i])
				k++
			}
		}
		if got, want := sum/float64(k), tc.sens/eps; math.Abs(got-want) > 4*want/math.Sqrt(float64(k)) {
			t.Errorf("%q: mean |noise| on counts %v, want %v ± %v", tc.relation, got, want, 4*want/math.Sqrt(float64(k)))
		}
		minQ := math.Inf(1)
		for a2 := range 2 {
			for y := range 2 {
				minQ = min(minQ, a.Cells.GroupLabel(a2, y))
			}
		}
		// The union bound at scale s/(mε) is PostProcessSlack's (stated
		// at 2/(mε)) at ε' = 2ε/s.
		if want := PostProcessSlack(minQ, len(bin), 2*eps/tc.sens, DefaultBeta, 2, 2); math.Abs(a.Slack-want) > 1e-15 || want <= 0 {
			t.Errorf("%q: slack %v, want %v", tc.relation, a.Slack, want)
		}
		seed := uint64(1)
		rec, err := a.Receipt(&seed)
		if err != nil {
			t.Fatal(err)
		}
		if !rec.Private() || math.Abs(*rec.Epsilon-eps) > 1e-12 || rec.Delta != 0 || rec.Scope != tc.scope || rec.Relation != tc.stated ||
			!rec.Seeded || len(rec.Mechanisms) != 1 || rec.Mechanisms[0].Kind != accounting.KindLaplace || rec.Mechanisms[0].Sensitivity != tc.sens {
			t.Errorf("%q: receipt %+v", tc.relation, rec)
		}
		if _, err := json.Marshal(a); err != nil {
			t.Error(err)
		}
	}
	if _, err := PostProcess(nil, bin, group, label, 2, 2, PostProcessConfig{Epsilon: eps, Relation: "replace-one"}); err == nil {
		t.Error("an unknown relation was accepted")
	}
}

// TestPostProcessFailure: when a constrained group-label count is not
// positive the LP is meaningless and the run fails (without an error, and
// with a receipt, since the budget was spent).
func TestPostProcessFailure(t *testing.T) {
	bin := []int{0, 1, 1, 0, 1, 0}
	group := []int{0, 0, 0, 0, 1, 1}
	label := []int{0, 1, 1, 0, 0, 0} // group 1 has no positives
	res, err := PostProcess(nil, bin, group, label, 2, 2, PostProcessConfig{Gamma: 0.1, Epsilon: math.Inf(1)})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Failed || res.Model != nil || !strings.Contains(res.Reason, "≤ 0") {
		t.Errorf("result %+v, want a failure", res)
	}
	// Equal FPR needs no positives.
	res, err = PostProcess(nil, bin, group, label, 2, 2, PostProcessConfig{Gamma: 0.1, Epsilon: math.Inf(1), Fairness: EqualFPR})
	if err != nil || res.Failed {
		t.Errorf("equal FPR: %v %+v", err, res)
	}
	// With noise a group with few records fails about half of the time.
	failed := 0
	for seed := range uint64(40) {
		r, _ := dpops.NewRand(&seed)
		res, err := PostProcess(r, bin, group, label, 2, 2, PostProcessConfig{Gamma: 0.1, Epsilon: 0.1, Fairness: EqualFPR})
		if err != nil {
			t.Fatal(err)
		}
		if res.Failed {
			failed++
			if rec, err := res.Receipt(nil); err != nil || !rec.Private() {
				t.Errorf("failed run's receipt %+v %v", rec, err)
			}
		}
	}
	if failed == 0 || failed == 40 {
		t.Errorf("%d of 40 noisy runs failed, want some but not all", failed)
	}
}

func TestPostProcessErrors(t *testing.T) {
	ok := []int{0, 1}
	for _, tc := range []struct {
		name              string
		bin, group, label []int
		cfg               PostProcessConfig
		want              string
	}{
		{"bad bin", []int{0, 2}, ok, ok, PostProcessConfig{Epsilon: 1}, "record 1 has bin 2"},
		{"bad group", ok, []int{0, -1}, ok, PostProcessConfig{Epsilon: 1}, "record 1 has group -1"},
		{"bad label", ok, ok, []int{2, 0}, PostProcessConfig{Epsilon: 1}, "record 0 has label 2"},
		{"lengths", ok, []int{0}, ok, PostProcessConfig{Epsilon: 1}, "one of each per record"},
		{"gamma", ok, ok, ok, PostProcessConfig{Gamma: -1, Epsilon: 1}, "gamma"},
		{"epsilon", ok, ok, ok, PostProcessConfig{Epsilon: 0}, "epsilon"},
		{"beta", ok, ok, ok, PostProcessConfig{Epsilon: 1, Beta: 2}, "beta"},
		{"no rand", ok, ok, ok, PostProcessConfig{Epsilon: 1}, "rand"},
	} {
		_, err := PostProcess(nil, tc.bin, tc.group, tc.label, 2, 2, tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to mention %q", tc.name, err, tc.want)
		}
	}
}

// TestLaplaceVectorScale is the sampler check the issue asks for (and the
// check the public reference code would fail: it passed the scale as the
// location). Laplace(b) noise has mean 0, E|X| = b and Var X = 2b²; with
// 10,000 draws the tolerances are four standard errors.
func TestLaplaceVectorScale(t *testing.T) {
	seed := uint64(5)
	r, _ := dpops.NewRand(&seed)
	for _, tc := range []struct{ sens, eps float64 }{{2, 1}, {2, 0.1}, {0.003, 0.02}} {
		b := tc.sens / tc.eps
		const n = 10000
		v := make([]float64, n)
		for i := range v {
			v[i] = 100 // noise must not depend on (or be shifted by) the value
		}
		if err := laplaceVector(r, v, tc.sens, tc.eps, n); err != nil {
			t.Fatal(err)
		}
		var sum, sumAbs, sumSq float64
		for _, x := range v {
			d := x - 100
			sum, sumAbs, sumSq = sum+d, sumAbs+math.Abs(d), sumSq+d*d
		}
		mean, mad, variance := sum/n, sumAbs/n, sumSq/n
		if se := math.Sqrt(2) * b / math.Sqrt(n); math.Abs(mean) > 4*se {
			t.Errorf("b = %v: mean %v, want 0 ± %v", b, mean, 4*se)
		}
		if se := b / math.Sqrt(n); math.Abs(mad-b) > 4*se {
			t.Errorf("b = %v: mean |noise| %v, want %v ± %v", b, mad, b, 4*se)
		}
		// Var of X² is E X⁴ − (E X²)² = 24b⁴ − 4b⁴ = 20b⁴.
		if se := math.Sqrt(20) * b * b / math.Sqrt(n); math.Abs(variance-2*b*b) > 4*se {
			t.Errorf("b = %v: variance %v, want %v ± %v", b, variance, 2*b*b, 4*se)
		}
	}
	if err := laplaceVector(r, make([]float64, 3), 1, 1e-12, 1<<30); err == nil {
		t.Error("an ε smaller than the rounding allowance was accepted")
	}
}

func TestScoreBins(t *testing.T) {
	th := ThresholdBins(0.5)
	got, err := th.Assign([]float64{0.1, 0.5, 0.49, 0.9})
	if err != nil || !slices.Equal(got, []int{0, 1, 0, 1}) || th.Len() != 2 {
		t.Errorf("threshold bins: %v %v", got, err)
	}
	scores := []float64{0.9, 0.1, 0.4, 0.3, 0.2, 0.8, 0.7, 0.6, 0.5, 0.0}
	q, err := QuantileBins(scores, 4)
	if err != nil || !slices.Equal(q.Edges, []float64{0.2, 0.5, 0.7}) {
		t.Errorf("quartile edges %v %v, want [0.2 0.5 0.7]", q.Edges, err)
	}
	got, _ = q.Assign(scores)
	if want := []int{3, 0, 1, 1, 1, 3, 3, 2, 2, 0}; !slices.Equal(got, want) {
		t.Errorf("quartile bins %v, want %v", got, want)
	}
	// Ties collapse bins.
	q, err = QuantileBins([]float64{0, 0, 0, 0, 1, 1, 1, 1}, 8)
	if err != nil || !slices.Equal(q.Edges, []float64{1}) {
		t.Errorf("tied edges %v %v, want [1]", q.Edges, err)
	}
	for _, bad := range [][]float64{{}, {1, 1, 1}, {0, math.NaN()}} {
		if _, err := QuantileBins(bad, 3); err == nil {
			t.Errorf("QuantileBins(%v): no error", bad)
		}
	}
	if _, err := th.Assign([]float64{math.Inf(1)}); err == nil {
		t.Error("infinite score accepted")
	}
}

func TestCountCells(t *testing.T) {
	got, err := CountCells([]int{0, 1, 1, 1}, []int{0, 0, 1, 1}, []int{1, 1, 0, 1}, 2, 2)
	// Layout (b*Groups+a)*2+y: (0,0,1), (1,0,1), (1,1,0), (1,1,1).
	if want := []float64{0, 1, 0, 0, 0, 1, 1, 1}; err != nil || !slices.Equal(got, want) {
		t.Errorf("CountCells = %v %v, want %v", got, err, want)
	}
}

// TestExpectedMetricsMatchesMetrics checks ExpectedMetrics against the
// metrics package on deterministic (0/1) predictions, where expectation and
// realisation coincide, and against hand values on a randomised one.
func TestExpectedMetricsMatchesMetrics(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 5))
	for trial := range 5 {
		n, groups := 300, 2+trial%2
		pred, label, group := make([]int, n), make([]int, n), make([]int, n)
		prob := make([]float64, n)
		for i := range n {
			pred[i], label[i], group[i] = r.IntN(2), r.IntN(2), r.IntN(groups)
			prob[i] = float64(pred[i])
		}
		got, err := ExpectedMetrics(prob, label, group, groups)
		if err != nil {
			t.Fatal(err)
		}
		sp := metrics.Evaluate(pred, label, group, 2, nil)
		if math.Abs(got.Error-sp.Error) > 1e-12 || math.Abs(got.EOViolation-sp.EOViolation) > 1e-12 ||
			math.Abs(got.DPViolation-sp.DPViolation) > 1e-12 {
			t.Errorf("trial %d: expected error/EO/DP %v/%v/%v, metrics %v/%v/%v", trial, got.Error, got.EOViolation, got.DPViolation,
				sp.Error, sp.EOViolation, sp.DPViolation)
		}
		for a, g := range got.Groups {
			if g.PositiveRate == nil || math.Abs(*g.PositiveRate-sp.Groups[a].SelectionRate) > 1e-12 {
				t.Errorf("trial %d group %d: positive rate %v, selection rate %v", trial, a, g.PositiveRate, sp.Groups[a].SelectionRate)
			}
		}
	}
	// Group 0: y=0 with p 0.2, y=1 with p 0.9; group 1: y=0 with p 0.5 and 0.3.
	got, err := ExpectedMetrics([]float64{0.2, 0.9, 0.5, 0.3}, []int{0, 1, 0, 0}, []int{0, 0, 1, 1}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if want := (0.2 + 0.1 + 0.5 + 0.3) / 4; math.Abs(got.Error-want) > 1e-12 {
		t.Errorf("error %v, want %v", got.Error, want)
	}
	if math.Abs(got.FPRGap-0.2) > 1e-12 || got.TPRGap != 0 || got.Groups[1].TPR != nil || *got.Groups[0].TPR != 0.9 {
		t.Errorf("rates %+v", got)
	}
	if _, err := ExpectedMetrics([]float64{1.5}, []int{0}, []int{0}, 1); err == nil {
		t.Error("probability 1.5 accepted")
	}
}

// TestSamplePredictions: sampled predictions are reproducible for a seed and
// their positive rate matches the probabilities.
func TestSamplePredictions(t *testing.T) {
	prob := make([]float64, 20000)
	for i := range prob {
		prob[i] = float64(i%5) / 4
	}
	a, _ := SamplePredictions(rand.New(rand.NewPCG(1, 1)), prob)
	b, _ := SamplePredictions(rand.New(rand.NewPCG(1, 1)), prob)
	if !slices.Equal(a, b) {
		t.Error("same seed, different predictions")
	}
	pos := 0
	for _, p := range a {
		pos += p
	}
	// Mean 0.5; the variance of the sum is Σ p(1−p) = 20000·(0+3/16+1/4+3/16+0)/5.
	if sd := math.Sqrt(20000 * 0.625 / 5); math.Abs(float64(pos)-10000) > 4*sd {
		t.Errorf("%d positives, want 10000 ± %v", pos, 4*sd)
	}
	if _, err := SamplePredictions(nil, prob); err == nil {
		t.Error("nil rand accepted")
	}
}

// TestFitLogistic checks the Newton fit against finite differences of the
// penalised loss written out independently: the gradient vanishes at the
// returned weights and nearby points are worse.
func TestFitLogistic(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 6))
	const n, d, l2 = 400, 3, 0.01
	x := make([]float64, n*d)
	label := make([]int, n)
	for i := range n {
		z := 0.0
		for j := range d {
			x[i*d+j] = r.NormFloat64()
			z += float64(j+1) * 0.7 * x[i*d+j]
		}
		if r.Float64() < 1/(1+math.Exp(-z+0.5)) {
			label[i] = 1
		}
	}
	h, err := FitLogistic(x, n, d, label, l2)
	if err != nil {
		t.Fatal(err)
	}
	loss := func(w []float64) float64 {
		s := 0.0
		for i := range n {
			m := w[0]
			for j := range d {
				m += w[j+1] * x[i*d+j]
			}
			s += math.Log(1+math.Exp(m)) - float64(label[i])*m
		}
		s /= n
		for _, v := range w {
			s += l2 / 2 * v * v
		}
		return s
	}
	const step = 1e-5
	for j := range h.W {
		up, down := slices.Clone(h.W), slices.Clone(h.W)
		up[j] += step
		down[j] -= step
		if g := (loss(up) - loss(down)) / (2 * step); math.Abs(g) > 1e-7 {
			t.Errorf("∂loss/∂w[%d] = %v at the fit, want 0", j, g)
		}
		if loss(up) < loss(h.W) || loss(down) < loss(h.W) {
			t.Errorf("moving w[%d] lowers the loss", j)
		}
	}
	prob, _ := h.Probabilities(x[:d], 1)
	pred, _ := h.Predict(x[:d], 1)
	if (prob[0] > 0.5) != (pred[0] == 1) {
		t.Errorf("probability %v and prediction %v disagree", prob[0], pred[0])
	}
	if _, err := FitLogistic(x, n, d, append([]int{2}, label[1:]...), l2); err == nil {
		t.Error("label 2 accepted")
	}
}

// ExamplePostProcess post-processes a base classifier's 0/1 predictions for
// equalized odds without privacy (ε = ∞, Hardt et al.'s LP) on the
// hand-worked table of lp_test.go, scaled to 100 records.
func ExamplePostProcess() {
	var bin, group, label []int
	add := func(b, a, y, count int) {
		for range count {
			bin, group, label = append(bin, b), append(group, a), append(label, y)
		}
	}
	add(0, 0, 0, 18)
	add(1, 0, 0, 2)
	add(0, 0, 1, 6)
	add(1, 0, 1, 24)
	add(0, 1, 0, 14)
	add(1, 1, 0, 6)
	add(0, 1, 1, 12)
	add(1, 1, 1, 18)
	res, err := PostProcess(nil, bin, group, label, 2, 2, PostProcessConfig{Gamma: 0, Epsilon: math.Inf(1)})
	if err != nil || res.Failed {
		fmt.Println(err, res.Reason)
		return
	}
	fmt.Printf("P[Ỹ=1 | Ŷ=0]: group 0 %.4f, group 1 %.4f\n", res.Model.P[0], res.Model.P[1])
	fmt.Printf("P[Ỹ=1 | Ŷ=1]: group 0 %.4f, group 1 %.4f\n", res.Model.P[2], res.Model.P[3])
	fmt.Printf("expected error %.2f\n", res.Objective)
	// Output:
	// P[Ỹ=1 | Ŷ=0]: group 0 0.2571, group 1 0.0000
	// P[Ỹ=1 | Ŷ=1]: group 0 0.6857, group 1 1.0000
	// expected error 0.36
}
