/* PRISM on one GPU with the S-matrix resident in device memory: when a rank
 * group has one rank there is nothing to gather, so the compact S-matrix goes
 * from the S-matrix step to the output step without the device -> host ->
 * host -> device round trip of the general path (src/algorithm.c). The beam-
 * fastest arrangement of stem_prism_arrange is done by a transpose kernel. */
#include "gpu_internal.cuh"
#include "../src/phases.h"

#define ARR_TILE 32

/* by_pixel[p][b] = by_beam[b][p] (stem_prism_arrange), through a padded shared tile. */
static __global__ void k_arrange(float2 *__restrict__ by_pixel, const float2 *__restrict__ by_beam, size_t box, int nb)
{
    __shared__ float2 t[ARR_TILE][ARR_TILE + 1];
    size_t p0 = (size_t)blockIdx.x * ARR_TILE;
    int b0 = blockIdx.y * ARR_TILE;
    for (int r = threadIdx.y; r < ARR_TILE; r += blockDim.y) { /* read rows of beams, pixels contiguous */
        int b = b0 + r;
        size_t p = p0 + threadIdx.x;
        if (b < nb && p < box) t[r][threadIdx.x] = by_beam[(size_t)b * box + p];
    }
    __syncthreads();
    for (int r = threadIdx.y; r < ARR_TILE; r += blockDim.y) { /* write rows of pixels, beams contiguous */
        size_t p = p0 + r;
        int b = b0 + threadIdx.x;
        if (b < nb && p < box) by_pixel[p * nb + b] = t[threadIdx.x][r];
    }
}

/* Fits when the S-matrix step (single-transfer) plus both copies of the
 * S-matrix, and the output step in single-transfer mode, fit this GPU. */
static int resident_fits(const stem_plan *plan, const gpu_devices *d, double S_bytes, int *fits)
{
    gpu_prop_plan pp;
    gpu_out_plan op;
    *fits = 0;
    STEM_TRY(gpu_prop_plan_build(plan, d, 1, 0, &pp));
    STEM_TRY(gpu_out_plan_build(plan, d, 0, &op));
    *fits = d->n_gpus == 1 && !op.streaming && pp.bytes_total + 2 * S_bytes <= d->usable_bytes &&
            op.bytes_total <= d->usable_bytes;
    gpu_out_plan_free(&op);
    return STEM_OK;
}

int gpu_prism_resident(const stem_engine *e, const stem_plan *plan, const stem_complex *trans, const stem_detector *det,
                       stem_result *res)
{
    const gpu_devices *d = gpu_engine_devices(e);
    size_t box = (size_t)plan->crop_nx * plan->crop_ny, nb = (size_t)plan->n_beams;
    size_t S_bytes = sizeof(float2) * box * nb;
    int fits;
    if (!plan->opt.gpu_prism_resident) return STEM_NOT_APPLICABLE; /* [debug] gpu_prism_resident = off */
    STEM_TRY(resident_fits(plan, d, (double)S_bytes, &fits));
    if (!fits) return STEM_NOT_APPLICABLE;
    CUDA_CALL(cudaSetDevice(d->ids[0]));
    float2 *by_beam = NULL, *by_pixel = NULL;
    int err = gpu_alloc_((void **)&by_beam, S_bytes, "S-matrix (by beam, on the GPU)", __FILE__, __LINE__, __func__);
    if (!err) err = gpu_alloc_((void **)&by_pixel, S_bytes, "S-matrix (beam fastest, on the GPU)", __FILE__, __LINE__, __func__);
    double t0 = stem_wall_time();
    if (!err) err = gpu_prism_smatrix_to_device(e, plan, trans, by_beam);
    if (!err) {
        dim3 threads(ARR_TILE, 8), blocks((unsigned)((box + ARR_TILE - 1) / ARR_TILE), (unsigned)((nb + ARR_TILE - 1) / ARR_TILE));
        k_arrange<<<blocks, threads>>>(by_pixel, by_beam, box, (int)nb);
        cudaError_t ce = cudaGetLastError();
        if (ce == cudaSuccess) ce = cudaDeviceSynchronize();
        if (ce != cudaSuccess) err = gpu_fail_cuda(ce, "k_arrange", __FILE__, __LINE__, __func__);
    }
    gpu_free(by_beam);
    double t1 = stem_phase_add(STEM_PHASE_SMATRIX, t0);
    if (!err)
        stem_info("gpu PRISM: S-matrix kept on the GPU between its steps (%.3f GiB not copied through the host); "
                  "S-matrix step and arrangement %.3f s",
                  S_bytes / GPU_GIB, stem_wall_time() - t0);
    if (!err) err = gpu_prism_output_from_device(e, plan, by_pixel, det, res);
    gpu_free(by_pixel);
    stem_phase_add(STEM_PHASE_PROBES, t1);
    return err;
}
