package linear

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// parityCostScores draws n records of a table where parity costs error
// (as on Adult): group 1 (40 %) has a positive rate of .45 against group
// 0's .2 and scores shifted up, so a base classifier thresholded at 0.5
// shows a DP violation near .33, and pushing it to .02 costs more than
// .02 of error (+.034 here with PrivateBinsNoSlack bins; before the six
// bins, group 1's rate of .41 cost +.023 with four).
func parityCostScores(r *rand.Rand, n int) (scores []float64, group, label []int) {
	for range n {
		a, y := 0, 0
		if r.Float64() < 0.4 {
			a = 1
		}
		if r.Float64() < 0.2+0.25*float64(a) {
			y = 1
		}
		s := 0.5*float64(y) + 0.15*float64(a) + 0.2*r.NormFloat64()
		scores = append(scores, 1/(1+math.Exp(-8*(s-0.3))))
		group, label = append(group, a), append(label, y)
	}
	return scores, group, label
}

// TestPrivateGammaShareDefaultHalvesViolation: on 10,000 training records
// with ε = 0.5 for the cells (m·ε = 5,000, above PrivateGammaShareBudget),
// the command line's default with a private base (no slack, PrivateBins, γ =
// DefaultPrivateGamma, PrivateGammaShare's share of the noisy violation)
// halves the base classifier's demographic-parity violation at ≤ 0.02
// more error, and the default before the share (γ fixed at 0.02) does
// not: it pushes the violation far below half at more than 0.02 of error.
// Means over 8 noise draws, each scored exactly (ExpectedMetrics) on
// 20,000 test records of the same distribution.
func TestPrivateGammaShareDefaultHalvesViolation(t *testing.T) {
	const m, eps, draws = 10000, 0.5, 8
	h := newHalvingBench(t, parityCostScores, 43, m, 0.2)
	bins := PrivateBins(DefaultPrivateSlack, m, eps)
	gammaOf := func(res *PostProcessResult) float64 { return res.Gamma }
	run := func(share float64) (errMean, dpMean, gamma float64) {
		return h.run(t, bins, draws, 10, PostProcessConfig{Gamma: DefaultPrivateGamma, Epsilon: eps, Fairness: DemographicParity,
			Slack: DefaultPrivateSlack, GammaShare: share}, gammaOf)
	}
	base, meets := h.base, h.meets
	share := PrivateGammaShare(m, eps, DemographicParity)
	newErr, newDP, newGamma := run(share)
	oldErr, oldDP, oldGamma := run(0)
	t.Logf("base error %.4f DP %.4f; default (share %g): %.4f / %.4f (γ %.3f); before (γ fixed): %.4f / %.4f (γ %.3f)",
		base.Error, base.DPViolation, share, newErr, newDP, newGamma, oldErr, oldDP, oldGamma)
	if share != DefaultPrivateGammaShare {
		t.Fatalf("PrivateGammaShare(%d, %v, dp) = %v, want %v", m, eps, share, DefaultPrivateGammaShare)
	}
	if !meets(newErr, newDP) {
		t.Errorf("the default's error %.4f DP %.4f, want DP ≤ %.4f at error ≤ %.4f", newErr, newDP, base.DPViolation/2, base.Error+0.02)
	}
	if meets(oldErr, oldDP) {
		t.Errorf("the fixed γ met the criterion too (%.4f / %.4f): the test does not tell them apart", oldErr, oldDP)
	}
}

// TestPrivateGammaShareResolved: GammaShare GammaShareAuto takes
// PrivateGammaShare of the training records and the cells' ε (a share
// from m·ε = PrivateGammaShareBudget on, for demographic parity only), the
// report records the share used (so `--config report.json` repeats it),
// and without a private base the value is refused.
func TestPrivateGammaShareResolved(t *testing.T) {
	if PrivateGammaShare(33916, 0.5, DemographicParity) != DefaultPrivateGammaShare || PrivateGammaShare(1495, 2, DemographicParity) != 0 ||
		PrivateGammaShare(4000, 1, DemographicParity) != DefaultPrivateGammaShare || PrivateGammaShare(3999, 1, DemographicParity) != 0 ||
		PrivateGammaShare(33916, 0.5, EqualizedOdds) != 0 || PrivateGammaShare(33916, 0.5, EqualFPR) != 0 {
		t.Error("PrivateGammaShare does not follow m·ε ≥ PrivateGammaShareBudget for demographic parity only")
	}
	cfg := privateBaseConfig() // ε 1.5 for the cells
	for _, tc := range []struct {
		limit    int
		fairness string
		share    float64
	}{{2000, "dp", 0}, {8000, "dp", DefaultPrivateGammaShare}, {8000, "eo", 0}} { // Limit is the training records
		cfg.Limit = tc.limit
		editPostproc(&cfg, func(pc *PostprocConfig) {
			// γ below any share of the noisy violation, so the share binds.
			pc.GammaShare, pc.Fairness, pc.Slack, pc.Gamma = GammaShareAuto, tc.fairness, string(SlackNone), 0.001
		})
		rep, err := RunPostproc(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		pp := FairExtra(rep).PostProcessing
		want := max(PostprocConfigOf(cfg).Gamma, tc.share*pp.NoisyViolation)
		if got := PostprocConfigOf(rep.Config).GammaShare; got != tc.share || pp.Gamma != want || (tc.share > 0) != (pp.Gamma > 0.001) {
			t.Errorf("limit %d %s: share %v, γ %v; want %v, %v", tc.limit, tc.fairness, got, pp.Gamma, tc.share, want)
		}
		// The recorded share reruns the same classifier.
		again, err := RunPostproc(context.Background(), rep.Config)
		if err != nil {
			t.Fatal(err)
		}
		if a := FairExtra(again).PostProcessing; a.Gamma != pp.Gamma || FairExtra(again).ExpectedTest.Error != FairExtra(rep).ExpectedTest.Error {
			t.Errorf("limit %d %s: the report's configuration reran at γ %v, want %v", tc.limit, tc.fairness, a.Gamma, pp.Gamma)
		}
	}
	plain := privateBaseConfig()
	editPostproc(&plain, func(pc *PostprocConfig) { pc.Base, pc.BaseEpsilon, pc.GammaShare = "", 0, GammaShareAuto })
	if _, err := LoadFairData(plain); err == nil || !strings.Contains(err.Error(), "GammaShare") {
		t.Errorf("GammaShareAuto without a private base: err = %v, want a GammaShare error", err)
	}
}
