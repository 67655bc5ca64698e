//go:build !cudaemu || cuda

package cuda

import "fmt"

const defaultTestDevice = "cpu"

func openEmulated() (Backend, error) {
	return nil, fmt.Errorf("%w: FAIRDP_DEVICE=emu needs a test build with -tags cudaemu (and without cuda)", ErrUnavailable)
}
