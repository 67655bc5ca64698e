package linear

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
)

// TestPostProcessSlackSD checks the standard-deviation slack by hand and
// against a Monte Carlo simulation of the noise it describes: Laplace
// noise of scale 2/(mε) on every cell fraction (drawn here by inverting
// the CDF, not with the release's sampler), clamped at 0 as PostProcess
// clamps, and the two groups' rates recomputed from the definition
// (positiveRates, or the label's cells for an error rate). The slack at
// z = 1 must bound the simulated standard deviation of the difference, and
// be tight to within the linearisation's Σ(p_b − r)² ≤ K − 1 where the
// weights make it loose by a known factor.
func TestPostProcessSlackSD(t *testing.T) {
	// By hand: z·√(2·c·8·(K−1))/(minQ·m·ε).
	for _, tc := range []struct {
		minQ, eps, z float64
		m, bins      int
		f            Fairness
		want         float64
	}{
		{0.3, 1, 1, 1000, 2, DemographicParity, math.Sqrt(32) / 300}, // √(2·2·8·1)
		{0.3, 1, 2, 1000, 4, DemographicParity, 2 * math.Sqrt(96) / 300},
		{0.1, 0.5, 1, 5000, 2, EqualizedOdds, math.Sqrt(16) / 250},
		{0.1, math.Inf(1), 1, 5000, 2, EqualizedOdds, 0},
	} {
		if got := PostProcessSlackSD(tc.minQ, tc.m, tc.eps, tc.z, tc.bins, tc.f); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%+v: slack %v, want %v", tc, got, tc.want)
		}
	}

	laplace := func(r *rand.Rand, scale float64) float64 {
		u := r.Float64() - 0.5
		return -scale * math.Copysign(math.Log(1-2*math.Abs(u)), u)
	}
	for _, tc := range []struct {
		name string
		c    Cells
		p    []float64
		f    Fairness
		// lo is the least simulated sd / slack: Σ(p_b − r)² over K − 1
		// (square-rooted) at the true cells, less 10 % for the simulation.
		lo float64
	}{
		// K = 2, the base's own predictions, rates near 0.5: Σ(p_b−r)² ≈ 0.5.
		{"dp K=2", Cells{Bins: 2, Groups: 2, Q: []float64{0.20, 0.05, 0.10, 0.05, 0.05, 0.20, 0.05, 0.30}},
			[]float64{0, 0, 1, 1}, DemographicParity, 0.6},
		// K = 4, one positive bin of four in each group.
		{"dp K=4", Cells{Bins: 4, Groups: 2, Q: []float64{0.10, 0.02, 0.05, 0.02, 0.10, 0.05, 0.05, 0.05, 0.05, 0.10, 0.05, 0.05, 0.02, 0.12, 0.05, 0.12}},
			[]float64{0, 0, 0, 0, 0, 0, 1, 1}, DemographicParity, 0.4},
		{"fpr K=2", Cells{Bins: 2, Groups: 2, Q: []float64{0.20, 0.05, 0.10, 0.05, 0.05, 0.20, 0.05, 0.30}},
			[]float64{0, 0, 1, 1}, EqualFPR, 0.5},
	} {
		const m, eps, draws = 2000, 0.5, 40000
		r := rand.New(rand.NewPCG(29, 4))
		rate := func(c Cells, a int) float64 {
			if tc.f == DemographicParity {
				return positiveRates(c, tc.p)[a]
			}
			pos, all := 0.0, 0.0
			for b := range c.Bins {
				pos += tc.p[b*c.Groups+a] * c.At(b, a, 0)
				all += c.At(b, a, 0)
			}
			return pos / all
		}
		minQ := math.Inf(1)
		for a := range tc.c.Groups {
			q := tc.c.GroupLabel(a, 0)
			if tc.f == DemographicParity {
				q += tc.c.GroupLabel(a, 1)
			}
			minQ = min(minQ, q)
		}
		var sum, sum2 float64
		noisy := Cells{Bins: tc.c.Bins, Groups: tc.c.Groups, Q: make([]float64, len(tc.c.Q))}
		for range draws {
			for i, q := range tc.c.Q {
				noisy.Q[i] = max(0, q+laplace(r, 2/(m*eps)))
			}
			d := rate(noisy, 1) - rate(noisy, 0)
			sum, sum2 = sum+d, sum2+d*d
		}
		sd := math.Sqrt(sum2/draws - (sum/draws)*(sum/draws))
		slack := PostProcessSlackSD(minQ, m, eps, 1, tc.c.Bins, tc.f)
		if sd > 1.05*slack || sd < tc.lo*slack {
			t.Errorf("%s: simulated sd %.5f of the noisy difference, slack %.5f: want sd in [%.2f, 1.05]·slack", tc.name, sd, slack, tc.lo)
		}
	}
}

// TestCellsViolation checks CellsViolation and MostAccurate against
// independent computations: the violation of a classifier on the exact
// cells of some records is ExpectedMetrics' pairwise gap computed from the
// records themselves, and MostAccurate's error on the cells is the
// unconstrained LP's optimum.
func TestCellsViolation(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for _, groups := range []int{2, 3} {
		scores, group, label := syntheticScores(r, 3000, groups)
		bins, _ := UniformBins(4)
		bin, _ := bins.Assign(scores)
		counts, err := CountCells(bin, group, label, 4, groups)
		if err != nil {
			t.Fatal(err)
		}
		c := Cells{Bins: 4, Groups: groups, Q: make([]float64, len(counts))}
		for i, n := range counts {
			c.Q[i] = n / float64(len(bin))
		}
		p := make([]float64, 4*groups)
		for i := range p {
			p[i] = r.Float64()
		}
		prob := make([]float64, len(bin))
		for i := range bin {
			prob[i] = p[bin[i]*groups+group[i]]
		}
		want, err := ExpectedMetrics(prob, label, group, groups)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			f    Fairness
			want float64
		}{{DemographicParity, want.DPViolation}, {EqualizedOdds, want.EOViolation}, {EqualFPR, want.FPRGap}} {
			// Every pair is what ExpectedMetrics measures; with two groups
			// group 0 against the other is the same.
			for _, allPairs := range []bool{true, groups == 2} {
				got, err := CellsViolation(c, p, tc.f, allPairs)
				if err != nil || math.Abs(got-tc.want) > 1e-12 {
					t.Errorf("%d groups, %v, all pairs %v: violation %v, %v; want %v", groups, tc.f, allPairs, got, err, tc.want)
				}
			}
		}
		best := MostAccurate(c)
		free, err := SolveHardtLP(c, 1, DemographicParity, false)
		if err != nil {
			t.Fatal(err)
		}
		errAt := 0.0
		for b := range c.Bins {
			for a := range groups {
				errAt += best[b*groups+a]*c.At(b, a, 0) + (1-best[b*groups+a])*c.At(b, a, 1)
			}
		}
		if math.Abs(errAt-free.Error) > 1e-12 {
			t.Errorf("%d groups: MostAccurate's error %v, the unconstrained LP's %v", groups, errAt, free.Error)
		}
	}
	if _, err := CellsViolation(Cells{Bins: 2, Groups: 2, Q: []float64{1, 0, 0, 0, 0, 0, 0, 0}}, make([]float64, 4), DemographicParity, false); err == nil {
		t.Error("an empty group's rate was accepted")
	}
}

// TestPostProcessSlackRules runs one noise draw under every slack rule and
// a data-aware γ: the noise, the cells and the receipt are the same (the
// rules only read the released cells), the slack is the rule's formula,
// γ is the larger of the fixed one and the share of the noisy violation,
// and the solution keeps the LP's bound on the noisy cells.
func TestPostProcessSlackRules(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 11))
	scores, group, label := syntheticScores(r, 4000, 2)
	bins, _ := UniformBins(4)
	bin, _ := bins.Assign(scores)
	const eps, gamma = 0.5, 0.02
	var cells0, receipt0 string
	for _, tc := range []struct {
		rule  SlackRule
		z     float64
		share float64
	}{{"", 0, 0}, {SlackUnion, 0, 0}, {SlackSD, 0, 0}, {SlackSD, 2, 0}, {SlackNone, 0, 0}, {SlackNone, 0, 0.4}, {SlackSD, 1, 0.3}} {
		res, err := PostProcess(rand.New(rand.NewPCG(5, 5)), bin, group, label, 4, 2,
			PostProcessConfig{Gamma: gamma, Epsilon: eps, Fairness: DemographicParity, Slack: tc.rule, SlackZ: tc.z, GammaShare: tc.share})
		if err != nil || res.Failed {
			t.Fatalf("%+v: %v %v", tc, err, res)
		}
		cells, _ := json.Marshal(res.Cells.Q)
		rec, err := res.Receipt(nil)
		if err != nil {
			t.Fatal(err)
		}
		receipt, _ := json.Marshal(rec)
		if cells0 == "" {
			cells0, receipt0 = string(cells), string(receipt)
		} else if string(cells) != cells0 || string(receipt) != receipt0 {
			t.Errorf("%+v: the noisy cells or the receipt changed with the slack rule", tc)
		}
		minQ := min(res.Cells.rateTotal(0, anyLabel), res.Cells.rateTotal(1, anyLabel))
		var want float64
		switch tc.rule {
		case "", SlackUnion:
			want = 2 * PostProcessSlack(minQ, len(bin), eps, DefaultBeta, 4, 2)
		case SlackSD:
			z := tc.z
			if z == 0 {
				z = DefaultSlackZ
			}
			want = PostProcessSlackSD(minQ, len(bin), eps, z, 4, DemographicParity)
		}
		if math.Abs(res.Slack-want) > 1e-15 || (tc.rule != SlackNone && !(want > 0)) {
			t.Errorf("%+v: slack %v, want %v", tc, res.Slack, want)
		}
		// The noisy violation from the definition (positiveRates), of
		// the cell-by-cell majority classifier.
		best := make([]float64, 8)
		for i := range best {
			if res.Cells.Q[2*i+1] > res.Cells.Q[2*i] {
				best[i] = 1
			}
		}
		pr := positiveRates(res.Cells, best)
		if v := math.Abs(pr[1] - pr[0]); math.Abs(res.NoisyViolation-v) > 1e-12 || !(v > 0.05) {
			t.Errorf("%+v: noisy violation %v, want %v (and > 0.05 on these scores)", tc, res.NoisyViolation, v)
		}
		if wantG := max(gamma, tc.share*res.NoisyViolation); math.Abs(res.Gamma-wantG) > 1e-15 {
			t.Errorf("%+v: γ %v, want %v", tc, res.Gamma, wantG)
		}
		pr = positiveRates(res.Cells, res.Model.P)
		if d := math.Abs(pr[1] - pr[0]); d > res.Gamma+res.Slack+1e-9 {
			t.Errorf("%+v: noisy violation %v of the solution beyond γ %v + slack %v", tc, d, res.Gamma, res.Slack)
		}
	}
	if _, err := PostProcess(r, bin, group, label, 4, 2, PostProcessConfig{Epsilon: 1, Slack: "tight"}); err == nil {
		t.Error("an unknown slack rule was accepted")
	}
	if _, err := PostProcess(r, bin, group, label, 4, 2, PostProcessConfig{Epsilon: 1, GammaShare: 1.5}); err == nil {
		t.Error("a γ share above 1 was accepted")
	}
}

// TestPrivateSlackDefaultHalvesViolation is the done-when of the private
// fair pipeline (at most half the unfair model's demographic-parity
// violation at ≤ 0.02 more error) on a small synthetic table, 1,500
// training records with ε = 0.5 for the cells (m·ε = 750): the command
// line's default with a private base (DefaultPrivateSlack,
// PrivateBins for it, γ = DefaultPrivateGamma) meets it against the base
// classifier's own predictions, and the default before the slack rules
// (the union bound, DefaultPrivateBins) does not: its slack exceeds the
// whole violation, so the LP leaves the base as it was. Means over 8
// noise draws, each scored exactly (ExpectedMetrics) on 20,000 test
// records of the same distribution.
func TestPrivateSlackDefaultHalvesViolation(t *testing.T) {
	const m, eps, draws = 1500, 0.5, 8
	h := newHalvingBench(t, func(r *rand.Rand, n int) ([]float64, []int, []int) { return syntheticScores(r, n, 2) }, 41, m, 0.1)
	slackOf := func(res *PostProcessResult) float64 { return res.Slack }
	run := func(rule SlackRule, bins int) (errMean, dpMean, slack float64) {
		return h.run(t, bins, draws, 9, PostProcessConfig{Gamma: DefaultPrivateGamma, Epsilon: eps, Fairness: DemographicParity, Slack: rule}, slackOf)
	}
	base, meets := h.base, h.meets
	newErr, newDP, newSlack := run(DefaultPrivateSlack, PrivateBins(DefaultPrivateSlack, m, eps))
	oldErr, oldDP, oldSlack := run(SlackUnion, DefaultPrivateBins(m, eps))
	t.Logf("base error %.4f DP %.4f; default: %.4f / %.4f (slack %.3f); before: %.4f / %.4f (slack %.3f)",
		base.Error, base.DPViolation, newErr, newDP, newSlack, oldErr, oldDP, oldSlack)
	if !meets(newErr, newDP) {
		t.Errorf("the default's error %.4f DP %.4f, want DP ≤ %.4f at error ≤ %.4f", newErr, newDP, base.DPViolation/2, base.Error+0.02)
	}
	if meets(oldErr, oldDP) {
		t.Errorf("the union-bound default met the criterion too (%.4f / %.4f): the test does not tell them apart", oldErr, oldDP)
	}
	if PrivateBins(SlackUnion, m, eps) != DefaultPrivateBins(m, eps) || PrivateBins("", 8000, 1) != DefaultPrivateBins(8000, 1) ||
		PrivateBins(SlackSD, m, eps) != PrivateBinsNoSlack || PrivateBins(SlackNone, m, eps) != PrivateBinsNoSlack {
		t.Errorf("PrivateBins does not keep the m·ε rule for the union bound and %d bins otherwise", PrivateBinsNoSlack)
	}
}

// halvingBench is a table for checking a post-processing default: the
// training records' base scores, groups and labels, test records of the
// same distribution, and the base classifier's exact test rates at
// threshold 0.5 (the unfair model the default should improve on).
type halvingBench struct {
	scores, tScores              []float64
	group, label, tGroup, tLabel []int
	base                         ExpectedRates
}

// newHalvingBench draws m training and 20,000 test records with draw from
// one stream seeded by seed, and fails unless the base's DP violation
// exceeds minDP (else halving it tests nothing).
func newHalvingBench(t *testing.T, draw func(r *rand.Rand, n int) ([]float64, []int, []int), seed uint64, m int, minDP float64) halvingBench {
	t.Helper()
	var h halvingBench
	r := rand.New(rand.NewPCG(seed, 2))
	h.scores, h.group, h.label = draw(r, m)
	h.tScores, h.tGroup, h.tLabel = draw(r, 20000)
	basePred := make([]float64, len(h.tScores))
	for i, s := range h.tScores {
		if s >= 0.5 {
			basePred[i] = 1
		}
	}
	base, err := ExpectedMetrics(basePred, h.tLabel, h.tGroup, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !(base.DPViolation > minDP) {
		t.Fatalf("base DP violation %v: the table does not test halving", base.DPViolation)
	}
	h.base = base
	return h
}

// run post-processes the training records' bins (2: the threshold 0.5,
// more: UniformBins) with cfg under draws noise streams (PCG(d, stream)),
// scores each result exactly on the test records (ExpectedMetrics), and
// returns the means of the error, the DP violation and stat of the result.
func (h halvingBench) run(t *testing.T, bins, draws int, stream uint64, cfg PostProcessConfig, stat func(*PostProcessResult) float64) (errMean, dpMean, statMean float64) {
	t.Helper()
	sb, _ := UniformBins(bins)
	if bins == 2 {
		sb = ThresholdBins(0.5)
	}
	bin, _ := sb.Assign(h.scores)
	tBin, _ := sb.Assign(h.tScores)
	n := float64(draws)
	for d := range draws {
		res, err := PostProcess(rand.New(rand.NewPCG(uint64(d), stream)), bin, h.group, h.label, bins, 2, cfg)
		if err != nil || res.Failed {
			t.Fatalf("%+v: %v %+v", cfg, err, res)
		}
		prob, _ := res.Model.ProbPositive(tBin, h.tGroup)
		got, err := ExpectedMetrics(prob, h.tLabel, h.tGroup, 2)
		if err != nil {
			t.Fatal(err)
		}
		errMean, dpMean, statMean = errMean+got.Error/n, dpMean+got.DPViolation/n, statMean+stat(res)/n
	}
	return errMean, dpMean, statMean
}

// meets is the done-when against the base: at most half its DP violation
// at no more than 0.02 more error.
func (h halvingBench) meets(e, dp float64) bool {
	return dp <= h.base.DPViolation/2 && e <= h.base.Error+0.02
}
