/* Internal interfaces between the GPU engine's .cu files. */
#ifndef STEM_GPU_INTERNAL_CUH
#define STEM_GPU_INTERNAL_CUH

#include <pthread.h>

#include "gpu_common.cuh"
#include "gpu_fft_callbacks.h"

#define GPU_MAX_DEVICES 64

/* ---- devices (gpu_device.cu) ------------------------------------------- */

typedef struct {
    int n_gpus, streams, workers; /* workers = n_gpus * streams: one host thread per stream */
    int ids[GPU_MAX_DEVICES];
    int sharing;                    /* ranks of this node that share each GPU */
    int peer;                       /* every pair of this rank's GPUs has direct peer access */
    double free_bytes, total_bytes; /* smallest over this rank's GPUs */
    double usable_bytes;            /* what one rank may plan to use on each GPU */
    int sm_count;
    char name[256];
} gpu_devices;

/* Usable GPUs visible to this process, and why none can be used (the provider's entries). */
extern "C" int stem_gpu_count(void);
extern "C" const char *stem_gpu_unavailable_reason(void);
extern "C" void stem_gpu_warm_up(int start);
/* This rank's GPUs from [compute] gpus_per_rank / streams_per_gpu and the node-local rank. */
int gpu_devices_select(const stem_plan *plan, gpu_devices *d);
/* Worker w drives GPU slot w % n_gpus (so every GPU gets work first). */
static inline int gpu_worker_slot(const gpu_devices *d, int w) { return w % d->n_gpus; }
/* GPU slot g current on this thread: a failure reported (set-up), or ignored and cleared
 * (teardown, which goes on freeing what it can). */
int gpu_use_device(const gpu_devices *d, int g);
void gpu_use_device_quietly(const gpu_devices *d, int g);
/* Worker w's GPU current: a dispatcher thread's set-up (stem_work.setup). */
int gpu_use_worker_device(const gpu_devices *d, int w);
/* d->workers workers of size bytes each in a zeroed array (*workers), each made on its
 * slot's GPU by create(ctx, worker); on an error the caller frees with gpu_workers_free. */
int gpu_workers_create(const gpu_devices *d, size_t size, void **workers, int (*create)(void *ctx, void *worker),
                       void *ctx);
/* Each worker freed by destroy(worker) on its slot's GPU (errors ignored), then the array. */
void gpu_workers_free(const gpu_devices *d, size_t size, void *workers, void (*destroy)(void *worker));
/* Page-lock host memory for async copies; *pinned says whether it worked (pageable copies still work). */
void gpu_pin(const void *p, size_t bytes, int *pinned, const char *what);
void gpu_unpin(const void *p, int pinned);

/* ---- propagation through the slices (gpu_propagate.cu) ------------------ */

/* The last configuration's transmission functions, left on the first GPU after their copy to
 * the host buffer `host` (gpu_potential.cu): the step that uploads that buffer next copies them
 * device to device instead. Valid from a build's end to the next build's start; the lock
 * orders a build ahead on a helper thread against that copy. One per engine (its state). */
typedef struct {
    pthread_mutex_t lock;
    const stem_complex *host;
    const float2 *dev;
    size_t bytes;
    int device;
} gpu_kept_trans;

typedef struct {
    gpu_kept_trans *kept; /* the engine's kept transmission functions (NULL: always from the host) */
    int smatrix;          /* plane waves of the S-matrix (1) or multislice probes (0) */
    int batch;            /* waves per worker batch */
    int streaming;        /* transmission functions streamed slice by slice */
    long n_items;         /* this rank's probes or plane waves */
    double bytes_shared, bytes_worker, bytes_total; /* per GPU */
} gpu_prop_plan;

/* Batch and memory mode for multislice (smatrix = 0) or the S-matrix (1); verbose prints the estimate. */
int gpu_prop_plan_build(const stem_plan *plan, const gpu_devices *d, int smatrix, int verbose, gpu_prop_plan *pp);

/* Read-only data on one GPU. */
typedef struct {
    float2 *trans;     /* single-transfer: every slice */
    float2 *prop;      /* propagator, 1/N folded in */
    float2 *prop_last; /* the thinner last slice's (plan.h; NULL: prop) */
    float2 *prop_cols; /* prop transposed ([nx][ny]) for the cuFFTDx column pass (NULL: not used) */
    int n_ap;          /* probe aperture pixels (multislice) */
    int *ap_index;
    double *ap_q;     /* [n_ap][4]: qx, qy, chi, aperture weight / root of the sum of their squares */
    double *probe_xy; /* [scan] positions: [n_probes][2] (NULL: the scan grid) */
    int *beam_k;      /* [n_beams][2]: kx, ky (S-matrix) */
} gpu_prop_shared;

/* ---- fused slices (gpu_fused_slice.cu) ----------------------------------- */

#define GPU_FUSED_MAX_N 4096            /* longest side the fused kernels take */
#define GPU_FUSED_MAX_SMEM (227 * 1024) /* shared memory a block may have (Hopper) */
#define GPU_FFT_MAX_RADICES 16
enum { GPU_FFT_NONE = 0, GPU_FFT_FORWARD = 1, GPU_FFT_INVERSE = 2 };

typedef struct {
    int ns, stride;        /* product of the radices before; n / (ns radix) */
    unsigned magic, shift; /* j / ns as gpu_fft_divide's multiply-high */
} gpu_fft_stage;

typedef struct {
    int n, n_radix;
    int radix[GPU_FFT_MAX_RADICES]; /* 16, 8, 7, 5, 4, 3 or 2, applied in this order */
    gpu_fft_stage stage[GPU_FFT_MAX_RADICES];
} gpu_fft_factors;

typedef struct {
    int nx, ny;
    gpu_fft_factors fx, fy;
    int rows, row_threads;     /* rows per block of the row pass, threads along each */
    int cols, col_threads;     /* columns per tile of the column pass, threads down each */
    size_t row_smem, col_smem; /* bytes of shared memory per block */
    float2 *tw_x, *tw_y;       /* exp(-2 pi i m / n) for m < nx, ny */
    int dx;                    /* both sides compiled as cuFFTDx kernels (gpu_dx_slice.cu): those run */
} gpu_fused_slice;

/* Whether the fused kernels cover an nx x ny grid (then fs planned), and what does the
 * transforms in words (why); dx_only: only the cuFFTDx kernels ([compute] gpu_slices = auto). */
int gpu_fused_plan(int nx, int ny, int dx_only, gpu_fused_slice *fs, char *why, size_t why_len);
/* The twiddle tables of a planned fs on the current GPU (the cuFFTDx kernels: their shared-memory opt-in). */
int gpu_fused_create(gpu_fused_slice *fs);
void gpu_fused_free(gpu_fused_slice *fs);
/* What runs a plan's slices, in words (--dry-run): as the workers will choose. */
void gpu_slices_describe(const stem_plan *plan, char *why, size_t len);
/* Whether gpu_fused_plan would take the cuFFTDx kernels for nx x ny (then the column pass
 * wants its multiply's grid transposed as well: gpu_fused_cols). */
int gpu_fused_uses_dx(int nx, int ny);
/* One pass over each row (columns) of batch waves: the transform first (GPU_FFT_NONE or
 * a direction), the multiply by tab[ny][nx] (NULL: none), the transform then; unnormalised.
 * The column pass of the cuFFTDx kernels reads the same grid transposed, tab_t[nx][ny]. */
int gpu_fused_rows(const gpu_fused_slice *fs, float2 *waves, int batch, int first, const float2 *tab, int then,
                   cudaStream_t s);
int gpu_fused_cols(const gpu_fused_slice *fs, float2 *waves, int batch, int first, const float2 *tab,
                   const float2 *tab_t, int then, cudaStream_t s);

/* The same passes as cuFFTDx kernels of compile-time sizes (gpu_dx_slice.cu): whether n
 * is one of them (0 in a build without MathDx), their shared-memory opt-in on the current GPU
 * (once per worker, before its first pass), then the passes over an nx x ny batch. */
int gpu_dx_covers(int n);
int gpu_dx_prepare(int nx, int ny);
int gpu_dx_rows(int nx, int ny, float2 *waves, int batch, int first, const float2 *tab, int then, cudaStream_t s);
int gpu_dx_cols(int nx, int ny, float2 *waves, int batch, int first, const float2 *tab_t, int then, cudaStream_t s);

/* One stream's workspace. */
typedef struct {
    cudaStream_t stream, copy;
    cudaEvent_t ready[2], freed[2];
    float2 *slice[2]; /* streaming: double-buffered slices */
    float2 *waves;    /* batch x ny x nx */
    cufftHandle fft;  /* plain batched C2C, both directions */
    /* [compute] fft_callbacks: a forward plan multiplying by the slice's transmission
     * function and an inverse plan multiplying by the propagator as cuFFT loads the waves */
    cufftHandle fft_t, fft_p;
    int fused;        /* fft_t and fft_p exist and gpu_propagate uses them */
    int slices_fused; /* [compute] gpu_slices: the slices in the kernels of fs */
    gpu_fused_slice fs;
    gpu_fft_load_factor *factors; /* device [2]: the two plans' callback data */
    void *fft_work;               /* the plans' shared work area (they run on one stream) */
    char fft_note[200];           /* how the multiplies are done, for the log */
    int has_fft, has_streams;
} gpu_prop_worker;

int gpu_prop_shared_create(const stem_plan *plan, const gpu_prop_plan *pp, const stem_complex *trans,
                           gpu_prop_shared *sh);
/* Its first step alone: the propagators (sh->prop, sh->prop_last), built on the host and uploaded. */
int gpu_prop_upload_propagators(const stem_plan *plan, gpu_prop_shared *sh);
/* Single-transfer mode: copy this configuration's transmission functions into sh->trans. */
int gpu_prop_shared_upload_trans(const stem_plan *plan, const gpu_prop_plan *pp, const stem_complex *trans,
                                 gpu_prop_shared *sh);
/* The same on each of the rank's GPUs (sh[g] on GPU d->ids[g]): create the read-only
 * tables, or (the engine keeps them across configurations) upload only trans. */
int gpu_prop_shared_create_each(const stem_plan *plan, const gpu_devices *d, const gpu_prop_plan *pp,
                                const stem_complex *trans, gpu_prop_shared *sh);
int gpu_prop_shared_upload_each(const stem_plan *plan, const gpu_devices *d, const gpu_prop_plan *pp,
                                const stem_complex *trans, gpu_prop_shared *sh);
void gpu_prop_shared_free(gpu_prop_shared *sh);
int gpu_prop_worker_create(const stem_plan *plan, const gpu_prop_plan *pp, gpu_prop_worker *w);
void gpu_prop_worker_free(gpu_prop_worker *w);
/* Probes [g0, g0 + n) (global indices) into the batch, in real space. */
int gpu_probes_build(const stem_plan *plan, const gpu_prop_plan *pp, const gpu_prop_shared *sh, gpu_prop_worker *w,
                     long g0, int n);
/* Plane waves of beams [b0, b0 + n) into the batch, in real space. */
int gpu_plane_waves_build(const stem_plan *plan, const gpu_prop_plan *pp, const gpu_prop_shared *sh, gpu_prop_worker *w,
                          int b0, int n);
/* The propagator the consumer applies after slice below - 1 (the last slice may be thinner). */
static inline const float2 *gpu_prop_after(const stem_plan *plan, const gpu_prop_shared *sh, int below)
{
    return below == plan->n_slices && sh->prop_last ? sh->prop_last : sh->prop;
}
/* Slices [from, to): transmission, FFT, propagator, inverse FFT. On return the batch is in
 * Fourier space after slice to - 1's forward FFT; the last propagator is applied by the
 * consumer. from > 0 continues from where a call ending at `from` left the batch. */
int gpu_propagate(const stem_plan *plan, const gpu_prop_plan *pp, const gpu_prop_shared *sh,
                  const stem_complex *host_trans, gpu_prop_worker *w, int from, int to);
/* The single kernels of the steps above, launched on stream s; separate so that
 * tests/gpu/kernel_check.cu checks each against its plain-C reference.
 * gpu_probes_build's first step: the probes' coefficients on the aperture pixels
 * of n waves (the other pixels are left as they are). */
int gpu_probe_coefficients(const stem_plan *plan, const gpu_prop_shared *sh, float2 *waves, long g0, int n,
                           cudaStream_t s);
/* waves[b][k] *= t[k] for b < batch (transmission function or propagator). */
int gpu_mul_bcast(float2 *waves, const float2 *t, size_t grid, int batch, cudaStream_t s);
/* S-matrix: cut the Fourier box (times the propagator after slice below - 1, gpu_prop_after)
 * out of n waves that gpu_propagate took through `below` slices (a detection plane). */
int gpu_crop_box(const stem_plan *plan, const gpu_prop_shared *sh, const float2 *waves, float2 *box, int n, int below,
                 cudaStream_t s);

/* ---- detectors (gpu_detector.cu) ---------------------------------------- */

typedef struct {
    int n_pix, n_bins, n_images, ox, oy;
    int n_seg;        /* segmented detector values per probe (0: none) */
    int stride;       /* doubles per probe: rings, images, total, com x, com y, segments */
    int has_4d;       /* patterns come back to the host: 4D output or PACBED */
    int *pattern_bin; /* host: bin of the written pattern of each centred pixel, -1 none */
    int *bin, *src;   /* src: full-grid pixel of each detector pixel (multislice) or NULL */
    int *seg;         /* segment of each pixel, -1 none (NULL without segments) */
    uint32_t *mask;
    float *theta;     /* [n_pix][2] */
    int fixed_order;  /* [compute] gpu_deterministic: sums in an order fixed by the plan */
    int tiles, warps; /* fixed order: pixel tiles per probe, warps per block */
} gpu_det;

int gpu_det_create(const stem_plan *plan, const stem_detector *det, int gather_full_grid, gpu_det *g);
void gpu_det_free(gpu_det *g);
size_t gpu_det_bytes(const stem_plan *plan, int gather_full_grid);
size_t gpu_det_result_bytes(const stem_plan *plan, int n); /* device + pinned host per slot */
/* Device work area of gpu_det_run for n probes (per stream; 0 without [compute] gpu_deterministic). */
size_t gpu_det_work_bytes(const stem_plan *plan, int n);
/* Intensities |w * prop|^2 * scale of n waves (stride complex numbers apart) binned into
 * dres[n][stride] and, with 4D output, written centred into dcbed[n][oy][ox]. With
 * fixed_order every sum has an order fixed by the plan (tiles of DET_TILE pixels,
 * partial sums in dwork, gpu_det_work_bytes), so a probe's record is the same bits
 * whatever the batch, its place in it, the launch or the run; else float atomics. */
int gpu_det_run(const gpu_det *g, const float2 *waves, size_t wave_stride, const float2 *prop, float scale, int n,
                double *dres, float *dcbed, float *dwork, int sm_count, cudaStream_t s);
/* Add n probes' results to the rank's result: local probe local[i] (or begin + i; local[i] < 0: none). */
void gpu_det_accumulate(const gpu_det *g, const double *hres, const float *hcbed, int n, const long *local, long begin,
                        stem_result *res);

/* ---- PRISM output tiling (gpu_tiles.cu, host only) ---------------------- */

typedef struct {
    double x, y; /* Angstrom */
    int ox, oy;  /* window origin on the S-matrix grid (unwrapped) */
} gpu_probe;     /* same layout on host and device: uploaded as it is */

typedef struct {
    long p0, p1;      /* probes [p0, p1) of the processing order */
    int x0, y0, w, h; /* union of the windows (unwrapped) */
} gpu_tile;

typedef struct {
    int t0, t1;       /* tiles [t0, t1) */
    int x0, y0, w, h; /* union of the tiles' regions (streaming upload) */
} gpu_unit;

typedef struct {
    int T, U;         /* tiles of T x T probes, units of U x U tiles */
    long n_probes;    /* probes processed: the rank's, and with whole tiles their tiles' others */
    long n_local;     /* the rank's probes */
    gpu_probe *probe; /* in processing order */
    long *local;      /* local probe index of each, in processing order; -1: another rank's (whole tiles) */
    long *global;     /* global probe index of each */
    int n_tiles, n_units;
    gpu_tile *tile;
    gpu_unit *unit;
    int max_p;       /* most probes in a tile */
    size_t max_out;  /* largest w * h * P over tiles (complex numbers) */
    size_t max_unit; /* largest w * h over units (pixels) */
} gpu_tiling;

typedef struct {
    long src, dst, len;
} gpu_seg;

/* Split [start, start + len) modulo period into contiguous pieces; returns their count (-1: more than max_seg). */
int gpu_segments(long start, long len, long period, gpu_seg *seg, int max_seg);

/* One strided-batched product of a tile: source rows start at a_off (complex numbers; row stride W * nb),
 * output at c_off (row stride tw * P, leading dimension tw); m pixels per row, rows rows. */
typedef struct {
    long a_off, c_off;
    int m, rows;
} gpu_gemm_piece;
/* Pieces of a tw x th region at (sx, sy) of a W x H source (wrapping); returns their count or -1. */
int gpu_tile_pieces(int W, int H, int nb, int sx, int sy, int tw, int th, int P, gpu_gemm_piece *pc, int max_pc);

/* One 2D copy of a streaming unit: rows of width px pixels from src_off (pitch crop_nx * nb) to dst_off (pitch w * nb). */
typedef struct {
    long dst_off, src_off;
    int px, rows;
} gpu_copy_piece;
int gpu_unit_pieces(const stem_plan *plan, const gpu_unit *un, gpu_copy_piece *pc, int max_pc);
/* The rank's probes in tiles and units. With [compute] gpu_deterministic, a tile that the
 * rank's share of the scan cuts is taken whole (its other probes computed and dropped), so
 * that every rank count makes the same matrix products, whose bits cuBLAS promises only
 * for the same call. */
int gpu_tiling_build(const stem_plan *plan, int T, int U, gpu_tiling *t);
void gpu_tiling_free(gpu_tiling *t);
/* Tile edge T (probes) from a cost model of the batched matrix product; out_cap bounds the product's output. */
int gpu_tile_choose(const stem_plan *plan, double out_cap_bytes);
/* Upper bound of a unit's region (pixels) for tiles T and units U. */
double gpu_unit_pixels(const stem_plan *plan, int T, int U);
double gpu_tile_out_bytes(const stem_plan *plan, int T);
/* Probes in a whole tile of edge T (T x T, or fewer where the scan is narrower). */
int gpu_tile_probes(const stem_plan *plan, int T);
/* [compute] gpu_deterministic: each cuBLAS handle's own workspace (cuBLAS's recommended 32 MiB on Hopper) */
#define GPU_BLAS_WORKSPACE ((size_t)32 << 20)

/* ---- PRISM output plan (gpu_output.cu) ---------------------------------- */

typedef struct {
    int streaming, direct;
    int gemm; /* the product's kind (stem_gpu_gemm): [debug] gpu_gemm, auto resolved */
    gpu_tiling tiling;
    double bytes_shared, bytes_worker, bytes_total;
} gpu_out_plan;

int gpu_out_plan_build(const stem_plan *plan, const gpu_devices *d, int verbose, gpu_out_plan *op);
/* Probes per window FFT (and per buffer): the rank's largest tile, or with [compute]
 * gpu_deterministic a whole tile whatever the rank's share of the scan, so that every
 * rank count meets the same cuFFT plan. */
int gpu_out_window_batch(const stem_plan *plan, const gpu_tiling *t);
void gpu_out_plan_free(gpu_out_plan *op);
/* The output step's kernels for the P probes pr of tile tl, launched on stream s; separate
 * so that tests/gpu/kernel_check.cu checks each against its plain-C reference.
 * coef[p][b]: beam coefficients from beam_q[nb][4] (gpu_beam_table), normalised to sum |c|^2 = 1. */
/* The beam table: qx, qy, chi and the aperture's weight over the root of the sum of their squares. */
void gpu_beam_table(const stem_plan *plan, double *bq);
int gpu_beam_coefficients(float2 *coef, const gpu_probe *pr, const double *beam_q, int nb, int P, cudaStream_t s);
/* win[p][wy][wx] cut from the tile product's output out[tl->h][P][tl->w], or with probes_inner
 * (the split products) out[tl->h][tl->w][P]. */
int gpu_gather_windows(float2 *win, const float2 *out, const gpu_probe *pr, int P, const gpu_tile *tl, int wx, int wy,
                       int probes_inner, cudaStream_t s);

/* ---- split-operand products of the PRISM output (gpu_split_gemm.cu) ------------------------
 * [debug] gpu_gemm = tf32x3 / fp16x3. The complex product C(col, p) = sum_b S(b, col) c(b, p) as
 * one real GEMM on the tensor cores: S's 2 nb floats per pixel (re, im interleaved) against 2 P
 * real columns built from the coefficients (column 2p gives Re C, 2p + 1 Im C). Each FP32 value x
 * is split into hi = round(x) and lo = round(x - hi) (TF32 or FP16) and K is tripled: S as
 * [hi | lo | hi] per pixel against the coefficients' [hi ; hi ; lo], so that one call sums
 * hi*hi + lo*hi + hi*lo; the dropped lo*lo is ~2^-22 of the product. The tensor cores' own
 * sums along K round toward zero, though, and the loss grows with the sum's length: over the
 * paper case's whole K the products came out 1e-5 (FP16) to 2e-5 (TF32) small
 * (benchmarks/results/TF32X3.md). So the cross terms (lo*hi + hi*lo, 2^-11 of the product)
 * take one call, and hi*hi is cut into pieces of `chain` elements ([debug] gpu_gemm_steps
 * tensor-core steps), one call each, cuBLAS's epilogue adding each to the sum so far in FP32
 * with round-to-nearest (beta = 1). FP16 parts are scaled by powers of two (largest value at
 * most 2^14; undone in alpha). gpu_gemm = fp64 uses the same storage with one part: the FP64
 * copy, and ZGEMM. */
typedef struct {
    int fp16;               /* FP16 parts, else TF32 (in FP32 storage) */
    int fp64;               /* gpu_gemm = fp64: one part, the FP64 copy (kb = 2 nb), and ZGEMM */
    int parts;              /* parts per value: 3 (hi, lo, hi), or 1 (fp64) */
    int nb, kb;             /* beams; 2 nb rounded up to 8 elements: one part, 16-byte aligned */
    size_t elem;            /* bytes of one element of a part */
    float s_scale, c_scale; /* FP16: the powers of two applied to S and to the coefficients */
    int chain;              /* K elements of hi*hi per tensor-core sum (one GEMM call each); 0: the whole K */
} gpu_split_form;
/* gemm: STEM_GPU_GEMM_TF32X3, STEM_GPU_GEMM_FP16X3 or STEM_GPU_GEMM_FP64; steps: tensor-core steps per sum ([debug]
 * gpu_gemm_steps, 0: the whole K in one sum) */
void gpu_split_form_init(gpu_split_form *f, int gemm, int nb, int steps);
/* The kinds that read operands formed from the S-matrix and the coefficients (the split ones and fp64). */
int gpu_gemm_is_split(int gemm);
/* Bytes of the split S-matrix for n pixels, and of P probes' split coefficients. */
size_t gpu_split_smatrix_bytes(const gpu_split_form *f, size_t n);
size_t gpu_split_coef_bytes(const gpu_split_form *f, int P);
/* FP16: s_scale from the largest |re|, |im| of S (n pixels of nb beams), on the device (waits
 * for stream s) or on the host. TF32: nothing. */
int gpu_split_scale_device(gpu_split_form *f, const float2 *S, size_t n, cudaStream_t s);
void gpu_split_scale_host(gpu_split_form *f, const stem_complex *S, size_t n);
/* dst[pixel][3 kb] = [hi | lo | hi] of S[pixel][nb]; pads zero (fp64: dst[pixel][nb] as double2). */
int gpu_split_smatrix(const gpu_split_form *f, void *dst, const float2 *S, size_t pixels, cudaStream_t s);
/* dst[j][3 kb] = [hi ; hi ; lo] of the real column j = 2p + (0: real part, 1: imaginary part) of coef[p][nb]
 * (fp64: dst[p][nb] as double2). */
int gpu_split_coefficients(const gpu_split_form *f, void *dst, const float2 *coef, int P, cudaStream_t s);
/* C[col][j] (j < 2 P: probe j / 2's real or imaginary part, so C[col][p] as complex numbers) for
 * m columns from A (pixels 3 kb apart) and the split coefficients; rows products, sA elements
 * and sC floats apart. */
int gpu_split_gemm(cublasHandle_t h, const gpu_split_form *f, const void *A, long long sA, const void *coef, float *C,
                   int m, int P, long long sC, int rows);

/* The whole product of tile tl (P probes, nb beams) as the output step makes it with gemm
 * (stem_gpu_gemm): from src (the S-matrix, W x H pixels beam fastest, the region at (sx, sy),
 * wrapping) and coef[p][nb] into out[tl->h][P][tl->w]; split kinds read ssrc (src split) and
 * coef_split instead and write out[tl->h][tl->w][P] (gpu_gather_windows). Adds the FP32 flops
 * to *flops. */
int gpu_tile_product(cublasHandle_t h, int gemm, const gpu_split_form *f, const float2 *src, const void *ssrc, int W,
                     int H, int nb, int sx, int sy, const gpu_tile *tl, int P, const float2 *coef,
                     const void *coef_split, float2 *out, double *flops);
/* [debug] gpu_prism_output = direct: win[p][j][i] = sum_b coef[p][b] src[pixel][b], src W x H pixels
 * beam fastest with the tile region at (sx, sy), wrapping. */
int gpu_direct_windows(float2 *win, const float2 *src, int W, int H, int nb, int sx, int sy, const gpu_probe *pr,
                       const gpu_tile *tl, const float2 *coef, int P, int wx, int wy, cudaStream_t s);

/* ---- engine entry points ------------------------------------------------ */

int gpu_multislice_run(const stem_engine *e, const stem_plan *plan, const stem_complex *trans, const stem_detector *det,
                       stem_result *res);
int gpu_prism_smatrix(const stem_engine *e, const stem_plan *plan, const stem_complex *trans, int first, int count,
                      int opening, stem_complex *S_local);
/* The output step from the S-matrix gathered on the host beam fastest, the whole box (engine step
 * prism_output, gpu_prism.cu). */
int gpu_prism_output(const stem_engine *e, const stem_plan *plan, const stem_prism_view *S, const stem_detector *det,
                     stem_result *res);
/* The output step from a beam-fastest host S-matrix (single-transfer or streaming). */
int gpu_prism_output_from_host(const stem_engine *e, const stem_plan *plan, const stem_complex *S_by_pixel,
                               const stem_detector *det, stem_result *res);
/* The two steps with the S-matrix in device memory: the S-matrix step writes its beams beam
 * fastest, [box][beam], into S_dev on the rank's first GPU (its other GPUs write theirs there,
 * peer to peer); the output step reads the copy S_dev[g] on each GPU g. */
int gpu_prism_smatrix_to_device(const stem_engine *e, const stem_plan *plan, const stem_complex *trans, float2 *S_dev);
int gpu_prism_output_from_device(const stem_engine *e, const stem_plan *plan, const float2 *const *S_dev,
                                 const stem_detector *det, stem_result *res);
/* by_pixel[p][first + b] = boxes[b][p], b < n, on the current GPU in stream s (stem_prism_put_beams
 * over the whole box); not static so that tests/gpu/kernel_check.cu can check it. */
int gpu_prism_put_beams(float2 *by_pixel, const float2 *boxes, size_t box, int nb, int first, int n, cudaStream_t s);
/* gpu_prism.cu: the engine's prism_resident step. */
int gpu_prism_resident(const stem_engine *e, const stem_plan *plans, int n, const stem_complex *trans,
                       const stem_detector *det, stem_result *res);
/* What the GPU engine keeps from its creation to its destruction: the devices it
 * chose, and the multislice and S-matrix contexts (uploaded tables, detector,
 * cuFFT plans, workers), which do not depend on the frozen-phonon configuration. */
struct gpu_ms_ctx;
struct gpu_sm_ctx;
struct gpu_tr_ctx;
struct gpu_out_ctx;
struct gpu_hr_ctx;
typedef struct {
    gpu_devices dev;
    struct gpu_ms_ctx *ms;
    struct gpu_sm_ctx *sm;          /* the S-matrix step's context, kept the same way */
    struct gpu_tr_ctx *tr;          /* the transmission step's: the lookup kernels on the first GPU */
    const stem_plan *tr_declined;   /* the transmission step declined this plan (too little memory) */
    struct gpu_out_ctx *out;        /* the PRISM output step's, kept when it fits beside the S-matrix step's */
    struct gpu_hr_ctx *hr;          /* the hrtem step's (gpu_hrtem.cu), kept while the geometry stays */
    const stem_plan *resident_plan; /* whether the S-matrix stays on the GPUs, decided once per plan */
    int resident_fits;
    const stem_plan *gathered_plan; /* whether a gathered S-matrix is arranged on the GPU, once per plan */
    int gathered_on_device;
    gpu_kept_trans kept; /* the last transmission functions left on the first GPU (gpu_potential.cu) */
} gpu_engine_state;
static inline gpu_engine_state *gpu_engine_state_of(const stem_engine *e) { return (gpu_engine_state *)e->state; }
static inline const gpu_devices *gpu_engine_devices(const stem_engine *e) { return &gpu_engine_state_of(e)->dev; }
/* gpu_multislice.cu, gpu_smatrix.cu: release the kept contexts (engine destruction). */
void gpu_multislice_cache_free(gpu_engine_state *st);
void gpu_smatrix_cache_free(gpu_engine_state *st);
void gpu_transmission_cache_free(gpu_engine_state *st);
void gpu_output_cache_free(gpu_engine_state *st);
void gpu_hrtem_cache_free(gpu_engine_state *st);
/* gpu_hrtem.cu: the engine's hrtem step (src/hrtem.c's exit waves and images on the first GPU),
 * and the memory estimate it prints at the engine's creation. */
int gpu_hrtem_points(const stem_engine *e, const stem_plan *plans, int n, const stem_complex *trans,
                     const stem_detector *det, stem_result *res);
int gpu_hrtem_estimate(const stem_plan *plan, const gpu_devices *d);
/* Its kernels, launched on stream s; separate so that tests/gpu/kernel_check.cu checks each
 * against src/hrtem.c: out = wave A(q) exp(-i chi(q)) with the defocus c10 (chi: the table of
 * stem_hrtem_chi_without_defocus), and image += weight |w|^2. */
int gpu_hrtem_lens(const stem_plan *plan, const float2 *wave, const double *chi, double c10, float2 *out,
                   cudaStream_t s);
int gpu_hrtem_add_intensity(float *image, const float2 *w, double weight, size_t grid, cudaStream_t s);
/* gpu_potential.cu: the engine's transmission step (src/potential.c's on the first GPU). */
int gpu_transmission(const stem_engine *e, const stem_plan *plan, const stem_potential_table *table,
                     const stem_atoms *atoms, stem_complex *trans);
/* Where the host buffer `host` (bytes long) holds the functions the last build kept on this
 * GPU: copy them to dst there (*copied = 1); else *copied = 0 (upload them from the host). */
int gpu_transmission_kept_copy(gpu_kept_trans *kept, const stem_complex *host, float2 *dst, size_t bytes, int *copied);

#endif
