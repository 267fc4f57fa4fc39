/* PRISM with the S-matrix resident in device memory: when a rank
 * group has one rank there is nothing to gather, so the compact S-matrix goes
 * from the S-matrix step to the output step without the device -> host ->
 * host -> device round trip of the general path (mpi/algorithm.c). Each batch of
 * beams is written beam fastest into the one device copy by a transpose kernel. */
#include <stdlib.h>

#include "gpu_internal.cuh"
#include "../src/phases.h"

#define ARR_TILE 32

/* by_pixel[p][first + b] = boxes[b][p] for the n beams of a batch (stem_prism_put_beams over the
 * whole box), through a padded shared tile: boxes read along pixels, by_pixel written along beams. */
static __global__ void k_put_beams(float2 *__restrict__ by_pixel, const float2 *__restrict__ boxes, size_t box, int nb,
                                   int first, int n)
{
    __shared__ float2 t[ARR_TILE][ARR_TILE + 1];
    size_t p0 = (size_t)blockIdx.x * ARR_TILE;
    int b0 = blockIdx.y * ARR_TILE;
    for (int r = threadIdx.y; r < ARR_TILE; r += blockDim.y) {
        int b = b0 + r;
        size_t p = p0 + threadIdx.x;
        if (b < n && p < box) t[r][threadIdx.x] = boxes[(size_t)b * box + p];
    }
    __syncthreads();
    for (int r = threadIdx.y; r < ARR_TILE; r += blockDim.y) {
        size_t p = p0 + r;
        int b = b0 + threadIdx.x;
        if (b < n && p < box) by_pixel[p * nb + first + b] = t[threadIdx.x][r];
    }
}

/* Fits when the S-matrix step (single-transfer) plus one copy of the S-matrix fit each
 * GPU (the S-matrix step writes its beams beam fastest in place) and the output step runs in
 * single-transfer mode. The rank's other GPUs write into the first one's copy: they need
 * peer access. */
static int resident_fits(const stem_plan *plan, const gpu_devices *d, double S_bytes, int *fits)
{
    gpu_prop_plan pp;
    gpu_out_plan op;
    *fits = 0;
    STEM_TRY(gpu_prop_plan_build(plan, d, 1, 0, &pp));
    STEM_TRY(gpu_out_plan_build(plan, d, 0, &op));
    *fits = (d->n_gpus == 1 || d->peer) && !op.streaming && pp.bytes_total + S_bytes <= d->usable_bytes &&
        op.bytes_total <= d->usable_bytes;
    gpu_out_plan_free(&op);
    return STEM_OK;
}

/* The plan counted no host S-matrix for a one-rank GPU group (src/plan.c): where one copy does
 * not fit the GPU after all, the host holds it (and a round of about a tenth): refused before
 * anything is allocated when that passes the memory limit, else said. */
static int host_instead(const stem_plan *plan, const gpu_devices *d, double S_bytes)
{
    if (plan->opt.memory_mode == STEM_MEMMODE_STREAMING) return STEM_OK; /* the plan counted it */
    double host = plan->mem_total + 1.1 * S_bytes;
    if (host > plan->mem_limit)
        return STEM_FAIL(STEM_ERR_MEMORY,
                         "PRISM: the S-matrix (%.2f GiB) does not fit the GPU (%.2f GiB usable beside the S-matrix "
                         "step's buffers), and through the host it needs %.2f GiB per rank, over the limit of %.2f "
                         "GiB (%s): raise [simulation] interpolation_x/y, use a coarser pixel_size or raise "
                         "[compute] max_memory",
                         S_bytes / GPU_GIB, d->usable_bytes / GPU_GIB, host / GPU_GIB, plan->mem_limit / GPU_GIB,
                         plan->mem_limit_source);
    stem_warn("PRISM: the S-matrix (%.2f GiB) does not fit the GPU (%.2f GiB usable beside the S-matrix step's "
              "buffers): it is held on the host, %.2f GiB per rank instead of the plan's %.2f GiB (limit %.2f GiB)",
              S_bytes / GPU_GIB, d->usable_bytes / GPU_GIB, host / GPU_GIB, plan->mem_total / GPU_GIB,
              plan->mem_limit / GPU_GIB);
    return STEM_OK;
}

int gpu_prism_put_beams(float2 *by_pixel, const float2 *boxes, size_t box, int nb, int first, int n, cudaStream_t s)
{
    if (n <= 0) return STEM_OK;
    dim3 threads(ARR_TILE, 8),
        blocks((unsigned)((box + ARR_TILE - 1) / ARR_TILE), (unsigned)((n + ARR_TILE - 1) / ARR_TILE));
    k_put_beams<<<blocks, threads, 0, s>>>(by_pixel, boxes, box, nb, first, n);
    cudaError_t ce = cudaGetLastError();
    return ce == cudaSuccess ? STEM_OK : gpu_fail_cuda(ce, "k_put_beams", __FILE__, __LINE__, __func__);
}

/* The rank's other GPUs get a copy of the arranged S-matrix, peer to peer. */
static int copy_to_other_gpus(const gpu_devices *d, float2 *S[], size_t bytes)
{
    for (int g = 1; g < d->n_gpus; g++) {
        CUDA_CALL(cudaSetDevice(d->ids[g]));
        STEM_TRY(gpu_alloc_((void **)&S[g], bytes, "S-matrix (copy on another GPU of the rank)", __FILE__, __LINE__,
                            __func__));
        CUDA_CALL(cudaMemcpyPeer(S[g], d->ids[g], S[0], d->ids[0], bytes));
    }
    CUDA_CALL(cudaSetDevice(d->ids[0]));
    return STEM_OK;
}

/* The S-matrix on the rank's first GPU, beam fastest. */
static int alloc_on_first_gpu(const gpu_devices *d, size_t bytes, float2 **by_pixel)
{
    CUDA_CALL(cudaSetDevice(d->ids[0]));
    return gpu_alloc_((void **)by_pixel, bytes, "S-matrix (beam fastest, on the GPU)", __FILE__, __LINE__, __func__);
}

/* Every GPU's copy S[g], freed on its own GPU; the first GPU current again. */
static void free_on_every_gpu(const gpu_devices *d, float2 *S[])
{
    for (int g = 0; g < d->n_gpus; g++) {
        if (S[g] && cudaSetDevice(d->ids[g]) != cudaSuccess) cudaGetLastError();
        gpu_free(S[g]);
        S[g] = NULL;
    }
    if (cudaSetDevice(d->ids[0]) != cudaSuccess) cudaGetLastError();
}

int gpu_prism_resident(const stem_engine *e, const stem_plan *plans, int n, const stem_complex *trans,
                       const stem_detector *det, stem_result *res)
{
    const stem_plan *plan = &plans[0]; /* the S-matrix's: the points differ only in the probe's lens */
    const gpu_devices *d = gpu_engine_devices(e);
    size_t S_bytes = sizeof(float2) * plan->crop_nx * plan->crop_ny * (size_t)plan->n_beams;
    gpu_engine_state *st = gpu_engine_state_of(e);
    if (!plan->opt.gpu_prism_resident) return STEM_NOT_APPLICABLE; /* [debug] gpu_prism_resident = off */
    if (stem_plan_n_planes(plan) > 1)
        return STEM_NOT_APPLICABLE;  /* a thickness series: an S-matrix per depth, on the host */
    if (st->resident_plan != plan) { /* the same answer for every configuration */
        STEM_TRY(resident_fits(plan, d, (double)S_bytes, &st->resident_fits));
        st->resident_plan = plan;
        if (!st->resident_fits) STEM_TRY(host_instead(plan, d, (double)S_bytes));
    }
    if (!st->resident_fits) return STEM_NOT_APPLICABLE;
    float2 *by_pixel[GPU_MAX_DEVICES] = {NULL};
    int err = alloc_on_first_gpu(d, S_bytes, &by_pixel[0]);
    double t0 = stem_wall_time();
    if (!err) err = gpu_prism_smatrix_to_device(e, plan, trans, by_pixel[0]);
    if (!err)
        err = cudaSetDevice(d->ids[0]) == cudaSuccess
            ? STEM_OK
            : gpu_fail_cuda(cudaGetLastError(), "cudaSetDevice", __FILE__, __LINE__, __func__);
    double t1 = stem_phase_add(STEM_PHASE_SMATRIX, t0);
    if (!err && d->n_gpus > 1) {
        err = copy_to_other_gpus(d, by_pixel, S_bytes);
        t1 = stem_phase_add(STEM_PHASE_GATHER, t1);
    }
    if (!err)
        stem_info("gpu PRISM: S-matrix kept on the GPU between its steps (%.3f GiB not copied through the host%s); "
                  "S-matrix step %.3f s, its one copy written beam fastest",
                  S_bytes / GPU_GIB,
                  d->n_gpus > 1 ? (d->peer ? ", copied peer to peer to the rank's other GPUs"
                                           : ", copied to the rank's other GPUs")
                                : "",
                  t1 - t0);
    for (int i = 0; i < n && !err; i++) err = gpu_prism_output_from_device(e, &plans[i], by_pixel, det, &res[i]);
    free_on_every_gpu(d, by_pixel);
    stem_phase_add(STEM_PHASE_PROBES, t1);
    return err;
}

/* The general path's output step: one detection plane's S-matrix, gathered over the rank group
 * on the host beam fastest over the whole box (the engine reads no smaller tile): uploaded
 * once and copied to the rank's other GPUs when it fits there, else streamed from the host. */
int gpu_prism_output(const stem_engine *e, const stem_plan *plan, const stem_prism_view *S, const stem_detector *det,
                     stem_result *res)
{
    const gpu_devices *d = gpu_engine_devices(e);
    size_t S_bytes = sizeof(float2) * plan->crop_nx * plan->crop_ny * (size_t)plan->n_beams;
    gpu_engine_state *st = gpu_engine_state_of(e);
    if (S->tile.x0 || S->tile.y0 || S->tile.nx != plan->crop_nx || S->tile.ny != plan->crop_ny)
        return STEM_FAIL(STEM_ERR_INTERNAL, "gpu PRISM output: given a tile of the S-matrix, not the whole box");
    if (st->gathered_plan != plan) { /* the same answer for every configuration */
        gpu_out_plan op;
        STEM_TRY(gpu_out_plan_build(plan, d, 0, &op));
        st->gathered_on_device = !op.streaming && op.bytes_total + (double)S_bytes <= d->usable_bytes;
        st->gathered_plan = plan;
        gpu_out_plan_free(&op);
    }
    if (!st->gathered_on_device) return gpu_prism_output_from_host(e, plan, S->S, det, res);
    double t0 = stem_wall_time();
    float2 *by_pixel[GPU_MAX_DEVICES] = {NULL};
    int err = alloc_on_first_gpu(d, S_bytes, &by_pixel[0]);
    if (!err && cudaMemcpy(by_pixel[0], S->S, S_bytes, cudaMemcpyHostToDevice) != cudaSuccess)
        err = gpu_fail_cuda(cudaGetLastError(), "cudaMemcpy(S-matrix)", __FILE__, __LINE__, __func__);
    if (!err && d->n_gpus > 1) err = copy_to_other_gpus(d, by_pixel, S_bytes);
    if (!err)
        stem_info("gpu PRISM: gathered S-matrix (%.3f GiB) uploaded once%s: %.3f s", S_bytes / GPU_GIB,
                  d->n_gpus > 1 ? ", then copied to the rank's other GPUs" : "", stem_wall_time() - t0);
    if (!err) err = gpu_prism_output_from_device(e, plan, by_pixel, det, res);
    free_on_every_gpu(d, by_pixel);
    return err;
}
