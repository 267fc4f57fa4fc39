/* Detectors on the GPU: the tables of stem_detector_build uploaded once per
 * GPU, intensities binned into rings, images, total and centre of mass on the
 * device (only these sums, and 4D patterns when asked for, come back), and the
 * host-side accumulation into the rank's stem_result.
 * Two kernels: k_detect_fixed ([compute] gpu_deterministic = on, the default) adds
 * in an order fixed by the plan alone, so the bits do not depend on the batch, the
 * launch, the GPU's scheduling or the run; k_detect_atomic (off) adds with float
 * atomics, whose order is whatever the GPU's scheduling gives. */
#include <stdlib.h>
#include <string.h>

#include "gpu_internal.cuh"

#define DET_THREADS 256
#define DET_TILE 2048        /* pixels per block of the fixed order: a constant, never a launch choice */
#define DET_SMEM (48 * 1024) /* static shared memory limit per block */

/* Fixed order: warps per block such that each warp's private bins fit the shared memory
 * (8 for up to ~1500 rings and segments; fewer for finer rings); 0 when even one does not. */
static int det_warps(int n_bins, int n_seg, int n_images)
{
    size_t per_warp = sizeof(float) * (size_t)(n_bins + n_seg + n_images + 3 + 32);
    int w = (int)(DET_SMEM / per_warp);
    return w > DET_THREADS / 32 ? DET_THREADS / 32 : w;
}

static int det_tiles(int n_pix) { return (n_pix + DET_TILE - 1) / DET_TILE; }

size_t gpu_det_work_bytes(const stem_plan *plan, int n)
{
    if (!plan->opt.gpu_deterministic) return 0;
    int tiles = det_tiles(plan->out_nx * plan->out_ny);
    return tiles > 1 ? sizeof(float) * (size_t)tiles * stem_channel_record_stride(plan) * (size_t)n : 0;
}

size_t gpu_det_bytes(const stem_plan *plan, int gather_full_grid)
{
    size_t n = (size_t)plan->out_nx * plan->out_ny;
    return n *
        (sizeof(int) + sizeof(uint32_t) + 2 * sizeof(float) + (gather_full_grid ? sizeof(int) : 0) +
         (plan->seg_n ? sizeof(int) : 0));
}

size_t gpu_det_result_bytes(const stem_plan *plan, int n)
{
    return (size_t)stem_channel_bytes_per_probe(plan) * (size_t)n;
}

int gpu_det_create(const stem_plan *plan, const stem_detector *det, int gather_full_grid, gpu_det *g)
{
    memset(g, 0, sizeof *g);
    g->n_pix = det->n_pixels;
    g->n_bins = (int)stem_channel_width(plan, STEM_CH_RINGS); /* recorded only when written (save_3d) */
    g->n_images = plan->n_images;
    g->ox = plan->out_nx;
    g->oy = plan->out_ny;
    g->n_seg = (int)stem_channel_width(plan, STEM_CH_SEGMENTS);
    g->stride = stem_channel_record_stride(plan);
    g->has_4d = stem_channel_width(plan, STEM_CH_CBED) > 0 || plan->opt.save_pacbed;
    g->fixed_order = plan->opt.gpu_deterministic;
    g->tiles = det_tiles(g->n_pix);
    /* the plan's ring count, recorded or not: the warps, and so the fixed order of the sums, stay */
    g->warps = det_warps(plan->n_bins, g->n_seg, g->n_images);
    if (g->has_4d && !(g->pattern_bin = stem_pattern_bins_centred(plan, det))) return STEM_ERR_MEMORY;
    /* k_detect writes the record as [rings][images][total][com x, y][segments]: the channel table must agree */
    STEM_ASSERT(stem_channel_record_offset(plan, STEM_CH_IMAGES) == g->n_bins &&
                    stem_channel_record_offset(plan, STEM_CH_TOTAL) == g->n_bins + g->n_images &&
                    stem_channel_record_offset(plan, STEM_CH_COM) == g->n_bins + g->n_images + 1 &&
                    stem_channel_record_offset(plan, STEM_CH_SEGMENTS) == g->n_bins + g->n_images + 3 &&
                    g->stride == g->n_bins + g->n_images + 3 + g->n_seg,
                "GPU detector record layout differs from the channel table (stride %d)", g->stride);
    if (g->n_pix != g->ox * g->oy)
        return STEM_FAIL(STEM_ERR_INTERNAL, "detector has %d pixels, expected %d x %d", g->n_pix, g->ox, g->oy);
    if (g->n_images > 32) return STEM_FAIL(STEM_ERR_INTERNAL, "%d images exceed the 32-bit image mask", g->n_images);
    size_t n = (size_t)g->n_pix;
    float *theta = (float *)stem_alloc(sizeof(float) * 2 * n, "detector angles");
    int *src = gather_full_grid ? (int *)stem_alloc(sizeof(int) * n, "detector gather table") : NULL;
    int err = theta && (src || !gather_full_grid) ? STEM_OK : STEM_ERR_MEMORY;
    for (size_t k = 0; !err && k < n; k++) {
        theta[2 * k] = det->theta_x[k];
        theta[2 * k + 1] = det->theta_y[k];
    }
    if (!err && src) /* detector pixel (FFT order) -> pixel of the full simulation grid (f = 1) */
        for (int j = 0; j < g->oy; j++) {
            int gy = stem_box_to_grid(j, g->oy, plan->ny);
            for (int i = 0; i < g->ox; i++)
                src[(size_t)j * g->ox + i] = gy * plan->nx + stem_box_to_grid(i, g->ox, plan->nx);
        }
    if (!err) err = gpu_alloc_((void **)&g->bin, sizeof(int) * n, "detector bins", __FILE__, __LINE__, __func__);
    if (!err) err = gpu_alloc_((void **)&g->mask, sizeof(uint32_t) * n, "detector masks", __FILE__, __LINE__, __func__);
    if (!err)
        err = gpu_alloc_((void **)&g->theta, sizeof(float) * 2 * n, "detector angles", __FILE__, __LINE__, __func__);
    if (!err && src)
        err = gpu_alloc_((void **)&g->src, sizeof(int) * n, "detector gather table", __FILE__, __LINE__, __func__);
    if (!err && g->n_seg)
        err = gpu_alloc_((void **)&g->seg, sizeof(int) * n, "detector segments", __FILE__, __LINE__, __func__);
    cudaError_t e = cudaSuccess;
    if (!err) e = cudaMemcpy(g->bin, det->bin, sizeof(int) * n, cudaMemcpyHostToDevice);
    if (!err && e == cudaSuccess)
        e = cudaMemcpy(g->mask, det->image_mask, sizeof(uint32_t) * n, cudaMemcpyHostToDevice);
    if (!err && e == cudaSuccess) e = cudaMemcpy(g->theta, theta, sizeof(float) * 2 * n, cudaMemcpyHostToDevice);
    if (!err && e == cudaSuccess && src) e = cudaMemcpy(g->src, src, sizeof(int) * n, cudaMemcpyHostToDevice);
    if (!err && e == cudaSuccess && g->n_seg)
        e = cudaMemcpy(g->seg, det->segment, sizeof(int) * n, cudaMemcpyHostToDevice);
    if (!err && e == cudaSuccess) e = cudaDeviceSynchronize();
    if (!err && e != cudaSuccess) err = gpu_fail_cuda(e, "cudaMemcpy(detector tables)", __FILE__, __LINE__, __func__);
    free(theta);
    free(src);
    return err;
}

void gpu_det_free(gpu_det *g)
{
    gpu_free(g->bin);
    gpu_free(g->mask);
    gpu_free(g->theta);
    gpu_free(g->src);
    gpu_free(g->seg);
    free(g->pattern_bin);
    memset(g, 0, sizeof *g);
}

static __device__ __forceinline__ float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

/* Intensity of detector pixel k of wave w (the last propagator applied when given). */
static __device__ __forceinline__ float det_intensity(const float2 *__restrict__ w, const int *__restrict__ src,
                                                      const float2 *__restrict__ prop, float scale, int k)
{
    int s = src ? src[k] : k;
    float2 v = w[s];
    if (prop) v = gpu_cmul(v, prop[s]);
    return (v.x * v.x + v.y * v.y) * scale;
}

/* Adds each lane's I to bins[b] (b < 0: nothing) in lane order: the lowest lane of each
 * group of lanes that share a bin sums the group's values (through the warp's scratch[32])
 * from the lowest lane up and adds the sum to the bin. Only this warp touches bins, so the
 * adds of successive calls come in program order. */
static __device__ __forceinline__ void warp_bin_add(float *bins, float *scratch, int b, float I, int lane)
{
    if (__all_sync(0xffffffffu, b < 0)) return;
    unsigned peers = __match_any_sync(0xffffffffu, b);
    scratch[lane] = I;
    __syncwarp();
    if (b >= 0 && __ffs(peers) - 1 == lane) {
        float acc = 0.0f;
        for (unsigned m = peers; m; m &= m - 1) acc += scratch[__ffs(m) - 1];
        bins[b] += acc;
    }
    __syncwarp();
}

/* Block (tile, probe) of the fixed order: pixels [tile * DET_TILE, + DET_TILE) of one
 * probe. Thread t takes pixels t, t + blockDim, ... of the tile; rings and segments
 * go into its warp's private bins (warp_bin_add), images, total and centre of mass
 * into registers and then a fixed shuffle tree; the warps' sums are added in warp
 * order. The tile's record goes to dres (one tile) or to work[probe][tile], which
 * k_detect_tiles adds in tile order. Nothing depends on the launch but the plan. */
static __global__ void __launch_bounds__(DET_THREADS)
    k_detect_fixed(const float2 *__restrict__ waves, size_t wave_stride, const int *__restrict__ src,
                   const float2 *__restrict__ prop, float scale, const int *__restrict__ bin,
                   const uint32_t *__restrict__ mask, const float2 *__restrict__ theta, const int *__restrict__ seg,
                   int n_seg, int n_pix, int n_bins, int n_images, int ox, int oy, double *__restrict__ dres,
                   float *__restrict__ work, float *__restrict__ cbed)
{
    extern __shared__ float sh[]; /* [warps][n_bins + n_seg] bins, [warps][n_images + 3] sums, [warps][32] scratch */
    int p = blockIdx.y, tile = blockIdx.x, warps = blockDim.x >> 5, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int n_bs = n_bins + n_seg, n_sums = n_images + 3, n_vals = n_bins + n_sums + n_seg;
    float *bins = sh + (size_t)warp * n_bs, *sums = sh + (size_t)warps * n_bs;
    float *scratch = sums + (size_t)warps * n_sums + 32 * warp;
    for (int i = threadIdx.x; i < warps * (n_bs + n_sums); i += blockDim.x) sh[i] = 0.0f;
    __syncthreads();
    const float2 *w = waves + (size_t)p * wave_stride;
    float tot = 0, cx = 0, cy = 0, img[STEM_MAX_IMAGES];
#pragma unroll
    for (int m = 0; m < STEM_MAX_IMAGES; m++) img[m] = 0;
    int k0 = tile * DET_TILE, k1 = k0 + DET_TILE < n_pix ? k0 + DET_TILE : n_pix;
    for (int base = k0; base < k1; base += blockDim.x) { /* the whole warp goes round together */
        int k = base + threadIdx.x, b = -1, sg = -1;
        float I = 0.0f;
        if (k < k1) {
            I = det_intensity(w, src, prop, scale, k);
            if (cbed) {
                int j = k / ox, i = k - j * ox;
                cbed[(size_t)p * n_pix + (size_t)stem_centred_index(j, oy) * ox + stem_centred_index(i, ox)] = I;
            }
            b = bin[k];
        }
        if (b >= 0) {
            float2 th = theta[k];
            tot += I;
            cx += I * th.x;
            cy += I * th.y;
            uint32_t mk = mask[k];
#pragma unroll
            for (int m = 0; m < STEM_MAX_IMAGES; m++)
                if (mk >> m & 1u) img[m] += I;
            if (seg) sg = seg[k];
        }
        if (n_bins) warp_bin_add(bins, scratch, b, I, lane);
        if (seg) warp_bin_add(bins + n_bins, scratch, sg, I, lane);
    }
    tot = warp_sum(tot);
    cx = warp_sum(cx);
    cy = warp_sum(cy);
#pragma unroll
    for (int m = 0; m < STEM_MAX_IMAGES; m++)
        if (m < n_images) img[m] = warp_sum(img[m]);
    if (lane == 0) {
        float *mine = sums + (size_t)warp * n_sums;
#pragma unroll
        for (int m = 0; m < STEM_MAX_IMAGES; m++)
            if (m < n_images) mine[m] = img[m];
        mine[n_images] = tot;
        mine[n_images + 1] = cx;
        mine[n_images + 2] = cy;
    }
    __syncthreads();
    for (int i = threadIdx.x; i < n_vals; i += blockDim.x) { /* record order: rings, images, total, com, segments */
        const float *from = i < n_bins ? sh + i : i < n_bins + n_sums ? sums + (i - n_bins) : sh + (i - n_sums);
        int step = i < n_bins || i >= n_bins + n_sums ? n_bs : n_sums;
        float v = 0.0f;
        for (int q = 0; q < warps; q++) v += from[(size_t)q * step];
        if (gridDim.x == 1)
            dres[(size_t)p * n_vals + i] = (double)v;
        else
            work[((size_t)p * gridDim.x + tile) * n_vals + i] = v;
    }
}

/* The tiles' partial records of each probe added in tile order, in double. */
static __global__ void k_detect_tiles(const float *__restrict__ work, int tiles, int n_vals, int n,
                                      double *__restrict__ dres)
{
    size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= (size_t)n * n_vals) return;
    size_t p = e / n_vals, i = e - p * n_vals;
    double v = 0.0;
    for (int t = 0; t < tiles; t++) v += (double)work[(p * tiles + t) * n_vals + i];
    dres[e] = v;
}

/* Block (chunk, probe): a slice of one probe's detector pixels. Rings go through
 * shared-memory atomics, the few other sums through registers and warp shuffles;
 * each block adds its partial sums to the probe's doubles in global memory. */
static __global__ void __launch_bounds__(DET_THREADS)
    k_detect_atomic(const float2 *__restrict__ waves, size_t wave_stride, const int *__restrict__ src,
                    const float2 *__restrict__ prop, float scale, const int *__restrict__ bin,
                    const uint32_t *__restrict__ mask, const float2 *__restrict__ theta, const int *__restrict__ seg,
                    int n_seg, int n_pix, int n_bins, int n_images, int ox, int oy, double *__restrict__ dres,
                    float *__restrict__ cbed)
{
    extern __shared__ float sh[]; /* [n_bins][n_images][total, cx, cy][segments] */
    int p = blockIdx.y, n_vals = n_bins + n_images + 3 + n_seg;
    for (int i = threadIdx.x; i < n_vals; i += blockDim.x) sh[i] = 0.0f;
    __syncthreads();
    const float2 *w = waves + (size_t)p * wave_stride;
    float tot = 0, cx = 0, cy = 0, img[STEM_MAX_IMAGES];
#pragma unroll
    for (int m = 0; m < STEM_MAX_IMAGES; m++) img[m] = 0;
    for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < n_pix; k += gridDim.x * blockDim.x) {
        int s = src ? src[k] : k;
        float2 v = w[s];
        if (prop) v = gpu_cmul(v, prop[s]);
        float I = (v.x * v.x + v.y * v.y) * scale;
        if (cbed) {
            int j = k / ox, i = k - j * ox;
            cbed[(size_t)p * n_pix + (size_t)stem_centred_index(j, oy) * ox + stem_centred_index(i, ox)] = I;
        }
        int b = bin[k];
        if (b < 0) continue;
        if (n_bins) atomicAdd(&sh[b], I);
        if (seg && seg[k] >= 0) atomicAdd(&sh[n_bins + n_images + 3 + seg[k]], I);
        float2 th = theta[k];
        tot += I;
        cx += I * th.x;
        cy += I * th.y;
        uint32_t mk = mask[k];
#pragma unroll
        for (int m = 0; m < STEM_MAX_IMAGES; m++)
            if (mk >> m & 1u) img[m] += I;
    }
    int lane = threadIdx.x & 31;
    tot = warp_sum(tot);
    cx = warp_sum(cx);
    cy = warp_sum(cy);
#pragma unroll
    for (int m = 0; m < STEM_MAX_IMAGES; m++)
        if (m < n_images) img[m] = warp_sum(img[m]);
    if (lane == 0) {
#pragma unroll
        for (int m = 0; m < STEM_MAX_IMAGES; m++)
            if (m < n_images) atomicAdd(&sh[n_bins + m], img[m]);
        atomicAdd(&sh[n_bins + n_images], tot);
        atomicAdd(&sh[n_bins + n_images + 1], cx);
        atomicAdd(&sh[n_bins + n_images + 2], cy);
    }
    __syncthreads();
    for (int i = threadIdx.x; i < n_vals; i += blockDim.x)
        if (sh[i] != 0.0f) atomicAdd(&dres[(size_t)p * n_vals + i], (double)sh[i]);
}

/* Fixed order: one block per tile of DET_TILE pixels and probe, then (several tiles) the tiles added in order. */
static int det_run_fixed(const gpu_det *g, const float2 *waves, size_t wave_stride, const float2 *prop, float scale,
                         int n, double *dres, float *dcbed, float *dwork, cudaStream_t s)
{
    if (g->warps < 1)
        return STEM_FAIL(STEM_ERR_CONFIG,
                         "%d detector rings and %d segments exceed the GPU detector's limit (%d); use a "
                         "wider [detector] ring_width",
                         g->n_bins, g->n_seg, (int)(DET_SMEM / sizeof(float)) - g->n_images - 3 - 32);
    if (g->tiles > 1 && !dwork) return STEM_FAIL(STEM_ERR_INTERNAL, "the fixed-order detector needs its work area");
    size_t smem = sizeof(float) * (size_t)g->warps * (g->n_bins + g->n_seg + g->n_images + 3 + 32);
    k_detect_fixed<<<dim3(g->tiles, n), 32 * g->warps, smem, s>>>(
        waves, wave_stride, g->src, prop, scale, g->bin, g->mask, (const float2 *)g->theta, g->seg, g->n_seg, g->n_pix,
        g->n_bins, g->n_images, g->ox, g->oy, dres, dwork, g->has_4d ? dcbed : NULL);
    CUDA_LAUNCH();
    if (g->tiles > 1) {
        k_detect_tiles<<<gpu_blocks((size_t)n * g->stride, 256), 256, 0, s>>>(dwork, g->tiles, g->stride, n, dres);
        CUDA_LAUNCH();
    }
    return STEM_OK;
}

int gpu_det_run(const gpu_det *g, const float2 *waves, size_t wave_stride, const float2 *prop, float scale, int n,
                double *dres, float *dcbed, float *dwork, int sm_count, cudaStream_t s)
{
    if (n <= 0) return STEM_OK;
    if (g->n_images > STEM_MAX_IMAGES)
        return STEM_FAIL(STEM_ERR_INTERNAL, "%d images exceed STEM_MAX_IMAGES", g->n_images);
    if (g->fixed_order) return det_run_fixed(g, waves, wave_stride, prop, scale, n, dres, dcbed, dwork, s);
    CUDA_CALL(cudaMemsetAsync(dres, 0, sizeof(double) * g->stride * n, s));
    /* about four blocks per multiprocessor in all, at least 2048 pixels per block */
    int chunks = (g->n_pix + 2047) / 2048, fill = (4 * (sm_count > 0 ? sm_count : 132) + n - 1) / n;
    if (chunks > fill) chunks = fill;
    if (chunks < 1) chunks = 1;
    size_t smem = sizeof(float) * g->stride;
    if (smem > DET_SMEM)
        return STEM_FAIL(STEM_ERR_CONFIG,
                         "%d detector rings exceed the GPU detector's limit (%d); use a wider "
                         "[detector] ring_width",
                         g->n_bins, (int)(DET_SMEM / sizeof(float)) - g->n_images - 3 - g->n_seg);
    dim3 blocks(chunks, n);
    k_detect_atomic<<<blocks, DET_THREADS, smem, s>>>(waves, wave_stride, g->src, prop, scale, g->bin, g->mask,
                                                      (const float2 *)g->theta, g->seg, g->n_seg, g->n_pix, g->n_bins,
                                                      g->n_images, g->ox, g->oy, dres, g->has_4d ? dcbed : NULL);
    CUDA_LAUNCH();
    return STEM_OK;
}

void gpu_det_accumulate(const gpu_det *g, const double *hres, const float *hcbed, int n, const long *local, long begin,
                        stem_result *res)
{
    for (int i = 0; i < n; i++) {
        if (local && local[i] < 0) continue; /* another rank's probe, of a whole tile */
        long p = local ? local[i] : begin + i;
        const double *d = hres + (size_t)i * g->stride;
        for (int ch = 0; ch < STEM_N_CHANNELS; ch++) { /* the record holds the gpu_record channels in table order */
            if (!stem_channel_table[ch].gpu_record) continue;
            long w = res->width[ch];
            double *dst = (double *)res->data[ch] + p * w;
            for (long k = 0; k < w; k++) dst[k] += d[k];
            d += w;
        }
        if (hcbed && g->has_4d) /* centred patterns, cropped and binned */
            stem_result_add_pattern(res, p, g->pattern_bin, hcbed + (size_t)i * g->n_pix, g->n_pix);
    }
}
