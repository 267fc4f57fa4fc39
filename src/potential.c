/* Projected potential lookup, slicing and transmission functions. */
#include "potential.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dispatcher.h"
#include "fft.h"

#define RADIAL_POINTS 16384
/* Finite projection: the part of an atom's potential between depth 0 and z (relative to
 * its centre) is tabulated at STEM_FINITE_NODES depths up to the cutoff, spaced like
 * sinh(FINITE_STRETCH k / n) so that they crowd near the centre, where the part grows
 * fastest; between depths it is interpolated linearly (about 0.15% of a slice's share
 * for 1 Angstrom slices of Si, measured against direct quadrature). */
#define FINITE_STRETCH 5.0

static double radius_of(int i, double cutoff) { return (i + 0.5) * cutoff / RADIAL_POINTS; }

/* v(r) - v(cutoff) on a fine radial grid; linear interpolation is ample at
 * the sub-pixel sample distances used (never closer than dx/(2 ss)). */
static void radial_table(const stem_atom_potential *p, double cutoff, float *tab)
{
    double v_cut = stem_projected_potential(p, cutoff);
    for (int i = 0; i < RADIAL_POINTS; i++) {
        double v = stem_projected_potential(p, radius_of(i, cutoff)) - v_cut;
        tab[i] = (float)(v > 0 ? v : 0);
    }
}

/* Finite projection, radial points [i0, i1) of every depth's table: the share of
 * v(r) - v(cutoff) lying between depth 0 and z_k, (v - v_cut) / 2 * F(r, z_k) / F(r, cutoff)
 * with F(r, z) = int_0^z V dz'. Scaling the shifted projection keeps the whole atom,
 * summed over its slices, equal to the infinite projection's. */
static void finite_radial_tables(const stem_atom_potential *p, const stem_potential_table *t, double cutoff, int i0,
                                 int i1, float *tabs)
{
    double v_cut = stem_projected_potential(p, cutoff), F[STEM_FINITE_NODES];
    for (int i = i0; i < i1; i++) {
        double r = radius_of(i, cutoff), v = stem_projected_potential(p, r) - v_cut;
        stem_half_projections(p, r, t->z_nodes, t->n_nodes, F);
        for (int k = 0; k < t->n_nodes; k++)
            tabs[(size_t)k * RADIAL_POINTS + i] = (float)(v > 0 && F[t->n_nodes - 1] > 0 ? 0.5 * v * F[k] / F[t->n_nodes - 1] : 0);
    }
}

static double radial_lookup(const float *tab, double cutoff, double r)
{
    double u = r / cutoff * RADIAL_POINTS - 0.5;
    if (u >= RADIAL_POINTS - 1) return 0;
    if (u <= 0) return tab[0];
    int i = (int)u;
    double t = u - i;
    return (1 - t) * tab[i] + t * tab[i + 1];
}

/* The radial function on the fine lattice of every kernel's samples: sample a of pixel i
 * for sub-pixel position sub_x sits at (i - rx) + (a + 0.5) / ss - 0.5 - sub_x / ss pixels,
 * which depends only on X = i ss + a - sub_x; fine[(Y + ss - 1) w + X + ss - 1] holds it,
 * w = (kx + 2) ss. One lookup per lattice point instead of one per sample of every kernel. */
static void fine_lattice(const stem_plan *plan, const stem_potential_table *t, const float *tab, double *fine)
{
    int ss = t->ss, w = (t->kx + 2) * ss, h = (t->ky + 2) * ss;
    for (int Y = 0; Y < h; Y++)
        for (int X = 0; X < w; X++) {
            double ux = (X - (ss - 1) - t->rx * ss + 0.5 - 0.5 * ss) / ss;
            double uy = (Y - (ss - 1) - t->ry * ss + 0.5 - 0.5 * ss) / ss;
            double r = hypot(ux * plan->dx, uy * plan->dy);
            fine[(size_t)Y * w + X] = r < t->cutoff ? radial_lookup(tab, t->cutoff, r) : 0;
        }
}

/* Kernel for an atom sitting sub_x/ss, sub_y/ss pixels past a pixel centre:
 * each pixel is the mean of ss x ss samples across its area. With ss even the
 * samples never fall on the atom, where K0 diverges. */
static void build_kernel(const stem_potential_table *t, const double *fine, int sub_x, int sub_y, float *out)
{
    int ss = t->ss, w = (t->kx + 2) * ss;
    for (int j = 0; j < t->ky; j++)
        for (int i = 0; i < t->kx; i++) {
            double sum = 0;
            for (int b = 0; b < ss; b++) {
                const double *row = fine + (size_t)(j * ss + b - sub_y + ss - 1) * w + (i * ss - sub_x + ss - 1);
                for (int a = 0; a < ss; a++) sum += row[a];
            }
            out[(size_t)j * t->kx + i] = (float)(sum / (ss * ss));
        }
}

int stem_potential_table_init(const stem_plan *plan, const stem_atoms *atoms, stem_potential_table *t)
{
    memset(t, 0, sizeof *t);
    for (int z = 0; z <= STEM_MAX_Z; z++) t->species_of_z[z] = -1;
    for (long i = 0; i < atoms->n; i++) {
        int z = atoms->Z[i];
        if (t->species_of_z[z] < 0) {
            t->species_of_z[z] = t->n_species;
            t->species_z[t->n_species++] = z;
        }
    }
    double cutoff = plan->opt.potential_radius;
    t->cutoff = cutoff;
    t->finite = plan->opt.finite_projection;
    t->n_nodes = stem_potential_nodes(plan);
    for (int k = 0; t->finite && k < t->n_nodes; k++)
        t->z_nodes[k] = cutoff * sinh(FINITE_STRETCH * (k + 1) / t->n_nodes) / sinh(FINITE_STRETCH);
    t->ss = plan->opt.supersampling; /* even: see build_kernel */
    t->rx = stem_plan_kernel_radius(cutoff, plan->dx);
    t->ry = stem_plan_kernel_radius(cutoff, plan->dy);
    t->kx = 2 * t->rx + 1;
    t->ky = 2 * t->ry + 1;
    t->n_kernels = (long)t->n_species * t->n_nodes * t->ss * t->ss;
    /* kernels wider than the cell are fine: add_atom_rows wraps, summing periodic images */
    STEM_ALLOC(t->kernels, (size_t)t->kx * t->ky * t->n_kernels, "potential lookup kernels");
    return STEM_OK;
}

int stem_potential_nodes(const stem_plan *plan) { return plan->opt.finite_projection ? STEM_FINITE_NODES : 1; }

/* Per-worker state of the table build: the radial table of every species and depth. */
typedef struct {
    const stem_plan *plan;
    stem_potential_table *t;
    const stem_atom_potential *potentials;
    float *tabs;   /* [species][node][RADIAL_POINTS] */
    long first;    /* the dispatcher's item i is kernel first + i */
    int species0;  /* radial tables: species species0 + i / RADIAL_CHUNKS */
    double **fine; /* per worker: the fine lattice of one radial table */
    long *fine_of; /* per worker: which table (species * nodes + node) it holds, -1: none */
} table_job;

#define RADIAL_CHUNKS 64

static int radial_work(void *ctx, int w, long i0, long i1)
{
    (void)w;
    table_job *job = ctx;
    const stem_potential_table *t = job->t;
    for (long i = i0; i < i1; i++) {
        int s = job->species0 + (int)(i / RADIAL_CHUNKS), c = (int)(i % RADIAL_CHUNKS);
        const stem_atom_potential *p = &job->potentials[t->species_z[s]];
        float *tab = job->tabs + (size_t)s * t->n_nodes * RADIAL_POINTS;
        int r0 = c * (RADIAL_POINTS / RADIAL_CHUNKS), r1 = r0 + RADIAL_POINTS / RADIAL_CHUNKS;
        if (t->finite) finite_radial_tables(p, t, t->cutoff, r0, r1, tab);
        else if (c == 0) radial_table(p, t->cutoff, tab);
    }
    return STEM_OK;
}

static int table_setup(void *ctx, int w)
{
    table_job *job = ctx;
    const stem_potential_table *t = job->t;
    job->fine[w] = stem_alloc(sizeof(double) * (size_t)(t->kx + 2) * t->ss * (size_t)(t->ky + 2) * t->ss,
                              "fine lattice of a potential kernel");
    job->fine_of[w] = -1;
    return job->fine[w] ? STEM_OK : STEM_ERR_MEMORY;
}

static void table_teardown(void *ctx, int w)
{
    table_job *job = ctx;
    free(job->fine[w]);
    job->fine[w] = NULL;
}

static int table_work(void *ctx, int w, long i0, long i1)
{
    table_job *job = ctx;
    stem_potential_table *t = job->t;
    size_t per_kernel = (size_t)t->kx * t->ky, subs = (size_t)t->ss * t->ss;
    for (long k = job->first + i0; k < job->first + i1; k++) { /* k = ((species * nodes + node) * ss + sub_y) * ss + sub_x */
        long table = k / (long)subs; /* species * nodes + node */
        int sub = (int)(k % (long)subs);
        if (job->fine_of[w] != table) {
            fine_lattice(job->plan, t, job->tabs + (size_t)table * RADIAL_POINTS, job->fine[w]);
            job->fine_of[w] = table;
        }
        build_kernel(t, job->fine[w], sub % t->ss, sub / t->ss, t->kernels + (size_t)k * per_kernel);
    }
    return STEM_OK;
}

int stem_potential_table_kernels(const stem_plan *plan, const stem_atom_potential *potentials, stem_potential_table *t,
                                 long k0, long k1)
{
    if (k1 <= k0) return STEM_OK;
    long per_species = (long)t->n_nodes * t->ss * t->ss;
    int s0 = (int)(k0 / per_species), s1 = (int)((k1 - 1) / per_species) + 1; /* the species this range needs */
    float *tabs = stem_alloc(sizeof(float) * RADIAL_POINTS * t->n_nodes * t->n_species, "radial potential tables");
    if (!tabs) return STEM_ERR_MEMORY;
    table_job job = {plan, t, potentials, tabs, k0, s0, NULL, NULL};
    job.fine = stem_calloc(plan->threads, sizeof(double *), "worker lattices");
    job.fine_of = stem_calloc(plan->threads, sizeof(long), "worker lattices");
    int err = job.fine && job.fine_of ? STEM_OK : STEM_ERR_MEMORY;
    stem_work radial = {&job, NULL, radial_work, NULL};
    if (!err) err = stem_dispatch(&radial, (long)(s1 - s0) * RADIAL_CHUNKS, 1, plan->threads, "radial potential tables");
    stem_work kernels = {&job, table_setup, table_work, table_teardown};
    if (!err) err = stem_dispatch(&kernels, k1 - k0, 1, plan->threads, "potential lookup table");
    free(job.fine);
    free(job.fine_of);
    free(tabs);
    return err;
}

int stem_potential_table_build(const stem_plan *plan, const stem_atoms *atoms, const stem_atom_potential *potentials,
                               stem_potential_table *t)
{
    STEM_TRY(stem_potential_table_init(plan, atoms, t));
    return stem_potential_table_kernels(plan, potentials, t, 0, t->n_kernels);
}

void stem_potential_table_free(stem_potential_table *t)
{
    free(t->kernels);
    t->kernels = NULL;
}

int stem_potential_slice_of(const stem_plan *plan, double z)
{
    /* atoms on a slice boundary belong to the slice that starts there, even when
     * z / dz rounds to just below the integer (20.3625 / 1.3575 = 14.999...) */
    int s = (int)floor(z / plan->dz + 1e-9);
    return s < 0 ? 0 : (s >= plan->n_slices ? plan->n_slices - 1 : s);
}

void stem_atom_slice_range(const stem_plan *plan, const stem_potential_table *t, double z, int *s0, int *s1)
{
    double reach = t->finite ? t->cutoff : 0;
    *s0 = stem_potential_slice_of(plan, z - reach);
    *s1 = stem_potential_slice_of(plan, z + reach) + 1;
}

/* The tabulated part between depths 0 and z (odd in z, whole beyond the cutoff) as at
 * most two depth kernels with weights, added to w[*n] with factor sign. */
static void add_partial(const stem_potential_table *t, double z, double sign, stem_node_weight *w, int *n)
{
    if (z < 0) z = -z, sign = -sign;
    const double *zn = t->z_nodes;
    int last = t->n_nodes - 1;
    if (z >= zn[last]) {
        w[(*n)++] = (stem_node_weight){last, sign};
        return;
    }
    int k = 0; /* zn[k - 1] <= z < zn[k], with an implicit depth 0 (nothing) before zn[0] */
    while (zn[k] <= z) k++;
    double lo = k ? zn[k - 1] : 0, f = (z - lo) / (zn[k] - lo);
    if (k) w[(*n)++] = (stem_node_weight){k - 1, sign * (1 - f)};
    w[(*n)++] = (stem_node_weight){k, sign * f};
}

int stem_atom_slice_weights(const stem_plan *plan, const stem_potential_table *t, double z, int s,
                            stem_node_weight w[4])
{
    if (!t->finite) {
        if (stem_potential_slice_of(plan, z) != s) return 0;
        w[0] = (stem_node_weight){0, 1.0};
        return 1;
    }
    /* the slice's share: part(top) - part(bottom), the first and last slices reaching out
     * to everything above and below them */
    double top = s == 0 ? -INFINITY : s * plan->dz - z, bottom = s == plan->n_slices - 1 ? INFINITY : (s + 1) * plan->dz - z;
    int n = 0;
    add_partial(t, bottom, 1.0, w, &n);
    add_partial(t, top, -1.0, w, &n);
    return n;
}

void stem_atom_placement(const stem_plan *plan, const stem_potential_table *t, int species, double x, double y,
                         long *px, long *py, size_t *kernel)
{
    int ss = t->ss;
    double ux = x / plan->dx, uy = y / plan->dy;
    *px = (long)floor(ux), *py = (long)floor(uy);
    int sx = (int)floor((ux - *px) * ss + 0.5), sy = (int)floor((uy - *py) * ss + 0.5);
    if (sx == ss) sx = 0, (*px)++;
    if (sy == ss) sy = 0, (*py)++;
    *kernel = ((size_t)species * t->n_nodes * ss + sy) * ss + sx;
}

/* Add weight times kernel k, centred on pixel (px, py) and wrapped periodically, to the
 * rows [row0, row0 + rows) that V holds (a whole slice: 0, ny). */
static void add_kernel_rows(const stem_plan *plan, const stem_potential_table *t, size_t kernel, long px, long py,
                            double weight, long row0, long rows, float *V)
{
    int nx = plan->nx, ny = plan->ny;
    const float *k = t->kernels + kernel * t->kx * t->ky;
    for (int j = 0; j < t->ky; j++) {
        long gy = ((py + j - t->ry) % ny + ny) % ny;
        if (gy < row0 || gy >= row0 + rows) continue;
        float *row = V + (gy - row0) * nx;
        const float *krow = k + (size_t)j * t->kx;
        long gx = ((px - t->rx) % nx + nx) % nx;
        for (int i = 0; i < t->kx; i++) {
            row[gx] += (float)weight * krow[i];
            if (++gx == nx) gx = 0;
        }
    }
}

/* Atom i's share of slice s (nothing if it does not reach it) into rows [row0, row0 + rows). */
static void add_atom_rows(const stem_plan *plan, const stem_potential_table *t, const stem_atoms *atoms, long i, int s,
                          long row0, long rows, float *V)
{
    stem_node_weight w[4];
    int n = stem_atom_slice_weights(plan, t, atoms->z[i], s, w);
    if (!n) return;
    long px, py;
    size_t kernel;
    stem_atom_placement(plan, t, t->species_of_z[atoms->Z[i]], atoms->x[i], atoms->y[i], &px, &py, &kernel);
    size_t node_stride = (size_t)t->ss * t->ss;
    for (int k = 0; k < n; k++)
        add_kernel_rows(plan, t, kernel + w[k].node * node_stride, px, py, atoms->occupancy[i] * w[k].weight, row0, rows,
                        V);
}

int stem_potential_slice_rows(const stem_plan *plan, const stem_potential_table *t, const stem_atoms *atoms, int s,
                              long row0, long rows, float *V)
{
    memset(V, 0, sizeof(float) * (size_t)rows * plan->nx);
    for (long i = 0; i < atoms->n; i++) add_atom_rows(plan, t, atoms, i, s, row0, rows, V);
    return STEM_OK;
}

int stem_potential_slices(const stem_plan *plan, const stem_potential_table *t, const stem_atoms *atoms, int s0,
                          int s1, float *V)
{
    size_t grid = (size_t)plan->nx * plan->ny;
    memset(V, 0, sizeof(float) * grid * (s1 - s0));
    for (long i = 0; i < atoms->n; i++) {
        int a0, a1;
        stem_atom_slice_range(plan, t, atoms->z[i], &a0, &a1);
        for (int s = a0 > s0 ? a0 : s0; s < a1 && s < s1; s++)
            add_atom_rows(plan, t, atoms, i, s, 0, plan->ny, V + (size_t)(s - s0) * grid);
    }
    return STEM_OK;
}

/* Per-worker state of the transmission build: one slice at a time. */
typedef struct {
    const stem_plan *plan;
    const stem_potential_table *table;
    const stem_atoms *atoms;
    const float *given;  /* potentials of slices first.. ([slice][ny][nx]) instead of the atoms' */
    stem_complex *trans; /* the transmission functions, or NULL: potentials wanted */
    float *V_out;        /* potentials of slices first.. (when trans is NULL) */
    float **V;
    stem_fft *fft;
    long first; /* the dispatcher's item i is slice first + i */
} trans_job;

static int trans_setup(void *ctx, int w)
{
    trans_job *job = ctx;
    size_t grid = (size_t)job->plan->nx * job->plan->ny;
    job->V[w] = stem_alloc(sizeof(float) * grid, "slice potential");
    if (!job->V[w]) return STEM_ERR_MEMORY;
    stem_complex *tmp = stem_fft_alloc(grid, "FFT planning buffer");
    if (!tmp) return STEM_ERR_MEMORY;
    int err = stem_fft_create(&job->fft[w], job->plan->nx, job->plan->ny, 1, tmp, 0);
    stem_fft_free(tmp);
    return err;
}

static void trans_teardown(void *ctx, int w)
{
    trans_job *job = ctx;
    free(job->V[w]);
    job->V[w] = NULL;
    stem_fft_destroy(&job->fft[w]);
}

/* Pixel averaging multiplies the potential's spectrum by sinc(kx/nx) sinc(ky/ny)
 * (about 0.83 per axis at the band limit, which lowered HAADF by ~15% at 0.06 A
 * pixels); dividing it out leaves the band-limited Kirkland potential itself. */
double stem_pixel_average_sinc(int k, int n)
{
    double a = M_PI * stem_fft_index(k, n) / n;
    return a ? sin(a) / a : 1;
}

static void undo_pixel_average(const stem_plan *plan, const stem_fft *fft, const float *V, stem_complex *work)
{
    int nx = plan->nx, ny = plan->ny;
    size_t grid = (size_t)nx * ny;
    for (size_t i = 0; i < grid; i++) work[i] = V[i];
    stem_fft_forward(fft, work);
    for (int j = 0; j < ny; j++) {
        double sy = stem_pixel_average_sinc(j, ny);
        for (int i = 0; i < nx; i++) {
            double sx = stem_pixel_average_sinc(i, nx);
            work[(size_t)j * nx + i] /= (float)(sx * sy * grid);
        }
    }
    stem_fft_inverse(fft, work);
}

/* Slice s's potential as its transmission function sees it (pixel averaging undone; the
 * real part), into V; work is a grid of scratch. */
static void slice_potential(const trans_job *job, int w, long s, float *V, stem_complex *work)
{
    size_t grid = (size_t)job->plan->nx * job->plan->ny;
    stem_potential_slices(job->plan, job->table, job->atoms, (int)s, (int)s + 1, job->V[w]);
    undo_pixel_average(job->plan, &job->fft[w], job->V[w], work);
    for (size_t i = 0; i < grid; i++) V[i] = crealf(work[i]);
}

/* t = exp(i sigma V), then zero every Fourier component beyond the band limit. */
static void transmission_of(const stem_plan *plan, const stem_fft *fft, const float *V, stem_complex *t)
{
    int nx = plan->nx, ny = plan->ny;
    size_t grid = (size_t)nx * ny;
    float q2max = (float)(plan->q_limit * plan->q_limit);
    for (size_t i = 0; i < grid; i++) t[i] = cexpf(I * (float)plan->sigma * V[i]);
    stem_fft_forward(fft, t);
    for (int j = 0; j < ny; j++) {
        float qy = stem_fft_index(j, ny) / (float)plan->cell[1];
        for (int i = 0; i < nx; i++) {
            float qx = stem_fft_index(i, nx) / (float)plan->cell[0];
            t[(size_t)j * nx + i] = qx * qx + qy * qy <= q2max ? t[(size_t)j * nx + i] / (float)grid : 0;
        }
    }
    stem_fft_inverse(fft, t);
}

static int trans_work(void *ctx, int w, long s0, long s1)
{
    trans_job *job = ctx;
    size_t grid = (size_t)job->plan->nx * job->plan->ny;
    for (long s = job->first + s0; s < job->first + s1; s++) {
        size_t at = (size_t)(s - job->first) * grid;
        if (!job->trans) { /* the potentials themselves (a transmission slice as scratch) */
            stem_complex *work = stem_fft_alloc(grid, "slice scratch");
            if (!work) return STEM_ERR_MEMORY;
            slice_potential(job, w, s, job->V_out + at, work);
            stem_fft_free(work);
            continue;
        }
        stem_complex *t = job->trans + s * grid;
        const float *V = job->given ? job->given + at : job->V[w];
        if (!job->given) slice_potential(job, w, s, job->V[w], t);
        transmission_of(job->plan, &job->fft[w], V, t);
    }
    return STEM_OK;
}

static int run_trans_job(trans_job *job, int s0, int s1, const char *what)
{
    int workers = job->plan->threads;
    job->V = stem_calloc(workers, sizeof(float *), "worker buffers");
    job->fft = stem_calloc(workers, sizeof(stem_fft), "worker plans");
    int err = job->V && job->fft ? STEM_OK : STEM_ERR_MEMORY;
    stem_work work = {job, trans_setup, trans_work, trans_teardown};
    if (!err) err = stem_dispatch(&work, s1 - s0, 1, workers, what);
    free(job->V);
    free(job->fft);
    return err;
}

int stem_transmission_build_slices(const stem_plan *plan, const stem_potential_table *table, const stem_atoms *atoms,
                                   int s0, int s1, stem_complex *trans)
{
    trans_job job = {.plan = plan, .table = table, .atoms = atoms, .trans = trans, .first = s0};
    return run_trans_job(&job, s0, s1, "transmission functions");
}

int stem_transmission_build(const stem_plan *plan, const stem_potential_table *table, const stem_atoms *atoms,
                            stem_complex *trans)
{
    return stem_transmission_build_slices(plan, table, atoms, 0, plan->n_slices, trans);
}

int stem_transmission_from_potentials(const stem_plan *plan, const float *V, int s0, int s1, stem_complex *trans)
{
    trans_job job = {.plan = plan, .given = V, .trans = trans, .first = s0};
    return run_trans_job(&job, s0, s1, "transmission functions (given potentials)");
}

int stem_potential_band_slices(const stem_plan *plan, const stem_potential_table *table, const stem_atoms *atoms,
                               int s0, int s1, float *V)
{
    trans_job job = {.plan = plan, .table = table, .atoms = atoms, .V_out = V, .first = s0};
    return run_trans_job(&job, s0, s1, "potential slices");
}
