/* Propagation through the slices on the GPU, shared by multislice (probes)
 * and the PRISM S-matrix (plane waves): batch and memory-mode planning, the
 * per-GPU read-only data, the per-stream workspace and the kernels. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cufftXt.h>

#include "gpu_internal.cuh"

#include "gpu_fft_callbacks_lto.h" /* generated: the LTO-IR of cuda/lto/fft_callbacks.cu */

/* ---- planning ------------------------------------------------------------- */

/* Whether a plan's slices run in the fused kernels (then fs is planned), and what runs them, in
 * words: cuFFT with [compute] fft_callbacks = on or gpu_slices = cufft; auto takes only the
 * cuFFTDx kernels (gpu_fused_plan). The one decision of the workers, the memory estimate and
 * --dry-run. */
static int slices_plan(const stem_plan *plan, gpu_fused_slice *fs, char *why, size_t len)
{
    memset(fs, 0, sizeof *fs);
    if (plan->opt.fft_callbacks == STEM_FFT_CALLBACKS_ON) {
        snprintf(why, len, "cuFFT with the multiplies in its loads ([compute] fft_callbacks = on)");
        return 0;
    }
    if (plan->opt.gpu_slices == STEM_GPU_SLICES_CUFFT) {
        snprintf(why, len, "cuFFT, multiplies as separate kernels");
        return 0;
    }
    return gpu_fused_plan(plan->nx, plan->ny, plan->opt.gpu_slices == STEM_GPU_SLICES_AUTO, fs, why, len);
}

/* Whether this plan's slices run in the cuFFTDx kernels (gpu_dx_slice.cu). Their column pass
 * reads the propagator transposed (prop_cols), an extra grid on each GPU. */
static int slices_in_dx(const stem_plan *plan)
{
    gpu_fused_slice fs;
    char why[160];
    return slices_plan(plan, &fs, why, sizeof why) && fs.dx;
}

void gpu_slices_describe(const stem_plan *plan, char *why, size_t len)
{
    gpu_fused_slice fs;
    slices_plan(plan, &fs, why, len);
}

static double prop_worker_bytes(const stem_plan *plan, int smatrix, int batch, int streaming)
{
    double grid = (double)plan->nx * plan->ny, box = (double)plan->crop_nx * plan->crop_ny;
    double b = 2.0 * batch * grid * 8.0; /* waves + cuFFT work area (at most one more copy) */
    if (streaming) b += 2.0 * grid * 8.0;
    if (smatrix)
        b += 2.0 * batch * box * 8.0; /* box + its cuFFT work area */
    else
        b += (double)gpu_det_result_bytes(plan, batch) + (double)gpu_det_work_bytes(plan, batch);
    return b + 4.0 * 1048576.0; /* streams, events, plan objects */
}

int gpu_prop_plan_build(const stem_plan *plan, const gpu_devices *d, int smatrix, int verbose, gpu_prop_plan *pp)
{
    memset(pp, 0, sizeof *pp);
    pp->smatrix = smatrix;
    pp->n_items = smatrix ? plan->beam_end - plan->beam_begin : plan->probe_end - plan->probe_begin;
    double grid = (double)plan->nx * plan->ny;
    int batch;
    if (plan->batch_given) {
        batch = plan->batch_size;
    } else { /* enough waves per batched FFT to fill the GPU (about 8 M points) */
        double target = 8.0 * 1048576.0 / grid;
        batch = target < 1 ? 1 : (target > 128 ? 128 : (int)target);
    }
    /* no larger than a worker's share; with [compute] gpu_deterministic the share of the whole
     * job, not of this rank, so that every rank count meets the same batched cuFFT plans */
    long items = !plan->opt.gpu_deterministic ? pp->n_items : smatrix ? plan->n_beams : plan->n_probes;
    long per_worker = (items + d->workers - 1) / d->workers;
    if (per_worker < 1) per_worker = 1;
    if (batch > per_worker) batch = (int)per_worker;
    double trans = 8.0 * grid * plan->n_slices;
    double shared = 8.0 * grid * stem_propagator_count(plan); /* propagators */
    if (slices_in_dx(plan)) shared += 8.0 * grid; /* the propagator transposed, for the cuFFTDx column pass */
    if (smatrix)
        shared += 8.0 * plan->n_beams;
    else
        shared += 28.0 * plan->n_beams /* aperture list (f = 1: the beams are the aperture) */ + gpu_det_bytes(plan, 1);
    int mode = plan->opt.memory_mode, chosen = -1, b;
    double need_single = shared + trans + d->streams * prop_worker_bytes(plan, smatrix, 1, 0);
    double need_stream = shared + d->streams * prop_worker_bytes(plan, smatrix, 1, 1);
    if (mode != STEM_MEMMODE_STREAMING)
        for (b = batch; b >= 1 && (chosen < 0); b = b > 1 ? b / 2 : 0)
            if (shared + trans + d->streams * prop_worker_bytes(plan, smatrix, b, 0) <= d->usable_bytes) {
                chosen = 0;
                batch = b;
            }
    if (mode != STEM_MEMMODE_SINGLE && chosen < 0)
        for (b = batch; b >= 1 && (chosen < 0); b = b > 1 ? b / 2 : 0)
            if (shared + d->streams * prop_worker_bytes(plan, smatrix, b, 1) <= d->usable_bytes) {
                chosen = 1;
                batch = b;
            }
    const char *what = smatrix ? "the S-matrix step" : "multislice";
    if (chosen < 0) {
        if (mode == STEM_MEMMODE_SINGLE)
            return STEM_FAIL(STEM_ERR_MEMORY,
                             "%s does not fit on the GPU in single-transfer mode: it needs %.2f GiB per GPU "
                             "(transmission functions %.2f GiB) but %.2f GiB are usable (%.2f GiB free on %s); "
                             "use [compute] memory_mode = streaming or auto",
                             what, need_single / GPU_GIB, trans / GPU_GIB, d->usable_bytes / GPU_GIB,
                             d->free_bytes / GPU_GIB, d->name);
        return STEM_FAIL(
            STEM_ERR_MEMORY,
            "%s does not fit on the GPU even when streaming slice by slice: it needs %.2f GiB per GPU with "
            "batch 1 and %d stream(s) but %.2f GiB are usable (%.2f GiB free on %s); use fewer "
            "[compute] streams_per_gpu, a coarser [simulation] pixel_size, or [compute] device = cpu",
            what, need_stream / GPU_GIB, d->streams, d->usable_bytes / GPU_GIB, d->free_bytes / GPU_GIB, d->name);
    }
    pp->streaming = chosen;
    pp->batch = batch;
    pp->bytes_shared = shared + (chosen ? 0 : trans);
    pp->bytes_worker = prop_worker_bytes(plan, smatrix, batch, chosen);
    pp->bytes_total = pp->bytes_shared + d->streams * pp->bytes_worker;
    if (verbose)
        stem_info(
            "GPU memory estimate for %s, per GPU: single-transfer %.3f GiB (transmission %.3f), streaming %.3f GiB "
            "(batch 1); usable %.2f of %.2f GiB free -> %s%s, batch %d, %.3f GiB",
            what, need_single / GPU_GIB, trans / GPU_GIB, need_stream / GPU_GIB, d->usable_bytes / GPU_GIB,
            d->free_bytes / GPU_GIB, chosen ? "streaming slice by slice" : "single-transfer",
            mode == STEM_MEMMODE_AUTO ? " (auto)" : "", batch, pp->bytes_total / GPU_GIB);
    return STEM_OK;
}

/* ---- kernels ---------------------------------------------------------------- */

/* w[b][k] *= t[k] for every wave of the batch: t read once, each wave once. */
static __global__ void k_mul_bcast(float2 *__restrict__ w, const float2 *__restrict__ t, size_t grid, int batch)
{
    size_t k = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= grid) return;
    float2 tv = t[k];
    for (int b = 0; b < batch; b++) {
        float2 v = w[(size_t)b * grid + k];
        w[(size_t)b * grid + k] = gpu_cmul(v, tv);
    }
}

/* Probe b at scan position g0 + b: A exp(-i chi) exp(-2 pi i q.r) on the aperture pixels,
 * q[e] = (qx, qy, chi, A) with A the aperture's weight over the root of the sum of their squares. */
static __global__ void k_probes(float2 *__restrict__ w, size_t grid, const int *__restrict__ idx,
                                const double *__restrict__ q, int n_ap, long g0, int scan_nx, double x0, double y0,
                                double step, const double *__restrict__ xy)
{
    int e = blockIdx.x * blockDim.x + threadIdx.x, b = blockIdx.y;
    if (e >= n_ap) return;
    long g = g0 + b;
    double x = xy ? xy[2 * g] : x0 + (double)(g % scan_nx) * step,
           y = xy ? xy[2 * g + 1] : y0 + (double)(g / scan_nx) * step;
    double phase = -q[4 * e + 2] - 2 * M_PI * (q[4 * e] * x + q[4 * e + 1] * y), s, c;
    sincos(phase, &s, &c);
    float a = (float)q[4 * e + 3];
    w[(size_t)b * grid + idx[e]] = make_float2((float)c * a, (float)s * a);
}

/* Plane wave exp(2 pi i (kx x / Lx + ky y / Ly)), the phase reduced exactly in integers. */
static __global__ void k_plane_waves(float2 *__restrict__ w, int nx, int ny, const int *__restrict__ beam_k, int b0)
{
    size_t grid = (size_t)nx * ny, k = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    int b = blockIdx.y;
    if (k >= grid) return;
    long i = (long)(k % nx), j = (long)(k / nx);
    long kx = beam_k[2 * (b0 + b)], ky = beam_k[2 * (b0 + b) + 1];
    long mx = (kx * i) % nx, my = (ky * j) % ny;
    if (mx < 0) mx += nx;
    if (my < 0) my += ny;
    double s, c;
    sincospi(2.0 * ((double)mx / nx + (double)my / ny), &s, &c);
    w[(size_t)b * grid + k] = make_float2((float)c, (float)s);
}

/* box[b][j][i] = w[b][gy][gx] * prop[gy][gx]: the Fourier box around q = 0, FFT order. */
static __global__ void k_crop(float2 *__restrict__ box, const float2 *__restrict__ w, const float2 *__restrict__ prop,
                              int nx, int ny, int cx, int cy)
{
    size_t cgrid = (size_t)cx * cy, k = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    int b = blockIdx.y;
    if (k >= cgrid) return;
    int i = (int)(k % cx), j = (int)(k / cx);
    int gy = stem_box_to_grid(j, cy, ny), gx = stem_box_to_grid(i, cx, nx);
    size_t g = (size_t)gy * nx + gx;
    box[(size_t)b * cgrid + k] = gpu_cmul(w[(size_t)b * nx * ny + g], prop[g]);
}

/* ---- per-GPU data and per-stream workspace ----------------------------------- */

/* The propagator transposed ([nx][ny]) into a new device buffer: the cuFFTDx column pass reads
 * a column's values adjacent (gpu_dx_slice.cu). */
static int upload_transposed(const stem_plan *plan, const stem_complex *prop, float2 **out)
{
    int nx = plan->nx, ny = plan->ny;
    size_t grid = (size_t)nx * ny;
    stem_complex *t = (stem_complex *)stem_alloc(grid * sizeof(stem_complex), "propagator (transposed)");
    if (!t) return STEM_ERR_MEMORY;
    for (int j = 0; j < ny; j++)
        for (int i = 0; i < nx; i++) t[(size_t)i * ny + j] = prop[(size_t)j * nx + i];
    int err = gpu_alloc_((void **)out, grid * sizeof(float2), "propagator (transposed)", __FILE__, __LINE__, __func__);
    if (!err && cudaMemcpy(*out, t, grid * sizeof(float2), cudaMemcpyHostToDevice) != cudaSuccess)
        err = gpu_fail_cuda(cudaGetLastError(), "cudaMemcpy(propagator, transposed)", __FILE__, __LINE__, __func__);
    free(t);
    return err;
}

int gpu_prop_upload_propagators(const stem_plan *plan, gpu_prop_shared *sh)
{
    size_t grid = (size_t)plan->nx * plan->ny;
    int n_prop = stem_propagator_count(plan); /* 2: the thinner last slice's after the others' */
    stem_complex *prop = (stem_complex *)stem_alloc(n_prop * grid * sizeof(stem_complex), "propagator");
    if (!prop) return STEM_ERR_MEMORY;
    int err = stem_propagator_build(plan, prop);
    if (!err)
        err =
            gpu_alloc_((void **)&sh->prop, n_prop * grid * sizeof(float2), "propagator", __FILE__, __LINE__, __func__);
    if (!err && cudaMemcpy(sh->prop, prop, n_prop * grid * sizeof(float2), cudaMemcpyHostToDevice) != cudaSuccess)
        err = gpu_fail_cuda(cudaGetLastError(), "cudaMemcpy(propagator)", __FILE__, __LINE__, __func__);
    if (!err && n_prop == 2) sh->prop_last = sh->prop + grid; /* freed with prop */
    if (!err && slices_in_dx(plan)) err = upload_transposed(plan, prop, &sh->prop_cols);
    free(prop);
    return err;
}

int gpu_prop_shared_create(const stem_plan *plan, const gpu_prop_plan *pp, const stem_complex *trans,
                           gpu_prop_shared *sh)
{
    memset(sh, 0, sizeof *sh);
    int nx = plan->nx, ny = plan->ny, err = STEM_OK;
    size_t grid = (size_t)nx * ny;
    STEM_TRY(gpu_prop_upload_propagators(plan, sh));
    if (!pp->streaming) {
        GPU_ALLOC(sh->trans, grid * plan->n_slices * sizeof(float2), "transmission functions (single-transfer mode)");
        STEM_TRY(gpu_prop_shared_upload_trans(plan, pp, trans, sh));
    }
    if (pp->smatrix) {
        int *k = (int *)stem_alloc(sizeof(int) * 2 * plan->n_beams, "beam table");
        if (!k) return STEM_ERR_MEMORY;
        for (int b = 0; b < plan->n_beams; b++) {
            k[2 * b] = plan->beam_kx[b];
            k[2 * b + 1] = plan->beam_ky[b];
        }
        err = gpu_alloc_((void **)&sh->beam_k, sizeof(int) * 2 * plan->n_beams, "beam table", __FILE__, __LINE__,
                         __func__);
        if (!err && cudaMemcpy(sh->beam_k, k, sizeof(int) * 2 * plan->n_beams, cudaMemcpyHostToDevice) != cudaSuccess)
            err = gpu_fail_cuda(cudaGetLastError(), "cudaMemcpy(beam table)", __FILE__, __LINE__, __func__);
        free(k);
        STEM_TRY(err);
    } else { /* the aperture pixels of the full grid (weight > 0), with chi and weight in double precision */
        int n = 0;
        double norm = 0;
        for (int j = 0; j < ny; j++)
            for (int i = 0; i < nx; i++) {
                double a = stem_probe_aperture(plan, stem_fft_index(i, nx) / plan->cell[0],
                                               stem_fft_index(j, ny) / plan->cell[1]);
                n += a > 0;
                norm += a * a;
            }
        int *idx = (int *)stem_alloc(sizeof(int) * (n ? n : 1), "probe aperture");
        double *q = (double *)stem_alloc(sizeof(double) * 4 * (n ? n : 1), "probe aperture");
        if (!idx || !q) {
            free(idx);
            free(q);
            return STEM_ERR_MEMORY;
        }
        n = 0;
        for (int j = 0; j < ny; j++)
            for (int i = 0; i < nx; i++) {
                double qx = stem_fft_index(i, nx) / plan->cell[0], qy = stem_fft_index(j, ny) / plan->cell[1];
                double a = stem_probe_aperture(plan, qx, qy);
                if (a == 0) continue;
                idx[n] = j * nx + i;
                q[4 * n] = qx;
                q[4 * n + 1] = qy;
                q[4 * n + 2] = stem_probe_chi(plan, qx, qy);
                q[4 * n + 3] = a / sqrt(norm); /* hard edge: 1 / sqrt(n), norm being n exactly */
                n++;
            }
        sh->n_ap = n;
        if (plan->positions) { /* every probe's position: 16 bytes each */
            size_t bytes = sizeof(double) * 2 * (size_t)plan->n_probes;
            err = gpu_alloc_((void **)&sh->probe_xy, bytes, "probe positions", __FILE__, __LINE__, __func__);
            if (!err && cudaMemcpy(sh->probe_xy, plan->positions, bytes, cudaMemcpyHostToDevice) != cudaSuccess)
                err = gpu_fail_cuda(cudaGetLastError(), "cudaMemcpy(probe positions)", __FILE__, __LINE__, __func__);
        }
        if (!err)
            err = gpu_alloc_((void **)&sh->ap_index, sizeof(int) * (n ? n : 1), "probe aperture", __FILE__, __LINE__,
                             __func__);
        if (!err)
            err = gpu_alloc_((void **)&sh->ap_q, sizeof(double) * 4 * (n ? n : 1), "probe aperture", __FILE__, __LINE__,
                             __func__);
        if (!err && n && cudaMemcpy(sh->ap_index, idx, sizeof(int) * n, cudaMemcpyHostToDevice) != cudaSuccess)
            err = gpu_fail_cuda(cudaGetLastError(), "cudaMemcpy(aperture)", __FILE__, __LINE__, __func__);
        if (!err && n && cudaMemcpy(sh->ap_q, q, sizeof(double) * 4 * n, cudaMemcpyHostToDevice) != cudaSuccess)
            err = gpu_fail_cuda(cudaGetLastError(), "cudaMemcpy(aperture)", __FILE__, __LINE__, __func__);
        free(idx);
        free(q);
        STEM_TRY(err);
    }
    CUDA_CALL(cudaDeviceSynchronize()); /* pageable uploads complete before the streams use them */
    return STEM_OK;
}

int gpu_prop_shared_upload_trans(const stem_plan *plan, const gpu_prop_plan *pp, const stem_complex *trans,
                                 gpu_prop_shared *sh)
{
    if (pp->streaming) return STEM_OK; /* streamed slice by slice from the host */
    size_t bytes = (size_t)plan->nx * plan->ny * plan->n_slices * sizeof(float2);
    int copied = 0; /* built on this GPU: no round trip through the host */
    if (pp->kept) STEM_TRY(gpu_transmission_kept_copy(pp->kept, trans, sh->trans, bytes, &copied));
    if (!copied) CUDA_CALL(cudaMemcpy(sh->trans, trans, bytes, cudaMemcpyHostToDevice));
    return STEM_OK;
}

int gpu_prop_shared_create_each(const stem_plan *plan, const gpu_devices *d, const gpu_prop_plan *pp,
                                const stem_complex *trans, gpu_prop_shared *sh)
{
    for (int g = 0; g < d->n_gpus; g++) {
        CUDA_CALL(cudaSetDevice(d->ids[g]));
        STEM_TRY(gpu_prop_shared_create(plan, pp, trans, &sh[g]));
    }
    return STEM_OK;
}

int gpu_prop_shared_upload_each(const stem_plan *plan, const gpu_devices *d, const gpu_prop_plan *pp,
                                const stem_complex *trans, gpu_prop_shared *sh)
{
    for (int g = 0; g < d->n_gpus; g++) {
        CUDA_CALL(cudaSetDevice(d->ids[g]));
        STEM_TRY(gpu_prop_shared_upload_trans(plan, pp, trans, &sh[g]));
    }
    return STEM_OK;
}

void gpu_prop_shared_free(gpu_prop_shared *sh)
{
    gpu_free(sh->trans);
    gpu_free(sh->prop);
    gpu_free(sh->prop_cols);
    gpu_free(sh->ap_index);
    gpu_free(sh->ap_q);
    gpu_free(sh->probe_xy);
    gpu_free(sh->beam_k);
    memset(sh, 0, sizeof *sh);
}

/* The worker's batched 2D C2C plan on handle h (made with cufftCreate), its work area left to the caller. */
static cufftResult make_batch_plan(const stem_plan *plan, const gpu_prop_plan *pp, cufftHandle h, size_t *work)
{
    int n[2] = {plan->ny, plan->nx}, grid = plan->nx * plan->ny;
    return cufftMakePlanMany(h, 2, n, NULL, 1, grid, NULL, 1, grid, CUFFT_C2C, pp->batch, work);
}

/* A batched plan like the worker's (made on *h, work area left to the caller) whose loads run
 * the LTO callback found under the first of names[*name_used ..] that cuFFT links (its index
 * back in *name_used), with *factor as its data (cuda/lto/fft_callbacks.cu). */
static cufftResult callback_plan(const stem_plan *plan, const gpu_prop_plan *pp, const char *const *names, int n_names,
                                 gpu_fft_load_factor *factor, cufftHandle *h, size_t *work, int *name_used)
{
    cufftResult r = CUFFT_NOT_SUPPORTED;
    for (int k = *name_used; k < n_names; k++) {
        /* a plan keeps an LTO callback once set: each name on a handle of its own */
        if ((r = cufftCreate(h)) != CUFFT_SUCCESS) return r;
        void *info = factor;
        r = cufftSetAutoAllocation(*h, 0);
        if (r == CUFFT_SUCCESS)
            r = cufftXtSetJITCallback(*h, names[k], (const void *)gpu_fft_callbacks_lto, sizeof gpu_fft_callbacks_lto,
                                      CUFFT_CB_LD_COMPLEX, &info);
        if (r == CUFFT_SUCCESS) r = make_batch_plan(plan, pp, *h, work);
        if (r == CUFFT_SUCCESS) {
            *name_used = k;
            return r;
        }
        cufftDestroy(*h);
    }
    return r;
}

/* fft_t and fft_p with their callback data, or w->fused = 0 and the reason in w->fft_note. */
static int fused_plans_create(const stem_plan *plan, const gpu_prop_plan *pp, gpu_prop_worker *w, size_t *work_t,
                              size_t *work_p)
{
    GPU_ALLOC(w->factors, 2 * sizeof(gpu_fft_load_factor), "cuFFT callback data");
    gpu_fft_load_factor f[2] = {{NULL, (unsigned long long)plan->nx * plan->ny, 0, 0}}; /* the factors: per slice */
    gpu_fft_divisor((unsigned)f[0].grid, &f[0].magic, &f[0].shift);
    f[1] = f[0];
    CUDA_CALL(cudaMemcpy(w->factors, f, sizeof f, cudaMemcpyHostToDevice));
    double t0 = stem_wall_time();
    static const char *names[GPU_FFT_LOAD_N_NAMES] = GPU_FFT_LOAD_NAMES;
    int name = 0;
    cufftResult r = callback_plan(plan, pp, names, GPU_FFT_LOAD_N_NAMES, &w->factors[0], &w->fft_t, work_t, &name);
    if (r != CUFFT_SUCCESS) {
        snprintf(w->fft_note, sizeof w->fft_note, "cuFFT error %d", (int)r);
        cudaGetLastError();
        return STEM_OK;
    }
    r = callback_plan(plan, pp, names, GPU_FFT_LOAD_N_NAMES, &w->factors[1], &w->fft_p, work_p, &name);
    if (r != CUFFT_SUCCESS) {
        cufftDestroy(w->fft_t);
        snprintf(w->fft_note, sizeof w->fft_note, "cuFFT error %d on the inverse plan", (int)r);
        cudaGetLastError();
        return STEM_OK;
    }
    w->fused = 1;
    snprintf(w->fft_note, sizeof w->fft_note, "multiplies in cuFFT's loads (LTO callbacks, linked in %.2f s)",
             stem_wall_time() - t0);
    return STEM_OK;
}

/* [compute] gpu_slices = fused or auto: the fused slice kernels where slices_plan takes them
 * (w->slices_fused); the note says what runs the slices either way. */
static int fused_slices_create(const stem_plan *plan, gpu_prop_worker *w)
{
    char why[sizeof w->fft_note];
    int fused = slices_plan(plan, &w->fs, why, sizeof why);
    snprintf(w->fft_note, sizeof w->fft_note, "%s", why);
    if (!fused) return STEM_OK;
    STEM_TRY(gpu_fused_create(&w->fs));
    w->slices_fused = 1;
    return STEM_OK;
}

int gpu_prop_worker_create(const stem_plan *plan, const gpu_prop_plan *pp, gpu_prop_worker *w)
{
    memset(w, 0, sizeof *w);
    size_t grid = (size_t)plan->nx * plan->ny;
    CUDA_CALL(cudaStreamCreateWithFlags(&w->stream, cudaStreamNonBlocking));
    w->has_streams = 1;
    CUDA_CALL(cudaStreamCreateWithFlags(&w->copy, cudaStreamNonBlocking));
    w->has_streams = 2;
    for (int k = 0; k < 2; k++) {
        CUDA_CALL(cudaEventCreateWithFlags(&w->ready[k], cudaEventDisableTiming));
        w->has_streams = 3 + 2 * k;
        CUDA_CALL(cudaEventCreateWithFlags(&w->freed[k], cudaEventDisableTiming));
        w->has_streams = 4 + 2 * k;
    }
    GPU_ALLOC(w->waves, grid * pp->batch * sizeof(float2), pp->smatrix ? "plane-wave batch" : "probe batch");
    if (pp->streaming) {
        GPU_ALLOC(w->slice[0], grid * sizeof(float2), "transmission slice buffer (streaming)");
        GPU_ALLOC(w->slice[1], grid * sizeof(float2), "transmission slice buffer (streaming)");
    }
    size_t work = 0, work_t = 0, work_p = 0;
    CUFFT_CALL(cufftCreate(&w->fft));
    w->has_fft = 1;
    CUFFT_CALL(cufftSetAutoAllocation(w->fft, 0));
    CUFFT_CALL(make_batch_plan(plan, pp, w->fft, &work));
    if (plan->opt.fft_callbacks != STEM_FFT_CALLBACKS_ON) {
        STEM_TRY(fused_slices_create(plan, w));
    } else {
        STEM_TRY(fused_plans_create(plan, pp, w, &work_t, &work_p));
        if (!w->fused)
            return STEM_FAIL(STEM_ERR_GPU,
                             "[compute] fft_callbacks = on, but cuFFT could not link the load callback "
                             "(%s); set it off",
                             w->fft_note);
    }
    if (work_t > work) work = work_t;
    if (work_p > work) work = work_p;
    if (work) GPU_ALLOC(w->fft_work, work, "cuFFT work area");
    CUFFT_CALL(cufftSetWorkArea(w->fft, w->fft_work));
    CUFFT_CALL(cufftSetStream(w->fft, w->stream));
    if (w->fused) {
        CUFFT_CALL(cufftSetWorkArea(w->fft_t, w->fft_work));
        CUFFT_CALL(cufftSetWorkArea(w->fft_p, w->fft_work));
        CUFFT_CALL(cufftSetStream(w->fft_t, w->stream));
        CUFFT_CALL(cufftSetStream(w->fft_p, w->stream));
    }
    return STEM_OK;
}

void gpu_prop_worker_free(gpu_prop_worker *w)
{
    if (w->has_streams >= 1) cudaStreamSynchronize(w->stream);
    if (w->has_streams >= 2) cudaStreamSynchronize(w->copy);
    if (w->has_fft) cufftDestroy(w->fft);
    if (w->fused) {
        cufftDestroy(w->fft_t);
        cufftDestroy(w->fft_p);
    }
    gpu_free(w->factors);
    gpu_fused_free(&w->fs);
    gpu_free(w->fft_work);
    gpu_free(w->waves);
    gpu_free(w->slice[0]);
    gpu_free(w->slice[1]);
    if (w->has_streams >= 3) cudaEventDestroy(w->ready[0]);
    if (w->has_streams >= 4) cudaEventDestroy(w->freed[0]);
    if (w->has_streams >= 5) cudaEventDestroy(w->ready[1]);
    if (w->has_streams >= 6) cudaEventDestroy(w->freed[1]);
    if (w->has_streams >= 2) cudaStreamDestroy(w->copy);
    if (w->has_streams >= 1) cudaStreamDestroy(w->stream);
    cudaGetLastError();
    memset(w, 0, sizeof *w);
}

/* ---- steps -------------------------------------------------------------------- */

int gpu_probes_build(const stem_plan *plan, const gpu_prop_plan *pp, const gpu_prop_shared *sh, gpu_prop_worker *w,
                     long g0, int n)
{
    size_t grid = (size_t)plan->nx * plan->ny;
    CUDA_CALL(cudaMemsetAsync(w->waves, 0, grid * pp->batch * sizeof(float2), w->stream));
    STEM_TRY(gpu_probe_coefficients(plan, sh, w->waves, g0, n, w->stream));
    CUFFT_CALL(cufftExecC2C(w->fft, w->waves, w->waves, CUFFT_INVERSE));
    return STEM_OK;
}

int gpu_probe_coefficients(const stem_plan *plan, const gpu_prop_shared *sh, float2 *waves, long g0, int n,
                           cudaStream_t s)
{
    if (n <= 0 || sh->n_ap <= 0) return STEM_OK;
    dim3 blocks(gpu_blocks(sh->n_ap, 256), n);
    k_probes<<<blocks, 256, 0, s>>>(waves, (size_t)plan->nx * plan->ny, sh->ap_index, sh->ap_q, sh->n_ap, g0,
                                    plan->scan_nx, plan->scan_x0, plan->scan_y0, plan->scan_step, sh->probe_xy);
    CUDA_LAUNCH();
    return STEM_OK;
}

int gpu_plane_waves_build(const stem_plan *plan, const gpu_prop_plan *pp, const gpu_prop_shared *sh, gpu_prop_worker *w,
                          int b0, int n)
{
    size_t grid = (size_t)plan->nx * plan->ny;
    if (n < pp->batch) /* idle slots of a short batch */
        CUDA_CALL(cudaMemsetAsync(w->waves + grid * n, 0, grid * (pp->batch - n) * sizeof(float2), w->stream));
    if (n > 0) {
        dim3 blocks(gpu_blocks(grid, 256), n);
        k_plane_waves<<<blocks, 256, 0, w->stream>>>(w->waves, plan->nx, plan->ny, sh->beam_k, b0);
        CUDA_LAUNCH();
    }
    return STEM_OK;
}

/* Streaming: slice s's transmission function into w->slice[s & 1] on the copy stream,
 * the compute stream waiting for it; returns the device copy. */
static const float2 *stream_slice_in(const stem_plan *plan, const stem_complex *host_trans, gpu_prop_worker *w, int s)
{
    size_t grid = (size_t)plan->nx * plan->ny;
    int k = s & 1;
    if (cudaStreamWaitEvent(w->copy, w->freed[k], 0) != cudaSuccess ||
        cudaMemcpyAsync(w->slice[k], host_trans + (size_t)s * grid, grid * sizeof(float2), cudaMemcpyHostToDevice,
                        w->copy) != cudaSuccess ||
        cudaEventRecord(w->ready[k], w->copy) != cudaSuccess ||
        cudaStreamWaitEvent(w->stream, w->ready[k], 0) != cudaSuccess)
        return NULL;
    return w->slice[k];
}

/* The callback data's factors in stream order: the forward plan's is this slice's t (the
 * grid and its divisor were set when the plans were made). */
static __global__ void k_set_factors(gpu_fft_load_factor *f, const float2 *t, const float2 *prop)
{
    f[0].factor = t;
    f[1].factor = prop;
}

/* gpu_propagate with the multiplies inside cuFFT's loads: per slice one forward FFT that
 * multiplies by t as it loads, and (but after the last slice) one inverse FFT that
 * multiplies by the propagator as it loads. */
static int propagate_fused(const stem_plan *plan, const gpu_prop_plan *pp, const gpu_prop_shared *sh,
                           const stem_complex *host_trans, gpu_prop_worker *w, int from, int to)
{
    size_t grid = (size_t)plan->nx * plan->ny;
    if (from > 0) {
        k_set_factors<<<1, 1, 0, w->stream>>>(w->factors, sh->trans, sh->prop);
        CUDA_LAUNCH();
        CUFFT_CALL(cufftExecC2C(w->fft_p, w->waves, w->waves, CUFFT_INVERSE));
    }
    for (int s = from; s < to; s++) {
        const float2 *t = pp->streaming ? stream_slice_in(plan, host_trans, w, s) : sh->trans + (size_t)s * grid;
        if (!t)
            return gpu_fail_cuda(cudaGetLastError(), "streaming a transmission function", __FILE__, __LINE__, __func__);
        k_set_factors<<<1, 1, 0, w->stream>>>(w->factors, t, sh->prop);
        CUDA_LAUNCH();
        CUFFT_CALL(cufftExecC2C(w->fft_t, w->waves, w->waves, CUFFT_FORWARD));
        if (pp->streaming) CUDA_CALL(cudaEventRecord(w->freed[s & 1], w->stream));
        if (s + 1 < to) CUFFT_CALL(cufftExecC2C(w->fft_p, w->waves, w->waves, CUFFT_INVERSE));
    }
    return STEM_OK;
}

/* gpu_propagate in the fused slice kernels: a row pass (the previous slice's inverse row
 * FFT, the transmission multiply, the forward row FFT) and a column pass (the forward
 * column FFT, the propagator multiply, the inverse column FFT) per slice; the last slice's
 * column pass only transforms, leaving the batch in Fourier space as cuFFT's path does. */
static int propagate_slices_fused(const stem_plan *plan, const gpu_prop_plan *pp, const gpu_prop_shared *sh,
                                  const stem_complex *host_trans, gpu_prop_worker *w, int from, int to)
{
    size_t grid = (size_t)plan->nx * plan->ny;
    int rows_first = GPU_FFT_NONE; /* whether the rows still wait for their inverse transform */
    if (from >= to) return STEM_OK;
    if (from > 0) { /* in Fourier space: the propagator the consumer applied only to its pixels */
        STEM_TRY(gpu_fused_cols(&w->fs, w->waves, pp->batch, GPU_FFT_NONE, sh->prop, sh->prop_cols, GPU_FFT_INVERSE,
                                w->stream));
        rows_first = GPU_FFT_INVERSE;
    }
    for (int s = from; s < to; s++) {
        const float2 *t = pp->streaming ? stream_slice_in(plan, host_trans, w, s) : sh->trans + (size_t)s * grid;
        if (!t)
            return gpu_fail_cuda(cudaGetLastError(), "streaming a transmission function", __FILE__, __LINE__, __func__);
        STEM_TRY(gpu_fused_rows(&w->fs, w->waves, pp->batch, rows_first, t, GPU_FFT_FORWARD, w->stream));
        if (pp->streaming) CUDA_CALL(cudaEventRecord(w->freed[s & 1], w->stream));
        int last = s + 1 == to;
        STEM_TRY(gpu_fused_cols(&w->fs, w->waves, pp->batch, GPU_FFT_FORWARD, last ? NULL : sh->prop, sh->prop_cols,
                                last ? GPU_FFT_NONE : GPU_FFT_INVERSE, w->stream));
        rows_first = GPU_FFT_INVERSE;
    }
    return STEM_OK;
}

int gpu_propagate(const stem_plan *plan, const gpu_prop_plan *pp, const gpu_prop_shared *sh,
                  const stem_complex *host_trans, gpu_prop_worker *w, int from, int to)
{
    size_t grid = (size_t)plan->nx * plan->ny;
    if (w->slices_fused) return propagate_slices_fused(plan, pp, sh, host_trans, w, from, to);
    if (w->fused) return propagate_fused(plan, pp, sh, host_trans, w, from, to);
    if (from > 0) { /* the propagator the consumer applied only to its own pixels, then back to real space */
        STEM_TRY(gpu_mul_bcast(w->waves, sh->prop, grid, pp->batch, w->stream));
        CUFFT_CALL(cufftExecC2C(w->fft, w->waves, w->waves, CUFFT_INVERSE));
    }
    for (int s = from; s < to; s++) { /* streaming: slice s copied while the previous slice computes */
        const float2 *t = pp->streaming ? stream_slice_in(plan, host_trans, w, s) : sh->trans + (size_t)s * grid;
        if (!t)
            return gpu_fail_cuda(cudaGetLastError(), "streaming a transmission function", __FILE__, __LINE__, __func__);
        STEM_TRY(gpu_mul_bcast(w->waves, t, grid, pp->batch, w->stream));
        if (pp->streaming) CUDA_CALL(cudaEventRecord(w->freed[s & 1], w->stream));
        CUFFT_CALL(cufftExecC2C(w->fft, w->waves, w->waves, CUFFT_FORWARD));
        if (s + 1 < to) {
            STEM_TRY(gpu_mul_bcast(w->waves, sh->prop, grid, pp->batch, w->stream));
            CUFFT_CALL(cufftExecC2C(w->fft, w->waves, w->waves, CUFFT_INVERSE));
        }
    }
    return STEM_OK;
}

int gpu_mul_bcast(float2 *waves, const float2 *t, size_t grid, int batch, cudaStream_t s)
{
    k_mul_bcast<<<gpu_blocks(grid, 256), 256, 0, s>>>(waves, t, grid, batch);
    CUDA_LAUNCH();
    return STEM_OK;
}

int gpu_crop_box(const stem_plan *plan, const gpu_prop_shared *sh, const float2 *waves, float2 *box, int n, int below,
                 cudaStream_t s)
{
    if (n <= 0) return STEM_OK;
    dim3 blocks(gpu_blocks((size_t)plan->crop_nx * plan->crop_ny, 256), n);
    k_crop<<<blocks, 256, 0, s>>>(box, waves, gpu_prop_after(plan, sh, below), plan->nx, plan->ny, plan->crop_nx,
                                  plan->crop_ny);
    CUDA_LAUNCH();
    return STEM_OK;
}
