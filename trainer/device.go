package trainer

import (
	"errors"
	"fmt"

	"fairdp/cuda"
)

// ErrGPUTrainingNotWired is returned for --device cuda on a build and host
// where the GPU works: package cuda has the kernels of the private step, but
// the trainer does not run models on the GPU yet, and silently training on
// the CPU instead would misreport the run.
var ErrGPUTrainingNotWired = errors.New("the trainer does not run models on the GPU yet (package cuda has the kernels; " +
	"see bench/results/cuda.md); use --device cpu")

// CheckDevice says whether the --device value can run in this binary, before
// any data is loaded: "cpu" always can; "cuda" needs a build with the tag
// `cuda`, the CUDA toolkit and a GPU, and the error says which is missing
// (cuda.Check's message names the build tag and the toolkit, or the missing
// device and the driver's error).
func CheckDevice(device string) error {
	switch device {
	case "cpu":
		return nil
	case "cuda":
		if err := cuda.Check(); err != nil {
			return fmt.Errorf("%w: %w", FieldErrors{{Field: "Device", Msg: "cuda"}}, err)
		}
		return fmt.Errorf("%w: %w", FieldErrors{{Field: "Device", Msg: "cuda"}}, ErrGPUTrainingNotWired)
	}
	return FieldErrors{{Field: "Device", Msg: fmt.Sprintf("must be cpu or cuda (got %q)", device)}}
}
