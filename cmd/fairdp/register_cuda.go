//go:build cuda || cudaemu

package main

import (
	"github.com/fairdp/fairdp/cuda"
	"github.com/fairdp/fairdp/trainer"
)

// --device cuda is package cuda's device, registered here and only in
// builds with the tag cuda (a GPU) or cudaemu (the emulated device, for
// tests): the default binary links no device code, and the loop and the
// algorithms never import it (trainer.Device).
func init() { trainer.RegisterDevice(trainer.DeviceCUDA, cuda.CheckDevice, cuda.OpenTrainerDevice) }
