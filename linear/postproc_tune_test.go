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

// tuneTableConfig is a tuned pipeline's configuration on a generated
// table of n records (wideTable: 5 features, 30 % positives) at ε = eps
// with base.
func tuneTableConfig(t *testing.T, n int, base string, eps float64) trainer.Config {
	t.Helper()
	schema := wideTable(t, t.TempDir(), n, 5, 0.3, 11)
	cfg := trainer.Defaults()
	seed := uint64(3)
	cfg.Algo, cfg.Dataset, cfg.Schema, cfg.DataDir, cfg.Seed = PostprocName, strings.TrimSuffix(schema, ".schema.json")+".csv", schema, "", &seed
	cfg.Privacy.Epsilon = eps
	pc := PostprocDefaults()
	pc.Base, pc.Fairness, pc.Gamma, pc.Bins, pc.Slack, pc.GammaShare = base, "dp", DefaultPrivateGamma, 0, string(SlackNone), GammaShareAuto
	return WithPostprocConfig(cfg, pc)
}

// TestPostprocTunePlan checks the search's calibration against an
// independent computation: every kind's curve recomposed by hand (the
// base's share of τ and the cells' rest as pure releases, min(ε, αε²/2)
// each, for objpert; for DP-SGD its σ recalibrated and the subsampled
// Gaussian's RDP summed over its steps, plus the cells'), the worst
// curve plus the score's ρα put through Theorem 2 (TunedEpsilon) gives
// the plan's ε, which is at most the target and close to it.
func TestPostprocTunePlan(t *testing.T) {
	for _, base := range []string{BaseObjPert, BaseDPSGD} {
		cfg := tuneTableConfig(t, 1500, base, 1)
		d, err := LoadFairSplits(cfg)
		if err != nil {
			t.Fatal(err)
		}
		law, err := accounting.TNBWithMean(0, 10)
		if err != nil {
			t.Fatal(err)
		}
		const delta = 1e-6
		space := DefaultPostprocTuneSpace()
		p, err := planPostprocTune(base, d, privacyOf(cfg), delta, space, law, 0.1)
		if err != nil {
			t.Fatal(err)
		}
		worst := make([]float64, len(p.Orders))
		for k, share := range space.BaseShare {
			tau := p.Noise[k]
			e1 := trainer.ShortDecimal(share * tau) // as --base-epsilon prints it
			e2 := tau - e1
			var sigma float64
			if base == BaseDPSGD {
				if sigma, err = accounting.CalibrateSigma(e1, delta, p.q[k], p.steps[k], accounting.WithOrders(p.Orders)); err != nil {
					t.Fatal(err)
				}
			}
			for j, a := range p.Orders {
				want := math.Min(e2, a*e2*e2/2)
				if base == BaseObjPert {
					want += math.Min(e1, a*e1*e1/2)
				} else {
					want += float64(p.steps[k]) * accounting.SubsampledGaussianRDP(p.q[k], sigma, a)
				}
				if math.Abs(p.Curves[k][j]-want) > 1e-9*want {
					t.Fatalf("%s kind %d order %v: curve %v, by hand %v", base, k, a, p.Curves[k][j], want)
				}
				worst[j] = math.Max(worst[j], want)
			}
		}
		for j, a := range p.Orders {
			worst[j] += a * p.ScoreRho
		}
		eps, _, err := accounting.TunedEpsilon(law, p.Orders, worst, delta)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(eps-p.Epsilon) > 1e-12 || !(eps <= 1 && eps > 0.99) {
			t.Errorf("%s: Theorem 2 on the hand-made curves gives ε %v, the plan %v (target 1)", base, eps, p.Epsilon)
		}
		wantRel := accounting.RelationAddRemove
		if base == BaseObjPert {
			wantRel = accounting.RelationReplaceOne
		}
		if p.relation != wantRel {
			t.Errorf("%s: relation %s, want %s", base, p.relation, wantRel)
		}
	}
}

// TestTunePostproc runs the search on a small generated table with each
// base: the receipt is the search's (RDP, ε at most the target, the
// relation stated, the score's Gaussian listed), extra.tune carries the
// chosen setting from the space at the planned budget, the report's
// configuration is that setting, the progress lines count the trials, and
// the report holds no training-split statistics.
func TestTunePostproc(t *testing.T) {
	for _, base := range []string{BaseObjPert, BaseDPSGD} {
		cfg := tuneTableConfig(t, 2000, base, 2)
		d, err := LoadFairSplits(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var log bytes.Buffer
		rep, err := TunePostproc(context.Background(), d, cfg, PostprocTuneOptions{MeanTrials: 3, Log: &log})
		if err != nil {
			t.Fatal(err)
		}
		rc := rep.Privacy
		if rc.Epsilon == nil || !(*rc.Epsilon <= 2) || rc.Accountant != accounting.AccountantRDP || rc.Delta <= 0 || rc.Scope != accounting.ScopeAll {
			t.Fatalf("%s: receipt %s", base, rc.String())
		}
		if !strings.Contains(rc.Note, "Theorem 2") || rc.Relation == "" || !strings.Contains(rc.Note, rc.Relation) {
			t.Errorf("%s: the receipt does not state the search or its relation: %s", base, rc.Note)
		}
		last := rc.Mechanisms[len(rc.Mechanisms)-1]
		if last.Kind != accounting.KindGaussian || !strings.Contains(last.Protects, "confusion counts") {
			t.Errorf("%s: the score's release is not listed: %+v", base, last)
		}
		tr := PostprocTuneOf(rep)
		if tr == nil {
			t.Fatalf("%s: no extra.tune", base)
		}
		c, sp := tr.Chosen, DefaultPostprocTuneSpace()
		if !slices.Contains(sp.BaseShare, c.BaseShare) || !slices.Contains(sp.Bins, c.Bins) || !slices.Contains(sp.GammaShare, c.GammaShare) ||
			!slices.Contains(sp.Slack, c.Slack) || math.Abs(c.BaseEpsilon+c.CellsEpsilon-c.Epsilon) > 1e-12 || !(c.Epsilon < 2) {
			t.Errorf("%s: chosen %+v, not a setting of the space at a planned budget", base, c)
		}
		if (base == BaseDPSGD) != (c.Sigma > 0) {
			t.Errorf("%s: chosen σ %v", base, c.Sigma)
		}
		pc := PostprocConfigOf(rep.Config)
		if pc.Bins != c.Bins || pc.BaseEpsilon != c.BaseEpsilon || pc.GammaShare != c.GammaShare || rep.Config.Privacy.Epsilon != c.Epsilon {
			t.Errorf("%s: the report's configuration %+v (ε %v) is not the chosen setting %+v", base, pc, rep.Config.Privacy.Epsilon, c)
		}
		if rep.Train != nil || FairExtra(rep).ExpectedTrain != nil || FairExtra(rep).ExpectedTest == nil {
			t.Errorf("%s: training-split statistics in a private report, or no test rates", base)
		}
		if got := strings.Count(log.String(), "done; ε spent"); got != tr.Trials {
			t.Errorf("%s: %d progress lines for %d trials:\n%s", base, got, tr.Trials, log.String())
		}
		if err := FairFailure(rep); err != nil {
			t.Errorf("%s: %v", base, err)
		}
	}
}

// TestTunePostprocRefusals: a search needs a private base whose share it
// chooses, a fairness notion it can score and splits loaded without a
// base.
func TestTunePostprocRefusals(t *testing.T) {
	base := tuneTableConfig(t, 600, BaseObjPert, 1)
	d, err := LoadFairSplits(base)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		edit func(*PostprocConfig)
		want string
	}{
		{func(p *PostprocConfig) { p.Base, p.Bins, p.GammaShare = "", 4, 0 }, "only a private base can be tuned"},
		{func(p *PostprocConfig) { p.BaseEpsilon = 0.5 }, "is chosen by the search"},
		{func(p *PostprocConfig) { p.Fairness = "fpr" }, "must be eo or dp to tune"},
	} {
		cfg := base
		editPostproc(&cfg, tc.edit)
		if _, err := TunePostproc(context.Background(), d, cfg, PostprocTuneOptions{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
	withBase, err := LoadFairData(base)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := TunePostproc(context.Background(), withBase, base, PostprocTuneOptions{}); err == nil || !strings.Contains(err.Error(), "LoadFairSplits") {
		t.Errorf("data with a base: %v", err)
	}
	if _, err := TunePostproc(context.Background(), d, base, PostprocTuneOptions{Space: &PostprocTuneSpace{BaseShare: []float64{1}, Bins: []int{4},
		GammaShare: []float64{0}, Slack: []string{"none"}}}); err == nil || !strings.Contains(err.Error(), "Tune.Space.BaseShare") {
		t.Errorf("a base share of 1: %v", err)
	}
	cfg := base
	cfg.Privacy.Epsilon = 0.001
	if _, err := TunePostproc(context.Background(), d, cfg, PostprocTuneOptions{}); err == nil || !strings.Contains(err.Error(), "too small to tune") {
		t.Errorf("ε = 0.001: %v", err)
	}
}

// TestPostprocTuneScoreIsNoisy: a trial's score is a Gaussian release of
// its confusion counts at the plan's σ times the relation's sensitivity
// (√2 for replace-one, 1 for add-remove): over many draws on the same
// predictions, the noisy accuracy's count (the sum of the four correct
// cells of two groups) has standard deviation 2 × σ × sensitivity (within
// 15 %), and its mean is the exact accuracy. A score of exact counts has
// no spread and fails.
func TestPostprocTuneScoreIsNoisy(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const n = 4000
	s, pred, exact := randomPredictions(r, n)
	for _, rel := range []string{accounting.RelationAddRemove, accounting.RelationReplaceOne} {
		p := &postprocTunePlan{relation: rel}
		p.ScoreSigma = 20
		var sum, sq float64
		const draws = 2000
		for range draws {
			acc, _, err := p.score(r, pred, s, 2, true)
			if err != nil {
				t.Fatal(err)
			}
			c := acc * n
			sum += c
			sq += c * c
		}
		mean := sum / draws
		std := math.Sqrt(sq/draws - mean*mean)
		want := 2 * 20 * p.scoreSensitivity()
		if math.Abs(std/want-1) > 0.15 || math.Abs(mean-float64(exact)) > 4*want/math.Sqrt(draws) {
			t.Errorf("%s: noisy correct count mean %.1f (exact %d), std %.1f, want %.1f", rel, mean, exact, std, want)
		}
	}
}

// TestPostprocTuneCheckTrial: a trial whose receipts cost more than its
// kind's planned curve is refused (an objpert base at 1 % more than ε₁,
// cells at 1 % more than ε₂, a DP-SGD base at 1 % less σ or one step more),
// and one that spent exactly the plan passes.
func TestPostprocTuneCheckTrial(t *testing.T) {
	law, err := accounting.TNBWithMean(0, 10)
	if err != nil {
		t.Fatal(err)
	}
	cells := func(eps float64) *PostProcessResult {
		bin, group, label := []int{0, 1, 0, 1, 1, 0, 1, 0}, []int{0, 0, 1, 1, 0, 0, 1, 1}, []int{0, 1, 1, 0, 0, 1, 1, 0}
		pp, err := PostProcess(rand.New(rand.NewPCG(1, 1)), bin, group, label, 2, 2, PostProcessConfig{Epsilon: eps, Fairness: DemographicParity})
		if err != nil {
			t.Fatal(err)
		}
		return pp
	}
	pure := func(eps float64) accounting.Receipt {
		var a accounting.Pure
		if err := a.Spend(eps, "the base"); err != nil {
			t.Fatal(err)
		}
		r, err := a.Receipt(0, accounting.RunInfo{Scope: accounting.ScopeAll})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, base := range []string{BaseObjPert, BaseDPSGD} {
		cfg := tuneTableConfig(t, 1500, base, 1)
		d, err := LoadFairSplits(cfg)
		if err != nil {
			t.Fatal(err)
		}
		p, err := planPostprocTune(base, d, privacyOf(cfg), 1e-6, DefaultPostprocTuneSpace(), law, 0.1)
		if err != nil {
			t.Fatal(err)
		}
		const k = 1
		e1, e2, sigma, err := p.split(k, p.Noise[k], p.Orders)
		if err != nil {
			t.Fatal(err)
		}
		steps := 0
		if base == BaseDPSGD {
			steps = p.steps[k]
		}
		baseReceipt := func(eps1, sigma float64, steps int) accounting.Receipt {
			if base == BaseObjPert {
				return pure(eps1)
			}
			r := pure(eps1) // private; its mechanisms are the steps
			r.Accountant, r.Mechanisms = accounting.AccountantRDP, []accounting.Mechanism{{Kind: accounting.KindSubsampledGaussian,
				SampleRate: p.q[k], NoiseMultiplier: sigma, Sensitivity: 1, Steps: steps}}
			return r
		}
		if err := p.checkTrial(k, baseReceipt(e1, sigma, steps), cells(e2)); err != nil {
			t.Errorf("%s: the planned trial is refused: %v", base, err)
		}
		type trial struct {
			name  string
			base  accounting.Receipt
			cells *PostProcessResult
		}
		over := []trial{{"cells at 1 % more ε₂", baseReceipt(e1, sigma, steps), cells(e2 * 1.01)}}
		if base == BaseObjPert {
			over = append(over, trial{"base at 1 % more ε₁", baseReceipt(e1*1.01, 0, 0), cells(e2)})
		} else {
			over = append(over, trial{"base at 1 % less σ", baseReceipt(e1, sigma*0.99, steps), cells(e2)},
				trial{"base with one step more", baseReceipt(e1, sigma, steps+1), cells(e2)})
		}
		for _, o := range over {
			if err := p.checkTrial(k, o.base, o.cells); err == nil {
				t.Errorf("%s: a trial with its %s passes the plan", base, o.name)
			}
		}
	}
}

// randomPredictions are n records of two groups with random labels and
// random predictions, and the number of correct ones.
func randomPredictions(r *rand.Rand, n int) (*FairSplit, []int, int) {
	s := &FairSplit{Label: make([]int, n), Group: make([]int, n)}
	pred := make([]int, n)
	exact := 0
	for i := range n {
		s.Label[i], s.Group[i], pred[i] = r.IntN(2), r.IntN(2), r.IntN(2)
		if pred[i] == s.Label[i] {
			exact++
		}
	}
	return s, pred, exact
}
