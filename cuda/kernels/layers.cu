// Element-wise pieces of fairdp's models (package nn on the CPU): the unfold
// (im2col) that convolution norms and gradients read and its adjoint (col2im,
// for the convolution's input gradient), bias add, ReLU and 2-D max-pooling. Each kernel's contract is mirrored by the method of the same
// name on cuda.CPU (twin.go), and those match nn's layers bit for bit.
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
