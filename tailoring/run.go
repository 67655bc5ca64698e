package tailoring

// Run: budget tailoring (Config.Algo "tailoring", the paper's DPSE) and its
// baseline ("dpnose") as one library call from a trainer.Config, with the
// report in fairdp's one results contract. `fairdp train --algo
// tailoring|dpnose` and the bench reproductions call it.

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fairdp/fairdp/atomicfile"
	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/linear"
	"github.com/fairdp/fairdp/loaders"
	"github.com/fairdp/fairdp/metrics"
	"github.com/fairdp/fairdp/trainer"
)

// Defaults is cfg set up for a tailoring run as `fairdp train --algo
// tailoring` starts it: the paper's five synthetic groups, ρ = 2, one
// trial, pooled model, stage 2 by 200 steps of gradient descent, clip Δ 2.
func Defaults(cfg trainer.Config) trainer.Config {
	cfg.Dataset, cfg.TrainFrac, cfg.Privacy.Clip, cfg.Privacy.Delta = "synthetic", 0, 2, 0
	cfg = WithConfig(cfg, Config{Task: "regression", Rho: []float64{2}, Trials: 1,
		Groups: []float64{10000, 500, 1000, 1500, 2000}, Slopes: []float64{0, -4, 4, 4, 4}, Noise: []float64{1},
		Model: "pooled", Variant: "gd", NoseBudget: "rho", TauShare: 0.2, Steps: 200, LR: 0.1, Box: 5})
	return cfg
}

// ReportExtra is report.json's extra.tailoring: the Monte Carlo summary of
// the first ρ (per-group mean test metric and its spread over the trials,
// and each group's budget share), and with several ρ both methods' test
// metric per group at each.
type ReportExtra struct {
	Task            string      `json:"task"`
	Rho             float64     `json:"rho"`
	Trials          int         `json:"trials"`
	FailedTrials    int         `json:"failed_trials"`
	Stage1Fallbacks int         `json:"stage1_fallbacks"`
	Test            TrialsSplit `json:"test"`
	// FitPrivacy is the receipt of one fit of the first ρ's primary
	// method (its mechanisms and the budget split); report.json's privacy
	// composes all the fits released.
	FitPrivacy *accounting.Receipt `json:"fit_privacy,omitempty"`
	Train      *TrialsSplit        `json:"train,omitempty"` // exact: only with Config.ReportTrainStats
	Sweep      []SweepEntry        `json:"sweep,omitempty"`
	Notes      []string            `json:"notes,omitempty"`
	Summaries  [][]*Summary        `json:"-"` // per ρ, per method run (the primary first)
	Variant    Variant             `json:"-"`
	Options    Options             `json:"-"`
	// Delta is the δ every receipt of the run states (Privacy.Delta, or
	// 1/n² of the training records), resolved by Prepare.
	Delta      float64      `json:"-"`
	Data       [2]*Data     `json:"-"` // train, test
	Source     dpops.Source `json:"-"`
	Methods    []Method     `json:"-"`
	GroupNames []string     `json:"-"`
}

// TrialsSplit is one split's Monte Carlo summary: n, the overall mean
// metric, and every group's n, mean metric and spread over the trials.
type TrialsSplit struct {
	N      int              `json:"n"`
	Metric string           `json:"metric"`
	Groups []map[string]any `json:"groups"`
	MSPE   *float64         `json:"mspe,omitempty"`
	Error  *float64         `json:"error,omitempty"`
}

// SweepEntry is one ρ of a comparison: both methods' test metric per
// group and their ratio (below 1: tailoring helps).
type SweepEntry struct {
	Rho    float64            `json:"rho"`
	Metric string             `json:"metric"`
	DPSE   map[string]float64 `json:"dpse"`
	DPNoSE map[string]float64 `json:"dpnose"`
	Ratio  map[string]float64 `json:"ratio"`
	Groups []string           `json:"groups"`
	Failed [2]int             `json:"failed_trials"`
}

// Extra returns a tailoring report's extra.tailoring, from a run or read
// from report.json (nil for others).
func Extra(rep *trainer.Report) *ReportExtra {
	e, _ := trainer.ExtraOf[*ReportExtra](rep, "tailoring")
	return e
}

// options validates the settings and turns them into Options (Rho and
// Method are set per run). With Prepare's δ it is the one place tailoring
// reads trainer.Config's privacy section: the fits take the clip as
// Options.GradClip.
func options(cfg trainer.Config) (Options, Variant, error) {
	var o Options
	var errs trainer.FieldErrors
	t := ConfigOf(cfg)
	switch cfg.Algo {
	case Name, DPNoSEName:
	default:
		errs.Add("Algo", "must be tailoring or dpnose (got %q)", cfg.Algo)
	}
	switch t.Task {
	case "regression":
		o.Loss = linear.Squared
	case "classification":
		o.Loss = linear.Logistic
	default:
		errs.Add("Tailoring.Task", "%q, want regression or classification", t.Task)
	}
	if len(t.Rho) == 0 {
		errs.Add("Tailoring.Rho", "needs at least one ρ")
	}
	for _, rho := range t.Rho {
		if !(rho > 0) || math.IsInf(rho, 0) {
			errs.Add("Tailoring.Rho", "%v: every ρ must be > 0", t.Rho)
			break
		}
	}
	if t.Trials < 1 {
		errs.Add("Tailoring.Trials", "%d, want ≥ 1", t.Trials)
	}
	switch t.Model {
	case "pooled":
		o.Model = Pooled
	case "per-group", "pergroup":
		o.Model = PerGroup
	default:
		errs.Add("Tailoring.Model", "%q, want pooled or per-group", t.Model)
	}
	variant := GD
	switch t.Variant {
	case "gd":
	case "ols":
		variant = OLS
		if t.Task != "regression" {
			errs.Add("Tailoring.Variant", "ols needs Tailoring.Task regression")
		}
		if t.Multiplier != 0 {
			errs.Add("Tailoring.Variant", "ols is unconstrained: drop Tailoring.Multiplier or use Tailoring.Variant gd")
		}
	default:
		errs.Add("Tailoring.Variant", "%q, want gd or ols", t.Variant)
	}
	switch t.Objective {
	case "", "means":
	case "sums":
		o.Objective = GroupSums
	default:
		errs.Add("Tailoring.Objective", "%q, want means (Algorithm 2) or sums (the synthetic study)", t.Objective)
	}
	if t.WarmStart && variant == OLS {
		errs.Add("Tailoring.WarmStart", "is for Tailoring.Variant gd: the ols variant has no iterations to start")
	}
	switch t.NoseBudget {
	case "rho":
	case "mu":
		o.BaselineStageTwoOnly = true
	default:
		errs.Add("Tailoring.NoseBudget", "%q, want rho or mu", t.NoseBudget)
	}
	if cfg.Dataset == "synthetic" {
		if cfg.Schema != "" {
			errs.Add("Schema", "is for a CSV data set, not synthetic")
		}
		if t.Task != "regression" {
			errs.Add("Tailoring.Task", "must be regression: the synthetic data set is regression data")
		}
		if len(t.Groups) != len(t.Slopes) {
			errs.Add("Tailoring.Slopes", "lists %d slopes for %d groups (Tailoring.Groups): want one slope per group", len(t.Slopes), len(t.Groups))
		}
		if len(t.Noise) != 1 && len(t.Noise) != len(t.Groups) {
			errs.Add("Tailoring.Noise", "lists %d values, want 1 or one per group (%d)", len(t.Noise), len(t.Groups))
		}
		for _, n := range t.Groups {
			if n < 1 || n != math.Trunc(n) {
				errs.Add("Tailoring.Groups", "%v: sizes must be positive integers", t.Groups)
				break
			}
		}
	} else if cfg.Schema == "" {
		errs.Add("Schema", "is required: %q is a CSV file (or use the synthetic data set)", cfg.Dataset)
	}
	// The library's Options read 0 as "default": here every setting is
	// explicit, so a 0 is a mistake to report, not to replace.
	for _, f := range []struct {
		name string
		v    float64
		ok   bool
	}{
		{"Tailoring.Steps", float64(t.Steps), t.Steps >= 1},
		{"Tailoring.TauShare", t.TauShare, t.TauShare > 0 && t.TauShare < 1},
		{"Tailoring.LR", t.LR, t.LR > 0},
		{"Privacy.Clip", cfg.Privacy.Clip, cfg.Privacy.Clip > 0},
		{"Tailoring.Box", t.Box, t.Box > 0},
		{"Tailoring.LossClip", t.LossClip, t.LossClip >= 0},
		{"Tailoring.ResidualClip", t.ResidualClip, t.ResidualClip >= 0},
		{"Tailoring.Ridge", t.Ridge, t.Ridge >= 0},
		{"Tailoring.NoiseRidge", t.NoiseRidge, t.NoiseRidge >= 0},
		{"Tailoring.Multiplier", t.Multiplier, t.Multiplier >= 0},
		{"Tailoring.XBound", t.XBound, t.XBound >= 0},
		{"Tailoring.YBound", t.YBound, t.YBound >= 0},
		{"TrainFrac", cfg.TrainFrac, cfg.TrainFrac >= 0 && cfg.TrainFrac < 1},
	} {
		if !f.ok || math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			errs.Add(f.name, "%v is out of range", f.v)
		}
	}
	if len(errs) > 0 {
		return o, variant, errs
	}
	o.StageOneShare, o.Steps, o.LR, o.GradClip = t.TauShare, t.Steps, t.LR, cfg.Privacy.Clip
	o.LossClip, o.ResidualClip, o.Box, o.Ridge, o.Average = t.LossClip, t.ResidualClip, t.Box, t.Ridge, t.Average
	o.NoiseRidge, o.WarmStart = t.NoiseRidge, t.WarmStart
	o.Constraint = BoundedGroupLoss{Eta: t.Eta, G: t.Multiplier}
	o.Intercept = true
	return o, variant, nil
}

// datasetName is the report's name of the data.
func datasetName(cfg trainer.Config) string {
	if cfg.Dataset == "synthetic" {
		return "synthetic"
	}
	return filepath.Base(cfg.Dataset)
}

// load reads or draws the data; for synthetic data it also fills in the
// public bounds the generator implies where cfg left them at 0.
func load(cfg *trainer.Config, src dpops.Source, loss linear.Loss, intercept bool) (train, test *Data, notes []string, err error) {
	t := ConfigOf(*cfg)
	// The bounds filled in here are recorded in the report's config.
	defer func() { *cfg = WithConfig(*cfg, t) }()
	var trainSet, testSet *loaders.Dataset
	if cfg.Dataset == "synthetic" {
		groups := make([]linear.SyntheticGroup, len(t.Groups))
		for k := range groups {
			sd := t.Noise[0]
			if len(t.Noise) > 1 {
				sd = t.Noise[k]
			}
			groups[k] = linear.SyntheticGroup{N: int(t.Groups[k]), Slope: []float64{t.Slopes[k]}, NoiseStd: sd}
		}
		// Public bounds from the generator (4 sd), unless given.
		b := SyntheticBounds(groups)
		if t.XBound == 0 {
			t.XBound = b.XNorm
		}
		if t.YBound == 0 {
			t.YBound = b.Y
		}
		if trainSet, err = linear.Synthetic(src.Derive("data train"), "synthetic/train", groups); err != nil {
			return nil, nil, nil, err
		}
		if testSet, err = linear.Synthetic(src.Derive("data test"), "synthetic/test", groups); err != nil {
			return nil, nil, nil, err
		}
		notes = append(notes, trainSet.Notes...)
		notes = append(notes, fmt.Sprintf("public bounds: feature row norm %.4g (intercept included), |y| ≤ %.4g", t.XBound, t.YBound))
	} else {
		if t.XBound == 0 || (t.YBound == 0 && t.Task == "regression") {
			return nil, nil, nil, trainer.FieldErrors{{Field: "Tailoring.XBound", Msg: "and Tailoring.YBound are required for a CSV data set: " +
				"public bounds on the feature row norm (intercept included) and on |y| from domain knowledge, not from the data"}}
		}
		if t.YBound == 0 {
			t.YBound = 1 // labels are 0/1
		}
		s, err := loaders.LoadSchema(cfg.Schema)
		if err != nil {
			return nil, nil, nil, err
		}
		if t.Task == "regression" && s.Target == "" {
			return nil, nil, nil, fmt.Errorf("%s: Tailoring.Task regression needs a numeric \"target\" column in the schema", cfg.Schema)
		}
		trainSet, testSet, _, err = loaders.LoadCSV(loaders.CSVOptions{Schema: s, Files: []string{cfg.Dataset},
			Split: loaders.SplitOptions{TrainFrac: cfg.TrainFrac, Rand: src.Derive("data")}})
		if err != nil {
			return nil, nil, nil, err
		}
		notes = append(notes, trainSet.Notes...)
		notes = append(notes, "features were z-scored with the training split's mean and sd, which are not privatised",
			fmt.Sprintf("public bounds: feature row norm %.4g (intercept included), |y| ≤ %.4g", t.XBound, t.YBound))
	}
	if train, err = NewData(trainSet, loss, intercept); err != nil {
		return nil, nil, nil, err
	}
	if test, err = NewData(testSet, loss, intercept); err != nil {
		return nil, nil, nil, fmt.Errorf("test split: %w", err)
	}
	return train, test, notes, nil
}

// Prepare validates cfg and loads its data: the first half of Run, for a
// caller that prints what it is about to run (extra's Data, Options,
// Variant and Source are set; Summaries are not).
func Prepare(cfg trainer.Config) (*trainer.Report, error) {
	o, variant, err := options(cfg)
	if err != nil {
		return nil, err
	}
	_, src := dpops.NewRand(cfg.Seed)
	train, test, notes, err := load(&cfg, src, o.Loss, o.Intercept)
	if err != nil {
		return nil, err
	}
	o.Bounds = linear.Bounds{XNorm: ConfigOf(cfg).XBound, Y: ConfigOf(cfg).YBound}
	// δ, read here once: every receipt of the run states it (ex.Delta).
	delta := cfg.Privacy.Delta
	if delta == 0 {
		delta = accounting.DefaultDelta(len(train.Y))
	}
	if err := accounting.CheckDelta(delta, len(train.Y), cfg.Privacy.AllowLargeDelta); err != nil {
		return nil, err
	}
	primary := DPSE
	if cfg.Algo == DPNoSEName {
		primary = DPNoSE
	}
	methods := []Method{primary}
	if len(ConfigOf(cfg).Rho) > 1 {
		methods = []Method{DPSE, DPNoSE}
	}
	ex := &ReportExtra{Task: ConfigOf(cfg).Task, Trials: ConfigOf(cfg).Trials, Notes: notes, Variant: variant, Options: o,
		Delta: delta, Data: [2]*Data{train, test}, Source: src, Methods: methods, GroupNames: train.Names}
	rep := &trainer.Report{Algorithm: string(cfg.Algo), Dataset: datasetName(cfg), DType: "float64", Backend: trainer.BackendName(),
		Model:        fmt.Sprintf("linear (%s, %s loss, intercept, stage 2 %s)", o.Model, o.Loss, variant),
		TrainRecords: len(train.Y), Version: trainer.Version, Extra: trainer.Extras{"tailoring": ex}}
	// The configuration actually run, with the bounds and δ it used.
	rep.Config = cfg
	rep.Config.Out, rep.Config.Quiet = "", false
	rep.Config.Privacy.Delta, rep.Config.Privacy.Sigma, rep.Config.Privacy.Sampling = delta, 0, ""
	rep.Config.Federation = trainer.FederationConfig{}
	rep.Config = trainer.WithoutSections(rep.Config, SectionKey)
	return rep, nil
}

// Run is budget tailoring in one call: Prepare, then Finish.
func Run(ctx context.Context, cfg trainer.Config) (*trainer.Report, error) {
	rep, err := Prepare(cfg)
	if err != nil {
		return nil, err
	}
	return rep, Finish(ctx, rep, cfg.Out)
}

// Finish runs the trials of a prepared report (Prepare) at every ρ of its
// config, fills in its results and receipt, and with out set writes
// report.json there (with several ρ also sweep.csv and ratio.png). The ρ
// values run through trainer.Sweep one at a time; with several ρ and out
// set, each finished ρ is appended to out's resumable log (RhoLogName,
// settings in sweep.json), so a run killed part-way and started again with
// the same settings skips the ρ values already done and gives the same
// results, and one with other settings is refused. The receipt
// (ReleaseReceipt) charges every fit the report summarises: all trials of
// every method at every ρ; extra.tailoring.fit_privacy is one fit's.
func Finish(ctx context.Context, rep *trainer.Report, out string) error {
	start := time.Now()
	ex, cfg := Extra(rep), &rep.Config
	rhos := ConfigOf(*cfg).Rho
	rows := make([][]*Summary, len(rhos))
	var log *trainer.SweepLog
	var earlier []*Summary // logged by a run with other ρ values: released too
	if out != "" && len(ex.Methods) == 2 {
		if err := os.MkdirAll(out, 0o755); err != nil {
			return trainer.FieldErrors{{Field: "Out", Msg: fmt.Sprintf("%s: %v", out, err)}}
		}
		var err error
		if log, err = openRhoLog(out, *cfg); err != nil {
			return err
		}
		defer log.Close()
		if rows, earlier, err = loggedRows(log, rhos, len(ex.Methods), cfg.ReportTrainStats); err != nil {
			return err
		}
		// The log releases each ρ's summaries before report.json exists:
		// the charge for every fit planned goes to disk first.
		planned, err := runReceipt(plannedSummaries(ex, *cfg), earlier, ex, *cfg)
		if err != nil {
			return err
		}
		if err := atomicfile.WriteJSON(filepath.Join(out, PlannedReceiptName), planned); err != nil {
			return err
		}
	}
	var runs []trainer.SweepRun
	index := map[string]int{}
	for i, rho := range rhos {
		if rows[i] == nil {
			key := trainer.FormatSweepValue(rho)
			index[key] = i
			runs = append(runs, trainer.SweepRun{Key: key, Cfg: WithConfig(trainer.Config{}, Config{Rho: []float64{rho}})})
		}
	}
	sweep := trainer.Sweep{Workers: 1, Pipeline: func(ctx context.Context, c trainer.Config) (*trainer.Report, error) {
		row, err := runRho(ctx, ex, cfg, ConfigOf(c).Rho[0])
		// One ρ's rows, in the one type extra.tailoring holds.
		return &trainer.Report{Extra: trainer.Extras{"tailoring": &ReportExtra{Summaries: [][]*Summary{row}}}}, err
	}}
	err := sweep.Run(ctx, runs, func(res trainer.SweepResult) error {
		if res.Err != nil {
			return res.Err
		}
		row := Extra(res.Report).Summaries[0]
		rows[index[res.Run.Key]] = row
		if log == nil {
			return nil
		}
		cell, err := encodeRow(row, cfg.ReportTrainStats)
		if err != nil {
			return err
		}
		return log.Append([]string{res.Run.Key, cell})
	})
	if err != nil {
		return err
	}
	for i, rho := range rhos {
		row := rows[i]
		results := map[Method]*Summary{}
		for k, m := range ex.Methods {
			results[m] = row[k]
		}
		ex.Summaries = append(ex.Summaries, row)
		if first := row[0]; i == 0 {
			if len(ex.Methods) == 2 && rep.Algorithm == "dpnose" {
				first = results[DPNoSE]
			}
			reportSummary(rep, ex, first)
		}
		if len(ex.Methods) == 2 {
			ex.Sweep = append(ex.Sweep, sweepEntry(rho, results[DPSE], results[DPNoSE]))
		}
	}
	// The receipt charges every fit the report summarises, not one.
	var all []*Summary
	for _, row := range ex.Summaries {
		all = append(all, row...)
	}
	if rep.Privacy, err = runReceipt(all, earlier, ex, *cfg); err != nil {
		return err
	}
	// The budget is ρ; the (ε, δ) it converts to is recorded with it, in
	// the report's record of the configuration (cfg is rep.Config, which
	// nothing reads its privacy settings from).
	cfg.Privacy.Epsilon = math.Inf(1)
	if rep.Privacy.Epsilon != nil {
		cfg.Privacy.Epsilon = *rep.Privacy.Epsilon
	}
	rep.Seconds = time.Since(start).Seconds()
	if out == "" {
		return nil
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return trainer.FieldErrors{{Field: "Out", Msg: fmt.Sprintf("%s: %v", out, err)}}
	}
	if err := atomicfile.WriteJSON(filepath.Join(out, "report.json"), rep); err != nil {
		return err
	}
	if len(ex.Sweep) > 0 {
		return writeSweep(out, ex.Sweep, ex.GroupNames)
	}
	return nil
}

// reportSummary puts the summary first (of the first ρ) into the report:
// its test metrics, and its exact training metrics only with
// Config.ReportTrainStats.
func reportSummary(rep *trainer.Report, ex *ReportExtra, first *Summary) {
	ex.Rho, ex.FailedTrials, ex.Stage1Fallbacks = first.Rho, first.Failed, first.Fallbacks
	ex.Test = trialsSplit(first.Test, first.Metric)
	if rep.Config.ReportTrainStats { // exact statistics of the training records: only on request
		tr := trialsSplit(first.Train, first.Metric)
		ex.Train, rep.TrainNotPrivate = &tr, true
	}
	fit := first.Receipt
	ex.FitPrivacy = &fit
	rep.Test = testSplit(first)
}

// runReceipt is the receipt of a run that releases the summaries sums
// and leaves earlier ones (the log rows of other ρ values, from an earlier
// run into the same directory) in its output (ReleaseReceipt of them all),
// with what it leaves uncovered.
func runReceipt(sums, earlier []*Summary, ex *ReportExtra, cfg trainer.Config) (accounting.Receipt, error) {
	rec, err := ReleaseReceipt(append(slices.Clip(sums), earlier...), ex.Delta, accounting.RunInfo{Seed: seedOf(ex.Source), Sampling: accounting.SamplingNone}) // full-data statistics
	if err != nil {
		return rec, err
	}
	if len(earlier) > 0 {
		var rhos []string
		for _, s := range earlier {
			if !slices.Contains(rhos, trainer.FormatSweepValue(s.Rho)) {
				rhos = append(rhos, trainer.FormatSweepValue(s.Rho))
			}
		}
		rec.AddNote(fmt.Sprintf("the total includes the fits at ρ = %s, whose summaries an earlier run logged in %s "+
			"of this output directory", strings.Join(rhos, ", "), RhoLogName))
	}
	declareRun(&rec, cfg, len(ex.Data[0].Y))
	return rec, nil
}

// declareRun adds to a receipt of fits of cfg's data (n training records)
// what any tailoring run says beside its charges: that synthetic data are
// a simulation, and what it leaves uncovered (declareNotCovered).
func declareRun(rec *accounting.Receipt, cfg trainer.Config, n int) {
	if cfg.Dataset == "synthetic" {
		rec.AddNote("the data are synthetic, drawn from the run's own stream: a simulation of the method, " +
			"stating what releasing these fits of private data would cost")
	}
	declareNotCovered(rec, cfg, n)
}

// plannedSummaries stands for the summaries a run will release, before
// they exist: every method at every ρ of cfg, each with cfg's trials.
func plannedSummaries(ex *ReportExtra, cfg trainer.Config) []*Summary {
	var sums []*Summary
	for _, rho := range ConfigOf(cfg).Rho {
		for _, m := range ex.Methods {
			o := ex.Options
			o.Rho, o.Method = rho, m
			sums = append(sums, &Summary{Method: m, Variant: ex.Variant, Rho: rho, FitRho: o.FitBudget(), Trials: ConfigOf(cfg).Trials})
		}
	}
	return sums
}

// PlannedReceiptName is a ρ comparison's receipt in its output directory,
// written (atomically) before its first fit runs, and again on a resume:
// RhoLogName releases each finished ρ's summaries before report.json
// exists, so the charge for every fit of the comparison is on disk first.
const PlannedReceiptName = "planned_receipt.json"

// RhoLogName is the resumable log of a ρ comparison in its output
// directory: one row per finished ρ (its key, then its summaries, exactly).
const RhoLogName = "rho_runs.csv"

var rhoLogHeader = []string{"rho", "summaries"}

// openRhoLog checks out/sweep.json against cfg's settings without its ρ
// values (writing it for a new comparison) and opens the log there.
func openRhoLog(out string, cfg trainer.Config) (*trainer.SweepLog, error) {
	base := cfg
	// Not settings: the axis, the seed (kept apart), the trial workers (the
	// results do not depend on them) and ε, which Finish records as an
	// output (the ε that ρ converts to), so a rerun from report.json matches.
	t := ConfigOf(cfg)
	t.Rho, t.Workers = nil, 0
	base = WithConfig(base, t)
	base.Seed, base.Privacy.Epsilon = nil, 0
	settings := trainer.SweepSettings{Version: trainer.Version, Seeded: cfg.Seed != nil}
	if cfg.Seed != nil {
		settings.BaseSeed = *cfg.Seed
	}
	if err := trainer.CheckSweepSettings(out, base, &settings); err != nil {
		return nil, err
	}
	return trainer.OpenSweepLog(filepath.Join(out, RhoLogName), rhoLogHeader, 1)
}

// loggedRows returns the summaries of the methods methods that the log
// holds for each of rhos (nil where that ρ has not run yet), with their
// training-split statistics when withTrain, and those it holds for other ρ
// values (an earlier run's, released into the same directory).
func loggedRows(log *trainer.SweepLog, rhos []float64, methods int, withTrain bool) (rows [][]*Summary, others []*Summary, err error) {
	rows = make([][]*Summary, len(rhos))
	for _, rec := range log.Rows() {
		i := slices.IndexFunc(rhos, func(rho float64) bool { return rec[0] == trainer.FormatSweepValue(rho) })
		row, err := decodeRow(rec[1])
		if err == nil && slices.ContainsFunc(row, func(s *Summary) bool {
			return s == nil || !(s.FitRho > 0) || s.Trials < 1 || (i >= 0 && (len(s.Test) == 0 || (withTrain && len(s.Train) == 0)))
		}) {
			err = errors.New("a summary without its statistics, trials or fit budget (a log of an older fairdp: use a new output directory)")
		}
		if err == nil && i >= 0 && len(row) != methods {
			err = fmt.Errorf("%d summaries, want %d", len(row), methods)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s: ρ = %s: %w", RhoLogName, rec[0], err)
		}
		if i < 0 {
			others = append(others, row...)
		} else {
			rows[i] = row
		}
	}
	return rows, others, nil
}

// encodeRow is a ρ's summaries as one log cell, in JSON: Go writes every
// float in its shortest exact form, so a resumed run reports the same
// numbers. (A NaN cannot be encoded, but neither can report.json hold one.)
// The exact training-split statistics are left out unless the run reports
// them (Config.ReportTrainStats): they are not privatised, and the log is a
// results file like report.json. A resumed row without them has a nil
// Summary.Train.
func encodeRow(row []*Summary, withTrain bool) (string, error) {
	logged := make([]Summary, len(row))
	for k, sum := range row {
		logged[k] = *sum
		if !withTrain {
			logged[k].Train = nil
		}
	}
	raw, err := json.Marshal(logged)
	return string(raw), err
}

func decodeRow(cell string) ([]*Summary, error) {
	var row []*Summary
	if err := json.Unmarshal([]byte(cell), &row); err != nil {
		return nil, err
	}
	return row, nil
}

// runRho runs the trials of every method of ex at one ρ (the primary
// method first). Each trial draws from its own stream of ex.Source named
// by its method, ρ and index (trialLabel), so no two released fits share
// noise and a ρ's results do not depend on which ρ ran before.
func runRho(ctx context.Context, ex *ReportExtra, cfg *trainer.Config, rho float64) ([]*Summary, error) {
	var row []*Summary
	for _, m := range ex.Methods {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		o := ex.Options
		o.Rho, o.Method = rho, m
		sum, err := RunTrials(ex.Source, ex.Data[0], ex.Data[1], o, ex.Variant, ConfigOf(*cfg).Trials, ConfigOf(*cfg).Workers, ex.Delta)
		if err != nil {
			return nil, fmt.Errorf("ρ = %g, %s: %w", rho, m, err)
		}
		row = append(row, sum)
	}
	return row, nil
}

// testSplit is report.json's test split of a summary: its mean over the
// trials. A regression's carries each group's and the overall MSPE, and no
// classification number (metrics.Split writes none for it); a
// classification's the error and accuracy (its groups, the TPR, FPR and
// selection rates are not computed here, so they are left out rather
// than reported as 0).
func testSplit(s *Summary) metrics.Split {
	overall := s.Test[len(s.Test)-1]
	sp := metrics.Split{N: overall.N}
	if s.Metric != "mspe" {
		sp.Error, sp.Accuracy = overall.Mean, 1-overall.Mean
		return sp
	}
	row := func(g GroupStats) metrics.GroupMetrics {
		m := g.Mean
		return metrics.GroupMetrics{Group: g.Group, N: g.N, MSPE: &m}
	}
	for _, g := range s.Test[:len(s.Test)-1] {
		sp.Groups = append(sp.Groups, row(g))
	}
	o := row(overall)
	sp.Overall, sp.MSPE = &o, o.MSPE
	return sp
}

func trialsSplit(stats []GroupStats, metric string) TrialsSplit {
	overall := stats[len(stats)-1]
	out := TrialsSplit{N: overall.N, Metric: metric}
	mean := overall.Mean
	if metric == "mspe" {
		out.MSPE = &mean
	} else {
		out.Error = &mean
	}
	for _, g := range stats[:len(stats)-1] {
		out.Groups = append(out.Groups, map[string]any{"group": g.Group, "n": g.N, metric: g.Mean,
			metric + "_std": g.Std, metric + "_min": g.Min, metric + "_max": g.Max, "budget_share": g.Share})
	}
	return out
}

func sweepEntry(rho float64, se, nose *Summary) SweepEntry {
	e := SweepEntry{Rho: rho, Metric: se.Metric, DPSE: map[string]float64{}, DPNoSE: map[string]float64{},
		Ratio: map[string]float64{}, Failed: [2]int{se.Failed, nose.Failed}}
	for k, g := range se.Test {
		e.Groups = append(e.Groups, g.Group)
		e.DPSE[g.Group], e.DPNoSE[g.Group] = g.Mean, nose.Test[k].Mean
		e.Ratio[g.Group] = g.Mean / nose.Test[k].Mean
	}
	return e
}

// writeSweep writes sweep.csv (one row per ρ and group) and ratio.png.
func writeSweep(dir string, sweep []SweepEntry, groups []string) error {
	var buf bytes.Buffer
	cw := csv.NewWriter(&buf)
	cw.Write([]string{"rho", "group", "metric", "dpse", "dpnose", "ratio"})
	series := make([]metrics.Series, len(groups))
	for k, g := range groups {
		series[k].Name = g
	}
	for _, e := range sweep {
		for _, g := range e.Groups {
			f := func(v float64) string { return strconv.FormatFloat(v, 'g', 8, 64) }
			cw.Write([]string{f(e.Rho), g, e.Metric, f(e.DPSE[g]), f(e.DPNoSE[g]), f(e.Ratio[g])})
		}
		for k, g := range groups {
			if r := e.Ratio[g]; !math.IsNaN(r) && !math.IsInf(r, 0) {
				series[k].X = append(series[k].X, math.Log10(e.Rho))
				series[k].Y = append(series[k].Y, r)
			}
		}
	}
	cw.Flush()
	if err := atomicfile.WriteBytes(filepath.Join(dir, "sweep.csv"), buf.Bytes()); err != nil {
		return err
	}
	return metrics.LinePlot(filepath.Join(dir, "ratio.png"), "DPSE / DPNoSE test "+sweep[0].Metric+" per group",
		"log10 ρ", "ratio", series)
}

// declareNotCovered lists what a tailoring run releases or assumes beyond
// its receipt: the common items, the group sizes n_k (public by the
// paper's model) and where the public bounds came from.
func declareNotCovered(r *accounting.Receipt, cfg trainer.Config, n int) {
	var prep json.RawMessage
	synthetic := cfg.Dataset == "" || cfg.Dataset == "synthetic"
	if !synthetic {
		prep = json.RawMessage(`"z-scored features"`) // fitted on the training split, not privatised
	}
	trainer.DeclareNotCovered(r, n, prep, trainer.Config{ReportTrainStats: cfg.ReportTrainStats})
	r.AddNotCovered("group_sizes", "the groups' record counts n_k are treated as public (the paper's model)")
	bounds := "the public bounds (Tailoring.XBound, Tailoring.YBound) are assumed to come from domain knowledge, not from the data"
	if synthetic {
		bounds = "the public bounds were derived from the synthetic generator's parameters (√17 feature norm, 4·hypot(slope, sd) " +
			"for |y|), which stand in for the domain knowledge a real user must supply"
	}
	r.AddNotCovered("public_bounds", bounds)
}
