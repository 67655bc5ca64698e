// Kernels of a device-resident training step (cuda.DeviceMLP): the losses
// of nn.SigmoidBCE and nn.SoftmaxCrossEntropy, the release-and-update of
// dpops.NoiseAndScale followed by nn.SGD, and a fill. The linear layers
// themselves are cuBLAS GEMMs, the per-sample work the kernels of dpops.cu.
//
// Unlike dpops.cu these are checked against package nn to a tolerance, not
// bit for bit: the losses use exp, log and log1p, whose last bits differ between
// CUDA's libdevice, glibc and Go's math.
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
        double m = -INFINITY;
        for (int j = 0; j < classes; j++) {
            m = fmax(m, (double)zi[j]);
        }
        double s = 0.0;
        for (int j = 0; j < classes; j++) {
            s = s + exp((double)zi[j] - m);
        }
        const int y = labels[i];
        loss[i] = (float)(m + log(s) - (double)zi[y]);
        for (int j = 0; j < classes; j++) {
            di[j] = (float)(exp((double)zi[j] - m) / s);
        }
        di[y] = di[y] - 1.0f;
    }
}

// The release and plain-SGD update of one parameter buffer, in float as
// dpops.NoiseAndScale and nn.SGD do it: g = grad[j]·scale (kept in grad),
// then w[j] = w[j] - lr·g.
extern "C" __global__ void fairdp_sgd_step(float* w, float* grad, int count, float scale, float lr) {
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < count; j += gridDim.x * blockDim.x) {
        const float g = grad[j] * scale;
        grad[j] = g;
        w[j] = w[j] - lr * g;
    }
}
