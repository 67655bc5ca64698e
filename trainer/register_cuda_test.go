package trainer

import "github.com/fairdp/fairdp/cuda"

// The trainer's tests run Device "cuda" on package cuda's device, as the
// binary registers it (cmd/fairdp/register_cuda.go); without the tag cuda
// or cudaemu its check fails with cuda.ErrUnavailable.
func init() { RegisterDevice("cuda", cuda.CheckDevice, cuda.OpenTrainerDevice) }
