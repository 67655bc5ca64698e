package linear

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/trainer"
)

// oracleTuneConfig is a tuned oracle's configuration on a generated table
// of n records (wideTable: 5 features, 30 % positives) at ε = eps.
func oracleTuneConfig(t *testing.T, n int, eps float64) trainer.Config {
	t.Helper()
	cfg := tuneTableConfig(t, n, "", eps)
	cfg.Algo = OracleName
	editPostproc(&cfg, func(p *PostprocConfig) {
		*p = PostprocDefaults()
		p.Fairness = "eo"
	})
	return cfg
}

// TestOracleTunePlan checks the search's calibration against an
// independent computation: every kind's split is the oracle's basic
// composition of its nominal ε ν (ε_c = share·ν, and ε_c plus its 2T or
// 3T per-round releases sum to ν), its curve recomposed by hand
// (min(ε, αε²/2) per release), every kind's ε at δ is the same per-trial
// budget (the calibration), and the worst curve plus the score's ρα put
// through Theorem 2 (TunedEpsilon) gives the plan's ε, at most the target
// and close to it.
func TestOracleTunePlan(t *testing.T) {
	const target, delta, share = 1.0, 1e-8, 0.1
	law, err := accounting.TNBWithMean(0, 10)
	if err != nil {
		t.Fatal(err)
	}
	space := OracleTuneSpace{Rounds: []int{5, 100}, Bound: []float64{1}, Eta: []float64{1},
		Fallback: []string{string(FallbackNone), string(FallbackCost)}}
	pl, err := planOracleTune(privacy{Epsilon: target}, delta, share, space, law, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	worst := make([]float64, len(pl.Orders))
	var trialEps []float64
	for ri, rounds := range space.Rounds {
		for fi, f := range space.Fallback {
			k := pl.kind(ri, fi)
			nu := pl.Noise[k]
			b, err := pl.budget(k, nu)
			if err != nil {
				t.Fatal(err)
			}
			releases := 2 * rounds
			if f == string(FallbackCost) {
				releases = 3 * rounds
			}
			if math.Abs(b.Counts-share*nu) > 1e-15 || math.Abs(b.Counts+float64(releases)*b.PerRound-nu) > 1e-8*nu {
				t.Errorf("T = %d, %s: ε_c %v + %d × ε' %v, want the nominal %v", rounds, f, b.Counts, releases, b.PerRound, nu)
			}
			for j, a := range pl.Orders {
				want := math.Min(b.Counts, a*b.Counts*b.Counts/2) + float64(releases)*math.Min(b.PerRound, a*b.PerRound*b.PerRound/2)
				if math.Abs(pl.Curves[k][j]-want) > 1e-12*want {
					t.Fatalf("T = %d, %s, order %v: curve %v, by hand %v", rounds, f, a, pl.Curves[k][j], want)
				}
				worst[j] = math.Max(worst[j], want)
			}
			e, _, err := accounting.EpsilonFromRDP(pl.Orders, pl.Curves[k], delta)
			if err != nil {
				t.Fatal(err)
			}
			trialEps = append(trialEps, e)
		}
	}
	for _, e := range trialEps[1:] {
		if math.Abs(e/trialEps[0]-1) > 1e-6 {
			t.Errorf("kinds calibrated to different trial ε: %v", trialEps)
		}
	}
	// More rounds compose better in RDP: a larger nominal ε for the same cost.
	if !(pl.Noise[pl.kind(1, 0)] > pl.Noise[pl.kind(0, 0)]) {
		t.Errorf("nominal ε of T = 100 (%v) not above T = 5's (%v)", pl.Noise[pl.kind(1, 0)], pl.Noise[pl.kind(0, 0)])
	}
	for j, a := range pl.Orders {
		worst[j] += a * pl.ScoreRho
	}
	eps, _, err := accounting.TunedEpsilon(law, pl.Orders, worst, delta)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(eps-pl.Epsilon) > 1e-9 || !(eps <= target) || eps < 0.99*target {
		t.Errorf("the search's ε %v (by hand %v), want at most and close to %v", pl.Epsilon, eps, target)
	}
}

// TestTuneOracle: a tuned oracle run on a small table has a receipt of the
// search (RDP, ε ≤ target, the sensitive attribute's scope and relation,
// the score listed), the chosen setting in extra.tune and in the report's
// configuration, which repeats that trial.
func TestTuneOracle(t *testing.T) {
	cfg := oracleTuneConfig(t, 2000, 2)
	d, err := LoadFairSplits(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	rep, err := TuneOracle(context.Background(), d, cfg, OracleTuneOptions{MeanTrials: 3, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	rc := rep.Privacy
	if rc.Epsilon == nil || !(*rc.Epsilon <= 2) || rc.Accountant != accounting.AccountantRDP || rc.Delta <= 0 || rc.Scope != accounting.ScopeSensitive {
		t.Fatalf("receipt %s (scope %s)", rc.String(), rc.Scope)
	}
	if !strings.Contains(rc.Note, "Theorem 2") || rc.Relation != accounting.RelationReplaceOne || !strings.Contains(rc.Note, "sensitive attribute replaced") {
		t.Errorf("the receipt does not state the search or its relation: %s", rc.Note)
	}
	last := rc.Mechanisms[len(rc.Mechanisms)-1]
	if last.Kind != accounting.KindGaussian || last.Sensitivity != math.Sqrt2 || !strings.Contains(last.Protects, "confusion counts") {
		t.Errorf("the score's release is not listed: %+v", last)
	}
	tr := OracleTuneOf(rep)
	if tr == nil {
		t.Fatal("no extra.tune")
	}
	c, sp := tr.Chosen, DefaultOracleTuneSpace()
	if !slices.Contains(sp.Rounds, c.Rounds) || !slices.Contains(sp.Bound, c.Bound) || !slices.Contains(sp.Eta, c.Eta) ||
		!slices.Contains(sp.Fallback, c.Fallback) || !(c.PerRoundEpsilon > 0) || !(c.NominalEpsilon > c.PerRoundEpsilon) {
		t.Errorf("chosen %+v, not a setting of the space at a planned budget", c)
	}
	pc := PostprocConfigOf(rep.Config)
	if pc.Rounds != c.Rounds || pc.Bound != c.Bound || pc.Eta != c.Eta || pc.Fallback != c.Fallback || !pc.BasicComposition ||
		rep.Config.Privacy.Epsilon != c.NominalEpsilon {
		t.Errorf("the report's configuration %+v (ε %v) is not the chosen setting %+v", pc, rep.Config.Privacy.Epsilon, c)
	}
	if o := FairExtra(rep).Oracle; o == nil || o.Budget.PerRound != c.PerRoundEpsilon || len(o.Trace) != c.Rounds {
		t.Errorf("the published model is not the chosen trial's")
	}
	if rep.Train != nil || FairExtra(rep).ExpectedTrain != nil || FairExtra(rep).ExpectedTest == nil {
		t.Error("training-split statistics in a private report, or no test rates")
	}
	if got := strings.Count(log.String(), "done; ε spent"); got != tr.Trials {
		t.Errorf("%d progress lines for %d trials:\n%s", got, tr.Trials, log.String())
	}
	// The report's configuration repeats the chosen trial, at its own
	// budget and its own receipt.
	again, err := RunFair(context.Background(), d, rep.Config)
	if err != nil {
		t.Fatal(err)
	}
	if o := FairExtra(again).Oracle; o.Budget.PerRound != c.PerRoundEpsilon {
		t.Errorf("repeating the configuration ran at ε' %v, not %v", o.Budget.PerRound, c.PerRoundEpsilon)
	}
}

// TestTuneOracleRefusals: a search needs the oracle, equalized odds, a
// finite ε it can pay for, its own composition, and a valid space.
func TestTuneOracleRefusals(t *testing.T) {
	base := oracleTuneConfig(t, 600, 1)
	d, err := LoadFairSplits(base)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		edit func(*trainer.Config)
		want string
	}{
		{func(c *trainer.Config) { editPostproc(c, func(p *PostprocConfig) { p.Fairness = "fpr" }) }, "must be eo to tune the oracle"},
		{func(c *trainer.Config) { editPostproc(c, func(p *PostprocConfig) { p.BasicComposition = true }) }, "is the search's to set"},
		{func(c *trainer.Config) { c.Privacy.Epsilon = math.Inf(1) }, "must be finite to tune"},
		{func(c *trainer.Config) { c.Privacy.Epsilon = 0.001 }, "too small to tune"},
		{func(c *trainer.Config) { c.Algo = PostprocName }, "is not the oracle learner"},
	} {
		cfg := base
		tc.edit(&cfg)
		if _, err := TuneOracle(context.Background(), d, cfg, OracleTuneOptions{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
	for _, sp := range []OracleTuneSpace{
		{Rounds: []int{0}, Bound: []float64{1}, Eta: []float64{1}, Fallback: []string{"none"}},
		{Rounds: []int{5}, Bound: []float64{1}, Eta: []float64{1}, Fallback: []string{"always"}},
		{Rounds: []int{5}, Bound: []float64{1}, Eta: []float64{1}},
	} {
		if _, err := TuneOracle(context.Background(), d, base, OracleTuneOptions{Space: &sp}); err == nil || !strings.Contains(err.Error(), "Tune.Space") {
			t.Errorf("space %+v: %v", sp, err)
		}
	}
	if _, err := TuneOracle(context.Background(), d, base, OracleTuneOptions{MeanTrials: 1}); err == nil || !strings.Contains(err.Error(), "Tune.MeanTrials") {
		t.Errorf("E[K] = 1: %v", err)
	}
}

// TestOracleTuneScoreIsNoisy: a trial's violation is computed from
// Gaussian-noised confusion counts at the plan's σ × √2 (one record's
// group replaced moves it between two cells): over many draws on the same
// predictions the noisy violation spreads, and the noisy accuracy's count
// (four correct cells) has standard deviation 2 × σ × √2 (within 15 %). A
// score of exact counts has no spread and fails.
func TestOracleTuneScoreIsNoisy(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const n = 4000
	s, pred, _ := randomPredictions(r, n)
	p := &oracleTunePlan{}
	p.ScoreSigma = 20
	var sum, sq, vsum, vsq float64
	const draws = 2000
	for range draws {
		acc, viol, err := p.score(r, pred, s, 2)
		if err != nil {
			t.Fatal(err)
		}
		c := acc * n
		sum, sq, vsum, vsq = sum+c, sq+c*c, vsum+viol, vsq+viol*viol
	}
	mean := sum / draws
	std := math.Sqrt(sq/draws - mean*mean)
	want := 2 * 20 * math.Sqrt2
	if math.Abs(std/want-1) > 0.15 {
		t.Errorf("noisy correct count std %.1f, want %.1f", std, want)
	}
	vmean := vsum / draws
	if vstd := math.Sqrt(vsq/draws - vmean*vmean); !(vstd > 0.005) {
		t.Errorf("the violation's spread %.4g: its counts are not noised", vstd)
	}
}

// TestOracleTuneCheckTrial: a trial that ran at another per-release ε
// than planned, or released a mechanism the plan did not charge, is
// refused; the planned trial passes.
func TestOracleTuneCheckTrial(t *testing.T) {
	law, err := accounting.TNBWithMean(0, 10)
	if err != nil {
		t.Fatal(err)
	}
	space := OracleTuneSpace{Rounds: []int{5}, Bound: []float64{1}, Eta: []float64{1}, Fallback: []string{string(FallbackNone)}}
	pl, err := planOracleTune(privacy{Epsilon: 2}, 1e-8, 0.1, space, law, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	run := func(nu float64) (*OracleResult, accounting.Receipt) {
		t.Helper()
		r := rand.New(rand.NewPCG(1, 1))
		const n = 400
		x, label, group := make([]float64, n*2), make([]int, n), make([]int, n)
		for i := range n {
			x[2*i], x[2*i+1], label[i], group[i] = r.NormFloat64(), r.NormFloat64(), r.IntN(2), r.IntN(2)
		}
		or, err := TrainOracle(r, x, n, 2, label, group, 2, OracleConfig{Epsilon: nu, Rounds: 5, CountShare: 0.1, Fairness: EqualizedOdds})
		if err != nil {
			t.Fatal(err)
		}
		rc, err := or.Receipt(nil)
		if err != nil {
			t.Fatal(err)
		}
		return or, rc
	}
	nu := pl.Noise[0]
	or, rc := run(nu)
	if err := pl.checkTrial(0, or, rc); err != nil {
		t.Fatalf("the planned trial: %v", err)
	}
	or, rc = run(nu * 1.01)
	if err := pl.checkTrial(0, or, rc); err == nil {
		t.Error("a trial at 1 % more ε passed")
	}
	or, rc = run(nu)
	rc.Mechanisms = append(rc.Mechanisms, accounting.Mechanism{Kind: accounting.KindGaussian, Steps: 1, Protects: "extra"})
	if err := pl.checkTrial(0, or, rc); err == nil || !strings.Contains(err.Error(), "outside the tuning plan") {
		t.Errorf("an unplanned Gaussian: %v", err)
	}
	or, rc = run(nu)
	rc.Mechanisms = append(rc.Mechanisms, accounting.Mechanism{Kind: accounting.KindPureDP, Steps: 1, Epsilon: 0.01, Protects: "extra"})
	if err := pl.checkTrial(0, or, rc); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("an extra pure release: %v", err)
	}
}
