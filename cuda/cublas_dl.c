//go:build cuda

// cuBLAS, loaded at run time. A binary linked with -lcublas runs only where
// that exact soname (libcublas.so.11 for CUDA 11.x, .12, .13) is installed,
// so a fairdp built against one toolkit would not start on a host with
// another, nor on a host with no CUDA at all. Instead fairdp_cublas_load
// dlopens the first of: the path in FAIRDP_CUBLAS, libcublas.so.13, .12,
// .11 (each by soname, then under /usr/local/cuda/lib64), and resolves the
// handful of entry points fairdp calls. They are declared here, not taken
// from cublas_v2.h, so the build needs no cuBLAS headers: these signatures
// and enum values are cuBLAS's stable C ABI (unchanged from 11 to 13).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cublas_dl.h"

typedef int (*fairdp_create_fn)(void**);
typedef int (*fairdp_destroy_fn)(void*);
typedef int (*fairdp_set_stream_fn)(void*, void*);
typedef int (*fairdp_set_math_mode_fn)(void*, int);
typedef int (*fairdp_get_version_fn)(void*, int*);
typedef int (*fairdp_sgemm_fn)(void*, int, int, int, int, int, const float*, const float*, int, const float*, int,
                               const float*, float*, int);
typedef int (*fairdp_dgemm_fn)(void*, int, int, int, int, int, const double*, const double*, int, const double*, int,
                               const double*, double*, int);
typedef int (*fairdp_sgemm_strided_fn)(void*, int, int, int, int, int, const float*, const float*, int, long long,
                                       const float*, int, long long, const float*, float*, int, long long, int);

static struct {
    void* lib;
    char path[512];
    fairdp_create_fn create;
    fairdp_destroy_fn destroy;
    fairdp_set_stream_fn set_stream;
    fairdp_set_math_mode_fn set_math_mode;
    fairdp_get_version_fn get_version;
    fairdp_sgemm_fn sgemm;
    fairdp_dgemm_fn dgemm;
    fairdp_sgemm_strided_fn sgemm_strided;
} fairdp_cublas;

// fairdp_cublas_try dlopens path and resolves every entry point; on failure
// it appends why to msg and leaves nothing loaded.
static int fairdp_cublas_try(const char* path, char* msg, int len) {
    size_t used = strlen(msg);
    void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        const char* e = dlerror();
        snprintf(msg + used, (size_t)len - used, "%s%s", used ? "; " : "", e ? e : path);
        return 0;
    }
    static const char* const names[] = {"cublasCreate_v2", "cublasDestroy_v2", "cublasSetStream_v2",
                                        "cublasSetMathMode", "cublasGetVersion_v2", "cublasSgemm_v2",
                                        "cublasDgemm_v2", "cublasSgemmStridedBatched"};
    void* fns[sizeof names / sizeof names[0]];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if ((fns[i] = dlsym(lib, names[i])) == NULL) {
            snprintf(msg + used, (size_t)len - used, "%s%s has no %s", used ? "; " : "", path, names[i]);
            dlclose(lib);
            return 0;
        }
    }
    fairdp_cublas.lib = lib;
    snprintf(fairdp_cublas.path, sizeof fairdp_cublas.path, "%s", path);
    fairdp_cublas.create = (fairdp_create_fn)fns[0];
    fairdp_cublas.destroy = (fairdp_destroy_fn)fns[1];
    fairdp_cublas.set_stream = (fairdp_set_stream_fn)fns[2];
    fairdp_cublas.set_math_mode = (fairdp_set_math_mode_fn)fns[3];
    fairdp_cublas.get_version = (fairdp_get_version_fn)fns[4];
    fairdp_cublas.sgemm = (fairdp_sgemm_fn)fns[5];
    fairdp_cublas.dgemm = (fairdp_dgemm_fn)fns[6];
    fairdp_cublas.sgemm_strided = (fairdp_sgemm_strided_fn)fns[7];
    return 1;
}

int fairdp_cublas_load(const char* override, char* msg, int len) {
    if (fairdp_cublas.lib != NULL) {
        return 1;
    }
    msg[0] = 0;
    if (override != NULL && override[0] != 0) {
        return fairdp_cublas_try(override, msg, len);
    }
    static const char* const candidates[] = {
        "libcublas.so.13", "/usr/local/cuda/lib64/libcublas.so.13",
        "libcublas.so.12", "/usr/local/cuda/lib64/libcublas.so.12",
        "libcublas.so.11", "/usr/local/cuda/lib64/libcublas.so.11",
    };
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++) {
        if (fairdp_cublas_try(candidates[i], msg, len)) {
            return 1;
        }
    }
    return 0;
}

const char* fairdp_cublas_path(void) { return fairdp_cublas.path; }

int fairdp_cublas_create(void** h) { return fairdp_cublas.create(h); }
int fairdp_cublas_destroy(void* h) { return fairdp_cublas.destroy(h); }
int fairdp_cublas_set_stream(void* h, void* s) { return fairdp_cublas.set_stream(h, s); }
int fairdp_cublas_set_math_mode(void* h, int mode) { return fairdp_cublas.set_math_mode(h, mode); }
int fairdp_cublas_version(void* h, int* v) { return fairdp_cublas.get_version(h, v); }

// cublasOperation_t: CUBLAS_OP_N = 0, CUBLAS_OP_T = 1.
int fairdp_sgemm(void* h, int ta, int tb, int m, int n, int k, float alpha, uintptr_t a, int lda, uintptr_t b, int ldb,
                 float beta, uintptr_t c, int ldc) {
    return fairdp_cublas.sgemm(h, ta, tb, m, n, k, &alpha, (const float*)a, lda, (const float*)b, ldb, &beta,
                               (float*)c, ldc);
}

int fairdp_sgemm_strided(void* h, int ta, int tb, int m, int n, int k, float alpha, uintptr_t a, int lda, long long sa,
                         uintptr_t b, int ldb, long long sb, float beta, uintptr_t c, int ldc, long long sc,
                         int batch) {
    return fairdp_cublas.sgemm_strided(h, ta, tb, m, n, k, &alpha, (const float*)a, lda, sa, (const float*)b, ldb, sb,
                                       &beta, (float*)c, ldc, sc, batch);
}

int fairdp_dgemm(void* h, int ta, int tb, int m, int n, int k, double alpha, uintptr_t a, int lda, uintptr_t b,
                 int ldb, double beta, uintptr_t c, int ldc) {
    return fairdp_cublas.dgemm(h, ta, tb, m, n, k, &alpha, (const double*)a, lda, (const double*)b, ldb, &beta,
                               (double*)c, ldc);
}
