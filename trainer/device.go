package trainer

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/fairdp/fairdp/devstep"
	"github.com/fairdp/fairdp/nn"
)

// Device is one run's model resident on an accelerator: what the loop (and
// DP-FERMI, through the loop) needs from a device that keeps the
// parameters and the optimizer's state for the whole run and updates them
// there. The loop loads the model on the first step, hands every step's
// batch and its description (devstep's values, which the loop fills from
// the host algorithm: the clip, the noise std, the run's noise stream, a
// clip policy's rule, DP-FERMI's plan) and brings the parameters back
// (Params) only before it reads the host model.
//
// Why one interface and these methods: a device implementation (package
// cuda's TrainerDevice) sits below the loop and must not import it, so it
// satisfies this interface structurally; Go matches methods exactly, so no
// method may return another of the loop's interfaces, and one value is
// the device, the loaded model and its steps together. The privacy
// decisions (the accountant, a clip policy's counts and bounds, W's step
// in DP-FERMI) stay on the host, in the algorithms' own code: a device sees
// descriptions and returns sums, never per-sample values.
type Device interface {
	// Name names the device (the GPU, or the emulated device); the report's
	// backend is the registered name, ": " and Name.
	Name() string
	// Load puts the model's layers (inSize inputs per sample, their current
	// parameters the initial ones) and the optimizer's update on the
	// device. A layer or optimizer the device cannot run is refused.
	Load(layers []nn.Layer[float32], inSize int, opt nn.Optimizer[float32]) error
	// Step runs one DP-SGD step (SGD: no clip reached, no noise) and
	// leaves it running: it returns the summed loss (before its update) of
	// the step before this one, 0 for the first after Load or Flush, so the
	// host issues a step while the device runs the last. An error may be
	// the step before's.
	Step(x []float32, labels []int32, s devstep.DPSGD) (prevLossSum float64, err error)
	// FermiStep runs the model's half of one DP-FERMI step; finish is the
	// host's half, called with the batch's sums, and it calls its second
	// argument with the run's noise stream where θ's noise key is drawn.
	// Like Step, it returns the step before's summed loss.
	FermiStep(x []float32, labels []int32, groups []int, s devstep.FermiStep,
		finish func(devstep.FermiSums, func(noise *rand.Rand) error) error) (prevLossSum float64, err error)
	// Flush waits for the last step and returns its summed loss (0 when
	// no step is pending).
	Flush() (lossSum float64, err error)
	// Params is the parameters now, one slice per nn.Param of the loaded
	// layers in order; nil before Load.
	Params() ([][]float32, error)
	// Close frees the model and the device; it may be called more than once.
	Close() error
}

// deviceDriver is a registered Config.Device value.
type deviceDriver struct {
	check func() error
	open  func() (Device, error)
}

var (
	devicesMu sync.Mutex
	devices   = map[DeviceKind]deviceDriver{}
)

// RegisterDevice makes Config.Device name run on the devices open opens;
// check says why open would fail without opening anything. The binary
// registers its devices (cmd/fairdp registers package cuda's for "cuda" in
// builds with the tag cuda or cudaemu), so that neither the loop nor the
// algorithms import device code and a build without one links none.
// Registering "cpu" or a name twice panics: both are programming errors.
func RegisterDevice[D Device](name DeviceKind, check func() error, open func() (D, error)) {
	devicesMu.Lock()
	defer devicesMu.Unlock()
	if name == DeviceCPU || name == "" {
		panic(fmt.Sprintf("trainer: RegisterDevice(%q): not a device name", name))
	}
	if _, dup := devices[name]; dup {
		panic(fmt.Sprintf("trainer: RegisterDevice(%q) twice", name))
	}
	devices[name] = deviceDriver{check: check, open: func() (Device, error) {
		d, err := open()
		if err != nil {
			return nil, err // not a typed nil in an interface
		}
		return d, nil
	}}
}

// ErrNoDevice is the error, naming Config.Device, of a device this binary
// has none of: it was built without the build tag that registers it.
var ErrNoDevice = errors.New("trainer: no such device in this binary")

// deviceAlgorithms are the Config.Algo values that run on Device "cuda".
var deviceAlgorithms = []AlgoName{AlgoSGD, AlgoDPSGD, algoDPSGDF, algoNaive, algoFermi}

// CheckDevice says whether the Device value can run in this binary, before
// any data is loaded: "cpu" always can; "cuda" needs a registered device
// whose check passes (a binary built with the tag `cuda`, the CUDA toolkit
// and a GPU; or, in a test build with the tag `cudaemu`, the emulated
// device asked for with FAIRDP_DEVICE=emu), and the error says what is
// missing. What runs on the device is SGD, DP-SGD, DPSGD-F, Naïve and
// DP-FERMI (see checkDeviceConfig, which Config.Validate applies, and
// onDevice).
func CheckDevice(device DeviceKind) error {
	if device == DeviceCPU {
		return nil
	}
	d, ok := lookupDevice(device)
	if !ok && device == DeviceCUDA {
		return fmt.Errorf("%w: %w: this fairdp was built without the build tag `cuda`, which links the GPU code. "+
			"On a host with an NVIDIA GPU (compute capability ≥ 7.0), its driver and the CUDA 11.8 toolkit (Debian: "+
			"nvidia-cuda-toolkit nvidia-cuda-dev libcuda1; `make cuda-check` checks it), rebuild with "+
			"`go build -tags cuda ./cmd/fairdp` (docs/gpu.md)", FieldErrors{{Field: "Device", Msg: string(device)}}, ErrNoDevice)
	}
	if !ok {
		if err := device.Validate(); err != nil {
			return err
		}
		return FieldErrors{{Field: "Device", Msg: fmt.Sprintf("%s: no device of that kind is registered in this binary", device)}}
	}
	if err := d.check(); err != nil {
		return fmt.Errorf("%w: %w", FieldErrors{{Field: "Device", Msg: string(device)}}, err)
	}
	return nil
}

func lookupDevice(name DeviceKind) (deviceDriver, bool) {
	devicesMu.Lock()
	defer devicesMu.Unlock()
	d, ok := devices[name]
	return d, ok
}

// openDevice opens the registered device name (CheckDevice's error when
// there is none).
func openDevice(name DeviceKind) (Device, error) {
	if err := CheckDevice(name); err != nil {
		return nil, err
	}
	d, _ := lookupDevice(name)
	dev, err := d.open()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", FieldErrors{{Field: "Device", Msg: string(name)}}, err)
	}
	return dev, nil
}

// checkDeviceConfig adds what a device cannot run to errs: SGD, DP-SGD,
// DPSGD-F, Naive and DP-FERMI in float32 run on the device, with any of
// Config's optimizers.
func checkDeviceConfig(c *Config, errs *FieldErrors) {
	if c.Device != DeviceCUDA {
		if c.TF32 {
			errs.Add("TF32", "applies to Device cuda only (the CPU engine computes in float32 or float64)")
		}
		return
	}
	if !slices.Contains(deviceAlgorithms, c.Algo) {
		errs.Add("Algo", "%q has no device step: Device cuda runs %v only", c.Algo, deviceAlgorithms)
	}
	if c.DType != DTypeFloat32 {
		errs.Add("DType", "%s: Device cuda trains float32 only", c.DType)
	}
	if c.Baseline {
		errs.Add("Baseline", "is not run on Device cuda (train the baseline with Device cpu)")
	}
}
