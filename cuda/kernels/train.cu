// Kernels of a device-resident training step (cuda.DeviceNet): the losses
// of nn.SigmoidBCE and nn.SoftmaxCrossEntropy, the release-and-update of
// dpops.NoiseAndScale followed by nn.SGD (plain or with momentum) or
// nn.Adam, the per-group statistics and clip factors of a group clip policy
// (DPSGD-F, Naive), and a fill. The linear layers themselves are cuBLAS
// GEMMs, the per-sample work the kernels of dpops.cu.
//
// Unlike dpops.cu the losses are checked against package nn to a tolerance,
// not bit for bit: they use exp, log and log1p, whose last bits differ
// between CUDA's libdevice, glibc and Go's math. The updates are checked
// against nn's optimizers to float32 tolerance too (Go may fuse a
// multiply-add where -fmad=false never does), the group kernels against
// dpops.ClipFactor bit for bit.
#include "fairdp.cuh"

// p[j] = v for j < count: zeroes (v = 0), ones (v = 0x3f800000 as float)
// or any 32-bit pattern.
extern "C" __global__ void fairdp_fill_u32(unsigned* p, unsigned v, int count) {
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < count; j += gridDim.x * blockDim.x) {
        p[j] = v;
    }
}

// Per sample i (labels 0 or 1): loss[i] = log(1 + e^z) - y·z and
// dz[i] = sigmoid(z) - y, in double, rounded once to float (nn.SigmoidBCE
// with no sample weights).
extern "C" __global__ void fairdp_sigmoid_bce(float* loss, float* dz, const float* z, const int* labels, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const double v = (double)z[i];
        const double y = (double)labels[i];
        const double softplus = fmax(v, 0.0) + log1p(exp(-fabs(v)));
        loss[i] = (float)(softplus - y * v);
        double s;
        if (v >= 0.0) {
            s = 1.0 / (1.0 + exp(-v));
        } else {
            const double e = exp(v);
            s = e / (1.0 + e);
        }
        dz[i] = (float)(s - y);
    }
}

// Per sample i with label y in [0, classes): loss[i] = logsumexp(z_i) -
// z_i[y] and dz_i = softmax(z_i) - onehot(y), in double around the row's
// maximum, rounded once to float (nn.SoftmaxCrossEntropy with no weights).
extern "C" __global__ void fairdp_softmax_ce(float* loss, float* dz, const float* z, const int* labels, int n,
                                            int classes) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const float* zi = z + (size_t)i * classes;
        float* di = dz + (size_t)i * classes;
        double m, s;
        rowMaxExpSum(zi, classes, &m, &s);
        const int y = labels[i];
        loss[i] = (float)(m + log(s) - (double)zi[y]);
        for (int j = 0; j < classes; j++) {
            di[j] = (float)(exp((double)zi[j] - m) / s);
        }
        di[y] = di[y] - 1.0f;
    }
}

// stopped says whether the step's clip check failed, so that its update
// must not happen: stop is fairdp_clip_factors' two flags (each the first
// bad sample, n when none), or null when the host has checked them already.
// The update kernels take it so that a DP-SGD step needs no mid-step read:
// the host reads the flags once, at the end of the step, and a refused step
// has changed no parameter and no optimizer state, as on the CPU.
__device__ __forceinline__ bool stopped(const int* stop, int n) {
    return stop != nullptr && (stop[0] < n || stop[1] < n);
}

// The release and plain-SGD update of one parameter buffer, in float as
// dpops.NoiseAndScale and nn.SGD (no momentum) do it: g = grad[j]·scale
// (kept in grad), then w[j] = w[j] - lr·(g + wd·w[j]). Nothing when stopped.
extern "C" __global__ void fairdp_sgd_step(float* w, float* grad, int count, float scale, float lr, float wd,
                                          const int* stop, int n) {
    if (stopped(stop, n)) {
        return;
    }
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < count; j += gridDim.x * blockDim.x) {
        const float g = grad[j] * scale;
        grad[j] = g;
        w[j] = w[j] - lr * (g + wd * w[j]);
    }
}

// The release and heavy-ball update of nn.SGD with Momentum mu, in float:
// g = grad[j]·scale (kept in grad), d = g + wd·w[j], v[j] = d on the
// first step (first != 0, v is not read) and mu·v[j] + d after, then
// w[j] = w[j] - lr·v[j]. Nothing when stopped.
extern "C" __global__ void fairdp_momentum_step(float* w, float* grad, float* v, int count, float scale, float lr,
                                               float mu, float wd, int first, const int* stop, int n) {
    if (stopped(stop, n)) {
        return;
    }
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < count; j += gridDim.x * blockDim.x) {
        const float g = grad[j] * scale;
        grad[j] = g;
        const float d = g + wd * w[j];
        const float vj = first ? d : mu * v[j] + d;
        v[j] = vj;
        w[j] = w[j] - lr * vj;
    }
}

// The release and Adam update of nn.Adam, with its float and double steps:
// g = grad[j]·scale (kept in grad), gd = g + wd·w[j] (float, then double),
// m = b1·m + (1-b1)·gd, v = b2·v + (1-b2)·gd² in double, stored as float,
// and w[j] = w[j] - (float)(step·m / (sqrt(v/c2) + eps)). The host computes
// the bias corrections with Go's math.Pow, as nn.Adam does: step = lr/c1,
// c1 = 1 - b1^t and c2 = 1 - b2^t at step t (CUDA's pow and Go's differ in
// the last bits); b1, b2 and eps are nn.Adam's float32 values widened.
// Nothing when stopped.
extern "C" __global__ void fairdp_adam_step(float* w, float* grad, float* m, float* v, int count, float scale,
                                           float wd, double b1, double b2, double eps, double step, double c2,
                                           const int* stop, int n) {
    if (stopped(stop, n)) {
        return;
    }
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < count; j += gridDim.x * blockDim.x) {
        const float g = grad[j] * scale;
        grad[j] = g;
        const double gd = (double)(g + wd * w[j]);
        const double mj = b1 * (double)m[j] + (1.0 - b1) * gd;
        const double vj = b2 * (double)v[j] + (1.0 - b2) * gd * gd;
        m[j] = (float)mj;
        v[j] = (float)vj;
        w[j] = w[j] - (float)(step * mj / (sqrt(vj / c2) + eps));
    }
}

// The statistics a group clip policy (trainer.ClipPolicy: DPSGD-F, Naive)
// reads, and nothing per sample: counts[g] += 1 for each sample i of group
// g = groups[i] whose gradient norm exceeds threshold, counts[k + g] += 1
// for the others. The caller zeroes the 2k counts; integer atomics make
// the result independent of the launch shape and the order.
extern "C" __global__ void fairdp_group_counts(int* counts, const double* norms, const int* groups, double threshold,
                                              int n, int k) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const int g = groups[i];
        atomicAdd(&counts[norms[i] > threshold ? g : k + g], 1);
    }
}

// A group clip policy's rule on the device (DPSGD-F, Naive; Xu, Du and Wu
// 2021), so that the host need not read the counts mid-step: the same
// float64 operations in the same order as package dpsgdf's CountGuard.Bounds
// and NaiveWeights, checked against them bit for bit (the host recomputes
// the rule from the released counts when the step's result comes back).
// counts are fairdp_group_counts' 2k (above, then at most); noise is each
// released count's noise, drawn by the host before the step in the order
// its own rule draws it, so released = (double)count + noise (dpsgdf's
// DeviceRule says why that is its noisy release, bit for bit).
//
// policy 0 (DPSGD-F): released m~^g = above + noise[g], o~^g = at most +
// noise[k+g]; bounds C^g = c0·(1 + f^g/r) under guard 0 (c0), 1 (floor) or
// 2 (smooth, prior strength a), weights 1, sensitivity max_g C^g.
// policy 1 (Naive): released b~^g = above + at most + noise[g]; bounds c0,
// weights θ^g = (b/k)/max(1, b~^g), sensitivity c0·max_g θ^g.
//
// out: bounds (k), weights (k) (fairdp_group_clip_factors' rule), the
// noise std sigma·sensitivity (fairdp_add_gaussian_at), then the released
// counts (2k, or k). One thread: k is a handful of groups.
__device__ __forceinline__ double max0(double v) { return v > 0.0 ? v : 0.0; }

extern "C" __global__ void fairdp_group_rule(double* out, const int* counts, const double* noise, int k, int policy,
                                             int guard, double c0, double b, double strength, double sigma) {
    if (blockIdx.x != 0 || threadIdx.x != 0) {
        return;
    }
    double* bounds = out;
    double* weights = out + k;
    double* released = out + 2 * k + 1;
    double sens = 0.0;
    if (policy == 1) {
        const double share = b / (double)k;
        for (int g = 0; g < k; g++) {
            const double c = (double)(counts[g] + counts[k + g]) + noise[g];
            released[g] = c;
            bounds[g] = c0;
            weights[g] = share / (c > 1.0 ? c : 1.0);
            if (g == 0 || weights[g] > sens) {
                sens = weights[g];
            }
        }
        out[2 * k] = sigma * (c0 * sens);
        return;
    }
    double total = 0.0;
    for (int g = 0; g < k; g++) {
        const double m = (double)counts[g] + noise[g];
        released[g] = m;
        released[k + g] = (double)counts[k + g] + noise[k + g];
        weights[g] = 1.0;
        total += guard == 0 ? m : max0(m);
    }
    if (!(total > 0.0) || !(b > 0.0)) {
        for (int g = 0; g < k; g++) {
            bounds[g] = c0;
        }
        out[2 * k] = sigma * c0;
        return;
    }
    const double q = total / b;
    const double overall = q < 1.0 ? q : 1.0;
    for (int g = 0; g < k; g++) {
        double f;
        if (guard == 0) {
            const double m = released[g], size = m + released[k + g];
            f = 0.0;
            if (size > 0.0) {
                const double r = m / size;
                f = max0(r < 1.0 ? r : 1.0);
            }
        } else {
            const double m = max0(released[g]), o = max0(released[k + g]);
            if (guard == 1) {
                f = 1.0;
                if (m + o > 0.0) {
                    f = m / (m + o);
                }
            } else {
                f = overall;
                const double d = m + o + strength;
                if (d > 0.0) {
                    f = (m + strength * overall) / d;
                }
            }
        }
        bounds[g] = c0 * (1.0 + f / overall);
        if (g == 0 || bounds[g] > sens) {
            sens = bounds[g];
        }
    }
    out[2 * k] = sigma * sens;
}

// Group-wise clip factors from the policy's rule (2k doubles: the bounds
// C_g, then the weights w_g): scale[i] = w_g·min(1, C_g/norms[i]) for
// sample i of group g, rounded once to float, as trainer.DPSGD computes
// T(w_g·dpops.ClipFactor(norm, C_g)).
extern "C" __global__ void fairdp_group_clip_factors(float* scale, const double* norms, const int* groups,
                                                    const double* rule, int n, int k) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const int g = groups[i];
        const double c = rule[g];
        const double norm = norms[i];
        const double f = norm <= c ? 1.0 : c / norm;
        scale[i] = (float)(rule[k + g] * f);
    }
}
