package trainer

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/loaders"
)

// syntheticTable is n records of dim standard-normal features whose label
// follows a logistic model with intercept bias (negative: the positive
// class is the minority), in two groups.
func syntheticTable(n, dim int, bias float64, r *rand.Rand) *loaders.Dataset {
	d := &loaders.Dataset{Name: "synthetic-table", Dim: dim, LabelNames: []string{"neg", "pos"}, GroupNames: []string{"g0", "g1"}}
	w := []float64{1.5, -1, 0.5, 0.8, -0.6, 0.3, 0.2, -0.2}
	for i := range n {
		s := bias
		for j := range dim {
			x := r.NormFloat64()
			d.X = append(d.X, x)
			s += w[j%len(w)] * x
		}
		y := 0
		if u := r.Float64(); s+math.Log(u/(1-u)) > 0 {
			y = 1
		}
		d.Labels, d.Groups = append(d.Labels, y), append(d.Groups, i%2)
		d.FeatureNames = nil
	}
	for j := range dim {
		d.FeatureNames = append(d.FeatureNames, "x"+string(rune('a'+j)))
	}
	return d
}

// tableJob is a seeded job on a synthetic table (train and test drawn
// independently).
func tableJob(t *testing.T, algo AlgoName, nTrain, dim int, bias float64, log *bytes.Buffer) *Job {
	t.Helper()
	cfg := Defaults()
	seed := uint64(11)
	cfg.Algo, cfg.Seed, cfg.Quiet, cfg.Model = algo, &seed, false, "logistic"
	r, src := dpops.NewRand(&seed)
	data := rand.New(rand.NewPCG(3, 4))
	return &Job{Cfg: cfg, Train: syntheticTable(nTrain, dim, bias, data), Test: syntheticTable(2000, dim, bias, data),
		Rand: r, Source: src, Log: log}
}

// majorityError is the error of always predicting d's larger class.
func majorityError(d *loaders.Dataset) float64 {
	c := d.LabelCounts()
	return 1 - float64(slices.Max(c))/float64(d.N())
}

// TestTuneDPSGDSyntheticTable runs the private search end to end on a
// 1,000-record table (70 % one class) at ε = 1: the receipt states the
// search's ε, no more than asked and calibrated close to it; the returned
// model beats the majority class; the report and the progress hold nothing
// of the trials that were not chosen; the outputs land in an --out folder
// that did not exist (the trials run without one, so Tune makes it).
func TestTuneDPSGDSyntheticTable(t *testing.T) {
	var log bytes.Buffer
	job := tableJob(t, "dpsgd", 1000, 5, -1.2, &log)
	job.Cfg.Out = filepath.Join(t.TempDir(), "new", "run")
	rep, err := Tune(context.Background(), job, TuneOptions{MeanTrials: 4,
		Space: &TuneSpace{LR: []float64{0.01, 0.05}, Epochs: []int{5, 15}, Batch: []int{40, 100}, Clip: []float64{1}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(job.Cfg.Out, ReportFile)); err != nil {
		t.Errorf("the tuned run's outputs: %v", err)
	}
	eps := *rep.Privacy.Epsilon
	if eps > 1 || eps < 0.99 {
		t.Errorf("the search's ε = %v, want at most 1 and calibrated within 1 %% of it", eps)
	}
	if rep.Privacy.Accountant != accounting.AccountantRDP || !strings.Contains(rep.Privacy.Note, "Theorem 2") {
		t.Errorf("receipt %+v does not say the tuning was accounted in RDP by Theorem 2", rep.Privacy)
	}
	// The chosen trial's note (its own accountant) is kept, marked as superseded.
	if strings.Contains(rep.Privacy.Note, "accountant") && !strings.Contains(rep.Privacy.Note, "superseded by the search's bound") {
		t.Errorf("the trial's own note is copied unmarked into the search's receipt: %q", rep.Privacy.Note)
	}
	if maj := majorityError(job.Test); !(rep.Test.Error < maj-0.02) {
		t.Errorf("tuned test error %.4f, not better than the majority class's %.4f", rep.Test.Error, maj)
	}
	res := TuneResultOf(rep)
	if res.TrialEpsilon >= eps || res.Trials < 1 || res.ValidRecords != 1000 || res.TrainRecords != 1000 || res.HeldOut {
		t.Errorf("tune result %+v: want a trial ε below the search's %v, K ≥ 1, every trial trained and scored on the 1000 records", res, eps)
	}
	if rep.Config.LR != res.Chosen.LR || rep.Config.Privacy.Sigma != res.Chosen.Sigma || rep.Config.Epochs != res.Chosen.Epochs {
		t.Errorf("config %+v does not repeat the chosen setting %+v", rep.Config, res.Chosen)
	}
	// extra.tune's keys: the search's settings and the chosen trial only.
	raw, _ := json.Marshal(rep.Extra["tune"])
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range doc {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"chosen", "chosen_noisy_validation_accuracy", "eta", "gamma", "held_out", "mean_trials", "score_noise_std", "space",
		"train_records", "trial_epsilon", "trials", "validation_records"}
	if !slices.Equal(keys, want) {
		t.Errorf("extra.tune keys %v, want %v", keys, want)
	}
	line := regexp.MustCompile(`^tune: (\d+ trials \(K drawn with E\[K\] = 4\), each trains on 1000 records and is scored on the same ` +
		`records; the whole search spends ε = [0-9.]+ at δ = [0-9.e-]+, charged before the first trial|` +
		`trial \d+ of \d+ done; ε spent: [0-9.]+ of 1 \(the search's bound holds whatever K is\))$`)
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	if len(lines) != res.Trials+1 {
		t.Errorf("%d progress lines for %d trials", len(lines), res.Trials)
	}
	for _, l := range lines {
		if !line.MatchString(l) {
			t.Errorf("progress line %q says more than trials done and ε spent", l)
		}
	}
}

// TestPlanTuneAccounting recomputes a plan's guarantee independently: the
// pointwise largest RDP curve of the planned trials plus the score's
// Gaussian (αρ), Theorem 2 evaluated term by term at every pair of orders
// (λ, λ̂), converted by Balle et al. 2020; it must equal the plan's ε, which
// must not exceed the target and must exceed one trial's ε.
func TestPlanTuneAccounting(t *testing.T) {
	q := map[tuneShape]float64{{40, 5}: 0.05, {100, 15}: 0.125}
	steps := map[tuneShape]int{{40, 5}: 100, {100, 15}: 120}
	for _, c := range []struct{ eta, mean, target, delta float64 }{{0, 10, 1, 1e-6}, {1, 5, 3, 1e-5}, {0.5, 20, 0.5, 1e-6}} {
		law, err := accounting.TNBWithMean(c.eta, c.mean)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := planTune(q, steps, law, c.delta, c.target, 0.1)
		if err != nil {
			t.Fatal(err)
		}
		orders := accounting.TuningOrders()
		worst := make([]float64, len(orders))
		for sh := range q {
			curve, err := accounting.ComposedRDP(q[sh], plan.sigma[sh], steps[sh], orders)
			if err != nil {
				t.Fatal(err)
			}
			for i := range worst {
				worst[i] = math.Max(worst[i], curve[i]) + 0
			}
		}
		for i, a := range orders {
			worst[i] += a * plan.scoreRho
		}
		if math.Abs(plan.scoreRho-1/(2*plan.scoreSigma*plan.scoreSigma)) > 1e-12*plan.scoreRho {
			t.Errorf("score ρ %v and σ %v disagree", plan.scoreRho, plan.scoreSigma)
		}
		// E[K] by the paper's formula, written out here.
		g := law.Gamma
		meanK := (1/g - 1) / math.Log(1/g)
		if c.eta != 0 {
			meanK = c.eta * (1 - g) / (g * (1 - math.Pow(g, c.eta)))
		}
		tuned := make([]float64, len(orders))
		for i, l := range orders {
			best := math.Inf(1)
			for j, h := range orders {
				best = math.Min(best, worst[i]+(1+c.eta)*(1-1/h)*worst[j]+(1+c.eta)*math.Log(1/g)/h+math.Log(meanK)/(l-1))
			}
			tuned[i] = best
		}
		eps, _, err := accounting.EpsilonFromRDP(orders, tuned, c.delta)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(eps-plan.eps) > 1e-9*eps {
			t.Errorf("%+v: plan ε %v, recomputed %v", c, plan.eps, eps)
		}
		if !(plan.eps <= c.target && plan.eps > 0.99*c.target) {
			t.Errorf("%+v: plan ε %v, want in (0.99, 1]·target", c, plan.eps)
		}
		one, _, _ := accounting.EpsilonFromRDP(orders, worst, c.delta)
		if !(one < plan.eps) || math.Abs(one-plan.trialEps) > 1e-12 {
			t.Errorf("%+v: one trial's ε %v (plan says %v) should be below the search's %v", c, one, plan.trialEps, plan.eps)
		}
	}
}

// TestTuneRefuses: what the search cannot account is refused with the
// field at fault.
func TestTuneRefuses(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*Job)
		opts   TuneOptions
		want   string
	}{
		{"algo", func(j *Job) { j.Cfg.Algo = "sgd" }, TuneOptions{}, "Algo sgd cannot be tuned privately yet (tunable: [dpsgd dpsgdf naive fermi"},
		{"fermi scope", func(j *Job) { j.Cfg.Algo, j.Cfg.Fair.Scope = algoFermi, "sensitive" }, TuneOptions{}, "Fair.Scope must be all to tune DP-FERMI"},
		{"fermi calibration", func(j *Job) { j.Cfg.Algo, j.Cfg.Fair.Calibration = algoFermi, "paper" }, TuneOptions{}, "Fair.Calibration paper cannot be tuned"},
		{"lambda", nil, TuneOptions{Space: &TuneSpace{LR: []float64{0.1}, Epochs: []int{1}, Batch: []int{10}, Clip: []float64{1}, Lambda: []float64{1}}},
			"Tune.Space.Lambda only DP-FERMI"},
		{"sigma", func(j *Job) { j.Cfg.Privacy.Sigma = 2 }, TuneOptions{}, "Privacy.Sigma is set by the tuning"},
		{"inf", func(j *Job) { j.Cfg.Privacy.Epsilon = math.Inf(1) }, TuneOptions{}, "Privacy.Epsilon must be finite"},
		{"shuffle", func(j *Job) { j.Cfg.Privacy.Sampling = "shuffle" }, TuneOptions{}, "Privacy.Sampling must be poisson"},
		{"mean", nil, TuneOptions{MeanTrials: 1}, "Tune.MeanTrials must be a finite number > 1"},
		{"frac", nil, TuneOptions{ValidFrac: 1.5}, "Tune.ValidFrac must be in [0, 1)"},
		{"space", nil, TuneOptions{Space: &TuneSpace{LR: []float64{0.1}, Epochs: []int{1}, Batch: []int{5000}, Clip: []float64{1}}},
			"Tune.Space.Batch 5000: want sizes between 1 and the"},
		{"tiny epsilon", func(j *Job) { j.Cfg.Privacy.Epsilon = 1e-4 }, TuneOptions{}, "too small to tune"},
		{"rates and movements", nil, TuneOptions{Space: &TuneSpace{LR: []float64{0.1}, Movement: []float64{4}, Epochs: []int{1}, Batch: []int{10},
			Clip: []float64{1}}}, "Tune.Space needs learning rates or movements (one of the two)"},
		{"movement", nil, TuneOptions{Space: &TuneSpace{Movement: []float64{-1}, Epochs: []int{1}, Batch: []int{10}, Clip: []float64{1}}},
			"Tune.Space.Movement -1: want finite numbers > 0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			job := tableJob(t, "dpsgd", 100, 3, 0, &bytes.Buffer{})
			if c.mutate != nil {
				c.mutate(job)
			}
			_, err := Tune(context.Background(), job, c.opts)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

// TestCheckTrialReceipt: a trial that spent more than the plan charged
// (more steps, another σ or rate, another mechanism) is refused.
func TestCheckTrialReceipt(t *testing.T) {
	rec, sg := trialReceipt, subsampledSteps
	cases := []receiptCase{
		{"as planned", rec(sg(0.1, 2, 100)), ""},
		{"fewer steps", rec(sg(0.1, 2, 60)), ""},
		{"more steps", rec(sg(0.1, 2, 60), sg(0.1, 2, 41)), "101 noisy steps"},
		{"other sigma", rec(sg(0.1, 1.9, 100)), "outside the tuning plan"},
		{"more noise", rec(sg(0.1, 2.1, 100)), ""},
		{"other rate", rec(sg(0.2, 2, 100)), "outside the tuning plan"},
		{"laplace", rec(accounting.Mechanism{Kind: accounting.KindLaplace, Epsilon: 0.1}), "outside the tuning plan"},
		{"not private", accounting.NotPrivate(), "not private"},
	}
	for _, c := range cases {
		c.check(t, checkTrialReceipt(c.r, 0.1, 2, 100))
	}
}

// TestTuneSplit: the trials' training and validation parts partition the
// training records, each record scoring with probability frac (the count
// within 5 standard deviations of frac·n); the test split is not among them.
func TestTuneSplit(t *testing.T) {
	const n, frac = 2000, 0.2
	d := syntheticTable(n, 2, 0, rand.New(rand.NewPCG(1, 1)))
	train, valid, err := TuneSplit(d, frac, rand.New(rand.NewPCG(5, 6)))
	if err != nil {
		t.Fatal(err)
	}
	if sd := math.Sqrt(n * frac * (1 - frac)); train.N()+valid.N() != n || math.Abs(float64(valid.N())-n*frac) > 5*sd {
		t.Fatalf("split %d/%d, want %d records with about %v scoring", train.N(), valid.N(), n, n*frac)
	}
	seen := map[[2]float64]int{}
	for _, p := range []*loaders.Dataset{train, valid} {
		for i := range p.N() {
			seen[[2]float64{p.X[2*i], p.X[2*i+1]}]++
		}
	}
	for i := range d.N() {
		if seen[[2]float64{d.X[2*i], d.X[2*i+1]}] != 1 {
			t.Fatalf("record %d appears %d times in the two parts", i, seen[[2]float64{d.X[2*i], d.X[2*i+1]}])
		}
	}
}

// TestDefaultTuneSpaceHoldsSetting: the default space contains the run's
// own setting, whatever batch and epochs it has (the data-aware rule's
// batch floor of 16 is not the grid's 8; a caller's --epochs 10 is on
// neither grid), and no batch above the records a trial trains on.
func TestDefaultTuneSpaceHoldsSetting(t *testing.T) {
	for _, c := range []struct{ batch, epochs, n int }{{16, 20, 100}, {250, 10, 1000}, {500, 40, 300}} {
		cfg := Defaults()
		cfg.Batch, cfg.Epochs, cfg.LR, cfg.Privacy.Clip = c.batch, c.epochs, 0.1, 0.5
		s := defaultTuneSpace(cfg, c.n)
		if !slices.Contains(s.Batch, min(c.batch, c.n)) || !slices.Contains(s.Epochs, c.epochs) ||
			!slices.Contains(s.LR, 0.1) || !slices.Contains(s.Clip, 0.5) {
			t.Errorf("%+v: space %+v lacks the run's own setting", c, s)
		}
		if err := s.check(c.n); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
}

// TestDefaultTuneSpaceMovement: from the data-aware rule's budget on
// (ε·n ≥ dataDefaultBudget) the default space draws movements, not
// learning rates: every trial moves a sixth or a third of the run's own
// setting (η × noisy steps = 0.03 × 800 = 24 for 15,000 records at ε = 0.5,
// batch 750, 40 epochs), at sampling rates of 5 and 10 %, whatever its
// shape; the grid of rates it replaces moved from 0.8 to 72. Below the
// budget the grid is unchanged.
func TestDefaultTuneSpaceMovement(t *testing.T) {
	cfg := Defaults()
	cfg.Algo = AlgoDPSGD
	cfg.Privacy.Epsilon, cfg.Batch, cfg.Epochs, cfg.LR, cfg.Privacy.Clip = 0.5, 750, 40, 0.03, 1
	s := defaultTuneSpace(cfg, 15000)
	if len(s.LR) != 0 || !slices.Equal(s.Batch, []int{750, 1500}) || !slices.Equal(s.Epochs, []int{20, 40}) ||
		!slices.Equal(s.Clip, []float64{0.3333, 1, 3}) {
		t.Fatalf("space %+v: want movements, batches 750 and 1500, 20 or 40 epochs, clips 0.3333 (a third, as a short decimal), 1, 3", s)
	}
	if len(s.Movement) != 2 || math.Abs(s.Movement[0]-4) > 1e-12 || math.Abs(s.Movement[1]-8) > 1e-12 {
		t.Errorf("movements %v, want 4 and 8 (a sixth and a third of 0.03 × 800)", s.Movement)
	}
	if err := s.check(15000); err != nil {
		t.Fatal(err)
	}
	steps := map[tuneShape]int{{750, 20}: 400, {750, 40}: 800, {1500, 20}: 200, {1500, 40}: 400}
	r := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		c, sh := s.draw(r, steps)
		if m := c.LR * float64(steps[sh]); !(math.Abs(m-4) < 1e-9 || math.Abs(m-8) < 1e-9) {
			t.Errorf("choice %+v moves %v, want 4 or 8", c, m)
		}
	}
	cfg.Privacy.Epsilon = 0.1 // ε·n = 1,500: the grid
	if s := defaultTuneSpace(cfg, 15000); len(s.Movement) != 0 || len(s.LR) != 3 || len(s.Batch) != 3 {
		t.Errorf("below the budget: space %+v, want the grid of 3 rates and 3 batches", s)
	}
	// DP-FERMI keeps the grid at every budget (its searches were measured on it).
	cfg.Privacy.Epsilon, cfg.Algo = 0.5, algoFermi
	if s := defaultTuneSpace(cfg, 15000); len(s.Movement) != 0 || len(s.LR) != 3 {
		t.Errorf("DP-FERMI above the budget: space %+v, want the grid of 3 rates", s)
	}
}

// TestShortDecimal: values are rounded to 4 significant digits (the
// float64 of the decimal literal, which %g prints back as that decimal),
// and short values are kept.
func TestShortDecimal(t *testing.T) {
	for _, c := range []struct{ in, want float64 }{{0.039999999999999994, 0.04}, {1.0 / 3, 0.3333}, {3, 3},
		{0.010562434992563395, 0.01056}, {0.70373183987, 0.7037}, {12345.678, 12350}, {2.5e-7, 2.5e-7}} {
		got := ShortDecimal(c.in)
		if got != c.want {
			t.Errorf("ShortDecimal(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}
