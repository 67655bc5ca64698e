// cuBLAS loaded at run time (cublas_dl.c): the wrappers gpu.go calls.
#ifndef FAIRDP_CUBLAS_DL_H
#define FAIRDP_CUBLAS_DL_H
#include <stdint.h>

// fairdp_cublas_load loads cuBLAS once (override: a path, or NULL/"" for the
// sonames in turn); it returns 1, or 0 with every attempt's error in msg.
int fairdp_cublas_load(const char* override, char* msg, int len);
const char* fairdp_cublas_path(void);
int fairdp_cublas_create(void** h);
int fairdp_cublas_destroy(void* h);
int fairdp_cublas_set_stream(void* h, void* s);
int fairdp_cublas_set_math_mode(void* h, int mode);
int fairdp_cublas_version(void* h, int* v);
int fairdp_sgemm(void* h, int ta, int tb, int m, int n, int k, float alpha, uintptr_t a, int lda, uintptr_t b, int ldb,
                 float beta, uintptr_t c, int ldc);
int fairdp_sgemm_strided(void* h, int ta, int tb, int m, int n, int k, float alpha, uintptr_t a, int lda, long long sa,
                         uintptr_t b, int ldb, long long sb, float beta, uintptr_t c, int ldc, long long sc,
                         int batch);
int fairdp_dgemm(void* h, int ta, int tb, int m, int n, int k, double alpha, uintptr_t a, int lda, uintptr_t b,
                 int ldb, double beta, uintptr_t c, int ldc);
#endif
