package federated

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/trainer"
)

// TestPlanSearchPerSilo recomputes a SteFFLe search's plan independently,
// silo by silo: each silo's trial curve is its rounds' subsampled Gaussian
// (rounds times the per-round RDP at its own rate and the shape's planned
// σ) plus its group counts' Gaussian of multiplier count·σ, α/(2(count·σ)²)
// at order α, written out here; the pointwise largest over the shapes plus
// the score's αρ, through Theorem 2 (accounting.TunedEpsilon), must give
// the silo's planned ε, at most the target; the worst silo's must be the
// plan's, within 1 % of the target. A silo with public group sizes (no
// counts) and a smaller rate spends less. Every shape's σ meets the
// per-trial budget for every silo, so it is at least each silo's own.
func TestPlanSearchPerSilo(t *testing.T) {
	silos := map[trialShape][]siloShape{
		{40, 20}: {{q: 0.05, rounds: 400, count: 20}, {q: 0.06, rounds: 400, count: 20}, {q: 0.04, rounds: 400}},
		{80, 40}: {{q: 0.1, rounds: 400, count: 20}, {q: 0.12, rounds: 400, count: 20}, {q: 0.08, rounds: 400}},
	}
	for _, c := range []struct{ eta, mean, target, delta float64 }{{0, 10, 1, 1e-6}, {1, 5, 3, 1e-5}} {
		law, err := accounting.TNBWithMean(c.eta, c.mean)
		if err != nil {
			t.Fatal(err)
		}
		p, err := planSearch(silos, law, c.delta, c.target, 0.1)
		if err != nil {
			t.Fatal(err)
		}
		orders := accounting.TuningOrders()
		worstEps := 0.0
		for s := range 3 {
			worst := make([]float64, len(orders))
			for sh, ss := range silos {
				sigma := p.sigma(sh)
				for i, a := range orders {
					v := float64(ss[s].rounds) * accounting.SubsampledGaussianRDP(ss[s].q, sigma, a)
					if ss[s].count > 0 {
						cs := ss[s].count * sigma
						v += a / (2 * cs * cs)
					}
					if math.Abs(v-p.curves[sh][s][i]) > 1e-9*v {
						t.Errorf("%+v silo %d %v: planned RDP %v at order %v, recomputed %v", c, s, sh, p.curves[sh][s][i], a, v)
					}
					worst[i] = math.Max(worst[i], v)
				}
			}
			for i, a := range orders {
				worst[i] += a * p.plan.ScoreRho
			}
			eps, _, err := accounting.TunedEpsilon(law, orders, worst, c.delta)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(eps-p.siloPlan[s].Epsilon) > 1e-9*eps || !(eps <= c.target) {
				t.Errorf("%+v silo %d: planned ε %v, recomputed %v: want them equal and at most the target", c, s, p.siloPlan[s].Epsilon, eps)
			}
			worstEps = max(worstEps, eps)
		}
		if math.Abs(worstEps-p.plan.Epsilon) > 1e-9*worstEps || !(worstEps > 0.99*c.target) {
			t.Errorf("%+v: worst silo ε %v, plan ε %v: want them equal and within 1 %% of the target", c, worstEps, p.plan.Epsilon)
		}
		if !(p.siloPlan[2].Epsilon < p.siloPlan[0].Epsilon && p.siloPlan[0].Epsilon < p.siloPlan[1].Epsilon) {
			t.Errorf("%+v: silo ε %v %v %v: want the public-size, low-rate silo 2 cheapest and silo 1 (highest rate) dearest", c,
				p.siloPlan[0].Epsilon, p.siloPlan[1].Epsilon, p.siloPlan[2].Epsilon)
		}
	}
}

// tuneTestConfig is a small private SteFFLe run that can be tuned: three
// silos, every record private.
func tuneTestConfig(seed uint64) trainer.Config {
	c := testConfig(seed)
	c.Fair.Scope, c.Federation.Silos, c.Epochs, c.Batch = accounting.ScopeAll, 3, 2, 30
	c.Privacy.Epsilon = 3
	return c
}

// TestTuneSteffle runs a whole search on a generated table: the receipt's
// ε is at most the target for every silo (each silo's line and
// extra.steffle's per-silo ε are the search's, the headline the worst of
// them), the report carries the chosen setting (in its config and
// extra.tune, λ included), the trials' settings come from the space, and
// the search is reproducible from the seed.
func TestTuneSteffle(t *testing.T) {
	cfg := tuneTestConfig(3)
	space := trainer.TuneSpace{LR: []float64{0.05, 0.2}, Epochs: []int{2}, Batch: []int{20, 40}, Clip: []float64{0.5, 1}, Lambda: []float64{0.5, 1}}
	opts := trainer.TuneOptions{MeanTrials: 3, Space: &space}
	train := synthetic(900, 4)
	rep, err := trainer.Tune(context.Background(), testJob(t, cfg, train), opts)
	if err != nil {
		t.Fatal(err)
	}
	rc := rep.Privacy
	if rc.Epsilon == nil || !(*rc.Epsilon <= cfg.Privacy.Epsilon) || rc.Accountant != accounting.AccountantRDP {
		t.Fatalf("receipt ε %v (%s): want at most %v by RDP", rc.Epsilon, rc.Accountant, cfg.Privacy.Epsilon)
	}
	res := trainer.TuneResultOf(rep)
	if res == nil || res.Trials < 1 || res.Chosen.Lambda == nil || res.Violation == nil {
		t.Fatalf("extra.tune %+v: want the trials, the chosen λ and the noisy violation", res)
	}
	c := res.Chosen
	if !slices.Contains(space.LR, c.LR) || !slices.Contains(space.Epochs, c.Epochs) || !slices.Contains(space.Batch, c.Batch) ||
		!slices.Contains(space.Clip, c.Clip) || !slices.Contains(space.Lambda, *c.Lambda) {
		t.Errorf("chosen %+v is not in the space %+v", c, space)
	}
	got := rep.Config
	if got.LR != c.LR || got.Epochs != c.Epochs || got.Batch != c.Batch || got.Privacy.Clip != c.Clip || got.Fair.Lambda != *c.Lambda ||
		got.Privacy.Sigma != c.Sigma {
		t.Errorf("report config %+v does not carry the chosen setting %+v", got, c)
	}
	fed := ResultOf(rep)
	if fed == nil || len(fed.PerSilo) != 3 {
		t.Fatalf("extra.steffle %+v: want three silos", fed)
	}
	worst := 0.0
	for _, s := range fed.PerSilo {
		if s.Epsilon == nil || !(*s.Epsilon <= cfg.Privacy.Epsilon) || *s.Epsilon < 0.9*cfg.Privacy.Epsilon {
			t.Errorf("silo %d: ε %v, want the search's (at most %v, near it)", s.Silo, s.Epsilon, cfg.Privacy.Epsilon)
			continue
		}
		worst = max(worst, *s.Epsilon)
		if !strings.Contains(rc.Note, fmt.Sprintf("silo %d: ε = %.4g,", s.Silo, *s.Epsilon)) {
			t.Errorf("silo %d's ε %v is not in the receipt's note: %s", s.Silo, *s.Epsilon, rc.Note)
		}
	}
	if worst != *rc.Epsilon {
		t.Errorf("headline ε %v, worst silo %v", *rc.Epsilon, worst)
	}
	for _, want := range []string{"Theorem 2", "each silo released on its own records", "per silo: silo 0"} {
		if !strings.Contains(rc.Note, want) {
			t.Errorf("receipt note lacks %q: %s", want, rc.Note)
		}
	}
	again, err := trainer.Tune(context.Background(), testJob(t, cfg, train), opts)
	if err != nil {
		t.Fatal(err)
	}
	if r := trainer.TuneResultOf(again); r.Trials != res.Trials || r.Chosen.LR != c.LR || r.Score != res.Score || again.Test.Error != rep.Test.Error {
		t.Errorf("same seed: %+v then %+v", res, r)
	}
}

// TestTuneSteffleRefuses: what a SteFFLe search cannot cover is refused
// with the field to change.
func TestTuneSteffleRefuses(t *testing.T) {
	train := synthetic(300, 5)
	for _, c := range []struct {
		name string
		edit func(*trainer.Config, *trainer.TuneOptions)
		want string
	}{
		{"sensitive scope", func(c *trainer.Config, _ *trainer.TuneOptions) { c.Fair.Scope = accounting.ScopeSensitive }, "Fair.Scope must be all to tune SteFFLe"},
		{"paper calibration", func(c *trainer.Config, _ *trainer.TuneOptions) { c.Fair.Calibration = "paper" }, "Fair.Calibration paper cannot be tuned"},
		{"hybrid mode", func(c *trainer.Config, _ *trainer.TuneOptions) { c.Federation.Mode = trainer.FederationSensitiveSilo }, "Federation.Mode must be horizontal"},
		{"hold-out", func(_ *trainer.Config, o *trainer.TuneOptions) { o.ValidFrac = 0.2 }, "Tune.ValidFrac must be 0 to tune SteFFLe"},
		{"given sigma", func(c *trainer.Config, _ *trainer.TuneOptions) { c.Privacy.Sigma = 2 }, "Privacy.Sigma is set by the tuning"},
		{"infinite epsilon", func(c *trainer.Config, _ *trainer.TuneOptions) { c.Privacy.Epsilon = math.Inf(1) }, "Privacy.Epsilon must be finite"},
		{"mixed lambdas", func(_ *trainer.Config, o *trainer.TuneOptions) {
			o.Space = &trainer.TuneSpace{LR: []float64{0.1}, Epochs: []int{1}, Batch: []int{50}, Clip: []float64{1}, Lambda: []float64{0, 1}}
		}, "Tune.Space.Lambda [0 1] mixes 0 with positive values"},
		{"negative lambda", func(_ *trainer.Config, o *trainer.TuneOptions) {
			o.Space = &trainer.TuneSpace{LR: []float64{0.1}, Epochs: []int{1}, Batch: []int{50}, Clip: []float64{1}, Lambda: []float64{-1}}
		}, "Tune.Space.Lambda -1: want finite numbers ≥ 0"},
		{"tiny epsilon", func(c *trainer.Config, o *trainer.TuneOptions) {
			c.Privacy.Epsilon = 1e-3
			o.Space = &trainer.TuneSpace{LR: []float64{0.1}, Epochs: []int{1}, Batch: []int{100}, Clip: []float64{1}}
		}, "Privacy.Epsilon 0.001 is too small to tune"},
	} {
		cfg := tuneTestConfig(1)
		opts := trainer.TuneOptions{MeanTrials: 3}
		c.edit(&cfg, &opts)
		_, err := trainer.Tune(context.Background(), testJob(t, cfg, train), opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}

// TestNoisyScoreTablePerSilo: every silo adds its own noise to its own
// counts, so the summed table's noise has variance silos·σ² per cell. A
// silo that sent its exact counts would leave (silos−1)·σ²: with 3 silos,
// 2,000 tables and 8 cells the estimate's standard error is about 1 % of
// σ², far from the 33 % gap. The noiseless part is the exact table.
func TestNoisyScoreTablePerSilo(t *testing.T) {
	train := synthetic(600, 7)
	set := Settings{Silos: 3, Mode: trainer.FederationHorizontal}
	mapping, err := splitRecords(testJob(t, tuneTestConfig(1), train), set)
	if err != nil {
		t.Fatal(err)
	}
	lanes := mapping.Lanes()
	pred := make([]int, train.N())
	for i := range pred {
		pred[i] = i % 2
	}
	exact, err := noisyScoreTable(pred, train, lanes, rand.New(rand.NewPCG(1, 1)), 1e-12)
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, v := range exact {
		total += math.Round(v)
	}
	if int(total) != train.N() {
		t.Fatalf("the silos' tables count %v records, want %d", total, train.N())
	}
	const sigma, draws = 3.0, 2000
	r := rand.New(rand.NewPCG(2, 2))
	sum := 0.0
	for range draws {
		cells, err := noisyScoreTable(pred, train, lanes, r, sigma)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range cells {
			d := v - math.Round(exact[i])
			sum += d * d
		}
	}
	v := sum / float64(draws*len(exact)) / (sigma * sigma)
	if math.Abs(v-3) > 0.15 {
		t.Errorf("summed score noise variance %.3f σ², want 3 σ² (one σ² per silo)", v)
	}
}

// TestShapeSilosIsTheTrial: the plan's per-silo release for a shape is
// exactly what a trial of that shape charges: every silo's ledger, composed
// by the RDP accountant, equals the planned curve at the trial's σ (not
// merely at most it), and the rates and rounds are SteFFLe's own rule
// written out: a lane batch of round(b·ñ/mean), q = batch/ñ, one trainer
// epoch the fewest rounds of any silo, the counts' multiplier σ·sqrt(its
// planned steps).
func TestShapeSilosIsTheTrial(t *testing.T) {
	cfg := tuneTestConfig(2)
	train := synthetic(700, 8)
	job := testJob(t, cfg, train)
	set := cfg.Federation
	set.Mode = trainer.FederationHorizontal
	mapping, err := splitRecords(job, set)
	if err != nil {
		t.Fatal(err)
	}
	sh, delta, sigma := trialShape{batch: 25, epochs: 2}, 1e-6, 4.0
	ss, err := shapeSilos(job, mapping, sh, delta)
	if err != nil {
		t.Fatal(err)
	}
	lanes := mapping.Lanes()
	mean := float64(train.N()) / float64(mapping.Silos)
	perEpoch := math.MaxInt
	for _, l := range lanes {
		perEpoch = min(perEpoch, int(math.Round(float64(len(l.Records))/math.Round(float64(sh.batch)*float64(len(l.Records))/mean))))
	}
	for i, l := range lanes {
		n := float64(len(l.Records))
		q := math.Round(float64(sh.batch)*n/mean) / n
		steps := float64(sh.epochs) * math.Round(1/q)
		if math.Abs(ss[i].q-q) > 1e-15 || ss[i].rounds != sh.epochs*perEpoch || math.Abs(ss[i].count-math.Sqrt(steps)) > 1e-12 {
			t.Errorf("silo %d: planned %+v, want q %v, %d rounds, counts at σ·%v", i, ss[i], q, sh.epochs*perEpoch, math.Sqrt(steps))
		}
	}
	c := trainer.TuneChoice{LR: 0.1, Epochs: sh.epochs, Batch: sh.batch, Clip: 1, Sigma: sigma}
	_, _, a, err := runTrial[float64](context.Background(), job, mapping, c, delta, 0)
	if err != nil {
		t.Fatal(err)
	}
	orders := accounting.TuningOrders()
	for i, s := range a.Silos {
		r, err := s.FullReceipt()
		if err != nil {
			t.Fatal(err)
		}
		acc, err := accounting.NewRDP(orders)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range r.Mechanisms {
			if err := acc.Step(m, m.Steps); err != nil {
				t.Fatal(err)
			}
		}
		want, err := ss[i].curve(sigma, orders)
		if err != nil {
			t.Fatal(err)
		}
		for j, v := range acc.Values() {
			if math.Abs(v-want[j]) > 1e-9*want[j] {
				t.Errorf("silo %d order %v: trial RDP %v, planned %v", i, orders[j], v, want[j])
				break
			}
		}
	}
}
