/* Transmission functions on the GPU: the same steps as src/potential.c's
 * trans_work, slice by slice on the rank's first GPU. The host places each atom
 * (stem_atom_placement: pixel and sub-pixel kernel, exactly as the CPU does);
 * the device adds the kernels (float atomics: the sum's order, and so its last
 * bits, differ from the CPU's), undoes the pixel averaging, takes exp(i sigma V),
 * band-limits, and the slice is copied to the host buffer the campaign owns
 * (it is broadcast to the group and uploaded like a CPU-built one). */
#include <stdlib.h>
#include <string.h>

#include "gpu_internal.cuh"
extern "C" {
#include "../src/potential.h"
}

typedef struct {
    int kernel;    /* index into the table's kernels: species, depth node and sub-pixel position */
    int px, py;    /* kernel centre pixel, before wrapping */
    float weight;  /* occupancy times the depth kernel's weight */
} gpu_atom;

typedef struct gpu_tr_ctx {
    const stem_plan *plan;
    const stem_potential_table *table; /* what the uploaded kernels came from */
    float *kernels;                    /* the table's kernels on the device */
    float *V;                          /* one slice's potential */
    float2 *t;                         /* one slice's transmission function */
    gpu_atom *atoms, *host_atoms;      /* one configuration's atoms' shares of slices, sorted by slice */
    long atoms_cap;
    long *first;                       /* first entry of each slice (n_slices + 1) */
    cufftHandle fft;
    int has_fft;
    cudaStream_t stream;
} tr_ctx;

/* V[wrapped pixel] += weight * kernel: one block per atom of the slice. */
static __global__ void k_add_atoms(float *__restrict__ V, const gpu_atom *__restrict__ atoms, const float *__restrict__ kernels,
                                   int nx, int ny, int kx, int ky, int rx, int ry)
{
    gpu_atom a = atoms[blockIdx.x];
    const float *k = kernels + (size_t)a.kernel * kx * ky;
    for (int e = threadIdx.x; e < kx * ky; e += blockDim.x) {
        int j = e / kx, i = e - j * kx;
        int gy = ((a.py + j - ry) % ny + ny) % ny, gx = ((a.px + i - rx) % nx + nx) % nx;
        atomicAdd(&V[(size_t)gy * nx + gx], __fmul_rn(a.weight, k[e]));
    }
}

static __global__ void k_to_complex(float2 *__restrict__ t, const float *__restrict__ V, size_t grid)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < grid) t[i] = make_float2(V[i], 0.0f);
}

/* Divide by sinc(kx/nx) sinc(ky/ny) and by the grid size (undo_pixel_average). */
static __global__ void k_unaverage(float2 *__restrict__ t, int nx, int ny)
{
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (size_t)nx * ny) return;
    int i = (int)(idx % nx), j = (int)(idx / nx);
    double ay = M_PI * stem_fft_index(j, ny) / ny, sy = ay ? sin(ay) / ay : 1;
    double ax = M_PI * stem_fft_index(i, nx) / nx, sx = ax ? sin(ax) / ax : 1;
    float d = (float)(sx * sy * ((double)nx * ny));
    t[idx] = make_float2(__fdiv_rn(t[idx].x, d), __fdiv_rn(t[idx].y, d));
}

static __global__ void k_phase(float2 *__restrict__ t, float sigma, size_t grid)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= grid) return;
    float s, c;
    sincosf(__fmul_rn(sigma, t[i].x), &s, &c);
    t[i] = make_float2(c, s);
}

/* Keep |q| <= the band limit (divided by the grid size), zero the rest. */
static __global__ void k_band_limit(float2 *__restrict__ t, int nx, int ny, float cx, float cy, float q2max)
{
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (size_t)nx * ny) return;
    int i = (int)(idx % nx), j = (int)(idx / nx);
    float qx = __fdiv_rn((float)stem_fft_index(i, nx), cx), qy = __fdiv_rn((float)stem_fft_index(j, ny), cy);
    float g = (float)nx * (float)ny;
    int keep = __fadd_rn(__fmul_rn(qx, qx), __fmul_rn(qy, qy)) <= q2max;
    t[idx] = keep ? make_float2(__fdiv_rn(t[idx].x, g), __fdiv_rn(t[idx].y, g)) : make_float2(0.0f, 0.0f);
}

static void tr_release(tr_ctx *c)
{
    if (c->has_fft) cufftDestroy(c->fft);
    if (c->stream) cudaStreamDestroy(c->stream);
    gpu_free(c->kernels);
    gpu_free(c->V);
    gpu_free(c->t);
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

/* What does not depend on the configuration: the kernels, one slice's buffers, the plan. */
static int tr_create(tr_ctx *c, const stem_plan *plan, const stem_potential_table *table)
{
    size_t grid = (size_t)plan->nx * plan->ny;
    size_t k_bytes = sizeof(float) * (size_t)table->n_kernels * table->kx * table->ky; /* species x depth nodes x sub-pixels */
    c->plan = plan;
    c->table = table;
    CUDA_CALL(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
    GPU_ALLOC(c->kernels, k_bytes, "potential lookup kernels");
    CUDA_CALL(cudaMemcpy(c->kernels, table->kernels, k_bytes, cudaMemcpyHostToDevice));
    GPU_ALLOC(c->V, sizeof(float) * grid, "slice potential");
    GPU_ALLOC(c->t, sizeof(float2) * grid, "slice transmission function");
    CUFFT_CALL(cufftPlan2d(&c->fft, plan->ny, plan->nx, CUFFT_C2C));
    c->has_fft = 1;
    CUFFT_CALL(cufftSetStream(c->fft, c->stream));
    c->first = (long *)stem_calloc(plan->n_slices + 1, sizeof(long), "atoms per slice");
    return c->first ? STEM_OK : STEM_ERR_MEMORY;
}

/* Every atom's share of every slice it reaches (one entry per weighted depth kernel; with
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
    c->host_atoms = (gpu_atom *)stem_alloc(sizeof(gpu_atom) * n, "placed atoms");
    if (!c->host_atoms) return STEM_ERR_MEMORY;
    GPU_ALLOC(c->atoms, sizeof(gpu_atom) * n, "placed atoms");
    c->atoms_cap = n;
    return STEM_OK;
}

/* Place every atom on the host (stem_atom_placement and stem_atom_slice_weights, as the
 * CPU does), sorted by slice (counting sort), and upload them. */
static int tr_upload_atoms(tr_ctx *c, const stem_atoms *atoms)
{
    const stem_plan *plan = c->plan;
    const stem_potential_table *t = c->table;
    long total = tr_count_entries(plan, t, atoms, c->first);
    STEM_TRY(tr_reserve(c, total));
    long *next = (long *)stem_alloc(sizeof(long) * plan->n_slices, "atoms per slice");
    if (!next) return STEM_ERR_MEMORY;
    memcpy(next, c->first, sizeof(long) * plan->n_slices);
    size_t node_stride = (size_t)t->ss * t->ss;
    stem_node_weight w[4];
    for (long i = 0; i < atoms->n; i++) {
        long px, py;
        size_t kernel;
        int s0, s1;
        stem_atom_placement(plan, t, t->species_of_z[atoms->Z[i]], atoms->x[i], atoms->y[i], &px, &py, &kernel);
        stem_atom_slice_range(plan, t, atoms->z[i], &s0, &s1);
        for (int s = s0; s < s1; s++) {
            int n = stem_atom_slice_weights(plan, t, atoms->z[i], s, w);
            for (int k = 0; k < n; k++) {
                gpu_atom *a = &c->host_atoms[next[s]++];
                a->kernel = (int)(kernel + w[k].node * node_stride);
                a->px = (int)px;
                a->py = (int)py;
                a->weight = (float)(atoms->occupancy[i] * w[k].weight);
            }
        }
    }
    free(next);
    if (total > 0)
        CUDA_CALL(cudaMemcpyAsync(c->atoms, c->host_atoms, sizeof(gpu_atom) * total, cudaMemcpyHostToDevice, c->stream));
    return STEM_OK;
}

/* One slice: potential, pixel averaging undone, exp(i sigma V), band limit; into host memory. */
static int tr_slice(tr_ctx *c, int s, stem_complex *out)
{
    const stem_plan *plan = c->plan;
    const stem_potential_table *t = c->table;
    int nx = plan->nx, ny = plan->ny;
    size_t grid = (size_t)nx * ny;
    unsigned blocks = gpu_blocks(grid, 256);
    long n = c->first[s + 1] - c->first[s];
    CUDA_CALL(cudaMemsetAsync(c->V, 0, sizeof(float) * grid, c->stream));
    if (n > 0) {
        k_add_atoms<<<(unsigned)n, 128, 0, c->stream>>>(c->V, c->atoms + c->first[s], c->kernels, nx, ny, t->kx, t->ky,
                                                          t->rx, t->ry);
        CUDA_LAUNCH();
    }
    k_to_complex<<<blocks, 256, 0, c->stream>>>(c->t, c->V, grid);
    CUDA_LAUNCH();
    CUFFT_CALL(cufftExecC2C(c->fft, c->t, c->t, CUFFT_FORWARD));
    k_unaverage<<<blocks, 256, 0, c->stream>>>(c->t, nx, ny);
    CUDA_LAUNCH();
    CUFFT_CALL(cufftExecC2C(c->fft, c->t, c->t, CUFFT_INVERSE));
    k_phase<<<blocks, 256, 0, c->stream>>>(c->t, (float)plan->sigma, grid);
    CUDA_LAUNCH();
    CUFFT_CALL(cufftExecC2C(c->fft, c->t, c->t, CUFFT_FORWARD));
    k_band_limit<<<blocks, 256, 0, c->stream>>>(c->t, nx, ny, (float)plan->cell[0], (float)plan->cell[1],
                                                (float)(plan->q_limit * plan->q_limit));
    CUDA_LAUNCH();
    CUFFT_CALL(cufftExecC2C(c->fft, c->t, c->t, CUFFT_INVERSE));
    CUDA_CALL(cudaMemcpyAsync(out, c->t, sizeof(float2) * grid, cudaMemcpyDeviceToHost, c->stream));
    CUDA_CALL(cudaStreamSynchronize(c->stream));
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
        double need = 12.0 * plan->nx * plan->ny + 4.0 * table->n_kernels * table->kx * table->ky + 16.0 * atoms->n * (table->finite ? 8 : 1); /* entries: up to 4 per slice reached */
        if (need > 0.25 * st->dev.usable_bytes) {
            stem_info("transmission functions built on the CPU: on the GPU they would need %.2f GiB", need / GPU_GIB);
            st->tr_declined = plan;
            return STEM_NOT_APPLICABLE;
        }
        st->tr = (tr_ctx *)stem_calloc(1, sizeof(tr_ctx), "GPU transmission context");
        if (!st->tr) return STEM_ERR_MEMORY;
        int err = tr_create(st->tr, plan, table);
        if (err) {
            gpu_transmission_cache_free(st);
            return err;
        }
    }
    tr_ctx *c = st->tr;
    int err = tr_upload_atoms(c, atoms);
    size_t grid = (size_t)plan->nx * plan->ny;
    for (int s = 0; !err && s < plan->n_slices; s++) err = tr_slice(c, s, trans + (size_t)s * grid);
    if (err) gpu_transmission_cache_free(st);
    return err;
}
