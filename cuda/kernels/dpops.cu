// The hot kernels of a private training step (package dpops on the CPU):
// per-sample squared gradient norms from the layers' taps, clip factors,
// clipped gradient sums and Gaussian noise. Each kernel's contract and
// arithmetic is mirrored by the method of the same name on cuda.CPU
// (twin.go); see fairdp.cuh for the rules that make them agree bit for bit.
//
// All kernels use one-dimensional blocks of FAIRDP_BLOCK threads and
// grid-stride loops, so any grid size is correct. Sizes are ints (the Go side
// rejects buffers of 2^31 elements or more); sample-major layouts throughout.
#include "fairdp.cuh"

// sq[i] += |a_i|^2 |b_i|^2 (+ |b_i|^2 when bias != 0): the squared norm of
// the per-sample gradient (a_i (x) b_i, b_i) of a linear layer whose input rows
// are a (n x in) and whose backprop rows are b (n x out). One block per sample.
extern "C" __global__ void fairdp_linear_sqnorms(double* sq, const float* a, const float* b,
                                                 int n, int in, int out, int bias) {
    __shared__ double sh[FAIRDP_BLOCK];
    for (int i = blockIdx.x; i < n; i += gridDim.x) {
        const double na = blockSum(sqSumStrided(a + (size_t)i * in, in), sh);
        const double nb = blockSum(sqSumStrided(b + (size_t)i * out, out), sh);
        if (threadIdx.x == 0) {
            double g = na * nb;
            if (bias) {
                g = g + nb;
            }
            sq[i] = sq[i] + g;
        }
    }
}

// Tile sizes of fairdp_conv_sqnorms_part: output channels per block and
// output positions per shared-memory tile (convNormChannels in conv.go).
#define FAIRDP_CONV_TILE_O 8
#define FAIRDP_CONV_TILE_P 32

// part[i*outC + o] = sum_r (sum_p B_i[o,p] U_i[r,p])^2: row o's share of the
// squared norm of sample i's convolution gradient B_i U_i^T, from the unfolded
// input u (n x kk x hw, last row ones for the bias) and the backprop b
// (n x outC x hw). One block per (sample, tile of FAIRDP_CONV_TILE_O output
// channels). Rows r go to threads in chunks of FAIRDP_BLOCK (thread t: r =
// t, t+BLOCK, ...); for each chunk the block stages U's rows and the tile's
// B rows in shared memory FAIRDP_CONV_TILE_P positions at a time (coalesced
// loads; U is read once per tile of channels, not once per channel), and
// thread t accumulates G[o,r] = sum_p B[o,p] U[r,p] for every channel of the
// tile in registers. The arithmetic is the naive kernel's: each G[o,r] in
// double over p ascending (convDot), fma(G, G, acc) over the thread's r
// ascending, then blockSum; so the tiling does not change one bit.
extern "C" __global__ void fairdp_conv_sqnorms_part(double* part, const float* u, const float* b,
                                                    int n, int outC, int kk, int hw) {
    __shared__ double sh[FAIRDP_BLOCK];
    __shared__ float su[FAIRDP_BLOCK][FAIRDP_CONV_TILE_P + 1];  // +1: thread t's row in its own bank
    __shared__ float sb[FAIRDP_CONV_TILE_O][FAIRDP_CONV_TILE_P];
    const int t = threadIdx.x;
    const int tiles = (outC + FAIRDP_CONV_TILE_O - 1) / FAIRDP_CONV_TILE_O;
    const int units = n * tiles;
    for (int unit = blockIdx.x; unit < units; unit += gridDim.x) {
        const int i = unit / tiles, o0 = (unit - i * tiles) * FAIRDP_CONV_TILE_O;
        const int to = min(FAIRDP_CONV_TILE_O, outC - o0);
        const float* bi = b + ((size_t)i * outC + o0) * hw;
        const float* ui = u + (size_t)i * kk * hw;
        double acc[FAIRDP_CONV_TILE_O];
        for (int k = 0; k < FAIRDP_CONV_TILE_O; k++) {
            acc[k] = 0.0;
        }
        for (int r0 = 0; r0 < kk; r0 += FAIRDP_BLOCK) {
            const int rows = min(FAIRDP_BLOCK, kk - r0);
            double g[FAIRDP_CONV_TILE_O];
            for (int k = 0; k < FAIRDP_CONV_TILE_O; k++) {
                g[k] = 0.0;
            }
            for (int p0 = 0; p0 < hw; p0 += FAIRDP_CONV_TILE_P) {
                const int tp = min(FAIRDP_CONV_TILE_P, hw - p0);
                for (int e = t; e < rows * tp; e += FAIRDP_BLOCK) {
                    const int rr = e / tp, pp = e - rr * tp;
                    su[rr][pp] = ui[(size_t)(r0 + rr) * hw + p0 + pp];
                }
                for (int e = t; e < to * tp; e += FAIRDP_BLOCK) {
                    const int oo = e / tp, pp = e - oo * tp;
                    sb[oo][pp] = bi[(size_t)oo * hw + p0 + pp];
                }
                __syncthreads();
                if (t < rows) {
                    for (int pp = 0; pp < tp; pp++) {
                        const double uv = (double)su[t][pp];
                        for (int k = 0; k < to; k++) {
                            g[k] = fma((double)sb[k][pp], uv, g[k]);
                        }
                    }
                }
                __syncthreads();
            }
            if (t < rows) {
                for (int k = 0; k < to; k++) {
                    acc[k] = fma(g[k], g[k], acc[k]);
                }
            }
        }
        for (int k = 0; k < to; k++) {
            const double s = blockSum(acc[k], sh);
            if (t == 0) {
                part[(size_t)i * outC + o0 + k] = s;
            }
        }
    }
}

// sq[i] += sum_{j<m} part[i*m + j], j ascending: folds the per-channel parts
// of fairdp_conv_sqnorms_part into the per-sample norms.
extern "C" __global__ void fairdp_rows_sum_add(double* sq, const double* part, int n, int m) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        double s = 0.0;
        for (int j = 0; j < m; j++) {
            s = s + part[(size_t)i * m + j];
        }
        sq[i] = sq[i] + s;
    }
}

// For each sample: norms[i] = sqrt(sq[i]) and scale[i] = min(1, C_i/norms[i])
// rounded to float, with C_i = bounds[i], or flat when bounds is null (a
// joint clip over several blocks is their norms summed into sq first).
// bad[0] gets the smallest i whose sq[i] is negative or not finite, bad[1]
// the smallest whose bound is not > 0; the caller sets both to n beforehand.
extern "C" __global__ void fairdp_clip_factors(float* scale, double* norms, int* bad,
                                               const double* sq, const double* bounds,
                                               double flat, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const double s = sq[i];
        if (!(s >= 0.0) || isinf(s)) {
            atomicMin(&bad[0], i);
            continue;
        }
        const double g = sqrt(s);
        norms[i] = g;
        const double c = bounds ? bounds[i] : flat;
        if (!(c > 0.0)) {
            atomicMin(&bad[1], i);
            continue;
        }
        scale[i] = (float)(g <= c ? 1.0 : c / g);
    }
}

// dst[i*rowLen + j] = scale[i] * b[i*rowLen + j] (float product): backprop
// rows scaled by their clip factors, ready for an ordinary weight-gradient
// GEMM. dst may be b.
extern "C" __global__ void fairdp_scale_rows(float* dst, const float* b, const float* scale,
                                             int n, int rowLen) {
    const size_t total = (size_t)n * rowLen;
    for (size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x; k < total;
         k += (size_t)gridDim.x * blockDim.x) {
        dst[k] = scale[k / rowLen] * b[k];
    }
}

// The clipped sum of a linear layer: dw[p,q] += sum_i scale_i b[i,q] a[i,p]
// and, when db is not null, db[q] += sum_i scale_i b[i,q], accumulated in
// double over i ascending. One thread per gradient entry; entries
// in*out .. (in+1)*out-1 are the bias.
extern "C" __global__ void fairdp_linear_clipped_grad(float* dw, float* db, const float* a,
                                                      const float* b, const float* scale,
                                                      int n, int in, int out) {
    const int total = (in + (db ? 1 : 0)) * out;
    for (int idx = blockIdx.x * blockDim.x + threadIdx.x; idx < total; idx += gridDim.x * blockDim.x) {
        const int p = idx / out, q = idx - p * out;
        double acc = 0.0;
        for (int i = 0; i < n; i++) {
            const double cb = (double)scale[i] * (double)b[(size_t)i * out + q];
            const double av = p < in ? (double)a[(size_t)i * in + p] : 1.0;
            acc = fma(cb, av, acc);
        }
        float* g = p < in ? &dw[idx] : &db[q];
        *g = (float)((double)*g + acc);
    }
}

// The clipped sum of a convolution: [dw | db][o,r] += sum_i scale_i
// sum_p B_i[o,p] U_i[r,p] (double, i then p ascending). dw is outC x (kk-1),
// db is outC (the ones row r = kk-1). One thread per entry (o, r).
extern "C" __global__ void fairdp_conv_clipped_grad(float* dw, float* db, const float* u,
                                                    const float* b, const float* scale,
                                                    int n, int outC, int kk, int hw) {
    const int total = outC * kk;
    for (int idx = blockIdx.x * blockDim.x + threadIdx.x; idx < total; idx += gridDim.x * blockDim.x) {
        const int o = idx / kk, r = idx - o * kk;
        double acc = 0.0;
        for (int i = 0; i < n; i++) {
            const double g = convDot(b + ((size_t)i * outC + o) * hw, u + ((size_t)i * kk + r) * hw, hw);
            acc = fma((double)scale[i], g, acc);
        }
        float* g = r < kk - 1 ? &dw[(size_t)o * (kk - 1) + r] : &db[o];
        *g = (float)((double)*g + acc);
    }
}

// dst[j] += std * z_j with z_j ~ N(0,1): elements 2p and 2p+1 take the two
// Box-Muller draws of Philox4x32-10 at counter (p, stream, nonce0, nonce1)
// under key (key0, key1). The noise of element j depends only on (key,
// nonce, stream, j), never on the launch shape. Added in double, rounded once.
// fairdp_add_gaussian and fairdp_add_gaussian_at are this loop with std
// given by the host or read from device memory.
__device__ __forceinline__ void addGaussian(float* dst, int n, double std, unsigned key0, unsigned key1,
                                            unsigned nonce0, unsigned nonce1, unsigned stream) {
    const int pairs = n / 2 + (n & 1);
    for (int p = blockIdx.x * blockDim.x + threadIdx.x; p < pairs; p += gridDim.x * blockDim.x) {
        const uint4 r = philox4x32_10(make_uint4((unsigned)p, stream, nonce0, nonce1), make_uint2(key0, key1));
        double z0, z1;
        gaussianPair(r, &z0, &z1);
        const int j = 2 * p;
        dst[j] = (float)fma(std, z0, (double)dst[j]);
        if (j + 1 < n) {
            dst[j + 1] = (float)fma(std, z1, (double)dst[j + 1]);
        }
    }
}

extern "C" __global__ void fairdp_add_gaussian(float* dst, int n, double std, unsigned key0,
                                               unsigned key1, unsigned nonce0, unsigned nonce1,
                                               unsigned stream) {
    addGaussian(dst, n, std, key0, key1, nonce0, nonce1, stream);
}

// fairdp_add_gaussian with the std the device computed (*std, a group
// rule's σ·sensitivity: fairdp_group_rule), so that the host need not
// read it mid-step. A std of 0 adds nothing, as the host skips the launch.
extern "C" __global__ void fairdp_add_gaussian_at(float* dst, int n, const double* std, unsigned key0,
                                                  unsigned key1, unsigned nonce0, unsigned nonce1,
                                                  unsigned stream) {
    const double s = *std;
    if (s == 0.0) {
        return;
    }
    addGaussian(dst, n, s, key0, key1, nonce0, nonce1, stream);
}
