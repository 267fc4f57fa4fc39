/* Shared by the GPU engine's .cu files: project headers with C linkage,
 * checked-call macros for CUDA, cuFFT and cuBLAS, and complex helpers.
 * Every runtime call and every kernel launch goes through a macro that turns a
 * failure into a message (call, cause, file, function) and STEM_ERR_GPU
 * (STEM_ERR_MEMORY for an out-of-memory device). */
#ifndef STEM_GPU_COMMON_CUH
#define STEM_GPU_COMMON_CUH

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cufft.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

extern "C" {
#include "../src/engine.h"
#include "../src/dispatcher.h"
#include "../src/probe.h"
#include "gpu_engine.h"
}

int gpu_fail_cuda(cudaError_t e, const char *call, const char *file, int line, const char *func);
int gpu_fail_cufft(cufftResult r, const char *call, const char *file, int line, const char *func);
int gpu_fail_cublas(cublasStatus_t s, const char *call, const char *file, int line, const char *func);

#define CUDA_CALL(call)                                                                                                \
    do {                                                                                                               \
        cudaError_t gpu_e_ = (call);                                                                                   \
        if (gpu_e_ != cudaSuccess) return gpu_fail_cuda(gpu_e_, #call, __FILE__, __LINE__, __func__);                  \
    } while (0)
#define CUFFT_CALL(call)                                                                                               \
    do {                                                                                                               \
        cufftResult gpu_r_ = (call);                                                                                   \
        if (gpu_r_ != CUFFT_SUCCESS) return gpu_fail_cufft(gpu_r_, #call, __FILE__, __LINE__, __func__);               \
    } while (0)
#define CUBLAS_CALL(call)                                                                                              \
    do {                                                                                                               \
        cublasStatus_t gpu_s_ = (call);                                                                                \
        if (gpu_s_ != CUBLAS_STATUS_SUCCESS) return gpu_fail_cublas(gpu_s_, #call, __FILE__, __LINE__, __func__);      \
    } while (0)
/* After every <<<...>>>: launch configuration errors surface here, faults at the next sync. */
#define CUDA_LAUNCH() CUDA_CALL(cudaGetLastError())

/* cudaMalloc with an out-of-memory message naming the buffer, the size and the device. */
int gpu_alloc_(void **ptr, size_t bytes, const char *what, const char *file, int line, const char *func);
#define GPU_ALLOC(ptr, bytes, what) STEM_TRY(gpu_alloc_((void **)&(ptr), (bytes), (what), __FILE__, __LINE__, __func__))
int gpu_alloc_host_(void **ptr, size_t bytes, const char *what, const char *file, int line, const char *func);
#define GPU_ALLOC_HOST(ptr, bytes, what)                                                                               \
    STEM_TRY(gpu_alloc_host_((void **)&(ptr), (bytes), (what), __FILE__, __LINE__, __func__))
/* Release helpers for cleanup paths: ignore errors (the first error was already reported). */
void gpu_free(void *p);
void gpu_free_host(void *p);

static inline __host__ __device__ float2 gpu_cmul(float2 a, float2 b)
{
    return make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

static inline unsigned gpu_blocks(size_t n, unsigned threads)
{
    size_t b = (n + threads - 1) / threads;
    return (unsigned)(b > 0x7fffffffu ? 0x7fffffffu : (b ? b : 1));
}

#define GPU_GIB 1073741824.0

#endif
