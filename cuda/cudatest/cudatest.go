// Package cudatest holds what tests outside package cuda need to train on
// the device under test: UseDevice picks it and skips (or fails) without
// one. It lives outside the _test files so that the trainer's and the
// command's on-device tests share it; no product code imports it.
package cudatest

import (
	"os"
	"testing"

	"github.com/fairdp/fairdp/cuda"
)

// UseDevice makes cuda.OpenDevice (Config.Device "cuda") open the device
// under test: the emulated device in a test build with the tag cudaemu
// (which needs FAIRDP_DEVICE=emu; UseDevice sets it for the test), GPU 0 in
// a build with the tag cuda. Without a usable device the test is skipped,
// or fails when FAIRDP_REQUIRE_DEVICE is set (make test-gpu).
func UseDevice(t testing.TB) {
	t.Helper()
	if cuda.CheckDevice() != nil {
		t.Setenv("FAIRDP_DEVICE", "emu")
	}
	if err := cuda.CheckDevice(); err != nil {
		if os.Getenv("FAIRDP_REQUIRE_DEVICE") != "" {
			t.Fatal(err)
		}
		t.Skipf("no device to train on: %v", err)
	}
}

// BackendPrefix is how the backend field of a report trained on the device
// under test begins: "cuda: cuda:" and the GPU (or stand-in driver) in a
// `cuda` build, "cuda: emulated device" in a `cudaemu` build.
func BackendPrefix() string {
	if cuda.Available() {
		return "cuda: cuda:"
	}
	return "cuda: emulated device"
}
