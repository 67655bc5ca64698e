//go:build cudaemu && !cuda

// The emulated device's kernels: cuda/kernels/*.cu compiled unchanged by the
// system C++ compiler through emu/cuda_shim.h, and the C entry points that
// emulator.go calls (see emu/runtime.h for how a launch runs).
// No multiply-add is fused unless the source says fma(), as the PTX is built
// with -fmad=false (cgo does not accept -ffp-contract=off as a flag).
#pragma GCC optimize("fp-contract=off")

#include "emu/cuda_shim.h"

#include "kernels/dpops.cu"
#include "kernels/layers.cu"
#include "kernels/train.cu"
#include "kernels/ermi.cu"
#include "emu/test_kernels.cu"

#include "emu/runtime.h"

namespace fairdp_emu {

// Every kernel the Go side launches (kernels.go's ptxModules;
// TestEmulatorKernelsMatchPTX checks the two lists and the parameter types
// agree), then the emulator's test kernels.
static const Kernel kernels[] = {
    kernel("fairdp_linear_sqnorms", fairdp_linear_sqnorms),
    kernel("fairdp_conv_sqnorms_part", fairdp_conv_sqnorms_part),
    kernel("fairdp_rows_sum_add", fairdp_rows_sum_add),
    kernel("fairdp_clip_factors", fairdp_clip_factors),
    kernel("fairdp_scale_rows", fairdp_scale_rows),
    kernel("fairdp_linear_clipped_grad", fairdp_linear_clipped_grad),
    kernel("fairdp_conv_clipped_grad", fairdp_conv_clipped_grad),
    kernel("fairdp_add_gaussian", fairdp_add_gaussian),
    kernel("fairdp_add_gaussian_at", fairdp_add_gaussian_at),
    kernel("fairdp_im2col", fairdp_im2col),
    kernel("fairdp_col2im", fairdp_col2im),
    kernel("fairdp_bias_add", fairdp_bias_add),
    kernel("fairdp_relu_forward", fairdp_relu_forward),
    kernel("fairdp_relu_backward", fairdp_relu_backward),
    kernel("fairdp_maxpool_forward", fairdp_maxpool_forward),
    kernel("fairdp_maxpool_backward", fairdp_maxpool_backward),
    kernel("fairdp_groupnorm_forward", fairdp_groupnorm_forward),
    kernel("fairdp_groupnorm_backward", fairdp_groupnorm_backward),
    kernel("fairdp_fill_u32", fairdp_fill_u32),
    kernel("fairdp_sigmoid_bce", fairdp_sigmoid_bce),
    kernel("fairdp_softmax_ce", fairdp_softmax_ce),
    kernel("fairdp_sgd_step", fairdp_sgd_step),
    kernel("fairdp_momentum_step", fairdp_momentum_step),
    kernel("fairdp_adam_step", fairdp_adam_step),
    kernel("fairdp_group_counts", fairdp_group_counts),
    kernel("fairdp_group_rule", fairdp_group_rule),
    kernel("fairdp_group_clip_factors", fairdp_group_clip_factors),
    kernel("fairdp_fermi_grad", fairdp_fermi_grad),
    kernel("fairdp_fermi_w_sqnorms", fairdp_fermi_w_sqnorms),
    kernel("fairdp_fermi_sums", fairdp_fermi_sums),
    kernel("fairdp_count_above", fairdp_count_above),
    kernel("fairdp_fermi_combine", fairdp_fermi_combine),
    // the emulator's own tests (emu/test_kernels.cu)
    kernel("emu_test_coords", emu_test_coords),
    kernel("emu_test_reverse", emu_test_reverse),
    kernel("emu_test_atomics", emu_test_atomics),
    kernel("emu_test_divergent", emu_test_divergent),
    kernel("emu_test_philox", emu_test_philox),
};
static const int nkernels = sizeof kernels / sizeof kernels[0];

}  // namespace fairdp_emu

extern "C" {

int fairdp_emu_kernel_count(void) { return fairdp_emu::nkernels; }

const char* fairdp_emu_kernel_name(int i) { return fairdp_emu::kernels[i].name; }

// fairdp_emu_kernel_kinds is kernel i's parameter list, one letter each:
// p pointer, 4 or 8 a value of that many bytes.
const char* fairdp_emu_kernel_kinds(int i) { return fairdp_emu::kernels[i].kinds.c_str(); }

// fairdp_emu_launch runs kernel i over grid x block on up to workers OS
// threads and waits for it. It returns 0, or 1 with a message in err.
int fairdp_emu_launch(int i, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                      const uint64_t* args, int workers, char* err, int errlen) {
    using namespace fairdp_emu;
    Launch L;
    L.k = &kernels[i];
    L.args = args;
    L.grid = uint3{gx, gy, gz};
    L.block = uint3{bx, by, bz};
    L.blocks = (long long)gx * gy * gz;
    long long w = workers < 1 ? 1 : workers;
    if (w > L.blocks) w = L.blocks;
    if (w <= 1) {
        run_worker(&L);
    } else {
        std::vector<std::thread> ts;
        for (long long t = 0; t < w; t++) ts.emplace_back(run_worker, &L);
        for (auto& t : ts) t.join();
    }
    if (L.failed.load()) {
        snprintf(err, (size_t)errlen, "%s", L.err.c_str());
        return 1;
    }
    return 0;
}

}  // extern "C"
