//go:build cudaemu || cuda

package fermi

import (
	"github.com/fairdp/fairdp/cuda"
	"github.com/fairdp/fairdp/trainer"
)

// DP-FERMI's on-device tests run Device "cuda" on package cuda's device, as
// the binary registers it (cmd/fairdp/register_cuda.go).
func init() { trainer.RegisterDevice("cuda", cuda.CheckDevice, cuda.OpenTrainerDevice) }
