//go:build !cuda

// Not in the cuda-tagged suite: it checks the messages of builds without the
// GPU driver (no tag, or the emulated device). A cuda build's message is the
// driver's; the trainer's TestOnDevice* tests skip on it without a device.

package cuda_test

import (
	"strings"
	"testing"

	"github.com/fairdp/fairdp/cuda"
	"github.com/fairdp/fairdp/trainer"
)

// As the binary does in builds with the tag cuda or cudaemu.
func init() { trainer.RegisterDevice("cuda", cuda.CheckDevice, cuda.OpenTrainerDevice) }

// trainer.CheckDevice: --device cpu always runs; --device cuda fails with a
// message that names what is missing: the build tag and the toolkit in a
// build without the tag, the FAIRDP_DEVICE=emu opt-in in a test build with
// the emulated device, which it accepts once asked for.
func TestCheckDevice(t *testing.T) {
	if err := trainer.CheckDevice("cpu"); err != nil {
		t.Errorf("CheckDevice(cpu) = %v", err)
	}
	if err := trainer.CheckDevice("tpu"); err == nil || !strings.Contains(err.Error(), "Device must be cpu or cuda") {
		t.Errorf("CheckDevice(tpu) = %v", err)
	}
	t.Setenv("FAIRDP_DEVICE", "")
	err := trainer.CheckDevice("cuda")
	if err == nil {
		t.Fatal("CheckDevice(cuda) = nil in a build without the tag cuda and without FAIRDP_DEVICE=emu")
	}
	emulated := strings.Contains(err.Error(), "emulated device")
	want := []string{"Device cuda", "build tag `cuda`", "CUDA 11.8 toolkit", "nvidia-cuda-toolkit"}
	if emulated {
		want = []string{"Device cuda", "FAIRDP_DEVICE=emu", "not a GPU", "-tags cuda"}
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("CheckDevice(cuda) = %q, want it to contain %q", err, w)
		}
	}
	t.Logf("CheckDevice(cuda): %v", err)
	if emulated {
		t.Setenv("FAIRDP_DEVICE", "emu")
		if err := trainer.CheckDevice("cuda"); err != nil {
			t.Errorf("CheckDevice(cuda) with FAIRDP_DEVICE=emu in an emulator build = %v", err)
		}
	}
}
