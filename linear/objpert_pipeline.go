package linear

// `fairdp train --algo objpert` as one library call (trainer pipeline
// "objpert"): load and split the data as every run does, fit logistic
// regression by objective perturbation (least squares for a regression
// target), score it with the same evaluation as the SGD family, and write
// report.json and model.ckpt (a zoo "logistic" or "linear-regression"
// checkpoint, so `fairdp eval` scores it like any other).

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"time"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/loaders"
	"github.com/fairdp/fairdp/models"
	"github.com/fairdp/fairdp/trainer"
)

// DefaultRowBound is the row-norm bound B used when none is given:
// √columns for a table whose preprocessing encodes that many source columns
// (loaders.Preprocessor.Columns), else √d for d encoded features. Both are
// public (the schema and the category lists, which the receipt lists as not
// covered), never the rows' norms. After fairdp's preprocessing (z-scored
// numeric columns, one-hot categories) a row's squared norm is on average
// the number of source columns: one-hot blocks make it far below d (Adult:
// 12 columns, 102 features), and since the released model clips the rows
// it scores as it clipped its training rows, a bound near the typical norm
// costs little signal and buys less noise (the sweep in
// bench/results/tabular.md, "Clipping at prediction": Adult at ε = 1 .1645
// at √d against .1553 at 3.5).
func DefaultRowBound(dim, columns int) float64 {
	if columns > 0 && columns < dim {
		return math.Sqrt(float64(columns))
	}
	return math.Sqrt(float64(dim))
}

// ObjPertReport is report.json's extra.objpert: the constants of the
// mechanism (all public) and, only when training statistics are reported,
// how many training rows were clipped.
type ObjPertReport struct {
	Method string `json:"method"`
	// Mechanism is MechanismPure or MechanismGaussian (absent without
	// privacy); Choice says why MechanismAuto picked it, from public facts
	// only (absent when the settings named the mechanism).
	Mechanism string `json:"mechanism,omitempty"`
	Choice    string `json:"choice,omitempty"`
	// Delta and NoiseStd are the Gaussian mechanism's δ and σ per
	// coordinate of the noise on the summed loss.
	Delta    *float64 `json:"delta,omitempty"`
	NoiseStd *float64 `json:"noise_std,omitempty"`
	// Calibration is CalibrationProfile or CalibrationTight when σ came
	// from the privacy profile or the pure mechanism charged its Jacobian
	// term once (absent for CalibrationKST and Algorithm 2's charge, as in
	// reports before them), and JacobianEpsilon its ε_J; EpsilonPrime is
	// then ε − ε_J.
	Calibration     string   `json:"calibration,omitempty"`
	JacobianEpsilon *float64 `json:"jacobian_epsilon,omitempty"`
	// RowBound is B; Scale √(B²+1), what the clipped row and its intercept
	// feature 1 are divided by.
	RowBound  float64 `json:"row_bound"`
	Scale     float64 `json:"scale"`
	Curvature float64 `json:"curvature"`
	L2        float64 `json:"l2"`
	ExtraL2   float64 `json:"extra_l2"`
	WeightL2  float64 `json:"weight_l2,omitempty"`
	// EpsilonPrime is Algorithm 2's ε' (null without privacy).
	EpsilonPrime *float64 `json:"epsilon_prime"`
	ClippedRows  *int     `json:"clipped_rows,omitempty"`
	// Regression is set for least squares (a schema with a target).
	Regression *ObjPertRegressionReport `json:"regression,omitempty"`
}

// ObjPertRegressionReport is extra.objpert.regression: the public label
// range and residual scale, the released model (also in model.ckpt, as a
// zoo "linear-regression" network), and,
// only when training statistics are reported, how many labels were
// clipped.
type ObjPertRegressionReport struct {
	Loss          string    `json:"loss"`
	LabelRange    []float64 `json:"label_range"`
	ResidualScale float64   `json:"residual_scale"`
	// Weights and Intercept predict ŷ = Weights·x + Intercept for a
	// preprocessed row x, in the label's units.
	Weights       []float64 `json:"weights"`
	Intercept     float64   `json:"intercept"`
	ClippedLabels *int      `json:"clipped_labels,omitempty"`
}

// ObjPertExtra returns the report's extra.objpert (nil for other reports).
func ObjPertExtra(rep *trainer.Report) *ObjPertReport {
	r, _ := rep.Extra["objpert"].(*ObjPertReport)
	return r
}

func validateObjPert(cfg trainer.Config, p privacy) error {
	var errs trainer.FieldErrors
	if cfg.Algo != ObjPertName {
		errs.Add("Algo", "must be objpert (got %q)", cfg.Algo)
	}
	if !(p.Epsilon > 0) {
		errs.Add("Privacy.Epsilon", "must be > 0 or inf (got %v)", p.Epsilon)
	}
	o := ObjPertConfigOf(cfg)
	if !(o.RowBound >= 0) || math.IsInf(o.RowBound, 1) {
		errs.Add("ObjPert.RowBound", "must be a finite number > 0, or 0 for √(features) (got %v)", o.RowBound)
	}
	if !(o.L2 >= 0) || math.IsInf(o.L2, 1) {
		errs.Add("ObjPert.L2", "must be a finite number ≥ 0 (got %v)", o.L2)
	}
	if !(o.WeightL2 >= 0) || math.IsInf(o.WeightL2, 1) {
		errs.Add("ObjPert.WeightL2", "must be a finite number ≥ 0 (got %v)", o.WeightL2)
	}
	if r := o.LabelRange; r != nil && (len(r) != 2 || !(r[0] < r[1]) || math.IsInf(r[0], 0) || math.IsInf(r[1], 0)) {
		errs.Add("ObjPert.LabelRange", "must be two finite numbers lo < hi (got %v)", r)
	}
	switch o.Mechanism {
	case "", MechanismPure, MechanismGaussian, MechanismAuto:
	default:
		errs.Add("ObjPert.Mechanism", "must be %s, %s or %s (got %q)", MechanismPure, MechanismGaussian, MechanismAuto, o.Mechanism)
	}
	switch o.Calibration {
	case "", CalibrationKST, CalibrationProfile, CalibrationTight:
	default:
		errs.Add("ObjPert.Calibration", "must be %s, %s or %s (got %q)", CalibrationTight, CalibrationProfile, CalibrationKST, o.Calibration)
	}
	if !(p.Delta >= 0 && p.Delta < 1) {
		errs.Add("Privacy.Delta", "must be in [0, 1) (0: 1/n²) (got %v)", p.Delta)
	}
	if h := o.ResidualScale; !(h >= 0) || math.IsInf(h, 1) {
		errs.Add("ObjPert.ResidualScale", "must be a finite number > 0, or 0 for %v (got %v)", DefaultResidualScale, h)
	}
	if !(cfg.TrainFrac > 0 && cfg.TrainFrac < 1) {
		errs.Add("TrainFrac", "must be in (0,1) (got %v)", cfg.TrainFrac)
	}
	if cfg.Limit < 0 {
		errs.Add("Limit", "must be ≥ 0")
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// RunObjPert runs cfg (Algo "objpert"): logistic regression by objective
// perturbation at cfg's ε (pure ε-DP, or (ε, δ)-DP for the Gaussian
// mechanism; see ObjPertConfig.Mechanism) on the data set cfg names, split
// by cfg.SplitSeed, else cfg.Seed (nil: crypto-seeded), with noise from
// cfg.Seed. With cfg.Out set it writes model.ckpt (the receipt inside) and
// then report.json. The privacy target is read from cfg once (privacyOf).
func RunObjPert(ctx context.Context, cfg trainer.Config) (*trainer.Report, error) {
	p := privacyOf(cfg)
	if err := validateObjPert(cfg, p); err != nil {
		return nil, err
	}
	start := time.Now()
	src, train, test, prep, splitRec, err := loadObjPertData(cfg)
	if err != nil {
		return nil, err
	}
	o := ObjPertConfigOf(cfg)
	if reflect.ValueOf(o).IsZero() {
		o = ObjPertDefaults() // no settings at all: the defaults
	}
	// "" is the calibration of settings older than the profile one.
	cal := o.Calibration
	if cal == "" {
		cal = CalibrationKST
	}
	if err := checkObjPertData(train, o); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n := train.N()
	opt, choice, err := objPertRunOptions(o, cal, n, train.Dim, sourceColumns(prep), p, train.Targets != nil)
	if err != nil {
		return nil, err
	}
	var res *ObjPertResult
	if train.Targets != nil {
		res, err = ObjectivePerturbationLeastSquares(src.Derive("noise"), train.X, n, train.Dim, train.Targets, ObjPertRegressionOptions{
			ObjPertOptions: opt, LabelLo: o.LabelRange[0], LabelHi: o.LabelRange[1], ResidualScale: o.ResidualScale})
	} else {
		res, err = ObjectivePerturbation(src.Derive("noise"), train.X, n, train.Dim, train.Labels, opt)
	}
	if err != nil {
		return nil, err
	}
	rep, extra, err := objPertReport(cfg, p, o, res, choice, train.Name, n, prep)
	if err != nil {
		return nil, err
	}
	// The training split's exact metrics and clipped-row count are
	// statistics of the private records: left out unless asked for.
	trainStats := !rep.Privacy.Private() || cfg.ReportTrainStats
	if trainStats {
		rep.TrainNotPrivate, extra.ClippedRows = rep.Privacy.Private(), &res.Clipped
	}
	if res.Regression != nil {
		return finishObjPertRegression(cfg, rep, res, train, test, trainStats, start, prep, src.String(), splitRec)
	}
	m, err := scoreLogistic(rep, res, o.ClipAtPredict, train, test, trainStats)
	if err != nil {
		return nil, err
	}
	return finishObjPert(cfg, rep, m, start, prep, src.String(), splitRec)
}

// loadObjPertData loads and splits cfg's data as every run does: split by
// cfg.SplitSeed, else cfg.Seed (nil: crypto-seeded); src is the noise's
// source (cfg.Seed) and splitRec the split's record for the checkpoint.
// LoadData leaves the task to objpert (least squares needs a target, not a
// class label).
func loadObjPertData(cfg trainer.Config) (src dpops.Source, train, test *loaders.Dataset, prep []byte, splitRec *trainer.SplitRecord, err error) {
	_, src = dpops.NewRand(cfg.Seed)
	split := src
	if cfg.SplitSeed != nil {
		_, split = dpops.NewRand(cfg.SplitSeed)
	}
	if train, test, prep, err = trainer.LoadData(cfg, split.Derive("data")); err != nil {
		return src, nil, nil, nil, nil, err
	}
	return src, train, test, prep, trainer.NewSplitRecord(cfg, split.DeriveKey("data"), train, test), nil
}

// scoreLogistic is fit res as the released zoo "logistic" model (rows
// clipped to its bound at prediction with clip) scored into rep
// (scoreLinear) with the test split's warnings.
func scoreLogistic(rep *trainer.Report, res *ObjPertResult, clip bool, train, test *loaders.Dataset, trainStats bool) (*models.Model[float64], error) {
	m, err := linearModel(res, "logistic", clip)
	if err != nil {
		return nil, err
	}
	if err := scoreLinear(rep, m, train, test, trainStats); err != nil {
		return nil, err
	}
	rep.Warnings = trainer.Warnings(rep.Test, test.Labels, test.GroupNames)
	return m, nil
}

// checkObjPertData refuses data objpert cannot fit with settings o: not
// tabular, more than two classes, a regression target without its public
// range.
func checkObjPertData(train *loaders.Dataset, o ObjPertConfig) error {
	switch {
	case train.X == nil:
		return fmt.Errorf("data set %s is not tabular: objpert fits a linear model on features", train.Name)
	case train.Targets == nil && len(train.LabelNames) != 2:
		return fmt.Errorf("data set %s has %d classes; objpert fits binary logistic regression", train.Name, len(train.LabelNames))
	case train.Targets != nil && len(o.LabelRange) != 2:
		return trainer.FieldErrors{{Field: "ObjPert.LabelRange", Msg: fmt.Sprintf("data set %s has a regression target: objpert fits least "+
			"squares and needs the target's public range lo,hi (never read off the private records)", train.Name)}}
	}
	return nil
}

// objPertReport is the report of fit res (settings o, the auto rule's
// reason choice) on the n training records of data set name at budget p,
// before scoring: its receipt (with what it does not cover), the
// configuration that repeats it and extra.objpert. `--algo objpert` and
// its search (TuneObjPert, for the chosen trial) share it.
func objPertReport(cfg trainer.Config, p privacy, o ObjPertConfig, res *ObjPertResult, choice, name string, n int,
	prep []byte) (*trainer.Report, *ObjPertReport, error) {
	rec, err := res.Receipt(cfg.Seed)
	if err != nil {
		return nil, nil, err
	}
	private := rec.Private()
	trainer.DeclareNotCovered(&rec, n, prep, trainer.Config{ReportTrainStats: cfg.ReportTrainStats})
	bound := res.RowBound
	rep := &trainer.Report{Algorithm: string(cfg.Algo), Dataset: name, Params: len(res.Weights) + 1, DType: "float64",
		Backend: trainer.BackendName(), Version: trainer.Version, TrainRecords: n, Privacy: rec,
		Model: fmt.Sprintf("logistic regression (%s)", res.method())}
	// The configuration actually run, with the bound and Λ it used: what
	// reading it back repeats. Settings objpert does not read are left out.
	rep.Config = cfg
	rep.Config.Out, rep.Config.Quiet = "", false
	rep.Config.Privacy = trainer.DPConfig{Epsilon: p.Epsilon, Delta: res.Delta, AllowLargeDelta: res.Delta != 0 && p.AllowLargeDelta}
	rep.Config.Federation = trainer.FederationConfig{}
	// The mechanism as asked: auto decides again from the same public
	// facts (n, d, ε and the δ recorded above), so a rerun repeats the
	// choice and its reason; "" keeps a pure run's settings as they were
	// before the choice existed. extra.objpert.mechanism says what ran.
	ran := ObjPertConfig{Mechanism: o.Mechanism, Calibration: o.Calibration, RowBound: bound, L2: res.L2, WeightL2: res.WeightL2,
		ClipAtPredict: o.ClipAtPredict}
	rep.Config = WithObjPertConfig(trainer.WithoutSections(rep.Config), ran)
	extra := &ObjPertReport{Method: res.method(), RowBound: bound, Scale: res.Scale, Curvature: res.Curvature,
		L2: res.L2, ExtraL2: res.ExtraL2, WeightL2: res.WeightL2, Choice: choice}
	if private {
		extra.EpsilonPrime = &res.EpsilonPrime
		if o.Mechanism != "" { // "" for a run from settings older than the choice, as they ran
			extra.Mechanism = res.Mechanism
		}
		if res.Mechanism == MechanismGaussian {
			extra.Delta, extra.NoiseStd = &res.Delta, &res.NoiseStd
		}
		// Absent for KST and for the pure mechanism before CalibrationTight,
		// as reports were then.
		if res.Mechanism == MechanismGaussian && (profileCalibrated(res.Calibration) || res.Calibration == CalibrationRDP) ||
			res.Calibration == CalibrationTight {
			extra.Calibration, extra.JacobianEpsilon = res.Calibration, &res.JacobianEpsilon
		}
	}
	rep.Extra = trainer.Extras{"objpert": extra}
	return rep, extra, nil
}

// objPertRunOptions resolves settings o, with calibration cal (o's, ""
// already read as CalibrationKST), for n training records of dim encoded
// features from columns source columns (0: unknown) at the budget p into the
// options of one fit: B (0: DefaultRowBound), δ
// (0: 1/n², for the Gaussian mechanism; checked against n), and, for
// MechanismAuto, the mechanism and Λ the auto rule picks from these public
// facts, with its reason. `--algo objpert` and post-processing's objpert
// base share it.
func objPertRunOptions(o ObjPertConfig, cal string, n, dim, columns int, p privacy, regression bool) (ObjPertOptions, string, error) {
	bound := o.RowBound
	if bound == 0 {
		bound = DefaultRowBound(dim, columns)
	}
	opt := ObjPertOptions{Epsilon: p.Epsilon, RowBound: bound, L2: o.L2, WeightL2: o.WeightL2, Mechanism: o.Mechanism}
	var choice string
	private := p.Private()
	if private && (o.Mechanism == MechanismGaussian || o.Mechanism == MechanismAuto) {
		if opt.Delta = p.Delta; opt.Delta == 0 {
			opt.Delta = accounting.DefaultDelta(n)
		}
		if err := accounting.CheckDelta(opt.Delta, n, p.AllowLargeDelta); err != nil {
			return opt, "", trainer.FieldErrors{{Field: "Privacy.Delta", Msg: err.Error()}}
		}
		if o.Mechanism == MechanismAuto {
			c, err := ChooseObjPert(ObjPertFacts{N: n, D: dim, Epsilon: p.Epsilon, Delta: opt.Delta,
				Curvature: curvatureOf(regression, o.ResidualScale), Calibration: cal, Regression: regression})
			if err != nil {
				return opt, "", err
			}
			opt.Mechanism, choice = c.Mechanism, c.Reason
			if opt.L2 == 0 && opt.WeightL2 == 0 {
				opt.L2, opt.WeightL2 = c.L2, c.WeightL2
			}
		}
		if opt.Mechanism == MechanismPure {
			opt.Delta = 0
		} else {
			opt.Calibration = cal
		}
	} else if o.Mechanism == MechanismAuto || !private {
		opt.Mechanism = MechanismPure // the non-private twin: no noise to choose
	}
	if private && opt.Mechanism != MechanismGaussian && cal == CalibrationTight {
		opt.Calibration = cal // the pure mechanism's Jacobian term charged once
	}
	return opt, choice, nil
}

// scoreLinear scores the fitted model on the test split and, with
// trainStats, on the training split (exact statistics of private records:
// the caller decides), as eval will score its checkpoint.
func scoreLinear(rep *trainer.Report, m *models.Model[float64], train, test *loaders.Dataset, trainStats bool) error {
	var err error
	if rep.Test, err = trainer.Evaluate[float64](m, test); err != nil {
		return err
	}
	if trainStats {
		tr, err := trainer.Evaluate[float64](m, train)
		if err != nil {
			return err
		}
		rep.Train = &tr
	}
	return nil
}

// finishObjPert stamps the run's time and, with cfg.Out set, writes
// model.ckpt and report.json.
func finishObjPert(cfg trainer.Config, rep *trainer.Report, m *models.Model[float64], start time.Time, prep []byte,
	seed string, split *trainer.SplitRecord) (*trainer.Report, error) {
	rep.Seconds = time.Since(start).Seconds()
	if cfg.Out != "" {
		if err := writeObjPertOutputs(cfg.Out, rep, m, prep, seed, split); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// finishObjPertRegression scores a least-squares fit (mean squared
// prediction error, per group) and, with cfg.Out set, writes model.ckpt (a
// zoo "linear-regression" checkpoint, so `fairdp eval` scores it by the
// same MSPE) and report.json. The released weights are also in
// extra.objpert.regression.
func finishObjPertRegression(cfg trainer.Config, rep *trainer.Report, res *ObjPertResult, train, test *loaders.Dataset,
	trainStats bool, start time.Time, prep []byte, seed string, split *trainer.SplitRecord) (*trainer.Report, error) {
	g := res.Regression
	rep.Model = fmt.Sprintf("linear regression, %s (%s)", ObjPertLeastSquaresLoss, res.method())
	o := ObjPertConfigOf(rep.Config)
	o.LabelRange, o.ResidualScale = []float64{g.LabelLo, g.LabelHi}, g.ResidualScale
	rep.Config = WithObjPertConfig(rep.Config, o)
	extra := ObjPertExtra(rep)
	extra.Regression = &ObjPertRegressionReport{Loss: ObjPertLeastSquaresLoss, LabelRange: []float64{g.LabelLo, g.LabelHi},
		ResidualScale: g.ResidualScale, Weights: res.Weights, Intercept: res.Intercept}
	// Scored through the zoo model, as eval scores the checkpoint.
	m, err := linearModel(res, models.RegressionArch, o.ClipAtPredict)
	if err != nil {
		return nil, err
	}
	if err := scoreLinear(rep, m, train, test, trainStats); err != nil {
		return nil, err
	}
	if trainStats {
		extra.Regression.ClippedLabels = &g.ClippedLabels
	}
	return finishObjPert(cfg, rep, m, start, prep, seed, split)
}

// linearModel is the fitted model as a zoo network of one Linear layer
// (weight then bias): arch "logistic" (one logit) for a classifier,
// models.RegressionArch (the prediction itself) for least squares, so
// checkpoints and evaluation are the SGD family's. With clip the model
// scales every row longer than res.RowBound to it before the layer, as
// objPertRows did to the training rows (models.Spec.InputNormBound).
func linearModel(res *ObjPertResult, arch string, clip bool) (*models.Model[float64], error) {
	spec := models.Spec{Arch: arch, InShape: []int{len(res.Weights)}, Classes: 2}
	if clip {
		spec.InputNormBound = res.RowBound
	}
	if arch == models.RegressionArch {
		spec.Classes = 1
	}
	m, err := models.New[float64](spec, rand.New(rand.NewPCG(0, 0))) // every value is overwritten below
	if err != nil {
		return nil, err
	}
	ps := m.Params()
	if len(ps) != 2 || len(ps[0].Value) != len(res.Weights) || len(ps[1].Value) != 1 {
		return nil, fmt.Errorf("linear: the zoo %s model's parameters changed shape; objpert cannot fill them", arch)
	}
	copy(ps[0].Value, res.Weights)
	ps[1].Value[0] = res.Intercept
	return m, nil
}

// writeObjPertOutputs writes model.ckpt, which carries the receipt and the
// split, and then report.json to dir, as every fairdp model is saved.
func writeObjPertOutputs(dir string, rep *trainer.Report, m *models.Model[float64], prep []byte, seed string, split *trainer.SplitRecord) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return trainer.FieldErrors{{Field: "Out", Msg: fmt.Sprintf("%s: %v", dir, err)}}
	}
	return trainer.WriteModelOutputs(dir, rep, m, prep, seed, split)
}

// sourceColumns is the number of source columns the fitted preprocessing
// prep encodes, or 0 when there is none (a caller's own in-memory data).
func sourceColumns(prep []byte) int {
	if len(prep) == 0 {
		return 0
	}
	var pp loaders.Preprocessor
	if err := pp.UnmarshalJSON(prep); err != nil {
		return 0
	}
	return pp.Columns()
}
