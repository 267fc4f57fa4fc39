/* Multislice on CPUs: batches of probes per worker thread, batched FFTW plans. */
#include "multislice.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dispatcher.h"
#include "probe.h"

stem_complex stem_propagator_at(const stem_plan *plan, double dz, double qx, double qy)
{
    double scale = 1.0 / ((double)plan->nx * plan->ny), q2 = qx * qx + qy * qy;
    double phase = -M_PI * plan->lambda * dz * q2;
    return q2 <= plan->q_limit * plan->q_limit ? (stem_complex)(scale * (cos(phase) + I * sin(phase))) : 0;
}

int stem_propagator_count(const stem_plan *plan) { return stem_plan_thin_last(plan) ? 2 : 1; }

int stem_propagator_build(const stem_plan *plan, stem_complex *prop)
{
    int nx = plan->nx, ny = plan->ny;
    size_t grid = (size_t)nx * ny;
    for (int k = 0; k < stem_propagator_count(plan); k++) {
        double dz = k ? plan->dz_last : plan->dz;
        for (int j = 0; j < ny; j++) {
            double qy = stem_fft_index(j, ny) / plan->cell[1];
            for (int i = 0; i < nx; i++)
                prop[k * grid + (size_t)j * nx + i] =
                    stem_propagator_at(plan, dz, stem_fft_index(i, nx) / plan->cell[0], qy);
        }
    }
    return STEM_OK;
}

stem_complex *stem_propagator_alloc(const stem_plan *plan)
{
    stem_complex *prop = stem_fft_alloc((size_t)plan->nx * plan->ny * stem_propagator_count(plan), "propagator");
    if (prop && stem_propagator_build(plan, prop) != STEM_OK) {
        stem_fft_free(prop);
        return NULL;
    }
    return prop;
}

STEM_VECTOR_CLONES
void stem_multiply_grid(stem_complex *restrict w, const stem_complex *restrict t, size_t n)
{
    float *a = (float *)w;
    const float *b = (const float *)t;
    for (size_t k = 0; k < n; k++) {
        float ar = a[2 * k], ai = a[2 * k + 1], br = b[2 * k], bi = b[2 * k + 1];
        a[2 * k] = ar * br - ai * bi;
        a[2 * k + 1] = ar * bi + ai * br;
    }
}

void stem_multislice_propagate(const stem_plan *plan, const stem_complex *trans, const stem_complex *prop,
                               const stem_fft *fft, stem_complex *waves, int batch, int from, int to)
{
    size_t grid = (size_t)plan->nx * plan->ny;
    if (from > 0) stem_fft_inverse(fft, waves); /* back to real space below the last detection plane */
    for (int s = from; s < to; s++) {
        const stem_complex *t = trans + s * grid;
        for (int b = 0; b < batch; b++) stem_multiply_grid(waves + b * grid, t, grid);
        stem_fft_forward(fft, waves);
        const stem_complex *p = stem_propagator_of(plan, prop, s);
        for (int b = 0; b < batch; b++) stem_multiply_grid(waves + b * grid, p, grid);
        if (s + 1 < to) stem_fft_inverse(fft, waves);
    }
}

void stem_multislice_intensity(const stem_plan *plan, const stem_complex *wave, float *intensity)
{
    int nx = plan->nx, ny = plan->ny, ox = plan->out_nx, oy = plan->out_ny;
    for (int j = 0; j < oy; j++) {
        int gy = stem_box_to_grid(j, oy, ny);
        for (int i = 0; i < ox; i++) {
            int gx = stem_box_to_grid(i, ox, nx);
            stem_complex v = wave[(size_t)gy * nx + gx];
            intensity[(size_t)j * ox + i] = crealf(v) * crealf(v) + cimagf(v) * cimagf(v);
        }
    }
}

typedef struct {
    const stem_plan *plan;
    const stem_complex *trans, *prop;
    const stem_detector *det;
    stem_result *res;
    stem_complex **waves;
    float **intensity;
    stem_fft *fft;
    long first; /* the scan index of item 0: this rank's first probe, or its node's (a shared queue) */
    long row0;  /* item i is result row i - row0 */
} ms_job;

static int ms_setup(void *ctx, int w)
{
    ms_job *job = ctx;
    const stem_plan *plan = job->plan;
    size_t grid = (size_t)plan->nx * plan->ny;
    job->waves[w] = stem_fft_alloc(grid * plan->batch_size, "probe batch");
    job->intensity[w] = stem_alloc(sizeof(float) * plan->out_nx * plan->out_ny, "diffraction pattern");
    if (!job->waves[w] || !job->intensity[w]) return STEM_ERR_MEMORY;
    return stem_fft_create(&job->fft[w], plan->nx, plan->ny, plan->batch_size, job->waves[w],
                           stem_options_fft_measure(&plan->opt));
}

static void ms_teardown(void *ctx, int w)
{
    ms_job *job = ctx;
    stem_fft_destroy(&job->fft[w]);
    stem_fft_free(job->waves[w]);
    free(job->intensity[w]);
    job->waves[w] = NULL;
    job->intensity[w] = NULL;
}

static int ms_work(void *ctx, int w, long begin, long end)
{
    ms_job *job = ctx;
    const stem_plan *plan = job->plan;
    size_t grid = (size_t)plan->nx * plan->ny;
    stem_complex *waves = job->waves[w];
    int batch = plan->batch_size, n = (int)(end - begin);
    for (int b = 0; b < batch; b++) {
        if (b < n) {
            double x, y;
            stem_plan_probe_position(plan, job->first + begin + b, &x, &y);
            stem_probe_fourier(plan, x, y, waves + b * grid);
        } else {
            memset(waves + b * grid, 0, grid * sizeof(stem_complex)); /* idle slot of a short batch */
        }
    }
    stem_fft_inverse(&job->fft[w], waves);
    for (int k = 0, above = 0; k < stem_plan_n_planes(plan); k++) {
        int below = stem_plan_plane_slices(plan, k);
        stem_multislice_propagate(plan, job->trans, job->prop, &job->fft[w], waves, batch, above, below);
        for (int b = 0; b < n; b++) {
            stem_multislice_intensity(plan, waves + b * grid, job->intensity[w]);
            stem_detect(job->det, job->intensity[w], &job->res[k], begin + b - job->row0);
        }
        above = below;
    }
    return STEM_OK;
}

int stem_multislice_run(const stem_plan *plan, const stem_complex *trans, const stem_detector *det, stem_result *res)
{
    int workers = plan->threads;
    ms_job job = {plan, trans, NULL, det, res, NULL, NULL, NULL, plan->probe_begin, 0};
    long n = plan->probe_end - plan->probe_begin;
    if (res->queue) { /* the node's probes, whichever of its ranks' threads is free (channels.h) */
        job.row0 = res->queue_row0;
        job.first = plan->probe_begin - job.row0;
        n = res->queue_rows;
    }
    stem_complex *prop = stem_propagator_alloc(plan);
    job.waves = stem_calloc(workers, sizeof(stem_complex *), "worker buffers");
    job.intensity = stem_calloc(workers, sizeof(float *), "worker buffers");
    job.fft = stem_calloc(workers, sizeof(stem_fft), "worker plans");
    int err = prop && job.waves && job.intensity && job.fft ? STEM_OK : STEM_ERR_MEMORY;
    job.prop = prop;
    stem_work work = {&job, ms_setup, ms_work, ms_teardown};
    if (!err) err = stem_dispatch_queued(&work, n, plan->batch_size, workers, "multislice probes", res->queue);
    stem_fft_free(prop);
    free(job.waves);
    free(job.intensity);
    free(job.fft);
    return err;
}
