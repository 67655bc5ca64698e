package cuda

// OpenDevice opens the device a training run uses for Config.Device "cuda":
// GPU 0 through the NVIDIA driver in a binary built with the tag `cuda`; in
// a test binary built with the tag `cudaemu` the emulated device, but only
// when the environment says FAIRDP_DEVICE=emu, so that nobody mistakes a CPU
// emulation for a GPU. In any other build it returns CheckDevice's error
// (wrapping ErrUnavailable). The caller closes the device.
func OpenDevice() (Device, error) {
	if err := CheckDevice(); err != nil {
		return nil, err
	}
	return openDevice()
}

// CheckDevice says why OpenDevice would fail without opening anything (nil
// when a device is there): the build tag, the driver or the environment.
func CheckDevice() error { return checkDevice() }
