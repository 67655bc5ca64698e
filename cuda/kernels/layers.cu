// Element-wise pieces of fairdp's models (package nn on the CPU): the unfold
// (im2col) that convolution norms and gradients read and its adjoint (col2im,
// for the convolution's input gradient), bias add, ReLU, 2-D max-pooling and
// group normalisation. Each kernel's contract is mirrored by the method of the
// same name on cuda.CPU (twin.go); those match nn's layers bit for bit, except
// group normalisation's, whose sums run in blocks and agree with nn.GroupNorm
// to rounding.
// One-dimensional blocks, grid-stride loops; NCHW, sample-major layouts.
#include "fairdp.cuh"

// u (n x (ckk+1) x hw) = the unfolded input of a convolution, nn's layout:
// row r = (ci*k + ki)*k + kj, column oh*outW + ow, zero padding, and a last
// row of ones that carries the bias. x is n x inC x inH x inW.
extern "C" __global__ void fairdp_im2col(float* u, const float* x, int n, int inC, int inH, int inW,
                                         int k, int stride, int pad, int outH, int outW) {
    const int hw = outH * outW, ckk = inC * k * k;
    const size_t total = (size_t)n * (ckk + 1) * hw;
    for (size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += (size_t)gridDim.x * blockDim.x) {
        const int pos = (int)(idx % hw);
        const size_t row = idx / hw;
        const int r = (int)(row % (ckk + 1));
        const int i = (int)(row / (ckk + 1));
        if (r == ckk) {
            u[idx] = 1.0f;
            continue;
        }
        const int ci = r / (k * k), ki = (r / k) % k, kj = r % k;
        const int oh = pos / outW, ow = pos % outW;
        const int ih = oh * stride - pad + ki, iw = ow * stride - pad + kj;
        float v = 0.0f;
        if (ih >= 0 && ih < inH && iw >= 0 && iw < inW) {
            v = x[(((size_t)i * inC + ci) * inH + ih) * inW + iw];
        }
        u[idx] = v;
    }
}

// dx (n x inC x inH x inW) = the fold of du (n x ckk x hw, im2col's rows
// without the ones row): each input element gathers the du entries of every
// (ki, kj) whose window reads it, ki then kj ascending, summed in double and
// rounded once. With du_i = W^T B_i this is the convolution's input
// gradient. One thread per input element; no atomics.
extern "C" __global__ void fairdp_col2im(float* dx, const float* du, int n, int inC, int inH, int inW, int k,
                                        int stride, int pad, int outH, int outW) {
    const int hw = outH * outW, ckk = inC * k * k;
    const size_t total = (size_t)n * inC * inH * inW;
    for (size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += (size_t)gridDim.x * blockDim.x) {
        const int iw = (int)(idx % inW), ih = (int)((idx / inW) % inH);
        const int ci = (int)((idx / ((size_t)inW * inH)) % inC);
        const size_t i = idx / ((size_t)inW * inH * inC);
        const float* dui = du + i * ckk * hw;
        double acc = 0.0;
        for (int ki = 0; ki < k; ki++) {
            const int th = ih + pad - ki;
            if (th < 0 || th % stride != 0 || th / stride >= outH) continue;
            for (int kj = 0; kj < k; kj++) {
                const int tw = iw + pad - kj;
                if (tw < 0 || tw % stride != 0 || tw / stride >= outW) continue;
                acc = acc + (double)dui[(size_t)((ci * k + ki) * k + kj) * hw + (th / stride) * outW + tw / stride];
            }
        }
        dx[idx] = (float)acc;
    }
}

// y[(i*channels + c)*spatial + s] += bias[c].
extern "C" __global__ void fairdp_bias_add(float* y, const float* bias, int n, int channels, int spatial) {
    const size_t total = (size_t)n * channels * spatial;
    for (size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += (size_t)gridDim.x * blockDim.x) {
        y[idx] = y[idx] + bias[(idx / spatial) % channels];
    }
}

// y = max(x, 0) with Go's max: NaN propagates, -0 becomes +0.
extern "C" __global__ void fairdp_relu_forward(float* y, const float* x, int len) {
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < len; j += gridDim.x * blockDim.x) {
        y[j] = goMax(x[j], 0.0f);
    }
}

// dx = dy where the sign-bit test of nn's gateBackward passes on y
// (-int32(bits(y)) >> 31 all ones, i.e. y > 0 or a NaN with a clear sign
// bit), else +0 (the masked bits of dy).
extern "C" __global__ void fairdp_relu_backward(float* dx, const float* y, const float* dy, int len) {
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < len; j += gridDim.x * blockDim.x) {
        const unsigned bits = __float_as_uint(y[j]);
        const unsigned mask = (unsigned)((int)(0u - bits) >> 31);
        dx[j] = __uint_as_float(__float_as_uint(dy[j]) & mask);
    }
}

// Max over non-overlapping k x k windows (stride k, trailing rows/columns
// dropped). y and arg are n*c x outH x outW; arg is the index within the
// input plane of the first maximum in row-major order (the window's top-left
// when the maximum is NaN), as nn.MaxPool2d.
extern "C" __global__ void fairdp_maxpool_forward(float* y, int* arg, const float* x, int planes,
                                                  int h, int w, int k) {
    const int outH = h / k, outW = w / k, out = outH * outW;
    const size_t total = (size_t)planes * out;
    for (size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += (size_t)gridDim.x * blockDim.x) {
        const size_t p = idx / out;
        const int j = (int)(idx % out), oh = j / outW, ow = j % outW;
        const float* xp = x + p * h * w;
        const int top = oh * k * w + ow * k;
        float mx = xp[top];
        for (int ki = 0; ki < k; ki++) {
            for (int kj = 0; kj < k; kj++) {
                mx = goMax(mx, xp[top + ki * w + kj]);
            }
        }
        int best = top;
        bool found = false;
        for (int ki = 0; ki < k && !found; ki++) {
            for (int kj = 0; kj < k; kj++) {
                if (xp[top + ki * w + kj] == mx) {
                    best = top + ki * w + kj;
                    found = true;
                    break;
                }
            }
        }
        y[idx] = mx;
        arg[idx] = best;
    }
}

// dx (planes x h x w): each input element receives 0 + dy of the window whose
// arg-max it is, and +0 otherwise (elements outside every window included).
extern "C" __global__ void fairdp_maxpool_backward(float* dx, const float* dy, const int* arg,
                                                   int planes, int h, int w, int k) {
    const int outH = h / k, outW = w / k, out = outH * outW, in = h * w;
    const size_t total = (size_t)planes * in;
    for (size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
         idx += (size_t)gridDim.x * blockDim.x) {
        const size_t p = idx / in;
        const int pos = (int)(idx % in), ih = pos / w, iw = pos % w;
        const int oh = ih / k, ow = iw / k;
        float v = 0.0f;
        if (oh < outH && ow < outW) {
            const size_t o = p * out + oh * outW + ow;
            if (arg[o] == pos) {
                v = 0.0f + dy[o];
            }
        }
        dx[idx] = v;
    }
}

// Group normalisation forward (nn.GroupNorm): for sample i and group gr the
// m = (c/groups)*hw values at x + (i*groups + gr)*m have mean mu and variance
// v (both over m, in double: a strided sum per thread, then blockSum);
// invStd[i*groups + gr] = 1/sqrt(v + eps), xhat = (float)((x - mu)*invStd)
// and y = gamma[ch]*xhat + beta[ch] in float. One block per (sample, group).
extern "C" __global__ void fairdp_groupnorm_forward(float* y, float* xhat, double* invStd, const float* x,
                                                    const float* gamma, const float* beta, int n, int c, int hw,
                                                    int groups, double eps) {
    __shared__ double sh[FAIRDP_BLOCK];
    const int cpg = c / groups, m = cpg * hw, units = n * groups;
    for (int unit = blockIdx.x; unit < units; unit += gridDim.x) {
        const size_t off = (size_t)unit * m;
        const float* xg = x + off;
        double s = 0.0;
        for (int j = threadIdx.x; j < m; j += FAIRDP_BLOCK) {
            s = s + (double)xg[j];
        }
        const double mean = blockSum(s, sh) / (double)m;
        double v = 0.0;
        for (int j = threadIdx.x; j < m; j += FAIRDP_BLOCK) {
            const double d = (double)xg[j] - mean;
            v = fma(d, d, v);
        }
        const double inv = 1.0 / sqrt(blockSum(v, sh) / (double)m + eps);
        if (threadIdx.x == 0) {
            invStd[unit] = inv;
        }
        const int ch0 = (unit % groups) * cpg;
        for (int j = threadIdx.x; j < m; j += FAIRDP_BLOCK) {
            const float xh = (float)(((double)xg[j] - mean) * inv);
            const int ch = ch0 + j / hw;
            xhat[off + j] = xh;
            y[off + j] = gamma[ch] * xh + beta[ch];
        }
    }
}

// Group normalisation backward (nn.GroupNorm.Backward) from dy and the
// forward's xhat and invStd: ps (n x 2c) = each sample's [dgamma | dbeta],
// dgamma_ch = (float)sum dy*xhat and dbeta_ch = (float)sum dy over the
// channel's hw values (blockSum each); then, when dx is not null (the first
// layer needs none), per group with sdxx = sum gamma*dgamma and sdx = sum
// gamma*dbeta over its channels (ascending, fused) dx = (float)(invStd *
// (gamma*dy - sdx/m - xhat*sdxx/m)). One block per (sample, group).
extern "C" __global__ void fairdp_groupnorm_backward(float* dx, float* ps, const float* dy, const float* xhat,
                                                     const double* invStd, const float* gamma, int n, int c,
                                                     int hw, int groups) {
    __shared__ double sh[FAIRDP_BLOCK];
    const int cpg = c / groups, m = cpg * hw, units = n * groups;
    for (int unit = blockIdx.x; unit < units; unit += gridDim.x) {
        const size_t off = (size_t)unit * m;
        const int i = unit / groups, ch0 = (unit % groups) * cpg;
        float* psi = ps + (size_t)i * 2 * c;
        double sdx = 0.0, sdxx = 0.0;
        for (int k = 0; k < cpg; k++) {
            const float* dyc = dy + off + (size_t)k * hw;
            const float* xhc = xhat + off + (size_t)k * hw;
            double a = 0.0, b = 0.0;
            for (int j = threadIdx.x; j < hw; j += FAIRDP_BLOCK) {
                a = fma((double)dyc[j], (double)xhc[j], a);
                b = b + (double)dyc[j];
            }
            const float dg = (float)blockSum(a, sh);
            const float db = (float)blockSum(b, sh);
            if (threadIdx.x == 0) {
                psi[ch0 + k] = dg;
                psi[c + ch0 + k] = db;
            }
            const double gk = (double)gamma[ch0 + k];
            sdxx = fma(gk, (double)dg, sdxx);
            sdx = fma(gk, (double)db, sdx);
        }
        if (dx == 0) {
            continue;
        }
        const double inv = invStd[unit], mdx = sdx / (double)m, mdxx = sdxx / (double)m;
        for (int j = threadIdx.x; j < m; j += FAIRDP_BLOCK) {
            const double g = (double)gamma[ch0 + j / hw];
            const double t = g * (double)dy[off + j] - mdx;
            dx[off + j] = (float)(inv * (t - (double)xhat[off + j] * mdxx));
        }
    }
}
