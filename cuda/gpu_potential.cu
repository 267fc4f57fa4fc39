/* Transmission functions on the GPU: the same steps as src/potential.c's
 * trans_work, slice by slice on the rank's first GPU. The host lists each atom's
 * shares of the slices (stem_atom_slice_weights, as the CPU does), each slice's sorted by
 * the first row of the atom's box; the device adds their blurred profiles at their exact
 * positions, each block a tile of pixels gathering the atoms whose boxes meet it (64-bit
 * fixed-point sums: integer sums do not depend on the order of the atoms, so the result is
 * the same bits run after run, and the same as the atomics this replaced), divides the blur
 * out inside the band, takes exp(i sigma V),
 * band-limits, and the slice is copied to the host buffer the campaign owns
 * (it is broadcast to the group and uploaded like a CPU-built one; where the GPU has room
 * the slices also stay there, and the next upload of that buffer is a device copy). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_internal.cuh"
extern "C" {
#include "../src/potential.h"
}

typedef struct {
    int profile;  /* index into the table's profiles: species and depth node */
    int px, py;   /* the pixel at or below the atom, before wrapping */
    float fx, fy; /* the atom's position past that pixel, in pixels */
    float weight; /* occupancy times the depth profile's weight */
} gpu_atom;

/* Fixed-point scale of the potential sums: 2^-32 V Angstrom resolution, 2^31 V Angstrom range. */
#define FIXED_SCALE 4294967296.0

typedef struct gpu_tr_ctx {
    const stem_plan *plan;
    const stem_potential_table *table; /* what the uploaded profiles came from */
    float *profiles;                   /* the table's profiles on the device */
    int m, fnx, fny;                   /* the potential's grid: m times finer than the run's */
    float2 *tf;                        /* its potential, then exp(i sigma V) (potential's grid) */
    float2 *t;                         /* one slice's transmission function (the run's grid) */
    float2 *all;                       /* or every slice's, kept for the next step (NULL: no room) */
    cudaEvent_t built[2];              /* slice s done (s % 2): its copy to the host may start */
    cudaStream_t copies;               /* the copies to the host, beside the next slice's kernels */
    gpu_atom *atoms, *host_atoms;      /* one configuration's atoms' shares of slices: by slice, then box row */
    gpu_atom *sort_tmp;                /* host scratch of the sort by box row */
    long atoms_cap;
    long *first;              /* first entry of each slice (n_slices + 1) */
    cufftHandle fft, fft_run; /* the potential's grid, the run's (m > 1) */
    int has_fft, has_fft_run;
    cudaStream_t stream;
    gpu_kept_trans *kept; /* the engine's: all, once copied to the host (kept_set) */
} tr_ctx;

/* What the engine keeps on the first GPU (gpu_kept_trans): tr_ctx.all after its copy to host. */
static void kept_set(gpu_kept_trans *kept, const stem_complex *host, const float2 *dev, size_t bytes, int device)
{
    pthread_mutex_lock(&kept->lock);
    kept->host = host;
    kept->dev = dev;
    kept->bytes = bytes;
    kept->device = device;
    pthread_mutex_unlock(&kept->lock);
}

int gpu_transmission_kept_copy(gpu_kept_trans *kept, const stem_complex *host, float2 *dst, size_t bytes, int *copied)
{
    int device = -1;
    *copied = 0;
    CUDA_CALL(cudaGetDevice(&device));
    pthread_mutex_lock(&kept->lock);
    cudaError_t e = cudaSuccess;
    if (kept->dev && kept->host == host && kept->bytes == bytes && kept->device == device) {
        e = cudaMemcpyAsync(dst, kept->dev, bytes, cudaMemcpyDeviceToDevice, 0);
        if (e == cudaSuccess) e = cudaStreamSynchronize(0); /* done before a build may overwrite it */
        *copied = e == cudaSuccess;
    }
    pthread_mutex_unlock(&kept->lock);
    if (e != cudaSuccess)
        return gpu_fail_cuda(e, "cudaMemcpy(kept transmission functions)", __FILE__, __LINE__, __func__);
    return STEM_OK;
}

#define TILE 32          /* a block's tile of the potential's grid: TILE x TILE pixels */
#define TILE_THREADS 256 /* TILE columns x 8 rows; each thread TILE / 8 pixels of one column */

static __device__ __forceinline__ int wrap_index(int v, int n)
{
    v %= n;
    return v < 0 ? v + n : v;
}

/* The first of atoms[0, n) (sorted by their box's first row, wrapped) whose row is >= key. */
static __device__ long first_row_at_least(const gpu_atom *atoms, long n, int key, int ny)
{
    long lo = 0, hi = n;
    while (lo < hi) {
        long mid = (lo + hi) / 2;
        if (wrap_index(atoms[mid].py, ny) < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* weight * h(r) of atom a at box offset (i, j), in fixed point: the same float operations as
 * potential.c's add_profile_rows; 0 beyond the reach. */
static __device__ __forceinline__ long long profile_fixed(const gpu_atom &a, const float *__restrict__ profiles,
                                                          int points, int i, int j, int rx, int ry, float dx, float dy,
                                                          float reach2, float per_step)
{
    float ox = __fmul_rn(__fsub_rn((float)(i - rx), a.fx), dx), oy = __fmul_rn(__fsub_rn((float)(j - ry), a.fy), dy);
    float r2 = __fadd_rn(__fmul_rn(ox, ox), __fmul_rn(oy, oy));
    if (r2 >= reach2) return 0;
    const float *h = profiles + (size_t)a.profile * points;
    float u = __fmul_rn(__fsqrt_rn(r2), per_step);
    int k = (int)u;
    float v = __fmul_rn(a.weight, __fadd_rn(h[k], __fmul_rn(__fsub_rn(u, (float)k), __fsub_rn(h[k + 1], h[k]))));
    return __double2ll_rn((double)v * FIXED_SCALE);
}

/* t[pixel] = (the sum over the slice's atoms of weight * h(r), wrapped periodically, 0i): one
 * block per TILE x TILE tile. The atoms whose box rows can meet the tile's are found by binary
 * search (one or two ranges, the box rows being periodic); those whose box also meets its
 * columns go to a shared list, chunk by chunk, and each thread adds them to its pixels. */
static __global__ void __launch_bounds__(TILE_THREADS)
    k_gather_atoms(float2 *__restrict__ t, const gpu_atom *__restrict__ atoms, long n,
                   const float *__restrict__ profiles, int nx, int ny, int kx, int ky, int rx, int ry, float dx,
                   float dy, float reach2, float per_step, int points)
{
    __shared__ gpu_atom list[TILE_THREADS];
    __shared__ long range[4];
    __shared__ int count;
    const int x0 = blockIdx.x * TILE, y0 = blockIdx.y * TILE;
    const int gx = x0 + threadIdx.x % TILE, row0 = threadIdx.x / TILE;
    constexpr int rows = TILE / (TILE_THREADS / TILE); /* pixels a thread, TILE_THREADS / TILE rows apart */
    long long acc[rows];
#pragma unroll
    for (int r = 0; r < rows; r++) acc[r] = 0;
    if (threadIdx.x == 0) { /* box rows [key, key + ky) meet [y0, y0 + TILE): key in [y0 - ky + 1, y0 + TILE) */
        int len = ky + TILE - 1, lo = wrap_index(y0 - ky + 1, ny);
        if (len >= ny) {
            range[0] = 0, range[1] = n, range[2] = range[3] = 0;
        } else if (lo + len <= ny) {
            range[0] = first_row_at_least(atoms, n, lo, ny), range[1] = first_row_at_least(atoms, n, lo + len, ny);
            range[2] = range[3] = 0;
        } else {
            range[0] = first_row_at_least(atoms, n, lo, ny), range[1] = n;
            range[2] = 0, range[3] = first_row_at_least(atoms, n, lo + len - ny, ny);
        }
    }
    __syncthreads();
    for (int part = 0; part < 2; part++) {
        const long begin = range[2 * part], end = range[2 * part + 1];
        for (long c0 = begin; c0 < end; c0 += TILE_THREADS) {
            if (threadIdx.x == 0) count = 0;
            __syncthreads();
            long i = c0 + threadIdx.x;
            if (i < end) { /* the box's columns [bx, bx + kx) meet the tile's, periodically */
                gpu_atom a = atoms[i];
                int bx = wrap_index(a.px, nx);
                if (wrap_index(x0 - bx, nx) < kx || wrap_index(bx - x0, nx) < TILE) list[atomicAdd(&count, 1)] = a;
            }
            __syncthreads();
            const int listed = count;
            if (gx < nx)
                for (int k = 0; k < listed; k++) {
                    const gpu_atom a = list[k];
                    for (int bi = wrap_index(gx - a.px, nx); bi < kx; bi += nx) /* a box wider than the grid: again */
#pragma unroll
                        for (int r = 0; r < rows; r++) {
                            int gy = y0 + row0 + r * (TILE_THREADS / TILE);
                            if (gy < ny)
                                for (int bj = wrap_index(gy - a.py, ny); bj < ky; bj += ny)
                                    acc[r] +=
                                        profile_fixed(a, profiles, points, bi, bj, rx, ry, dx, dy, reach2, per_step);
                        }
                }
            __syncthreads();
        }
    }
    if (gx >= nx) return;
#pragma unroll
    for (int r = 0; r < rows; r++) {
        int gy = y0 + row0 + r * (TILE_THREADS / TILE);
        if (gy < ny) t[(size_t)gy * nx + gx] = make_float2((float)((double)acc[r] / FIXED_SCALE), 0.0f);
    }
}

/* Times stem_potential_deblur: the Gaussian divided out inside the band, zero beyond. */
static __global__ void k_deblur(float2 *__restrict__ t, int nx, int ny, double cx, double cy, double q2max, double blur,
                                double grid)
{
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (size_t)nx * ny) return;
    int i = (int)(idx % nx), j = (int)(idx / nx);
    double qx = stem_fft_index(i, nx) / cx, qy = stem_fft_index(j, ny) / cy, q2 = qx * qx + qy * qy;
    float f = (float)(q2 <= q2max ? exp(blur * q2) / grid : 0.0);
    t[idx] = make_float2(__fmul_rn(t[idx].x, f), __fmul_rn(t[idx].y, f));
}

static __global__ void k_phase(float2 *__restrict__ t, float sigma, size_t grid)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= grid) return;
    float s, c;
    sincosf(__fmul_rn(sigma, t[i].x), &s, &c);
    t[i] = make_float2(c, s);
}

/* The run's band of the potential grid's spectrum tf (fnx x fny), divided by that grid's
 * size, into the run's grid's spectrum t (potential.c's run_band). */
static __global__ void k_run_band(float2 *__restrict__ t, const float2 *__restrict__ tf, int nx, int ny, int fnx,
                                  int fny, double cx, double cy, double q2max)
{
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (size_t)nx * ny) return;
    int kx = stem_fft_index((int)(idx % nx), nx), ky = stem_fft_index((int)(idx / nx), ny);
    double qx = kx / cx, qy = ky / cy;
    float g = (float)((double)fnx * fny);
    float2 v = tf[(size_t)((ky + fny) % fny) * fnx + (kx + fnx) % fnx];
    t[idx] = qx * qx + qy * qy <= q2max ? make_float2(__fdiv_rn(v.x, g), __fdiv_rn(v.y, g)) : make_float2(0.0f, 0.0f);
}

static void tr_release(tr_ctx *c)
{
    kept_set(c->kept, NULL, NULL, 0, -1);
    for (int i = 0; i < 2; i++)
        if (c->built[i]) cudaEventDestroy(c->built[i]);
    if (c->copies) cudaStreamDestroy(c->copies);
    gpu_free(c->all);
    if (c->has_fft) cufftDestroy(c->fft);
    if (c->has_fft_run) cufftDestroy(c->fft_run);
    if (c->stream) cudaStreamDestroy(c->stream);
    gpu_free(c->profiles);
    free(c->sort_tmp);
    gpu_free(c->t);
    gpu_free(c->tf);
    gpu_free(c->atoms);
    free(c->host_atoms);
    free(c->first);
    memset(c, 0, sizeof *c);
}

void gpu_transmission_cache_free(gpu_engine_state *st)
{
    if (!st->tr) return;
    if (cudaSetDevice(st->dev.ids[0]) != cudaSuccess) cudaGetLastError();
    tr_release(st->tr);
    free(st->tr);
    st->tr = NULL;
}

/* What does not depend on the configuration: the profiles, one slice's buffers, the plan. */
static int tr_create(tr_ctx *c, const stem_plan *plan, const stem_potential_table *table, int keep_all)
{
    size_t grid = (size_t)plan->nx * plan->ny;
    size_t p_bytes = sizeof(float) * (size_t)table->n_profiles * table->points; /* species x depth nodes */
    c->plan = plan;
    c->table = table;
    CUDA_CALL(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
    GPU_ALLOC(c->profiles, p_bytes, "potential profiles");
    CUDA_CALL(cudaMemcpy(c->profiles, table->profiles, p_bytes, cudaMemcpyHostToDevice));
    c->m = plan->opt.oversampling > 1 ? plan->opt.oversampling : 1;
    c->fnx = c->m * plan->nx;
    c->fny = c->m * plan->ny;
    size_t fine = (size_t)c->fnx * c->fny;
    GPU_ALLOC(c->tf, sizeof(float2) * fine, "slice transmission function (oversampled)");
    GPU_ALLOC(c->t, sizeof(float2) * grid, "slice transmission function");
    if (keep_all) {
        GPU_ALLOC(c->all, sizeof(float2) * grid * plan->n_slices, "transmission functions (kept on the GPU)");
        CUDA_CALL(cudaStreamCreateWithFlags(&c->copies, cudaStreamNonBlocking));
        for (int i = 0; i < 2; i++) CUDA_CALL(cudaEventCreateWithFlags(&c->built[i], cudaEventDisableTiming));
    }
    CUFFT_CALL(cufftPlan2d(&c->fft, c->fny, c->fnx, CUFFT_C2C));
    c->has_fft = 1;
    CUFFT_CALL(cufftSetStream(c->fft, c->stream));
    if (c->m > 1) {
        CUFFT_CALL(cufftPlan2d(&c->fft_run, plan->ny, plan->nx, CUFFT_C2C));
        c->has_fft_run = 1;
        CUFFT_CALL(cufftSetStream(c->fft_run, c->stream));
    }
    c->first = (long *)stem_calloc(plan->n_slices + 1, sizeof(long), "atoms per slice");
    return c->first ? STEM_OK : STEM_ERR_MEMORY;
}

/* Every atom's share of every slice it reaches (one entry per weighted depth profile; with
 * the infinite projection one per atom), counted per slice. */
static long tr_count_entries(const stem_plan *plan, const stem_potential_table *t, const stem_atoms *atoms, long *first)
{
    memset(first, 0, sizeof(long) * (plan->n_slices + 1));
    stem_node_weight w[4];
    for (long i = 0; i < atoms->n; i++) {
        int s0, s1;
        stem_atom_slice_range(plan, t, atoms->z[i], &s0, &s1);
        for (int s = s0; s < s1; s++) first[s + 1] += stem_atom_slice_weights(plan, t, atoms->z[i], s, w);
    }
    for (int s = 0; s < plan->n_slices; s++) first[s + 1] += first[s];
    return first[plan->n_slices];
}

static int tr_reserve(tr_ctx *c, long n)
{
    if (n <= c->atoms_cap) return STEM_OK;
    gpu_free(c->atoms);
    c->atoms = NULL;
    free(c->host_atoms);
    free(c->sort_tmp);
    c->sort_tmp = NULL;
    c->host_atoms = (gpu_atom *)stem_alloc(sizeof(gpu_atom) * n, "placed atoms");
    if (!c->host_atoms) return STEM_ERR_MEMORY;
    c->sort_tmp = (gpu_atom *)stem_alloc(sizeof(gpu_atom) * n, "placed atoms (sorting)");
    if (!c->sort_tmp) return STEM_ERR_MEMORY;
    GPU_ALLOC(c->atoms, sizeof(gpu_atom) * n, "placed atoms");
    c->atoms_cap = n;
    return STEM_OK;
}

/* Each slice's entries of host_atoms sorted by their box's first row, wrapped (a stable
 * counting sort through sort_tmp): k_gather_atoms finds a tile's atoms by binary search. */
static int tr_sort_by_row(tr_ctx *c)
{
    int ny = c->fny;
    long *at = (long *)stem_alloc(sizeof(long) * (ny + 1), "atoms per box row");
    if (!at) return STEM_ERR_MEMORY;
    for (int s = 0; s < c->plan->n_slices; s++) {
        gpu_atom *a = c->host_atoms + c->first[s], *tmp = c->sort_tmp + c->first[s];
        long n = c->first[s + 1] - c->first[s];
        memset(at, 0, sizeof(long) * (ny + 1));
        for (long i = 0; i < n; i++) at[(a[i].py % ny + ny) % ny + 1]++;
        for (int r = 0; r < ny; r++) at[r + 1] += at[r];
        for (long i = 0; i < n; i++) tmp[at[(a[i].py % ny + ny) % ny]++] = a[i];
        memcpy(a, tmp, sizeof(gpu_atom) * n);
    }
    free(at);
    return STEM_OK;
}

/* List every atom's shares on the host (stem_atom_slice_weights, as the CPU does), sorted
 * by slice (counting sort) and within a slice by box row, and upload them. */
static int tr_upload_atoms(tr_ctx *c, const stem_atoms *atoms)
{
    const stem_plan *plan = c->plan;
    const stem_potential_table *t = c->table;
    long total = tr_count_entries(plan, t, atoms, c->first);
    STEM_TRY(tr_reserve(c, total));
    long *next = (long *)stem_alloc(sizeof(long) * plan->n_slices, "atoms per slice");
    if (!next) return STEM_ERR_MEMORY;
    memcpy(next, c->first, sizeof(long) * plan->n_slices);
    stem_node_weight w[4];
    for (long i = 0; i < atoms->n; i++) {
        int s0, s1;
        double ux = atoms->x[i] / (plan->dx / c->m), uy = atoms->y[i] / (plan->dy / c->m);
        long px = (long)floor(ux), py = (long)floor(uy);
        stem_atom_slice_range(plan, t, atoms->z[i], &s0, &s1);
        for (int s = s0; s < s1; s++) {
            int n = stem_atom_slice_weights(plan, t, atoms->z[i], s, w);
            for (int k = 0; k < n; k++) {
                gpu_atom *a = &c->host_atoms[next[s]++];
                a->profile = t->species_of_z[atoms->Z[i]] * t->n_nodes + w[k].node;
                a->px = (int)(px - t->rx);
                a->py = (int)(py - t->ry);
                a->fx = (float)(ux - px);
                a->fy = (float)(uy - py);
                a->weight = (float)(atoms->occupancy[i] * w[k].weight);
            }
        }
    }
    free(next);
    STEM_TRY(tr_sort_by_row(c));
    if (total > 0)
        CUDA_CALL(
            cudaMemcpyAsync(c->atoms, c->host_atoms, sizeof(gpu_atom) * total, cudaMemcpyHostToDevice, c->stream));
    return STEM_OK;
}

/* One slice: blurred potential on the potential's grid, the blur divided out, exp(i sigma V),
 * the run's band; into out on the device (queued on the step's stream). */
static int tr_slice(tr_ctx *c, int s, float2 *out)
{
    const stem_plan *plan = c->plan;
    const stem_potential_table *t = c->table;
    int nx = plan->nx, ny = plan->ny, m = c->m;
    size_t grid = (size_t)nx * ny, fine = (size_t)c->fnx * c->fny;
    unsigned blocks = gpu_blocks(fine, 256);
    long n = c->first[s + 1] - c->first[s];
    double fq = m * plan->q_limit;
    dim3 tiles((c->fnx + TILE - 1) / TILE, (c->fny + TILE - 1) / TILE);
    k_gather_atoms<<<tiles, TILE_THREADS, 0, c->stream>>>(
        c->tf, c->atoms + c->first[s], n, c->profiles, c->fnx, c->fny, t->kx, t->ky, t->rx, t->ry,
        (float)(plan->dx / m), (float)(plan->dy / m), (float)(t->reach * t->reach), (float)(1 / t->step), t->points);
    CUDA_LAUNCH();
    CUFFT_CALL(cufftExecC2C(c->fft, c->tf, c->tf, CUFFT_FORWARD));
    k_deblur<<<blocks, 256, 0, c->stream>>>(c->tf, c->fnx, c->fny, plan->cell[0], plan->cell[1], fq * fq,
                                            2 * M_PI * M_PI * t->blur_sigma * t->blur_sigma, (double)fine);
    CUDA_LAUNCH();
    CUFFT_CALL(cufftExecC2C(c->fft, c->tf, c->tf, CUFFT_INVERSE));
    k_phase<<<blocks, 256, 0, c->stream>>>(c->tf, (float)plan->sigma, fine);
    CUDA_LAUNCH();
    CUFFT_CALL(cufftExecC2C(c->fft, c->tf, c->tf, CUFFT_FORWARD));
    k_run_band<<<gpu_blocks(grid, 256), 256, 0, c->stream>>>(out, c->tf, nx, ny, c->fnx, c->fny, plan->cell[0],
                                                             plan->cell[1], plan->q_limit * plan->q_limit);
    CUDA_LAUNCH();
    CUFFT_CALL(cufftExecC2C(m > 1 ? c->fft_run : c->fft, out, out, CUFFT_INVERSE));
    return STEM_OK;
}

/* Slice s, computed into its place in c->all, copied to the host on the copy stream while
 * the next slice's kernels run (a copy to pageable memory holds this thread until done). */
static int tr_slice_copy(tr_ctx *c, int s, stem_complex *host)
{
    size_t grid = (size_t)c->plan->nx * c->plan->ny;
    CUDA_CALL(cudaStreamWaitEvent(c->copies, c->built[s % 2], 0));
    CUDA_CALL(
        cudaMemcpyAsync(host, c->all + (size_t)s * grid, sizeof(float2) * grid, cudaMemcpyDeviceToHost, c->copies));
    return STEM_OK;
}

/* Every slice into trans; with room on the GPU they are also kept there (kept_set). */
static int tr_all_slices(tr_ctx *c, int device, stem_complex *trans)
{
    const stem_plan *plan = c->plan;
    size_t grid = (size_t)plan->nx * plan->ny;
    kept_set(c->kept, NULL, NULL, 0, -1); /* c->all is about to change */
    for (int s = 0; s < plan->n_slices; s++) {
        if (!c->all) { /* one slice buffer: compute, copy, next */
            STEM_TRY(tr_slice(c, s, c->t));
            CUDA_CALL(cudaMemcpyAsync(trans + (size_t)s * grid, c->t, sizeof(float2) * grid, cudaMemcpyDeviceToHost,
                                      c->stream));
            CUDA_CALL(cudaStreamSynchronize(c->stream));
            continue;
        }
        STEM_TRY(tr_slice(c, s, c->all + (size_t)s * grid));
        CUDA_CALL(cudaEventRecord(c->built[s % 2], c->stream));
        if (s > 0) STEM_TRY(tr_slice_copy(c, s - 1, trans + (size_t)(s - 1) * grid));
    }
    if (c->all) {
        STEM_TRY(tr_slice_copy(c, plan->n_slices - 1, trans + (size_t)(plan->n_slices - 1) * grid));
        CUDA_CALL(cudaStreamSynchronize(c->copies));
        CUDA_CALL(cudaStreamSynchronize(c->stream));
        kept_set(c->kept, trans, c->all, sizeof(float2) * grid * plan->n_slices, device);
    }
    return STEM_OK;
}

/* The engine's transmission step. Called by one host thread at a time (the campaign's
 * main thread, or its helper that builds the next configuration ahead). */
int gpu_transmission(const stem_engine *e, const stem_plan *plan, const stem_potential_table *table,
                     const stem_atoms *atoms, stem_complex *trans)
{
    gpu_engine_state *st = gpu_engine_state_of(e);
    CUDA_CALL(cudaSetDevice(st->dev.ids[0]));
    if (st->tr && (st->tr->plan != plan || st->tr->table != table)) gpu_transmission_cache_free(st);
    if (st->tr_declined == plan) return STEM_NOT_APPLICABLE;
    if (!st->tr) {
        /* the other steps' memory plans leave this step only their reserve: a grid too
         * large for a small part of it is built on the CPU instead (the same numbers) */
        double m = plan->opt.oversampling > 1 ? plan->opt.oversampling : 1;
        double need = 8.0 * m * m * plan->nx * plan->ny + 8.0 * plan->nx * plan->ny +
            4.0 * table->n_profiles * table->points +
            24.0 * atoms->n * (table->finite ? 8 : 1); /* entries: up to 4 per slice reached */
        if (need > 0.25 * st->dev.usable_bytes) {
            stem_info("transmission functions built on the CPU: on the GPU they would need %.2f GiB", need / GPU_GIB);
            st->tr_declined = plan;
            return STEM_NOT_APPLICABLE;
        }
        st->tr = (tr_ctx *)stem_calloc(1, sizeof(tr_ctx), "GPU transmission context");
        if (!st->tr) return STEM_ERR_MEMORY;
        st->tr->kept = &st->kept;
        double all = 8.0 * plan->nx * plan->ny * plan->n_slices; /* kept for the next step, where it fits */
        int err = tr_create(st->tr, plan, table, need + all <= 0.25 * st->dev.usable_bytes);
        if (err) {
            gpu_transmission_cache_free(st);
            return err;
        }
    }
    tr_ctx *c = st->tr;
    int err = tr_upload_atoms(c, atoms);
    if (!err) err = tr_all_slices(c, st->dev.ids[0], trans);
    if (err) gpu_transmission_cache_free(st);
    return err;
}
