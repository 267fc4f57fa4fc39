/* PRISM output step on GPUs. Per tile of T x T probes: beam coefficients on the
 * device, then one batched complex matrix product (cuBLAS CGEMM, strided over the
 * rows of the union of the tile's windows) gives every probe's weighted sum over
 * beams on that union, the windows are gathered from it, transformed with one
 * batched FFT and binned on the device. The S-matrix stays on the GPU
 * (single-transfer) or comes unit by unit from page-locked host memory (streaming).
 * [debug] gpu_prism_output = direct selects one warp reduction per window pixel
 * and probe instead of the matrix product (for comparison). Its memory plan: gpu_output_plan.cu. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_internal.cuh"

#define MAX_PIECES 256

/* ---- kernels ------------------------------------------------------------- */

/* coef[p][b] = A_b exp(-i chi(q_b)) exp(-2 pi i q_b . r_p), bq[b] = (qx, qy, chi, A_b) (gpu_beam_table). */
static __global__ void k_coef(float2 *__restrict__ coef, const gpu_probe *__restrict__ pr,
                              const double *__restrict__ bq, int nb)
{
    int b = blockIdx.x * blockDim.x + threadIdx.x, p = blockIdx.y;
    if (b >= nb) return;
    double phase = -bq[4 * b + 2] - 2 * M_PI * (bq[4 * b] * pr[p].x + bq[4 * b + 1] * pr[p].y), s, c;
    sincos(phase, &s, &c);
    float a = (float)bq[4 * b + 3];
    coef[(size_t)p * nb + b] = make_float2((float)c * a, (float)s * a);
}

/* win[p][j][i] from the product's output out[row][p][col] over the tile region, or with
 * probes_inner (the split products) out[row][col][p]. */
static __global__ void k_gather(float2 *__restrict__ win, const float2 *__restrict__ out,
                                const gpu_probe *__restrict__ pr, int P, int tx0, int ty0, int tw, int wx, int wy,
                                int probes_inner)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x, p = blockIdx.y;
    if (k >= wx * wy) return;
    int j = k / wx, i = k - j * wx;
    int r = pr[p].oy - ty0 + j, c = pr[p].ox - tx0 + i;
    size_t o = probes_inner ? ((size_t)r * tw + c) * P + p : ((size_t)r * P + p) * tw + c;
    win[(size_t)p * wx * wy + k] = out[o];
}

/* One warp per window pixel and probe: sum over beams of coef * S (S beam-fastest). */
static __global__ void k_direct(float2 *__restrict__ win, const float2 *__restrict__ src, int W, int H, int nb, int sx,
                                int sy, const gpu_probe *__restrict__ pr, int tx0, int ty0,
                                const float2 *__restrict__ coef, int wx, int wy)
{
    int warp = (int)(((size_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5), lane = threadIdx.x & 31, p = blockIdx.y;
    if (warp >= wx * wy) return; /* whole warps leave together */
    int j = warp / wx, i = warp - j * wx;
    int r = (sy + pr[p].oy - ty0 + j) % H, c = (sx + pr[p].ox - tx0 + i) % W;
    if (r < 0) r += H;
    if (c < 0) c += W;
    const float2 *s = src + ((size_t)r * W + c) * nb, *cf = coef + (size_t)p * nb;
    float re = 0, im = 0;
    for (int b = lane; b < nb; b += 32) {
        float2 v = gpu_cmul(cf[b], s[b]);
        re += v.x;
        im += v.y;
    }
    for (int o = 16; o > 0; o >>= 1) {
        re += __shfl_down_sync(0xffffffffu, re, o);
        im += __shfl_down_sync(0xffffffffu, im, o);
    }
    if (lane == 0) win[(size_t)p * wx * wy + warp] = make_float2(re, im);
}

/* ---- launchers ---------------------------------------------------------------- */

void gpu_beam_table(const stem_plan *plan, double *bq)
{
    double norm = 0;
    for (int b = 0; b < plan->n_beams; b++) {
        double qx = plan->beam_kx[b] / plan->cell[0], qy = plan->beam_ky[b] / plan->cell[1];
        double a = stem_probe_aperture(plan, qx, qy);
        bq[4 * b] = qx;
        bq[4 * b + 1] = qy;
        bq[4 * b + 2] = stem_probe_chi(plan, qx, qy);
        bq[4 * b + 3] = a;
        norm += a * a;
    }
    for (int b = 0; b < plan->n_beams; b++) bq[4 * b + 3] /= sqrt(norm); /* hard edge: 1 / sqrt(n_beams) */
}

int gpu_beam_coefficients(float2 *coef, const gpu_probe *pr, const double *beam_q, int nb, int P, cudaStream_t s)
{
    if (P <= 0 || nb <= 0) return STEM_OK;
    k_coef<<<dim3(gpu_blocks(nb, 128), P), 128, 0, s>>>(coef, pr, beam_q, nb);
    CUDA_LAUNCH();
    return STEM_OK;
}

int gpu_gather_windows(float2 *win, const float2 *out, const gpu_probe *pr, int P, const gpu_tile *tl, int wx, int wy,
                       int probes_inner, cudaStream_t s)
{
    if (P <= 0) return STEM_OK;
    k_gather<<<dim3(gpu_blocks((size_t)wx * wy, 256), P), 256, 0, s>>>(win, out, pr, P, tl->x0, tl->y0, tl->w, wx, wy,
                                                                       probes_inner);
    CUDA_LAUNCH();
    return STEM_OK;
}

int gpu_direct_windows(float2 *win, const float2 *src, int W, int H, int nb, int sx, int sy, const gpu_probe *pr,
                       const gpu_tile *tl, const float2 *coef, int P, int wx, int wy, cudaStream_t s)
{
    if (P <= 0) return STEM_OK;
    k_direct<<<dim3(gpu_blocks((size_t)wx * wy * 32, 256), P), 256, 0, s>>>(win, src, W, H, nb, sx, sy, pr, tl->x0,
                                                                            tl->y0, coef, wx, wy);
    CUDA_LAUNCH();
    return STEM_OK;
}

/* ---- execution ---------------------------------------------------------------- */

typedef struct {
    cudaStream_t stream;
    cublasHandle_t blas;
    cufftHandle fft;
    int has_stream, has_blas, has_fft, has_events;
    float2 *coef, *out, *win, *region;
    void *coef_split, *region_split; /* split kinds: the tile's coefficients, the streamed unit's S window */
    double *dres[2], *hres[2];
    float *dcbed[2], *hcbed[2];
    float *dwork;    /* the fixed-order detector's partial sums (both slots: one stream) */
    void *blas_work; /* [compute] gpu_deterministic: cuBLAS's workspace, owned here */
    cudaEvent_t done[2];
    int pending[2], next;
    double flops, s_bytes, dram, h2d;
    /* the CGEMMs of each pending tile between two timing events, read when the tile is flushed */
    cudaEvent_t gemm_ev[2][2];
    int has_gemm_ev;
    double gemm_pending[2], gemm_flops, gemm_s;
    struct {
        const float2 *src;
        const void *ssrc;
        int W, H, sx, sy, t, P;
    } last; /* the last tile's CGEMM call */
} out_worker;

typedef struct gpu_out_ctx {
    const stem_plan *plan;
    long probe_begin, probe_end;     /* the plan's probes when made: a streamed 4D run's blocks move them */
    const stem_detector *det_tables; /* the detector the uploaded tables came from */
    const stem_complex *S;           /* this configuration's host S-matrix (streaming, or uploaded) */
    stem_result *res;
    gpu_devices dev;
    gpu_out_plan op;
    int keep; /* fits beside the S-matrix step's context: kept across configurations */
    float2 *S_dev[GPU_MAX_DEVICES];
    int S_owned[GPU_MAX_DEVICES]; /* S_dev[g] allocated here (else the caller's, not freed) */
    gpu_probe *probes[GPU_MAX_DEVICES];
    double *beam_q[GPU_MAX_DEVICES];
    gpu_det det[GPU_MAX_DEVICES];
    out_worker *w;
    int gemm;                       /* stem_gpu_gemm */
    gpu_split_form split;           /* gemm tf32x3 / fp16x3: the operands' split form */
    void *S_split[GPU_MAX_DEVICES]; /* single-transfer: this configuration's S-matrix split (kept) */
} out_ctx;

/* Split kinds: the S-matrix split once per configuration on each GPU (single-transfer), or
 * only the FP16 scale taken from the host S-matrix (streaming: units split as they come). */
static int out_split_smatrix(out_ctx *c)
{
    const stem_plan *plan = c->plan;
    size_t pixels = (size_t)plan->crop_nx * plan->crop_ny;
    if (!gpu_gemm_is_split(c->gemm) || c->op.direct) return STEM_OK;
    if (c->op.streaming) {
        gpu_split_scale_host(&c->split, c->S, pixels);
        return STEM_OK;
    }
    for (int g = 0; g < c->dev.n_gpus; g++) {
        STEM_TRY(gpu_use_device(&c->dev, g));
        if (!c->S_split[g]) GPU_ALLOC(c->S_split[g], gpu_split_smatrix_bytes(&c->split, pixels), "S-matrix split");
        STEM_TRY(gpu_split_scale_device(&c->split, c->S_dev[g], pixels, 0)); /* the same S on every GPU */
        STEM_TRY(gpu_split_smatrix(&c->split, c->S_split[g], c->S_dev[g], pixels, 0));
    }
    for (int g = 0; g < c->dev.n_gpus; g++) {
        STEM_TRY(gpu_use_device(&c->dev, g));
        CUDA_CALL(cudaDeviceSynchronize());
    }
    return STEM_OK;
}

/* This configuration's S-matrix on each GPU: the caller's device copies (S_given), or the
 * host S-matrix uploaded into buffers kept with the context (single-transfer), or read
 * unit by unit from the host (streaming). */
static int out_bind_smatrix(out_ctx *c, const stem_complex *S, const float2 *const *S_given)
{
    const stem_plan *plan = c->plan;
    size_t S_bytes = sizeof(float2) * plan->n_beams * plan->crop_nx * plan->crop_ny;
    c->S = S;
    for (int g = 0; g < c->dev.n_gpus; g++) {
        STEM_TRY(gpu_use_device(&c->dev, g));
        if (S_given || c->op.streaming) {
            if (c->S_owned[g]) gpu_free(c->S_dev[g]);
            c->S_owned[g] = 0;
            c->S_dev[g] = S_given ? (float2 *)S_given[g] : NULL;
            continue;
        }
        if (!c->S_owned[g]) {
            GPU_ALLOC(c->S_dev[g], S_bytes, "S-matrix (single-transfer mode)");
            c->S_owned[g] = 1;
        }
        CUDA_CALL(cudaMemcpy(c->S_dev[g], S, S_bytes, cudaMemcpyHostToDevice));
    }
    return out_split_smatrix(c);
}

/* Probe positions and the beam table on GPU g. */
static int out_shared_create(out_ctx *c, int g)
{
    const stem_plan *plan = c->plan;
    const gpu_tiling *t = &c->op.tiling;
    int nb = plan->n_beams;
    if (t->n_probes > 0) {
        GPU_ALLOC(c->probes[g], sizeof(gpu_probe) * t->n_probes, "probe positions");
        CUDA_CALL(cudaMemcpy(c->probes[g], t->probe, sizeof(gpu_probe) * t->n_probes, cudaMemcpyHostToDevice));
    }
    double *bq = (double *)stem_alloc(sizeof(double) * 4 * nb, "beam table");
    if (!bq) return STEM_ERR_MEMORY;
    gpu_beam_table(plan, bq);
    int err = gpu_alloc_((void **)&c->beam_q[g], sizeof(double) * 4 * nb, "beam table", __FILE__, __LINE__, __func__);
    if (!err && cudaMemcpy(c->beam_q[g], bq, sizeof(double) * 4 * nb, cudaMemcpyHostToDevice) != cudaSuccess)
        err = gpu_fail_cuda(cudaGetLastError(), "cudaMemcpy(beam table)", __FILE__, __LINE__, __func__);
    free(bq);
    STEM_TRY(err);
    CUDA_CALL(cudaDeviceSynchronize());
    return STEM_OK;
}

static int out_worker_create(void *ctx, void *worker)
{
    out_ctx *c = (out_ctx *)ctx;
    out_worker *w = (out_worker *)worker;
    const stem_plan *plan = c->plan;
    const gpu_tiling *t = &c->op.tiling;
    int P = gpu_out_window_batch(plan, t), win = plan->out_nx * plan->out_ny, n[2] = {plan->out_ny, plan->out_nx};
    size_t stride = stem_channel_record_stride(plan);
    w->pending[0] = w->pending[1] = -1;
    CUDA_CALL(cudaStreamCreateWithFlags(&w->stream, cudaStreamNonBlocking));
    w->has_stream = 1;
    for (int k = 0; k < 2; k++) {
        CUDA_CALL(cudaEventCreateWithFlags(&w->done[k], cudaEventDisableTiming));
        w->has_events = k + 1;
    }
    for (int k = 0; k < 4; k++) {
        CUDA_CALL(cudaEventCreate(&w->gemm_ev[k / 2][k % 2]));
        w->has_gemm_ev = k + 1;
    }
    CUBLAS_CALL(cublasCreate(&w->blas));
    w->has_blas = 1;
    CUBLAS_CALL(cublasSetStream(w->blas, w->stream));
    CUBLAS_CALL(cublasSetMathMode(w->blas, CUBLAS_DEFAULT_MATH)); /* full FP32, no TF32 */
    if (plan->opt
            .gpu_deterministic) { /* cuBLAS's reproducibility rules: a handle per stream with a workspace of its own */
        GPU_ALLOC(w->blas_work, GPU_BLAS_WORKSPACE, "cuBLAS workspace");
        CUBLAS_CALL(
            cublasSetWorkspace(w->blas, w->blas_work, GPU_BLAS_WORKSPACE)); /* after cublasSetStream, which resets it */
        CUBLAS_CALL(cublasSetAtomicsMode(w->blas, CUBLAS_ATOMICS_NOT_ALLOWED));
    }
    GPU_ALLOC(w->coef, sizeof(float2) * plan->n_beams * P, "beam coefficients");
    int split = gpu_gemm_is_split(c->gemm) && !c->op.direct;
    if (split) GPU_ALLOC(w->coef_split, gpu_split_coef_bytes(&c->split, P), "beam coefficients split");
    if (split && c->op.streaming)
        GPU_ALLOC(w->region_split, gpu_split_smatrix_bytes(&c->split, t->max_unit), "S-matrix window split");
    if (!c->op.direct) GPU_ALLOC(w->out, sizeof(float2) * (t->max_out ? t->max_out : 1), "tile product");
    GPU_ALLOC(w->win, sizeof(float2) * win * P, "probe windows");
    if (c->op.streaming)
        GPU_ALLOC(w->region, sizeof(float2) * plan->n_beams * t->max_unit, "S-matrix window (streaming)");
    size_t work = gpu_det_work_bytes(plan, P);
    if (work) GPU_ALLOC(w->dwork, work, "detector partial sums");
    for (int k = 0; k < 2; k++) {
        GPU_ALLOC(w->dres[k], sizeof(double) * stride * P, "detector sums");
        GPU_ALLOC_HOST(w->hres[k], sizeof(double) * stride * P, "detector sums");
        if (plan->opt.save_4d || plan->opt.save_pacbed) { /* patterns come back for both */
            GPU_ALLOC(w->dcbed[k], sizeof(float) * win * P, "4D patterns");
            GPU_ALLOC_HOST(w->hcbed[k], sizeof(float) * win * P, "4D patterns");
        }
    }
    CUFFT_CALL(cufftPlanMany(&w->fft, 2, n, NULL, 1, win, NULL, 1, win, CUFFT_C2C, P));
    w->has_fft = 1;
    CUFFT_CALL(cufftSetStream(w->fft, w->stream));
    return STEM_OK;
}

static void out_worker_free(void *worker)
{
    out_worker *w = (out_worker *)worker;
    if (w->has_stream) cudaStreamSynchronize(w->stream);
    if (w->has_fft) cufftDestroy(w->fft);
    if (w->has_blas) cublasDestroy(w->blas);
    gpu_free(w->coef);
    gpu_free(w->out);
    gpu_free(w->win);
    gpu_free(w->region);
    gpu_free(w->coef_split);
    gpu_free(w->region_split);
    gpu_free(w->dwork);
    gpu_free(w->blas_work);
    for (int k = 0; k < 2; k++) {
        gpu_free(w->dres[k]);
        gpu_free(w->dcbed[k]);
        gpu_free_host(w->hres[k]);
        gpu_free_host(w->hcbed[k]);
        if (w->has_events > k) cudaEventDestroy(w->done[k]);
    }
    for (int k = 0; k < w->has_gemm_ev; k++) cudaEventDestroy(w->gemm_ev[k / 2][k % 2]);
    if (w->has_stream) cudaStreamDestroy(w->stream);
    cudaGetLastError();
    memset(w, 0, sizeof *w);
}

/* C(col, p) = sum_b A(b, col) coef(b, p) for m columns (region pixels, nb apart in A, 1 apart
 * in C whose probes are ldc apart), P probes, one product per region row (rows of them, sA and
 * sC apart), with the [debug] gpu_gemm variant (standard, 3m, tf32). */
static int rows_gemm(cublasHandle_t h, int gemm, int nb, const float2 *A, const float2 *coef, float2 *C, int m, int P,
                     long long sA, int ldc, long long sC, int rows)
{
    const cuComplex one = make_cuComplex(1, 0), zero = make_cuComplex(0, 0);
    if (gemm == STEM_GPU_GEMM_3M)
        CUBLAS_CALL(cublasCgemm3mStridedBatched(h, CUBLAS_OP_T, CUBLAS_OP_N, m, P, nb, &one, A, nb, sA, coef, nb, 0,
                                                &zero, C, ldc, sC, rows));
    else if (gemm == STEM_GPU_GEMM_TF32) /* tensor cores: inputs rounded to TF32, sums in FP32 */
        CUBLAS_CALL(cublasGemmStridedBatchedEx(h, CUBLAS_OP_T, CUBLAS_OP_N, m, P, nb, &one, A, CUDA_C_32F, nb, sA, coef,
                                               CUDA_C_32F, nb, 0, &zero, C, CUDA_C_32F, ldc, sC, rows,
                                               CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT));
    else
        CUBLAS_CALL(cublasCgemmStridedBatched(h, CUBLAS_OP_T, CUBLAS_OP_N, m, P, nb, &one, A, nb, sA, coef, nb, 0,
                                              &zero, C, ldc, sC, rows));
    return STEM_OK;
}

/* How the output step forms its products, for the log. */
static const char *product_name(const out_ctx *c)
{
    if (c->op.direct) return "direct reduction";
    return c->gemm == STEM_GPU_GEMM_3M    ? "CGEMM3M"
        : c->gemm == STEM_GPU_GEMM_TF32   ? "CGEMM (TF32 tensor cores)"
        : c->gemm == STEM_GPU_GEMM_TF32X3 ? "split-operand GEMM (3xTF32 tensor cores)"
        : c->gemm == STEM_GPU_GEMM_FP16X3 ? "split-operand GEMM (3xFP16 tensor cores)"
        : c->gemm == STEM_GPU_GEMM_FP64   ? "ZGEMM on FP64 copies (the reference)"
                                          : "CGEMM";
}

/* sum_b coef[p][b] S[pixel][b] for every pixel of the tile region and every probe of the tile:
 * out[row][p][col] = S_row^T(col, b) coef(b, p), one strided batch over the region's rows per
 * piece of the region that does not wrap around the source grid. (cuBLAS runs widths that are
 * multiples of 64 faster per column, but cutting a piece into such a width and the rest is not
 * faster: gpu_kernel_check --bench, "output CGEMM", benchmarks/results/GPU_LIMITS.md.) */
int gpu_tile_product(cublasHandle_t h, int gemm, const gpu_split_form *f, const float2 *src, const void *ssrc, int W,
                     int H, int nb, int sx, int sy, const gpu_tile *tl, int P, const float2 *coef,
                     const void *coef_split, float2 *out, double *flops)
{
    gpu_gemm_piece pc[MAX_PIECES];
    int n = gpu_tile_pieces(W, H, nb, sx, sy, tl->w, tl->h, P, pc, MAX_PIECES);
    if (n < 0) return STEM_FAIL(STEM_ERR_INTERNAL, "tile region %d x %d wraps too often", tl->w, tl->h);
    int split = gpu_gemm_is_split(gemm);
    long long tw = tl->w;
    for (int k = 0; k < n; k++) {
        if (split) { /* out[row][col][p] */
            long long pix = pc[k].a_off / nb, row = pc[k].c_off / (P * tw), col = pc[k].c_off % (P * tw);
            const char *A = (const char *)ssrc + f->elem * f->parts * f->kb * pix;
            float *C = (float *)(out + (row * tw + col) * P);
            STEM_TRY(gpu_split_gemm(h, f, A, (long long)W * f->parts * f->kb, coef_split, C, pc[k].m, P, 2 * P * tw,
                                    pc[k].rows));
        } else {
            STEM_TRY(rows_gemm(h, gemm, nb, src + pc[k].a_off, coef, out + pc[k].c_off, pc[k].m, P, (long long)W * nb,
                               (int)tw, tw * P, pc[k].rows));
        }
        *flops += 8.0 * pc[k].m * P * nb * pc[k].rows;
    }
    return STEM_OK;
}

/* The tile's product on worker w's handle and buffers (ssrc: src split, for the split kinds). */
static int tile_gemm(out_ctx *c, out_worker *w, const float2 *src, const void *ssrc, int W, int H, int sx, int sy,
                     const gpu_tile *tl, int P)
{
    return gpu_tile_product(w->blas, c->gemm, &c->split, src, ssrc, W, H, c->plan->n_beams, sx, sy, tl, P, w->coef,
                            w->coef_split, w->out, &w->flops);
}

static int out_flush(out_ctx *c, out_worker *w, int s, int slot)
{
    if (w->pending[s] < 0) return STEM_OK;
    const gpu_tile *tl = &c->op.tiling.tile[w->pending[s]];
    CUDA_CALL(cudaEventSynchronize(w->done[s]));
    if (w->gemm_pending[s] > 0) {
        float ms = 0;
        CUDA_CALL(cudaEventElapsedTime(&ms, w->gemm_ev[s][0], w->gemm_ev[s][1]));
        w->gemm_s += 1e-3 * ms;
        w->gemm_flops += w->gemm_pending[s];
        w->gemm_pending[s] = 0;
    }
    gpu_det_accumulate(&c->det[slot], w->hres[s], w->hcbed[s], (int)(tl->p1 - tl->p0), c->op.tiling.local + tl->p0, 0,
                       c->res);
    w->pending[s] = -1;
    return STEM_OK;
}

/* One tile: src is the S-matrix (W x H pixels, beam fastest; ssrc the same split, for the split
 * kinds) and (sx, sy) the tile region's origin in it. */
static int out_tile(out_ctx *c, out_worker *w, int slot, int t, const float2 *src, const void *ssrc, int W, int H,
                    int sx, int sy)
{
    const stem_plan *plan = c->plan;
    const gpu_tile *tl = &c->op.tiling.tile[t];
    const gpu_probe *pr = c->probes[slot] + tl->p0;
    const gpu_det *det = &c->det[slot];
    int P = (int)(tl->p1 - tl->p0), nb = plan->n_beams, wx = plan->out_nx, wy = plan->out_ny, win = wx * wy;
    int s = w->next;
    w->next ^= 1;
    STEM_TRY(out_flush(c, w, s, slot));
    STEM_TRY(gpu_beam_coefficients(w->coef, pr, c->beam_q[slot], nb, P, w->stream));
    double region = (double)tl->w * tl->h;
    if (c->op.direct) {
        STEM_TRY(gpu_direct_windows(w->win, src, W, H, nb, sx, sy, pr, tl, w->coef, P, wx, wy, w->stream));
        w->flops += 8.0 * P * win * nb;
        w->s_bytes += 8.0 * P * win * nb;
        w->dram += 8.0 * region * nb;
    } else {
        double f0 = w->flops;
        CUDA_CALL(cudaEventRecord(w->gemm_ev[s][0], w->stream));
        if (w->coef_split) STEM_TRY(gpu_split_coefficients(&c->split, w->coef_split, w->coef, P, w->stream));
        STEM_TRY(tile_gemm(c, w, src, ssrc, W, H, sx, sy, tl, P));
        CUDA_CALL(cudaEventRecord(w->gemm_ev[s][1], w->stream));
        w->gemm_pending[s] = w->flops - f0;
        w->last.src = src, w->last.ssrc = ssrc, w->last.W = W, w->last.H = H, w->last.sx = sx, w->last.sy = sy;
        w->last.t = t, w->last.P = P;
        STEM_TRY(gpu_gather_windows(w->win, w->out, pr, P, tl, wx, wy, w->coef_split != NULL, w->stream));
        w->s_bytes += 8.0 * region * nb;
        w->dram += 8.0 * region * nb + 8.0 * region * P + 8.0 * P * win;
    }
    /* coefficients (write, read), windows (write), FFT (read, write), detector (read), 4D (write) */
    w->dram += 16.0 * P * nb + 8.0 * P * win * 4 + (det->has_4d ? 4.0 * P * win : 0);
    CUFFT_CALL(cufftExecC2C(w->fft, w->win, w->win, CUFFT_FORWARD));
    float scale = 1.0f / ((float)win * (float)win);
    STEM_TRY(gpu_det_run(det, w->win, (size_t)win, NULL, scale, P, w->dres[s], w->dcbed[s], w->dwork, c->dev.sm_count,
                         w->stream));
    CUDA_CALL(
        cudaMemcpyAsync(w->hres[s], w->dres[s], sizeof(double) * det->stride * P, cudaMemcpyDeviceToHost, w->stream));
    if (det->has_4d)
        CUDA_CALL(
            cudaMemcpyAsync(w->hcbed[s], w->dcbed[s], sizeof(float) * win * P, cudaMemcpyDeviceToHost, w->stream));
    CUDA_CALL(cudaEventRecord(w->done[s], w->stream));
    w->pending[s] = t;
    return STEM_OK;
}

static int out_setup(void *ctx, int w) { return gpu_use_worker_device(&((out_ctx *)ctx)->dev, w); }

static int out_work(void *ctx, int wi, long u0, long u1)
{
    out_ctx *c = (out_ctx *)ctx;
    const stem_plan *plan = c->plan;
    const gpu_tiling *t = &c->op.tiling;
    out_worker *w = &c->w[wi];
    int slot = gpu_worker_slot(&c->dev, wi), nb = plan->n_beams;
    for (long u = u0; u < u1; u++) {
        const gpu_unit *un = &t->unit[u];
        if (c->op.streaming) { /* this unit's window of the S-matrix, wrapped, packed beam-fastest */
            gpu_copy_piece pc[MAX_PIECES];
            int n = gpu_unit_pieces(plan, un, pc, MAX_PIECES);
            if (n < 0) return STEM_FAIL(STEM_ERR_INTERNAL, "unit region %d x %d wraps too often", un->w, un->h);
            for (int k = 0; k < n; k++)
                CUDA_CALL(cudaMemcpy2DAsync(w->region + pc[k].dst_off, sizeof(float2) * nb * un->w,
                                            c->S + pc[k].src_off, sizeof(float2) * nb * plan->crop_nx,
                                            sizeof(float2) * nb * pc[k].px, pc[k].rows, cudaMemcpyHostToDevice,
                                            w->stream));
            w->h2d += 8.0 * nb * un->w * un->h;
            if (w->region_split)
                STEM_TRY(gpu_split_smatrix(&c->split, w->region_split, w->region, (size_t)un->w * un->h, w->stream));
            for (int k = un->t0; k < un->t1; k++)
                STEM_TRY(out_tile(c, w, slot, k, w->region, w->region_split, un->w, un->h, t->tile[k].x0 - un->x0,
                                  t->tile[k].y0 - un->y0));
        } else {
            for (int k = un->t0; k < un->t1; k++)
                STEM_TRY(out_tile(c, w, slot, k, c->S_dev[slot], c->S_split[slot], plan->crop_nx, plan->crop_ny,
                                  t->tile[k].x0, t->tile[k].y0));
        }
    }
    STEM_TRY(out_flush(c, w, w->next, slot)); /* the older one first */
    STEM_TRY(out_flush(c, w, w->next ^ 1, slot));
    return STEM_OK;
}

static void out_release(out_ctx *c)
{
    gpu_workers_free(&c->dev, sizeof(out_worker), c->w, out_worker_free);
    for (int g = 0; g < c->dev.n_gpus; g++) {
        gpu_use_device_quietly(&c->dev, g);
        if (c->S_owned[g]) gpu_free(c->S_dev[g]);
        gpu_free(c->S_split[g]);
        gpu_free(c->probes[g]);
        gpu_free(c->beam_q[g]);
        gpu_det_free(&c->det[g]);
    }
    gpu_out_plan_free(&c->op);
}

void gpu_output_cache_free(gpu_engine_state *st)
{
    if (!st->out) return;
    out_release(st->out);
    free(st->out);
    st->out = NULL;
}

/* Everything that does not depend on the configuration: plan and tiles, probe positions,
 * beam table, detector, workers. Kept when it fits beside the S-matrix step's context. */
static int out_create(out_ctx *c, const stem_engine *e, const stem_plan *plan, const stem_detector *det)
{
    c->plan = plan;
    c->probe_begin = plan->probe_begin;
    c->probe_end = plan->probe_end;
    c->det_tables = det;
    c->dev = *gpu_engine_devices(e);
    int err = gpu_out_plan_build(plan, &c->dev, 0, &c->op);
    c->gemm = c->op.gemm;
    if (gpu_gemm_is_split(c->gemm)) gpu_split_form_init(&c->split, c->gemm, plan->n_beams, plan->opt.gpu_gemm_steps);
    gpu_prop_plan pp;
    if (!err) err = gpu_prop_plan_build(plan, &c->dev, 1, 0, &pp);
    double S_bytes = 8.0 * plan->n_beams * plan->crop_nx * plan->crop_ny;
    if (!err) c->keep = pp.bytes_total + c->op.bytes_total + 2 * S_bytes <= c->dev.usable_bytes;
    for (int g = 0; !err && g < c->dev.n_gpus; g++) {
        err = gpu_use_device(&c->dev, g);
        if (!err) err = out_shared_create(c, g);
        if (!err) err = gpu_det_create(plan, det, 0, &c->det[g]);
    }
    if (!err) err = gpu_workers_create(&c->dev, sizeof(out_worker), (void **)&c->w, out_worker_create, c);
    return err;
}

/* [debug] gpu_gemm_check: worker 0's last tile's CGEMMs again, alone on the GPU (the other
 * streams idle), repeated: the rate the same shapes reach in isolation (TFLOP/s), to set
 * against the rate inside the output step. Streaming mode's region buffer still holds that
 * tile's unit, the single-transfer S-matrix is still bound: the same inputs. */
static double gemm_isolated_rate(out_ctx *c)
{
    out_worker *w = &c->w[0];
    if (c->op.direct || !w->last.src || cudaSetDevice(c->dev.ids[0]) != cudaSuccess) return 0;
    const gpu_tile *tl = &c->op.tiling.tile[w->last.t];
    double f0 = w->flops, t = 0;
    const int reps = 20;
    for (int r = 0; r < reps + 1; r++) {
        if (r == 1) { /* the first call warms up */
            if (cudaStreamSynchronize(w->stream) != cudaSuccess) return 0;
            f0 = w->flops;
            t = stem_wall_time();
        }
        if (tile_gemm(c, w, w->last.src, w->last.ssrc, w->last.W, w->last.H, w->last.sx, w->last.sy, tl, w->last.P))
            return 0;
    }
    if (cudaStreamSynchronize(w->stream) != cudaSuccess) return 0;
    t = stem_wall_time() - t;
    double rate = (w->flops - f0) / t / 1e12;
    w->flops = f0;
    return rate;
}

/* The engine's output context for this plan, rank share and detector: kept from the last
 * configuration or made (*fresh). */
static int output_context(const stem_engine *e, const stem_plan *plan, const stem_detector *det, int *fresh)
{
    gpu_engine_state *st = gpu_engine_state_of(e);
    *fresh = 0;
    if (st->out &&
        (st->out->plan != plan || st->out->det_tables != det || st->out->probe_begin != plan->probe_begin ||
         st->out->probe_end != plan->probe_end))
        gpu_output_cache_free(st);
    if (st->out) return STEM_OK;
    st->out = (out_ctx *)stem_calloc(1, sizeof(out_ctx), "GPU PRISM output context");
    if (!st->out) return STEM_ERR_MEMORY;
    *fresh = 1;
    int err = out_create(st->out, e, plan, det);
    if (err) gpu_output_cache_free(st);
    return err;
}

/* -v: the step's rates over its workers (t1 - t0: set-up and upload, dt: the tiles), and the
 * CGEMMs' own rate where they were timed. */
static void log_output_rates(out_ctx *c, const stem_plan *plan, int fresh, double t0, double t1, double t2)
{
    double flops = 0, sb = 0, dram = 0, h2d = 0, dt = t2 - t1, gemm_flops = 0, gemm_s = 0;
    long n = c->op.tiling.n_local;
    for (int i = 0; i < c->dev.workers; i++) {
        gemm_flops += c->w[i].gemm_flops;
        gemm_s += c->w[i].gemm_s;
        c->w[i].gemm_flops = c->w[i].gemm_s = 0;
        flops += c->w[i].flops;
        sb += c->w[i].s_bytes;
        dram += c->w[i].dram;
        h2d += c->w[i].h2d;
    }
    stem_info("gpu PRISM output: %ld probes on %d GPU(s) x %d stream(s), %s, %s, tiles of %d x %d (%d): %.3f s compute "
              "(%.2f us per probe), %.3f s %s; %s %.1f GFLOP (%.2f TFLOP/s), S-matrix reads %.2f GB, "
              "device memory traffic (lower bound) %.2f GB = %.1f GB/s, host-to-device %.2f GB = %.1f GB/s",
              n, c->dev.n_gpus, c->dev.streams, c->op.streaming ? "streaming" : "single-transfer", product_name(c),
              c->op.tiling.T, c->op.tiling.T, c->op.tiling.n_tiles, dt, 1e6 * dt / n, t1 - t0,
              fresh ? "setup and upload" : "upload (tiles, tables and workers kept from the first configuration)",
              c->op.direct ? "reduction" : "GEMM", flops / 1e9, flops / dt / 1e12, sb / 1e9, dram / 1e9,
              dram / dt / 1e9, h2d / 1e9, h2d / dt / 1e9);
    if (gemm_s <= 0) return; /* timed on each stream: with several per GPU, its intervals hold the others' kernels */
    double in_step = gemm_flops / gemm_s / 1e12;
    double alone = plan->opt.gpu_gemm_check ? gemm_isolated_rate(c) : 0;
    char iso[128] = "";
    if (alone > 0)
        snprintf(iso, sizeof iso, "; the last tile's CGEMMs alone: %.2f TFLOP/s (in the step %.0f%% of that)", alone,
                 100 * in_step / alone);
    stem_info("gpu PRISM output: CGEMMs %.3f s summed over %d stream(s) (with several streams per GPU the "
              "intervals overlap): %.2f TFLOP/s per stream%s",
              gemm_s, c->dev.workers, in_step, iso);
}

static int output_run(const stem_engine *e, const stem_plan *plan, const stem_complex *S, const float2 *const *S_given,
                      const stem_detector *det, stem_result *res)
{
    gpu_engine_state *st = gpu_engine_state_of(e);
    double t0 = stem_wall_time();
    int fresh;
    STEM_TRY(output_context(e, plan, det, &fresh));
    out_ctx *c = st->out;
    c->res = res;
    int pinned = 0, err = STEM_OK;
    size_t S_bytes = sizeof(stem_complex) * plan->n_beams * plan->crop_nx * plan->crop_ny;
    if (S_given && c->op.streaming)
        err = STEM_FAIL(STEM_ERR_INTERNAL, "S-matrix in device memory needs single-transfer mode");
    if (!err) err = out_bind_smatrix(c, S, S_given);
    if (!err && c->op.streaming) gpu_pin(S, S_bytes, &pinned, "S-matrix");
    for (int i = 0; i < c->dev.workers; i++) c->w[i].flops = c->w[i].s_bytes = c->w[i].dram = c->w[i].h2d = 0;
    double t1 = stem_wall_time();
    stem_work work = {c, out_setup, out_work, NULL};
    int per_batch = c->op.streaming ? 1 : 4;
    if (!err) err = stem_dispatch(&work, c->op.tiling.n_units, per_batch, c->dev.workers, "GPU PRISM output");
    if (!err && c->op.tiling.n_local > 0) log_output_rates(c, plan, fresh, t0, t1, stem_wall_time());
    gpu_unpin(S, pinned);
    if (err || !c->keep)
        gpu_output_cache_free(st);
    else if (S_given) /* the caller frees its copies: forget them */
        for (int g = 0; g < c->dev.n_gpus; g++) c->S_dev[g] = NULL;
    gpu_use_device_quietly(&c->dev, 0);
    return err;
}

int gpu_prism_output_from_host(const stem_engine *e, const stem_plan *plan, const stem_complex *S,
                               const stem_detector *det, stem_result *res)
{
    return output_run(e, plan, S, NULL, det, res);
}

int gpu_prism_output_from_device(const stem_engine *e, const stem_plan *plan, const float2 *const *S_dev,
                                 const stem_detector *det, stem_result *res)
{
    return output_run(e, plan, NULL, S_dev, det, res);
}
