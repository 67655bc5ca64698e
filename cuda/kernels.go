package cuda

import (
	"fmt"
	"strconv"
	"strings"
)

// ptxModules maps each kernels/*.cu source (one PTX module per target
// architecture, ptx/<module>_<arch>.ptx) to the kernels the Go side launches
// from it. TestPTXHasEveryKernel checks the committed PTX against it.
var ptxModules = map[string][]string{
	"dpops": {
		"fairdp_linear_sqnorms", "fairdp_conv_sqnorms_part", "fairdp_rows_sum_add",
		"fairdp_clip_factors", "fairdp_scale_rows", "fairdp_linear_clipped_grad",
		"fairdp_conv_clipped_grad", "fairdp_add_gaussian", "fairdp_add_gaussian_at",
	},
	"layers": {
		"fairdp_im2col", "fairdp_col2im", "fairdp_bias_add", "fairdp_relu_forward", "fairdp_relu_backward",
		"fairdp_maxpool_forward", "fairdp_maxpool_backward", "fairdp_groupnorm_forward", "fairdp_groupnorm_backward",
	},
	"train": {
		"fairdp_fill_u32", "fairdp_sigmoid_bce", "fairdp_softmax_ce", "fairdp_sgd_step", "fairdp_momentum_step",
		"fairdp_adam_step", "fairdp_group_counts", "fairdp_group_rule", "fairdp_group_clip_factors",
	},
	"ermi": {
		"fairdp_fermi_grad", "fairdp_fermi_w_sqnorms", "fairdp_fermi_sums", "fairdp_count_above",
		"fairdp_fermi_combine",
	},
}

// ptxArchs are the targets `make ptx` builds, newest first. A device runs the
// newest one its compute capability supports (the driver JIT-compiles PTX
// for newer GPUs); below sm_70 there is none.
var ptxArchs = []int{90, 80, 70}

// archFor picks the PTX target for a device of compute capability
// major.minor.
func archFor(major, minor int) (int, error) {
	cc := 10*major + minor
	for _, a := range ptxArchs {
		if cc >= a {
			return a, nil
		}
	}
	return 0, fmt.Errorf("%w: compute capability %d.%d is below 7.0; fairdp's PTX targets sm_70, sm_80 and sm_90", ErrUnavailable, major, minor)
}

// ptxName is the embedded file of a module for an architecture.
func ptxName(module string, arch int) string {
	return "ptx/" + module + "_sm" + strconv.Itoa(arch) + ".ptx"
}

// Open returns the backend named by a --device value: "cpu" (the twins),
// "cuda" (GPU 0) or "cuda:N".
func Open(device string) (Backend, error) {
	switch {
	case device == "cpu":
		return CPU{}, nil
	case device == "cuda":
		return NewGPU(0)
	case strings.HasPrefix(device, "cuda:"):
		n, err := strconv.Atoi(device[len("cuda:"):])
		if err != nil || n < 0 {
			return nil, fmt.Errorf("cuda: device %q: want cuda:N with N a device ordinal ≥ 0", device)
		}
		return NewGPU(n)
	}
	return nil, fmt.Errorf("cuda: unknown device %q: want cpu, cuda or cuda:N", device)
}
