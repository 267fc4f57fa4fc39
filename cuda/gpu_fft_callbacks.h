/* What the cuFFT load callbacks of cuda/lto/fft_callbacks.cu read: shared by the
 * callbacks (compiled to LTO-IR and linked into cuFFT's kernels at plan time by
 * nvJitLink) and by gpu_propagate.cu, which owns one of these in device memory per
 * callback plan. */
#ifndef STEM_GPU_FFT_CALLBACKS_H
#define STEM_GPU_FFT_CALLBACKS_H

#include <cuda_runtime.h>

typedef struct {
    const float2 *factor;    /* grid values multiplied into every wave of the batch as it is loaded */
    unsigned long long grid; /* values per wave (the batch's distance between waves) */
    /* offset / grid as a multiply-high and shifts (Granlund & Montgomery) for offsets below
     * 2^32: a 64-bit division per loaded value would cost more than the multiply saves */
    unsigned magic, shift;
} gpu_fft_load_factor;

/* magic and shift of gpu_fft_load_factor for a divisor d >= 1 (host and device). */
static inline __host__ __device__ void gpu_fft_divisor(unsigned d, unsigned *magic, unsigned *shift)
{
    unsigned l = 0;
    while (l < 32 && (1ull << l) < d) l++;
    *magic = (unsigned)(((1ull << 32) * ((1ull << l) - d)) / d + 1);
    *shift = l;
}

/* n / d for n < 2^32 from gpu_fft_divisor's magic and shift (l = shift). */
static inline __host__ __device__ unsigned gpu_fft_divide(unsigned n, unsigned magic, unsigned shift)
{
    unsigned hi = (unsigned)(((unsigned long long)magic * n) >> 32);
    return shift == 0 ? n : (hi + ((n - hi) >> 1)) >> (shift - 1);
}

/* The callback's symbols in the LTO fatbin (one callback for both plans: only the factor
 * differs): C linkage, then C++ linkage by plain and by mangled name. */
#define GPU_FFT_LOAD_NAMES                                                                                             \
    {                                                                                                                  \
        "stem_fft_load_multiply", "stem_fft_load_multiply_cxx", "_Z26stem_fft_load_multiply_cxxPvyS_S_"                \
    }
#define GPU_FFT_LOAD_N_NAMES 3

#endif
