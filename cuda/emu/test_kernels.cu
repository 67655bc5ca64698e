// Kernels that test the emulated device itself (emulator_test.go), compiled
// only into the emulator: thread and block coordinates of a 3-D launch,
// a shared-memory exchange across __syncthreads, atomics across blocks, a
// barrier that only some threads reach, and the kernels' Philox on its own.

// out[6*g .. 6*g+5] = threadIdx.xyz, blockIdx.xyz of the thread whose
// linear id (blocks and threads x-fastest) is g; dims[0..5] = blockDim, gridDim.
extern "C" __global__ void emu_test_coords(int* out, int* dims) {
    const int threads = blockDim.x * blockDim.y * blockDim.z;
    const int b = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    const int t = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
    int* o = out + 6 * (b * threads + t);
    o[0] = threadIdx.x; o[1] = threadIdx.y; o[2] = threadIdx.z;
    o[3] = blockIdx.x; o[4] = blockIdx.y; o[5] = blockIdx.z;
    if (b == 0 && t == 0) {
        dims[0] = blockDim.x; dims[1] = blockDim.y; dims[2] = blockDim.z;
        dims[3] = gridDim.x; dims[4] = gridDim.y; dims[5] = gridDim.z;
    }
}

// Each block reverses its blockDim.x elements of in into out through shared
// memory, twice (the second round reads what the first wrote), so a barrier
// that does not wait shows as a wrong permutation.
extern "C" __global__ void emu_test_reverse(float* out, const float* in) {
    __shared__ float sh[1024];
    const int t = threadIdx.x, n = blockDim.x, base = blockIdx.x * n;
    sh[t] = in[base + t];
    __syncthreads();
    const float v = sh[n - 1 - t];
    __syncthreads();
    sh[t] = v * 2.0f;
    __syncthreads();
    out[base + t] = sh[n - 1 - t];
}

// Grid-stride atomics: sums of x in float and double, its minimum and the
// number of elements.
extern "C" __global__ void emu_test_atomics(float* fsum, double* dsum, int* imin, unsigned* count,
                                            const float* x, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        atomicAdd(fsum, x[i]);
        atomicAdd(dsum, (double)x[i]);
        atomicMin(imin, (int)x[i]);
        atomicAdd(count, 1u);
    }
}

// Threads below k wait at a barrier the others never reach: undefined on a
// GPU, an error on the emulator.
extern "C" __global__ void emu_test_divergent(int* out, int k) {
    if ((int)threadIdx.x < k) {
        __syncthreads();
    }
    out[threadIdx.x] = 1;
}

// out[4i..4i+3] = philox4x32_10 (fairdp.cuh, the kernels' own generator) of
// counter ctr[4i..] under key key[2i..], so the device code itself can be
// checked against Random123's known answers.
extern "C" __global__ void emu_test_philox(unsigned* out, const unsigned* ctr, const unsigned* key, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const uint4 r = philox4x32_10(make_uint4(ctr[4 * i], ctr[4 * i + 1], ctr[4 * i + 2], ctr[4 * i + 3]),
                                      make_uint2(key[2 * i], key[2 * i + 1]));
        out[4 * i] = r.x;
        out[4 * i + 1] = r.y;
        out[4 * i + 2] = r.z;
        out[4 * i + 3] = r.w;
    }
}
