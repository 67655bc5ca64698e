// Shared device code of fairdp's CUDA kernels.
//
// Every function here has a Go twin in package cuda (twin.go, philox.go) that
// performs the same IEEE operations in the same order, so a kernel and its twin
// agree bit for bit. Rules that keep it so:
//   - the PTX is built with -fmad=false: nvcc never fuses a*b+c on its own;
//     every fused multiply-add is an explicit fma(), mirrored by math.FMA;
//   - reductions run in double with a fixed order: each of the FAIRDP_BLOCK
//     threads sums a strided slice sequentially, then a shared-memory tree
//     halves the partial sums (blockSum in twin.go does the same);
//   - only correctly rounded operations are used (+ - * / sqrt fma, exact
//     conversions and frexp); log, sin and cos are this file's own
//     polynomials, not CUDA's libdevice, whose results differ from Go's math.
#ifndef FAIRDP_CUH
#define FAIRDP_CUH

#define FAIRDP_BLOCK 256

// blockSum returns the sum of v over the block's FAIRDP_BLOCK threads, the
// same value in every thread. sh is FAIRDP_BLOCK doubles of shared memory.
__device__ __forceinline__ double blockSum(double v, double* sh) {
    const int t = threadIdx.x;
    sh[t] = v;
    __syncthreads();
    for (int s = FAIRDP_BLOCK / 2; s > 0; s >>= 1) {
        if (t < s) {
            sh[t] = sh[t] + sh[t + s];
        }
        __syncthreads();
    }
    const double r = sh[0];
    __syncthreads();
    return r;
}

// sqSumStrided is thread t's share of sum(x[j]^2): j = t, t+BLOCK, ...
__device__ __forceinline__ double sqSumStrided(const float* x, int len) {
    double acc = 0.0;
    for (int j = threadIdx.x; j < len; j += FAIRDP_BLOCK) {
        const double v = (double)x[j];
        acc = fma(v, v, acc);
    }
    return acc;
}

// convDot is one entry of a per-sample convolution gradient:
// sum over output positions p of B[o,p]*U[r,p], in double, p ascending.
__device__ __forceinline__ double convDot(const float* brow, const float* urow, int hw) {
    double g = 0.0;
    for (int p = 0; p < hw; p++) {
        g = fma((double)brow[p], (double)urow[p], g);
    }
    return g;
}

// rowMaxExpSum sets *m to the largest of z[0..n) and *s to sum_j exp(z_j - m),
// in double, as nn's logSumExp: the softmax cross-entropy (train.cu) and
// DP-FERMI's probabilities (ermi.cu) share it.
__device__ __forceinline__ void rowMaxExpSum(const float* z, int n, double* m, double* s) {
    double mx = -INFINITY;
    for (int j = 0; j < n; j++) {
        mx = fmax(mx, (double)z[j]);
    }
    double sum = 0.0;
    for (int j = 0; j < n; j++) {
        sum = sum + exp((double)z[j] - mx);
    }
    *m = mx;
    *s = sum;
}

// goMax is Go's built-in max for floats: NaN wins, and +0 > -0. A NaN
// result is the canonical quiet NaN 0x7fc00000 whatever the NaN operand's
// sign and payload, as Go's max returns on amd64 (nn.ReLU's backward gate
// reads the sign bit of its output, so the NaN's bits matter).
__device__ __forceinline__ float goMax(float a, float b) {
    if (a != a || b != b) return __uint_as_float(0x7fc00000u);
    if (a > b) return a;
    if (b > a) return b;
    return signbit(a) ? b : a;
}

// ---- Philox4x32-10 (Salmon et al., SC'11; Random123's constants) ----

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

__device__ __forceinline__ uint4 philox4x32_10(uint4 c, uint2 k) {
    for (int round = 0; round < 10; round++) {
        if (round > 0) {
            k.x += PHILOX_W0;
            k.y += PHILOX_W1;
        }
        const unsigned hi0 = __umulhi(PHILOX_M0, c.x), lo0 = PHILOX_M0 * c.x;
        const unsigned hi1 = __umulhi(PHILOX_M1, c.z), lo1 = PHILOX_M1 * c.z;
        c = make_uint4(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
    }
    return c;
}

// ---- deterministic log and sincos for Box-Muller ----
// The literals between the markers are checked against philox.go by
// TestKernelCoefficientsMatchTwin (same doubles, same order).
// BEGIN COEFFICIENTS
#define FAIRDP_SQRT_HALF 0.70710678118654757
#define FAIRDP_LN2_HI 0.69314718036912382
#define FAIRDP_LN2_LO 1.9082149292705877e-10
#define FAIRDP_LOG_C1 0.33333333333333331
#define FAIRDP_LOG_C2 0.20000000000000001
#define FAIRDP_LOG_C3 0.14285714285714285
#define FAIRDP_LOG_C4 0.1111111111111111
#define FAIRDP_LOG_C5 0.090909090909090912
#define FAIRDP_LOG_C6 0.076923076923076927
#define FAIRDP_LOG_C7 0.066666666666666666
#define FAIRDP_LOG_C8 0.058823529411764705
#define FAIRDP_LOG_C9 0.052631578947368418
#define FAIRDP_LOG_C10 0.047619047619047616
#define FAIRDP_LOG_C11 0.043478260869565216
#define FAIRDP_PI_2 1.5707963267948966
#define FAIRDP_SIN_C1 -0.16666666666666666
#define FAIRDP_SIN_C2 0.0083333333333333332
#define FAIRDP_SIN_C3 -0.00019841269841269841
#define FAIRDP_SIN_C4 2.7557319223985893e-06
#define FAIRDP_SIN_C5 -2.505210838544172e-08
#define FAIRDP_SIN_C6 1.6059043836821613e-10
#define FAIRDP_SIN_C7 -7.6471637318198164e-13
#define FAIRDP_SIN_C8 2.8114572543455206e-15
#define FAIRDP_COS_C1 -0.5
#define FAIRDP_COS_C2 0.041666666666666664
#define FAIRDP_COS_C3 -0.0013888888888888889
#define FAIRDP_COS_C4 2.4801587301587302e-05
#define FAIRDP_COS_C5 -2.7557319223985888e-07
#define FAIRDP_COS_C6 2.08767569878681e-09
#define FAIRDP_COS_C7 -1.1470745597729725e-11
#define FAIRDP_COS_C8 4.7794773323873853e-14
#define FAIRDP_TWO_M53 1.1102230246251565e-16
// END COEFFICIENTS

// logUnit is ln(u) for u in (0, 1]: u = m*2^e with m in [sqrt(1/2), sqrt(2)),
// ln(m) = 2 atanh(s) with s = (m-1)/(m+1), |s| < 0.172, by its series to s^23.
__device__ __forceinline__ double logUnit(double u) {
    int e;
    double m = frexp(u, &e);
    if (m < FAIRDP_SQRT_HALF) {
        m = m * 2.0;
        e = e - 1;
    }
    const double s = (m - 1.0) / (m + 1.0);
    const double z = s * s;
    double p = FAIRDP_LOG_C11;
    p = fma(p, z, FAIRDP_LOG_C10);
    p = fma(p, z, FAIRDP_LOG_C9);
    p = fma(p, z, FAIRDP_LOG_C8);
    p = fma(p, z, FAIRDP_LOG_C7);
    p = fma(p, z, FAIRDP_LOG_C6);
    p = fma(p, z, FAIRDP_LOG_C5);
    p = fma(p, z, FAIRDP_LOG_C4);
    p = fma(p, z, FAIRDP_LOG_C3);
    p = fma(p, z, FAIRDP_LOG_C2);
    p = fma(p, z, FAIRDP_LOG_C1);
    const double sz = s * z;
    const double logm = 2.0 * fma(sz, p, s);
    const double fe = (double)e;
    const double lo = fe * FAIRDP_LN2_LO;
    return fe * FAIRDP_LN2_HI + (lo + logm);
}

// sincos2pi sets *s = sin(2*pi*u) and *c = cos(2*pi*u) for u in [0, 1):
// 4u = q + f exactly with f in [-1/2, 1/2], then Taylor series of
// sin and cos at x = f*pi/2 and the quadrant q.
__device__ __forceinline__ void sincos2pi(double u, double* s, double* c) {
    const double t = 4.0 * u;
    double q = floor(t);
    double f = t - q;
    if (f > 0.5) {
        f = f - 1.0;
        q = q + 1.0;
    }
    const double x = f * FAIRDP_PI_2;
    const double z = x * x;
    double ps = FAIRDP_SIN_C8;
    ps = fma(ps, z, FAIRDP_SIN_C7);
    ps = fma(ps, z, FAIRDP_SIN_C6);
    ps = fma(ps, z, FAIRDP_SIN_C5);
    ps = fma(ps, z, FAIRDP_SIN_C4);
    ps = fma(ps, z, FAIRDP_SIN_C3);
    ps = fma(ps, z, FAIRDP_SIN_C2);
    ps = fma(ps, z, FAIRDP_SIN_C1);
    const double xz = x * z;
    const double sn = fma(xz, ps, x);
    double pc = FAIRDP_COS_C8;
    pc = fma(pc, z, FAIRDP_COS_C7);
    pc = fma(pc, z, FAIRDP_COS_C6);
    pc = fma(pc, z, FAIRDP_COS_C5);
    pc = fma(pc, z, FAIRDP_COS_C4);
    pc = fma(pc, z, FAIRDP_COS_C3);
    pc = fma(pc, z, FAIRDP_COS_C2);
    pc = fma(pc, z, FAIRDP_COS_C1);
    const double cs = fma(z, pc, 1.0);
    switch ((int)q & 3) {
    case 0: *s = sn; *c = cs; break;
    case 1: *s = cs; *c = -sn; break;
    case 2: *s = -sn; *c = -cs; break;
    default: *s = -cs; *c = sn; break;
    }
}

// gaussianPair turns one Philox output into two independent N(0,1) draws by
// Box-Muller: u1 in (0,1] from words x,y and u2 in [0,1) from words z,w,
// 53 bits each; |z| <= sqrt(2*53*ln 2) = 8.57.
__device__ __forceinline__ void gaussianPair(uint4 r, double* z0, double* z1) {
    const unsigned long long a = ((unsigned long long)r.y << 32) | r.x;
    const unsigned long long b = ((unsigned long long)r.w << 32) | r.z;
    const double u1 = (double)((a >> 11) + 1ull) * FAIRDP_TWO_M53;
    const double u2 = (double)(b >> 11) * FAIRDP_TWO_M53;
    const double rad = sqrt(-2.0 * logUnit(u1));
    double s, c;
    sincos2pi(u2, &s, &c);
    *z0 = rad * c;
    *z1 = rad * s;
}

#endif
