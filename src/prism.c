/* PRISM on CPUs: S-matrix from batched plane waves, output step from windows. */
#include "prism.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dispatcher.h"
#include "multislice.h"
#include "probe.h"

/* ---- compact S-matrix -------------------------------------------------- */

typedef struct {
    const stem_plan *plan;
    const stem_complex *trans, *prop;
    int first;             /* the beam of item 0 */
    stem_complex *S_local; /* where beam first goes; beam first + i at S_local + i * beam stride */
    stem_complex **waves, **box;
    stem_fft *fft, *fft_box;
} smatrix_job;

static int smatrix_setup(void *ctx, int w)
{
    smatrix_job *job = ctx;
    const stem_plan *plan = job->plan;
    size_t grid = (size_t)plan->nx * plan->ny;
    job->waves[w] = stem_fft_alloc(grid * plan->batch_size, "plane-wave batch");
    job->box[w] = stem_fft_alloc((size_t)plan->crop_nx * plan->crop_ny, "S-matrix box");
    if (!job->waves[w] || !job->box[w]) return STEM_ERR_MEMORY;
    STEM_TRY(stem_fft_create(&job->fft[w], plan->nx, plan->ny, plan->batch_size, job->waves[w],
                             stem_options_fft_measure(&plan->opt)));
    return stem_fft_create(&job->fft_box[w], plan->crop_nx, plan->crop_ny, 1, job->box[w], 0);
}

static void smatrix_teardown(void *ctx, int w)
{
    smatrix_job *job = ctx;
    stem_fft_destroy(&job->fft[w]);
    stem_fft_destroy(&job->fft_box[w]);
    stem_fft_free(job->waves[w]);
    stem_fft_free(job->box[w]);
    job->waves[w] = job->box[w] = NULL;
}

/* exp(2 pi i (kx x / Lx + ky y / Ly)) with unit amplitude on the full grid. */
static void plane_wave(const stem_plan *plan, int kx, int ky, stem_complex *out)
{
    int nx = plan->nx, ny = plan->ny;
    for (int j = 0; j < ny; j++)
        for (int i = 0; i < nx; i++) {
            double phase = 2 * M_PI * ((double)kx * i / nx + (double)ky * j / ny);
            out[(size_t)j * nx + i] = (stem_complex)(cos(phase) + I * sin(phase));
        }
}

/* Cut the Fourier box out of a full-grid exit wave and return it to real space. */
static void crop_to_box(const stem_plan *plan, const stem_complex *wave, stem_complex *box, const stem_fft *fft_box)
{
    int nx = plan->nx, ny = plan->ny, cx = plan->crop_nx, cy = plan->crop_ny;
    for (int j = 0; j < cy; j++) {
        int gy = stem_box_to_grid(j, cy, ny);
        for (int i = 0; i < cx; i++) box[(size_t)j * cx + i] = wave[(size_t)gy * nx + stem_box_to_grid(i, cx, nx)];
    }
    stem_fft_inverse(fft_box, box);
}

static int smatrix_work(void *ctx, int w, long begin, long end)
{
    smatrix_job *job = ctx;
    const stem_plan *plan = job->plan;
    size_t grid = (size_t)plan->nx * plan->ny, box = (size_t)plan->crop_nx * plan->crop_ny;
    int batch = plan->batch_size, n = (int)(end - begin);
    stem_complex *waves = job->waves[w];
    for (int b = 0; b < batch; b++) {
        if (b < n) {
            int beam = job->first + (int)begin + b;
            plane_wave(plan, plan->beam_kx[beam], plan->beam_ky[beam], waves + b * grid);
        } else {
            memset(waves + b * grid, 0, grid * sizeof(stem_complex));
        }
    }
    size_t stride = stem_prism_beam_stride(plan);
    for (int k = 0, above = 0; k < stem_plan_n_planes(plan); k++) { /* each detection plane, deepest last */
        int below = stem_plan_plane_slices(plan, k);
        stem_multislice_propagate(plan, job->trans, job->prop, &job->fft[w], waves, batch, above, below);
        for (int b = 0; b < n; b++) {
            crop_to_box(plan, waves + b * grid, job->box[w], &job->fft_box[w]);
            memcpy(job->S_local + (begin + b) * stride + k * box, job->box[w], box * sizeof(stem_complex));
        }
        above = below;
    }
    return STEM_OK;
}

int stem_prism_smatrix_beams(const stem_plan *plan, const stem_complex *trans, int first, int count, stem_complex *out)
{
    int workers = plan->threads;
    smatrix_job job = {.plan = plan, .trans = trans, .first = first, .S_local = out};
    stem_complex *prop = stem_propagator_alloc(plan);
    job.waves = stem_calloc(workers, sizeof(stem_complex *), "worker buffers");
    job.box = stem_calloc(workers, sizeof(stem_complex *), "worker buffers");
    job.fft = stem_calloc(workers, sizeof(stem_fft), "worker plans");
    job.fft_box = stem_calloc(workers, sizeof(stem_fft), "worker plans");
    int err = prop && job.waves && job.box && job.fft && job.fft_box ? STEM_OK : STEM_ERR_MEMORY;
    job.prop = prop;
    stem_work work = {&job, smatrix_setup, smatrix_work, smatrix_teardown};
    if (!err) err = stem_dispatch_quiet(&work, count, plan->batch_size, workers, "S-matrix plane waves (one round)");
    stem_fft_free(prop);
    free(job.waves);
    free(job.box);
    free(job.fft);
    free(job.fft_box);
    return err;
}

/* ---- output step ------------------------------------------------------- */

/* Probes of one scan row are taken in runs of up to OUTPUT_RUN: their windows overlap
 * almost wholly, so each pixel's beams are read from the (large) S-matrix once per run
 * and summed for all the run's windows at once, the probes in the vector lanes; each
 * window value is the same sum as for a probe alone, so results do not depend on runs. */
enum { OUTPUT_RUN = STEM_PRISM_RUN };

typedef struct {
    const stem_plan *plan;
    const stem_prism_view *S;
    const stem_detector *det;
    stem_result *res;
    size_t win_stride;             /* complex numbers from one window to the next (aligned like the first) */
    stem_complex **coef, **window; /* per worker: [OUTPUT_RUN][n_beams], [OUTPUT_RUN][win_stride] */
    float **coef_t;                /* per worker: the coefficients transposed, re then im, 2 x [n_beams][OUTPUT_RUN] */
    float **intensity;
    stem_fft *fft;
} output_job;

static int output_setup(void *ctx, int w)
{
    output_job *job = ctx;
    const stem_plan *plan = job->plan;
    size_t win = (size_t)plan->out_nx * plan->out_ny;
    job->coef[w] = stem_fft_alloc((size_t)OUTPUT_RUN * plan->n_beams, "beam coefficients");
    job->window[w] = stem_fft_alloc(OUTPUT_RUN * job->win_stride, "probe windows");
    job->coef_t[w] =
        (float *)stem_fft_alloc((size_t)OUTPUT_RUN * plan->n_beams, "beam coefficients"); /* 2 floats each */
    job->intensity[w] = stem_alloc(sizeof(float) * win, "diffraction pattern");
    if (!job->coef[w] || !job->window[w] || !job->coef_t[w] || !job->intensity[w]) return STEM_ERR_MEMORY;
    return stem_fft_create(&job->fft[w], plan->out_nx, plan->out_ny, 1, job->window[w],
                           stem_options_fft_measure(&plan->opt));
}

static void output_teardown(void *ctx, int w)
{
    output_job *job = ctx;
    stem_fft_destroy(&job->fft[w]);
    stem_fft_free(job->coef[w]);
    stem_fft_free(job->window[w]);
    stem_fft_free((stem_complex *)job->coef_t[w]);
    free(job->intensity[w]);
    job->coef[w] = job->window[w] = NULL;
    job->coef_t[w] = NULL;
    job->intensity[w] = NULL;
}

/* acc[t] = sum_b coef[t][b] s[b] for the STEM_PRISM_RUN lanes t at once: the lanes are
 * probes, so each sum over b keeps its order (no reassociation: the same value as one probe
 * alone) and the vectors run over t (GCC's vector extension: 8 floats, AVX2 where the CPU
 * has it, else two SSE halves). The product is the plain complex one, as C's for finite
 * numbers; no FMA, whose different rounding would make results depend on the build. */
typedef float run_lanes __attribute__((vector_size(32), aligned(4)));
_Static_assert(STEM_PRISM_RUN == 16, "run_sums holds a run in two vectors of 8");
STEM_VECTOR_CLONES
static void run_sums(const stem_complex *restrict s, int nb, const float *restrict coef_re,
                     const float *restrict coef_im, float *restrict acc_re, float *restrict acc_im)
{
    run_lanes re0 = {0}, re1 = {0}, im0 = {0}, im1 = {0};
    for (int b = 0; b < nb; b++) {
        float sr = crealf(s[b]), si = cimagf(s[b]);
        const run_lanes *cr = (const run_lanes *)(coef_re + (size_t)b * STEM_PRISM_RUN);
        const run_lanes *ci = (const run_lanes *)(coef_im + (size_t)b * STEM_PRISM_RUN);
        run_lanes pr0 = cr[0] * sr - ci[0] * si, pr1 = cr[1] * sr - ci[1] * si;
        run_lanes pi0 = cr[0] * si + ci[0] * sr, pi1 = cr[1] * si + ci[1] * sr;
        re0 += pr0;
        re1 += pr1;
        im0 += pi0;
        im1 += pi1;
    }
    memcpy(acc_re, &re0, sizeof re0);
    memcpy(acc_re + 8, &re1, sizeof re1);
    memcpy(acc_im, &im0, sizeof im0);
    memcpy(acc_im + 8, &im1, sizeof im1);
}

void stem_prism_gather_windows(const stem_prism_view *S, int cx, int cy, int nb, const float *coef_re,
                               const float *coef_im, const int *ox, int oy, int n, int wx, int wy, stem_complex *window,
                               size_t win_stride)
{
    int span = ox[n - 1] - ox[0] + wx; /* ox ascending along the row */
    const stem_prism_tile *tile = &S->tile;
    float re[STEM_PRISM_RUN], im[STEM_PRISM_RUN];
    for (int j = 0; j < wy; j++) {
        int ty = ((oy + j - tile->y0) % cy + cy) % cy; /* the box pixel's row in the tile */
        for (int u = 0, first = 0, last = 0; u < span; u++) {
            int tx = ((ox[0] + u - tile->x0) % cx + cx) % cx;
            while (first < n && ox[first] + wx <= ox[0] + u) first++; /* windows that ended */
            while (last < n && ox[last] <= ox[0] + u) last++;         /* windows that began */
            run_sums(S->S + ((size_t)ty * tile->nx + tx) * nb, nb, coef_re, coef_im, re, im);
            for (int t = first; t < last; t++)
                window[t * win_stride + (size_t)j * wx + (ox[0] + u - ox[t])] = re[t] + I * im[t];
        }
    }
}

/* Coefficients, windows, FFT, |.|^2 and detection of the run [p, p + n) (one scan row). */
static void output_run(output_job *job, int w, long p, int n)
{
    const stem_plan *plan = job->plan;
    size_t win = (size_t)plan->out_nx * plan->out_ny;
    float scale = 1.0f / ((float)win * (float)win);
    int nb = plan->n_beams, ox[OUTPUT_RUN], oy = 0;
    float *coef_re = job->coef_t[w], *coef_im = coef_re + (size_t)nb * OUTPUT_RUN;
    for (int t = 0; t < n; t++) {
        double x, y;
        stem_plan_probe_position(plan, plan->probe_begin + p + t, &x, &y);
        stem_probe_beam_coefficients(plan, x, y, job->coef[w] + (size_t)t * plan->n_beams);
        ox[t] = stem_prism_window_origin(x, plan->cell[0], plan->crop_nx, plan->out_nx);
        oy = stem_prism_window_origin(y, plan->cell[1], plan->crop_ny, plan->out_ny);
    }
    for (int b = 0; b < nb; b++) /* transposed, lanes past n zero */
        for (int t = 0; t < OUTPUT_RUN; t++) {
            stem_complex c = t < n ? job->coef[w][(size_t)t * nb + b] : 0;
            coef_re[(size_t)b * OUTPUT_RUN + t] = crealf(c);
            coef_im[(size_t)b * OUTPUT_RUN + t] = cimagf(c);
        }
    stem_prism_gather_windows(job->S, plan->crop_nx, plan->crop_ny, nb, coef_re, coef_im, ox, oy, n, plan->out_nx,
                              plan->out_ny, job->window[w], job->win_stride);
    for (int t = 0; t < n; t++) {
        stem_complex *window = job->window[w] + t * job->win_stride;
        stem_fft_forward(&job->fft[w], window);
        for (size_t k = 0; k < win; k++) {
            stem_complex v = window[k];
            job->intensity[w][k] = (crealf(v) * crealf(v) + cimagf(v) * cimagf(v)) * scale;
        }
        stem_detect(job->det, job->intensity[w], job->res, p + t);
    }
}

static int output_work(void *ctx, int w, long begin, long end)
{
    output_job *job = ctx;
    const stem_plan *plan = job->plan;
    for (long p = begin; p < end;) { /* runs end at the batch, at a scan row, and at OUTPUT_RUN */
        long row_end = ((plan->probe_begin + p) / plan->scan_nx + 1) * plan->scan_nx - plan->probe_begin;
        if (plan->positions) row_end = p + 1; /* a run shares one window row, ascending: only on a grid */
        long e = end < row_end ? end : row_end;
        int n = (int)(e - p < OUTPUT_RUN ? e - p : OUTPUT_RUN);
        output_run(job, w, p, n);
        p += n;
    }
    return STEM_OK;
}

int stem_prism_output(const stem_plan *plan, const stem_prism_view *S, const stem_detector *det, stem_result *res)
{
    int workers = plan->threads;
    /* windows one after another at FFTW's alignment of the first (64 bytes) */
    output_job job = {
        .plan = plan, .S = S, .det = det, .res = res, .win_stride = ((size_t)plan->out_nx * plan->out_ny + 7) / 8 * 8};
    job.coef = stem_calloc(workers, sizeof(stem_complex *), "worker buffers");
    job.window = stem_calloc(workers, sizeof(stem_complex *), "worker buffers");
    job.coef_t = stem_calloc(workers, sizeof(float *), "worker buffers");
    job.intensity = stem_calloc(workers, sizeof(float *), "worker buffers");
    job.fft = stem_calloc(workers, sizeof(stem_fft), "worker plans");
    int err = job.coef && job.window && job.coef_t && job.intensity && job.fft ? STEM_OK : STEM_ERR_MEMORY;
    stem_work work = {&job, output_setup, output_work, output_teardown};
    if (!err) err = stem_dispatch(&work, plan->probe_end - plan->probe_begin, OUTPUT_RUN, workers, "PRISM output");
    free(job.coef);
    free(job.window);
    free(job.coef_t);
    free(job.intensity);
    free(job.fft);
    return err;
}
