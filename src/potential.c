/* Projected potential: blurred radial profiles, slices, the band-limited potential and the
 * transmission functions.
 *
 * Sampling an atom's potential on the grid aliases what lies beyond Nyquist into the band,
 * and that alias depends on where the atom sits within a pixel (heavy atoms: 10-25% of
 * the high-angle signal). Each atom's profile is therefore blurred by a Gaussian whose
 * spectrum has fallen by STEM_BLUR_ALIAS (plan.h) from the band edge to its nearest alias,
 * sampled at the atom's exact position, and the Gaussian is divided out in Fourier space
 * inside the band: the slice's potential is then the band-limited potential itself, to
 * about 1e-5, on any grid and for any sub-pixel position. */
#include "potential.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dispatcher.h"
#include "fft.h"

#define RADIAL_POINTS STEM_RADIAL_POINTS
/* Finite projection: the part of an atom's potential between depth 0 and z (relative to
 * its centre) is tabulated at STEM_FINITE_NODES depths up to the cutoff, spaced like
 * sinh(FINITE_STRETCH k / n) so that they crowd near the centre, where the part grows
 * fastest; between depths it is interpolated linearly (about 0.15% of a slice's share
 * for 1 Angstrom slices of Si, measured against direct quadrature). */
#define FINITE_STRETCH 5.0

static double radius_of(int i, double cutoff) { return (i + 0.5) * cutoff / RADIAL_POINTS; }

/* v(r) - v(cutoff) at the midpoints of RADIAL_POINTS cells from 0 to the cutoff: the
 * nodes of the blur's quadrature (blur_profile). */
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
            tabs[(size_t)k * RADIAL_POINTS + i] =
                (float)(v > 0 && F[t->n_nodes - 1] > 0 ? 0.5 * v * F[k] / F[t->n_nodes - 1] : 0);
    }
}

/* exp(-x) I0(x) for x >= 0 (Abramowitz & Stegun 9.8.1-2, relative error below 2e-7). */
static double bessel_i0_scaled(double x)
{
    if (x < 3.75) {
        double t = (x / 3.75) * (x / 3.75);
        double i0 =
            1 + t * (3.5156229 + t * (3.0899424 + t * (1.2067492 + t * (0.2659732 + t * (0.0360768 + t * 0.0045813)))));
        return i0 * exp(-x);
    }
    double u = 3.75 / x;
    double p = 0.39894228 +
        u *
            (0.01328592 +
             u *
                 (0.00225319 +
                  u *
                      (-0.00157565 +
                       u * (0.00916281 + u * (-0.02057706 + u * (0.02635537 + u * (-0.01647633 + u * 0.00392377)))))));
    return p / sqrt(x);
}

/* The blur's quadrature nodes: the radial table's cells gathered into blocks of an odd
 * number of cells, r / 256 wide (at least a cell) near the nucleus, where p is logarithmic,
 * and at most sigma / 8 beyond; each node is the block's midpoint (a cell's midpoint, where
 * the table holds p) with weight p r width. The composite midpoint rule on an integrand
 * smooth on the scale of sigma converges fast, where lumping each block's mass at its
 * centroid would blur by another width^2 / 12 (measured: the slices stay within 1.3e-5 of
 * the closed form, unit_potential; 3-14x faster than one node per cell). */
static int profile_blocks(const float *tab, double cutoff, double sigma, double *weight, double *centre)
{
    double cell = cutoff / RADIAL_POINTS;
    int n = 0;
    for (int i0 = 0; i0 < RADIAL_POINTS; n++) {
        double target = fmin(sigma / 8, i0 * cell / 256);
        int per = (int)fmax(1, floor(target / cell));
        per -= !(per & 1); /* odd: the middle cell's midpoint is the block's */
        if (i0 + per > RADIAL_POINTS) per = 1;
        int mid = i0 + per / 2;
        centre[n] = radius_of(mid, cutoff);
        weight[n] = tab[mid] * centre[n] * per * cell;
        i0 += per;
    }
    return n;
}

/* h(r_i) = (p * g)(r_i) at r_i = i step: the 2D convolution of the radial profile p with
 * a normalised Gaussian of width sigma, in polar form
 * h(r) = int p(r') r' exp(-(r - r')^2 / 2 sigma^2) I0e(r r' / sigma^2) dr' / sigma^2. */
static void blur_profile(const stem_potential_table *t, const float *tab, double *weight, double *centre, float *h)
{
    double s = t->blur_sigma, s2 = s * s, span = (STEM_BLUR_REACH + 1) * s;
    int n = profile_blocks(tab, t->cutoff, s, weight, centre), b0 = 0;
    for (int i = 0; i < t->points; i++) {
        double r = i * t->step, sum = 0;
        while (b0 < n && centre[b0] < r - span) b0++; /* r grows: the window's start only moves on */
        for (int b = b0; b < n && centre[b] < r + span; b++) {
            double d = r - centre[b];
            if (weight[b] != 0) sum += weight[b] * exp(-d * d / (2 * s2)) * bessel_i0_scaled(r * centre[b] / s2);
        }
        h[i] = (float)(sum / s2);
    }
    h[t->points - 1] = h[t->points - 2] = 0; /* beyond the reach: nothing */
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
    stem_blur_geometry g = stem_plan_blur_geometry(plan);
    t->blur_sigma = g.sigma;
    t->reach = g.reach;
    t->step = g.step;
    t->points = g.points;
    t->rx = g.rx;
    t->ry = g.ry;
    t->kx = 2 * t->rx + 2; /* the box starts at the pixel below the atom minus rx */
    t->ky = 2 * t->ry + 2;
    t->n_profiles = (long)t->n_species * t->n_nodes;
    /* profiles wider than the cell are fine: add_profile_rows wraps, summing periodic images */
    STEM_ALLOC(t->profiles, (size_t)t->points * t->n_profiles, "potential profiles");
    return STEM_OK;
}

int stem_potential_nodes(const stem_plan *plan) { return plan->opt.finite_projection ? STEM_FINITE_NODES : 1; }

/* State of the table build: the radial table of every species and depth, then their blurs. */
typedef struct {
    stem_potential_table *t;
    const stem_atom_potential *potentials;
    float *tabs;  /* [species][node][RADIAL_POINTS] */
    long first;   /* blur item i is profile first + i */
    int species0; /* radial tables: species species0 + i / RADIAL_CHUNKS */
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
        if (t->finite)
            finite_radial_tables(p, t, t->cutoff, r0, r1, tab);
        else if (c == 0)
            radial_table(p, t->cutoff, tab);
    }
    return STEM_OK;
}

static int blur_work(void *ctx, int w, long i0, long i1)
{
    (void)w;
    table_job *job = ctx;
    stem_potential_table *t = job->t;
    double *quad = stem_alloc(2 * sizeof(double) * RADIAL_POINTS, "blur quadrature");
    if (!quad) return STEM_ERR_MEMORY;
    for (long k = job->first + i0; k < job->first + i1; k++) /* k = species * nodes + node */
        blur_profile(t, job->tabs + (size_t)k * RADIAL_POINTS, quad, quad + RADIAL_POINTS,
                     t->profiles + (size_t)k * t->points);
    free(quad);
    return STEM_OK;
}

int stem_potential_table_profiles(const stem_plan *plan, const stem_atom_potential *potentials, stem_potential_table *t,
                                  long k0, long k1)
{
    if (k1 <= k0) return STEM_OK;
    int s0 = (int)(k0 / t->n_nodes), s1 = (int)((k1 - 1) / t->n_nodes) + 1; /* the species this range needs */
    float *tabs = stem_alloc(sizeof(float) * RADIAL_POINTS * t->n_nodes * t->n_species, "radial potential tables");
    if (!tabs) return STEM_ERR_MEMORY;
    table_job job = {t, potentials, tabs, k0, s0};
    stem_work radial = {&job, NULL, radial_work, NULL};
    int err = stem_dispatch(&radial, (long)(s1 - s0) * RADIAL_CHUNKS, 1, plan->threads, "radial potential tables");
    stem_work blur = {&job, NULL, blur_work, NULL};
    if (!err) err = stem_dispatch(&blur, k1 - k0, 1, plan->threads, "potential profiles");
    free(tabs);
    return err;
}

int stem_potential_table_build(const stem_plan *plan, const stem_atoms *atoms, const stem_atom_potential *potentials,
                               stem_potential_table *t)
{
    STEM_TRY(stem_potential_table_init(plan, atoms, t));
    return stem_potential_table_profiles(plan, potentials, t, 0, t->n_profiles);
}

void stem_potential_table_free(stem_potential_table *t)
{
    if (!t->borrowed) free(t->profiles);
    t->profiles = NULL;
    t->borrowed = 0;
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
    double top = s == 0 ? -INFINITY : s * plan->dz - z,
           bottom = s == plan->n_slices - 1 ? INFINITY : (s + 1) * plan->dz - z;
    int n = 0;
    add_partial(t, bottom, 1.0, w, &n);
    add_partial(t, top, -1.0, w, &n);
    return n;
}

const float *stem_atom_profile(const stem_potential_table *t, int species)
{
    return t->profiles + (size_t)species * t->n_nodes * t->points;
}

/* The grid the potential is built on: the run's, or `oversampling` times finer. */
typedef struct {
    int nx, ny, m;
    double dx, dy;
} potential_grid;

static potential_grid grid_of(const stem_plan *plan)
{
    int m = plan->opt.oversampling > 1 ? plan->opt.oversampling : 1;
    return (potential_grid){m * plan->nx, m * plan->ny, m, plan->dx / m, plan->dy / m};
}

/* Add weight times the blurred profile h, centred at (x, y) Angstrom and wrapped
 * periodically, to the rows [row0, row0 + rows) of the potential's grid that V holds. */
static void add_profile_rows(const stem_plan *plan, const stem_potential_table *t, const float *h, double x, double y,
                             double weight, long row0, long rows, float *V)
{
    potential_grid g = grid_of(plan);
    int nx = g.nx, ny = g.ny;
    double ux = x / g.dx, uy = y / g.dy, reach2 = t->reach * t->reach, per_step = 1 / t->step;
    long px = (long)floor(ux) - t->rx, py = (long)floor(uy) - t->ry; /* the box's first pixel */
    for (int j = 0; j < t->ky; j++) {
        long gy = ((py + j) % ny + ny) % ny;
        if (gy < row0 || gy >= row0 + rows) continue;
        double oy = (py + j - uy) * g.dy, oy2 = oy * oy;
        if (oy2 >= reach2) continue;
        /* only the row's chord of the circle, widened by a pixel each side (the test below
         * decides, as before: the same pixels, the same sums) */
        double half = sqrt(reach2 - oy2) / g.dx;
        int i0 = (int)floor(ux - px - half) - 1, i1 = (int)ceil(ux - px + half) + 1;
        if (i0 < 0) i0 = 0;
        if (i1 > t->kx) i1 = t->kx;
        float *row = V + (gy - row0) * nx;
        long gx = ((px + i0) % nx + nx) % nx;
        for (int i = i0; i < i1; i++, gx = gx + 1 == nx ? 0 : gx + 1) {
            double ox = (px + i - ux) * g.dx, r2 = ox * ox + oy2;
            if (r2 >= reach2) continue;
            double u = sqrt(r2) * per_step;
            int k = (int)u;
            row[gx] += (float)(weight * (h[k] + (u - k) * (h[k + 1] - h[k])));
        }
    }
}

/* Atom i's share of slice s (nothing if it does not reach it) into rows [row0, row0 + rows). */
static void add_atom_rows(const stem_plan *plan, const stem_potential_table *t, const stem_atoms *atoms, long i, int s,
                          long row0, long rows, float *V)
{
    stem_node_weight w[4];
    int n = stem_atom_slice_weights(plan, t, atoms->z[i], s, w);
    const float *h = stem_atom_profile(t, t->species_of_z[atoms->Z[i]]);
    for (int k = 0; k < n; k++)
        add_profile_rows(plan, t, h + (size_t)w[k].node * t->points, atoms->x[i], atoms->y[i],
                         atoms->occupancy[i] * w[k].weight, row0, rows, V);
}

/* Whether atom i's box of rows (wrapped) meets rows [row0, row0 + rows): most atoms of a
 * band's slice do not (a cheap test before the box's rows are walked). */
static int box_meets_rows(const stem_plan *plan, const stem_potential_table *t, double y, long row0, long rows)
{
    potential_grid g = grid_of(plan);
    if (rows >= g.ny) return 1;
    long first = (((long)floor(y / g.dy) - t->ry) % g.ny + g.ny) % g.ny; /* the box's first row, wrapped */
    long past = row0 - first;                                            /* where the band starts, from there */
    past = (past % g.ny + g.ny) % g.ny;
    return past < t->ky || past + rows > g.ny; /* the band starts inside the box, or wraps into it */
}

int stem_potential_slice_rows(const stem_plan *plan, const stem_potential_table *t, const stem_atoms *atoms, int s,
                              long row0, long rows, float *V)
{
    memset(V, 0, sizeof(float) * (size_t)rows * grid_of(plan).nx);
    for (long i = 0; i < atoms->n; i++) {
        int a0, a1;
        stem_atom_slice_range(plan, t, atoms->z[i], &a0, &a1);
        if (s >= a0 && s < a1 && box_meets_rows(plan, t, atoms->y[i], row0, rows))
            add_atom_rows(plan, t, atoms, i, s, row0, rows, V);
    }
    return STEM_OK;
}

int stem_potential_slices(const stem_plan *plan, const stem_potential_table *t, const stem_atoms *atoms, int s0, int s1,
                          float *V)
{
    potential_grid g = grid_of(plan);
    size_t grid = (size_t)g.nx * g.ny;
    memset(V, 0, sizeof(float) * grid * (s1 - s0));
    for (long i = 0; i < atoms->n; i++) {
        int a0, a1;
        stem_atom_slice_range(plan, t, atoms->z[i], &a0, &a1);
        for (int s = a0 > s0 ? a0 : s0; s < a1 && s < s1; s++)
            add_atom_rows(plan, t, atoms, i, s, 0, g.ny, V + (size_t)(s - s0) * grid);
    }
    return STEM_OK;
}

/* Per-worker state of the transmission build: one slice at a time. */
typedef struct {
    const stem_plan *plan;
    const stem_potential_table *table;
    const stem_atoms *atoms;
    const float *given;  /* potentials of slices first.. (the potential's grid) instead of the atoms' */
    const float *splat;  /* blurred samples of slices first.. (stem_potential_splat_bands) instead of the atoms' */
    stem_complex *trans; /* the transmission functions, or NULL: potentials wanted */
    float *V_out;        /* potentials of slices first.. on the potential's grid (when trans is NULL) */
    float **V;           /* per worker: a slice's blurred potential on the potential's grid */
    stem_complex **work; /* per worker: a wave on the potential's grid */
    stem_fft *fine;      /* per worker: FFTs on the potential's grid */
    stem_fft *run;       /* per worker: FFTs on the run's grid (oversampling > 1 only) */
    long first;          /* the dispatcher's item i is slice first + i */
} trans_job;

static int trans_setup(void *ctx, int w)
{
    trans_job *job = ctx;
    const stem_plan *plan = job->plan;
    potential_grid g = grid_of(plan);
    size_t fine = (size_t)g.nx * g.ny;
    job->V[w] = job->splat ? NULL : stem_alloc(sizeof(float) * fine, "slice potential");
    job->work[w] = stem_fft_alloc(fine, "slice transmission scratch");
    if (!(job->V[w] || job->splat) || !job->work[w]) return STEM_ERR_MEMORY;
    int measure = stem_options_fft_measure(&plan->opt); /* the plans of the run's shared wisdom */
    STEM_TRY(stem_fft_create(&job->fine[w], g.nx, g.ny, 1, job->work[w], measure));
    if (g.m == 1) return STEM_OK;
    return stem_fft_create(&job->run[w], plan->nx, plan->ny, 1, job->work[w], measure);
}

static void trans_teardown(void *ctx, int w)
{
    trans_job *job = ctx;
    free(job->V[w]);
    job->V[w] = NULL;
    stem_fft_free(job->work[w]);
    job->work[w] = NULL;
    stem_fft_destroy(&job->fine[w]);
    stem_fft_destroy(&job->run[w]);
}

/* stem_potential_deblur's parts: exp(c q^2) / norm inside |q|^2 <= band2 (the potential grid's
 * band), else 0; norm is that grid's FFT size. */
typedef struct {
    double c, band2, norm;
} deblur_parts;

static deblur_parts deblur_parts_of(const stem_plan *plan, const stem_potential_table *t)
{
    int m = grid_of(plan).m;
    double s = t->blur_sigma;
    return (deblur_parts){2 * M_PI * M_PI * s * s, (m * plan->q_limit) * (m * plan->q_limit),
                          (double)m * m * plan->nx * plan->ny};
}

double stem_potential_deblur(const stem_plan *plan, const stem_potential_table *t, double q2)
{
    deblur_parts d = deblur_parts_of(plan, t);
    return q2 <= d.band2 ? exp(d.c * q2) / d.norm : 0;
}

/* The blurred samples V on grid g times stem_potential_deblur, in Fourier space, into work.
 * The Gaussian is separable: exp(c qx^2) exp(c qy^2) from two tables instead of an exp per
 * pixel (the same factor to ~1e-16, below a float's rounding). */
static int deblurred_spectrum(const stem_plan *plan, const stem_potential_table *t, potential_grid g,
                              const stem_fft *fft, const float *V, stem_complex *work)
{
    size_t grid = (size_t)g.nx * g.ny;
    double *fx = stem_alloc(sizeof(double) * (g.nx + g.ny), "deblur factors"), *fy = fx ? fx + g.nx : NULL;
    if (!fx) return STEM_ERR_MEMORY;
    deblur_parts d = deblur_parts_of(plan, t);
    for (int i = 0; i < g.nx; i++) {
        double qx = stem_fft_index(i, g.nx) / plan->cell[0];
        fx[i] = qx * qx <= d.band2 ? exp(d.c * qx * qx) : 0; /* beyond the band: no exp to overflow */
    }
    for (int j = 0; j < g.ny; j++) {
        double qy = stem_fft_index(j, g.ny) / plan->cell[1];
        fy[j] = qy * qy <= d.band2 ? exp(d.c * qy * qy) / d.norm : 0;
    }
    for (size_t i = 0; i < grid; i++) work[i] = V[i];
    stem_fft_forward(fft, work);
    for (int j = 0; j < g.ny; j++) {
        double qy = stem_fft_index(j, g.ny) / plan->cell[1];
        for (int i = 0; i < g.nx; i++) {
            double qx = stem_fft_index(i, g.nx) / plan->cell[0];
            work[(size_t)j * g.nx + i] *= qx * qx + qy * qy <= d.band2 ? (float)(fx[i] * fy[j]) : 0.0f;
        }
    }
    free(fx);
    return STEM_OK;
}

/* The run's band (|q| <= q_limit) of a spectrum on grid g, divided by scale, into the run's
 * grid's spectrum out (zero beyond the band): the fine grid's frequencies the run holds. */
static void run_band(const stem_plan *plan, potential_grid g, const stem_complex *in, double scale, stem_complex *out)
{
    int nx = plan->nx, ny = plan->ny;
    double q2max = plan->q_limit * plan->q_limit;
    for (int j = 0; j < ny; j++) {
        int ky = stem_fft_index(j, ny);
        double qy = ky / plan->cell[1];
        for (int i = 0; i < nx; i++) {
            int kx = stem_fft_index(i, nx);
            double qx = kx / plan->cell[0];
            size_t at = (size_t)((ky + g.ny) % g.ny) * g.nx + (kx + g.nx) % g.nx;
            out[(size_t)j * nx + i] = qx * qx + qy * qy <= q2max ? in[at] / (float)scale : 0;
        }
    }
}

/* exp(i sigma V) of work (a real potential on grid g), then the run's band of it into t
 * (the run's grid). */
static void transmission_of(const stem_plan *plan, potential_grid g, const stem_fft *fine, const stem_fft *run,
                            stem_complex *work, stem_complex *t)
{
    size_t grid = (size_t)g.nx * g.ny;
    float sigma = (float)plan->sigma;
    for (size_t i = 0; i < grid; i++) { /* cexpf(i x) without its classification and exp(0): the same bits */
        float s, c;
        sincosf(sigma * crealf(work[i]), &s, &c);
        work[i] = CMPLXF(c, s);
    }
    stem_fft_forward(fine, work);
    run_band(plan, g, work, (double)grid, t);
    stem_fft_inverse(g.m > 1 ? run : fine, t);
}

static int trans_work(void *ctx, int w, long s0, long s1)
{
    trans_job *job = ctx;
    const stem_plan *plan = job->plan;
    size_t grid = (size_t)plan->nx * plan->ny;
    potential_grid g = grid_of(plan);
    size_t fine = (size_t)g.nx * g.ny;
    stem_complex *work = job->work[w];
    const stem_fft *run = g.m > 1 ? &job->run[w] : &job->fine[w];
    for (long s = job->first + s0; s < job->first + s1; s++) {
        size_t at = (size_t)(s - job->first) * fine;
        if (job->given) { /* a stored potential: the same floats the atoms' path exponentiates */
            for (size_t i = 0; i < fine; i++) work[i] = job->given[at + i];
            transmission_of(plan, g, &job->fine[w], run, work, job->trans + s * grid);
            continue;
        }
        const float *V = job->splat ? job->splat + at : job->V[w];
        if (!job->splat) stem_potential_slices(plan, job->table, job->atoms, (int)s, (int)s + 1, job->V[w]);
        STEM_TRY(deblurred_spectrum(plan, job->table, g, &job->fine[w], V, work));
        stem_fft_inverse(&job->fine[w], work);
        if (!job->trans) { /* the potential itself (real part) */
            for (size_t i = 0; i < fine; i++) job->V_out[at + i] = crealf(work[i]);
            continue;
        }
        transmission_of(plan, g, &job->fine[w], run, work, job->trans + s * grid); /* the real part, as stored */
    }
    return STEM_OK;
}

static int run_trans_job(trans_job *job, int s0, int s1, const char *what, stem_work_queue *queue)
{
    int workers = job->plan->threads;
    job->V = stem_calloc(workers, sizeof(float *), "worker buffers");
    job->work = stem_calloc(workers, sizeof(stem_complex *), "worker buffers");
    job->fine = stem_calloc(workers, sizeof(stem_fft), "worker plans");
    job->run = stem_calloc(workers, sizeof(stem_fft), "worker plans");
    int err = job->V && job->work && job->fine && job->run ? STEM_OK : STEM_ERR_MEMORY;
    stem_work work = {job, trans_setup, trans_work, trans_teardown};
    if (!err) err = stem_dispatch_queued(&work, s1 - s0, 1, workers, what, queue);
    free(job->V);
    free(job->work);
    free(job->fine);
    free(job->run);
    return err;
}

int stem_transmission_build_slices(const stem_plan *plan, const stem_potential_table *table, const stem_atoms *atoms,
                                   int s0, int s1, stem_complex *trans)
{
    trans_job job = {.plan = plan, .table = table, .atoms = atoms, .trans = trans, .first = s0};
    return run_trans_job(&job, s0, s1, "transmission functions", NULL);
}

int stem_transmission_build(const stem_plan *plan, const stem_potential_table *table, const stem_atoms *atoms,
                            stem_complex *trans)
{
    return stem_transmission_build_slices(plan, table, atoms, 0, plan->n_slices, trans);
}

int stem_transmission_from_potentials(const stem_plan *plan, const float *V, int s0, int s1, stem_complex *trans)
{
    trans_job job = {.plan = plan, .given = V, .trans = trans, .first = s0};
    return run_trans_job(&job, s0, s1, "transmission functions (given potentials)", NULL);
}

int stem_potential_band_slices(const stem_plan *plan, const stem_potential_table *table, const stem_atoms *atoms,
                               int s0, int s1, float *V)
{
    trans_job job = {.plan = plan, .table = table, .atoms = atoms, .V_out = V, .first = s0};
    return run_trans_job(&job, s0, s1, "potential slices", NULL);
}

int stem_transmission_from_splats(const stem_plan *plan, const stem_potential_table *table, const float *splat, int s0,
                                  int s1, stem_complex *trans, stem_work_queue *queue)
{
    trans_job job = {.plan = plan, .table = table, .splat = splat, .trans = trans, .first = s0};
    return run_trans_job(&job, s0, s1, "transmission functions", queue);
}

/* The splat of slices first.. in bands of rows: item i is band i % bands of slice first + i / bands. */
typedef struct {
    const stem_plan *plan;
    const stem_potential_table *table;
    const stem_atoms *atoms;
    float *V;
    long first, bands;
} splat_job;

static int splat_work(void *ctx, int w, long i0, long i1)
{
    (void)w;
    const splat_job *job = ctx;
    potential_grid g = grid_of(job->plan);
    for (long i = i0; i < i1; i++) {
        long s = i / job->bands, b = i % job->bands;
        long r0 = b * g.ny / job->bands, r1 = (b + 1) * g.ny / job->bands;
        float *at = job->V + (size_t)s * g.nx * g.ny + (size_t)r0 * g.nx;
        stem_potential_slice_rows(job->plan, job->table, job->atoms, (int)(job->first + s), r0, r1 - r0, at);
    }
    return STEM_OK;
}

int stem_potential_splat_bands(const stem_plan *plan, const stem_potential_table *table, const stem_atoms *atoms,
                               int s0, int s1, int bands, float *V, stem_work_queue *queue)
{
    splat_job job = {plan, table, atoms, V, s0, bands};
    stem_work work = {&job, NULL, splat_work, NULL};
    long n = (long)(s1 - s0) * bands;
    return stem_dispatch_queued(&work, n, 1, plan->threads, "potential slices (bands)", queue);
}
