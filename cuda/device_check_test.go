//go:build !cuda

// Not in the cuda-tagged suite: trainer imports models, whose Gorgonia
// cross-check imports gorgonia.org/gorgonia, and Gorgonia reacts to the same
// build tag `cuda` by requiring cuDNN (cudnn.h), which Debian does not ship.

package cuda_test

import (
	"strings"
	"testing"

	"fairdp/cuda"
	"fairdp/trainer"
)

// trainer.CheckDevice: --device cpu always runs; --device cuda fails with a
// message that names what is missing: the build tag and the toolkit in a
// build without the tag, the device in a CUDA build on a host without one.
func TestCheckDevice(t *testing.T) {
	if err := trainer.CheckDevice("cpu"); err != nil {
		t.Errorf("CheckDevice(cpu) = %v", err)
	}
	if err := trainer.CheckDevice("tpu"); err == nil || !strings.Contains(err.Error(), "Device must be cpu or cuda") {
		t.Errorf("CheckDevice(tpu) = %v", err)
	}
	err := trainer.CheckDevice("cuda")
	if err == nil {
		t.Fatal("CheckDevice(cuda) = nil, but the trainer cannot train on the GPU")
	}
	var want []string
	switch {
	case cuda.Available():
		want = []string{"does not run models on the GPU yet"}
	case strings.Contains(cuda.Check().Error(), "without the build tag"):
		want = []string{"Device cuda", "build tag `cuda`", "CUDA 11.8 toolkit", "nvidia-cuda-toolkit"}
	default:
		want = []string{"Device cuda", "no usable CUDA device"}
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("CheckDevice(cuda) = %q, want it to contain %q", err, w)
		}
	}
	t.Logf("CheckDevice(cuda): %v", err)
}
