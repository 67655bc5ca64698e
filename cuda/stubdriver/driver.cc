// A stand-in libcuda.so.1 for CI: the CUDA driver API entry points fairdp's
// Driver (cuda/gpu.go through gorgonia.org/cu) calls, served by the emulated
// device (cuda/emulator.cc: cuda/kernels/*.cu compiled for the CPU), so that
// `make test-gpu-driver` runs the real driver path, the code a GPU runs
// (gpu.go, cuinit.c, module loading, launches, the run-time loaded cuBLAS),
// on a machine without one. It checks what a GPU's driver checks and more:
// cuInit before anything, a current context on the calling thread for every
// call that needs one, PTX whose .target the device can run, each kernel's
// parameter count and sizes against its PTX .entry signature, launch shapes,
// and that every copy, pointer argument and GEMM operand lies inside one
// live allocation (allocations end at an inaccessible page, so a kernel
// running past one stops with SIGSEGV). Every failure is also printed on
// stderr, as a result code alone says little.
//
// Not a GPU: work runs synchronously on the calling thread (the emulator's
// worker threads for a launch), so ordering and asynchrony bugs that only a
// real stream shows are not caught; see docs/gpu.md.
//
// Environment: FAIRDP_STUB_SM (compute capability ×10, default 90),
// FAIRDP_STUB_DEVICES (default 1), FAIRDP_STUB_WORKERS (emulator threads,
// default 2). Built by build.sh; no part of a product build.
#include <cuda.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "stub.h"

extern "C" {
int fairdp_emu_kernel_count(void);
const char* fairdp_emu_kernel_name(int i);
const char* fairdp_emu_kernel_kinds(int i);
int fairdp_emu_launch(int i, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                      const uint64_t* args, int workers, char* err, int errlen);
}

namespace {

struct Alloc {
    size_t bytes;
    void* mapping;
    size_t mapped;
};

struct Context {
    int device;
};

struct Function {
    std::string name;
    int index;              // the emulator's kernel
    std::string kinds;      // the emulator's parameter kinds (p, 4, 8)
    std::vector<int> sizes; // the PTX parameters' sizes in bytes
};

struct Module {
    std::map<std::string, Function*> fns;
};

std::mutex mu;
bool initialized;
std::map<uintptr_t, Alloc> allocs;
std::map<uintptr_t, size_t> pinned;  // cuMemHostAlloc blocks: base → bytes
std::set<CUstream> streams;
std::map<CUevent, bool> events;  // live events → recorded at least once
size_t live_bytes, peak_bytes;
thread_local Context* current;
FairdpStubCounters counters;

int env_int(const char* name, int def) {
    const char* v = getenv(name);
    return v && *v ? atoi(v) : def;
}

CUresult fail(CUresult r, const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "stand-in libcuda: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    return r;
}

CUresult need_context(const char* call) {
    if (!initialized) return fail(CUDA_ERROR_NOT_INITIALIZED, "%s before cuInit", call);
    if (current == nullptr) return fail(CUDA_ERROR_INVALID_CONTEXT, "%s with no current context on this thread", call);
    return CUDA_SUCCESS;
}

// find returns whether [p, p+bytes) lies inside one live allocation (mu held).
bool find(uintptr_t p, size_t bytes) {
    auto it = allocs.upper_bound(p);
    if (it == allocs.begin()) return false;
    --it;
    size_t off = p - it->first;
    return off <= it->second.bytes && bytes <= it->second.bytes - off;
}

// is_pinned returns whether [p, p+bytes) lies inside one cuMemHostAlloc block (mu held).
bool is_pinned(const void* p, size_t bytes) {
    uintptr_t a = (uintptr_t)p;
    auto it = pinned.upper_bound(a);
    if (it == pinned.begin()) return false;
    --it;
    size_t off = a - it->first;
    return off <= it->second && bytes <= it->second - off;
}

// need_stream checks that s is a live stream (0, the legacy default
// stream, is one).
CUresult need_stream(const char* call, CUstream s) {
    if (s != nullptr && streams.count(s) == 0) return fail(CUDA_ERROR_INVALID_HANDLE, "%s: not a live stream", call);
    return CUDA_SUCCESS;
}

// parse_ptx lists the .entry signatures of a PTX module: name → parameter
// sizes; it returns the .target's architecture ×10 in *target.
bool parse_ptx(const char* ptx, std::map<std::string, std::vector<int>>* entries, int* target, std::string* err) {
    *target = -1;
    const char* t = strstr(ptx, "\n.target sm_");
    if (t == nullptr) {
        *err = "no .target sm_NN line";
        return false;
    }
    *target = atoi(t + strlen("\n.target sm_"));
    for (const char* p = strstr(ptx, ".entry "); p != nullptr; p = strstr(p, ".entry ")) {
        p += strlen(".entry ");
        const char* open = strchr(p, '(');
        if (open == nullptr) {
            *err = "an .entry without a parameter list";
            return false;
        }
        std::string name(p, open - p);
        while (!name.empty() && (name.back() == ' ' || name.back() == '\t')) name.pop_back();
        const char* close = strchr(open, ')');
        if (close == nullptr) {
            *err = "unterminated parameter list of " + name;
            return false;
        }
        std::vector<int> sizes;
        for (const char* q = strstr(open, ".param "); q != nullptr && q < close; q = strstr(q, ".param ")) {
            q += strlen(".param ");
            int bits = 0;
            if (sscanf(q, ".%*[usfb]%d", &bits) != 1 || (bits != 32 && bits != 64)) {
                *err = name + ": a parameter that is not a 32- or 64-bit scalar";
                return false;
            }
            sizes.push_back(bits / 8);
        }
        (*entries)[name] = sizes;
        p = close;
    }
    return true;
}

}  // namespace

extern "C" {

int fairdp_stub_check(const void* p, size_t bytes) {
    std::lock_guard<std::mutex> g(mu);
    return find((uintptr_t)p, bytes) ? 0 : -1;
}

void fairdp_stub_counters(FairdpStubCounters* c) {
    std::lock_guard<std::mutex> g(mu);
    *c = counters;
    c->peak_bytes = peak_bytes;
}

void fairdp_stub_count_gemm(void) {
    std::lock_guard<std::mutex> g(mu);
    counters.calls++;
    counters.gemms++;
}

CUresult cuInit(unsigned int flags) {
    if (flags != 0) return fail(CUDA_ERROR_INVALID_VALUE, "cuInit(%u): flags must be 0", flags);
    initialized = true;
    return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int* v) {
    *v = 12040;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int* n) {
    if (!initialized) return fail(CUDA_ERROR_NOT_INITIALIZED, "cuDeviceGetCount before cuInit");
    *n = env_int("FAIRDP_STUB_DEVICES", 1);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice* d, int ordinal) {
    if (!initialized) return fail(CUDA_ERROR_NOT_INITIALIZED, "cuDeviceGet before cuInit");
    if (ordinal < 0 || ordinal >= env_int("FAIRDP_STUB_DEVICES", 1))
        return fail(CUDA_ERROR_INVALID_DEVICE, "cuDeviceGet(%d): no such device", ordinal);
    *d = ordinal;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char* name, int len, CUdevice d) {
    if (!initialized) return fail(CUDA_ERROR_NOT_INITIALIZED, "cuDeviceGetName before cuInit");
    snprintf(name, (size_t)len, "fairdp stand-in driver (emulated device)");
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int* v, CUdevice_attribute attr, CUdevice d) {
    if (!initialized) return fail(CUDA_ERROR_NOT_INITIALIZED, "cuDeviceGetAttribute before cuInit");
    int sm = env_int("FAIRDP_STUB_SM", 90);
    switch (attr) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = sm / 10; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = sm % 10; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = env_int("FAIRDP_STUB_WORKERS", 2); return CUDA_SUCCESS;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = 32; return CUDA_SUCCESS;
    default: return fail(CUDA_ERROR_NOT_SUPPORTED, "cuDeviceGetAttribute(%d) is not emulated", (int)attr);
    }
}

CUresult cuDeviceComputeCapability(int* major, int* minor, CUdevice d) {
    int sm = env_int("FAIRDP_STUB_SM", 90);
    *major = sm / 10;
    *minor = sm % 10;
    return CUDA_SUCCESS;
}

CUresult cuCtxCreate_v2(CUcontext* ctx, unsigned int flags, CUdevice d) {
    if (!initialized) return fail(CUDA_ERROR_NOT_INITIALIZED, "cuCtxCreate before cuInit");
    Context* c = new Context{(int)d};
    current = c;
    *ctx = reinterpret_cast<CUcontext>(c);
    return CUDA_SUCCESS;
}

CUresult cuCtxDestroy_v2(CUcontext ctx) {
    Context* c = reinterpret_cast<Context*>(ctx);
    if (c == nullptr) return fail(CUDA_ERROR_INVALID_CONTEXT, "cuCtxDestroy(NULL)");
    if (current == c) current = nullptr;
    delete c;
    return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
    current = reinterpret_cast<Context*>(ctx);
    return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext* ctx) {
    *ctx = reinterpret_cast<CUcontext>(current);
    return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void) {
    if (CUresult r = need_context("cuCtxSynchronize")) return r;
    std::lock_guard<std::mutex> g(mu);
    counters.calls++;
    counters.syncs++;
    return CUDA_SUCCESS;
}

CUresult cuStreamCreate(CUstream* s, unsigned int flags) {
    if (CUresult r = need_context("cuStreamCreate")) return r;
    *s = reinterpret_cast<CUstream>(new int(1));
    std::lock_guard<std::mutex> g(mu);
    streams.insert(*s);
    return CUDA_SUCCESS;
}

CUresult cuStreamDestroy_v2(CUstream s) {
    if (CUresult r = need_context("cuStreamDestroy")) return r;
    std::lock_guard<std::mutex> g(mu);
    if (s == nullptr || streams.erase(s) == 0) return fail(CUDA_ERROR_INVALID_HANDLE, "cuStreamDestroy: not a live stream");
    delete reinterpret_cast<int*>(s);
    return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream s) {
    if (CUresult r = need_context("cuStreamSynchronize")) return r;
    std::lock_guard<std::mutex> g(mu);
    counters.calls++;
    counters.syncs++;
    return CUDA_SUCCESS;
}

CUresult cuMemGetInfo_v2(size_t* free_bytes, size_t* total) {
    if (CUresult r = need_context("cuMemGetInfo")) return r;
    std::lock_guard<std::mutex> g(mu);
    *total = (size_t)16 << 30;
    *free_bytes = *total - live_bytes;
    return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr* p, size_t bytes) {
    if (CUresult r = need_context("cuMemAlloc")) return r;
    if (bytes == 0) return fail(CUDA_ERROR_INVALID_VALUE, "cuMemAlloc(0)");
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t body = (bytes + 255) & ~(size_t)255;
    size_t span = (body + page - 1) / page * page;
    size_t total = span + 2 * page;
    char* m = (char*)mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return fail(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc(%zu): out of memory", bytes);
    mprotect(m, page, PROT_NONE);
    mprotect(m + page + span, page, PROT_NONE);
    char* base = m + page + span - body;
    memset(base, 0xff, body);  // like the emulator: memory never written reads as NaN
    std::lock_guard<std::mutex> g(mu);
    allocs[(uintptr_t)base] = Alloc{bytes, m, total};
    live_bytes += bytes;
    if (live_bytes > peak_bytes) peak_bytes = live_bytes;
    counters.calls++;
    *p = (CUdeviceptr)base;
    return CUDA_SUCCESS;
}

CUresult cuMemFree_v2(CUdeviceptr p) {
    if (CUresult r = need_context("cuMemFree")) return r;
    std::lock_guard<std::mutex> g(mu);
    auto it = allocs.find((uintptr_t)p);
    if (it == allocs.end()) return fail(CUDA_ERROR_INVALID_VALUE, "cuMemFree(%#llx): not a live allocation", (unsigned long long)p);
    munmap(it->second.mapping, it->second.mapped);
    live_bytes -= it->second.bytes;
    allocs.erase(it);
    counters.calls++;
    return CUDA_SUCCESS;
}

static CUresult copy(const char* call, void* dst, const void* src, uintptr_t dev, size_t bytes, bool h2d,
                     bool async = false, CUstream s = nullptr) {
    if (CUresult r = need_context(call)) return r;
    std::lock_guard<std::mutex> g(mu);
    if (async) {
        if (CUresult r = need_stream(call, s)) return r;
        if (!is_pinned(h2d ? src : dst, bytes)) counters.pageable_async_bytes += bytes;
    }
    if (!find(dev, bytes))
        return fail(CUDA_ERROR_INVALID_VALUE, "%s: %zu bytes at %#llx are not inside one live allocation", call, bytes,
                    (unsigned long long)dev);
    memcpy(dst, src, bytes);
    counters.calls++;
    (h2d ? counters.h2d_bytes : counters.d2h_bytes) += bytes;
    return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t bytes) {
    return copy("cuMemcpyHtoD", (void*)dst, src, dst, bytes, true);
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, size_t bytes, CUstream s) {
    return copy("cuMemcpyHtoDAsync", (void*)dst, src, dst, bytes, true, true, s);
}

CUresult cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t bytes) {
    return copy("cuMemcpyDtoH", dst, (const void*)src, src, bytes, false);
}

CUresult cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, size_t bytes, CUstream s) {
    return copy("cuMemcpyDtoHAsync", dst, (const void*)src, src, bytes, false, true, s);
}

// Pinned host memory: plain pages here (nothing DMAs them), tracked so that
// asynchronous copies from pageable memory can be counted and a bad free
// refused.
CUresult cuMemHostAlloc(void** p, size_t bytes, unsigned int flags) {
    if (CUresult r = need_context("cuMemHostAlloc")) return r;
    if (bytes == 0) return fail(CUDA_ERROR_INVALID_VALUE, "cuMemHostAlloc(0)");
    if (flags & ~0xfu) return fail(CUDA_ERROR_INVALID_VALUE, "cuMemHostAlloc: flags %#x", flags);
    void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return fail(CUDA_ERROR_OUT_OF_MEMORY, "cuMemHostAlloc(%zu): out of memory", bytes);
    std::lock_guard<std::mutex> g(mu);
    pinned[(uintptr_t)m] = bytes;
    *p = m;
    return CUDA_SUCCESS;
}

CUresult cuMemFreeHost(void* p) {
    if (CUresult r = need_context("cuMemFreeHost")) return r;
    std::lock_guard<std::mutex> g(mu);
    auto it = pinned.find((uintptr_t)p);
    if (it == pinned.end()) return fail(CUDA_ERROR_INVALID_VALUE, "cuMemFreeHost(%p): not a cuMemHostAlloc block", p);
    munmap(p, it->second);
    pinned.erase(it);
    return CUDA_SUCCESS;
}

// Events: work completes before each call returns, so an event is
// complete once recorded; what is checked is that it is live, recorded on
// a live stream, and recorded before anything waits on it (the driver
// returns at once for an event never recorded, which would hide a missing
// Record).
CUresult cuEventCreate(CUevent* e, unsigned int flags) {
    if (CUresult r = need_context("cuEventCreate")) return r;
    if (flags & ~0xfu) return fail(CUDA_ERROR_INVALID_VALUE, "cuEventCreate: flags %#x", flags);
    *e = reinterpret_cast<CUevent>(new int(1));
    std::lock_guard<std::mutex> g(mu);
    events[*e] = false;
    return CUDA_SUCCESS;
}

CUresult cuEventDestroy_v2(CUevent e) {
    if (CUresult r = need_context("cuEventDestroy")) return r;
    std::lock_guard<std::mutex> g(mu);
    if (events.erase(e) == 0) return fail(CUDA_ERROR_INVALID_HANDLE, "cuEventDestroy: not a live event");
    delete reinterpret_cast<int*>(e);
    return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent e, CUstream s) {
    if (CUresult r = need_context("cuEventRecord")) return r;
    std::lock_guard<std::mutex> g(mu);
    if (CUresult r = need_stream("cuEventRecord", s)) return r;
    auto it = events.find(e);
    if (it == events.end()) return fail(CUDA_ERROR_INVALID_HANDLE, "cuEventRecord: not a live event");
    it->second = true;
    counters.events++;
    return CUDA_SUCCESS;
}

static CUresult need_recorded(const char* call, CUevent e) {
    auto it = events.find(e);
    if (it == events.end()) return fail(CUDA_ERROR_INVALID_HANDLE, "%s: not a live event", call);
    if (!it->second) return fail(CUDA_ERROR_INVALID_VALUE, "%s: the event was never recorded", call);
    return CUDA_SUCCESS;
}

CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned int flags) {
    if (CUresult r = need_context("cuStreamWaitEvent")) return r;
    std::lock_guard<std::mutex> g(mu);
    if (CUresult r = need_stream("cuStreamWaitEvent", s)) return r;
    if (flags != 0) return fail(CUDA_ERROR_INVALID_VALUE, "cuStreamWaitEvent: flags %#x", flags);
    if (CUresult r = need_recorded("cuStreamWaitEvent", e)) return r;
    counters.events++;
    return CUDA_SUCCESS;
}

CUresult cuEventSynchronize(CUevent e) {
    if (CUresult r = need_context("cuEventSynchronize")) return r;
    std::lock_guard<std::mutex> g(mu);
    if (CUresult r = need_recorded("cuEventSynchronize", e)) return r;
    counters.calls++;
    counters.syncs++;
    return CUDA_SUCCESS;
}

CUresult cuModuleLoadData(CUmodule* mod, const void* image) {
    if (CUresult r = need_context("cuModuleLoadData")) return r;
    std::map<std::string, std::vector<int>> entries;
    int target;
    std::string err;
    if (!parse_ptx((const char*)image, &entries, &target, &err))
        return fail(CUDA_ERROR_INVALID_PTX, "cuModuleLoadData: %s", err.c_str());
    int sm = env_int("FAIRDP_STUB_SM", 90);
    if (target > sm)
        return fail(CUDA_ERROR_NO_BINARY_FOR_GPU, "cuModuleLoadData: PTX for sm_%d cannot be JIT-compiled for sm_%d", target, sm);
    Module* m = new Module;
    for (auto& e : entries) {
        int index = -1;
        for (int i = 0; i < fairdp_emu_kernel_count(); i++)
            if (e.first == fairdp_emu_kernel_name(i)) index = i;
        if (index < 0) {
            delete m;
            return fail(CUDA_ERROR_INVALID_PTX, "cuModuleLoadData: the PTX's kernel %s is not compiled into the emulator", e.first.c_str());
        }
        std::string kinds = fairdp_emu_kernel_kinds(index);
        bool ok = kinds.size() == e.second.size();
        for (size_t i = 0; ok && i < kinds.size(); i++) ok = (kinds[i] == '4') == (e.second[i] == 4);
        if (!ok) {
            delete m;
            return fail(CUDA_ERROR_INVALID_PTX, "cuModuleLoadData: %s's PTX parameters disagree with its source (emulator kinds %s)",
                        e.first.c_str(), kinds.c_str());
        }
        m->fns[e.first] = new Function{e.first, index, kinds, e.second};
    }
    *mod = reinterpret_cast<CUmodule>(m);
    return CUDA_SUCCESS;
}

CUresult cuModuleUnload(CUmodule mod) {
    if (CUresult r = need_context("cuModuleUnload")) return r;
    Module* m = reinterpret_cast<Module*>(mod);
    for (auto& f : m->fns) delete f.second;
    delete m;
    return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction* fn, CUmodule mod, const char* name) {
    if (CUresult r = need_context("cuModuleGetFunction")) return r;
    Module* m = reinterpret_cast<Module*>(mod);
    auto it = m->fns.find(name);
    if (it == m->fns.end()) return fail(CUDA_ERROR_NOT_FOUND, "cuModuleGetFunction: no kernel %s in the module", name);
    *fn = reinterpret_cast<CUfunction>(it->second);
    return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, CUstream s, void** params, void** extra) {
    if (CUresult r = need_context("cuLaunchKernel")) return r;
    Function* f = reinterpret_cast<Function*>(fn);
    if (f == nullptr) return fail(CUDA_ERROR_INVALID_HANDLE, "cuLaunchKernel(NULL)");
    if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0 || (unsigned long long)bx * by * bz > 1024 ||
        bz > 64 || gy > 65535 || gz > 65535 || gx > 0x7fffffffu)
        return fail(CUDA_ERROR_INVALID_VALUE, "cuLaunchKernel(%s): grid %ux%ux%u, block %ux%ux%u", f->name.c_str(), gx, gy, gz,
                    bx, by, bz);
    if (shared != 0) return fail(CUDA_ERROR_INVALID_VALUE, "cuLaunchKernel(%s): %u bytes of dynamic shared memory", f->name.c_str(), shared);
    if (extra != nullptr) return fail(CUDA_ERROR_INVALID_VALUE, "cuLaunchKernel(%s): extra is not emulated", f->name.c_str());
    if (params == nullptr && !f->sizes.empty())
        return fail(CUDA_ERROR_INVALID_VALUE, "cuLaunchKernel(%s): no parameters, the kernel takes %zu", f->name.c_str(), f->sizes.size());
    std::vector<uint64_t> slots(f->sizes.size() + 1, 0);
    {
        std::lock_guard<std::mutex> g(mu);
        for (size_t i = 0; i < f->sizes.size(); i++) {
            memcpy(&slots[i], params[i], (size_t)f->sizes[i]);
            if (f->kinds[i] == 'p' && slots[i] != 0 && !find((uintptr_t)slots[i], 0))
                return fail(CUDA_ERROR_INVALID_VALUE, "cuLaunchKernel(%s): pointer parameter %zu (%#llx) is not in a live allocation",
                            f->name.c_str(), i, (unsigned long long)slots[i]);
        }
        counters.calls++;
        counters.launches++;
    }
    char msg[512];
    if (fairdp_emu_launch(f->index, gx, gy, gz, bx, by, bz, slots.data(), env_int("FAIRDP_STUB_WORKERS", 2), msg, sizeof msg) != 0)
        return fail(CUDA_ERROR_LAUNCH_FAILED, "cuLaunchKernel(%s): %s", f->name.c_str(), msg);
    return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult r, const char** name) {
    switch (r) {
#define NAME(x) \
    case x: *name = #x; return CUDA_SUCCESS;
    NAME(CUDA_SUCCESS)
    NAME(CUDA_ERROR_INVALID_VALUE)
    NAME(CUDA_ERROR_OUT_OF_MEMORY)
    NAME(CUDA_ERROR_NOT_INITIALIZED)
    NAME(CUDA_ERROR_NO_DEVICE)
    NAME(CUDA_ERROR_INVALID_DEVICE)
    NAME(CUDA_ERROR_INVALID_PTX)
    NAME(CUDA_ERROR_NO_BINARY_FOR_GPU)
    NAME(CUDA_ERROR_INVALID_CONTEXT)
    NAME(CUDA_ERROR_INVALID_HANDLE)
    NAME(CUDA_ERROR_NOT_FOUND)
    NAME(CUDA_ERROR_LAUNCH_FAILED)
    NAME(CUDA_ERROR_NOT_SUPPORTED)
#undef NAME
    default: *name = nullptr; return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult cuGetErrorString(CUresult r, const char** s) { return cuGetErrorName(r, s); }

}  // extern "C"
