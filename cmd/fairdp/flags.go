package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/trainer"
)

// floatsFlag parses comma-separated numbers, "0,0.25,1". allowInf also takes
// "inf" (ε = ∞); unique rejects a repeated value (grid axes, where a repeat
// would run the same cell twice); check, if set, validates each value.
type floatsFlag struct {
	p        *[]float64
	allowInf bool
	unique   bool
	check    func(float64) error
}

func (f floatsFlag) String() string {
	if f.p == nil {
		return ""
	}
	s := make([]string, len(*f.p))
	for i, v := range *f.p {
		s[i] = trainer.FormatSweepValue(v)
	}
	return strings.Join(s, ",")
}

func (f floatsFlag) Set(v string) error {
	var out []float64
	for _, part := range strings.Split(v, ",") {
		part = strings.TrimSpace(part)
		var x float64
		switch {
		case f.allowInf && (strings.EqualFold(part, "inf") || part == "∞"):
			x = math.Inf(1)
		default:
			var err error
			if x, err = strconv.ParseFloat(part, 64); err != nil || math.IsInf(x, 0) || math.IsNaN(x) {
				return fmt.Errorf("want finite numbers separated by commas, got %q", part)
			}
		}
		if f.check != nil {
			if err := f.check(x); err != nil {
				return fmt.Errorf("%q: %w", part, err)
			}
		}
		if f.unique && slices.Contains(out, x) {
			return fmt.Errorf("%q appears twice in %q", part, v)
		}
		out = append(out, x)
	}
	*f.p = out
	return nil
}

// nonNegative and positiveOrInf are floatsFlag checks (λ and γ; ε).
func nonNegative(x float64) error {
	if x < 0 {
		return fmt.Errorf("want numbers ≥ 0")
	}
	return nil
}

func positiveOrInf(x float64) error {
	if !(x > 0) {
		return fmt.Errorf("want positive numbers or inf")
	}
	return nil
}

// flagError adds to a library error the command-line flag that changes the
// option it is about: library packages name options, not flags.
func flagError(err error) error {
	var large *accounting.LargeDeltaError
	if errors.As(err, &large) {
		return fmt.Errorf("%w (--allow-large-delta)", err)
	}
	var fields trainer.FieldErrors
	if errors.As(err, &fields) {
		s := make([]string, len(fields))
		for i, f := range fields {
			name, ok := fieldFlags[f.Field]
			if !ok {
				name = f.Field
			}
			s[i] = strings.TrimSpace(name + " " + fieldFlagNames.Replace(f.Msg))
		}
		return errors.New(strings.Replace(err.Error(), fields.Error(), strings.Join(s, "; "), 1))
	}
	if err != nil && strings.Contains(err.Error(), "Postproc.") {
		// e.g. a --scores file without the column "Postproc.Scores.ScoreColumn" names
		return fmt.Errorf("%s", fieldFlagNames.Replace(err.Error()))
	}
	return err
}

// fieldFlags names the flag that sets each trainer.Config field.
var fieldFlags = map[string]string{
	"Epochs": "--epochs", "Batch": "--batch", "LR": "--lr", "DType": "--dtype", "Optimizer": "--optimizer",
	"TrainFrac": "--train-frac", "Limit": "--limit", "Device": "--device", "Out": "--out", "Algo": "--algo",
	"Dataset": "--dataset", "DataDir": "--data-dir", "Preset": "--preset", "Schema": "--schema", "Baseline": "--baseline",
	"Momentum":              "--momentum",
	"Fair.PublicGroupSizes": "--public-group-sizes", "Federation.SiloAttribute": "--silo-attribute",
	"Privacy.Epsilon": "--epsilon", "Privacy.Delta": "--delta", "Privacy.Clip": "--clip", "Privacy.Sigma": "--sigma",
	"Privacy.Sampling": "--sampling", "Privacy.Accountant": "--accountant",
	"Fair.Lambda": "--lambda", "Fair.Fairness": "--fairness", "Fair.Scope": "--scope", "Fair.Calibration": "--calibration",
	"Fair.Radius": "--radius", "Fair.CountNoiseRatio": "--count-noise-ratio", "Fair.CountGuard": "--count-guard", "Fair.NaiveGuard": "--naive-guard", "Fair.LRW": "--lr-w",
	"Fair.WeightDecay": "--weight-decay",
	"Federation.Silos": "--silos", "Federation.Heterogeneity": "--heterogeneity", "Federation.MappingFile": "--mapping",
	"Federation.Mode": "--federation", "Federation.LRDecay": "--lr-decay", "Federation.LRDecayEvery": "--lr-decay-every",
	"Federation.AverageEvery": "--average-every", "Federation.AverageFrom": "--average-from",
	// Post-processing and the oracle learner (their own flag set).
	"Postproc.Gamma": "--gamma", "Postproc.Fairness": "--fairness", "Postproc.AllPairs": "--all-pairs",
	"Postproc.Beta": "--beta", "Postproc.Bins": "--bins", "Postproc.Threshold": "--threshold", "Postproc.L2": "--l2",
	"Postproc.Scores.File": "--scores", "Postproc.Scores.ScoreColumn": "--score-column",
	"Postproc.Scores.GroupColumn": "--group-column", "Postproc.Scores.LabelColumn": "--label-column",
	"Postproc.Scores.SplitColumn": "--split-column", "Postproc.Scores.Positive": "--positive",
	"Postproc.Rounds": "--rounds", "Postproc.Bound": "--bound", "Postproc.Eta": "--eta",
	"Postproc.CountShare": "--count-share", "Postproc.Ridge": "--ridge", "Postproc.Fallback": "--fallback",
	// Budget tailoring (its own flag set).
	"Tailoring.Task": "--task", "Tailoring.Rho": "--rho", "Tailoring.Trials": "--trials", "Tailoring.Groups": "--groups",
	"Tailoring.Slopes": "--slopes", "Tailoring.Noise": "--noise", "Tailoring.Model": "--model", "Tailoring.Variant": "--variant",
	"Tailoring.NoseBudget": "--nose-budget", "Tailoring.TauShare": "--tau-share", "Tailoring.Steps": "--steps",
	"Tailoring.LR": "--lr", "Tailoring.LossClip": "--loss-clip", "Tailoring.ResidualClip": "--residual-clip",
	"Tailoring.Box": "--box", "Tailoring.Eta": "--eta", "Tailoring.Multiplier": "--multiplier", "Tailoring.XBound": "--x-bound",
	"Tailoring.YBound": "--y-bound", "Tailoring.Ridge": "--ridge", "Tailoring.NoiseRidge": "--noise-ridge",
	// Named by a resume whose settings differ from its checkpoint's.
	"Seed": "--seed", "SplitSeed": "--split-seed", "Model": "--model", "Hidden": "--hidden", "ModelSpecFile": "--model-spec",
	"ImageSize": "--image-size", "ImageMean": "--image-mean", "ImageStd": "--image-std", "ReportTrainStats": "--report-train-stats", "Tau": "--tau",
	"CheckpointOptions.Resume": "--resume", "CheckpointOptions.Dir": "--checkpoint",
	"Tailoring.Objective": "--objective", "Tailoring.WarmStart": "--warm-start",
	"ObjPert.RowBound": "--row-bound", "ObjPert.L2": "--l2", "ObjPert.LabelRange": "--label-range",
	"ObjPert.Mechanism": "--mechanism", "ObjPert.WeightL2": "--weight-l2",
	"ObjPert.ResidualScale": "--residual-scale",
	"Postproc.Base":         "--base", "Postproc.BaseEpsilon": "--base-epsilon",
}

// fieldFlagNames rewrites field names inside messages as flags.
var fieldFlagNames = func() *strings.Replacer {
	var names []string
	for f := range fieldFlags {
		// Dotted paths, and the few plain names that cannot be part of
		// another word in a message ("LR" would hit "LRW").
		if strings.Contains(f, ".") || slices.Contains([]string{"Optimizer", "Momentum", "Schema", "DataDir", "ImageMean", "ImageStd"}, f) {
			names = append(names, f)
		}
	}
	// Longest first: "Tailoring.NoiseRidge" before "Tailoring.Noise".
	slices.SortFunc(names, func(a, b string) int { return len(b) - len(a) })
	var pairs []string
	for _, f := range names {
		pairs = append(pairs, f, fieldFlags[f])
	}
	return strings.NewReplacer(pairs...)
}()

// kind is one of trainer's named settings (trainer.AlgoName, DType,
// DeviceKind, OptimizerName): a string type that validates itself.
type kind interface {
	~string
	Validate() error
}

// kindFlag parses a flag's string into its trainer kind once, where the
// flag is read, with the kind's own Validate. A refusal is kept rather
// than returned to package flag, which would wrap it as `invalid value "x"
// for flag -dtype: …`; parseFlags returns every refusal together as the
// kinds' FieldErrors, which main renders with the flags' names
// (flagError), the one-line error Config.Validate gave before: `--dtype
// must be float32 or float64 (got "x")`.
type kindFlag[K kind] struct {
	p   *K
	err error
}

func (f *kindFlag[K]) String() string {
	if f == nil || f.p == nil {
		return ""
	}
	return string(*f.p)
}

func (f *kindFlag[K]) Set(s string) error {
	*f.p = K(s)
	f.err = (*f.p).Validate()
	return nil
}

// refusal is the kind's error for the value given (nil when valid).
func (f *kindFlag[K]) refusal() error { return f.err }

// kindVar registers a kindFlag for p under name, p's value the default.
func kindVar[K kind](fs *flag.FlagSet, p *K, name, usage string) {
	fs.Var(&kindFlag[K]{p: p}, name, usage)
}

// kindOrder is the order of the kinds' errors: Config.Validate's (DType,
// Optimizer, Device), then Algo, which Train used to refuse after them.
var kindOrder = []string{"DType", "Optimizer", "Device", "Algo"}

// kindRefusals collects the refusals of fs's kind flags, in kindOrder.
func kindRefusals(fs *flag.FlagSet) error {
	var errs trainer.FieldErrors
	fs.Visit(func(f *flag.Flag) {
		var fe trainer.FieldErrors
		if k, ok := f.Value.(interface{ refusal() error }); ok && errors.As(k.refusal(), &fe) {
			errs = append(errs, fe...)
		}
	})
	if len(errs) == 0 {
		return nil
	}
	slices.SortStableFunc(errs, func(a, b trainer.FieldError) int {
		return slices.Index(kindOrder, a.Field) - slices.Index(kindOrder, b.Field)
	})
	return errs
}

// epsilonFlag parses a positive number or "inf".
type epsilonFlag struct{ v *float64 }

func (e epsilonFlag) String() string {
	if e.v == nil || math.IsInf(*e.v, 1) {
		return "inf"
	}
	return strconv.FormatFloat(*e.v, 'g', -1, 64)
}

func (e epsilonFlag) Set(s string) error {
	if strings.EqualFold(s, "inf") || s == "∞" {
		*e.v = math.Inf(1)
		return nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v > 0) {
		return fmt.Errorf("want a positive number or inf, got %q", s)
	}
	*e.v = v
	return nil
}

// seedFlag parses an unsigned seed; unset means crypto-seeded.
type seedFlag struct{ p **uint64 }

func (s seedFlag) String() string {
	if s.p == nil || *s.p == nil {
		return ""
	}
	return strconv.FormatUint(**s.p, 10)
}

func (s seedFlag) Set(v string) error {
	u, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return fmt.Errorf("want a non-negative integer, got %q", v)
	}
	*s.p = &u
	return nil
}

// intsFlag parses "64,32".
type intsFlag struct{ p *[]int }

func (f intsFlag) String() string {
	if f.p == nil {
		return ""
	}
	s := make([]string, len(*f.p))
	for i, v := range *f.p {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ",")
}

func (f intsFlag) Set(v string) error {
	*f.p = nil
	for _, part := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || n < 1 {
			return fmt.Errorf("want positive integers separated by commas, got %q", v)
		}
		*f.p = append(*f.p, n)
	}
	return nil
}
