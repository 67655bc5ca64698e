// Kernels of DP-FERMI's step on the device (package fermi on the CPU;
// Lowy et al. 2022): the ERMI regularizer's per-sample gradients with respect to
// the logits and to W, read from the logits buffer the forward pass left,
// and the small per-batch sums the host's W step needs.
//
// With k sensitive groups, l classes and the sample's matrix
// W_t (t = its label for equalized odds, else 0; k x l, row-major) the
// regularizer of sample i (group s, class probabilities F) is
//
//   psi_i = sum_j c_j F_j - 1,  c_j = -sum_r W_t[r][j]^2 + 2 W_t[s][j] / sqrt(p(s))
//
// where the first term of c_j is the part that does not depend on s
// (part 1, "non-sensitive"), the second the part that does (part 2,
// "sensitive"), and part 0 both (fermi.Full, NonSensitive, Sensitive).
// inv holds 1/sqrt(p(s)) per matrix and group (0 for an empty group).
//
// Every operation is written in the order fermi's Go code performs it
// (Regularizer.Coefficients, GradW, Psi, LogitGrad, models.Probabilities),
// without fused multiply-adds; like train.cu they are checked against that
// code to a tolerance, not bit for bit, because the probabilities use exp and
// log, whose last bits differ between CUDA's libdevice, glibc and Go's math.
#include "fairdp.cuh"

// fermiSigmoid is nn's sigmoid: 1/(1+e^-z) without overflow for large |z|.
__device__ __forceinline__ double fermiSigmoid(double z) {
    if (z >= 0.0) {
        return 1.0 / (1.0 + exp(-z));
    }
    const double e = exp(z);
    return e / (1.0 + e);
}

// fermiLSE is log sum_j exp(z_j) computed around the row's maximum, as nn's
// logSumExp.
__device__ __forceinline__ double fermiLSE(const float* z, int out) {
    double m, s;
    rowMaxExpSum(z, out, &m, &s);
    return m + log(s);
}

// fermiProb is class j's probability for the logits z (one logit: the
// classes are (1 - sigmoid(z), sigmoid(z)); else softmax with log-sum-exp
// lse), rounded to float as models.Probabilities stores it.
__device__ __forceinline__ double fermiProb(const float* z, int out, double lse, int j) {
    if (out == 1) {
        const double v = (double)z[0];
        return (double)(float)fermiSigmoid(j == 0 ? -v : v);
    }
    return (double)(float)exp((double)z[j] - lse);
}

// fermiCoef is c_j restricted to part (Regularizer.Coefficients).
__device__ __forceinline__ double fermiCoef(const double* w, double inv, int s, int k, int l, int j, int part) {
    double c = 0.0;
    if (part != 2) {
        for (int r = 0; r < k; r++) {
            const double v = w[r * l + j];
            c = c - v * v;
        }
    }
    if (part != 1) {
        c = c + 2.0 * w[s * l + j] * inv;
    }
    return c;
}

// Per sample i with label labels[i] and group groups[i] (in range: the
// caller checks), for the terms of psi_i that part selects:
//   dz_i   = lossWeight * dl_i + fairWeight * d(sum_j c_j F_j)/dz_i
//            (dl null: no loss term; the chain rule through sigmoid or softmax
//            as fermi.LogitGrad, rounded to float before the sum as there),
//   wrow_i = d psi_i / d W_t (k x l doubles, Regularizer.GradW with scale 1),
//   psi[i] = psi_i with every term (Regularizer.Psi; psi null: not written).
// dz may be dl (each sample reads its row before writing it).
extern "C" __global__ void fairdp_fermi_grad(float* dz, double* wrow, double* psi, const float* z, const float* dl,
                                             const int* labels, const int* groups, const double* w,
                                             const double* inv, int n, int out, int k, int l, int eo,
                                             double lossWeight, double fairWeight, int part) {
    const int width = k * l;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const float* zi = z + (size_t)i * out;
        const int t = eo ? labels[i] : 0, s = groups[i];
        const double* wt = w + (size_t)t * width;
        const double is = inv[t * k + s];
        const double lse = out == 1 ? 0.0 : fermiLSE(zi, out);
        // d(sum_j c_j F_j)/dz, scaled by fairWeight.
        float* di = dz + (size_t)i * out;
        const float* li = dl == 0 ? 0 : dl + (size_t)i * out;
        if (out == 1) {
            const double p0 = fermiProb(zi, out, lse, 0), p1 = fermiProb(zi, out, lse, 1);
            const double c0 = fermiCoef(wt, is, s, k, l, 0, part), c1 = fermiCoef(wt, is, s, k, l, 1, part);
            const float g = (float)(fairWeight * (c1 - c0) * p0 * p1);
            const float base = li == 0 ? 0.0f : (float)(lossWeight * (double)li[0]);
            di[0] = base + g;
        } else {
            double mean = 0.0;
            for (int j = 0; j < out; j++) {
                mean = mean + fermiCoef(wt, is, s, k, l, j, part) * fermiProb(zi, out, lse, j);
            }
            for (int j = 0; j < out; j++) {
                const double f = fermiProb(zi, out, lse, j);
                const float g = (float)(fairWeight * f * (fermiCoef(wt, is, s, k, l, j, part) - mean));
                const float base = li == 0 ? 0.0f : (float)(lossWeight * (double)li[j]);
                di[j] = base + g;
            }
        }
        // d psi_i / d W_t: -2 W_rj F_j (non-sensitive), then 2 F_j / sqrt(p(s))
        // in row s (sensitive).
        double* wi = wrow + (size_t)i * width;
        for (int r = 0; r < k; r++) {
            for (int j = 0; j < l; j++) {
                double g = 0.0;
                if (part != 2) {
                    g = g - 2.0 * wt[r * l + j] * fermiProb(zi, out, lse, j);
                }
                wi[r * l + j] = g;
            }
        }
        if (part != 1) {
            for (int j = 0; j < l; j++) {
                wi[s * l + j] = wi[s * l + j] + 2.0 * fermiProb(zi, out, lse, j) * is;
            }
        }
        if (psi != 0) {
            double v = -1.0;
            for (int j = 0; j < l; j++) {
                v = v + fermiCoef(wt, is, s, k, l, j, 0) * fermiProb(zi, out, lse, j);
            }
            psi[i] = v;
        }
    }
}

// sq[i] += w2 * |wrow_i|^2 (wrow n x width): W's share of sample i's joint
// squared norm, weighted by kappa^2 (fermi's wBlock.SqNorms).
extern "C" __global__ void fairdp_fermi_w_sqnorms(double* sq, const double* wrow, int n, int width, double w2) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const double* wi = wrow + (size_t)i * width;
        double s = 0.0;
        for (int j = 0; j < width; j++) {
            s = s + wi[j] * wi[j];
        }
        sq[i] = sq[i] + w2 * s;
    }
}

// sum[t*width + j] = sum over samples i of matrix t (t = labels[i] when
// mats > 1, else 0) of scale[i] * rows[i*width + j] (scale null: 1), for
// t < mats and j < width: one block per output, the samples in the fixed
// order of blockSum. Every output is written, zero for an empty batch.
extern "C" __global__ void fairdp_fermi_sums(double* sum, const double* rows, const float* scale, const int* labels,
                                             int n, int width, int mats) {
    __shared__ double sh[FAIRDP_BLOCK];
    const int outs = mats * width;
    for (int o = blockIdx.x; o < outs; o += gridDim.x) {
        const int t = o / width, j = o - t * width;
        double acc = 0.0;
        for (int i = threadIdx.x; i < n; i += FAIRDP_BLOCK) {
            if (mats > 1 && labels[i] != t) {
                continue;
            }
            const double v = rows[(size_t)i * width + j];
            acc = acc + (scale == 0 ? v : (double)scale[i] * v);
        }
        acc = blockSum(acc, sh);
        if (threadIdx.x == 0) {
            sum[o] = acc;
        }
    }
}

// count[0] = the number of i < n with v[i] > bound (as a double; the
// samples a clip bound shortened). One block.
extern "C" __global__ void fairdp_count_above(double* count, const double* v, int n, double bound) {
    __shared__ double sh[FAIRDP_BLOCK];
    double acc = 0.0;
    for (int i = threadIdx.x; i < n; i += FAIRDP_BLOCK) {
        if (v[i] > bound) {
            acc = acc + 1.0;
        }
    }
    acc = blockSum(acc, sh);
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        count[0] = acc;
    }
}

// dz[e] = (float)(a * scale[i] * dz[e]) + extra[e] for the n x out values
// (i = e / out): the clipped pass's output gradient, shortened by sample i's
// clip factor and multiplied by a, plus the pass summed without clipping,
// so that one backward pass gives a * sum_i c_i g_i + sum_i h_i.
extern "C" __global__ void fairdp_fermi_combine(float* dz, const float* extra, const float* scale, int n, int out,
                                                double a) {
    const int count = n * out;
    for (int e = blockIdx.x * blockDim.x + threadIdx.x; e < count; e += gridDim.x * blockDim.x) {
        const int i = e / out;
        dz[e] = (float)(a * (double)scale[i] * (double)dz[e]) + extra[e];
    }
}
