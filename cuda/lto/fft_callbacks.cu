/* cuFFT load callback of the GPU engine's propagation (gpu_propagate.cu): each wave
 * of the batch is multiplied by one grid of factors as cuFFT reads it, so the
 * transmission function (forward FFT) and the propagator (inverse FFT) cost no pass
 * over memory of their own. Compiled to LTO-IR (nvcc -dc -fatbin code=lto_XX, see
 * CMakeLists.txt) and linked into cuFFT's kernels when the plan is made; not part of
 * the engine's library. The product is gpu_cmul's (gpu_common.cuh), so a fused run
 * differs from the separate kernel only where the compiler contracts differently. */
#include <cufftXt.h>

#include "../gpu_fft_callbacks.h"

static __device__ __forceinline__ cufftComplex load_multiply(void *data, unsigned long long offset, void *info)
{
    const gpu_fft_load_factor *f = (const gpu_fft_load_factor *)info;
    unsigned long long k;
    if (offset < (1ull << 32)) {
        unsigned o = (unsigned)offset;
        k = o - gpu_fft_divide(o, f->magic, f->shift) * (unsigned)f->grid;
    } else {
        k = offset % f->grid;
    }
    float2 v = ((const float2 *)data)[offset], t = f->factor[k];
    cufftComplex r;
    r.x = v.x * t.x - v.y * t.y;
    r.y = v.x * t.y + v.y * t.x;
    return r;
}

/* The same callback under C and C++ linkage: how cuFFT looks the name up has changed
 * between releases, so gpu_propagate.cu tries the names of GPU_FFT_LOAD_NAMES in turn. */
extern "C" __device__ cufftComplex stem_fft_load_multiply(void *data, unsigned long long offset, void *info,
                                                          void *shared)
{
    (void)shared;
    return load_multiply(data, offset, info);
}

__device__ cufftComplex stem_fft_load_multiply_cxx(void *data, unsigned long long offset, void *info, void *shared)
{
    (void)shared;
    return load_multiply(data, offset, info);
}
