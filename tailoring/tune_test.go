package tailoring

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/linear"
	"github.com/fairdp/fairdp/trainer"
)

// TestPlanTune checks the search's calibration against a computation by
// hand: a fit at ρ_t is RDP αρ_t, its score adds α/(2σ²), and Theorem 2
// (TunedEpsilon) of that curve is the plan's ε, at most the target and
// within 1 % of it; ρ_t is the largest zCDP budget whose own curve converts
// to the plan's per-trial ε without the score (1 % more converts to more),
// and a search 2 % dearer per trial breaks the target.
func TestPlanTune(t *testing.T) {
	law, err := accounting.TNBWithMean(0, 10)
	if err != nil {
		t.Fatal(err)
	}
	const delta = 1e-8
	for _, target := range []float64{0.5, 1, 4, 13.66} {
		p, err := PlanTune(law, delta, target, 0.1)
		if err != nil {
			t.Fatal(err)
		}
		rho, sigma := p.Noise[0], p.ScoreSigma
		hand := func(scale float64) []float64 {
			c := make([]float64, len(p.Orders))
			for j, a := range p.Orders {
				c[j] = scale * (a*rho + a/(2*sigma*sigma))
			}
			return c
		}
		for j, a := range p.Orders {
			if math.Abs(p.Curves[0][j]-a*rho) > 1e-12*a*rho {
				t.Fatalf("target %v: the trial's curve at α = %v is %v, want αρ_t = %v", target, a, p.Curves[0][j], a*rho)
			}
		}
		eps, _, err := accounting.TunedEpsilon(law, p.Orders, hand(1), delta)
		if err != nil || math.Abs(eps-p.Epsilon) > 1e-9*eps {
			t.Errorf("target %v: Theorem 2 by hand gives ε = %v (%v), the plan %v", target, eps, err, p.Epsilon)
		}
		if !(eps <= target && eps > 0.99*target) {
			t.Errorf("target %v: the search spends %v", target, eps)
		}
		if over, _, _ := accounting.TunedEpsilon(law, p.Orders, hand(1.02), delta); !(over > target) {
			t.Errorf("target %v: a search 2 %% dearer per trial still fits (%v): the plan is not the largest", target, over)
		}
		own := func(r float64) float64 {
			c := make([]float64, len(p.Orders))
			for j, a := range p.Orders {
				c[j] = a * r
			}
			e, _, _ := accounting.EpsilonFromRDP(p.Orders, c, delta)
			return e
		}
		if trialEps, _, _ := accounting.EpsilonFromRDP(p.Orders, hand(1), delta); math.Abs(trialEps-p.TrialEpsilon) > 1e-9*trialEps {
			t.Errorf("target %v: one trial with its score spends %v, the plan says %v", target, trialEps, p.TrialEpsilon)
		}
		if !(own(rho) < p.TrialEpsilon && own(1.01*rho) > own(rho)) {
			t.Errorf("target %v: ρ_t = %v converts to %v (1 %% more: %v), the trial with its score to %v", target, rho, own(rho), own(1.01*rho), p.TrialEpsilon)
		}
		if math.Abs(p.ScoreRho-1/(2*sigma*sigma)) > 1e-12*p.ScoreRho {
			t.Errorf("target %v: score ρ %v, σ %v", target, p.ScoreRho, sigma)
		}
	}
	if _, err := PlanTune(law, delta, 1e-3, 0.1); !errors.Is(err, accounting.ErrTuningBudget) {
		t.Errorf("a budget below the search's own cost: %v, want ErrTuningBudget", err)
	}
}

// smallTune is a tuned run on small synthetic data (2,300 training
// records), at the ε that ρ = 2 converts to.
func smallTune(out string) trainer.Config {
	seed := uint64(11)
	cfg := Defaults(trainer.Defaults())
	cfg.Algo, cfg.Seed, cfg.Out = "tailoring", &seed, out
	t := ConfigOf(cfg)
	t.Groups, t.Slopes = []float64{2000, 100, 200}, []float64{0, -4, 4}
	t.Steps = 40
	return WithConfig(cfg, t)
}

// TestTune runs a search on the synthetic groups: the receipt is Theorem
// 2's in RDP, its ε at most the target (the ε of ρ = 2 at the run's δ),
// listing the chosen fit's releases and the score's; extra.tune carries the
// chosen setting, drawn from the space, at the plan's ρ_t; the report's
// config is that setting, one trial at ρ_t; report.json is written; and a
// seeded search repeats exactly.
func TestTune(t *testing.T) {
	for _, algo := range []trainer.AlgoName{Name, DPNoSEName} {
		t.Run(string(algo), func(t *testing.T) {
			dir := t.TempDir()
			cfg := smallTune(dir)
			cfg.Algo = algo
			var log strings.Builder
			rep, err := Tune(context.Background(), cfg, TuneOptions{MeanTrials: 4, Log: &log})
			if err != nil {
				t.Fatal(err)
			}
			delta := accounting.DefaultDelta(2300)
			target, _ := accounting.ZCDPToEpsilon(2, delta)
			rc := rep.Privacy
			if rc.Epsilon == nil || !(*rc.Epsilon <= target && *rc.Epsilon > 0.99*target) || rc.Delta != delta {
				t.Fatalf("receipt (ε %v, δ %v), want ε ≤ %v at δ %v", rc.Epsilon, rc.Delta, target, delta)
			}
			if rc.Accountant != accounting.AccountantRDP || rc.Conversion != accounting.ConversionBalle2020 || !strings.Contains(rc.Note, "Theorem 2") ||
				!strings.Contains(rc.Note, "added or removed") {
				t.Errorf("receipt %s: %s", rc.String(), rc.Note)
			}
			last := rc.Mechanisms[len(rc.Mechanisms)-1]
			if !strings.HasPrefix(last.Protects, "trial score") || last.Sensitivity != ConfigOf(rep.Config).YBound*ConfigOf(rep.Config).YBound {
				t.Errorf("the last mechanism is %+v, want the score (sensitivity the loss clip)", last)
			}
			res := TuneResultOf(rep)
			if res == nil {
				t.Fatal("no extra.tune")
			}
			c, space := res.Chosen, res.Space
			if !slices.Contains(space.Movement, c.Movement) || c.Steps != space.Steps || c.LR != trainer.ShortDecimal(c.Movement/float64(c.Steps)) ||
				(algo == Name) != slices.Contains(space.TauShare, c.TauShare) || (algo == DPNoSEName) != (len(space.TauShare) == 0) {
				t.Errorf("chose %+v outside the space %+v", c, space)
			}
			tc := ConfigOf(rep.Config)
			if !slices.Equal(tc.Rho, []float64{c.Rho}) || tc.Trials != 1 || tc.LR != c.LR || tc.Steps != c.Steps ||
				(algo == Name && tc.TauShare != c.TauShare) {
				t.Errorf("config %+v, want the chosen setting %+v", tc, c)
			}
			if fit := Extra(rep).FitPrivacy; fit == nil || *fit.Rho > c.Rho*(1+1e-12) {
				t.Errorf("the chosen fit spent %v, the plan's ρ_t is %v", fit, c.Rho)
			}
			if got := strings.Count(log.String(), "done; ε spent"); got != res.Trials {
				t.Errorf("%d progress lines for %d trials:\n%s", got, res.Trials, log.String())
			}
			if len(rep.Test.Groups) != 3 || rep.Test.MSPE == nil {
				t.Errorf("test split %+v, want every group's MSPE", rep.Test)
			}
			raw, err := os.ReadFile(filepath.Join(dir, "report.json"))
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Extra struct{ Tune TuneResult }
			}
			if err := json.Unmarshal(raw, &doc); err != nil || doc.Extra.Tune.Chosen != c {
				t.Errorf("report.json's extra.tune %+v (%v), want %+v", doc.Extra.Tune.Chosen, err, c)
			}
			again, err := Tune(context.Background(), smallTuneAs(algo), TuneOptions{MeanTrials: 4})
			if err != nil || TuneResultOf(again).Chosen != c || *again.Test.MSPE != *rep.Test.MSPE {
				t.Errorf("a seeded search does not repeat: %v", err)
			}
		})
	}
}

func smallTuneAs(algo trainer.AlgoName) trainer.Config {
	cfg := smallTune("")
	cfg.Algo = algo
	return cfg
}

// TestTuneScoreIsNoisy: the published score is the chosen fit's noisy
// objective, not its exact one. With a one-point space every trial is the
// same setting; each trial's fit is refitted from its own stream, its
// exact objective on the training records computed, and the chosen one
// (the fit whose test MSPE the report gives) must differ from its score by
// noise of the plan's size: neither 0 (the exact statistic) nor beyond 6
// standard deviations.
func TestTuneScoreIsNoisy(t *testing.T) {
	cfg := smallTune("")
	tc := ConfigOf(cfg)
	space := TuneSpace{TauShare: []float64{tc.TauShare}, Movement: []float64{tc.LR * float64(tc.Steps)}, Steps: tc.Steps}
	rep, err := Tune(context.Background(), cfg, TuneOptions{MeanTrials: 3, Space: &space})
	if err != nil {
		t.Fatal(err)
	}
	res := TuneResultOf(rep)
	prep, err := Prepare(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ex := Extra(prep)
	train, test := ex.Data[0], ex.Data[1]
	o := ex.Options
	o.Rho, o.LR, o.Steps = res.Chosen.Rho, res.Chosen.LR, res.Chosen.Steps
	if o, err = o.withDefaults(); err != nil {
		t.Fatal(err)
	}
	matched := false
	for i := range res.Trials {
		fit, err := ex.Variant.Fit(ex.Source, fmt.Sprintf("tune trial %d", i), train, o)
		if err != nil {
			t.Fatal(err)
		}
		out := fitOutcome(fit, nil, train, test, o.Loss, ex.Delta, ex.Source)
		if out.test[len(out.test)-1] != *rep.Test.MSPE {
			continue
		}
		matched = true
		stats, err := groupStatistics(fit, train, o)
		if err != nil {
			t.Fatal(err)
		}
		exact := 0.0
		sd := 0.0
		for k, v := range stats {
			exact += v / float64(train.Sizes[k])
			sd += math.Pow(res.ScoreNoise/float64(train.Sizes[k]), 2)
		}
		sd = math.Sqrt(sd)
		if diff := math.Abs(res.ChosenScore - exact); diff == 0 || diff > 6*sd || !(sd > 0) {
			t.Errorf("trial %d: score %v, exact objective %v: differs by %v, the noise has sd %v", i, res.ChosenScore, exact, diff, sd)
		}
	}
	if !matched {
		t.Fatal("no trial refitted to the reported fit")
	}
}

// TestNoisyScoreSpread: noisyScore's noise has the planned spread on each
// group's statistic (std, divided by n_k for group means), so the
// objective's sd is std·√Σ 1/n_k²; the constraint term counts for
// regression only.
func TestNoisyScoreSpread(t *testing.T) {
	d := &Data{Sizes: []int{1000, 50, 200}}
	stats := []float64{900, 120, 300}
	o := Options{}
	exact := 900.0/1000 + 120.0/50 + 300.0/200
	const std, n = 7.0, 20000
	r := rand.New(rand.NewPCG(1, 2))
	var sum, sq float64
	for range n {
		v := noisyScore(r, stats, d, o, std) - exact
		sum, sq = sum+v, sq+v*v
	}
	want := std * math.Sqrt(1/1e6+1/2500.0+1/40000.0)
	mean, sd := sum/n, math.Sqrt(sq/n-(sum/n)*(sum/n))
	if math.Abs(mean) > 4*want/math.Sqrt(n) || math.Abs(sd/want-1) > 0.03 {
		t.Errorf("noise mean %v, sd %v, want 0 and %v", mean, sd, want)
	}
	o.Constraint = BoundedGroupLoss{G: 2, Eta: 1}
	if got, want := noisyScore(r, stats, d, o, 0), exact+2*(2.4-1); math.Abs(got-want) > 1e-12 {
		t.Errorf("with the constraint: %v, want %v", got, want)
	}
	o.Objective = GroupSums
	if got := noisyScore(r, stats, d, o, 0); math.Abs(got-(1320+2*(900-1))) > 1e-9 {
		t.Errorf("group sums with the constraint: %v", got)
	}
}

// TestTuneRefuses: a ρ comparison, a Monte Carlo of several fits, a budget
// the search cannot pay for and a space without stage-1 shares for DPSE
// are refused, naming the setting.
func TestTuneRefuses(t *testing.T) {
	for _, tc := range []struct {
		field string
		edit  func(*trainer.Config, *TuneOptions)
	}{
		{"Tailoring.Rho", func(c *trainer.Config, _ *TuneOptions) {
			t := ConfigOf(*c)
			t.Rho = []float64{1, 2}
			*c = WithConfig(*c, t)
		}},
		{"Tailoring.Trials", func(c *trainer.Config, _ *TuneOptions) {
			t := ConfigOf(*c)
			t.Trials = 3
			*c = WithConfig(*c, t)
		}},
		{"Privacy.Epsilon", func(_ *trainer.Config, o *TuneOptions) { o.Epsilon = 1e-3 }},
		{"Privacy.Epsilon", func(_ *trainer.Config, o *TuneOptions) { o.Epsilon = math.Inf(1) }},
		{"Tune.MeanTrials", func(_ *trainer.Config, o *TuneOptions) { o.MeanTrials = 0.5 }},
		{"Tune.Space", func(_ *trainer.Config, o *TuneOptions) { o.Space = &TuneSpace{Movement: []float64{1}, Steps: 10} }},
	} {
		cfg := smallTune("")
		var o TuneOptions
		tc.edit(&cfg, &o)
		_, err := Tune(context.Background(), cfg, o)
		var fe trainer.FieldErrors
		if !errors.As(err, &fe) || !slices.ContainsFunc(fe, func(e trainer.FieldError) bool { return e.Field == tc.field }) {
			t.Errorf("%s: got %v", tc.field, err)
		}
	}
}

// TestTuneAllTrialsFailed: a search whose every fit failed (the OLS
// variant per group on small groups at a small ρ: the noisy XᵀX is never
// positive definite) returns an error naming K, not a report of a failed
// fit; the search's runner keeps a failed trial only to say so.
func TestTuneAllTrialsFailed(t *testing.T) {
	cfg := smallTune("")
	tc := ConfigOf(cfg)
	tc.Variant, tc.Model, tc.Rho, tc.Groups = "ols", "per-group", []float64{0.2}, []float64{200, 20, 30}
	rep, err := Tune(context.Background(), WithConfig(cfg, tc), TuneOptions{MeanTrials: 6})
	if err == nil || rep != nil || !strings.Contains(err.Error(), "trials of the search failed") {
		t.Fatalf("got %v, %v; want the all-failed error", rep, err)
	}
}

// TestGroupStatistics checks the score's statistics against a slow path
// over the raw records: each group's sum of min((y − ŷ)², C) for
// regression, its count of records whose label the sign of the log-odds
// misses for classification.
func TestGroupStatistics(t *testing.T) {
	raw := threeGroups(t, 5)
	beta := []float64{0.3, 1.5} // intercept, slope
	slow := func(label func(y float64) float64, loss func(y, pred float64) float64) []float64 {
		out := make([]float64, len(raw.GroupNames))
		for i := range raw.N() {
			x := raw.X[i*raw.Dim : (i+1)*raw.Dim]
			pred := beta[0] + beta[1]*x[0]
			out[raw.Groups[i]] += loss(label(raw.Targets[i]), pred)
		}
		return out
	}
	d := newData(t, raw, linear.Squared)
	res := &Result{Model: Pooled, Beta: beta, features: d.Features()}
	const clip = 4.0
	got, err := groupStatistics(res, d, Options{Loss: linear.Squared, LossClip: clip})
	if err != nil {
		t.Fatal(err)
	}
	want := slow(func(y float64) float64 { return y }, func(y, p float64) float64 { return math.Min((y-p)*(y-p), clip) })
	for k := range want {
		near(t, "clipped squared errors "+raw.GroupNames[k], got[k], want[k], 1e-12)
	}
	// The same records as a classification: label 1 where y > 0.
	cls := *raw
	cls.Targets, cls.Labels, cls.LabelNames = nil, make([]int, raw.N()), []string{"neg", "pos"}
	for i, y := range raw.Targets {
		if y > 0 {
			cls.Labels[i] = 1
		}
	}
	dc := newData(t, &cls, linear.Logistic)
	got, err = groupStatistics(res, dc, Options{Loss: linear.Logistic, LossClip: 10})
	if err != nil {
		t.Fatal(err)
	}
	want = slow(func(y float64) float64 {
		if y > 0 {
			return 1
		}
		return 0
	}, func(y, p float64) float64 {
		if (p >= 0) != (y == 1) {
			return 1
		}
		return 0
	})
	for k := range want {
		if got[k] != want[k] || want[k] == 0 {
			t.Errorf("misclassified in %s: %v, want %v (> 0)", raw.GroupNames[k], got[k], want[k])
		}
	}
}

// TestTuneClassification: a classification search scores each fit by its
// noisy count of misclassified records per group (sensitivity 1) and
// reports the chosen fit's per-group test error under the search's ε.
func TestTuneClassification(t *testing.T) {
	seed := uint64(3)
	cfg := Defaults(trainer.Defaults())
	cfg.Algo, cfg.Seed = Name, &seed
	cfg.Dataset, cfg.Schema = "../loaders/testdata/adult_sample.data", "../loaders/testdata/adult_sample.schema.json"
	tc := ConfigOf(cfg)
	tc.Task, tc.XBound, tc.Steps = "classification", 10, 50
	cfg = WithConfig(cfg, tc)
	rep, err := Tune(context.Background(), cfg, TuneOptions{Epsilon: 4, MeanTrials: 3})
	if err != nil {
		t.Fatal(err)
	}
	res := TuneResultOf(rep)
	if res.ScoreSensitivity != 1 || !strings.Contains(res.Score, "misclassified") || !(res.ScoreNoise > 0) {
		t.Errorf("score %q, sensitivity %v, noise %v", res.Score, res.ScoreSensitivity, res.ScoreNoise)
	}
	if e := rep.Privacy.Epsilon; e == nil || !(*e <= 4) || !(rep.Test.Error > 0) || len(Extra(rep).Test.Groups) != 2 {
		t.Errorf("ε %v, test %+v", e, rep.Test)
	}
}
