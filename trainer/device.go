package trainer

import (
	"fmt"

	"fairdp/cuda"
)

// CheckDevice says whether the Device value can run in this binary, before
// any data is loaded: "cpu" always can; "cuda" needs a device that
// cuda.OpenDevice can open (a build with the tag `cuda`, the CUDA toolkit
// and a GPU; or, in a test build with the tag `cudaemu`, the emulated
// device asked for with FAIRDP_DEVICE=emu), and the error says what is
// missing. What runs on the device is SGD, DP-SGD, DPSGD-F, Naïve and DP-FERMI (see
// checkDeviceConfig, which Config.Validate applies, and onDevice).
func CheckDevice(device string) error {
	switch device {
	case "cpu":
		return nil
	case "cuda":
		if err := cuda.CheckDevice(); err != nil {
			return fmt.Errorf("%w: %w", FieldErrors{{Field: "Device", Msg: "cuda"}}, err)
		}
		return nil
	}
	return FieldErrors{{Field: "Device", Msg: fmt.Sprintf("must be cpu or cuda (got %q)", device)}}
}
