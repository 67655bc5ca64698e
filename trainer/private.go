package trainer

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"

	"fairdp/loaders"
	"fairdp/nn"
)

// Method is a private training algorithm for NewPrivate.
type Method string

// The private methods. DP-SGD lives in this package; DPSGD-F and Naïve are
// registered by package fairdp/dpsgdf and DP-FERMI by fairdp/fermi, so a
// program that uses them imports those packages (for their side effect,
// `import _ "fairdp/fermi"`, if it calls nothing in them).
const (
	MethodDPSGD  Method = "dpsgd"  // DP-SGD (Abadi et al. 2016)
	MethodDPSGDF Method = "dpsgdf" // DPSGD-F: group-wise adaptive clipping (Xu et al. 2021)
	MethodNaive  Method = "naive"  // DP-SGD with noisy group reweighting
	MethodFERMI  Method = "fermi"  // DP-FERMI: private and fair (Lowy et al. 2022)
)

// Sampling is how a private run draws its batches.
type Sampling string

// The samplings. Only Poisson sampling is covered by the RDP analysis;
// a shuffled run's receipt says that its ε is not a proven guarantee.
const (
	SamplingPoisson Sampling = "poisson"
	SamplingShuffle Sampling = "shuffle"
)

// PrivateOptions is one private training run: the data, the privacy target
// and the few training settings a caller usually chooses. Zero values take
// the defaults of `fairdp train` (Defaults); everything else Config has
// stays at its default.
type PrivateOptions struct {
	// Dataset is a built-in data set (adult, credit, dutch, parkinsons,
	// mnist, …) or a CSV file read with Schema.
	Dataset string
	Schema  string // schema JSON for a CSV Dataset (see package loaders)
	// Limit uses at most this many records (0: all), for quick runs.
	Limit int

	Method  Method  // MethodDPSGD when empty
	Epsilon float64 // target ε: finite and > 0
	// Delta is δ of the (ε, δ) guarantee; 0 takes 1/n² of the training
	// records (accounting.DefaultDelta). A δ ≥ 1/n is refused unless
	// AllowLargeDelta.
	Delta float64
	// AllowLargeDelta accepts a δ ≥ 1/n, a weak guarantee (it allows
	// publishing a whole record); the receipt then says so.
	AllowLargeDelta bool
	Clip            float64  // per-sample clip bound C (0: data-aware)
	Sampling        Sampling // SamplingPoisson when empty

	// A zero Epochs, Batch, LR or Clip takes the data-aware default
	// (AdaptToData, with Defaults() where it does not apply).
	Epochs int     // passes over the training data (0: data-aware)
	Batch  int     // expected batch size (0: data-aware)
	LR     float64 // learning rate of Adam (0: data-aware)
	// Lambda is DP-FERMI's fairness weight λ (MethodFERMI only; 0 trains
	// without the fairness term).
	Lambda float64

	// Seed makes the run reproducible (split, initialisation, sampling and
	// noise); nil seeds it from crypto/rand, as a real release should be.
	Seed *uint64
	// Out, if set, is a directory for report.json, metrics.jsonl and
	// model.ckpt (the model must then be a *models.Model).
	Out string
	Log io.Writer // progress lines and notes; nil: none
}

// registeredBy names the package whose init registers each algorithm that
// trainer cannot import (those packages import trainer).
var registeredBy = map[string]string{
	string(MethodFERMI): "fairdp/fermi", string(MethodDPSGDF): "fairdp/dpsgdf", string(MethodNaive): "fairdp/dpsgdf",
	"steffle": "fairdp/fermi/federated",
}

// checkRegistered refuses an Algo whose registering package the program
// does not link, naming the import to add: without it the name compiles
// (MethodFERMI is a constant here) and would fail only when training starts.
// Other unknown names are left to Train.
func checkRegistered(algo string) error {
	if _, ok := algorithms[algo]; ok {
		return nil
	}
	if pkg, ok := registeredBy[algo]; ok {
		return FieldErrors{{Field: "Algo", Msg: fmt.Sprintf("%q is registered by package %s, which this program does not import: "+
			"add import _ %q", algo, pkg, pkg)}}
	}
	return nil
}

// Private is a validated private run with its data loaded. Its Train and
// Test sets tell the caller the input size and classes to build a model
// for; TrainPrivate trains one.
type Private struct {
	Train, Test *loaders.Dataset
	job         *Job
}

// NewPrivate checks opts, naming the PrivateOptions field at fault, and
// loads the data. It spends no privacy budget: only TrainPrivate touches
// the records through the model.
func NewPrivate(opts PrivateOptions) (*Private, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	cfg := opts.config()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	job, err := Prepare(cfg, log)
	if err != nil {
		return nil, err
	}
	var note string
	job.Cfg, note = AdaptToData(job.Cfg, job.Train, map[string]bool{"Epochs": opts.Epochs > 0, "Batch": opts.Batch > 0,
		"LR": opts.LR > 0, "Privacy.Clip": opts.Clip > 0})
	if note != "" {
		fmt.Fprintln(log, note)
	}
	return &Private{Train: job.Train, Test: job.Test, job: job}, nil
}

func (o PrivateOptions) validate() error {
	var errs FieldErrors
	if o.Dataset == "" {
		errs.add("Dataset", "is empty: name a built-in data set (e.g. adult) or a CSV file with a Schema")
	}
	if o.Limit < 0 {
		errs.add("Limit", "must be ≥ 0 (got %d)", o.Limit)
	}
	if o.Method != "" && !slices.Contains([]Method{MethodDPSGD, MethodDPSGDF, MethodNaive, MethodFERMI}, o.Method) {
		errs.add("Method", "%q is not a private method (want %s, %s, %s or %s)", o.Method, MethodDPSGD, MethodDPSGDF, MethodNaive, MethodFERMI)
	}
	if !(o.Epsilon > 0) || math.IsInf(o.Epsilon, 1) {
		errs.add("Epsilon", "must be finite and > 0 (got %v): it is the privacy target", o.Epsilon)
	}
	if !(o.Delta >= 0 && o.Delta < 1) {
		errs.add("Delta", "must be in [0, 1) (got %v; 0 takes 1/n²)", o.Delta)
	}
	if !(o.Clip >= 0) || math.IsInf(o.Clip, 1) {
		errs.add("Clip", "must be a finite number ≥ 0 (got %v; 0 takes 1)", o.Clip)
	}
	if o.Sampling != "" && o.Sampling != SamplingPoisson && o.Sampling != SamplingShuffle {
		errs.add("Sampling", "%q, want %s or %s", o.Sampling, SamplingPoisson, SamplingShuffle)
	}
	if o.Epochs < 0 {
		errs.add("Epochs", "must be ≥ 0 (got %d; 0 takes the default)", o.Epochs)
	}
	if o.Batch < 0 {
		errs.add("Batch", "must be ≥ 0 (got %d; 0 takes the default)", o.Batch)
	}
	if !(o.LR >= 0) || math.IsInf(o.LR, 1) {
		errs.add("LR", "must be a finite number ≥ 0 (got %v; 0 takes the default)", o.LR)
	}
	if !(o.Lambda >= 0) || math.IsInf(o.Lambda, 1) {
		errs.add("Lambda", "must be a finite number ≥ 0 (got %v)", o.Lambda)
	}
	if o.Lambda != 0 && o.Method != MethodFERMI {
		errs.add("Lambda", "is DP-FERMI's fairness weight; set Method to %s to use it", MethodFERMI)
	}
	return errs.err()
}

// config is the Config the options stand for: Defaults with the options
// that are set.
func (o PrivateOptions) config() Config {
	cfg := Defaults()
	cfg.Algo = string(MethodDPSGD)
	if o.Method != "" {
		cfg.Algo = string(o.Method)
	}
	cfg.Dataset, cfg.Schema, cfg.Limit, cfg.Seed, cfg.Out = o.Dataset, o.Schema, o.Limit, o.Seed, o.Out
	cfg.Quiet = o.Log == nil
	cfg.Privacy.Epsilon, cfg.Privacy.Delta, cfg.Privacy.AllowLargeDelta = o.Epsilon, o.Delta, o.AllowLargeDelta
	if o.Clip > 0 {
		cfg.Privacy.Clip = o.Clip
	}
	if o.Sampling != "" {
		cfg.Privacy.Sampling = string(o.Sampling)
	}
	if o.Epochs > 0 {
		cfg.Epochs = o.Epochs
	}
	if o.Batch > 0 {
		cfg.Batch = o.Batch
	}
	if o.LR > 0 {
		cfg.LR = o.LR
	}
	cfg.Fair.Lambda = o.Lambda
	return cfg
}

// Config is the full configuration the run will use (what report.json
// records), for inspection.
func (p *Private) Config() Config { return p.job.Cfg }

// TrainPrivate trains m in place on p's data under p's privacy target, in
// the same loop as every other run (Run), and returns the report with its
// receipt (rep.Privacy). It stops with ctx's error when ctx is done. Each
// call is a run of its own with its own receipt; runs on the same records
// compose, so their ε add up.
func TrainPrivate[T nn.Float](ctx context.Context, p *Private, m Model[T]) (*Report, error) {
	if m == nil {
		return nil, fmt.Errorf("TrainPrivate: the model is nil")
	}
	job := *p.job
	job.Cfg.DType = dtypeOf[T]()
	rep, err := TrainModel(ctx, &job, m)
	if err != nil {
		return nil, err
	}
	if !rep.Privacy.Private() { // unreachable: every Method is private at a finite ε
		return nil, fmt.Errorf("TrainPrivate: %s produced a receipt that is not private", job.Cfg.Algo)
	}
	return rep, nil
}

// dtypeOf is Config.DType for the element type T.
func dtypeOf[T nn.Float]() string {
	var z T
	if _, ok := any(z).(float64); ok {
		return "float64"
	}
	return "float32"
}
