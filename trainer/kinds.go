package trainer

import "fmt"

// The kinds of Config: the settings that take one of a few named values.
// Each is a string type, so report.json, checkpoints and sweep logs record
// the same JSON strings as before the types existed and old reports still
// load with ReadConfig; code compares against the constants, never against
// literals, so a misspelt value is a compile error rather than a branch
// that is silently never taken. Each has one Validate method whose error is
// FieldErrors naming the Config field (the command line renders the flag).

// AlgoName is the name an algorithm or a pipeline is registered under
// (Register, RegisterPipeline): Config.Algo, the command line's --algo.
// It is neither Algorithm, the step interface the loop drives, nor Method,
// the value PrivateOptions takes: a name compiles without the package that
// implements it, which is why the library's one way in takes a Method and
// why each algorithm's name constant lives in that package (fermi.Name,
// dpsgdf.Name, linear.Postproc, …). The loop's own algorithms are here.
type AlgoName string

// The algorithms this package implements.
const (
	AlgoSGD   AlgoName = "sgd"   // plain SGD: the non-private baseline
	AlgoDPSGD AlgoName = "dpsgd" // DP-SGD (Abadi et al. 2016)
)

// The algorithms the loop treats specially but cannot import (each package
// imports this one): their names as the implementing packages register
// them. A test holds each to its package's exported constant.
const (
	algoFermi   AlgoName = "fermi"   // fermi.Name: DP-FERMI
	algoSteffle AlgoName = "steffle" // federated.Name: SteFFLe
	algoDPSGDF  AlgoName = "dpsgdf"  // dpsgdf.Name: DPSGD-F
	algoNaive   AlgoName = "naive"   // dpsgdf.NaiveName: Naïve
	algoObjPert AlgoName = "objpert" // linear.ObjPert: objective perturbation
	// algoEval is no algorithm: it is the Algo a report of `fairdp eval`
	// (EvaluateCheckpoint) records, a checkpoint scored, not trained.
	algoEval AlgoName = "eval"
)

// Validate refuses a name no linked package registered, as an algorithm
// or a pipeline. A name whose package the program does not import (fermi,
// dpsgdf, naive, steffle) gets the import to add.
func (a AlgoName) Validate() error {
	if _, ok := algorithms[a]; ok {
		return nil
	}
	if _, ok := pipelines[a]; ok {
		return nil
	}
	if err := checkRegistered(a); err != nil {
		return err
	}
	return FieldErrors{{Field: "Algo", Msg: fmt.Sprintf("%q is unknown (algorithms: %v; pipelines: %v)",
		a, AlgorithmNames(), pipelineNames())}}
}

// DeviceKind is where a run's steps execute: Config.Device, --device. It
// is not Device, the interface an accelerator implements: a kind names a
// registered device (RegisterDevice), and CheckDevice says whether this
// binary has it.
type DeviceKind string

// The devices.
const (
	DeviceCPU  DeviceKind = "cpu"  // the CPU engine (always available)
	DeviceCUDA DeviceKind = "cuda" // a CUDA GPU, registered by builds with the tag cuda or cudaemu
)

// Validate refuses a kind other than DeviceCPU and DeviceCUDA. Whether
// this binary can run DeviceCUDA is CheckDevice's question.
func (d DeviceKind) Validate() error { return eitherOf("Device", d, DeviceCPU, DeviceCUDA) }

// DType is the element type a run computes in: Config.DType, --dtype.
type DType string

// The element types.
const (
	DTypeFloat32 DType = "float32"
	DTypeFloat64 DType = "float64"
)

// Validate refuses an element type other than DTypeFloat32 and DTypeFloat64.
func (d DType) Validate() error { return eitherOf("DType", d, DTypeFloat32, DTypeFloat64) }

// OptimizerName names the optimizer applied to the (noised) gradient:
// Config.Optimizer, --optimizer. A name rather than package nn's optimizer
// values, which hold state and are built per run.
type OptimizerName string

// The optimizers.
const (
	OptimizerSGD  OptimizerName = "sgd"  // SGD, with Config.Momentum
	OptimizerAdam OptimizerName = "adam" // Adam (Kingma and Ba 2015)
)

// Validate refuses an optimizer other than OptimizerSGD and OptimizerAdam.
func (o OptimizerName) Validate() error { return eitherOf("Optimizer", o, OptimizerSGD, OptimizerAdam) }

// eitherOf is the Validate of a kind with two values: nil when v is a or
// b, else FieldErrors naming field, worded as Config.Validate always was.
func eitherOf[K ~string](field string, v, a, b K) error {
	if v == a || v == b {
		return nil
	}
	return FieldErrors{{Field: field, Msg: fmt.Sprintf("must be %s or %s (got %q)", a, b, string(v))}}
}
