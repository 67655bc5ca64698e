package linear

// The Jagielski et al. (2019) pipeline as one library call: load
// and split the data (or read an external model's scores), fit the base
// classifier, post-process it privately (Config.Algo "postproc") or train
// the DP oracle learner ("oracle"), and score the result, with the report
// in fairdp's one results contract (trainer.Report). `fairdp train --algo
// postproc|oracle`, `fairdp sweep` and the bench reproductions all call
// these functions.

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
	"strconv"
	"strings"
	"time"

	"github.com/fairdp/fairdp/atomicfile"
	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/loaders"
	"github.com/fairdp/fairdp/metrics"
	"github.com/fairdp/fairdp/trainer"
)

// PostprocDefaults is the command line's starting point for the
// post-processing and oracle settings (PostprocConfigOf).
func PostprocDefaults() PostprocConfig {
	return PostprocConfig{Gamma: 0.05, Fairness: "eo", Beta: DefaultBeta, Bins: 2, Threshold: 0.5, L2: 1e-4,
		Scores: ScoresConfig{ScoreColumn: "score", GroupColumn: "group", LabelColumn: "label", Positive: "1"},
		Rounds: DefaultOracleRounds, Bound: DefaultOracleBound, Eta: DefaultOracleLearningRate, CountShare: DefaultCountShare,
		BaseClipAtPredict: true, AddRemoveCells: true}
}

// FairData is a data set loaded for post-processing or the oracle learner:
// features (or external scores), labels and groups of both splits, and
// for post-processing the base classifier's scores.
type FairData struct {
	Name        string
	GroupNames  []string
	Train, Test *FairSplit
	// Preprocess is the preprocessing fitted on the training split (nil
	// with external scores); Base the base logistic regression (nil with
	// external scores or for the oracle).
	Preprocess json.RawMessage
	Base       *LinearClassifier
	// PrivateBase is the base fitted by objective perturbation
	// (Postproc.Base "objpert"; Base holds its weights).
	PrivateBase *ObjPertResult
	// BaseFit is any private base (Postproc.Base "objpert" or "dpsgd";
	// Base holds its weights): RunFair charges its budget in the run's
	// receipt.
	BaseFit *PrivateBaseFit
	// Split records the train/test split (nil with external scores):
	// model.json keeps it so that eval scores the held-out records.
	Split *trainer.SplitRecord
}

// FairSplit is one split: n × Dim features (nil with external scores),
// the base classifier's scores (post-processing), labels and groups.
type FairSplit struct {
	X      []float64
	Dim    int
	Scores []float64
	Label  []int
	Group  []int
}

// N is the number of records.
func (s *FairSplit) N() int { return len(s.Label) }

// validatePostproc checks the settings the pipeline reads (p: cfg's
// privacy target, privacyOf).
func validatePostproc(cfg trainer.Config, p privacy) (Fairness, error) {
	var errs trainer.FieldErrors
	j := PostprocConfigOf(cfg)
	if cfg.Algo != PostprocName && cfg.Algo != OracleName {
		errs.Add("Algo", "must be postproc or oracle (got %q)", cfg.Algo)
	}
	f, err := ParseFairness(j.Fairness)
	if err != nil {
		errs.Add("Postproc.Fairness", "%v", err)
	}
	if j.Scores.File != "" && cfg.Algo == OracleName {
		errs.Add("Postproc.Scores.File", "is for post-processing only (the oracle learner trains on features)")
	}
	if j.Bins < 2 && !(j.Bins == 0 && j.Base != "") {
		errs.Add("Postproc.Bins", "must be ≥ 2, or 0 (the default) with a private base (got %d)", j.Bins)
	}
	if err == nil && f == DemographicParity && cfg.Algo == OracleName {
		errs.Add("Postproc.Fairness", "dp is post-processing's; the oracle learner constrains error rates (eo or fpr)")
	}
	if _, err := ParseSlackRule(j.Slack); err != nil {
		errs.Add("Postproc.Slack", "%v", err)
	}
	if !(j.SlackZ >= 0) || math.IsInf(j.SlackZ, 1) {
		errs.Add("Postproc.SlackZ", "must be a finite number ≥ 0 (0: %v) (got %v)", DefaultSlackZ, j.SlackZ)
	}
	if !(j.GammaShare >= 0 && j.GammaShare <= 1) && !(j.GammaShare == GammaShareAuto && j.Base != "") {
		errs.Add("Postproc.GammaShare", "must be in [0, 1] (0: γ fixed), or %v (the data-aware rule) with a private base (got %v)", GammaShareAuto, j.GammaShare)
	}
	if cfg.Algo == OracleName && (j.Slack != "" || j.SlackZ != 0 || j.GammaShare != 0) {
		errs.Add("Postproc.Slack", "slack rules and the data-aware γ are post-processing's (the oracle learner has neither)")
	}
	switch j.Base {
	case "":
		if j.BaseEpsilon != 0 {
			errs.Add("Postproc.BaseEpsilon", "is read only with Postproc.Base objpert or dpsgd (got %v)", j.BaseEpsilon)
		}
	case BaseObjPert, BaseDPSGD:
		if cfg.Algo != PostprocName || j.Scores.File != "" {
			errs.Add("Postproc.Base", "%s is the base classifier of post-processing on a data set, not of the oracle or of external scores", j.Base)
		}
		// BaseEpsilon 0 takes DefaultBaseEpsilon of the total.
		if !(j.BaseEpsilon >= 0 && j.BaseEpsilon < p.Epsilon) || !p.Private() {
			errs.Add("Postproc.BaseEpsilon", "must be ≥ 0 (0: the default share) and below a finite total Privacy.Epsilon with a private base, "+
				"which leaves the rest to post-processing (got %v of %v)", j.BaseEpsilon, p.Epsilon)
		}
	default:
		errs.Add("Postproc.Base", "must be empty (non-private logistic regression), objpert or dpsgd (got %q)", j.Base)
	}
	if !(j.Gamma >= 0) || math.IsInf(j.Gamma, 1) {
		errs.Add("Postproc.Gamma", "must be a finite number ≥ 0 (got %v)", j.Gamma)
	}
	if !(p.Epsilon > 0) {
		errs.Add("Privacy.Epsilon", "must be > 0 or inf (got %v)", p.Epsilon)
	}
	if !(p.Delta >= 0 && p.Delta < 1) { // NaN fails too
		errs.Add("Privacy.Delta", "must be in [0,1) (got %v)", p.Delta)
	}
	if !(cfg.TrainFrac > 0 && cfg.TrainFrac < 1) {
		errs.Add("TrainFrac", "must be in (0,1) (got %v)", cfg.TrainFrac)
	}
	if cfg.Limit < 0 {
		errs.Add("Limit", "must be ≥ 0")
	}
	if len(errs) > 0 {
		return 0, errs
	}
	return f, nil
}

// LoadFairData loads the data set cfg names and, for post-processing, fits
// the base classifier (or reads the external scores, PostprocConfig.Scores).
// The split comes from cfg.SplitSeed, else cfg.Seed (nil: crypto-seeded).
// The privacy target is read from cfg once (privacyOf).
func LoadFairData(cfg trainer.Config) (*FairData, error) {
	p := privacyOf(cfg)
	if _, err := validatePostproc(cfg, p); err != nil {
		return nil, err
	}
	pc := PostprocConfigOf(cfg)
	if pc.Scores.File != "" {
		return loadFairSplits(cfg)
	}
	d, err := loadFairSplits(cfg)
	if err != nil || cfg.Algo != PostprocName {
		return d, err
	}
	// The base classifier never sees the sensitive attribute: loaders keep
	// it out of the features.
	var base LinearClassifier
	if pc.Base != "" {
		// Its noise comes from the run's seed, not the split's.
		if d.BaseFit, err = fitPrivateBase(cfg, p, d); err != nil {
			return nil, fmt.Errorf("private base classifier: %w", err)
		}
		base.W, base.RowBound = d.BaseFit.W, d.BaseFit.RowBound
	} else if base, err = FitLogistic(d.Train.X, d.Train.N(), d.Train.Dim, d.Train.Label, pc.L2); err != nil {
		return nil, fmt.Errorf("base classifier: %w", err)
	}
	if err := setBaseScores(d, base); err != nil {
		return nil, err
	}
	return d, nil
}

// setBaseScores scores both of d's splits with base and makes it d's base.
func setBaseScores(d *FairData, base LinearClassifier) error {
	for _, s := range []*FairSplit{d.Train, d.Test} {
		var err error
		if s.Scores, err = base.Probabilities(s.X, s.N()); err != nil {
			return err
		}
	}
	d.Base = &base
	return nil
}

// loadFairSplits loads and splits the data set cfg names (or reads the
// external scores), with no base classifier: the part of LoadFairData that
// reads no label through a model. The split comes from cfg.SplitSeed, else
// cfg.Seed.
func loadFairSplits(cfg trainer.Config) (*FairData, error) {
	seed := cfg.Seed
	if cfg.SplitSeed != nil {
		seed = cfg.SplitSeed
	}
	_, src := dpops.NewRand(seed)
	r, key := src.Derive("data"), src.DeriveKey("data") // the key goes into model.json's split record
	pc := PostprocConfigOf(cfg)
	if pc.Scores.File != "" {
		return readScores(pc.Scores, cfg.TrainFrac, r)
	}
	train, test, prep, err := trainer.LoadData(cfg, r)
	if err != nil {
		return nil, err
	}
	if train.X == nil {
		return nil, fmt.Errorf("data set %s is not tabular: %s needs features", train.Name, cfg.Algo)
	}
	if len(train.LabelNames) != 2 {
		return nil, fmt.Errorf("data set %s has %d classes; Jagielski et al.'s algorithms are for binary labels", train.Name, len(train.LabelNames))
	}
	if len(train.GroupNames) < 2 {
		return nil, fmt.Errorf("data set %s has %d sensitive group(s); fairness needs at least 2", train.Name, len(train.GroupNames))
	}
	d := &FairData{Name: train.Name, GroupNames: train.GroupNames, Preprocess: prep,
		Split: trainer.NewSplitRecord(cfg, key, train, test)}
	split := func(ds *loaders.Dataset) *FairSplit {
		return &FairSplit{X: ds.X, Dim: ds.Dim, Label: ds.Labels, Group: ds.Groups}
	}
	d.Train, d.Test = split(train), split(test)
	return d, nil
}

// readScores reads an external model's scores with groups and labels.
func readScores(sc ScoresConfig, trainFrac float64, r *rand.Rand) (*FairData, error) {
	tab, err := loaders.ReadCSV(sc.File, loaders.CSVFormat{Header: true})
	if err != nil {
		return nil, err
	}
	col := func(name, field string, required bool) (int, error) {
		if name == "" && !required {
			return -1, nil
		}
		j := tab.ColumnIndex(name)
		if j < 0 {
			return 0, &loaders.DataError{File: sc.File, Msg: fmt.Sprintf("no column %q (set %s); the header has %s",
				name, field, strings.Join(tab.Columns, ", "))}
		}
		return j, nil
	}
	js, err := col(sc.ScoreColumn, "Postproc.Scores.ScoreColumn", true)
	if err != nil {
		return nil, err
	}
	jg, err := col(sc.GroupColumn, "Postproc.Scores.GroupColumn", true)
	if err != nil {
		return nil, err
	}
	jl, err := col(sc.LabelColumn, "Postproc.Scores.LabelColumn", true)
	if err != nil {
		return nil, err
	}
	jt, err := col(sc.SplitColumn, "Postproc.Scores.SplitColumn", false)
	if err != nil {
		return nil, err
	}
	if tab.Len() == 0 {
		return nil, &loaders.DataError{File: sc.File, Msg: "no data rows"}
	}
	bad := func(i int, field, msg string) error {
		return &loaders.DataError{File: sc.File, Line: tab.Line[i], Field: field, Msg: msg}
	}
	var groupNames []string
	for i, row := range tab.Cells {
		if g := row[jg]; !slices.Contains(groupNames, g) {
			if g == "" {
				return nil, bad(i, sc.GroupColumn, "empty group, expected a group name")
			}
			groupNames = append(groupNames, g)
		}
	}
	slices.Sort(groupNames)
	if len(groupNames) < 2 {
		return nil, &loaders.DataError{File: sc.File, Field: sc.GroupColumn, Msg: fmt.Sprintf("only group %q; fairness needs at least 2", groupNames[0])}
	}
	all := &FairSplit{}
	isTrain := make([]bool, tab.Len())
	for i, row := range tab.Cells {
		s, err := strconv.ParseFloat(row[js], 64)
		if err != nil || math.IsNaN(s) || math.IsInf(s, 0) {
			return nil, bad(i, sc.ScoreColumn, fmt.Sprintf("%q is not a finite number", row[js]))
		}
		var y int
		switch v := row[jl]; {
		case v == sc.Positive:
			y = 1
		case sc.Positive == "1" && v != "0":
			return nil, bad(i, sc.LabelColumn, fmt.Sprintf("%q, expected 0 or 1 (or set Postproc.Scores.Positive to the positive label)", v))
		}
		if jt >= 0 {
			switch strings.ToLower(row[jt]) {
			case "train":
				isTrain[i] = true
			case "test":
			default:
				return nil, bad(i, sc.SplitColumn, fmt.Sprintf("%q, expected train or test", row[jt]))
			}
		}
		all.Scores = append(all.Scores, s)
		all.Label = append(all.Label, y)
		all.Group = append(all.Group, slices.Index(groupNames, row[jg]))
	}
	if jt < 0 {
		perm := r.Perm(tab.Len())
		for _, i := range perm[:int(trainFrac*float64(tab.Len()))] {
			isTrain[i] = true
		}
	}
	d := &FairData{Name: filepath.Base(sc.File), GroupNames: groupNames, Train: &FairSplit{}, Test: &FairSplit{}}
	for i := range isTrain {
		s := d.Test
		if isTrain[i] {
			s = d.Train
		}
		s.Scores = append(s.Scores, all.Scores[i])
		s.Label = append(s.Label, all.Label[i])
		s.Group = append(s.Group, all.Group[i])
	}
	if d.Train.N() == 0 || d.Test.N() == 0 {
		return nil, &loaders.DataError{File: sc.File, Msg: fmt.Sprintf("the split left %d training and %d test rows; both must be non-empty",
			d.Train.N(), d.Test.N())}
	}
	return d, nil
}

// FairResult is report.json's extra.jagielski: the algorithm's own output
// (the LP or the oracle game), the base classifier's rates, and the rates
// expected over the randomised classifier's coins. Training-split
// statistics are left out of a private run unless
// Config.ReportTrainStats.
type FairResult struct {
	Gamma          float64            `json:"gamma"`
	Fairness       string             `json:"fairness"`
	AllPairs       bool               `json:"all_pairs"`
	PostProcessing *PostProcessResult `json:"postprocessing,omitempty"`
	Oracle         *OracleResult      `json:"oracle,omitempty"`
	Bins           []float64          `json:"bins,omitempty"`
	BaseTrain      *metrics.Split     `json:"base_train,omitempty"`
	BaseTest       *metrics.Split     `json:"base_test,omitempty"`
	Failed         bool               `json:"failed,omitempty"`
	Reason         string             `json:"reason,omitempty"`
	ExpectedTrain  *ExpectedRates     `json:"expected_train,omitempty"`
	ExpectedTest   *ExpectedRates     `json:"expected_test,omitempty"`
	// Model is written to model.json: the post-processor (with the base
	// weights) or the oracle's mixture.
	Model *FairModel `json:"-"`
}

// FairExtra returns the report's extra.jagielski (nil for other reports).
func FairExtra(rep *trainer.Report) *FairResult {
	r, _ := trainer.ExtraOf[*FairResult](rep, "jagielski")
	return r
}

// RunFair runs cfg.Algo ("postproc" or "oracle") on loaded data with
// γ of its PostprocConfig, cfg's privacy target (read once, privacyOf)
// and noise seed cfg.Seed (nil: crypto-seeded), and returns the report
// (extra.jagielski holds a *FairResult). A failure of the private LP is a
// result (FairResult.Failed), not an error: the budget was spent.
func RunFair(ctx context.Context, d *FairData, cfg trainer.Config) (*trainer.Report, error) {
	p := privacyOf(cfg)
	fair, err := validatePostproc(cfg, p)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	start := time.Now()
	j, epsilon, seed := PostprocConfigOf(cfg), p.Epsilon, cfg.Seed
	if b := d.BaseFit; b != nil {
		// A private base spent its share of the total ε already.
		if cfg.Algo != PostprocName || j.Base != b.Method || baseEpsilon(cfg) != b.Epsilon {
			return nil, fmt.Errorf("linear: the data were loaded with a private %s base of ε = %g, the configuration asks for base %q at ε = %g",
				b.Method, b.Epsilon, j.Base, baseEpsilon(cfg))
		}
		epsilon -= b.Epsilon
		// The report repeats the split, bins and γ share actually run.
		j.BaseEpsilon = b.Epsilon
		if j.Bins == 0 {
			j.Bins = PrivateBins(SlackRule(j.Slack), d.Train.N(), epsilon)
		}
		if j.GammaShare == GammaShareAuto {
			j.GammaShare = PrivateGammaShare(d.Train.N(), epsilon, fair)
		}
	}
	_, src := dpops.NewRand(seed)
	noise, coins := src.Derive("noise"), src.Derive("predict")
	groups := len(d.GroupNames)
	res := &FairResult{Gamma: j.Gamma, Fairness: fair.String(), AllPairs: j.AllPairs}
	var rec accounting.Receipt
	var probTrain, probTest []float64
	rep := &trainer.Report{Algorithm: string(cfg.Algo), Dataset: d.Name, DType: "float64", Backend: trainer.BackendName(),
		Version: trainer.Version, TrainRecords: d.Train.N(), Train: &metrics.Split{}}
	// The configuration actually run: what reading it back repeats.
	rep.Config = cfg
	rep.Config.Out, rep.Config.Quiet = "", false
	rep.Config.Privacy.Clip, rep.Config.Privacy.Sigma, rep.Config.Privacy.Sampling = 0, 0, ""
	rep.Config.Federation = trainer.FederationConfig{}
	rep.Config = trainer.WithoutSections(rep.Config, PostprocSectionKey)
	if d.BaseFit != nil {
		rep.Config = WithPostprocConfig(rep.Config, j)
	}

	switch cfg.Algo {
	case PostprocName:
		if d.BaseFit == nil || d.BaseFit.Receipt.Delta == 0 {
			rep.Config.Privacy.Delta, rep.Config.Privacy.AllowLargeDelta = 0, false // pure ε-DP
		} else {
			rep.Config.Privacy.Delta = d.BaseFit.Receipt.Delta // the base's δ, which the receipt states
		}
		bins := ThresholdBins(j.Threshold)
		switch {
		case j.Bins > 2 && d.BaseFit != nil:
			// Public edges: quantiles would be statistics of the private scores.
			bins, err = UniformBins(j.Bins)
		case j.Bins > 2:
			bins, err = QuantileBins(d.Train.Scores, j.Bins)
		}
		if err != nil {
			return nil, err
		}
		binTrain, err := bins.Assign(d.Train.Scores)
		if err != nil {
			return nil, err
		}
		binTest, err := bins.Assign(d.Test.Scores)
		if err != nil {
			return nil, err
		}
		pp, err := PostProcess(noise, binTrain, d.Train.Group, d.Train.Label, bins.Len(), groups,
			PostProcessConfig{Gamma: j.Gamma, Epsilon: epsilon, Beta: j.Beta, Fairness: fair, AllPairs: j.AllPairs,
				Slack: SlackRule(j.Slack), SlackZ: j.SlackZ, GammaShare: j.GammaShare, Relation: cellRelation(d.BaseFit, j.AddRemoveCells), Monotone: j.Monotone})
		if err != nil {
			return nil, err
		}
		if rec, err = pp.Receipt(seed); err != nil {
			return nil, err
		}
		if d.BaseFit != nil {
			if rec, err = composeBaseReceipt(d.BaseFit, pp, seed); err != nil {
				return nil, err
			}
		}
		res.PostProcessing, res.Bins = pp, bins.Edges
		baseName := "scores from " + d.Name
		switch {
		case d.BaseFit != nil:
			baseName = d.BaseFit.Description + " without the sensitive attribute"
		case d.Base != nil:
			baseName = "logistic regression without the sensitive attribute"
		}
		rep.Model = fmt.Sprintf("%s, post-processed over %d score bins", baseName, bins.Len())
		// The base classifier on its own, for comparison.
		bt, bs := baseRates(d.Train, j.Threshold, d.GroupNames), baseRates(d.Test, j.Threshold, d.GroupNames)
		res.BaseTrain, res.BaseTest = &bt, &bs
		if pp.Failed {
			res.Failed, res.Reason = true, pp.Reason
			break
		}
		rep.Params = len(pp.Model.P)
		if probTrain, err = pp.Model.ProbPositive(binTrain, d.Train.Group); err != nil {
			return nil, err
		}
		if probTest, err = pp.Model.ProbPositive(binTest, d.Test.Group); err != nil {
			return nil, err
		}
		model := newFairModel(cfg.Algo, d)
		model.Bins, model.Postprocessor = bins.Edges, pp.Model
		if d.Base != nil {
			model.BaseWeights, model.BaseRowBound = d.Base.W, d.Base.RowBound
			rep.Params += len(d.Base.W)
		}
		res.Model = model
	case OracleName:
		delta := p.Delta
		switch {
		case j.BasicComposition:
			delta = 0
		case delta == 0:
			delta = accounting.DefaultDelta(d.Train.N())
		}
		if delta > 0 {
			if err := accounting.CheckDelta(delta, d.Train.N(), p.AllowLargeDelta); err != nil {
				return nil, err
			}
		}
		rep.Config.Privacy.Delta = delta
		or, err := TrainOracle(noise, d.Train.X, d.Train.N(), d.Train.Dim, d.Train.Label, d.Train.Group, groups,
			OracleConfig{Gamma: j.Gamma, Epsilon: epsilon, Delta: delta, Rounds: j.Rounds, Bound: j.Bound,
				LearningRate: j.Eta, CountShare: j.CountShare, Ridge: j.Ridge, Fairness: fair, AllPairs: j.AllPairs,
				Fallback: OracleFallback(j.Fallback)})
		if err != nil {
			return nil, err
		}
		if rec, err = or.Receipt(seed); err != nil {
			return nil, err
		}
		res.Oracle = or
		rep.Model = "uniform mixture of least-squares classifiers (one per round)"
		if or.Failed {
			res.Failed, res.Reason = true, or.Reason
			break
		}
		rep.Params = len(or.Model.Classifiers) * (d.Train.Dim + 1)
		if probTrain, err = or.Model.ProbPositive(d.Train.X, d.Train.N()); err != nil {
			return nil, err
		}
		if probTest, err = or.Model.ProbPositive(d.Test.X, d.Test.N()); err != nil {
			return nil, err
		}
		model := newFairModel(cfg.Algo, d)
		model.Mixture = or.Model
		res.Model = model
	}
	// Post-processing and the oracle write model.json (WriteFairOutputs),
	// which holds the split's record and the preprocessing (not with
	// external scores, which have neither). A
	// private base's receipt brings its own run's items about the test
	// split, the record count and the preprocessing, which name the files a
	// standalone run writes (model.ckpt, metrics.jsonl); the base's test
	// metrics are not released here, and the run's items below state the
	// same records' count and preprocessing for what this run writes.
	rec.NotCovered = slices.DeleteFunc(rec.NotCovered, func(nc accounting.NotCovered) bool {
		return d.BaseFit != nil && (nc.Item == accounting.NotCoveredTestEvaluation || nc.Item == accounting.NotCoveredRecordCount ||
			nc.Item == accounting.NotCoveredPreprocessing)
	})
	trainer.DeclareNotCoveredWith(&rec, d.Train.N(), d.Preprocess, trainer.Config{ReportTrainStats: cfg.ReportTrainStats},
		trainer.NotCoveredOptions{ModelFile: fairModelFile, SplitKept: d.Split != nil})
	if cfg.Algo == PostprocName && rec.Private() && d.BaseFit == nil {
		what := "the external model's scores (Postproc.Scores) are taken as given"
		if d.Base != nil {
			what = "the base logistic regression was fitted on the training records WITHOUT privacy"
		}
		rec.AddNotCovered("base_classifier", what+": only the post-processing of its predictions is ε-DP")
	}
	rep.Privacy = rec
	if !res.Failed {
		expTrain, err := ExpectedMetrics(probTrain, d.Train.Label, d.Train.Group, groups)
		if err != nil {
			return nil, err
		}
		expTest, err := ExpectedMetrics(probTest, d.Test.Label, d.Test.Group, groups)
		if err != nil {
			return nil, err
		}
		res.ExpectedTrain, res.ExpectedTest = &expTrain, &expTest
		// The randomised predictions a user of the model gets.
		for _, p := range []struct {
			prob  []float64
			split *FairSplit
			dst   *metrics.Split
		}{{probTrain, d.Train, rep.Train}, {probTest, d.Test, &rep.Test}} {
			pred, err := SamplePredictions(coins, p.prob)
			if err != nil {
				return nil, err
			}
			*p.dst = metrics.Evaluate(pred, p.split.Label, p.split.Group, 2, d.GroupNames)
		}
	}
	// Exact statistics of the private training split (the base classifier's
	// and the post-processed model's cell rates) would let a reader recover
	// what the noise protects: a private run leaves them out unless asked.
	private := !math.IsInf(epsilon, 1)
	if private && !cfg.ReportTrainStats {
		res.BaseTrain, res.ExpectedTrain, rep.Train = nil, nil, nil
	} else {
		rep.TrainNotPrivate = private
	}
	if res.Failed {
		rep.Train = nil
	} else {
		rep.Warnings = trainer.Warnings(rep.Test, d.Test.Label, d.GroupNames)
	}
	if pp := res.PostProcessing; pp != nil && !pp.Failed && pp.Gamma+pp.Slack >= 1 {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("the privacy slack %.3g makes the fairness constraints vacuous "+
			"(γ + slack ≥ 1 bounds nothing between rates in [0, 1]): the result is the unconstrained classifier, not a fair one; "+
			"groups this small need a larger ε or fewer groups", pp.Slack))
	}
	rep.Extra = trainer.Extras{"jagielski": res}
	rep.Seconds = time.Since(start).Seconds()
	return rep, nil
}

// baseRates scores the base prediction Ŷ = [score ≥ threshold].
func baseRates(s *FairSplit, threshold float64, groupNames []string) metrics.Split {
	pred := make([]int, s.N())
	for i, v := range s.Scores {
		if v >= threshold {
			pred[i] = 1
		}
	}
	return metrics.Evaluate(pred, s.Label, s.Group, 2, groupNames)
}

// ErrFairFailed wraps the reason of a private LP or oracle game that
// failed: the report is written and says so, and the budget was spent.
var ErrFairFailed = errors.New("linear: the private post-processing LP or oracle game failed")

// RunPostproc is the whole pipeline in one call: LoadFairData, RunFair,
// and with cfg.Out set WriteFairOutputs. A failed private LP or oracle
// game returns the report (written, saying so) and an error wrapping
// ErrFairFailed.
func RunPostproc(ctx context.Context, cfg trainer.Config) (*trainer.Report, error) {
	d, err := LoadFairData(cfg)
	if err != nil {
		return nil, err
	}
	rep, err := RunFair(ctx, d, cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Out != "" {
		if err := WriteFairOutputs(cfg.Out, rep); err != nil {
			return nil, err
		}
	}
	return rep, FairFailure(rep)
}

// FairFailure is the error of a report whose private LP or oracle game
// failed (wrapping ErrFairFailed), else nil.
func FairFailure(rep *trainer.Report) error {
	if res := FairExtra(rep); res != nil && res.Failed {
		return fmt.Errorf("%w (%s): %s (the privacy budget was spent; the report says so)", ErrFairFailed, rep.Algorithm, res.Reason)
	}
	return nil
}

// fairModelFile is the model file WriteFairOutputs writes.
const fairModelFile = "model.json"

// WriteFairOutputs writes report.json and, unless the run failed,
// model.json (FairModel, with the report's receipt) to dir atomically.
func WriteFairOutputs(dir string, rep *trainer.Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return trainer.FieldErrors{{Field: "Out", Msg: fmt.Sprintf("%s: %v", dir, err)}}
	}
	if err := atomicfile.WriteJSON(filepath.Join(dir, "report.json"), rep); err != nil {
		return err
	}
	if res := FairExtra(rep); res != nil && res.Model != nil {
		// The report's receipt, which is the whole search's for a tuned run.
		m := *res.Model
		m.Description, m.Privacy = rep.Model, &rep.Privacy
		return atomicfile.WriteJSON(filepath.Join(dir, fairModelFile), &m)
	}
	return nil
}
