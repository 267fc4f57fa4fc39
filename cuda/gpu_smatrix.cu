/* PRISM compact S-matrix on GPUs: batches of plane waves propagated like
 * multislice probes, cut to the Fourier box at each detection plane (the exit
 * surface without a thickness series), returned to real space with a batched
 * cuFFT plan and copied into S_local[beam - first][plane][crop_ny][crop_nx]. */
#include <stdlib.h>
#include <string.h>

#include "gpu_internal.cuh"

typedef struct {
    gpu_prop_worker pw;
    float2 *box;
    stem_complex *staging; /* page-locked: fast, asynchronous download */
    cufftHandle fft_box;
    int has_fft;
} sm_worker;

typedef struct gpu_sm_ctx {
    const stem_plan *plan;
    const stem_complex *trans;
    int first; /* the beam of item 0 */
    stem_complex *S_local;
    float2 *S_dev; /* instead of S_local: the S-matrix stays in device memory (the rank's first GPU) */
    gpu_devices dev;
    gpu_prop_plan pp;
    gpu_prop_shared sh[GPU_MAX_DEVICES];
    sm_worker *w;
} sm_ctx;

static int sm_worker_create(void *ctx, void *worker)
{
    sm_ctx *c = (sm_ctx *)ctx;
    sm_worker *w = (sm_worker *)worker;
    const stem_plan *plan = c->plan;
    int box = plan->crop_nx * plan->crop_ny, n[2] = {plan->crop_ny, plan->crop_nx};
    STEM_TRY(gpu_prop_worker_create(plan, &c->pp, &w->pw));
    GPU_ALLOC(w->box, sizeof(float2) * box * c->pp.batch, "S-matrix boxes");
    /* kept across configurations, whose S-matrix may be page-locked or not: always there */
    GPU_ALLOC_HOST(w->staging, sizeof(float2) * box * c->pp.batch, "S-matrix download buffer");
    CUFFT_CALL(cufftPlanMany(&w->fft_box, 2, n, NULL, 1, box, NULL, 1, box, CUFFT_C2C, c->pp.batch));
    w->has_fft = 1;
    CUFFT_CALL(cufftSetStream(w->fft_box, w->pw.stream));
    return STEM_OK;
}

static void sm_worker_free(void *worker)
{
    sm_worker *w = (sm_worker *)worker;
    gpu_prop_worker_free(&w->pw);
    if (w->has_fft) cufftDestroy(w->fft_box);
    gpu_free(w->box);
    gpu_free_host(w->staging);
    memset(w, 0, sizeof *w);
}

static int sm_setup(void *ctx, int w) { return gpu_use_worker_device(&((sm_ctx *)ctx)->dev, w); }

/* The batch's boxes of detection plane k to their beams: into S_dev, or through the staging buffer into S_local. */
static int store_plane(sm_ctx *c, sm_worker *w, long begin, int n, int k)
{
    const stem_plan *plan = c->plan;
    cudaStream_t s = w->pw.stream;
    size_t box = (size_t)plan->crop_nx * plan->crop_ny, stride = stem_prism_beam_stride(plan);
    size_t at = (size_t)begin * stride + (size_t)k * box;
    if (c->S_dev) { /* beam fastest into the one device copy (peer to peer from the rank's other GPUs) */
        STEM_TRY(
            gpu_prism_put_beams(c->S_dev, w->box, box, plan->n_beams, c->first - plan->beam_begin + (int)begin, n, s));
        CUDA_CALL(cudaStreamSynchronize(s));
        return STEM_OK;
    }
    CUDA_CALL(cudaMemcpyAsync(w->staging, w->box, sizeof(float2) * box * n, cudaMemcpyDeviceToHost, s));
    CUDA_CALL(cudaStreamSynchronize(s));
    if (stride == box)
        memcpy(c->S_local + at, w->staging, sizeof(float2) * box * n);
    else
        for (int b = 0; b < n; b++) memcpy(c->S_local + at + b * stride, w->staging + b * box, sizeof(float2) * box);
    return STEM_OK;
}

static int sm_work(void *ctx, int wi, long begin, long end)
{
    sm_ctx *c = (sm_ctx *)ctx;
    const stem_plan *plan = c->plan;
    int slot = gpu_worker_slot(&c->dev, wi), n = (int)(end - begin);
    sm_worker *w = &c->w[wi];
    cudaStream_t s = w->pw.stream;
    STEM_TRY(gpu_plane_waves_build(plan, &c->pp, &c->sh[slot], &w->pw, c->first + (int)begin, n));
    for (int k = 0, above = 0; k < stem_plan_n_planes(plan); k++) { /* each detection plane, deepest last */
        int below = stem_plan_plane_slices(plan, k);
        STEM_TRY(gpu_propagate(plan, &c->pp, &c->sh[slot], c->trans, &w->pw, above, below));
        STEM_TRY(gpu_crop_box(plan, &c->sh[slot], w->pw.waves, w->box, n, below, s));
        CUFFT_CALL(cufftExecC2C(w->fft_box, w->box, w->box, CUFFT_INVERSE));
        STEM_TRY(store_plane(c, w, begin, n, k));
        above = below;
    }
    return STEM_OK;
}

static void sm_release(sm_ctx *c)
{
    gpu_workers_free(&c->dev, sizeof(sm_worker), c->w, sm_worker_free);
    for (int g = 0; g < c->dev.n_gpus; g++) {
        gpu_use_device_quietly(&c->dev, g);
        gpu_prop_shared_free(&c->sh[g]);
    }
}

/* Everything that does not depend on the configuration: tables, workers, cuFFT plans. */
static int sm_create(sm_ctx *c, const stem_engine *e, const stem_plan *plan, const stem_complex *trans)
{
    c->plan = plan;
    c->dev = *gpu_engine_devices(e);
    int err = gpu_prop_plan_build(plan, &c->dev, 1, 0, &c->pp);
    c->pp.kept = &gpu_engine_state_of(e)->kept;
    if (!err) err = gpu_prop_shared_create_each(plan, &c->dev, &c->pp, trans, c->sh);
    if (!err) err = gpu_workers_create(&c->dev, sizeof(sm_worker), (void **)&c->w, sm_worker_create, c);
    return err;
}

void gpu_smatrix_cache_free(gpu_engine_state *st)
{
    if (!st->sm) return;
    sm_release(st->sm);
    free(st->sm);
    st->sm = NULL;
}

/* The engine keeps the context from the first configuration to its destruction;
 * each later configuration only uploads its transmission functions. */
static int smatrix_run(const stem_engine *e, const stem_plan *plan, const stem_complex *trans, int first, int count,
                       int opening, stem_complex *S_local, float2 *S_dev)
{
    gpu_engine_state *st = gpu_engine_state_of(e);
    double t0 = stem_wall_time();
    int err = STEM_OK, fresh = 0;
    if (st->sm && st->sm->plan != plan) gpu_smatrix_cache_free(st);
    if (!st->sm) {
        st->sm = (sm_ctx *)stem_calloc(1, sizeof(sm_ctx), "GPU S-matrix context");
        if (!st->sm) return STEM_ERR_MEMORY;
        fresh = 1;
        err = sm_create(st->sm, e, plan, trans);
        if (err) {
            gpu_smatrix_cache_free(st);
            return err;
        }
    }
    sm_ctx *c = st->sm;
    c->trans = trans;
    c->first = first;
    c->pp.n_items = count;
    c->S_local = S_local;
    c->S_dev = S_dev;
    if (!fresh && opening) /* a configuration's first call (engine.h) */
        err = gpu_prop_shared_upload_each(plan, &c->dev, &c->pp, trans, c->sh);
    int pinned = 0;
    size_t trans_bytes = sizeof(stem_complex) * plan->nx * plan->ny * plan->n_slices;
    if (!err && c->pp.streaming) gpu_pin(trans, trans_bytes, &pinned, "transmission functions");
    /* S_local, a round's buffer reused round after round, is not page-locked (it would be at
     * every call, about 0.4 s per GB): the boxes go through the workers' staging buffers. */
    double t1 = stem_wall_time();
    stem_work work = {c, sm_setup, sm_work, NULL};
    if (!err)
        err = stem_dispatch_quiet(&work, c->pp.n_items, c->pp.batch, c->dev.workers,
                                  "GPU S-matrix plane waves (one round)");
    double t2 = stem_wall_time();
    if (!err && c->pp.n_items > 0 && opening) /* a configuration's first round */
        stem_info("gpu S-matrix: %ld plane waves on %d GPU(s) x %d stream(s), batch %d, %s, %s: %.3f s compute "
                  "(%.4f ms per plane wave), %.3f s %s",
                  c->pp.n_items, c->dev.n_gpus, c->dev.streams, c->pp.batch,
                  c->pp.streaming ? "streaming" : "single-transfer", c->w[0].pw.fft_note, t2 - t1,
                  1e3 * (t2 - t1) / c->pp.n_items, t1 - t0,
                  fresh ? "setup and upload" : "upload (tables, plans and workers kept from the first configuration)");
    gpu_unpin(trans, pinned);
    if (err) gpu_smatrix_cache_free(st);
    return err;
}

int gpu_prism_smatrix(const stem_engine *e, const stem_plan *plan, const stem_complex *trans, int first, int count,
                      int opening, stem_complex *S_local)
{
    return smatrix_run(e, plan, trans, first, count, opening, S_local, NULL);
}

int gpu_prism_smatrix_to_device(const stem_engine *e, const stem_plan *plan, const stem_complex *trans, float2 *S_dev)
{
    return smatrix_run(e, plan, trans, plan->beam_begin, plan->beam_end - plan->beam_begin, 1, NULL, S_dev);
}
