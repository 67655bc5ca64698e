// cuda_shim.h lets the system C++ compiler (g++ ≥ 9, C++17) compile fairdp's
// CUDA kernel sources (cuda/kernels/*.cu) unchanged for the CPU: the
// emulated device of package cuda (build tag `cudaemu`) includes this header,
// then the .cu files, and runs each kernel launch as the CUDA execution model
// says: every block's threads are fibers on one OS thread that meet at a real
// barrier in __syncthreads; blocks run on a small pool of OS threads.
//
// What it supplies: the execution-space qualifiers (__global__, __device__,
// __host__, __forceinline__), __shared__ (one copy per block: a
// function-static thread_local, as a block's fibers share one OS thread),
// threadIdx/blockIdx/blockDim/gridDim, __syncthreads, the vector types the
// kernels use, integer and floating-point atomics, CUDA's integer and
// bit-cast intrinsics, the fast-math intrinsics (__expf etc., here computed
// by the correctly rounded libm functions, so they are more accurate than on
// a GPU) and CUDA's global min/max overloads. Math functions (fma, sqrt,
// frexp, floor, isinf, signbit, ...) are libm's, which are correctly rounded
// where CUDA's are (+ - * / sqrt fma); the emulator is compiled with
// -ffp-contract=off, as the PTX is with -fmad=false, so no multiply-add is
// fused unless the source says fma().
//
// Not supplied: dynamic shared memory (extern __shared__), warp intrinsics
// (__shfl*, __ballot*, warp-synchronous code), textures, cooperative groups.
// fairdp's kernels use none of them; a kernel that does fails to compile here
// rather than run wrongly.
#ifndef FAIRDP_CUDA_SHIM_H
#define FAIRDP_CUDA_SHIM_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct uint2 { unsigned int x, y; };
struct uint3 { unsigned int x, y, z; };
struct uint4 { unsigned int x, y, z, w; };
struct int2 { int x, y; };
struct int4 { int x, y, z, w; };
struct float2 { float x, y; };
struct float4 { float x, y, z, w; };
struct double2 { double x, y; };
typedef uint3 dim3;

static inline uint2 make_uint2(unsigned int x, unsigned int y) { return uint2{x, y}; }
static inline uint3 make_uint3(unsigned int x, unsigned int y, unsigned int z) { return uint3{x, y, z}; }
static inline uint4 make_uint4(unsigned int x, unsigned int y, unsigned int z, unsigned int w) { return uint4{x, y, z, w}; }
static inline int2 make_int2(int x, int y) { return int2{x, y}; }
static inline int4 make_int4(int x, int y, int z, int w) { return int4{x, y, z, w}; }
static inline float2 make_float2(float x, float y) { return float2{x, y}; }
static inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
static inline double2 make_double2(double x, double y) { return double2{x, y}; }

// The emulator's per-thread state (emu_runtime.cc): the running fiber's
// threadIdx, and the block's blockIdx, blockDim and gridDim.
namespace fairdp_emu {
extern thread_local const uint3* thread_idx;
extern thread_local uint3 block_idx, block_dim, grid_dim;
void syncthreads();
}  // namespace fairdp_emu

#define __global__
#define __device__
#define __host__
#define __noinline__ __attribute__((noinline))
#define __forceinline__ inline __attribute__((always_inline))
#define __restrict__ __restrict
#define __shared__ static thread_local
#define __constant__ static const
#define threadIdx (*::fairdp_emu::thread_idx)
#define blockIdx (::fairdp_emu::block_idx)
#define blockDim (::fairdp_emu::block_dim)
#define gridDim (::fairdp_emu::grid_dim)
#define __syncthreads() ::fairdp_emu::syncthreads()
#define __threadfence() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#define __threadfence_block() __atomic_thread_fence(__ATOMIC_SEQ_CST)

// ---- integer and bit-cast intrinsics ----
static inline unsigned int __umulhi(unsigned int a, unsigned int b) {
    return (unsigned int)(((unsigned long long)a * b) >> 32);
}
static inline int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
static inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
static inline int __popc(unsigned int x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned int)x); }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline unsigned int __brev(unsigned int x) {
    x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
    x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
    x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
    x = ((x >> 8) & 0x00ff00ffu) | ((x & 0x00ff00ffu) << 8);
    return (x >> 16) | (x << 16);
}
static inline unsigned int __float_as_uint(float f) { unsigned int u; memcpy(&u, &f, 4); return u; }
static inline int __float_as_int(float f) { int u; memcpy(&u, &f, 4); return u; }
static inline float __uint_as_float(unsigned int u) { float f; memcpy(&f, &u, 4); return f; }
static inline float __int_as_float(int u) { float f; memcpy(&f, &u, 4); return f; }
static inline long long __double_as_longlong(double d) { long long u; memcpy(&u, &d, 8); return u; }
static inline double __longlong_as_double(long long u) { double d; memcpy(&d, &u, 8); return d; }

// ---- CUDA's global min/max overloads ----
static inline int min(int a, int b) { return a < b ? a : b; }
static inline int max(int a, int b) { return a > b ? a : b; }
static inline unsigned int min(unsigned int a, unsigned int b) { return a < b ? a : b; }
static inline unsigned int max(unsigned int a, unsigned int b) { return a > b ? a : b; }
static inline long long min(long long a, long long b) { return a < b ? a : b; }
static inline long long max(long long a, long long b) { return a > b ? a : b; }
static inline float min(float a, float b) { return fminf(a, b); }
static inline float max(float a, float b) { return fmaxf(a, b); }
static inline double min(double a, double b) { return fmin(a, b); }
static inline double max(double a, double b) { return fmax(a, b); }

// ---- fast-math intrinsics: libm here (more accurate than the GPU's) ----
// (macros: glibc's math.h declares its own functions of these names)
#define __expf(x) expf(x)
#define __exp10f(x) exp10f(x)
#define __logf(x) logf(x)
#define __log2f(x) log2f(x)
#define __log10f(x) log10f(x)
#define __sinf(x) sinf(x)
#define __cosf(x) cosf(x)
#define __sincosf(x, s, c) sincosf((x), (s), (c))
#define __tanf(x) tanf(x)
#define __powf(x, y) powf((x), (y))
static inline float __fdividef(float a, float b) { return a / b; }
static inline float __saturatef(float x) { return x != x ? 0.0f : (x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x)); }
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }
// Correctly rounded arithmetic with an explicit rounding mode: only
// round-to-nearest (_rn) is the default mode of the CPU.
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }
static inline int __float2int_rn(float x) { return (int)nearbyintf(x); }
static inline int __double2int_rn(double x) { return (int)nearbyint(x); }

// ---- atomics: blocks run on several OS threads, so these are real atomics ----
template <typename T>
static inline T fairdp_emu_atomic_add(T* p, T v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
static inline int atomicAdd(int* p, int v) { return fairdp_emu_atomic_add(p, v); }
static inline unsigned int atomicAdd(unsigned int* p, unsigned int v) { return fairdp_emu_atomic_add(p, v); }
static inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) { return fairdp_emu_atomic_add(p, v); }
// Floating-point atomicAdd by compare-and-swap on the bits; the order of
// concurrent additions (and so the rounding) depends on the schedule, as on
// a GPU.
static inline float atomicAdd(float* p, float v) {
    unsigned int* u = (unsigned int*)p;
    unsigned int old = __atomic_load_n(u, __ATOMIC_SEQ_CST), next;
    do {
        next = __float_as_uint(__uint_as_float(old) + v);
    } while (!__atomic_compare_exchange_n(u, &old, next, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
    return __uint_as_float(old);
}
static inline double atomicAdd(double* p, double v) {
    unsigned long long* u = (unsigned long long*)p;
    unsigned long long old = __atomic_load_n(u, __ATOMIC_SEQ_CST), next;
    do {
        next = (unsigned long long)__double_as_longlong(__longlong_as_double((long long)old) + v);
    } while (!__atomic_compare_exchange_n(u, &old, next, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
    return __longlong_as_double((long long)old);
}
template <typename T>
static inline T fairdp_emu_atomic_min(T* p, T v) {
    T old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
    while (v < old && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
    }
    return old;
}
template <typename T>
static inline T fairdp_emu_atomic_max(T* p, T v) {
    T old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
    while (v > old && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
    }
    return old;
}
static inline int atomicMin(int* p, int v) { return fairdp_emu_atomic_min(p, v); }
static inline unsigned int atomicMin(unsigned int* p, unsigned int v) { return fairdp_emu_atomic_min(p, v); }
static inline int atomicMax(int* p, int v) { return fairdp_emu_atomic_max(p, v); }
static inline unsigned int atomicMax(unsigned int* p, unsigned int v) { return fairdp_emu_atomic_max(p, v); }
static inline int atomicExch(int* p, int v) { return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST); }
static inline unsigned int atomicExch(unsigned int* p, unsigned int v) { return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST); }
static inline int atomicCAS(int* p, int cmp, int v) {
    __atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return cmp;
}
static inline unsigned int atomicCAS(unsigned int* p, unsigned int cmp, unsigned int v) {
    __atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return cmp;
}
static inline unsigned long long atomicCAS(unsigned long long* p, unsigned long long cmp, unsigned long long v) {
    __atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return cmp;
}

#endif
