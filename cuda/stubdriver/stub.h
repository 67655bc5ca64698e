// What the stand-in libcuda.so.1 (driver.cc) exports beyond the driver API:
// the allocation check its cuBLAS (cublas.cc) uses, and the counters that
// `make gpu-counts` reads.
#ifndef FAIRDP_STUB_H
#define FAIRDP_STUB_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int64_t calls;     // driver and cuBLAS calls that queue or wait for device work
    int64_t launches;  // cuLaunchKernel
    int64_t gemms;     // cuBLAS GEMM calls
    int64_t syncs;     // cuStreamSynchronize, cuCtxSynchronize
    int64_t h2d_bytes, d2h_bytes;
    int64_t peak_bytes;  // most device memory allocated at once
    int64_t events;      // cuEventRecord, cuStreamWaitEvent
    int64_t pageable_async_bytes;  // asynchronous copies from or to memory not from cuMemHostAlloc
} FairdpStubCounters;

// fairdp_stub_check returns 0 when [p, p+bytes) lies inside one live allocation.
int fairdp_stub_check(const void* p, size_t bytes);
void fairdp_stub_counters(FairdpStubCounters* c);
void fairdp_stub_count_gemm(void);

#ifdef __cplusplus
}
#endif
#endif
