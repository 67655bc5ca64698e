package trainer

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"math"

	"github.com/fairdp/fairdp/atomicfile"
	"github.com/fairdp/fairdp/metrics"

	"github.com/fairdp/fairdp/backend"
	"github.com/fairdp/fairdp/models"
	"github.com/fairdp/fairdp/nn"
)

// Constructor builds an algorithm for a prepared job.
type Constructor[T nn.Float] func(job *Job) (Algorithm[T], error)

type constructors struct {
	f32 Constructor[float32]
	f64 Constructor[float64]
}

// algorithms maps --algo names to constructors, one per element type.
var algorithms = map[AlgoName]constructors{
	AlgoSGD:   {newSGD[float32], newSGD[float64]},
	AlgoDPSGD: {newDPSGD[float32], newDPSGD[float64]},
}

// Register makes an algorithm available under --algo name. Algorithm
// packages call it from init (trainer cannot import them: they import
// trainer); the binary imports them for that side effect. It panics on a
// duplicate name, a programming error.
func Register(name AlgoName, f32 Constructor[float32], f64 Constructor[float64]) {
	if _, dup := algorithms[name]; dup {
		panic("trainer: algorithm " + string(name) + " registered twice")
	}
	algorithms[name] = constructors{f32, f64}
}

// newDPSGD is DP-SGD, or plain SGD when --epsilon inf and no --sigma: "not
// private" gives the same model as the non-private path with the same seed.
func newDPSGD[T nn.Float](job *Job) (Algorithm[T], error) {
	p := job.Cfg.Privacy
	if math.IsInf(p.Epsilon, 1) && p.Sigma == 0 {
		return newSGD[T](job)
	}
	return newDPSGDJob[T](job)
}

func newSGD[T nn.Float](job *Job) (Algorithm[T], error) {
	return &SGD[T]{BatchSize: job.Cfg.Batch}, nil
}

// AlgorithmNames lists the values --algo accepts.
func AlgorithmNames() []string {
	names := make([]string, 0, len(algorithms))
	for a := range algorithms {
		names = append(names, string(a))
	}
	return slices.Sorted(slices.Values(names))
}

// groupAlgorithms are the algorithms defined in terms of several sensitive
// groups (fairness penalties, group-wise clipping or weights): with one
// group they are refused rather than run as something else.
var groupAlgorithms = map[AlgoName]bool{algoFermi: true, algoSteffle: true, algoDPSGDF: true, algoNaive: true}

// BackendName is the BLAS in use ("openblas" or "gonum").
func BackendName() string { return backend.Name() }

// ProductPath names the float32 matrix-product path in a few words (own
// GEMM kernels and the BLAS), for a run's first line.
func ProductPath() string { return backend.Short() }

// Train runs the job with the algorithm and element type its config names.
// With Cfg.Baseline it then trains the identical non-private model (plain
// SGD, same seed, data, model and hyper-parameters) and adds the per-group
// cost of privacy to the report (and to report.json).
func Train(ctx context.Context, job *Job) (*Report, error) {
	a, ok := algorithms[job.Cfg.Algo]
	if !ok {
		if err := checkRegistered(job.Cfg.Algo); err != nil {
			return nil, err
		}
		return nil, FieldErrors{{Field: "Algo", Msg: fmt.Sprintf("%q is unknown (known: %v)", job.Cfg.Algo, AlgorithmNames())}}
	}
	if job.Model != nil && job.Cfg.Baseline {
		return nil, errors.New("Baseline cannot be combined with Job.Model: the model is trained in place, so there is no untrained twin")
	}
	if regressionRun(job) {
		if err := checkRegressionRun(job.Cfg); err != nil {
			return nil, err
		}
	}
	if groupAlgorithms[job.Cfg.Algo] && len(job.Train.GroupNames) < 2 {
		return nil, fmt.Errorf("algorithm %s balances or constrains sensitive groups, and data set %s has %d group (%v): "+
			"it is undefined there; use dpsgd or sgd, or a sensitive column with at least two groups",
			job.Cfg.Algo, job.Train.Name, len(job.Train.GroupNames), job.Train.GroupNames)
	}
	if job.Cfg.DType == DTypeFloat64 {
		return train(ctx, job, a.f64)
	}
	return train(ctx, job, a.f32)
}

func train[T nn.Float](ctx context.Context, job *Job, mk Constructor[T]) (*Report, error) {
	defer job.checkpoint.release()
	alg, err := mk(job)
	if err != nil {
		return nil, err
	}
	if err := checkSigmaCap(job.Cfg.Privacy, alg); err != nil {
		return nil, err
	}
	if job.Cfg.Device == DeviceCUDA {
		// Only float32 SGD, DP-SGD, DPSGD-F, Naïve and DP-FERMI have a device step (Config.Validate
		// refuses the rest); never a silent CPU run instead.
		f32, ok := any(alg).(Algorithm[float32])
		if !ok {
			return nil, FieldErrors{{Field: "DType", Msg: "Device cuda trains float32 only"}}
		}
		if f32, err = onDevice(job, f32); err != nil {
			return nil, err
		}
		alg = any(f32).(Algorithm[T])
	}
	rep, _, err := Run(ctx, job, alg)
	if err != nil || !job.Cfg.Baseline {
		return rep, err
	}
	base := *job
	base.Cfg.Out, base.Cfg.Baseline = "", false
	base.checkpoint = nil // the baseline is retrained whole, never checkpointed
	if !job.Cfg.Quiet && job.Log != nil {
		fmt.Fprintln(job.Log, "training the non-private baseline (--baseline)")
	}
	brep, _, err := Run(ctx, &base, Algorithm[T](&SGD[T]{BatchSize: job.Cfg.Batch}))
	if err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	cost := metrics.CostOfPrivacy(rep.Test.Groups, brep.Test.Groups, job.Cfg.Tau)
	rep.CostOfPrivacy = &cost
	rep.Baseline = &brep.Test
	if job.Cfg.Out != "" {
		return rep, atomicfile.WriteJSON(filepath.Join(job.Cfg.Out, "report.json"), rep)
	}
	return rep, nil
}

// WriteOutputs writes report.json and model.ckpt (the receipt inside) to
// dir atomically, as Run does, so that results produced outside Run (the
// SteFFLe server, `fairdp federate`) follow the same contract.
func WriteOutputs[T nn.Float](dir string, rep *Report, m *models.Model[T], job *Job) error {
	return writeOutputs(dir, rep, m, job)
}
