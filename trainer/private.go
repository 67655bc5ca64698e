package trainer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/loaders"
	"github.com/fairdp/fairdp/models"
	"github.com/fairdp/fairdp/nn"
)

// Method is a private training method for PrivateOptions. Each is a value
// exported by the package that implements it: DPSGDMethod here,
// dpsgdf.Method (DPSGD-F and Naïve) and fermi.Method (DP-FERMI), so a
// program that names a method imports its implementation and cannot
// compile without it (a name string would compile and fail at run time).
type Method interface {
	// Algo is the name the implementing package registered its algorithm
	// under (Register; Config.Algo, --algo).
	Algo() AlgoName
	// Configure writes the method's own settings into cfg. Its errors are
	// FieldErrors naming the method's fields.
	Configure(cfg *Config) error
}

// DPSGDMethod is DP-SGD (Abadi et al. 2016): per-sample clipping and
// Gaussian noise, the same for every group. It is PrivateOptions' default.
type DPSGDMethod struct{}

// Algo is AlgoDPSGD.
func (DPSGDMethod) Algo() AlgoName { return AlgoDPSGD }

// Configure sets nothing: DP-SGD's settings are PrivateOptions' own.
func (DPSGDMethod) Configure(*Config) error { return nil }

// Sampling is how a private run draws its batches.
type Sampling string

// The samplings. Only Poisson sampling is covered by the RDP analysis;
// a shuffled run's receipt says that its ε is not a proven guarantee.
const (
	SamplingPoisson Sampling = "poisson"
	SamplingShuffle Sampling = "shuffle"
)

// PrivateOptions is one private training run: the data, the model when
// the caller brings none, the method, the privacy target and the few
// training settings a caller usually chooses. Zero values take the
// defaults of `fairdp train` (Defaults); everything else Config has stays
// at its default.
type PrivateOptions struct {
	// The records: exactly one of Dataset and Data.
	//
	// Dataset is a built-in data set (adult, credit, dutch, parkinsons,
	// mnist, …) or a CSV file read with Schema.
	Dataset string
	Schema  string // schema JSON for a CSV Dataset (see package loaders)
	// Data is the caller's own records in memory (see Data).
	Data *Data
	// Limit uses at most this many records of Dataset (0: all), for quick runs.
	Limit int

	// The model TrainPrivate builds when it is given none (nil): Spec, a
	// network of layers whose in_shape and classes default to the data's,
	// or else the zoo architecture Model (logistic, mlp with Hidden, …;
	// empty: logistic for tables, a CNN for images), initialised from the
	// run's seed as `fairdp train` does.
	Model  string
	Hidden []int
	Spec   *models.Spec

	Method  Method  // DPSGDMethod{} when nil
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
	// Sigma is the noise multiplier when the caller calibrated it itself
	// (0: calibrated to Epsilon), as a private search does for each of its
	// trials (Papernot and Steinke 2022): Epsilon is then a cap the run
	// must honour (Config.Privacy.Sigma), and the receipt lists the steps
	// at this σ, which the search holds to its plan.
	Sigma float64

	// A zero Epochs, Batch, LR or Clip takes the data-aware default
	// (AdaptToData, with Defaults() where it does not apply).
	Epochs int     // passes over the training data (0: data-aware)
	Batch  int     // expected batch size (0: data-aware)
	LR     float64 // learning rate of Adam (0: data-aware)

	// Seed makes the run reproducible (split, initialisation, sampling and
	// noise); nil seeds it from crypto/rand, as a real release should be.
	Seed *uint64
	// Out, if set, is a directory for report.json, metrics.jsonl and
	// model.ckpt (the model must then be a *models.Model).
	Out string
	// Checkpoint, with a Dir, makes the run resumable across processes, as
	// `fairdp train --checkpoint DIR --resume` does (Prepare's doc: what is
	// saved after every epoch, what a resume charges, what is refused):
	// NewPrivate with the same options and Resume continues the run after
	// its last completed epoch. It needs a Dataset (records in memory are
	// not read again by the resumed process), and the Private trains once.
	Checkpoint CheckpointOptions
	Log        io.Writer // progress lines and notes; nil: none
}

// registeredBy names the package whose init registers each algorithm that
// trainer cannot import (those packages import trainer), for a Config
// (the command line's, or one read from a report) naming one.
var registeredBy = map[AlgoName]string{
	algoFermi: "github.com/fairdp/fairdp/fermi", algoDPSGDF: "github.com/fairdp/fairdp/dpsgdf", algoNaive: "github.com/fairdp/fairdp/dpsgdf",
	algoSteffle: "github.com/fairdp/fairdp/fermi/federated",
}

// checkRegistered refuses an Algo whose registering package the program
// does not link, naming the import to add: a Config names its algorithm by
// a string, which compiles without the package and would fail only when
// training starts. Other unknown names are left to Train.
func checkRegistered(algo AlgoName) error {
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
	spec        *models.Spec
	// once is set for a checkpointed run, which trains once: its
	// checkpoint and lock belong to that run; trained records that it has.
	once, trained bool
}

// NewPrivate checks opts, naming the PrivateOptions field at fault, and
// loads the data. It spends no privacy budget: only TrainPrivate touches
// the records through the model.
func NewPrivate(opts PrivateOptions) (*Private, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	cfg, err := opts.config()
	if err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	fixed := map[string]bool{"Epochs": opts.Epochs > 0, "Batch": opts.Batch > 0, "LR": opts.LR > 0, "Privacy.Clip": opts.Clip > 0}
	var job *Job
	if opts.Data != nil {
		if job, err = prepareMemory(cfg, log, opts.Data); err != nil {
			return nil, err
		}
		var note string
		if job.Cfg, note = AdaptToData(job.Cfg, job.Train, fixed); note != "" {
			fmt.Fprintln(log, note)
		}
	} else if job, err = Prepare(cfg, PrepareOptions{Log: log, Checkpoint: opts.Checkpoint, Adapt: true, Fixed: fixed}); err != nil {
		return nil, err
	}
	p := &Private{Train: job.Train, Test: job.Test, job: job, once: opts.Checkpoint.Dir != ""}
	if opts.Spec != nil {
		s, err := completeSpec(*opts.Spec, ModelSpec(job.Cfg, job.Train), "Spec")
		if err != nil {
			return nil, err
		}
		p.spec = &s
	}
	return p, nil
}

// prepareMemory is Prepare for records in memory: the same seeding, the
// split drawn from the same "data" stream, nothing fitted on the records.
func prepareMemory(cfg Config, log io.Writer, d *Data) (*Job, error) {
	if err := CheckDevice(cfg.Device); err != nil {
		return nil, err
	}
	cfg.TrainFrac = DefaultTrainFrac
	r, src := dpops.NewRand(cfg.Seed)
	train, test, err := d.load(cfg.TrainFrac, src.Derive("data"))
	if err != nil {
		return nil, err
	}
	return &Job{Cfg: cfg, Train: train, Test: test, Rand: r, Source: src, Log: log}, nil
}

func (o PrivateOptions) validate() error {
	var errs FieldErrors
	switch {
	case o.Dataset == "" && o.Data == nil:
		errs.Add("Dataset", "is empty: name a built-in data set (e.g. adult) or a CSV file with a Schema, or give Data")
	case o.Dataset != "" && o.Data != nil:
		errs.Add("Data", "is given with Dataset %q: give one of them", o.Dataset)
	case o.Data != nil && (o.Schema != "" || o.Limit != 0):
		errs.Add("Data", "takes no Schema or Limit (they are for a Dataset): pass the records to train on")
	case o.Data != nil && o.Checkpoint.Dir != "":
		errs.Add("Checkpoint", "needs a Dataset: records in memory are not read again by the process that resumes the run")
	}
	if o.Checkpoint.Resume && o.Checkpoint.Dir == "" {
		errs.Add("Checkpoint.Resume", "needs Checkpoint.Dir, the directory that holds the run to continue")
	}
	if o.Limit < 0 {
		errs.Add("Limit", "must be ≥ 0 (got %d)", o.Limit)
	}
	if o.Spec != nil && (o.Model != "" || len(o.Hidden) > 0) {
		errs.Add("Spec", "is given with Model %q or Hidden %v: give one of them", o.Model, o.Hidden)
	}
	if o.Method != nil && o.Method.Algo() == AlgoSGD {
		errs.Add("Method", "%q is not private", o.Method.Algo())
	}
	if !(o.Epsilon > 0) || math.IsInf(o.Epsilon, 1) {
		errs.Add("Epsilon", "must be finite and > 0 (got %v): it is the privacy target", o.Epsilon)
	}
	if !(o.Delta >= 0 && o.Delta < 1) {
		errs.Add("Delta", "must be in [0, 1) (got %v; 0 takes 1/n²)", o.Delta)
	}
	if !(o.Clip >= 0) || math.IsInf(o.Clip, 1) {
		errs.Add("Clip", "must be a finite number ≥ 0 (got %v; 0 takes 1)", o.Clip)
	}
	if !(o.Sigma >= 0) || math.IsInf(o.Sigma, 1) {
		errs.Add("Sigma", "must be a finite number ≥ 0 (got %v; 0 calibrates σ to Epsilon)", o.Sigma)
	}
	if o.Sampling != "" && o.Sampling != SamplingPoisson && o.Sampling != SamplingShuffle {
		errs.Add("Sampling", "%q, want %s or %s", o.Sampling, SamplingPoisson, SamplingShuffle)
	}
	if o.Epochs < 0 {
		errs.Add("Epochs", "must be ≥ 0 (got %d; 0 takes the default)", o.Epochs)
	}
	if o.Batch < 0 {
		errs.Add("Batch", "must be ≥ 0 (got %d; 0 takes the default)", o.Batch)
	}
	if !(o.LR >= 0) || math.IsInf(o.LR, 1) {
		errs.Add("LR", "must be a finite number ≥ 0 (got %v; 0 takes the default)", o.LR)
	}
	return errs.err()
}

// config is the Config the options stand for: Defaults with the options
// that are set, and the method's own settings.
func (o PrivateOptions) config() (Config, error) {
	cfg := Defaults()
	m := o.Method
	if m == nil {
		m = DPSGDMethod{}
	}
	cfg.Algo = m.Algo()
	cfg.Fair.Lambda = 0 // a method that has a fairness weight sets it
	if err := m.Configure(&cfg); err != nil {
		return cfg, prefixFields("Method", err)
	}
	if err := checkRegistered(cfg.Algo); err != nil {
		return cfg, err
	}
	cfg.Dataset, cfg.Schema, cfg.Limit, cfg.Seed, cfg.Out = o.Dataset, o.Schema, o.Limit, o.Seed, o.Out
	if o.Data != nil {
		cfg.Dataset = MemoryDataset
	}
	cfg.Model, cfg.Hidden = o.Model, o.Hidden
	cfg.Quiet = o.Log == nil
	cfg.Privacy.Epsilon, cfg.Privacy.Delta, cfg.Privacy.AllowLargeDelta = o.Epsilon, o.Delta, o.AllowLargeDelta
	if o.Clip > 0 {
		cfg.Privacy.Clip = o.Clip
	}
	cfg.Privacy.Sigma = o.Sigma
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
	return cfg, nil
}

// prefixFields names a method's FieldErrors as fields of PrivateOptions
// (Lambda becomes Method.Lambda).
func prefixFields(prefix string, err error) error {
	var fe FieldErrors
	if !errors.As(err, &fe) {
		return fmt.Errorf("%s: %w", prefix, err)
	}
	out := make(FieldErrors, len(fe))
	for i, e := range fe {
		out[i] = FieldError{Field: prefix + "." + e.Field, Msg: e.Msg}
	}
	return out
}

// Config is the full configuration the run will use (what report.json
// records), for inspection.
func (p *Private) Config() Config { return p.job.Cfg }

// TrainPrivate trains a model on p's data under p's privacy target, in
// the same loop as every other run (Run), and returns the report with its
// receipt (rep.Privacy). m is the caller's own model, trained in place: a
// *models.Model built from fairdp's layers (models.New from a spec, or a
// lowered Gorgonia graph's, graph.Lower), or any type implementing Model.
// A nil m trains the model PrivateOptions' Spec or Model names (the type
// parameter then says float32 or float64: TrainPrivate[float32](ctx, p,
// nil)). It stops with ctx's error when ctx is done. Each call is a run of
// its own with its own receipt; runs on the same records compose, so their
// ε add up.
func TrainPrivate[T nn.Float](ctx context.Context, p *Private, m Model[T]) (*Report, error) {
	if p == nil || p.job == nil {
		return nil, errors.New("TrainPrivate: p is not from NewPrivate")
	}
	if p.once && p.trained {
		return nil, errors.New("TrainPrivate: a checkpointed Private trains once (its checkpoint is that run's): call NewPrivate again to resume or start another run")
	}
	p.trained = true
	job := *p.job
	job.Cfg.DType = dtypeOf[T]()
	if m == nil && p.spec != nil {
		built, err := models.New[T](*p.spec, job.Source.Derive("init"))
		if err != nil {
			return nil, fmt.Errorf("TrainPrivate: Spec: %w", err)
		}
		m = built
	}
	if m != nil {
		job.Model = m
	}
	rep, err := Train(ctx, &job)
	if err != nil {
		return nil, err
	}
	if !rep.Privacy.Private() { // unreachable: every Method is private at a finite ε
		return nil, fmt.Errorf("TrainPrivate: %s produced a receipt that is not private", job.Cfg.Algo)
	}
	return rep, nil
}

// dtypeOf is Config.DType for the element type T.
func dtypeOf[T nn.Float]() DType {
	var z T
	if _, ok := any(z).(float64); ok {
		return DTypeFloat64
	}
	return DTypeFloat32
}
