//go:build cudaemu && !cuda

package cuda

// With the emulated device built in, the suite runs on it unless
// FAIRDP_DEVICE says otherwise.
const defaultTestDevice = "emu"

func openEmulated() (Backend, error) {
	e, err := NewEmulator(EmulatorOptions{})
	if err != nil {
		return nil, err
	}
	return NewDeviceBackend(e), nil
}
