/* Multislice on GPUs: one host worker per CUDA stream takes batches of probes
 * from the local dispatcher; each batch is built, propagated with batched
 * cuFFT plans and binned on the device; only the detector sums come back. */
#include <stdlib.h>
#include <string.h>

#include "gpu_internal.cuh"

typedef struct {
    gpu_prop_worker pw;
    double *dres, *hres;
    float *dcbed, *hcbed;
    float *dwork; /* the fixed-order detector's partial sums */
} ms_worker;

typedef struct gpu_ms_ctx {
    const stem_plan *plan;
    const stem_detector *det_tables; /* the detector the uploaded tables came from */
    const stem_complex *trans;
    stem_result *res;
    gpu_devices dev;
    gpu_prop_plan pp;
    gpu_prop_shared sh[GPU_MAX_DEVICES];
    gpu_det det[GPU_MAX_DEVICES];
    ms_worker *w;
} ms_ctx;

static int ms_worker_create(void *ctx, void *worker)
{
    ms_ctx *c = (ms_ctx *)ctx;
    ms_worker *w = (ms_worker *)worker;
    const stem_plan *plan = c->plan;
    int B = c->pp.batch;
    size_t pix = (size_t)plan->out_nx * plan->out_ny, stride = stem_channel_record_stride(plan);
    STEM_TRY(gpu_prop_worker_create(plan, &c->pp, &w->pw));
    GPU_ALLOC(w->dres, sizeof(double) * stride * B, "detector sums");
    GPU_ALLOC_HOST(w->hres, sizeof(double) * stride * B, "detector sums");
    size_t work = gpu_det_work_bytes(plan, B);
    if (work) GPU_ALLOC(w->dwork, work, "detector partial sums");
    if (plan->opt.save_4d ||
        plan->opt.save_pacbed) { /* patterns come back for both (cropped, binned, summed on the host) */
        GPU_ALLOC(w->dcbed, sizeof(float) * pix * B, "4D patterns");
        GPU_ALLOC_HOST(w->hcbed, sizeof(float) * pix * B, "4D patterns");
    }
    return STEM_OK;
}

static void ms_worker_free(void *worker)
{
    ms_worker *w = (ms_worker *)worker;
    gpu_prop_worker_free(&w->pw);
    gpu_free(w->dres);
    gpu_free(w->dcbed);
    gpu_free(w->dwork);
    gpu_free_host(w->hres);
    gpu_free_host(w->hcbed);
    memset(w, 0, sizeof *w);
}

static int ms_setup(void *ctx, int w) { return gpu_use_worker_device(&((ms_ctx *)ctx)->dev, w); }

static int ms_work(void *ctx, int wi, long begin, long end)
{
    ms_ctx *c = (ms_ctx *)ctx;
    const stem_plan *plan = c->plan;
    int slot = gpu_worker_slot(&c->dev, wi), n = (int)(end - begin);
    ms_worker *w = &c->w[wi];
    cudaStream_t s = w->pw.stream;
    size_t grid = (size_t)plan->nx * plan->ny;
    const gpu_det *det = &c->det[slot];
    STEM_TRY(gpu_probes_build(plan, &c->pp, &c->sh[slot], &w->pw, plan->probe_begin + begin, n));
    for (int k = 0, above = 0; k < stem_plan_n_planes(plan); k++) { /* each detection plane, deepest last */
        int below = stem_plan_plane_slices(plan, k);
        STEM_TRY(gpu_propagate(plan, &c->pp, &c->sh[slot], c->trans, &w->pw, above, below));
        /* the last propagator is applied only to the detector's pixels, inside the binning kernel */
        STEM_TRY(gpu_det_run(det, w->pw.waves, grid, gpu_prop_after(plan, &c->sh[slot], below), 1.0f, n, w->dres,
                             w->dcbed, w->dwork, c->dev.sm_count, s));
        CUDA_CALL(cudaMemcpyAsync(w->hres, w->dres, sizeof(double) * det->stride * n, cudaMemcpyDeviceToHost, s));
        if (det->has_4d)
            CUDA_CALL(cudaMemcpyAsync(w->hcbed, w->dcbed, sizeof(float) * det->n_pix * n, cudaMemcpyDeviceToHost, s));
        CUDA_CALL(cudaStreamSynchronize(s));
        gpu_det_accumulate(det, w->hres, w->hcbed, n, NULL, begin, &c->res[k]);
        above = below;
    }
    return STEM_OK;
}

static void ms_release(ms_ctx *c)
{
    gpu_workers_free(&c->dev, sizeof(ms_worker), c->w, ms_worker_free);
    for (int g = 0; g < c->dev.n_gpus; g++) {
        gpu_use_device_quietly(&c->dev, g);
        gpu_prop_shared_free(&c->sh[g]);
        gpu_det_free(&c->det[g]);
    }
}

/* Everything that does not depend on the configuration: tables, detector, workers. */
static int ms_create(ms_ctx *c, const stem_engine *e, const stem_plan *plan, const stem_complex *trans,
                     const stem_detector *det)
{
    c->plan = plan;
    c->det_tables = det;
    c->dev = *gpu_engine_devices(e);
    int err = gpu_prop_plan_build(plan, &c->dev, 0, 0, &c->pp);
    c->pp.kept = &gpu_engine_state_of(e)->kept;
    if (!err) err = gpu_prop_shared_create_each(plan, &c->dev, &c->pp, trans, c->sh);
    for (int g = 0; !err && g < c->dev.n_gpus; g++) {
        err = gpu_use_device(&c->dev, g);
        if (!err) err = gpu_det_create(plan, det, 1, &c->det[g]);
    }
    if (!err) err = gpu_workers_create(&c->dev, sizeof(ms_worker), (void **)&c->w, ms_worker_create, c);
    return err;
}

void gpu_multislice_cache_free(gpu_engine_state *st)
{
    if (!st->ms) return;
    ms_release(st->ms);
    free(st->ms);
    st->ms = NULL;
}

/* The engine keeps the context from the first configuration to its destruction;
 * each later configuration only uploads its transmission functions. */
int gpu_multislice_run(const stem_engine *e, const stem_plan *plan, const stem_complex *trans, const stem_detector *det,
                       stem_result *res)
{
    gpu_engine_state *st = gpu_engine_state_of(e);
    double t0 = stem_wall_time();
    int err = STEM_OK, fresh = 0;
    if (st->ms && (st->ms->plan != plan || st->ms->det_tables != det)) gpu_multislice_cache_free(st);
    if (!st->ms) {
        st->ms = (ms_ctx *)stem_calloc(1, sizeof(ms_ctx), "GPU multislice context");
        if (!st->ms) return STEM_ERR_MEMORY;
        fresh = 1;
        err = ms_create(st->ms, e, plan, trans, det);
        if (err) {
            gpu_multislice_cache_free(st);
            return err;
        }
    }
    ms_ctx *c = st->ms;
    c->trans = trans;
    c->res = res;
    c->pp.n_items = plan->probe_end - plan->probe_begin; /* a streamed 4D run's blocks move the probes */
    if (!fresh) err = gpu_prop_shared_upload_each(plan, &c->dev, &c->pp, trans, c->sh);
    int pinned = 0;
    size_t trans_bytes = sizeof(stem_complex) * plan->nx * plan->ny * plan->n_slices;
    if (!err && c->pp.streaming) gpu_pin(trans, trans_bytes, &pinned, "transmission functions");
    double t1 = stem_wall_time();
    stem_work work = {c, ms_setup, ms_work, NULL};
    if (!err) err = stem_dispatch(&work, c->pp.n_items, c->pp.batch, c->dev.workers, "GPU multislice probes");
    double t2 = stem_wall_time();
    if (!err && c->pp.n_items > 0)
        stem_info("gpu multislice: %ld probes on %d GPU(s) x %d stream(s), batch %d, %s, %s: %.3f s compute "
                  "(%.4f ms per probe), %.3f s %s",
                  c->pp.n_items, c->dev.n_gpus, c->dev.streams, c->pp.batch,
                  c->pp.streaming ? "streaming" : "single-transfer", c->w[0].pw.fft_note, t2 - t1,
                  1e3 * (t2 - t1) / c->pp.n_items, t1 - t0,
                  fresh ? "setup and upload" : "upload (tables, plans and workers kept from the first configuration)");
    gpu_unpin(trans, pinned);
    if (err) gpu_multislice_cache_free(st);
    return err;
}
