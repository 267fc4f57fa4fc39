/* The PRISM output step's GPU memory plan (gpu_output.cu runs it): what a tile's worker needs,
 * whether the whole S-matrix fits beside the workers (single transfer) or must come window by
 * window (streaming), the largest tiles and units that fit, and the refusal when nothing does. */
#include <string.h>

#include "gpu_internal.cuh"

#define OUT_CAP_BYTES (128.0 * 1048576.0) /* product output per stream */

/* [debug] gpu_gemm = auto: the split FP16 products from this many beams on. Below, cuBLAS's FP32
 * CGEMM is faster (gpu_kernel_check --split-gemm, benchmarks/results/TF32X3.md). */
#define SPLIT_AUTO_MIN_BEAMS 200

/* The kinds on formed operands (gpu_gemm = tf32x3 / fp16x3 / fp64): their form, else NULL. */
static const gpu_split_form *plan_split_form(const stem_plan *plan, const gpu_out_plan *op, gpu_split_form *f)
{
    if (op->direct || !gpu_gemm_is_split(op->gemm)) return NULL;
    gpu_split_form_init(f, op->gemm, plan->n_beams, plan->opt.gpu_gemm_steps);
    return f;
}

static double out_worker_bytes(const stem_plan *plan, const gpu_out_plan *op, double out_elems, int P,
                               double unit_pixels)
{
    double win = (double)plan->out_nx * plan->out_ny;
    double b = (op->direct ? 0 : 8.0 * out_elems) + 16.0 * P * win + 8.0 * plan->n_beams * P;
    gpu_split_form f;
    if (plan_split_form(plan, op, &f)) /* the tile's coefficients and the streamed window, split */
        b += (double)gpu_split_coef_bytes(&f, P) + (double)gpu_split_smatrix_bytes(&f, 1) * unit_pixels;
    b += 2.0 * (double)gpu_det_result_bytes(plan, P) + (double)gpu_det_work_bytes(plan, P);
    b += 8.0 * plan->n_beams * unit_pixels;
    return b + 40.0 * 1048576.0; /* cuBLAS workspace (GPU_BLAS_WORKSPACE), streams, plans */
}

/* Units that the rank's probes fill for tiles T and units U (for load balance). */
static long unit_count(const stem_plan *plan, int T, int U)
{
    long rows = (plan->probe_end - 1) / plan->scan_nx - plan->probe_begin / plan->scan_nx + 1;
    long cols = rows > 1 ? plan->scan_nx : plan->probe_end - plan->probe_begin;
    long e = (long)T * U;
    return ((rows + e - 1) / e) * ((cols + e - 1) / e);
}

void gpu_out_plan_free(gpu_out_plan *op) { gpu_tiling_free(&op->tiling); }

int gpu_out_window_batch(const stem_plan *plan, const gpu_tiling *t)
{
    int P = plan->opt.gpu_deterministic ? gpu_tile_probes(plan, t->T) : t->max_p;
    if (P < t->max_p) P = t->max_p;
    return P > 0 ? P : 1;
}

/* What every way of running the output step needs besides its workers: the S-matrix (with its
 * split where the products are split-operand) and the detector, probes and beam phases. */
typedef struct {
    double S, S_all, shared;
    int T0; /* the largest tile side tried */
} out_needs;

static out_needs out_needs_of(const stem_plan *plan, const gpu_out_plan *op)
{
    out_needs n;
    gpu_split_form f;
    long n_local = plan->probe_end - plan->probe_begin;
    n.S = 8.0 * plan->n_beams * plan->crop_nx * plan->crop_ny;
    n.S_all = n.S +
        (plan_split_form(plan, op, &f) /* single-transfer: S and its split */
             ? (double)gpu_split_smatrix_bytes(&f, (size_t)plan->crop_nx * plan->crop_ny)
             : 0);
    n.shared = (double)gpu_det_bytes(plan, 0) + sizeof(gpu_probe) * (double)n_local + 24.0 * plan->n_beams;
    n.T0 = gpu_tile_choose(plan, OUT_CAP_BYTES);
    if (plan->opt.gpu_tile > 0) n.T0 = plan->opt.gpu_tile; /* [debug] gpu_tile: benchmarking */
    if (plan->positions) n.T0 = 1; /* tiles and units of several probes assume a grid's neighbours */
    return n;
}

/* Single transfer: the largest tile side (T0, halved) whose workers fit beside the whole
 * S-matrix; *need: what T0 needs. 1 with *T set, or 0. */
static int fits_single(const stem_plan *plan, const gpu_devices *d, const gpu_out_plan *op, const out_needs *n, int *T,
                       double *need)
{
    for (int t = n->T0; t >= 1; t = t > 1 ? t / 2 : 0) {
        int tx = t < plan->scan_nx ? t : plan->scan_nx, ty = t < plan->scan_ny ? t : plan->scan_ny;
        double x =
            n->shared + n->S_all + d->streams * out_worker_bytes(plan, op, gpu_tile_out_bytes(plan, t) / 8, tx * ty, 0);
        if (t == n->T0) *need = x;
        if (x <= d->usable_bytes) {
            *T = t;
            return 1;
        }
    }
    return 0;
}

/* Streaming: the largest tile side T and unit of U x U tiles whose window fits, every stream busy;
 * *need: what T0 with units of one tile needs (the smallest streaming plan if none fits). */
static int fits_streaming(const stem_plan *plan, const gpu_devices *d, const gpu_out_plan *op, const out_needs *n,
                          int *T, int *U, double *need)
{
    long max_u = (plan->scan_nx > plan->scan_ny ? plan->scan_nx : plan->scan_ny);
    for (int t = n->T0; t >= 1; t = t > 1 ? t / 2 : 0) {
        int tx = t < plan->scan_nx ? t : plan->scan_nx, ty = t < plan->scan_ny ? t : plan->scan_ny;
        double out = gpu_tile_out_bytes(plan, t) / 8;
        for (int u = plan->positions ? 1 : (int)((max_u + t - 1) / t); u >= 1; u = u > 1 ? (u * 3) / 4 : 0) {
            if (u > 1 && unit_count(plan, t, u) < d->workers) continue; /* keep every stream busy */
            double x = n->shared + d->streams * out_worker_bytes(plan, op, out, tx * ty, gpu_unit_pixels(plan, t, u));
            if (u == 1 && t == n->T0) *need = x;
            if (x <= d->usable_bytes) {
                *T = t;
                *U = u;
                return 1;
            }
        }
    }
    *need = n->shared +
        d->streams * out_worker_bytes(plan, op, gpu_tile_out_bytes(plan, 1) / 8, 1, gpu_unit_pixels(plan, 1, 1));
    return 0;
}

static int refuse_out(const stem_plan *plan, const gpu_devices *d, const out_needs *n, double need_single,
                      double need_stream)
{
    if (plan->opt.memory_mode == STEM_MEMMODE_SINGLE)
        return STEM_FAIL(STEM_ERR_MEMORY,
                         "the PRISM output step does not fit on the GPU in single-transfer mode: it needs %.2f GiB "
                         "per GPU (S-matrix %.2f GiB) but %.2f GiB are usable (%.2f GiB free on %s); use [compute] "
                         "memory_mode = streaming or auto",
                         need_single / GPU_GIB, n->S / GPU_GIB, d->usable_bytes / GPU_GIB, d->free_bytes / GPU_GIB,
                         d->name);
    return STEM_FAIL(STEM_ERR_MEMORY,
                     "the PRISM output step does not fit on the GPU even when streaming the S-matrix window by "
                     "window: one window of %d beams needs %.2f GiB per GPU with %d stream(s) but %.2f GiB are "
                     "usable (%.2f GiB free on %s); use fewer [compute] streams_per_gpu, a larger [simulation] "
                     "interpolation, or [compute] device = cpu",
                     plan->n_beams, need_stream / GPU_GIB, d->streams, d->usable_bytes / GPU_GIB,
                     d->free_bytes / GPU_GIB, d->name);
}

/* -v: both modes' needs (each at the largest tile) and what was chosen. */
static void log_out_plan(const stem_plan *plan, const gpu_devices *d, const out_needs *n, const gpu_out_plan *op,
                         double need_single, double need_stream)
{
    const gpu_tiling *t = &op->tiling;
    int T0 = n->T0, mode = plan->opt.memory_mode;
    gpu_split_form f;
    if (!need_stream)
        need_stream = n->shared +
            d->streams * out_worker_bytes(plan, op, gpu_tile_out_bytes(plan, T0) / 8, 1, gpu_unit_pixels(plan, T0, 1));
    if (!need_single)
        need_single = n->shared + n->S_all +
            d->streams * out_worker_bytes(plan, op, gpu_tile_out_bytes(plan, T0) / 8, T0 * T0, 0);
    stem_info("GPU memory estimate for the PRISM output step, per GPU: single-transfer %.3f GiB (S-matrix %.3f), "
              "streaming from %.3f GiB; usable %.2f of %.2f GiB free -> %s%s: tiles of %d x %d probes (%d tiles)%s, "
              "%.3f GiB, %s",
              need_single / GPU_GIB, n->S / GPU_GIB, need_stream / GPU_GIB, d->usable_bytes / GPU_GIB,
              d->free_bytes / GPU_GIB, op->streaming ? "streaming window by window" : "single-transfer",
              mode == STEM_MEMMODE_AUTO ? " (auto)" : "", t->T, t->T, t->n_tiles,
              op->streaming ? ", uploaded in units of tiles" : "", op->bytes_total / GPU_GIB,
              op->direct                          ? "one reduction per probe"
                  : plan_split_form(plan, op, &f) ? "split-operand GEMM over the probes of a tile"
                                                  : "batched CGEMM over the probes of a tile");
    if (op->streaming)
        stem_info("  streaming: %d units of up to %d x %d tiles, largest window %.3f GiB", t->n_units, t->U, t->U,
                  8.0 * plan->n_beams * t->max_unit / GPU_GIB);
}

/* The plan for op->gemm (op->direct set): the mode and tiles that fit; if none does,
 * STEM_ERR_MEMORY, with its message only where verbose >= 0 (quiet: the caller tries another). */
static int plan_for_kind(const stem_plan *plan, const gpu_devices *d, int verbose, gpu_out_plan *op)
{
    out_needs n = out_needs_of(plan, op);
    int mode = plan->opt.memory_mode, chosen = -1, T = n.T0, U = 1;
    double need_single = 0, need_stream = 0;
    if (mode != STEM_MEMMODE_STREAMING && fits_single(plan, d, op, &n, &T, &need_single)) chosen = 0;
    if (chosen < 0 && mode != STEM_MEMMODE_SINGLE && fits_streaming(plan, d, op, &n, &T, &U, &need_stream)) chosen = 1;
    if (chosen < 0) return verbose >= 0 ? refuse_out(plan, d, &n, need_single, need_stream) : STEM_ERR_MEMORY;
    op->streaming = chosen;
    STEM_TRY(gpu_tiling_build(plan, T, chosen ? U : 1, &op->tiling));
    const gpu_tiling *t = &op->tiling;
    op->bytes_shared = n.shared + (chosen ? 0 : n.S_all);
    op->bytes_worker =
        out_worker_bytes(plan, op, (double)t->max_out, gpu_out_window_batch(plan, t), chosen ? (double)t->max_unit : 0);
    op->bytes_total = op->bytes_shared + d->streams * op->bytes_worker;
    if (verbose > 0) log_out_plan(plan, d, &n, op, need_single, need_stream);
    return STEM_OK;
}

/* gpu_gemm = auto: FP16X3 from SPLIT_AUTO_MIN_BEAMS beams on, where it fits without streaming
 * a job that FP32 CGEMM would run single-transfer; else STANDARD. */
static int auto_kind(const stem_plan *plan, const gpu_devices *d, int direct)
{
    if (direct || plan->n_beams < SPLIT_AUTO_MIN_BEAMS) return STEM_GPU_GEMM_STANDARD;
    gpu_out_plan split, plain; /* direct = 0 */
    memset(&split, 0, sizeof split);
    memset(&plain, 0, sizeof plain);
    split.gemm = STEM_GPU_GEMM_FP16X3;
    plain.gemm = STEM_GPU_GEMM_STANDARD;
    int fits = plan_for_kind(plan, d, -1, &split) == STEM_OK, streams = split.streaming;
    gpu_out_plan_free(&split);
    if (!fits) return STEM_GPU_GEMM_STANDARD;
    if (!streams) return STEM_GPU_GEMM_FP16X3;
    int plain_single = plan_for_kind(plan, d, -1, &plain) == STEM_OK && !plain.streaming;
    gpu_out_plan_free(&plain);
    return plain_single ? STEM_GPU_GEMM_STANDARD : STEM_GPU_GEMM_FP16X3;
}

int gpu_out_plan_build(const stem_plan *plan, const gpu_devices *d, int verbose, gpu_out_plan *op)
{
    memset(op, 0, sizeof *op);
    op->direct = plan->opt.gpu_prism_output == STEM_GPU_OUTPUT_DIRECT;
    op->gemm = plan->opt.gpu_gemm == STEM_GPU_GEMM_AUTO ? auto_kind(plan, d, op->direct) : plan->opt.gpu_gemm;
    return plan_for_kind(plan, d, verbose ? 1 : 0, op);
}
