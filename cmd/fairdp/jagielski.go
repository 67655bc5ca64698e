package main

// `fairdp train --algo postproc|oracle` and `fairdp sweep --algo
// postproc|oracle`: Jagielski et al.'s DP post-processing and DP oracle
// learner (REFERENCE §6) from the command line, with report.json in fairdp's
// results contract and the error-versus-violation sweep of the paper's
// Figure 1.

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"fairdp/atomicfile"
	"fairdp/dpops"
	"fairdp/dpops/accounting"
	"fairdp/linear"
	"fairdp/loaders"
	"fairdp/metrics"
	"fairdp/trainer"
)

// jagielskiConfig holds the flags of both commands.
type jagielskiConfig struct {
	data     trainer.Config // data set, split and seed (dataFlags' subset)
	algo     string
	gamma    float64
	epsilon  float64
	delta    float64 // oracle: < 0 means accounting.DefaultDelta of the training records
	largeOK  bool    // accept δ ≥ 1/n
	fairness string
	allPairs bool
	out      string
	quiet    bool
	// trainStats keeps exact training-split statistics in a private run's
	// output (marked not private); by default they are left out.
	trainStats bool

	// Post-processing.
	beta      float64
	bins      int
	threshold float64
	l2        float64
	scores    jagielskiScoreColumns

	// Oracle learner.
	rounds            int
	bound, eta, share float64
	ridge             float64
}

// jagielskiScoreColumns says where a post-processing run reads an external model's
// scores (--scores FILE).
type jagielskiScoreColumns struct {
	file, score, group, label, split, positive string
}

func defaultJagielskiConfig() jagielskiConfig {
	d := trainer.Defaults()
	return jagielskiConfig{
		data: d, gamma: 0.05, epsilon: 1, delta: -1, fairness: "eo",
		beta: linear.DefaultBeta, bins: 2, threshold: 0.5, l2: 1e-4,
		scores: jagielskiScoreColumns{score: "score", group: "group", label: "label", positive: "1"},
		rounds: linear.DefaultOracleRounds, bound: linear.DefaultOracleBound, eta: linear.DefaultOracleLearningRate,
		share: linear.DefaultCountShare,
	}
}

// register adds the flags shared by train and sweep (not --gamma and
// --epsilon, whose forms differ).
func (c *jagielskiConfig) register(fs *flag.FlagSet) {
	d := &c.data
	fs.StringVar(&c.algo, "algo", c.algo, "postproc (DP post-processing) or oracle (DP oracle learner)")
	fs.StringVar(&d.Dataset, "dataset", d.Dataset, "built-in tabular data set ("+strings.Join(loaders.BuiltinNames(), ", ")+") or a CSV path")
	fs.StringVar(&d.Schema, "schema", d.Schema, "schema JSON for a CSV --dataset")
	fs.StringVar(&d.DataDir, "data-dir", d.DataDir, "directory of the built-in data (default $FAIRDP_DATA, then ../shared/data; Adult is embedded)")
	fs.Float64Var(&d.TrainFrac, "train-frac", d.TrainFrac, "fraction of records in the training split")
	fs.IntVar(&d.Limit, "limit", d.Limit, "use at most this many records (0: all), for quick runs")
	fs.Var(seedFlag{&d.Seed}, "seed", "seed for a bit-reproducible run (default: crypto-seeded, not reproducible)")
	fs.StringVar(&c.fairness, "fairness", c.fairness, "eo (equal false- and true-positive rates) or fpr (equal false-positive rates)")
	fs.BoolVar(&c.allPairs, "all-pairs", c.allPairs, "constrain every pair of groups, not every group against group 0 (the paper); same for two groups")
	fs.Float64Var(&c.delta, "delta", c.delta, "oracle: δ of advanced composition (-1: 1/n² of the training records; 0: basic composition, pure ε-DP)")
	fs.BoolVar(&c.largeOK, "allow-large-delta", c.largeOK, "oracle: accept δ ≥ 1/n (a weak guarantee; the receipt says so)")
	fs.StringVar(&c.out, "out", c.out, "output directory")
	fs.BoolVar(&c.quiet, "quiet", c.quiet, "print only the summary")
	fs.BoolVar(&c.trainStats, "report-train-stats", c.trainStats, "also report exact statistics of the private training split (marked NOT PRIVATE)")
	fs.Float64Var(&c.beta, "beta", c.beta, "postproc: failure probability of the LP's slack")
	fs.IntVar(&c.bins, "bins", c.bins, "postproc: score bins; 2 is the paper's Ŷ = [score ≥ --threshold], more are score quantiles")
	fs.Float64Var(&c.threshold, "threshold", c.threshold, "postproc: score threshold of the base prediction Ŷ (with --bins 2)")
	fs.Float64Var(&c.l2, "l2", c.l2, "postproc: L2 penalty of the base logistic regression")
	fs.StringVar(&c.scores.file, "scores", c.scores.file, "postproc: CSV of an external model's scores (one row per record, with a header) instead of --dataset")
	fs.StringVar(&c.scores.score, "score-column", c.scores.score, "postproc: --scores column holding the score")
	fs.StringVar(&c.scores.group, "group-column", c.scores.group, "postproc: --scores column holding the sensitive group")
	fs.StringVar(&c.scores.label, "label-column", c.scores.label, "postproc: --scores column holding the true label")
	fs.StringVar(&c.scores.positive, "positive", c.scores.positive, "postproc: label value of the positive class in --scores (others are negative; with the default 1, labels must be 0 or 1)")
	fs.StringVar(&c.scores.split, "split-column", c.scores.split, "postproc: --scores column saying train or test (default: a seeded --train-frac split)")
	fs.IntVar(&c.rounds, "rounds", c.rounds, "oracle: rounds T of the auditor–learner game")
	fs.Float64Var(&c.bound, "bound", c.bound, "oracle: B, the largest ‖λ‖₁ of the auditor's multipliers")
	fs.Float64Var(&c.eta, "eta", c.eta, "oracle: exponentiated-gradient learning rate")
	fs.Float64Var(&c.share, "count-share", c.share, "oracle: fraction of ε spent on the group-label counts")
	fs.Float64Var(&c.ridge, "ridge", c.ridge, "oracle: ridge of the least-squares learner (0: 1e-4 per record)")
}

// validate checks what the flag types do not.
func (c *jagielskiConfig) validate() (linear.Fairness, error) {
	var errs []string
	if c.algo != "postproc" && c.algo != "oracle" {
		errs = append(errs, fmt.Sprintf("--algo must be postproc or oracle (got %q)", c.algo))
	}
	f, err := linear.ParseFairness(c.fairness)
	if err != nil {
		errs = append(errs, "--fairness: "+err.Error())
	}
	if c.scores.file != "" && c.algo == "oracle" {
		errs = append(errs, "--scores works with --algo postproc only (the oracle learner trains on features)")
	}
	if c.bins < 2 {
		errs = append(errs, fmt.Sprintf("--bins must be ≥ 2 (got %d)", c.bins))
	}
	if !(c.data.TrainFrac > 0 && c.data.TrainFrac < 1) {
		errs = append(errs, fmt.Sprintf("--train-frac must be in (0,1) (got %v)", c.data.TrainFrac))
	}
	if c.data.Limit < 0 {
		errs = append(errs, "--limit must be ≥ 0")
	}
	if len(errs) > 0 {
		return 0, errors.New(strings.Join(errs, "; "))
	}
	return f, nil
}

// jagielskiData is a loaded data set: features (or external scores), labels
// and groups for both splits.
type jagielskiData struct {
	name        string
	groupNames  []string
	train, test *jagielskiSplit
	preprocess  json.RawMessage // the preprocessing fitted on the training split (nil with --scores)
}

type jagielskiSplit struct {
	x            []float64 // n × dim (nil with --scores)
	dim          int
	scores       []float64 // base-classifier scores (postproc)
	label, group []int
}

func (s *jagielskiSplit) n() int { return len(s.label) }

// loadJagielski loads the data set the flags name and, for post-processing,
// fits the base classifier (or reads the external scores). r splits the data.
func loadJagielski(c *jagielskiConfig, r *rand.Rand) (*jagielskiData, *linear.LinearClassifier, error) {
	if c.scores.file != "" {
		d, err := readJagielskiScores(c.scores, c.data.TrainFrac, r)
		return d, nil, err
	}
	dc := c.data
	dc.Algo = c.algo
	train, test, prep, err := trainer.LoadData(dc, r)
	if err != nil {
		return nil, nil, err
	}
	if train.X == nil {
		return nil, nil, fmt.Errorf("data set %s is not tabular: %s needs features", train.Name, c.algo)
	}
	if len(train.LabelNames) != 2 {
		return nil, nil, fmt.Errorf("data set %s has %d classes; Jagielski et al.'s algorithms are for binary labels", train.Name, len(train.LabelNames))
	}
	if len(train.GroupNames) < 2 {
		return nil, nil, fmt.Errorf("data set %s has %d sensitive group(s); fairness needs at least 2", train.Name, len(train.GroupNames))
	}
	d := &jagielskiData{name: train.Name, groupNames: train.GroupNames, preprocess: prep}
	split := func(ds *loaders.Dataset) *jagielskiSplit {
		return &jagielskiSplit{x: ds.X, dim: ds.Dim, label: ds.Labels, group: ds.Groups}
	}
	d.train, d.test = split(train), split(test)
	if c.algo != "postproc" {
		return d, nil, nil
	}
	// The base classifier never sees the sensitive attribute: loaders keep
	// it out of the features.
	base, err := linear.FitLogistic(d.train.x, d.train.n(), d.train.dim, d.train.label, c.l2)
	if err != nil {
		return nil, nil, fmt.Errorf("base classifier: %w", err)
	}
	for _, s := range []*jagielskiSplit{d.train, d.test} {
		if s.scores, err = base.Probabilities(s.x, s.n()); err != nil {
			return nil, nil, err
		}
	}
	return d, &base, nil
}

// readJagielskiScores reads an external model's scores with groups and labels.
func readJagielskiScores(sc jagielskiScoreColumns, trainFrac float64, r *rand.Rand) (*jagielskiData, error) {
	tab, err := loaders.ReadCSV(sc.file, loaders.CSVFormat{Header: true})
	if err != nil {
		return nil, err
	}
	col := func(name, flagName string, required bool) (int, error) {
		if name == "" && !required {
			return -1, nil
		}
		j := tab.ColumnIndex(name)
		if j < 0 {
			return 0, &loaders.DataError{File: sc.file, Msg: fmt.Sprintf("no column %q (set %s); the header has %s",
				name, flagName, strings.Join(tab.Columns, ", "))}
		}
		return j, nil
	}
	js, err := col(sc.score, "--score-column", true)
	if err != nil {
		return nil, err
	}
	jg, err := col(sc.group, "--group-column", true)
	if err != nil {
		return nil, err
	}
	jl, err := col(sc.label, "--label-column", true)
	if err != nil {
		return nil, err
	}
	jt, err := col(sc.split, "--split-column", false)
	if err != nil {
		return nil, err
	}
	if tab.Len() == 0 {
		return nil, &loaders.DataError{File: sc.file, Msg: "no data rows"}
	}
	bad := func(i int, field, msg string) error {
		return &loaders.DataError{File: sc.file, Line: tab.Line[i], Field: field, Msg: msg}
	}
	var groupNames []string
	for i, row := range tab.Cells {
		if g := row[jg]; !slices.Contains(groupNames, g) {
			if g == "" {
				return nil, bad(i, sc.group, "empty group, expected a group name")
			}
			groupNames = append(groupNames, g)
		}
	}
	slices.Sort(groupNames)
	if len(groupNames) < 2 {
		return nil, &loaders.DataError{File: sc.file, Field: sc.group, Msg: fmt.Sprintf("only group %q; fairness needs at least 2", groupNames[0])}
	}
	all := &jagielskiSplit{}
	isTrain := make([]bool, tab.Len())
	for i, row := range tab.Cells {
		s, err := strconv.ParseFloat(row[js], 64)
		if err != nil || math.IsNaN(s) || math.IsInf(s, 0) {
			return nil, bad(i, sc.score, fmt.Sprintf("%q is not a finite number", row[js]))
		}
		var y int
		switch v := row[jl]; {
		case v == sc.positive:
			y = 1
		case sc.positive == "1" && v != "0":
			return nil, bad(i, sc.label, fmt.Sprintf("%q, expected 0 or 1 (or set --positive to the positive label)", v))
		}
		if jt >= 0 {
			switch strings.ToLower(row[jt]) {
			case "train":
				isTrain[i] = true
			case "test":
			default:
				return nil, bad(i, sc.split, fmt.Sprintf("%q, expected train or test", row[jt]))
			}
		}
		all.scores = append(all.scores, s)
		all.label = append(all.label, y)
		all.group = append(all.group, slices.Index(groupNames, row[jg]))
	}
	if jt < 0 {
		perm := r.Perm(tab.Len())
		for _, i := range perm[:int(trainFrac*float64(tab.Len()))] {
			isTrain[i] = true
		}
	}
	d := &jagielskiData{name: filepath.Base(sc.file), groupNames: groupNames, train: &jagielskiSplit{}, test: &jagielskiSplit{}}
	for i := range isTrain {
		s := d.test
		if isTrain[i] {
			s = d.train
		}
		s.scores = append(s.scores, all.scores[i])
		s.label = append(s.label, all.label[i])
		s.group = append(s.group, all.group[i])
	}
	if d.train.n() == 0 || d.test.n() == 0 {
		return nil, &loaders.DataError{File: sc.file, Msg: fmt.Sprintf("the split left %d training and %d test rows; both must be non-empty",
			d.train.n(), d.test.n())}
	}
	return d, nil
}

// jagielskiResult is one run: the report's contents and, for the sweep, the
// numbers of one CSV row.
type jagielskiResult struct {
	report        trainer.Report
	model         any // written to model.json
	failed        bool
	reason        string
	expTrain      linear.ExpectedRates
	expTest       linear.ExpectedRates
	privacyString string
	// noTrain: the training-split statistics were left out (a private run
	// without --report-train-stats).
	noTrain bool
}

// runJagielskiOnce runs the algorithm on loaded data with the given γ, ε and noise
// seed (nil: crypto-seeded). Failures of the private LP are results, not
// errors.
func runJagielskiOnce(c *jagielskiConfig, fair linear.Fairness, d *jagielskiData, base *linear.LinearClassifier,
	gamma, epsilon float64, seed *uint64) (*jagielskiResult, error) {
	start := time.Now()
	_, src := dpops.NewRand(seed)
	noise, coins := src.Derive("noise"), src.Derive("predict")
	groups := len(d.groupNames)
	res := &jagielskiResult{}
	var rec accounting.Receipt
	var probTrain, probTest []float64
	extra := map[string]any{"gamma": gamma, "fairness": fair.String(), "all_pairs": c.allPairs}
	if math.IsInf(epsilon, 1) {
		extra["epsilon"] = "inf"
	} else {
		extra["epsilon"] = epsilon
	}
	rep := &res.report
	rep.Algorithm, rep.Dataset, rep.DType, rep.Backend, rep.Version = c.algo, d.name, "float64", trainer.BackendName(), trainer.Version
	rep.TrainRecords = d.train.n()
	rep.Train = &metrics.Split{}

	switch c.algo {
	case "postproc":
		bins := linear.ThresholdBins(c.threshold)
		if c.bins > 2 {
			var err error
			if bins, err = linear.QuantileBins(d.train.scores, c.bins); err != nil {
				return nil, err
			}
		}
		binTrain, err := bins.Assign(d.train.scores)
		if err != nil {
			return nil, err
		}
		binTest, err := bins.Assign(d.test.scores)
		if err != nil {
			return nil, err
		}
		pp, err := linear.PostProcess(noise, binTrain, d.train.group, d.train.label, bins.Len(), groups,
			linear.PostProcessConfig{Gamma: gamma, Epsilon: epsilon, Beta: c.beta, Fairness: fair, AllPairs: c.allPairs})
		if err != nil {
			return nil, err
		}
		if rec, err = pp.Receipt(seed); err != nil {
			return nil, err
		}
		extra["postprocessing"] = pp
		extra["bins"] = bins.Edges
		baseName := "scores from " + d.name
		if base != nil {
			baseName = "logistic regression without the sensitive attribute"
		}
		rep.Model = fmt.Sprintf("%s, post-processed over %d score bins", baseName, bins.Len())
		// The base classifier on its own, for comparison.
		extra["base_train"] = evaluateJagielskiBase(d.train, c.threshold, d.groupNames)
		extra["base_test"] = evaluateJagielskiBase(d.test, c.threshold, d.groupNames)
		if pp.Failed {
			res.failed, res.reason = true, pp.Reason
			break
		}
		rep.Params = len(pp.Model.P)
		if probTrain, err = pp.Model.ProbPositive(binTrain, d.train.group); err != nil {
			return nil, err
		}
		if probTest, err = pp.Model.ProbPositive(binTest, d.test.group); err != nil {
			return nil, err
		}
		model := map[string]any{"bins": bins.Edges, "groups": d.groupNames, "postprocessor": pp.Model}
		if base != nil {
			model["base_logistic_weights"] = base.W
			rep.Params += len(base.W)
		}
		res.model = model
	case "oracle":
		delta := c.delta
		if delta < 0 {
			delta = accounting.DefaultDelta(d.train.n())
		}
		if delta > 0 {
			if err := accounting.CheckDelta(delta, d.train.n(), c.largeOK); err != nil {
				return nil, err
			}
		}
		or, err := linear.TrainOracle(noise, d.train.x, d.train.n(), d.train.dim, d.train.label, d.train.group, groups,
			linear.OracleConfig{Gamma: gamma, Epsilon: epsilon, Delta: delta, Rounds: c.rounds, Bound: c.bound,
				LearningRate: c.eta, CountShare: c.share, Ridge: c.ridge, Fairness: fair, AllPairs: c.allPairs})
		if err != nil {
			return nil, err
		}
		if rec, err = or.Receipt(seed); err != nil {
			return nil, err
		}
		extra["oracle"] = or
		rep.Model = "uniform mixture of least-squares classifiers (one per round)"
		if or.Failed {
			res.failed, res.reason = true, or.Reason
			break
		}
		rep.Params = len(or.Model.Classifiers) * (d.train.dim + 1)
		if probTrain, err = or.Model.ProbPositive(d.train.x, d.train.n()); err != nil {
			return nil, err
		}
		if probTest, err = or.Model.ProbPositive(d.test.x, d.test.n()); err != nil {
			return nil, err
		}
		res.model = map[string]any{"groups": d.groupNames, "mixture": or.Model}
	}
	trainer.DeclareNotCovered(&rec, d.train.n(), d.preprocess, trainer.Config{ReportTrainStats: c.trainStats})
	if c.algo == "postproc" && rec.Private() {
		what := "the external model's scores (--scores) are taken as given"
		if base != nil {
			what = "the base logistic regression was fitted on the training records WITHOUT privacy"
		}
		rec.AddNotCovered("base_classifier", what+": only the post-processing of its predictions is ε-DP")
	}
	rep.Privacy = rec
	res.privacyString = rec.String()
	if res.failed {
		extra["failed"], extra["reason"] = true, res.reason
	} else {
		var err error
		if res.expTrain, err = linear.ExpectedMetrics(probTrain, d.train.label, d.train.group, groups); err != nil {
			return nil, err
		}
		if res.expTest, err = linear.ExpectedMetrics(probTest, d.test.label, d.test.group, groups); err != nil {
			return nil, err
		}
		extra["expected_train"], extra["expected_test"] = res.expTrain, res.expTest
		// The randomised predictions a user of the model gets.
		for _, p := range []struct {
			prob  []float64
			split *jagielskiSplit
			dst   *metrics.Split
		}{{probTrain, d.train, rep.Train}, {probTest, d.test, &rep.Test}} {
			pred, err := linear.SamplePredictions(coins, p.prob)
			if err != nil {
				return nil, err
			}
			*p.dst = metrics.Evaluate(pred, p.split.label, p.split.group, 2, d.groupNames)
		}
	}
	// Exact statistics of the private training split (the base classifier's
	// and the post-processed model's cell rates) would let a reader recover
	// what the noise protects: a private run leaves them out unless asked.
	private := !math.IsInf(epsilon, 1)
	if private && !c.trainStats {
		delete(extra, "base_train")
		delete(extra, "expected_train")
		rep.Train, res.expTrain, res.noTrain = nil, linear.ExpectedRates{}, true
	} else {
		rep.TrainNotPrivate = private
	}
	if res.failed {
		rep.Train = nil
	}
	if !res.failed {
		rep.Warnings = trainer.Warnings(rep.Test, d.test.label, d.groupNames)
	}
	if pp, ok := extra["postprocessing"].(*linear.PostProcessResult); ok && !pp.Failed && gamma+pp.Slack >= 1 {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("the privacy slack %.3g makes the fairness constraints vacuous "+
			"(γ + slack ≥ 1 bounds nothing between rates in [0, 1]): the result is the unconstrained classifier, not a fair one; "+
			"groups this small need a larger ε or fewer groups", pp.Slack))
	}
	rep.Extra = extra
	rep.Seconds = time.Since(start).Seconds()
	return res, nil
}

// evaluateJagielskiBase scores the base prediction Ŷ = [score ≥ threshold].
func evaluateJagielskiBase(s *jagielskiSplit, threshold float64, groupNames []string) metrics.Split {
	pred := make([]int, s.n())
	for i, v := range s.scores {
		if v >= threshold {
			pred[i] = 1
		}
	}
	return metrics.Evaluate(pred, s.label, s.group, 2, groupNames)
}

// runJagielski is `fairdp train --algo postproc|oracle ...`; args are the
// full train arguments.
func runJagielski(args []string, stdout, stderr io.Writer) error {
	c := defaultJagielskiConfig()
	fs := newFlagSet("train", "train --algo postproc|oracle --gamma G --epsilon E [--dataset adult] [--fairness eo|fpr] [--seed S] [--out D]", stderr)
	c.register(fs)
	fs.Float64Var(&c.gamma, "gamma", c.gamma, "allowed difference γ of the equalised rates")
	fs.Var(epsilonFlag{&c.epsilon}, "epsilon", "privacy budget ε for the sensitive attribute (inf: not private)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	fair, err := c.validate()
	if err != nil {
		return err
	}
	if !(c.gamma >= 0) || math.IsInf(c.gamma, 1) {
		return fmt.Errorf("--gamma must be a finite number ≥ 0 (got %v)", c.gamma)
	}
	_, src := dpops.NewRand(c.data.Seed)
	d, base, err := loadJagielski(&c, src.Derive("data"))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "fairdp %s: %s on %s (%d train / %d test records, %d groups), γ = %g, ε = %s, %s\n",
		versionString(), c.algo, d.name, d.train.n(), d.test.n(), len(d.groupNames), c.gamma, epsilonFlag{&c.epsilon}, src)
	res, err := runJagielskiOnce(&c, fair, d, base, c.gamma, c.epsilon, c.data.Seed)
	if err != nil {
		return err
	}
	if c.out != "" {
		if err := os.MkdirAll(c.out, 0o755); err != nil {
			return fmt.Errorf("--out %s: %w", c.out, err)
		}
		if err := atomicfile.WriteJSON(filepath.Join(c.out, "report.json"), res.report); err != nil {
			return err
		}
		if res.model != nil {
			if err := atomicfile.WriteJSON(filepath.Join(c.out, "model.json"), res.model); err != nil {
				return err
			}
		}
	}
	if res.failed {
		fmt.Fprintf(stdout, "privacy: %s\n", res.privacyString)
		return fmt.Errorf("%s failed: %s (the privacy budget was spent; the report says so)", c.algo, res.reason)
	}
	rep := res.report
	if !c.quiet {
		if rep.Train != nil {
			fmt.Fprintln(stdout)
			metrics.WriteTable(stdout, trainTableTitle("train (randomised predictions)", rep.TrainNotPrivate), *rep.Train)
		}
		fmt.Fprintln(stdout)
		metrics.WriteTable(stdout, "test (randomised predictions)", rep.Test)
		fmt.Fprintln(stdout)
	}
	fmt.Fprint(stdout, "expected over the classifier's coins: ")
	if !res.noTrain {
		fmt.Fprintf(stdout, "train error %.4f EO violation %.4f; ", res.expTrain.Error, res.expTrain.EOViolation)
	}
	fmt.Fprintf(stdout, "test error %.4f EO violation %.4f\n", res.expTest.Error, res.expTest.EOViolation)
	fmt.Fprintf(stdout, "%s, %s, %.1f s\n", rep.Algorithm, rep.Model, rep.Seconds)
	if err := rep.Privacy.WriteText(stdout); err != nil {
		return err
	}
	printWarnings(stdout, rep.Warnings)
	if c.out != "" {
		fmt.Fprintf(stdout, "wrote %s\n", filepath.Join(c.out, "report.json"))
	}
	return nil
}

// jagielskiSweepRow is one line of sweep.csv.
type jagielskiSweepRow struct {
	epsilon, gamma float64
	seed           uint64
	res            *jagielskiResult
}

// runJagielskiSweep is `fairdp sweep --algo postproc|oracle --gamma g1,g2,..
// --epsilon e1,..,inf --seeds N --out D`: every (ε, γ) with N noise seeds,
// sweep.csv with one row per run and pareto.png with expected test error
// against expected test EO violation, one curve per ε (the paper's
// Figure 1). The data split (and the base classifier) come from --seed
// (default 0); run i of a cell uses noise seed --seed + i.
func runJagielskiSweep(args []string, stdout, stderr io.Writer) error {
	c := defaultJagielskiConfig()
	gammas := []float64{0, 0.01, 0.02, 0.05, 0.1}
	epsilons := []float64{1, 5, 20, math.Inf(1)}
	seeds, workers := 5, runtime.GOMAXPROCS(0)
	fs := newFlagSet("sweep", "sweep --algo postproc|oracle --gamma g1,g2,.. --epsilon e1,..,inf --seeds N --out D", stderr)
	c.register(fs)
	fs.Var(floatsFlag{p: &gammas, unique: true, check: nonNegative}, "gamma", "values of γ, comma-separated")
	fs.Var(floatsFlag{p: &epsilons, allowInf: true, unique: true, check: positiveOrInf}, "epsilon", "values of ε, comma-separated (inf: not private)")
	fs.IntVar(&seeds, "seeds", seeds, "noise seeds per (ε, γ)")
	fs.IntVar(&workers, "workers", workers, "runs in parallel")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	fair, err := c.validate()
	if err != nil {
		return err
	}
	switch {
	case c.out == "":
		return errors.New("sweep: --out D is required (sweep.csv and pareto.png go there)")
	case seeds < 1 || workers < 1:
		return fmt.Errorf("--seeds and --workers must be ≥ 1 (got %d, %d)", seeds, workers)
	case len(gammas) == 0 || len(epsilons) == 0:
		return errors.New("sweep: --gamma and --epsilon need at least one value each")
	}
	base := uint64(0)
	if c.data.Seed != nil {
		base = *c.data.Seed
	}
	_, src := dpops.NewRand(&base)
	d, baseModel, err := loadJagielski(&c, src.Derive("data"))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.out, 0o755); err != nil {
		return fmt.Errorf("--out %s: %w", c.out, err)
	}
	var rows []jagielskiSweepRow
	for _, e := range epsilons {
		for _, g := range gammas {
			for i := range seeds {
				rows = append(rows, jagielskiSweepRow{epsilon: e, gamma: g, seed: base + uint64(i) + 1})
			}
		}
	}
	fmt.Fprintf(stdout, "fairdp sweep: %s on %s (%d train / %d test), %d ε × %d γ × %d seeds = %d runs, %d workers\n",
		c.algo, d.name, d.train.n(), d.test.n(), len(epsilons), len(gammas), seeds, len(rows), workers)
	start := time.Now()
	errs := make([]error, len(rows))
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(workers, len(rows)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				seed := rows[i].seed
				rows[i].res, errs[i] = runJagielskiOnce(&c, fair, d, baseModel, rows[i].gamma, rows[i].epsilon, &seed)
			}
		}()
	}
	for i := range rows {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := writeJagielskiSweep(filepath.Join(c.out, "sweep.csv"), c.algo, rows); err != nil {
		return err
	}
	curves := jagielskiCurves(rows, epsilons, gammas)
	title := fmt.Sprintf("%s on %s: expected test error vs EO violation", c.algo, d.name)
	if err := metrics.ParetoPlot(filepath.Join(c.out, "pareto.png"), title, "equalized-odds violation (test)", "error (test)", curves); err != nil {
		return err
	}
	if !c.quiet {
		for _, cv := range curves {
			fmt.Fprintf(stdout, "%s:", cv.Name)
			for i, p := range cv.Points {
				fmt.Fprintf(stdout, "  γ=%g error %.4f EO %.4f", gammas[i], p.Y, p.X)
			}
			fmt.Fprintln(stdout)
		}
	}
	failed := 0
	for _, r := range rows {
		if r.res.failed {
			failed++
		}
	}
	fmt.Fprintf(stdout, "%d runs (%d failed) in %.1f s; wrote %s and %s\n", len(rows), failed, time.Since(start).Seconds(),
		filepath.Join(c.out, "sweep.csv"), filepath.Join(c.out, "pareto.png"))
	return nil
}

// jagielskiCurves averages each (ε, γ) cell over its successful seeds (error
// bars: standard deviations). Cells where every seed failed are left out,
// so a curve may have fewer points than there are γ values.
func jagielskiCurves(rows []jagielskiSweepRow, epsilons, gammas []float64) []metrics.Curve {
	var curves []metrics.Curve
	for _, e := range epsilons {
		cv := metrics.Curve{Name: "ε = " + jagielskiEpsilon(e)}
		for _, g := range gammas {
			var xs, ys []float64
			for _, r := range rows {
				if r.epsilon == e && r.gamma == g && !r.res.failed {
					xs, ys = append(xs, r.res.expTest.EOViolation), append(ys, r.res.expTest.Error)
				}
			}
			if len(xs) == 0 {
				continue
			}
			mx, sx := meanSD(xs)
			my, sy := meanSD(ys)
			cv.Points = append(cv.Points, metrics.Point{X: mx, Y: my, XErr: sx, YErr: sy})
		}
		curves = append(curves, cv)
	}
	return curves
}

func jagielskiEpsilon(e float64) string {
	if math.IsInf(e, 1) {
		return "inf"
	}
	return strconv.FormatFloat(e, 'g', -1, 64)
}

// jagielskiSweepHeader is sweep.csv's header: realised (sampled) and expected
// metrics of every run.
var jagielskiSweepHeader = []string{"algorithm", "epsilon", "gamma", "seed", "failed", "train_error", "train_eo", "test_error",
	"test_eo", "expected_train_error", "expected_train_eo", "expected_test_error", "expected_test_eo", "epsilon_spent", "reason"}

func writeJagielskiSweep(path, algo string, rows []jagielskiSweepRow) error {
	return atomicfile.Write(path, func(out io.Writer) error {
		w := csv.NewWriter(out)
		w.Write(jagielskiSweepHeader)
		f := func(x float64) string { return strconv.FormatFloat(x, 'g', 8, 64) }
		for _, r := range rows {
			res := r.res
			spent := "inf"
			if res.report.Privacy.Epsilon != nil {
				spent = f(*res.report.Privacy.Epsilon)
			}
			rec := []string{algo, jagielskiEpsilon(r.epsilon), f(r.gamma), strconv.FormatUint(r.seed, 10), strconv.FormatBool(res.failed)}
			switch rep := res.report; {
			case res.failed:
				rec = append(rec, "", "", "", "", "", "", "", "")
			case res.noTrain: // a private run's training statistics are not released
				rec = append(rec, "", "", f(rep.Test.Error), f(rep.Test.EOViolation),
					"", "", f(res.expTest.Error), f(res.expTest.EOViolation))
			default:
				rec = append(rec, f(rep.Train.Error), f(rep.Train.EOViolation), f(rep.Test.Error), f(rep.Test.EOViolation),
					f(res.expTrain.Error), f(res.expTrain.EOViolation), f(res.expTest.Error), f(res.expTest.EOViolation))
			}
			w.Write(append(rec, spent, res.reason))
		}
		w.Flush()
		return w.Error()
	})
}
