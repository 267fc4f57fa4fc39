/* Split-operand tensor-core products for the PRISM output step ([debug] gpu_gemm = tf32x3 /
 * fp16x3): the complex product as one real GEMM whose FP32 operands are each split into a high
 * and a low TF32 or FP16 part, three products summed by the tensor cores (the layout and the
 * accuracy they reach: gpu_internal.cuh).
 * The S-matrix is split once per configuration (or per streamed unit), the coefficients once
 * per tile, so the product itself is a single cuBLAS call per piece of a tile region. */
#include <cuda_fp16.h>
#include <math.h>
#include <string.h>

#include "gpu_internal.cuh"

#define SPLIT_FP16_TOP 14 /* FP16 parts: the largest value scaled to at most 2^14 (FP16's largest is 65504) */

/* Round to TF32 (10 explicit mantissa bits), to nearest with ties away from zero: the value the
 * tensor cores then read exactly, whether cuBLAS rounds or truncates its inputs. */
static __device__ float tf32_round(float x) { return __uint_as_float((__float_as_uint(x) + 0x1000u) & 0xffffe000u); }

static __device__ void split_value(float v, float *hi, float *lo)
{
    *hi = tf32_round(v);
    *lo = tf32_round(v - *hi);
}

static __device__ void split_value(float v, __half *hi, __half *lo)
{
    *hi = __float2half_rn(v);
    *lo = __float2half_rn(v - __half2float(*hi));
}

/* dst[pixel][hi | lo | hi], each part kb elements (2 nb values, then zero pads). */
template <class T>
static __global__ void k_split_smatrix(T *__restrict__ dst, const float *__restrict__ src, size_t pixels, int nb,
                                       int kb, float scale)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= pixels * kb) return;
    size_t pix = i / kb;
    int q = (int)(i - pix * kb);
    float v = q < 2 * nb ? scale * src[pix * 2 * nb + q] : 0.0f;
    T hi, lo;
    split_value(v, &hi, &lo);
    T *d = dst + pix * 3 * kb + q;
    d[0] = hi;
    d[kb] = lo;
    d[2 * kb] = hi;
}

/* dst[j][hi ; hi ; lo]: column j = 2p holds (Re c_b, -Im c_b) at rows (2b, 2b + 1), so that it
 * sums Re(S c); j = 2p + 1 holds (Im c_b, Re c_b) and sums Im(S c). */
template <class T>
static __global__ void k_split_coef(T *__restrict__ dst, const float2 *__restrict__ coef, int P, int nb, int kb,
                                    float scale)
{
    int q = blockIdx.x * blockDim.x + threadIdx.x, j = blockIdx.y;
    if (q >= kb) return;
    float v = 0;
    if (q < 2 * nb) {
        float2 c = coef[(size_t)(j >> 1) * nb + (q >> 1)];
        v = (j & 1) ? ((q & 1) ? c.x : c.y) : ((q & 1) ? -c.y : c.x);
    }
    T hi, lo;
    split_value(scale * v, &hi, &lo);
    T *d = dst + (size_t)j * 3 * kb + q;
    d[0] = hi;
    d[kb] = hi;
    d[2 * kb] = lo;
}

/* The largest |value| of n floats, as the bits of a non-negative float (ordered like unsigned ints). */
static __global__ void k_absmax(unsigned *__restrict__ out, const float *__restrict__ x, size_t n)
{
    float m = 0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        m = fmaxf(m, fabsf(x[i]));
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_down_sync(0xffffffffu, m, o));
    if ((threadIdx.x & 31) == 0) atomicMax(out, __float_as_uint(m));
}

int gpu_gemm_is_split(int gemm)
{
    return gemm == STEM_GPU_GEMM_TF32X3 || gemm == STEM_GPU_GEMM_FP16X3 || gemm == STEM_GPU_GEMM_FP64;
}

/* fp64: n floats widened to doubles */
static __global__ void k_widen(double *__restrict__ dst, const float *__restrict__ src, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[i];
}

/* fp64: the ZGEMM's out[row][col][p] (double2, m x P per row) narrowed into C's floats (rows sC apart). */
static __global__ void k_narrow(float *__restrict__ C, const double2 *__restrict__ out, int m, int P, long long sC)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y, per_row = (size_t)m * P;
    if (i >= per_row) return;
    double2 v = out[row * per_row + i];
    float *c = C + row * sC + 2 * i;
    c[0] = (float)v.x;
    c[1] = (float)v.y;
}

/* K elements one tensor-core step sums: m16n8k16 for FP16, m16n8k8 for TF32 */
#define SPLIT_STEP_K(fp16) ((fp16) ? 16 : 8)

void gpu_split_form_init(gpu_split_form *f, int gemm, int nb, int steps)
{
    f->fp16 = gemm == STEM_GPU_GEMM_FP16X3;
    f->fp64 = gemm == STEM_GPU_GEMM_FP64;
    f->parts = f->fp64 ? 1 : 3;
    f->nb = nb;
    f->kb = f->fp64 ? 2 * nb : (2 * nb + 7) / 8 * 8;
    f->elem = f->fp16 ? sizeof(__half) : (f->fp64 ? sizeof(double) : sizeof(float));
    f->s_scale = 1;
    f->c_scale = f->fp16 ? ldexpf(1.0f, SPLIT_FP16_TOP) : 1.0f; /* |coefficients| <= 1 (gpu_beam_table) */
    f->chain = steps > 0 ? steps * SPLIT_STEP_K(f->fp16) : 0;
}

size_t gpu_split_smatrix_bytes(const gpu_split_form *f, size_t n) { return f->elem * f->parts * f->kb * n; }

size_t gpu_split_coef_bytes(const gpu_split_form *f, int P)
{
    return f->fp64 ? f->elem * f->kb * (size_t)P : f->elem * 3 * f->kb * 2 * (size_t)P;
}

/* The power of two that takes the largest value m to at most 2^SPLIT_FP16_TOP. */
static float fp16_scale(double m)
{
    if (!(m > 0) || !isfinite(m)) return 1;
    int e;
    frexp(m, &e); /* m < 2^e */
    return ldexpf(1.0f, SPLIT_FP16_TOP - e);
}

int gpu_split_scale_device(gpu_split_form *f, const float2 *S, size_t n, cudaStream_t s)
{
    if (!f->fp16) return STEM_OK;
    unsigned *d, h = 0;
    GPU_ALLOC(d, sizeof(unsigned), "S-matrix maximum");
    int err = cudaMemsetAsync(d, 0, sizeof(unsigned), s) != cudaSuccess;
    if (!err) {
        k_absmax<<<1024, 256, 0, s>>>(d, (const float *)S, 2 * n * f->nb);
        err = cudaGetLastError() != cudaSuccess ||
            cudaMemcpyAsync(&h, d, sizeof h, cudaMemcpyDeviceToHost, s) != cudaSuccess ||
            cudaStreamSynchronize(s) != cudaSuccess;
    }
    gpu_free(d);
    if (err) return gpu_fail_cuda(cudaGetLastError(), "S-matrix maximum", __FILE__, __LINE__, __func__);
    float m;
    memcpy(&m, &h, sizeof m);
    f->s_scale = fp16_scale(m);
    return STEM_OK;
}

void gpu_split_scale_host(gpu_split_form *f, const stem_complex *S, size_t n)
{
    if (!f->fp16) return;
    const float *x = (const float *)S;
    float m = 0;
    for (size_t i = 0; i < 2 * n * f->nb; i++) m = fmaxf(m, fabsf(x[i]));
    f->s_scale = fp16_scale(m);
}

int gpu_split_smatrix(const gpu_split_form *f, void *dst, const float2 *S, size_t pixels, cudaStream_t s)
{
    if (pixels == 0) return STEM_OK;
    size_t n = pixels * f->kb;
    if (f->fp64)
        k_widen<<<gpu_blocks(n, 256), 256, 0, s>>>((double *)dst, (const float *)S, n);
    else if (f->fp16)
        k_split_smatrix<<<gpu_blocks(n, 256), 256, 0, s>>>((__half *)dst, (const float *)S, pixels, f->nb, f->kb,
                                                           f->s_scale);
    else
        k_split_smatrix<<<gpu_blocks(n, 256), 256, 0, s>>>((float *)dst, (const float *)S, pixels, f->nb, f->kb, 1.0f);
    CUDA_LAUNCH();
    return STEM_OK;
}

int gpu_split_coefficients(const gpu_split_form *f, void *dst, const float2 *coef, int P, cudaStream_t s)
{
    if (P <= 0) return STEM_OK;
    dim3 grid(gpu_blocks(f->kb, 128), 2 * P);
    if (f->fp64)
        k_widen<<<gpu_blocks((size_t)P * f->kb, 256), 256, 0, s>>>((double *)dst, (const float *)coef,
                                                                   (size_t)P * f->kb);
    else if (f->fp16)
        k_split_coef<<<grid, 128, 0, s>>>((__half *)dst, coef, P, f->nb, f->kb, f->c_scale);
    else
        k_split_coef<<<grid, 128, 0, s>>>((float *)dst, coef, P, f->nb, f->kb, 1.0f);
    CUDA_LAUNCH();
    return STEM_OK;
}

/* fp64: C = A^T coef as ZGEMM into a stream-ordered FP64 buffer, narrowed into C (the reference:
 * the products to about 1e-15 before the last rounding to FP32). */
static int fp64_gemm(cublasHandle_t h, const gpu_split_form *f, const void *A, long long sA, const void *coef, float *C,
                     int m, int P, long long sC, int rows)
{
    cudaStream_t s;
    CUBLAS_CALL(cublasGetStream(h, &s));
    double2 *out = NULL;
    size_t n = (size_t)m * P * rows;
    CUDA_CALL(cudaMallocAsync((void **)&out, sizeof(double2) * n, s));
    const cuDoubleComplex one = make_cuDoubleComplex(1, 0), zero = make_cuDoubleComplex(0, 0);
    cublasStatus_t st = cublasZgemmStridedBatched(
        h, CUBLAS_OP_T, CUBLAS_OP_N, P, m, f->nb, &one, (const cuDoubleComplex *)coef, f->nb, 0,
        (const cuDoubleComplex *)A, f->nb, sA / 2, &zero, (cuDoubleComplex *)out, P, (long long)m * P, rows);
    if (st == CUBLAS_STATUS_SUCCESS) {
        dim3 grid(gpu_blocks((size_t)m * P, 256), rows);
        k_narrow<<<grid, 256, 0, s>>>(C, out, m, P, sC);
    }
    cudaFreeAsync(out, s);
    if (st != CUBLAS_STATUS_SUCCESS)
        return gpu_fail_cublas(st, "cublasZgemmStridedBatched", __FILE__, __LINE__, __func__);
    CUDA_LAUNCH();
    return STEM_OK;
}

/* One real product over K elements [k0, k0 + kk) of the split operands, added to C (beta 1) or
 * replacing it (beta 0). */
static int split_piece(cublasHandle_t h, const gpu_split_form *f, const void *A, long long sA, const void *coef,
                       float *C, int m, int P, long long sC, int rows, int k0, int kk, int add)
{
    cudaDataType t = f->fp16 ? CUDA_R_16F : CUDA_R_32F;
    cublasComputeType_t ct = f->fp16 ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_32F_FAST_TF32;
    int k = 3 * f->kb;
    float alpha = 1.0f / (f->s_scale * f->c_scale), beta = add ? 1.0f : 0.0f; /* powers of two: exact */
    const char *a = (const char *)A + f->elem * k0, *b = (const char *)coef + f->elem * k0;
    /* the probes as rows: at the paper case's shape 2.7x faster than the pixels as rows
     * (gpu_kernel_check --split-gemm, benchmarks/results/TF32X3.md) */
    CUBLAS_CALL(cublasGemmStridedBatchedEx(h, CUBLAS_OP_T, CUBLAS_OP_N, 2 * P, m, kk, &alpha, b, t, k, 0, a, t, k, sA,
                                           &beta, C, CUDA_R_32F, 2 * P, sC, rows, ct, CUBLAS_GEMM_DEFAULT));
    return STEM_OK;
}

int gpu_split_gemm(cublasHandle_t h, const gpu_split_form *f, const void *A, long long sA, const void *coef, float *C,
                   int m, int P, long long sC, int rows)
{
    if (f->fp64) return fp64_gemm(h, f, A, sA, coef, C, m, P, sC, rows);
    int kb = f->kb;
    if (f->chain <= 0) return split_piece(h, f, A, sA, coef, C, m, P, sC, rows, 0, 3 * kb, 0);
    /* K is [hi*hi | lo*hi | hi*lo]: the cross terms are 2^-11 of the product, so their long
     * sum's rounding toward zero does not matter and they take one call; hi*hi is summed in
     * pieces of f->chain, each added to C by the epilogue with FP32 round-to-nearest. */
    STEM_TRY(split_piece(h, f, A, sA, coef, C, m, P, sC, rows, kb, 2 * kb, 0));
    for (int k0 = 0; k0 < kb; k0 += f->chain)
        STEM_TRY(split_piece(h, f, A, sA, coef, C, m, P, sC, rows, k0, kb - k0 < f->chain ? kb - k0 : f->chain, 1));
    return STEM_OK;
}
