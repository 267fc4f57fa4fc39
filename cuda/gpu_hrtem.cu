/* Plane-wave imaging (algorithm = hrtem) on the rank's first GPU: the plane wave of
 * each beam tilt through every slice with the multislice kernels (gpu_propagate.cu),
 * its Fourier-space exit wave copied back for the detector channels (src/hrtem.c),
 * the real-space exit wave and the lens image of each focal-spread defocus made on
 * the device. The CPU engine's src/hrtem.c is the reference: the same plane wave,
 * propagators, band limit, normalisation and lens. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_internal.cuh"

extern "C" {
#include "../src/channels.h"
#include "../src/coherence.h"
#include "../src/hrtem.h"
}

/* What the propagation depends on: a context serves every plan that agrees on these. */
typedef struct {
    int nx, ny, n_slices, memory_mode, fft_callbacks, gpu_slices;
    double cell[2], dz, dz_last, lambda, q_limit;
} hr_geometry;

/* What the lens's table (its phase without defocus) depends on, beyond the geometry. */
typedef struct {
    stem_aberrations aberr; /* C10 zeroed: each focal point's defocus is added on the device */
    double tilt_q[2], aperture_mrad;
} hr_lens_key;

typedef struct gpu_hr_ctx {
    hr_geometry geom;
    gpu_devices dev;
    gpu_prop_plan pp;   /* batch 1: one plane wave */
    gpu_prop_shared sh; /* propagators, transmission functions (single-transfer), beam_k */
    gpu_prop_worker w;  /* stream, cuFFT plans, the wave */
    float2 *plane;      /* the Fourier-space wave at a detection plane (its last propagator applied) */
    float2 *scratch;    /* the wave through the lens, or the exit wave in real space */
    float *image;       /* the image summed over the focal points */
    double *chi;        /* the lens's phase without defocus, NaN where the aperture stops */
    int has_lens;
    hr_lens_key lens;        /* valid when has_lens */
    stem_complex *host_wave; /* pinned: the Fourier-space exit wave, or the real-space one */
    float *host_image;       /* pinned */
} hr_ctx;

static hr_geometry geometry_of(const stem_plan *plan)
{
    hr_geometry g;
    memset(&g, 0, sizeof g); /* padding too: compared with memcmp */
    g.nx = plan->nx;
    g.ny = plan->ny;
    g.n_slices = plan->n_slices;
    g.memory_mode = plan->opt.memory_mode;
    g.fft_callbacks = plan->opt.fft_callbacks;
    g.gpu_slices = plan->opt.gpu_slices;
    g.cell[0] = plan->cell[0];
    g.cell[1] = plan->cell[1];
    g.dz = plan->dz;
    g.dz_last = plan->dz_last;
    g.lambda = plan->lambda;
    g.q_limit = plan->q_limit;
    return g;
}

static hr_lens_key lens_key_of(const stem_plan *plan)
{
    hr_lens_key k;
    memset(&k, 0, sizeof k);
    k.aberr = plan->aberr;
    k.aberr.c[STEM_C10] = 0;
    k.tilt_q[0] = plan->tilt_q[0];
    k.tilt_q[1] = plan->tilt_q[1];
    k.aperture_mrad = plan->opt.objective_aperture_mrad;
    return k;
}

/* ---- memory ----------------------------------------------------------------- */

/* Bytes on the GPU: propagators, the worker (wave, cuFFT work area, streaming's two slice
 * buffers), the wave at a detection plane, the lens (scratch wave, image, phase table) and,
 * single-transfer, every slice. */
static double hr_bytes(const stem_plan *plan, int streaming)
{
    double grid = (double)plan->nx * plan->ny, wave = 8.0 * grid;
    double b = wave * stem_propagator_count(plan) + 2.0 * wave + 2.0 * wave + 4.0 * grid + 8.0 * grid;
    b += streaming ? 2.0 * wave : wave * plan->n_slices;
    return b + 4.0 * 1048576.0; /* stream, events, plan objects */
}

/* Single-transfer or streaming as [compute] memory_mode allows and the GPU holds; *fits = 0
 * when neither fits (the CPU engine then makes the image). single-transfer asked for and too
 * large is an error, as for multislice. */
static int hr_plan_build(const stem_plan *plan, const gpu_devices *d, int verbose, gpu_prop_plan *pp, int *fits)
{
    memset(pp, 0, sizeof *pp);
    pp->smatrix = 1; /* plane waves */
    pp->batch = 1;
    pp->n_items = 1;
    int mode = plan->opt.memory_mode;
    double single = hr_bytes(plan, 0), stream = hr_bytes(plan, 1);
    *fits = 1;
    if (mode != STEM_MEMMODE_STREAMING && single <= d->usable_bytes) {
        pp->streaming = 0;
    } else if (mode == STEM_MEMMODE_SINGLE) {
        return STEM_FAIL(STEM_ERR_MEMORY,
                         "hrtem does not fit on the GPU in single-transfer mode: it needs %.2f GiB but %.2f GiB are "
                         "usable (%.2f GiB free on %s); use [compute] memory_mode = streaming or auto",
                         single / GPU_GIB, d->usable_bytes / GPU_GIB, d->free_bytes / GPU_GIB, d->name);
    } else if (stream <= d->usable_bytes) {
        pp->streaming = 1;
    } else {
        *fits = 0;
    }
    pp->bytes_total = pp->bytes_shared = *fits ? hr_bytes(plan, pp->streaming) : 0;
    if (verbose)
        stem_info("GPU memory estimate for hrtem on one GPU: single-transfer %.3f GiB, streaming %.3f GiB; usable %.2f "
                  "of %.2f GiB free -> %s",
                  single / GPU_GIB, stream / GPU_GIB, d->usable_bytes / GPU_GIB, d->free_bytes / GPU_GIB,
                  !*fits              ? "the CPU engine (the wave does not fit even when streaming)"
                      : pp->streaming ? "streaming slice by slice"
                                      : "single-transfer");
    return STEM_OK;
}

int gpu_hrtem_estimate(const stem_plan *plan, const gpu_devices *d)
{
    gpu_prop_plan pp;
    int fits;
    return hr_plan_build(plan, d, 1, &pp, &fits);
}

/* ---- context ------------------------------------------------------------------ */

static void hr_release(hr_ctx *c)
{
    gpu_use_device_quietly(&c->dev, 0);
    gpu_prop_worker_free(&c->w);
    gpu_prop_shared_free(&c->sh);
    gpu_free(c->plane);
    gpu_free(c->scratch);
    gpu_free(c->image);
    gpu_free(c->chi);
    gpu_free_host(c->host_wave);
    gpu_free_host(c->host_image);
}

/* Everything that does not depend on the configuration or the beam tilt; *fits = 0 when the
 * GPU cannot hold it (nothing made). */
static int hr_create(hr_ctx *c, const stem_engine *e, const stem_plan *plan, int *fits)
{
    size_t grid = (size_t)plan->nx * plan->ny;
    c->geom = geometry_of(plan);
    c->dev = *gpu_engine_devices(e);
    STEM_TRY(gpu_use_device(&c->dev, 0));
    STEM_TRY(hr_plan_build(plan, &c->dev, 0, &c->pp, fits));
    c->pp.kept = &gpu_engine_state_of(e)->kept;
    if (!*fits) return STEM_OK;
    STEM_TRY(gpu_prop_upload_propagators(plan, &c->sh));
    if (!c->pp.streaming)
        GPU_ALLOC(c->sh.trans, grid * plan->n_slices * sizeof(float2), "transmission functions (hrtem)");
    GPU_ALLOC(c->sh.beam_k, 2 * sizeof(int), "beam tilt");
    STEM_TRY(gpu_prop_worker_create(plan, &c->pp, &c->w));
    GPU_ALLOC(c->plane, grid * sizeof(float2), "hrtem wave at a detection plane");
    GPU_ALLOC(c->scratch, grid * sizeof(float2), "hrtem lens wave");
    GPU_ALLOC(c->image, grid * sizeof(float), "hrtem image");
    GPU_ALLOC(c->chi, grid * sizeof(double), "hrtem lens phase");
    GPU_ALLOC_HOST(c->host_wave, grid * sizeof(stem_complex), "hrtem exit wave");
    GPU_ALLOC_HOST(c->host_image, grid * sizeof(float), "hrtem image");
    return STEM_OK;
}

void gpu_hrtem_cache_free(gpu_engine_state *st)
{
    if (!st->hr) return;
    hr_release(st->hr);
    free(st->hr);
    st->hr = NULL;
}

/* The kept context for plan (made afresh when its geometry differs); NULL with *fits = 0
 * when the GPU cannot hold it. */
static int hr_context(const stem_engine *e, const stem_plan *plan, hr_ctx **out, int *fits)
{
    gpu_engine_state *st = gpu_engine_state_of(e);
    hr_geometry g = geometry_of(plan);
    *out = NULL;
    *fits = 1;
    if (st->hr && !memcmp(&st->hr->geom, &g, sizeof g)) {
        *out = st->hr;
        return gpu_use_device(&st->hr->dev, 0);
    }
    gpu_hrtem_cache_free(st);
    st->hr = (hr_ctx *)stem_calloc(1, sizeof(hr_ctx), "GPU hrtem context");
    if (!st->hr) return STEM_ERR_MEMORY;
    int err = hr_create(st->hr, e, plan, fits);
    if (err || !*fits) {
        gpu_hrtem_cache_free(st);
        return err;
    }
    *out = st->hr;
    return STEM_OK;
}

/* ---- kernels ------------------------------------------------------------------ */

/* out = wave A(q) exp(-i chi(q)): chi the table's phase plus the defocus c10's term of
 * stem_probe_chi, 2 pi / lambda * C10 theta^2 / 2 about the beam (tq); A = 0 where the table
 * is NaN (the objective aperture), as stem_hrtem_lens_at. */
static __global__ void k_lens(float2 *__restrict__ out, const float2 *__restrict__ wave,
                              const double *__restrict__ chi0, int nx, int ny, double cell_x, double cell_y,
                              double lambda, double c10, double tqx, double tqy)
{
    size_t grid = (size_t)nx * ny, k = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= grid) return;
    double c = chi0[k];
    if (isnan(c)) {
        out[k] = make_float2(0.0f, 0.0f);
        return;
    }
    int i = (int)(k % nx), j = (int)(k / nx);
    double tx = lambda * (stem_fft_index(i, nx) / cell_x - tqx), ty = lambda * (stem_fft_index(j, ny) / cell_y - tqy);
    double t2 = tx * tx + ty * ty, s, co;
    sincos(c + 2 * M_PI / lambda * (0.5 * c10 * t2), &s, &co);
    out[k] = gpu_cmul(wave[k], make_float2((float)co, (float)-s));
}

/* image += weight |w|^2, as src/hrtem.c's lens_image sums its focal points. */
static __global__ void k_add_intensity(float *__restrict__ image, const float2 *__restrict__ w, double weight,
                                       size_t grid)
{
    size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= grid) return;
    float2 v = w[k];
    image[k] += (float)(weight * (v.x * v.x + v.y * v.y));
}

int gpu_hrtem_lens(const stem_plan *plan, const float2 *wave, const double *chi, double c10, float2 *out,
                   cudaStream_t s)
{
    size_t grid = (size_t)plan->nx * plan->ny;
    k_lens<<<gpu_blocks(grid, 256), 256, 0, s>>>(out, wave, chi, plan->nx, plan->ny, plan->cell[0], plan->cell[1],
                                                 plan->lambda, c10, plan->tilt_q[0], plan->tilt_q[1]);
    CUDA_LAUNCH();
    return STEM_OK;
}

int gpu_hrtem_add_intensity(float *image, const float2 *w, double weight, size_t grid, cudaStream_t s)
{
    k_add_intensity<<<gpu_blocks(grid, 256), 256, 0, s>>>(image, w, weight, grid);
    CUDA_LAUNCH();
    return STEM_OK;
}

/* ---- steps ---------------------------------------------------------------------- */

/* The lens's phase table for plan's aberrations, made on the host once per lens. */
static int hr_lens_table(hr_ctx *c, const stem_plan *plan)
{
    hr_lens_key key = lens_key_of(plan);
    if (c->has_lens && !memcmp(&c->lens, &key, sizeof key)) return STEM_OK;
    size_t grid = (size_t)plan->nx * plan->ny;
    double *chi = (double *)stem_alloc(grid * sizeof(double), "hrtem lens phase");
    if (!chi) return STEM_ERR_MEMORY;
    stem_hrtem_chi_without_defocus(plan, chi);
    cudaError_t e = cudaMemcpy(c->chi, chi, grid * sizeof(double), cudaMemcpyHostToDevice);
    if (e == cudaSuccess) e = cudaDeviceSynchronize(); /* a pageable copy may still be on its way */
    free(chi);
    CUDA_CALL(e);
    c->lens = key;
    c->has_lens = 1;
    return STEM_OK;
}

/* Plan's plane wave (its beam tilt) in c->w.waves, in real space above the first slice. */
static int hr_plane_wave(hr_ctx *c, const stem_plan *plan)
{
    CUDA_CALL(cudaMemcpyAsync(c->sh.beam_k, plan->plane_k, 2 * sizeof(int), cudaMemcpyHostToDevice, c->w.stream));
    return gpu_plane_waves_build(plan, &c->pp, &c->sh, &c->w, 0, 1);
}

/* The wave in c->w.waves from below `above` slices to below `below` (gpu_propagate), and its
 * copy at that detection plane in c->plane with the last propagator applied (the Fourier-space
 * wave that src/hrtem.c records); c->w.waves goes on from there to the next plane. */
static int hr_to_plane(hr_ctx *c, const stem_plan *plan, const stem_complex *trans, int above, int below)
{
    size_t grid = (size_t)plan->nx * plan->ny;
    STEM_TRY(gpu_propagate(plan, &c->pp, &c->sh, trans, &c->w, above, below));
    CUDA_CALL(cudaMemcpyAsync(c->plane, c->w.waves, grid * sizeof(float2), cudaMemcpyDeviceToDevice, c->w.stream));
    return gpu_mul_bcast(c->plane, gpu_prop_after(plan, &c->sh, below), grid, 1, c->w.stream);
}

/* The real-space exit wave added to res's exit channel (src/hrtem.c exit_in_real_space). */
static int hr_exit_real_space(hr_ctx *c, const stem_plan *plan, stem_result *res)
{
    size_t grid = (size_t)plan->nx * plan->ny;
    cudaStream_t s = c->w.stream;
    CUDA_CALL(cudaMemcpyAsync(c->scratch, c->plane, grid * sizeof(float2), cudaMemcpyDeviceToDevice, s));
    CUFFT_CALL(cufftExecC2C(c->w.fft, c->scratch, c->scratch, CUFFT_INVERSE));
    CUDA_CALL(cudaMemcpyAsync(c->host_wave, c->scratch, grid * sizeof(float2), cudaMemcpyDeviceToHost, s));
    CUDA_CALL(cudaStreamSynchronize(s));
    float *out = (float *)res->data[STEM_CH_EXIT];
    for (size_t p = 0; p < grid; p++) {
        out[2 * p] += c->host_wave[p].re;
        out[2 * p + 1] += c->host_wave[p].im;
    }
    return STEM_OK;
}

/* The image through the lens, summed over the focal points, added to res's image (src/hrtem.c lens_image). */
static int hr_lens_image(hr_ctx *c, const stem_plan *plan, stem_result *res)
{
    size_t grid = (size_t)plan->nx * plan->ny;
    cudaStream_t s = c->w.stream;
    double offset[STEM_MAX_FOCAL_POINTS], weight[STEM_MAX_FOCAL_POINTS];
    int n = stem_focal_points(plan, offset, weight);
    STEM_TRY(hr_lens_table(c, plan));
    CUDA_CALL(cudaMemsetAsync(c->image, 0, grid * sizeof(float), s));
    for (int k = 0; k < n; k++) {
        STEM_TRY(gpu_hrtem_lens(plan, c->plane, c->chi, plan->aberr.c[STEM_C10] + offset[k], c->scratch, s));
        CUFFT_CALL(cufftExecC2C(c->w.fft, c->scratch, c->scratch, CUFFT_INVERSE));
        STEM_TRY(gpu_hrtem_add_intensity(c->image, c->scratch, weight[k], grid, s));
    }
    CUDA_CALL(cudaMemcpyAsync(c->host_image, c->image, grid * sizeof(float), cudaMemcpyDeviceToHost, s));
    CUDA_CALL(cudaStreamSynchronize(s));
    float *image = (float *)res->data[STEM_CH_HRTEM];
    for (size_t p = 0; p < grid; p++) image[p] += c->host_image[p];
    return STEM_OK;
}

/* Point i's record: the detector channels from the Fourier-space wave on the host, the exit
 * wave (if asked for) and the image on the device. */
static int hr_record(hr_ctx *c, const stem_plan *plan, const stem_detector *det, stem_result *res)
{
    size_t grid = (size_t)plan->nx * plan->ny;
    if (res->n_probes == 0) return STEM_OK;
    CUDA_CALL(cudaMemcpyAsync(c->host_wave, c->plane, grid * sizeof(float2), cudaMemcpyDeviceToHost, c->w.stream));
    CUDA_CALL(cudaStreamSynchronize(c->w.stream));
    STEM_TRY(stem_hrtem_record_pattern(plan, c->host_wave, det, res));
    if (res->data[STEM_CH_EXIT]) STEM_TRY(hr_exit_real_space(c, plan, res));
    return hr_lens_image(c, plan, res);
}

/* Each beam tilt's plane wave through the slices once, every point with that tilt recorded at
 * each detection plane (res[point * planes + plane]), as src/hrtem.c stem_hrtem_points. */
static int hr_points(hr_ctx *c, const stem_plan *plans, int n, const stem_complex *trans, const stem_detector *det,
                     stem_result *res)
{
    int planes = stem_plan_n_planes(&plans[0]);
    for (int i = 0, j; i < n; i = j) {
        j = stem_hrtem_same_tilt_end(plans, i, n);
        STEM_TRY(hr_plane_wave(c, &plans[i]));
        for (int k = 0, above = 0; k < planes; k++) {
            int below = stem_plan_plane_slices(&plans[i], k);
            STEM_TRY(hr_to_plane(c, &plans[i], trans, above, below));
            for (int q = i; q < j; q++) STEM_TRY(hr_record(c, &plans[q], det, &res[(size_t)q * planes + k]));
            above = below;
        }
    }
    return STEM_OK;
}

/* The engine's hrtem step: every point's exit wave and image on the rank's first GPU, the
 * transmission functions uploaded once (or streamed per wave); STEM_NOT_APPLICABLE when
 * the GPU cannot hold the wave (the CPU engine's src/hrtem.c runs instead). */
int gpu_hrtem_points(const stem_engine *e, const stem_plan *plans, int n, const stem_complex *trans,
                     const stem_detector *det, stem_result *res)
{
    double t0 = stem_wall_time();
    hr_ctx *c;
    int fits;
    STEM_TRY(hr_context(e, &plans[0], &c, &fits));
    if (!fits) return STEM_NOT_APPLICABLE;
    int pinned = 0, err = STEM_OK;
    size_t trans_bytes = sizeof(stem_complex) * plans[0].nx * plans[0].ny * plans[0].n_slices;
    if (c->pp.streaming)
        gpu_pin(trans, trans_bytes, &pinned, "transmission functions");
    else
        err = gpu_prop_shared_upload_trans(&plans[0], &c->pp, trans, &c->sh);
    if (!err && cudaDeviceSynchronize() != cudaSuccess) /* the pageable upload complete before the stream reads it */
        err = gpu_fail_cuda(cudaGetLastError(), "cudaDeviceSynchronize(transmission upload)", __FILE__, __LINE__,
                            __func__);
    double t1 = stem_wall_time();
    if (!err) err = hr_points(c, plans, n, trans, det, res);
    gpu_unpin(trans, pinned);
    if (!err)
        stem_info("gpu hrtem: %d point(s) on GPU %d, %s, %s: %.3f s (%.3f s setup and upload)", n, c->dev.ids[0],
                  c->pp.streaming ? "streaming" : "single-transfer", c->w.fft_note, stem_wall_time() - t0, t1 - t0);
    if (err) gpu_hrtem_cache_free(gpu_engine_state_of(e));
    return err;
}
