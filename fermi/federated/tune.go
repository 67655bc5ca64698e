package federated

// Private hyperparameter search for SteFFLe (`fairdp train --algo steffle
// --tune`), in the manner of Papernot and Steinke 2022 (Theorem 2), as
// trainer.Tune does for central DP-FERMI.
//
// SteFFLe's privacy is per silo: every message is DP with respect to the
// records of the silo that sent it (ISRL-DP). A search is private per silo
// too. From silo s's side, with the other silos' records fixed, a trial —
// one complete federation run with a setting drawn independently of the
// data — is a mechanism on s's records whose release is s's messages (its
// noisy group counts and one subsampled Gaussian per round, at its own
// rate q_s) and s's share of the score (its per-group confusion counts on
// its own training records, Gaussian-noised by s). The search over K
// trials, K drawn from a truncated negative binomial law, publishing only
// the best, is then Theorem 2's mechanism on s's records, so each silo's
// guarantee is Theorem 2 applied to its own trial curves; the headline is
// the worst silo's, as FederationReceipt states a single run's.
//
// The silos are fixed organisations: every trial uses one mapping of the
// records to silos (the run's own split), and fresh noise. SteFFLe gives
// every silo the run's σ, so a trial shape's σ is the largest any silo
// needs to meet the per-trial budget, and its curve for the plan the
// pointwise largest of the silos' curves at that σ.

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"time"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/fermi"
	"github.com/fairdp/fairdp/loaders"
	"github.com/fairdp/fairdp/models"
	"github.com/fairdp/fairdp/nn"
	"github.com/fairdp/fairdp/trainer"
)

func init() { trainer.RegisterTuner(Name, Tune) }

// Tune trains job's federation (in-process silos, horizontal, every record
// private) by private random search: K complete SteFFLe runs with settings
// drawn from DP-FERMI's default space around job's (trainer.FairTuneSpace,
// on one silo's share of the records), each silo's noise calibrated by
// accounting.PlanTuning so that the whole search spends at most job's
// Privacy.Epsilon for every silo, each trial scored by the sum of the
// silos' noisy confusion counts on their own training records (accuracy
// less the fairness violation when λ > 0). It returns the best trial's
// report with the search's receipt per silo.
func Tune(ctx context.Context, job *trainer.Job, opts trainer.TuneOptions) (*trainer.Report, error) {
	if job.Cfg.DType == trainer.DTypeFloat64 {
		return tune[float64](ctx, job, opts)
	}
	return tune[float32](ctx, job, opts)
}

// checkTunable refuses what a SteFFLe search cannot cover, beyond what
// every search refuses (trainer.CheckTunable). The sensitive scope charges
// rounds at rate 1 for the sensitive attribute alone, and the search's
// score and receipt protect whole records; modes other than horizontal
// ship records between silos and need that scope. The paper's calibration
// is a closed form for one run's ε, which the search replaces. A hold-out
// would be a split of each silo's records, which this search does not
// make: every silo scores a trial on the records it trained on.
func checkTunable(job *trainer.Job, opts trainer.TuneOptions) error {
	cfg := job.Cfg
	errs := trainer.FieldErrors{}
	if err := trainer.CheckTunable(job); err != nil {
		fe, ok := err.(trainer.FieldErrors)
		if !ok {
			return err
		}
		errs = append(errs, fe...)
	}
	if cfg.Fair.Scope != accounting.ScopeAll {
		errs = append(errs, trainer.FieldError{Field: "Fair.Scope", Msg: fmt.Sprintf("must be %s to tune SteFFLe (got %q): the search's score and receipt "+
			"protect whole records, which the sensitive scope's rounds (charged at rate 1 for the sensitive attribute alone) do not", accounting.ScopeAll, cfg.Fair.Scope)})
	}
	if cfg.Fair.Calibration == "paper" {
		errs = append(errs, trainer.FieldError{Field: "Fair.Calibration", Msg: "paper cannot be tuned: the search calibrates every silo's σ itself (leave it accountant)"})
	}
	if m := cfg.Federation.Mode; m != "" && m != trainer.FederationHorizontal {
		errs = append(errs, trainer.FieldError{Field: "Federation.Mode", Msg: fmt.Sprintf("must be %s to tune SteFFLe (got %s): the other modes split records "+
			"over silos, which only the sensitive scope allows", trainer.FederationHorizontal, m)})
	}
	if opts.ValidFrac != 0 {
		errs = append(errs, trainer.FieldError{Field: "Tune.ValidFrac", Msg: "must be 0 to tune SteFFLe: every silo scores a trial on the records it trained on"})
	}
	if opts.Space != nil && len(opts.Space.Movement) > 0 {
		errs = append(errs, trainer.FieldError{Field: "Tune.Space.Movement", Msg: "SteFFLe's search draws learning rates (Tune.Space.LR), not movements"})
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

// trialShape is what a trial's accounting depends on: the batch (of a silo
// of average size, as Config.Batch is for SteFFLe) and the epochs.
type trialShape struct{ batch, epochs int }

// siloShape is one silo's release in a trial of some shape, per unit σ:
// rounds subsampled Gaussians at rate q and multiplier σ, and (count > 0)
// the one-off group counts at multiplier count·σ.
type siloShape struct {
	q      float64
	rounds int
	count  float64
}

// curve is the silo's RDP at orders for a trial at noise multiplier sigma.
func (s siloShape) curve(sigma float64, orders []float64) ([]float64, error) {
	c, err := accounting.ComposedRDP(s.q, sigma, s.rounds, orders)
	if err != nil || s.count == 0 {
		return c, err
	}
	counts, err := accounting.ComposedRDP(1, s.count*sigma, 1, orders)
	if err != nil {
		return nil, err
	}
	for i, v := range counts {
		c[i] += v
	}
	return c, nil
}

// shapeSilos reads each silo's release per unit σ for a trial of shape sh
// from the federation that trial builds: SteFFLe built over mapping with
// the shape's batch and epochs and σ = 1. The rates, rounds and count
// noise are then exactly what the trial's silos will charge (each trial's
// receipts are checked against the plan anyway).
func shapeSilos(job *trainer.Job, mapping Mapping, sh trialShape, delta float64) ([]siloShape, error) {
	cfg := trialConfig(job.Cfg, trainer.TuneChoice{Batch: sh.batch, Epochs: sh.epochs, Clip: job.Cfg.Privacy.Clip, LR: job.Cfg.LR, Sigma: 1}, delta)
	_, src := dpops.NewRand(new(uint64)) // nothing is released: the noise of this build is never used
	a, err := newSteffle[float64](&trainer.Job{Cfg: cfg, Train: job.Train, Test: job.Test, Source: src}, cfg.Federation, &mapping)
	if err != nil {
		return nil, err
	}
	rounds := sh.epochs * a.roundsPerEpoch()
	out := make([]siloShape, len(a.Silos))
	for i, s := range a.Silos {
		step := s.stepMechanism()
		out[i] = siloShape{q: step.SampleRate, rounds: rounds}
		for _, m := range s.ledger.History() {
			if fermi.IsCountRelease(m) {
				out[i].count = m.NoiseMultiplier
			}
		}
	}
	return out, nil
}

// searchPlan is a calibrated SteFFLe search: the plan over the shapes
// (each shape's σ and worst-silo curve), every silo's curve per shape, and
// each silo's own guarantee for the whole search.
type searchPlan struct {
	plan   accounting.TuningPlan
	shapes []trialShape
	silos  map[trialShape][]siloShape
	// curves[sh][s] is silo s's RDP curve for a trial of shape sh at the
	// planned σ, score excluded.
	curves map[trialShape][][]float64
	// siloPlan[s] is silo s's guarantee: Theorem 2 on its own curves (the
	// pointwise largest over shapes) plus the score.
	siloPlan []trainer.TunedPlan
}

// sigma is shape sh's planned noise multiplier.
func (p searchPlan) sigma(sh trialShape) float64 { return p.plan.Noise[slices.Index(p.shapes, sh)] }

// planSearch calibrates a search over the shapes whose silos' releases per
// unit σ are silos, for law at δ, to target: one trial kind per shape,
// whose σ is the largest any silo needs to meet the per-trial budget alone
// (rounds only, as trainer's DP-FERMI plan does; the counts are then added
// at that σ and the plan bisects on the exact curves), and whose curve is
// the pointwise largest of its silos' curves. The silos of a shape must
// take the same rounds (one federation's). Every silo's own search
// bound is then at most the plan's ε.
func planSearch(silos map[trialShape][]siloShape, law accounting.TruncatedNegativeBinomial, delta, target, scoreShare float64) (searchPlan, error) {
	shapes := slices.SortedFunc(func(yield func(trialShape) bool) {
		for sh := range silos {
			if !yield(sh) {
				return
			}
		}
	}, func(a, b trialShape) int { return cmp.Or(a.batch-b.batch, a.epochs-b.epochs) })
	p := searchPlan{shapes: shapes, silos: silos, curves: map[trialShape][][]float64{}}
	pl, err := accounting.PlanTuning(len(shapes), func(i int, tau, delta float64, orders []float64) (float64, []float64, error) {
		// The silos of a shape take the same rounds; the subsampled
		// Gaussian's RDP grows with the rate, so the silo with the largest
		// rate needs the largest σ.
		ss := silos[shapes[i]]
		top := slices.MaxFunc(ss, func(a, b siloShape) int { return cmp.Compare(a.q, b.q) })
		sigma, err := accounting.CalibrateSigma(tau, delta, top.q, top.rounds, accounting.WithOrders(orders))
		if err != nil {
			return 0, nil, err
		}
		worst := make([]float64, len(orders))
		for _, s := range ss {
			c, err := s.curve(sigma, orders)
			if err != nil {
				return 0, nil, err
			}
			for j, v := range c {
				worst[j] = max(worst[j], v)
			}
		}
		return sigma, worst, nil
	}, law, delta, target, scoreShare)
	if err != nil {
		return searchPlan{}, err
	}
	p.plan = pl
	n := len(silos[shapes[0]])
	worst := make([][]float64, n)
	for i := range worst {
		worst[i] = make([]float64, len(pl.Orders))
	}
	for i, sh := range shapes {
		for s, ss := range silos[sh] {
			c, err := ss.curve(pl.Noise[i], pl.Orders)
			if err != nil {
				return searchPlan{}, err
			}
			p.curves[sh] = append(p.curves[sh], c)
			for j, v := range c {
				worst[s][j] = max(worst[s][j], v)
			}
		}
	}
	for s := range worst {
		for j, a := range pl.Orders {
			worst[s][j] += a * pl.ScoreRho
		}
		tp := trainer.TunedPlan{Law: law, ScoreSigma: pl.ScoreSigma, ScoreRho: pl.ScoreRho}
		if tp.TrialEpsilon, _, err = accounting.EpsilonFromRDP(pl.Orders, worst[s], delta); err != nil {
			return searchPlan{}, err
		}
		if tp.Epsilon, tp.Order, err = accounting.TunedEpsilon(law, pl.Orders, worst[s], delta); err != nil {
			return searchPlan{}, err
		}
		p.siloPlan = append(p.siloPlan, tp)
	}
	return p, nil
}

// searchDelta is the δ of every silo's guarantee: the run's Privacy.Delta
// when given; else 1/n² of all n records when the federation says so
// (TotalDelta), else the smallest of the silos' own defaults 1/ñ², so that
// no silo's δ exceeds what an untuned run would give it and one plan
// serves all silos. smallest is the smallest silo's record count, which
// the δ is checked against (trainer.NewSearch).
func searchDelta(cfg trainer.Config, n int, mapping Mapping) (delta float64, smallest int) {
	sizes := make([]int, mapping.Silos)
	for _, l := range mapping.Lanes() {
		sizes[l.Sensitive] += len(l.Records)
	}
	smallest, largest := slices.Min(sizes), slices.Max(sizes)
	delta = cfg.Privacy.Delta
	switch {
	case delta > 0:
	case cfg.Federation.TotalDelta:
		delta = accounting.DefaultDelta(n)
	default:
		delta = accounting.DefaultDelta(largest)
	}
	return delta, smallest
}

// trialConfig is cfg for one trial with setting c: σ fixed (by the plan),
// ε +Inf (the search's guarantee is the plan's, and each trial's receipt
// is held to it), δ the search's, no outputs.
func trialConfig(cfg trainer.Config, c trainer.TuneChoice, delta float64) trainer.Config {
	cfg.Epochs, cfg.Batch, cfg.LR, cfg.Privacy.Clip, cfg.Privacy.Sigma = c.Epochs, c.Batch, c.LR, c.Clip, c.Sigma
	if c.Lambda != nil {
		cfg.Fair.Lambda = *c.Lambda
	}
	cfg.Privacy.Epsilon, cfg.Privacy.Delta, cfg.Privacy.AllowLargeDelta = math.Inf(1), delta, true
	cfg.Out, cfg.Quiet = "", true
	return cfg
}

func tune[T nn.Float](ctx context.Context, job *trainer.Job, opts trainer.TuneOptions) (*trainer.Report, error) {
	if err := checkTunable(job, opts); err != nil {
		return nil, err
	}
	opts, err := opts.WithDefaults()
	if err != nil {
		return nil, err
	}
	cfg, train := job.Cfg, job.Train
	log := job.Log
	if log == nil || cfg.Quiet {
		log = io.Discard
	}
	set := cfg.Federation
	if set.Mode == "" {
		set.Mode = trainer.FederationHorizontal
	}
	if err := set.Validate(); err != nil {
		return nil, fmt.Errorf("steffle: %w", err)
	}
	mapping, err := splitRecords(job, set)
	if err != nil {
		return nil, fmt.Errorf("steffle: %w", err)
	}
	lanes := mapping.Lanes()
	if len(lanes) != mapping.Silos {
		return nil, fmt.Errorf("steffle: %d lanes for %d silos: a search needs one lane per silo (every silo holds records)", len(lanes), mapping.Silos)
	}
	delta, smallest := searchDelta(cfg, train.N(), mapping)
	srch, err := trainer.NewSearch[trialKept[T]](trainer.SearchOptions{Source: job.Source, Delta: delta, Records: smallest,
		AllowLargeDelta: cfg.Privacy.AllowLargeDelta, MeanTrials: opts.MeanTrials, Eta: opts.Eta, Log: log})
	if err != nil {
		return nil, err
	}
	// A trial's settings are drawn around one silo's share of the records,
	// the n SteFFLe's batch and data-aware rule are stated for.
	per := max(1, train.N()/mapping.Silos)
	space := trainer.FairTuneSpace(cfg, per)
	if opts.Space != nil {
		space = *opts.Space
		if len(space.Lambda) == 0 {
			space.Lambda = []float64{cfg.Fair.Lambda}
		}
	}
	if err := space.Check(per); err != nil {
		return nil, err
	}
	if err := checkLambdas(space.Lambda); err != nil {
		return nil, err
	}
	start := time.Now()
	silos := map[trialShape][]siloShape{}
	for _, b := range space.Batch {
		for _, e := range space.Epochs {
			sh := trialShape{b, e}
			if silos[sh], err = shapeSilos(job, mapping, sh, delta); err != nil {
				return nil, err
			}
		}
	}
	plan, err := planSearch(silos, srch.Law, delta, cfg.Privacy.Epsilon, opts.ScoreShare)
	if err != nil {
		return nil, trainer.TuningBudgetError(err, cfg.Privacy.Epsilon, srch.Law.Mean())
	}
	fmt.Fprintf(log, "tune: %d trials (K drawn with E[K] = %g), each a SteFFLe run over the same %d silos, scored by every silo's noisy counts "+
		"on its own records; the whole search spends ε = %.4g per silo at δ = %.3g, charged before the first trial\n",
		srch.K, opts.MeanTrials, mapping.Silos, plan.plan.Epsilon, delta)
	fair := slices.ContainsFunc(space.Lambda, func(l float64) bool { return l > 0 })
	cells := 0 // of a silo's confusion table
	err = srch.Run(ctx, trainer.SearchProgress{Spent: plan.plan.Epsilon, Target: cfg.Privacy.Epsilon, Per: "silo"}, func(i int) (trialKept[T], float64, error) {
		c := space.DrawGrid(srch.Choose)
		sh := trialShape{c.Batch, c.Epochs}
		c.Sigma = plan.sigma(sh)
		rep, m, a, err := runTrial[T](ctx, job, mapping, c, delta, i)
		if err != nil {
			return trialKept[T]{}, 0, err
		}
		receipts := make([]accounting.Receipt, len(a.Silos))
		for s, silo := range a.Silos {
			if receipts[s], err = silo.FullReceipt(); err != nil {
				return trialKept[T]{}, 0, err
			}
			if err := trainer.CheckTrialRDP(receipts[s], plan.plan.Orders, plan.curves[sh][s]); err != nil {
				return trialKept[T]{}, 0, fmt.Errorf("silo %d: %w", s, err)
			}
		}
		table, err := noisyScoreTable(trainer.Predict(m, train), train, lanes, srch.ScoreNoise, plan.plan.ScoreSigma)
		if err != nil {
			return trialKept[T]{}, 0, err
		}
		cells = len(table)
		acc, v := trainer.ConfusionScore(table, train, train.N(), cfg.Fair.Fairness == "eo")
		score := acc
		var viol *float64
		if fair {
			score, viol = acc-v, &v
		}
		return trialKept[T]{rep: rep, model: m, alg: a, choice: c, acc: acc, viol: viol, receipts: receipts}, score, nil
	})
	if err != nil {
		return nil, err
	}
	best, _ := srch.Best()
	trialEps := 0.0
	for _, tp := range plan.siloPlan {
		trialEps = max(trialEps, tp.TrialEpsilon)
	}
	ts := srch.Summary(trialEps, train.N(), plan.plan.ScoreSigma)
	ts.ValidRecords = train.N()
	res := trainer.TuneResult{TuneSearch: ts, Chosen: best.choice, Score: best.acc, Space: space}
	if best.viol != nil {
		res.Fairness, res.Violation = cfg.Fair.Fairness, best.viol
	}
	rep, err := tunedFederationReport(best.rep, best.alg, best.receipts, job, plan, res, delta)
	if err != nil {
		return nil, err
	}
	rep.Seconds = time.Since(start).Seconds() // the whole search's
	std := plan.plan.ScoreSigma * math.Sqrt(float64(mapping.Silos*cells))
	if w := trainer.ScoreNoiseWarning(std, train.N()); w != "" {
		rep.Warnings = append(rep.Warnings, w)
	}
	if cfg.Out != "" {
		mm, ok := best.model.(*models.Model[T])
		if !ok {
			return nil, fmt.Errorf("steffle: a %T cannot be written to a checkpoint", best.model)
		}
		// Train makes its output folder when it opens metrics.jsonl; the
		// trials run without one, so the search makes it here.
		if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
			return nil, trainer.FieldErrors{{Field: "Out", Msg: fmt.Sprintf("%s: %v", cfg.Out, err)}}
		}
		if err := trainer.WriteOutputs(cfg.Out, rep, mm, job); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// trialKept is what a search keeps of a trial: its report, the server's
// model, the federation and its silos' receipts, the setting and its
// noisy accuracy and violation (nil unless fairness-scored).
type trialKept[T nn.Float] struct {
	rep      *trainer.Report
	model    trainer.Model[T]
	alg      *Steffle[T]
	choice   trainer.TuneChoice
	acc      float64
	viol     *float64
	receipts []accounting.Receipt
}

// checkLambdas refuses λ values DP-FERMI refuses, and a space that mixes
// λ = 0 with positive λ: the search scores fairness when λ > 0, and the
// receipt names the score by the chosen λ, so all trials of one search
// must be scored alike.
func checkLambdas(lambdas []float64) error {
	var errs trainer.FieldErrors
	for _, v := range lambdas {
		if !(v >= 0) || math.IsInf(v, 1) {
			errs = append(errs, trainer.FieldError{Field: "Tune.Space.Lambda", Msg: fmt.Sprintf("%v: want finite numbers ≥ 0", v)})
		}
	}
	if slices.Contains(lambdas, 0) && slices.ContainsFunc(lambdas, func(l float64) bool { return l > 0 }) {
		errs = append(errs, trainer.FieldError{Field: "Tune.Space.Lambda", Msg: fmt.Sprintf("%v mixes 0 with positive values: a SteFFLe search scores "+
			"fairness for λ > 0 only, so give either 0 alone or positive values", lambdas)})
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

// runTrial is one complete SteFFLe run of the search over mapping with
// setting c (σ fixed by the plan) and its own randomness: its report, the
// server's model and the federation (whose silos' receipts the caller
// holds to the plan).
func runTrial[T nn.Float](ctx context.Context, job *trainer.Job, mapping Mapping, c trainer.TuneChoice, delta float64, i int) (*trainer.Report, trainer.Model[T], *Steffle[T], error) {
	cfg := trialConfig(job.Cfg, c, delta)
	var (
		r   *rand.Rand
		src dpops.Source
	)
	cfg.Seed, r, src = trainer.TrialRandomness(job, i)
	tj := &trainer.Job{Cfg: cfg, Train: job.Train, Test: job.Test, Preprocess: job.Preprocess, Rand: r, Source: src, Log: io.Discard}
	a, err := newSteffle[T](tj, cfg.Federation, &mapping)
	if err != nil {
		return nil, nil, nil, err
	}
	rep, m, err := trainer.Run[T](ctx, tj, a)
	if err != nil {
		return nil, nil, nil, err
	}
	return rep, m, a, nil
}

// noisyScoreTable is a trial's score release: every silo's per-group
// confusion table on the records of its lane (its own training records),
// with Gaussian noise of multiplier sigma added by that silo (L2
// sensitivity 1 for one of its records added or removed), summed over the
// silos (post-processing). pred is the server's model's prediction for
// every training record.
func noisyScoreTable(pred []int, train *loaders.Dataset, lanes []Lane, r *rand.Rand, sigma float64) ([]float64, error) {
	var sum []float64
	for _, l := range lanes {
		cells, err := trainer.NoisyGroupConfusion(pred, train, l.Records, r, sigma)
		if err != nil {
			return nil, err
		}
		if sum == nil {
			sum = make([]float64, len(cells))
		}
		for i, v := range cells {
			sum[i] += v
		}
	}
	return sum, nil
}

// tunedFederationReport is the chosen trial's report with the search's
// receipt: per silo, trainer.TunedReport of the silo's own trial receipt
// (its ledger) and its own search bound; the headline is the worst silo's,
// with every silo's line, as FederationReceipt states a run's; and
// extra.steffle's per-silo lines carry the search's ε.
func tunedFederationReport[T nn.Float](best *trainer.Report, a *Steffle[T], receipts []accounting.Receipt, job *trainer.Job, plan searchPlan,
	res trainer.TuneResult, delta float64) (*trainer.Report, error) {
	lines := a.SiloPrivacy()
	var head *trainer.Report
	worst := -1
	for s, r := range receipts {
		silo := *best
		r.NotCovered = append(r.NotCovered, best.Privacy.NotCovered...) // the federation's (silo record counts, …)
		silo.Privacy = r
		rep, err := trainer.TunedReport(&silo, job, plan.siloPlan[s], res, delta)
		if err != nil {
			return nil, err
		}
		q := a.Lanes[s].Sensitive
		eps := plan.siloPlan[s].Epsilon
		lines[q].Epsilon, lines[q].Delta = &eps, delta
		if worst < 0 || eps > plan.siloPlan[worst].Epsilon {
			head, worst = rep, s
		}
	}
	head.Privacy = FederationReceipt(head.Privacy, lines, a.Settings.Mode)
	if r := ResultOf(best); r != nil {
		out := *r
		out.PerSilo = lines
		out.Lanes = slices.Clone(r.Lanes)
		for i := range out.Lanes {
			out.Lanes[i].Epsilon = *lines[out.Lanes[i].SensitiveSilo].Epsilon
		}
		head.SetExtra(Name, &out)
	}
	return head, nil
}
