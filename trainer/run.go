package trainer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/fairdp/fairdp/atomicfile"
	"github.com/fairdp/fairdp/backend"
	"github.com/fairdp/fairdp/dpops"
	"github.com/fairdp/fairdp/dpops/accounting"
	"github.com/fairdp/fairdp/loaders"
	"github.com/fairdp/fairdp/metrics"
	"github.com/fairdp/fairdp/models"
	"github.com/fairdp/fairdp/nn"
)

// Version is fairdp's version string, written into reports and checkpoints.
const Version = "0.1.0-dev"

// Report is report.json: the one results contract of every algorithm and
// entry point (the SGD family, DP-FERMI, SteFFLe in one process and
// federated, post-processing, the oracle learner, budget tailoring, eval),
// which outside tools read; its JSON Schema is ReportSchema. Privacy is the
// receipt ("epsilon": null means not private); Config is the configuration
// actually run; Extra holds each family's typed results under its key.
type Report struct {
	Algorithm string  `json:"algorithm"`
	Dataset   string  `json:"dataset"`
	Model     string  `json:"model"`
	Params    int     `json:"params"`
	DType     string  `json:"dtype"`
	Backend   string  `json:"backend"`
	Epochs    int     `json:"epochs"`
	Batch     int     `json:"batch"`
	LR        float64 `json:"lr"`
	// TrainRecords is the size of the training split (treated as public:
	// the sampling rate and the default δ are computed from it).
	TrainRecords int `json:"train_records"`
	// Train holds exact statistics of the training split. A private run
	// leaves it out (they are exactly what the receipt protects) unless
	// Config.ReportTrainStats asks for it, and then TrainNotPrivate is set.
	Train           *metrics.Split     `json:"train,omitempty"`
	TrainNotPrivate bool               `json:"train_not_private,omitempty"`
	Test            metrics.Split      `json:"test"`
	Privacy         accounting.Receipt `json:"privacy"`
	Seconds         float64            `json:"seconds"`
	Version         string             `json:"fairdp_version"`
	// Config is every setting of the run, so it can be repeated.
	Config Config `json:"config"`
	// CostOfPrivacy and Baseline are set by --baseline: the identical
	// non-private model's test results and the per-group accuracy change.
	CostOfPrivacy *metrics.CostReport `json:"cost_of_privacy,omitempty"`
	Baseline      *metrics.Split      `json:"baseline_test,omitempty"`
	// Extra holds each family's typed result (see Hooks.OnEnd and Extras),
	// read back with the family's accessor: "fermi" (fermi.ResultOf),
	// "steffle" (federated.ResultOf, federated.ServerResultOf), "jagielski"
	// (linear.FairExtra), "objpert" (linear.ObjPertExtra), "tailoring"
	// (tailoring.Extra), "tune" (TuneResultOf), "eval" (EvalResultOf);
	// DPSGD-F's and Naïve's (dpsgdf.ResultOf) sit at the top of extra.
	Extra Extras `json:"extra,omitempty"`
	// Warnings say when a result should not be read as normal (Warnings).
	Warnings []string `json:"warnings,omitempty"`
}

// EpochLog is one line of metrics.jsonl.
//
// A private run without Config.ReportTrainStats leaves out the exact
// training statistics (TrainLoss, MeanBatch, EmptyBatches) and reports
// throughput from the expected batch size.
type EpochLog struct {
	Epoch     int      `json:"epoch"`
	Steps     int      `json:"steps"`
	TrainLoss *float64 `json:"train_loss,omitempty"`
	TestError float64  `json:"test_error"`
	TestDP    float64  `json:"test_dp_violation"`
	TestEO    float64  `json:"test_eo_violation"`
	// TestMSPE is a regression's mean squared prediction error on the test
	// split (its TestError, TestDP and TestEO are 0).
	TestMSPE     *float64 `json:"test_mspe,omitempty"`
	Epsilon      *float64 `json:"epsilon"`
	Seconds      float64  `json:"seconds"`
	SamplesPerS  float64  `json:"samples_per_s"`
	MeanBatch    *float64 `json:"mean_batch,omitempty"`
	EmptyBatches int      `json:"empty_batches,omitempty"`
	// Algo holds what Hooks.OnEpoch adds (e.g. DPSGD-F's clip bounds).
	Algo map[string]any `json:"algo,omitempty"`
}

// Job is a prepared training job: data loaded, model built.
type Job struct {
	Cfg         Config
	Train, Test *loaders.Dataset
	Preprocess  json.RawMessage
	Rand        *rand.Rand
	Source      dpops.Source
	Log         io.Writer // progress and the final table (os.Stdout in the CLI)
	// Model, if set, is the caller's own model (a Model of the element
	// type Cfg.DType names: a *models.Model built from nn layers, or a type
	// of one's own): Run trains it in place instead of building the zoo
	// model Cfg names. TrainPrivate sets it. Its type is AnyModel, so that
	// only a Model compiles here; the element type is checked when the run
	// starts.
	Model AnyModel

	// checkpoint, set by Prepare with a checkpoint, makes Run save the run after
	// every epoch and continue a saved one.
	checkpoint *checkpoint
	// split, set when the job's data was split here (Prepare, a Sweep), goes into model.ckpt so that eval
	// finds the held-out records again; nil for data a caller split.
	split *SplitRecord
}

// PrepareOptions say how Prepare readies a Config's run.
type PrepareOptions struct {
	// Log gets the job's progress lines and notes (Job.Log); nil: none.
	Log io.Writer
	// Checkpoint, with a Dir, makes the run resumable: Run saves it after
	// every epoch and continues a saved one (see CheckpointOptions and
	// Prepare). A zero value trains in one go.
	Checkpoint CheckpointOptions
	// Adapt applies the data-aware defaults (AdaptToData) to the settings
	// Fixed does not name, where AdaptsToData(cfg); the note saying what
	// changed goes to Log. Without it cfg runs as given (a --config or
	// --preset run, a test's own settings).
	Adapt bool
	// Fixed holds the Config field names the caller set ("Batch",
	// "Epochs", "LR", "Privacy.Clip", "Fair.Lambda": AdaptToData's doc), so
	// that Adapt keeps them.
	Fixed map[string]bool
}

// Prepare loads the data named in cfg, seeds the run and, with
// o.Checkpoint, makes it resumable: the one way a Config becomes a Job,
// for NewPrivate (a library run), `fairdp train` and every command that
// reads a run's data. Train then runs the job.
//
// A checkpointed run (o.Checkpoint.Dir set) can stop and continue: Train
// (Run) writes its state to Dir after every epoch, and a later Prepare
// with the same cfg and Resume continues from the last completed epoch. A
// seeded run so resumed ends bit-identical to the same run uninterrupted:
// same parameters, same report and receipt (only the timings differ).
//
// The job trains once (Train, with or without Job.Model): its checkpoint
// is read when the run starts. The directory is locked (LockFile) from
// Prepare until that run ends, so a second process on the same directory
// is refused. Refusals: a cfg that differs from the checkpoint's in
// anything but Out, Quiet, DataDir and Preset (a FieldErrors naming each
// field), data that differ from the checkpoint's, an algorithm that is not
// Resumable, and Device cuda. With Adapt, the data-aware defaults are
// chosen before the checkpoint is compared, from the same data, so a
// resumed run finds them equal to its checkpoint's.
//
// Privacy. The budget a run has spent is on disk before anything the
// spending computed leaves the process: each epoch's checkpoint (whose
// parameters are a release) holds the accountant that includes that epoch,
// and the ledger records an epoch's start before its first step. When a
// run stopped inside an epoch (a crash, a kill, a cancelled context), the
// epoch's steps ran but their results were lost; on resume:
//   - a seeded run redoes them with the same batches and noise (its
//     streams are in the checkpoint), the same release as the lost one,
//     so nothing more is charged;
//   - an unseeded run redoes them with fresh noise, so the interrupted
//     epoch is charged in full (every one of its steps, though fewer may
//     have run) and the receipt says so. The charge is written to the
//     checkpoint before the epoch is run again.
//
// Secrets. An unseeded run's checkpoint holds no random stream: its
// resumed process keys every stream (batches, noise) afresh from
// crypto/rand, which the receipt notes. It does hold the key of the data
// split (so the run continues on the same training records), which tells
// whoever reads it which records are in the training split, as the run's
// model.ckpt does (SplitRecord; the receipt's test_evaluation says so);
// the file is written with mode 0600. A seeded run's checkpoint holds its
// streams' positions, which predict its noise, as the seed itself does.
func Prepare(cfg Config, o PrepareOptions) (*Job, error) {
	log := o.Log
	note := func(s string) {
		if s != "" && log != nil {
			fmt.Fprintln(log, s)
		}
	}
	if o.Checkpoint.Dir == "" && o.Checkpoint.Resume {
		return nil, FieldErrors{{Field: "CheckpointOptions.Dir", Msg: "is empty: Resume continues the run a checkpoint directory holds"}}
	}
	adapt := o.Adapt && AdaptsToData(cfg)
	if o.Checkpoint.Dir == "" {
		job, err := prepareJob(cfg, log)
		if err != nil || !adapt {
			return job, err
		}
		var n string
		job.Cfg, n = AdaptToData(job.Cfg, job.Train, o.Fixed)
		note(n)
		return job, nil
	}
	if adapt {
		// The checkpoint records the adapted settings: choose them from
		// the same data (the same split) before preparing the run.
		probe, err := prepareJob(cfg, io.Discard)
		if err != nil {
			return nil, err
		}
		var n string
		cfg, n = AdaptToData(cfg, probe.Train, o.Fixed)
		note(n)
	}
	return prepareCheckpointedLocked(cfg, log, o.Checkpoint)
}

// prepareJob is Prepare for a run in one go: the configuration checked,
// the data loaded and split by the "data" stream of the split seed (else
// the seed's), the run's streams seeded.
func prepareJob(cfg Config, log io.Writer) (*Job, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := checkRegistered(cfg.Algo); err != nil {
		return nil, err
	}
	if err := CheckDevice(cfg.Device); err != nil {
		return nil, err
	}
	cfg, err := resolveTrainFrac(cfg, nil)
	if err != nil {
		return nil, err
	}
	r, src := dpops.NewRand(cfg.Seed)
	split := src
	if cfg.SplitSeed != nil {
		_, split = dpops.NewRand(cfg.SplitSeed)
	}
	key := split.DeriveKey("data") // the stream split.Derive("data") gives
	train, test, prep, err := LoadData(cfg, rand.New(rand.NewChaCha8(key)))
	if err != nil {
		return nil, err
	}
	return &Job{Cfg: cfg, Train: train, Test: test, Preprocess: prep, Rand: r, Source: src, Log: log,
		split: NewSplitRecord(cfg, key, train, test)}, nil
}

// newOptimizer is the update Config asks for: Adam, or SGD with its
// momentum, both with Fair.WeightDecay. A device step (ondevice.go) reads
// its settings from the same value.
func newOptimizer[T nn.Float](cfg Config) nn.Optimizer[T] {
	if cfg.Optimizer == OptimizerAdam {
		a := nn.NewAdam[T](T(cfg.LR))
		a.WeightDecay = T(cfg.Fair.WeightDecay)
		return a
	}
	s := nn.NewSGD[T](T(cfg.LR))
	s.Momentum = T(cfg.Momentum)
	s.WeightDecay = T(cfg.Fair.WeightDecay)
	return s
}

// Run trains with alg and returns the report; with cfg.Out set it also writes
// report.json, metrics.jsonl and model.ckpt there.
//
// It is the one training loop: every algorithm, SGD, DP-SGD, DPSGD-F,
// Naïve, DP-FERMI and SteFFLe, and every model, zoo or a caller's own,
// trains through it. The model it returns is job.Model when that is set,
// else the *models.Model it built.
func Run[T nn.Float](ctx context.Context, job *Job, alg Algorithm[T]) (*Report, Model[T], error) {
	cfg := job.Cfg
	spec := ModelSpec(cfg, job.Train)
	m, err := jobModel[T](job, spec)
	if err != nil {
		return nil, nil, err
	}
	if err := checkTask(job, isRegression(m), AlgoName(alg.Name())); err != nil {
		return nil, nil, err
	}
	opt := newOptimizer[T](cfg)
	samplerRand := job.Source.DeriveChaCha8("sampler")
	sampler, err := alg.Sampler(job.Train.N(), rand.New(samplerRand))
	if err != nil {
		return nil, nil, err
	}
	defer job.checkpoint.release() // the run that read the checkpoint ends here
	// The checkpoint directory is locked by this process: no other run
	// writes there, so its leftover temporary files are stale.
	if job.checkpoint != nil {
		removeStaleTemps(job.checkpoint.dir, CheckpointFile, LedgerFile)
	}
	hooks := alg.Hooks()
	ck, err := newResumer(job, m, opt, sampler, samplerRand, alg.Name(), hooks)
	if err != nil {
		return nil, nil, err
	}
	// An algorithm resident on a device updates the parameters there: the
	// host model is brought up to date (Sync) only before it is read.
	resident := hooks.Resident
	onDev := resident != nil
	if onDev {
		defer resident.Close()
	}
	var jsonl *atomicfile.File
	if cfg.Out != "" {
		if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
			return nil, nil, FieldErrors{{Field: "Out", Msg: fmt.Sprintf("%s: %v", cfg.Out, err)}}
		}
		removeStaleTemps(cfg.Out, metricsFile, modelFile, ReportFile)
		if jsonl, err = atomicfile.Create(filepath.Join(cfg.Out, metricsFile)); err != nil {
			return nil, nil, err
		}
		defer jsonl.Abort()
	}
	stepsPerEpoch := sampler.StepsPerEpoch()
	done := 0 // epochs completed by earlier sessions of a checkpointed run
	if ck != nil {
		if done, err = ck.start(stepsPerEpoch); err != nil {
			return nil, nil, err
		}
		for _, line := range ck.logs() {
			if jsonl != nil {
				if _, err := fmt.Fprintf(jsonl, "%s\n", line); err != nil {
					return nil, nil, err
				}
			}
		}
	}
	prog := newProgress(job.Log, cfg.Quiet, cfg.Epochs*stepsPerEpoch)
	prog.steps = done * stepsPerEpoch
	// A private run releases only what its receipt covers: exact statistics
	// of the training data (loss, sampled batch sizes) stay inside unless
	// the user asks for them (and they are then marked not private).
	receipt, err := alg.Receipt()
	if err != nil {
		return nil, nil, err
	}
	private := receipt.Private()
	exact := !private || cfg.ReportTrainStats
	if hooks.OnStart != nil {
		hooks.OnStart(exact)
	}
	inSize := prod(spec.InShape)
	regression := isRegression(m)
	var b Batch[T]
	start := time.Now()
	ev := newEvaluator[T](m)
	firstLoss := -1.0 // mean loss of the first non-empty batch
	if ck != nil {
		firstLoss = ck.firstLoss()
	}
	for epoch := done + 1; epoch <= cfg.Epochs; epoch++ {
		if ck != nil {
			if err := ck.startEpoch(ctx, epoch); err != nil {
				return nil, nil, err
			}
		}
		epStart := time.Now()
		var lossSum float64
		var seen, empty int
		// takeLoss checks step's summed loss l over n samples and adds it
		// to the epoch's.
		takeLoss := func(step int, l float64, n int) error {
			if math.IsNaN(l) || math.IsInf(l, 0) {
				return fmt.Errorf("epoch %d step %d: the loss diverged (%v); lower the learning rate", epoch, step, l)
			}
			if n > 0 {
				// Divergence that has not (yet) overflowed: the mean loss of a
				// batch far above the first batch's means the steps are
				// running away; stop rather than write a normal report.
				perSample := l / float64(n)
				if firstLoss < 0 {
					firstLoss = perSample
				} else if perSample > divergenceFactor*max(firstLoss, 1) {
					return divergedError(epoch, step, perSample, firstLoss, exact)
				}
			}
			lossSum += l
			return nil
		}
		// A step whose loss comes one step late (Resident.Flush): the
		// step (1-based; 0: none) and batch size the next loss belongs to.
		lateStep, lateN := 0, 0
		for s := 0; s < stepsPerEpoch; s++ {
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
			b.Idx = sampler.Next()
			gather(job.Train, b.Idx, inSize, &b, regression)
			l, err := alg.Step(m, b)
			if err != nil {
				return nil, nil, fmt.Errorf("epoch %d step %d: %w", epoch, s+1, err)
			}
			switch {
			case late(resident):
				if lateStep > 0 {
					err = takeLoss(lateStep, l, lateN)
				}
				lateStep, lateN = s+1, b.N()
			default:
				err = takeLoss(s+1, l, b.N())
			}
			if err != nil {
				return nil, nil, err
			}
			if !onDev {
				opt.Step(m.Params())
			}
			seen += b.N()
			if b.N() == 0 {
				empty++
			}
			if stepHook != nil {
				if err := stepHook(epoch, s+1); err != nil {
					return nil, nil, err
				}
			}
			shown := (s + 1) * cfg.Batch // expected: public
			if exact {
				shown = seen
			}
			var receiptErr error
			prog.step(shown, func() *float64 {
				r, err := alg.Receipt()
				receiptErr = err
				return r.Epsilon
			})
			if receiptErr != nil {
				return nil, nil, fmt.Errorf("epoch %d step %d: %w", epoch, s+1, receiptErr)
			}
		}
		if receipt, err = alg.Receipt(); err != nil {
			return nil, nil, fmt.Errorf("epoch %d: %w", epoch, err)
		}
		if late(resident) && lateStep > 0 {
			l, err := resident.Flush()
			if err != nil {
				return nil, nil, fmt.Errorf("epoch %d step %d: %w", epoch, lateStep, err)
			}
			if err := takeLoss(lateStep, l, lateN); err != nil {
				return nil, nil, err
			}
		}
		if onDev {
			if err := resident.Sync(m); err != nil {
				return nil, nil, fmt.Errorf("epoch %d: copying the parameters from the device: %w", epoch, err)
			}
		}
		test := ev.evaluate(job.Test)
		el := EpochLog{Epoch: epoch, Steps: stepsPerEpoch,
			TestError: test.Error, TestDP: test.DPViolation, TestEO: test.EOViolation, TestMSPE: test.MSPE,
			Epsilon: receipt.Epsilon, Seconds: time.Since(epStart).Seconds()}
		el.SamplesPerS = float64(stepsPerEpoch*cfg.Batch) / el.Seconds // expected batch: public
		if exact {
			loss, mean := lossSum/math.Max(1, float64(seen)), float64(seen)/float64(stepsPerEpoch)
			el.TrainLoss, el.MeanBatch, el.EmptyBatches = &loss, &mean, empty
			el.SamplesPerS = float64(seen) / el.Seconds
		}
		if hooks.OnEpoch != nil {
			el.Algo = hooks.OnEpoch()
		}
		if ck != nil {
			// The epoch's state, its accountant included, is on disk before
			// anything of the epoch is printed.
			line, err := json.Marshal(el)
			if err != nil {
				return nil, nil, err
			}
			if err := ck.save(epoch, line, keepFirstLoss(firstLoss, exact)); err != nil {
				return nil, nil, fmt.Errorf("epoch %d: checkpoint: %w", epoch, err)
			}
		}
		prog.epoch(el)
		if jsonl != nil {
			if err := json.NewEncoder(jsonl).Encode(el); err != nil {
				return nil, nil, err
			}
		}
	}
	prog.done()
	if onDev {
		if err := resident.Close(); err != nil {
			return nil, nil, err
		}
	}
	rep := &Report{
		Algorithm: alg.Name(), Dataset: cfg.Dataset, Model: modelName(m), Params: NumParams(m),
		DType: string(cfg.DType), Backend: backend.Name(), Epochs: cfg.Epochs, Batch: cfg.Batch, LR: cfg.LR,
		TrainRecords: job.Train.N(), Test: ev.evaluate(job.Test), Privacy: receipt,
		Seconds: time.Since(start).Seconds(), Version: Version, Config: cfg,
	}
	if ck != nil {
		rep.Seconds += ck.prior
	}
	if exact {
		train := ev.evaluate(job.Train)
		rep.Train, rep.TrainNotPrivate = &train, private
	}
	if !regression { // the warnings compare class predictions with the labels
		rep.Warnings = Warnings(rep.Test, job.Test.Labels, job.Test.GroupNames)
	}
	if hooks.OnEnd != nil {
		if err := hooks.OnEnd(m, job, rep); err != nil {
			return nil, nil, err
		}
	}
	// The receipt records how the whole run was seeded, private or not.
	rep.Privacy.Seeded = job.Source.Seeded
	rep.Privacy.Seed = nil
	if job.Source.Seeded {
		seed := job.Source.Seed
		rep.Privacy.Seed = &seed
	}
	if cfg.DType == DTypeFloat64 && rep.Privacy.Private() {
		rep.Privacy.AddNote(float64NoiseNote)
	}
	if ck != nil && rep.Privacy.Private() {
		ck.noteReceipt(&rep.Privacy)
	}
	// The config records the δ the run used: the default 1/n², resolved,
	// repeats the run exactly when given back. (A federation's default is
	// each silo's own 1/ñ², which one δ cannot state: it stays 0.)
	if cfg.Privacy.Delta == 0 && rep.Privacy.Private() && rep.Privacy.Delta == accounting.DefaultDelta(job.Train.N()) {
		rep.Config.Privacy.Delta = rep.Privacy.Delta
	}
	DeclareNotCovered(&rep.Privacy, job.Train.N(), job.Preprocess, cfg)
	declareDataCounts(&rep.Privacy, job.Train)
	if hooks.NotCovered != nil && rep.Privacy.Private() {
		for _, n := range hooks.NotCovered() {
			rep.Privacy.AddNotCovered(n.Item, n.Detail)
		}
	}
	if cfg.Out != "" {
		if err := jsonl.Commit(); err != nil {
			return nil, nil, err
		}
		if err := writeModelOutputs(cfg.Out, rep, m, job); err != nil {
			return nil, nil, err
		}
	}
	return rep, m, nil
}

// metricsFile is the per-epoch log Run writes in Config.Out.
const metricsFile = "metrics.jsonl"

// divergedError is the error of a run stopped by divergenceFactor. The
// batch losses are exact statistics of the private records, so a private
// run (without Config.ReportTrainStats) does not print them.
func divergedError(epoch, step int, loss, first float64, exact bool) error {
	if !exact {
		return fmt.Errorf("epoch %d step %d: training diverged (a batch's mean loss exceeded %.0g times the first batch's; "+
			"the private losses are not shown); lower the learning rate", epoch, step, divergenceFactor)
	}
	return fmt.Errorf("epoch %d step %d: training diverged (mean batch loss %.3g, first batch %.3g); lower the learning rate",
		epoch, step, loss, first)
}

// stepHook, when set (by tests only, see export_test.go), runs after every
// step; an error ends the run there, as a crash inside an epoch would.
var stepHook func(epoch, step int) error

// divergenceFactor: a batch whose mean loss exceeds this multiple of the
// first batch's (or of 1) ends the run as diverged. Cross-entropy starts
// near ln(classes); no converging run comes near a million times that.
const divergenceFactor = 1e6

// float64NoiseNote is the receipt's exception to dpops' noise rule for
// float64 training (see dpops/noise.go).
const float64NoiseNote = "noise: the gradient sums were noised with the fast textbook Gaussian sampler on float64 parameters, " +
	"which is not hardened against floating-point attacks (Mironov 2012; Jin et al. 2022); with --dtype float32 the " +
	"weights' rounding mitigates them"

// jobModel is the caller's model (Job.Model) after checking it fits the
// data, or a new zoo model for spec.
func jobModel[T nn.Float](job *Job, spec models.Spec) (Model[T], error) {
	if job.Model == nil && job.Cfg.ModelSpecFile != "" {
		s, err := readModelSpec(job.Cfg.ModelSpecFile, spec)
		if err != nil {
			return nil, err
		}
		return models.New[T](s, job.Source.Derive("init"))
	}
	if job.Model == nil {
		return models.New[T](spec, job.Source.Derive("init"))
	}
	m, ok := job.Model.(Model[T])
	if !ok {
		return nil, fmt.Errorf("Job.Model is a %T; this run's DType %s needs a trainer.Model[%T] (such as *models.Model[%[3]T])", job.Model, job.Cfg.DType, T(0))
	}
	mm, zoo := m.(*models.Model[T])
	if zoo && (mm == nil || len(mm.Layers) == 0) {
		return nil, errors.New("Job.Model has no layers")
	}
	if err := fits(m, spec); err != nil {
		return nil, fmt.Errorf("Job.Model %w", err)
	}
	switch {
	case job.Cfg.Out != "" && !zoo:
		return nil, fmt.Errorf("Job.Model is a %T, which a checkpoint cannot describe: train it without Cfg.Out and save it yourself, "+
			"or build it as a *models.Model from nn layers", m)
	case zoo && job.Cfg.Out != "" && !slices.Contains(models.Archs, mm.Arch):
		if err := mm.Spec().Validate(); err != nil {
			return nil, fmt.Errorf("Job.Model cannot be saved in a checkpoint (Cfg.Out): %w", err)
		}
	}
	if zoo && mm.Classes == 0 {
		mm.Classes = spec.Classes
	}
	return m, nil
}

// fits says why m cannot take the data spec describes (nil if it can):
// its input size must match and it must have one logit per class (or one
// sigmoid logit for two classes).
func fits[T nn.Float](m Model[T], spec models.Spec) error {
	switch {
	case m.InSize() != prod(spec.InShape):
		return fmt.Errorf("takes %d inputs, the data has %d (%v)", m.InSize(), prod(spec.InShape), spec.InShape)
	case m.OutDim() != spec.Classes && !(spec.Classes == 2 && m.OutDim() == 1):
		return fmt.Errorf("has %d outputs, the data has %d classes (want %d, or 1 sigmoid output for 2)",
			m.OutDim(), spec.Classes, spec.Classes)
	}
	return nil
}

// writeModelOutputs is writeOutputs for the model the loop trained, which
// jobModel has already checked is a *models.Model when Cfg.Out is set.
func writeModelOutputs[T nn.Float](dir string, rep *Report, m Model[T], job *Job) error {
	mm, ok := m.(*models.Model[T])
	if !ok {
		return fmt.Errorf("a %T cannot be written to a checkpoint", m)
	}
	return writeOutputs(dir, rep, mm, job)
}

// readModelSpec reads a network description (a models.Spec with layers);
// in_shape and classes default to the data's (in data).
func readModelSpec(path string, data models.Spec) (models.Spec, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return models.Spec{}, fmt.Errorf("model spec: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var s models.Spec
	if err := dec.Decode(&s); err != nil && !errors.Is(err, io.EOF) {
		return models.Spec{}, fmt.Errorf("model spec %s: %w", path, err)
	}
	if s.Arch == "" && len(s.Layers) == 0 {
		// Not "unknown arch custom": an empty file or {} describes nothing.
		return models.Spec{}, FieldErrors{{Field: "ModelSpecFile", Msg: fmt.Sprintf("%s describes no layers: write the network as "+
			`{"layers": [{"kind": "linear", "in": %d, "out": 1}]}, or leave it out to train a built-in Model`, path, prod(data.InShape))}}
	}
	return completeSpec(s, data, "model spec "+path)
}

// completeSpec gives s the data's in_shape and classes where it has none
// (Arch "custom" where it has no name), and refuses a spec that does not
// fit the data or is not a network; what names s in the error.
func completeSpec(s, data models.Spec, what string) (models.Spec, error) {
	if s.Arch == "" {
		s.Arch = "custom"
	}
	if len(s.InShape) == 0 {
		s.InShape = data.InShape
	}
	if s.Classes == 0 {
		s.Classes = data.Classes
	}
	if !slices.Equal(s.InShape, data.InShape) {
		return models.Spec{}, fmt.Errorf("%s: in_shape %v, the data has %v", what, s.InShape, data.InShape)
	}
	if err := s.Validate(); err != nil {
		return models.Spec{}, fmt.Errorf("%s: %w", what, err)
	}
	return s, nil
}

// trainModel trains the caller's own model m (any stack of fairdp's nn
// layers, zoo or not, or any type implementing Model) with the algorithm
// job.Cfg.Algo names, on a copy of job, and returns the report with its
// privacy receipt. m is trained in place. Only a *models.Model can be
// written to a checkpoint (Cfg.Out); SteFFLe, whose silos rebuild the
// model, needs one too. Callers outside the package set Job.Model and call
// Train, or use TrainPrivate.
func trainModel[T nn.Float](ctx context.Context, job *Job, m Model[T]) (*Report, error) {
	j := *job
	j.Model = m
	return Train(ctx, &j)
}

// ModelSpec picks the architecture: cfg.Model, else the dataset's default.
func ModelSpec(cfg Config, d *loaders.Dataset) models.Spec {
	arch := cfg.Model
	var in []int
	if d.Pix != nil {
		in = []int{d.C, d.H, d.W}
		if arch == "" {
			arch = "mnist-cnn"
			if d.H > 28 {
				arch = "vgg"
			}
		}
	} else {
		in = []int{d.Dim}
		if arch == "" {
			arch = "logistic"
			if regressionData(cfg, d) {
				arch = models.RegressionArch
			}
		}
	}
	hidden := cfg.Hidden
	if arch == "mlp" && len(hidden) == 0 {
		hidden = defaultHidden
	}
	classes := max(2, len(d.LabelNames))
	if regressionData(cfg, d) {
		classes = 1 // one prediction per record (models.Spec.Regression)
	}
	return models.Spec{Arch: arch, InShape: in, Classes: classes, Hidden: hidden}
}

// regressionData says whether cfg trains a regression on d: d has a
// regression target, and no class label or cfg asks for the regression
// arch. A schema with both a target and a label trains a classifier unless
// Model is models.RegressionArch (what it always did).
func regressionData(cfg Config, d *loaders.Dataset) bool {
	return d.Targets != nil && (len(d.LabelNames) == 0 || cfg.Model == models.RegressionArch)
}

// defaultHidden is the MLP's hidden widths when Config.Hidden is empty.
var defaultHidden = []int{64}

// gather copies the batch's inputs, labels and groups into b's buffers,
// and with targets its regression targets into b.Targets, which makes
// Pass.LossGrad take the squared loss (an empty batch has no loss to
// take). Data without class labels (a regression schema) gives labels 0.
func gather[T nn.Float](d *loaders.Dataset, idx []int, inSize int, b *Batch[T], targets bool) {
	n := len(idx)
	b.X = grow(b.X, n*inSize)
	b.Labels = grow(b.Labels, n)
	b.Groups = grow(b.Groups, n)
	fill(d, idx, b.X)
	for i, j := range idx {
		b.Labels[i] = 0
		if d.Labels != nil {
			b.Labels[i] = d.Labels[j]
		}
		b.Groups[i] = d.Groups[j]
	}
	if targets {
		b.Targets = grow(b.Targets, n)
		for i, j := range idx {
			b.Targets[i] = T(d.Targets[j])
		}
	}
}

func fill[T nn.Float](d *loaders.Dataset, idx []int, dst []T) {
	switch x := any(dst).(type) {
	case []float32:
		d.FillFloat32(idx, x)
	case []float64:
		d.FillFloat64(idx, x)
	}
}

func prod(s []int) int {
	p := 1
	for _, v := range s {
		p *= v
	}
	return p
}

// evaluator predicts a whole data set in chunks, reusing its buffers.
type evaluator[T nn.Float] struct {
	m Model[T]
	x []T
	// regression: m's outputs are predictions, scored by MSPE
	// (evaluateRegression).
	regression bool
}

func newEvaluator[T nn.Float](m Model[T]) *evaluator[T] {
	return &evaluator[T]{m: m, regression: isRegression(m)}
}

// predict returns the predicted class of every record of d.
func (e *evaluator[T]) predict(d *loaders.Dataset) []int {
	pred := make([]int, d.N())
	out := e.m.OutDim()
	e.x = ForwardChunks(e.m, d, e.x, func(lo, n int, logits []T) {
		models.Predict(logits, out, n, pred[lo:lo+n])
	})
	return pred
}

// ForwardChunks runs every record of d through m in evaluation mode, in
// chunks small enough to bound memory (1024 records, 64 for images larger
// than 4096 values), and calls f with each chunk's first record, its size
// and its logits (owned by m, valid until the next Forward). x is an input
// buffer to reuse (nil: allocate); the buffer is returned for the next call.
func ForwardChunks[T nn.Float](m Model[T], d *loaders.Dataset, x []T, f func(lo, n int, logits []T)) []T {
	n, in := d.N(), m.InSize()
	chunk := 1024
	if in > 4096 {
		chunk = 64
	}
	idx := make([]int, 0, chunk)
	for lo := 0; lo < n; lo += chunk {
		hi := min(n, lo+chunk)
		idx = idx[:0]
		for i := lo; i < hi; i++ {
			idx = append(idx, i)
		}
		x = grow(x, len(idx)*in)
		fill(d, idx, x)
		f(lo, len(idx), m.Forward(x, len(idx), false))
	}
	return x
}

func (e *evaluator[T]) evaluate(d *loaders.Dataset) metrics.Split {
	if e.regression {
		return evaluateRegression(e.m, d)
	}
	return metrics.Evaluate(e.predict(d), d.Labels, d.Groups, max(2, len(d.LabelNames)), d.GroupNames)
}

// Evaluate scores m on d, checking first that d fits the model's input. A
// regression model (models.Model.Regression) is scored on d's targets by
// mean squared prediction error, per group (metrics.EvaluateRegression); a
// classifier on d's labels.
func Evaluate[T nn.Float](m Model[T], d *loaders.Dataset) (metrics.Split, error) {
	want := m.InSize()
	if got := d.InputSize(); got != want {
		return metrics.Split{}, fmt.Errorf("data set %s has %d inputs per record but the model expects %d",
			d.Name, got, want)
	}
	regression := isRegression(m)
	switch {
	case regression && d.Targets == nil:
		return metrics.Split{}, fmt.Errorf("data set %s has no regression target but the model is a regression (%s)", d.Name, models.RegressionArch)
	case regression && m.OutDim() != 1:
		return metrics.Split{}, fmt.Errorf("a regression model gives %d outputs per record, want 1", m.OutDim())
	case regression:
		return evaluateRegression(m, d), nil
	case d.Targets != nil && len(d.LabelNames) == 0:
		return metrics.Split{}, fmt.Errorf("data set %s has a regression target and no class label but the model is a classifier", d.Name)
	}
	if c := max(2, len(d.LabelNames)); c != Classes(m) {
		return metrics.Split{}, fmt.Errorf("data set %s has %d classes but the model predicts %d", d.Name, c, Classes(m))
	}
	return newEvaluator(m).evaluate(d), nil
}

// isRegression says whether m is a regression model: one that says so
// (models.Model.Regression: the zoo's linear-regression, or a network of
// one's own with Classes 1).
func isRegression[T nn.Float](m Model[T]) bool {
	r, ok := m.(interface{ Regression() bool })
	return ok && r.Regression()
}

// evaluateRegression scores the regression model m (one output per
// record, the prediction) on d's targets.
func evaluateRegression[T nn.Float](m Model[T], d *loaders.Dataset) metrics.Split {
	pred := make([]float64, d.N())
	ForwardChunks(m, d, nil, func(lo, n int, out []T) {
		for i := range n {
			pred[lo+i] = float64(out[i])
		}
	})
	return metrics.EvaluateRegression(pred, d.Targets, d.Groups, d.GroupNames)
}

// evalReport is the report of `fairdp eval`: a checkpoint scored on the
// test split of the data cfg names (Algorithm and Config.Algo "eval").
// Its privacy is the checkpoint's receipt, the guarantee of the model
// evaluated; extra.eval names the checkpoint.
func evalReport(cfg Config, dataset, ckpt, arch, dtype string, receipt json.RawMessage, params int, test metrics.Split) (*Report, error) {
	cfg.Algo = algoEval
	rep := &Report{Algorithm: string(cfg.Algo), Dataset: dataset, Model: arch, Params: params, DType: dtype,
		Backend: backend.Name(), Test: test, Version: Version, Config: cfg,
		Extra: Extras{"eval": &EvalExtra{Checkpoint: ckpt}}}
	rep.Privacy = accounting.NotPrivate()
	if len(receipt) > 0 {
		if err := json.Unmarshal(receipt, &rep.Privacy); err != nil {
			return nil, fmt.Errorf("%s: stored receipt: %w", ckpt, err)
		}
	}
	return rep, nil
}

// late says whether a resident step returns its loss one step late.
func late[T nn.Float](r *Resident[T]) bool { return r != nil && r.Flush != nil }
