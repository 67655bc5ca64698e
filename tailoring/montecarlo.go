package tailoring

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sort"
	"sync"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/linear"
	"github.com/fairdp/fairdp/metrics"
	"github.com/fairdp/fairdp/trainer"
)

// Variant says which stage 2 runs.
type Variant int

const (
	// GD is stage 2 as gradient descent on the Lagrangian (Train).
	GD Variant = iota
	// OLS is the unconstrained sufficient-statistics variant (TrainOLS).
	OLS
)

// String is the name used by the CLI and in reports.
func (v Variant) String() string {
	switch v {
	case GD:
		return "gd"
	case OLS:
		return "ols"
	}
	return fmt.Sprintf("Variant(%d)", int(v))
}

// Fit runs one private fit with the variant.
func (v Variant) Fit(src dpops.Source, label string, d *Data, o Options) (*Result, error) {
	r := src.Derive(label)
	switch v {
	case GD:
		return Train(r, d, o)
	case OLS:
		return TrainOLS(r, d, o)
	}
	return nil, fmt.Errorf("tailoring: unknown variant %d", int(v))
}

// GroupStats summarises one group's metric over the trials.
type GroupStats struct {
	Group string
	N     int // records of the group in the evaluated split
	// Mean, Std, Min and Max of the metric over successful trials.
	Mean, Std, Min, Max float64
	// Share is the mean stage-2 budget share s_k² of the group.
	Share float64
}

// Overall reports whether g is the row of all groups together.
func (g GroupStats) Overall() bool { return g.Group == metrics.OverallName }

// Summary is a Monte Carlo evaluation of a method: the same data fitted
// Trials times with independent noise. Every number in it (means, spreads,
// extremes, budget shares, the failure and fallback counts) is computed
// from all the fits, so publishing any of it releases all of them: it
// costs Trials times a fit's budget (ReleaseReceipt), not one fit's.
type Summary struct {
	Method  Method
	Variant Variant
	Rho     float64
	// FitRho is Options.FitBudget, what ReleaseReceipt charges each fit.
	FitRho float64
	// Metric is "mspe" (squared loss) or "error" (logistic: the
	// misclassification rate of the sign of the log-odds).
	Metric string
	Trials int
	// Failed counts trials whose noisy XᵀX could not be factorised (OLS
	// variant); they are left out of the statistics.
	Failed int
	// Fallbacks counts trials whose stage 1 fell back to s_k = 1/√K.
	Fallbacks int
	// Train and Test hold every group's metric, then the overall one
	// (Group = metrics.OverallName).
	Train, Test []GroupStats
	// Receipt is the privacy statement of one fit (the first that
	// succeeded); ReleaseReceipt is that of the whole Summary.
	Receipt accounting.Receipt
}

// RunTrials fits the data trials times in parallel (workers goroutines,
// 0 meaning GOMAXPROCS), each trial with its own random stream
// src.Derive(trialLabel(o, i)), so a seeded run gives the same Summary
// whatever the number of workers. Each fit is scored on train and test.
func RunTrials(src dpops.Source, train, test *Data, o Options, v Variant, trials, workers int, delta float64) (*Summary, error) {
	if train == nil || test == nil {
		return nil, errors.New("tailoring.RunTrials: nil data")
	}
	if trials < 1 {
		return nil, fmt.Errorf("tailoring: trials = %d, want ≥ 1", trials)
	}
	if test.K() != train.K() {
		return nil, fmt.Errorf("tailoring: the test data has %d groups, the training data %d", test.K(), train.K())
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, trials)
	outcomes := make([]outcome, trials)
	var next sync.Mutex
	claimed := 0
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				next.Lock()
				i := claimed
				claimed++
				next.Unlock()
				if i >= trials {
					return
				}
				res, err := v.Fit(src, trialLabel(o, i), train, o)
				outcomes[i] = fitOutcome(res, err, train, test, o.Loss, delta, src)
			}
		}()
	}
	wg.Wait()
	return summarise(outcomes, train, test, o, v)
}

// outcome is one fit's results: each group's metric and the overall one
// on both splits, its budget shares and receipt, or how it failed.
type outcome struct {
	train, test []float64
	shares      []float64
	fallback    bool
	failed      bool
	receipt     *accounting.Receipt
	err         error
}

// fitOutcome scores a fit (res, or the error err of fitting it) on train
// and test: a noisy XᵀX that could not be factorised is a failed fit,
// any other error the outcome's.
func fitOutcome(res *Result, err error, train, test *Data, loss linear.Loss, delta float64, src dpops.Source) outcome {
	var out outcome
	if errors.Is(err, linear.ErrNotPositiveDefinite) {
		out.failed = true
		return out
	}
	if err != nil {
		out.err = err
		return out
	}
	out.shares = res.Shares
	out.fallback = res.StageOne.Fallback != "" && res.Method == DPSE
	if out.train, out.err = score(res, train, loss); out.err != nil {
		return out
	}
	if out.test, out.err = score(res, test, loss); out.err != nil {
		return out
	}
	rec, err := res.Receipt(delta, accounting.RunInfo{Seed: seedOf(src), Sampling: accounting.SamplingNone}) // full-data statistics
	if err != nil {
		out.err = err
		return out
	}
	out.receipt = &rec
	return out
}

// summarise is the Summary of the fits' outcomes with o and v.
func summarise(outcomes []outcome, train, test *Data, o Options, v Variant) (*Summary, error) {
	trials := len(outcomes)
	o, _ = o.withDefaults()
	sum := &Summary{Method: o.Method, Variant: v, Rho: o.Rho, FitRho: o.FitBudget(), Metric: "mspe", Trials: trials}
	if o.Loss == linear.Logistic {
		sum.Metric = "error"
	}
	var trainVals, testVals, shares [][]float64
	for i := range outcomes {
		out := &outcomes[i]
		switch {
		case out.err != nil:
			return nil, fmt.Errorf("tailoring: trial %d: %w", i, out.err)
		case out.failed:
			sum.Failed++
			continue
		}
		if out.fallback {
			sum.Fallbacks++
		}
		if out.receipt != nil && sum.Receipt.Accountant == "" {
			sum.Receipt = *out.receipt
		}
		trainVals = append(trainVals, out.train)
		testVals = append(testVals, out.test)
		shares = append(shares, out.shares)
	}
	if len(testVals) == 0 {
		return nil, fmt.Errorf("tailoring: all %d trials failed (the noisy XᵀX was never positive definite: raise ρ or the ridge)", trials)
	}
	if trials > 1 {
		sum.Receipt.Note = joinNotes(sum.Receipt.Note, fmt.Sprintf("the guarantee of one fit of %d: their summary releases all of them and costs %d times this ρ (ReleaseReceipt)", trials, trials))
	}
	sum.Train = groupStats(train, trainVals, shares)
	sum.Test = groupStats(test, testVals, shares)
	return sum, nil
}

// ReleaseReceipt is the privacy statement of publishing the summaries
// sums together (a ρ sweep of both methods, say), computed on the same
// records: zCDP composes by adding ρ, so every trial of every summary is
// charged its fit's budget FitRho, failed trials included (their noisy
// XᵀX was drawn, and the failure count is published). The note states the
// total and what it adds up.
func ReleaseReceipt(sums []*Summary, delta float64, run accounting.RunInfo) (accounting.Receipt, error) {
	if len(sums) == 0 {
		return accounting.Receipt{}, errors.New("tailoring.ReleaseReceipt: no summaries")
	}
	acct, err := accounting.NewZCDP(math.Inf(1))
	if err != nil {
		return accounting.Receipt{}, err
	}
	fits := 0
	for _, s := range sums {
		if s == nil || s.Trials < 1 || !(s.FitRho > 0) {
			return accounting.Receipt{}, fmt.Errorf("tailoring.ReleaseReceipt: a summary without trials or a fit budget (%+v)", s)
		}
		for range s.Trials {
			if err := acct.Spend(s.FitRho, fmt.Sprintf("%s fit at ρ = %g (%s variant)", s.Method, s.Rho, s.Variant)); err != nil {
				return accounting.Receipt{}, err
			}
		}
		fits += s.Trials
	}
	rec, err := acct.Receipt(delta, run)
	if err != nil {
		return rec, err
	}
	rec.AddNote(fmt.Sprintf("%d fits released together (every trial of every method and ρ: the reported means, spreads, "+
		"extremes and budget shares are computed from all of them), composed: total ρ = %.6g; "+
		"group sizes n_k are treated as public; within a fit, stage-1 and stage-2 charges add up by sequential composition "+
		"(the groups are disjoint, so this is conservative)", fits, acct.Rho()))
	return rec, nil
}

// trialLabel names the random stream of trial i of a fit with o's Method
// and Rho. Why the method and ρ are in it: the Gaussian noise of a release
// is its stream's standard normals times a std ∝ 1/√ρ, so two fits drawing
// from one stream at ρ and 4ρ release y₁ = s + σz and y₄ = s + σz/2, and
// 2y₄ − y₁ is the exact statistic s. Every fit one run releases (each ρ of a
// sweep, DPSE and DPNoSE, each trial) therefore draws from its own stream;
// the label still depends on nothing but the fit, so a seeded run is
// reproducible whatever ran before it.
func trialLabel(o Options, i int) string {
	return fmt.Sprintf("%s rho %s trial %d", o.Method, trainer.FormatSweepValue(o.Rho), i)
}

// seedOf is the receipt's view of the run's seed.
func seedOf(src dpops.Source) *uint64 {
	if !src.Seeded {
		return nil
	}
	s := src.Seed
	return &s
}

func joinNotes(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// score returns the metric of every group and then the overall one.
func score(res *Result, d *Data, loss linear.Loss) ([]float64, error) {
	pred, err := res.Predict(d)
	if err != nil {
		return nil, err
	}
	if loss == linear.Logistic {
		for i, m := range pred {
			if m >= 0 {
				pred[i] = 1
			} else {
				pred[i] = 0
			}
		}
	}
	out := metrics.GroupMSPE(pred, d.Y, d.Groups, d.K())
	return append(out, metrics.MSPE(pred, d.Y)), nil
}

// groupStats summarises per-trial values (groups, then overall).
func groupStats(d *Data, vals, shares [][]float64) []GroupStats {
	k := d.K()
	out := make([]GroupStats, k+1)
	for g := range out {
		col := make([]float64, len(vals))
		for t, v := range vals {
			col[t] = v[g]
		}
		st := GroupStats{Group: metrics.OverallName, N: len(d.Y)}
		if g < k {
			st.Group, st.N = d.Names[g], d.Sizes[g]
			for _, s := range shares {
				st.Share += s[g] / float64(len(shares))
			}
		} else {
			st.Share = 1
		}
		st.Mean, st.Std, st.Min, st.Max = describe(col)
		out[g] = st
	}
	return out
}

// describe returns the mean, sample standard deviation (0 for one value),
// minimum and maximum.
func describe(v []float64) (mean, std, lo, hi float64) {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	for _, x := range s {
		mean += x
	}
	mean /= float64(len(s))
	if len(s) > 1 {
		for _, x := range s {
			std += (x - mean) * (x - mean)
		}
		std = math.Sqrt(std / float64(len(s)-1))
	}
	return mean, std, s[0], s[len(s)-1]
}
