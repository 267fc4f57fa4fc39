/* Projected potential lookup, slicing and transmission functions. */
#include "potential.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dispatcher.h"
#include "fft.h"

#define RADIAL_POINTS 16384

/* v(r) - v(cutoff) on a fine radial grid; linear interpolation is ample at
 * the sub-pixel sample distances used (never closer than dx/(2 ss)). */
static void radial_table(const stem_kirkland *p, double cutoff, float *tab)
{
    double v_cut = stem_projected_potential(p, cutoff);
    for (int i = 0; i < RADIAL_POINTS; i++) {
        double r = (i + 0.5) * cutoff / RADIAL_POINTS;
        double v = stem_projected_potential(p, r) - v_cut;
        tab[i] = (float)(v > 0 ? v : 0);
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

/* Kernel for an atom sitting sub_x/ss, sub_y/ss pixels past a pixel centre:
 * each pixel is the mean of ss x ss samples across its area. With ss even the
 * samples never fall on the atom, where K0 diverges. */
static void build_kernel(const stem_plan *plan, const stem_potential_table *t, const float *tab, double cutoff,
                         int sub_x, int sub_y, float *out)
{
    int ss = t->ss;
    for (int j = 0; j < t->ky; j++)
        for (int i = 0; i < t->kx; i++) {
            double sum = 0;
            for (int b = 0; b < ss; b++)
                for (int a = 0; a < ss; a++) {
                    double ux = (i - t->rx) + (a + 0.5) / ss - 0.5 - (double)sub_x / ss;
                    double uy = (j - t->ry) + (b + 0.5) / ss - 0.5 - (double)sub_y / ss;
                    double r = hypot(ux * plan->dx, uy * plan->dy);
                    if (r < cutoff) sum += radial_lookup(tab, cutoff, r);
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
    t->ss = plan->opt.supersampling; /* even: see build_kernel */
    t->rx = stem_plan_kernel_radius(cutoff, plan->dx);
    t->ry = stem_plan_kernel_radius(cutoff, plan->dy);
    t->kx = 2 * t->rx + 1;
    t->ky = 2 * t->ry + 1;
    t->n_kernels = (long)t->n_species * t->ss * t->ss;
    /* kernels wider than the cell are fine: add_atom_rows wraps, summing periodic images */
    STEM_ALLOC(t->kernels, (size_t)t->kx * t->ky * t->n_kernels, "potential lookup kernels");
    return STEM_OK;
}

/* Per-worker state of the table build: the radial table of every species. */
typedef struct {
    const stem_plan *plan;
    stem_potential_table *t;
    const float *tabs; /* [species][RADIAL_POINTS] */
    long first;        /* the dispatcher's item i is kernel first + i */
} table_job;

static int table_work(void *ctx, int w, long i0, long i1)
{
    (void)w;
    table_job *job = ctx;
    stem_potential_table *t = job->t;
    size_t per_kernel = (size_t)t->kx * t->ky;
    for (long k = job->first + i0; k < job->first + i1; k++) { /* k = (species * ss + sub_y) * ss + sub_x */
        int s = (int)(k / ((long)t->ss * t->ss)), sub = (int)(k % ((long)t->ss * t->ss));
        build_kernel(job->plan, t, job->tabs + (size_t)s * RADIAL_POINTS, job->plan->opt.potential_radius, sub % t->ss,
                     sub / t->ss, t->kernels + (size_t)k * per_kernel);
    }
    return STEM_OK;
}

int stem_potential_table_kernels(const stem_plan *plan, const stem_kirkland *kirkland, stem_potential_table *t, long k0,
                                 long k1)
{
    float *tabs = stem_alloc(sizeof(float) * RADIAL_POINTS * (t->n_species ? t->n_species : 1), "radial potential tables");
    if (!tabs) return STEM_ERR_MEMORY;
    for (int s = 0; s < t->n_species; s++)
        radial_table(&kirkland[t->species_z[s]], plan->opt.potential_radius, tabs + (size_t)s * RADIAL_POINTS);
    table_job job = {plan, t, tabs, k0};
    stem_work work = {&job, NULL, table_work, NULL};
    int err = stem_dispatch(&work, k1 - k0, 1, plan->threads, "potential lookup table");
    free(tabs);
    return err;
}

int stem_potential_table_build(const stem_plan *plan, const stem_atoms *atoms, const stem_kirkland *kirkland,
                               stem_potential_table *t)
{
    STEM_TRY(stem_potential_table_init(plan, atoms, t));
    return stem_potential_table_kernels(plan, kirkland, t, 0, t->n_kernels);
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

void stem_atom_placement(const stem_plan *plan, const stem_potential_table *t, int species, double x, double y,
                         long *px, long *py, size_t *kernel)
{
    int ss = t->ss;
    double ux = x / plan->dx, uy = y / plan->dy;
    *px = (long)floor(ux), *py = (long)floor(uy);
    int sx = (int)floor((ux - *px) * ss + 0.5), sy = (int)floor((uy - *py) * ss + 0.5);
    if (sx == ss) sx = 0, (*px)++;
    if (sy == ss) sy = 0, (*py)++;
    *kernel = (size_t)species * ss * ss + (size_t)sy * ss + sx;
}

/* Add one atom's kernel at its nearest sub-pixel position, wrapping periodically, to
 * the rows [row0, row0 + rows) that V holds (a whole slice: 0, ny). */
static void add_atom_rows(const stem_plan *plan, const stem_potential_table *t, int species, double x, double y,
                          double weight, long row0, long rows, float *V)
{
    int nx = plan->nx, ny = plan->ny;
    long px, py;
    size_t kernel, per_kernel = (size_t)t->kx * t->ky;
    stem_atom_placement(plan, t, species, x, y, &px, &py, &kernel);
    const float *k = t->kernels + kernel * per_kernel;
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

int stem_potential_slice_rows(const stem_plan *plan, const stem_potential_table *t, const stem_atoms *atoms, int s,
                              long row0, long rows, float *V)
{
    memset(V, 0, sizeof(float) * (size_t)rows * plan->nx);
    for (long i = 0; i < atoms->n; i++)
        if (stem_potential_slice_of(plan, atoms->z[i]) == s)
            add_atom_rows(plan, t, t->species_of_z[atoms->Z[i]], atoms->x[i], atoms->y[i], atoms->occupancy[i], row0,
                          rows, V);
    return STEM_OK;
}

int stem_potential_slices(const stem_plan *plan, const stem_potential_table *t, const stem_atoms *atoms, int s0,
                          int s1, float *V)
{
    size_t grid = (size_t)plan->nx * plan->ny;
    memset(V, 0, sizeof(float) * grid * (s1 - s0));
    for (long i = 0; i < atoms->n; i++) {
        int s = stem_potential_slice_of(plan, atoms->z[i]);
        if (s < s0 || s >= s1) continue;
        add_atom_rows(plan, t, t->species_of_z[atoms->Z[i]], atoms->x[i], atoms->y[i], atoms->occupancy[i], 0,
                      plan->ny, V + (size_t)(s - s0) * grid);
    }
    return STEM_OK;
}

/* Per-worker state of the transmission build: one slice at a time. */
typedef struct {
    const stem_plan *plan;
    const stem_potential_table *table;
    const stem_atoms *atoms;
    stem_complex *trans;
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

/* t = exp(i sigma V), then zero every Fourier component beyond the band limit. */
static int trans_work(void *ctx, int w, long s0, long s1)
{
    trans_job *job = ctx;
    const stem_plan *plan = job->plan;
    int nx = plan->nx, ny = plan->ny;
    size_t grid = (size_t)nx * ny;
    float q2max = (float)(plan->q_limit * plan->q_limit);
    for (long s = job->first + s0; s < job->first + s1; s++) {
        STEM_TRY(stem_potential_slices(plan, job->table, job->atoms, (int)s, (int)s + 1, job->V[w]));
        stem_complex *t = job->trans + s * grid;
        undo_pixel_average(plan, &job->fft[w], job->V[w], t);
        for (size_t i = 0; i < grid; i++) t[i] = cexpf(I * (float)plan->sigma * crealf(t[i]));
        stem_fft_forward(&job->fft[w], t);
        for (int j = 0; j < ny; j++) {
            float qy = stem_fft_index(j, ny) / (float)plan->cell[1];
            for (int i = 0; i < nx; i++) {
                float qx = stem_fft_index(i, nx) / (float)plan->cell[0];
                t[(size_t)j * nx + i] = qx * qx + qy * qy <= q2max ? t[(size_t)j * nx + i] / (float)grid : 0;
            }
        }
        stem_fft_inverse(&job->fft[w], t);
    }
    return STEM_OK;
}

int stem_transmission_build_slices(const stem_plan *plan, const stem_potential_table *table, const stem_atoms *atoms,
                                   int s0, int s1, stem_complex *trans)
{
    int workers = plan->threads;
    trans_job job = {plan, table, atoms, trans, NULL, NULL, s0};
    job.V = stem_calloc(workers, sizeof(float *), "worker buffers");
    job.fft = stem_calloc(workers, sizeof(stem_fft), "worker plans");
    int err = job.V && job.fft ? STEM_OK : STEM_ERR_MEMORY;
    stem_work work = {&job, trans_setup, trans_work, trans_teardown};
    if (!err) err = stem_dispatch(&work, s1 - s0, 1, workers, "transmission functions");
    free(job.V);
    free(job.fft);
    return err;
}

int stem_transmission_build(const stem_plan *plan, const stem_potential_table *table, const stem_atoms *atoms,
                            stem_complex *trans)
{
    return stem_transmission_build_slices(plan, table, atoms, 0, plan->n_slices, trans);
}
