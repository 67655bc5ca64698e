// A stand-in libcublas.so.N for CI, next to the stand-in libcuda.so.1
// (driver.cc): the cuBLAS entry points fairdp loads at run time
// (cuda/cublas_dl.c), served by the CPU's OpenBLAS in column-major order,
// with cuBLAS's argument checks (CUBLAS_STATUS_INVALID_VALUE for negative
// sizes or short leading dimensions) and cuBLAS's k = 0 / alpha = 0 rule
// (A and B are not read; beta = 0 overwrites C). Every operand must lie
// inside one live allocation of the stand-in driver.
#include <stdio.h>
#include <stdlib.h>

#include "stub.h"

extern "C" {
void cblas_sgemm(int order, int ta, int tb, int m, int n, int k, float alpha, const float* a, int lda, const float* b,
                 int ldb, float beta, float* c, int ldc);
void cblas_dgemm(int order, int ta, int tb, int m, int n, int k, double alpha, const double* a, int lda,
                 const double* b, int ldb, double beta, double* c, int ldc);
}

namespace {

enum { kSuccess = 0, kNotInitialized = 1, kInvalidValue = 7, kExecutionFailed = 13 };
enum { kColMajor = 102, kNoTrans = 111, kTrans = 112 };

struct Handle {
    void* stream;
    int math_mode;
};

int status(int s, const char* call, const char* why) {
    fprintf(stderr, "stand-in libcublas: %s: %s\n", call, why);
    return s;
}

template <typename T>
int gemm(const char* call, void* h, int ta, int tb, int m, int n, int k, const T* alpha, const T* a, int lda, const T* b,
         int ldb, const T* beta, T* c, int ldc,
         void (*blas)(int, int, int, int, int, int, T, const T*, int, const T*, int, T, T*, int)) {
    if (h == nullptr) return status(kNotInitialized, call, "no handle");
    if ((ta != 0 && ta != 1) || (tb != 0 && tb != 1)) return status(kInvalidValue, call, "transpose flag not N or T");
    int ar = ta ? k : m, br = tb ? n : k;  // rows of A and B as stored
    int ac = ta ? m : k, bc = tb ? k : n;
    if (m < 0 || n < 0 || k < 0 || lda < (ar > 1 ? ar : 1) || ldb < (br > 1 ? br : 1) || ldc < (m > 1 ? m : 1))
        return status(kInvalidValue, call, "negative size or leading dimension too small");
    if (m == 0 || n == 0) return kSuccess;
    if (fairdp_stub_check(c, sizeof(T) * ((size_t)(n - 1) * ldc + m)) != 0)
        return status(kExecutionFailed, call, "C is not inside one live allocation");
    if (k == 0 || *alpha == 0) {
        for (int j = 0; j < n; j++)
            for (int i = 0; i < m; i++) c[(size_t)j * ldc + i] = *beta == 0 ? 0 : c[(size_t)j * ldc + i] * *beta;
        return kSuccess;
    }
    if (fairdp_stub_check(a, sizeof(T) * ((size_t)(ac - 1) * lda + ar)) != 0)
        return status(kExecutionFailed, call, "A is not inside one live allocation");
    if (fairdp_stub_check(b, sizeof(T) * ((size_t)(bc - 1) * ldb + br)) != 0)
        return status(kExecutionFailed, call, "B is not inside one live allocation");
    blas(kColMajor, ta ? kTrans : kNoTrans, tb ? kTrans : kNoTrans, m, n, k, *alpha, a, lda, b, ldb, *beta, c, ldc);
    return kSuccess;
}

}  // namespace

extern "C" {

int cublasCreate_v2(void** h) {
    *h = new Handle{nullptr, 0};
    return kSuccess;
}

int cublasDestroy_v2(void* h) {
    if (h == nullptr) return status(kNotInitialized, "cublasDestroy", "no handle");
    delete static_cast<Handle*>(h);
    return kSuccess;
}

int cublasSetStream_v2(void* h, void* s) {
    if (h == nullptr) return status(kNotInitialized, "cublasSetStream", "no handle");
    static_cast<Handle*>(h)->stream = s;
    return kSuccess;
}

// cublasSetMathMode: 0 default, 3 TF32 tensor ops; GEMMs here stay FP32.
int cublasSetMathMode(void* h, int mode) {
    if (h == nullptr) return status(kNotInitialized, "cublasSetMathMode", "no handle");
    static_cast<Handle*>(h)->math_mode = mode;
    return kSuccess;
}

int cublasGetVersion_v2(void* h, int* v) {
    *v = 120000;
    return kSuccess;
}

int cublasSgemm_v2(void* h, int ta, int tb, int m, int n, int k, const float* alpha, const float* a, int lda,
                   const float* b, int ldb, const float* beta, float* c, int ldc) {
    fairdp_stub_count_gemm();
    return gemm<float>("cublasSgemm", h, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, cblas_sgemm);
}

int cublasDgemm_v2(void* h, int ta, int tb, int m, int n, int k, const double* alpha, const double* a, int lda,
                   const double* b, int ldb, const double* beta, double* c, int ldc) {
    fairdp_stub_count_gemm();
    return gemm<double>("cublasDgemm", h, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, cblas_dgemm);
}

int cublasSgemmStridedBatched(void* h, int ta, int tb, int m, int n, int k, const float* alpha, const float* a, int lda,
                              long long sa, const float* b, int ldb, long long sb, const float* beta, float* c, int ldc,
                              long long sc, int batch) {
    if (batch < 0) return status(kInvalidValue, "cublasSgemmStridedBatched", "negative batch");
    fairdp_stub_count_gemm();
    for (int i = 0; i < batch; i++) {
        int s = gemm<float>("cublasSgemmStridedBatched", h, ta, tb, m, n, k, alpha, a + i * sa, lda, b + i * sb, ldb,
                            beta, c + i * sc, ldc, cblas_sgemm);
        if (s != kSuccess) return s;
    }
    return kSuccess;
}

}  // extern "C"
