/* Projected potential of single atoms (stem_potential_table_build, the blurred slices and
 * stem_potential_band_slices, the band-limited potential the transmission functions use)
 * against Kirkland's closed form evaluated independently here (K0 by quadrature, its
 * Fourier-Bessel transform by quadrature with libm's j0): on and off pixel centres, for
 * light and heavy atoms, the potential's spectrum inside the band limit must be the
 * closed form's, whatever the atom's sub-pixel position. */
#include <complex.h>
#include <math.h>

#include "check.h"
#include "kirkland_ref.h"
#include "fft.h"
#include "physics.h"
#include "../../io/config.h"
#include "../../io/scattering_tables.h"
#include "plan.h"
#include "potential.h"

/* K0 quadrature step 0.01 (~1e-12): the potential tests evaluate v_z very often. */
static double vz(const stem_kirkland *p, double r) { return ref_projected_potential(p, r, 0.01); }

static stem_kirkland kirk[STEM_MAX_Z + 1];
static stem_atom_potential pot[STEM_MAX_Z + 1]; /* kirk as the code's terms */

typedef struct {
    stem_config cfg;
    stem_atoms atoms;
    stem_plan plan;
    stem_potential_table table;
    float *V;
} pot_case;

/* One or more atoms of element Z in a cell; the band-limited potential of every slice. */
static void pot_build(pot_case *c, const char *ini, double cell_xy, double cell_z, int n, const double *xyz, int Z,
                      double occupancy)
{
    memset(c, 0, sizeof *c);
    REQUIRE(stem_config_load_string(&c->cfg, "potential.ini", ini) == STEM_OK);
    c->atoms.cell[0] = c->atoms.cell[1] = cell_xy;
    c->atoms.cell[2] = cell_z;
    REQUIRE(stem_atoms_alloc(&c->atoms, n) == STEM_OK);
    for (int i = 0; i < n; i++) {
        c->atoms.Z[i] = Z;
        c->atoms.x[i] = xyz[3 * i];
        c->atoms.y[i] = xyz[3 * i + 1];
        c->atoms.z[i] = xyz[3 * i + 2];
        c->atoms.occupancy[i] = occupancy;
    }
    stem_layout L = {.world_size = 1, .n_groups = 1, .group_size = 1, .ranks_on_node = 1};
    REQUIRE(stem_plan_build(&c->plan, &c->cfg, &c->atoms, NULL, &L) == STEM_OK);
    REQUIRE(stem_potential_table_build(&c->plan, &c->atoms, pot, &c->table) == STEM_OK);
    c->V = calloc((size_t)c->plan.pot_nx * c->plan.pot_ny * c->plan.n_slices, sizeof(float)); /* the potential's grid */
    REQUIRE(c->V);
    REQUIRE(stem_potential_band_slices(&c->plan, &c->table, &c->atoms, 0, c->plan.n_slices, c->V) == STEM_OK);
}

static void pot_free(pot_case *c)
{
    free(c->V);
    stem_potential_table_free(&c->table);
    stem_plan_free(&c->plan);
    stem_atoms_free(&c->atoms);
}

/* What the cutoff removes from the integral of an atom's potential: the
 * tail beyond rc plus pi rc^2 v(rc) (inside rc the kernel is v - v(rc)).
 * Simpson's rule on [rc, rc + 8] with 0.01 Angstrom steps (smooth there). */
static double cutoff_loss(const stem_kirkland *p, double rc)
{
    int n = 800;
    double h = 8.0 / n, tail = 0;
    for (int i = 0; i <= n; i++) {
        double r = rc + i * h, w = (i == 0 || i == n) ? 1 : (i % 2 ? 4 : 2);
        tail += w * vz(p, r) * 2 * M_PI * r;
    }
    return tail * h / 3 + M_PI * rc * rc * vz(p, rc);
}

/* P(q) = 2 pi int_0^rc (v(r) - v(rc)) J0(2 pi q r) r dr for nq frequencies q_k = k dq: with
 * r = exp(u) the logarithmic singularity at r = 0 becomes a smooth, fast-decaying integrand
 * (Simpson's rule, 6000 steps from r = e^-20). */
static void profile_transform(const stem_kirkland *p, double rc, double dq, int nq, double *P)
{
    int n = 6000;
    double u0 = -20, u1 = log(rc), h = (u1 - u0) / n, vcut = vz(p, rc);
    for (int k = 0; k < nq; k++) P[k] = 0;
    for (int i = 0; i <= n; i++) {
        double r = exp(u0 + i * h), w = (i == 0 || i == n) ? 1 : (i % 2 ? 4 : 2), f = (vz(p, r) - vcut) * r * r;
        for (int k = 0; k < nq; k++) P[k] += w * f * j0(2 * M_PI * k * dq * r);
    }
    for (int k = 0; k < nq; k++) P[k] *= 2 * M_PI * h / 3;
}

/* The band-limited slice's Fourier coefficients (plain DFT in double, independent of the
 * product's FFTs) times the cell area against P(|q|) exp(-2 pi i q.r0): inside the band the
 * closed form's, beyond it nothing. Returns the worst error relative to P(0). */
static double compare_spectrum(const pot_case *c, double ax, double ay, const stem_kirkland *p, const char *what)
{
    const stem_plan *pl = &c->plan;
    int nx = pl->pot_nx, ny = pl->pot_ny, nq = 2048;
    double band = pl->opt.oversampling * pl->q_limit; /* the potential grid's 2/3 of Nyquist */
    double area = pl->cell[0] * pl->cell[1], dq = 1.5 * band / nq, P[2048];
    profile_transform(p, c->cfg.opt.potential_radius, dq, nq, P);
    double complex *rows = calloc((size_t)nx * ny, sizeof *rows);
    REQUIRE(rows);
    for (int j = 0; j < ny; j++) /* along x first */
        for (int k = 0; k < nx; k++) {
            double complex acc = 0;
            for (int i = 0; i < nx; i++) acc += c->V[(size_t)j * nx + i] * cexp(-2 * M_PI * I * (double)k * i / nx);
            rows[(size_t)j * nx + k] = acc;
        }
    double worst = 0, beyond = 0;
    for (int l = 0; l < ny; l++)
        for (int k = 0; k < nx; k++) {
            double complex acc = 0;
            for (int j = 0; j < ny; j++) acc += rows[(size_t)j * nx + k] * cexp(-2 * M_PI * I * (double)l * j / ny);
            acc *= area / ((double)nx * ny);
            double qx = stem_fft_index(k, nx) / pl->cell[0], qy = stem_fft_index(l, ny) / pl->cell[1],
                   q = hypot(qx, qy);
            if (fabs(q - band) < 1e-9 * band) continue; /* on the edge: rounding decides */
            if (q > band) {
                beyond = fmax(beyond, cabs(acc));
                continue;
            }
            double u = q / dq;
            int i0 = (int)u;
            double Pq = P[i0] + (u - i0) * (P[i0 + 1] - P[i0]); /* dq ~ 0.002 / A: linear is ample */
            double complex expect = Pq * cexp(-2 * M_PI * I * (qx * ax + qy * ay));
            worst = fmax(worst, cabs(acc - expect) / P[0]);
        }
    free(rows);
    CHECK_MSG(beyond <= 1e-6 * P[0], "%s: %.3g of P(0) beyond the band limit", what, beyond / P[0]);
    printf("%s: spectrum inside the band within %.2e of P(0) = %.5g V A^2\n", what, worst, P[0]);
    return worst;
}

static const char *ini_spectrum = "[sample]\nxyz = inline\n[simulation]\npixel_size = 0.1\nslice_thickness = 2\n"
                                  "potential_radius = 3\ntransmission_oversampling = %d\n[compute]\nthreads = 2\n";

/* Si and Au on a pixel centre, a quarter and a half pixel off along x, y and the diagonal,
 * and near the cell's corner (wrapped): the spectrum is the closed form's to 1.5e-5 of P(0)
 * (float potentials summed over 14400 pixels; the blur's quadrature is ~1e-5). The same
 * with the potential built on a 2x finer grid (band-limited to that grid's 2/3 of Nyquist). */
static void test_spectrum(void)
{
    const double offsets[7][2] = {{0, 0}, {0.25, 0}, {0.5, 0}, {0, 0.5}, {0.25, 0.25}, {0.5, 0.5}, {-5.75, 5.9}};
    const int zs[2] = {14, 79};
    char ini[512], what[128];
    for (int m = 1; m <= 2; m++)
        for (int k = 0; k < 2; k++)
            for (int o = 0; o < 7; o += (m == 2 ? 3 : 1)) {
                pot_case c;
                double at[3] = {6.0 + offsets[o][0] * 0.1, 6.0 + offsets[o][1] * 0.1, 1.0};
                snprintf(ini, sizeof ini, ini_spectrum, m);
                pot_build(&c, ini, 12, 2, 1, at, zs[k], 1.0);
                REQUIRE(c.plan.nx == 120 && c.plan.opt.oversampling == m);
                snprintf(what, sizeof what, "Z = %d at (%+.2f, %+.2f) px, oversampling %d", zs[k], offsets[o][0],
                         offsets[o][1], m);
                double worst = compare_spectrum(&c, at[0], at[1], &kirk[zs[k]], what);
                CHECK_MSG(worst <= 1.5e-5, "%s: spectrum off by %.3g of P(0)", what, worst);
                pot_free(&c);
            }
}

/* sum(V) dx dy of the band-limited slice of one atom = P(0) = 2 pi a0 e sum(a_i/b_i + c_i)
 * (each K0 term integrates to 1/(2 pi b_i), each Gaussian to d_i/pi) less what the cutoff
 * removes; to 1e-5 (the sampled sub-pixel lookup of before needed 5e-4). */
static void test_integral(void)
{
    const int zs[3] = {6, 14, 79};
    char ini[512];
    for (int k = 0; k < 3; k++) {
        const stem_kirkland *p = &kirk[zs[k]];
        double full = 0;
        for (int i = 0; i < 3; i++) full += p->a[i] / p->b[i] + p->c[i];
        full *= 2 * M_PI * ref_a0 * ref_e_va;
        const double radii[2] = {10, 3};
        for (int m = zs[k] == 14 ? 0 : 1; m < 2; m++) { /* the large cutoff for Si only (runtime) */
            double rc = radii[m];
            snprintf(ini, sizeof ini,
                     "[sample]\nxyz = inline\n[simulation]\npixel_size = 0.1\nslice_thickness = 2\n"
                     "potential_radius = %g\n[compute]\nthreads = 2\n",
                     rc);
            pot_case c;
            double at[3] = {12.03, 11.96, 1.0};
            pot_build(&c, ini, 24, 2, 1, at, zs[k], 1.0);
            double sum = 0;
            for (size_t i = 0; i < (size_t)c.plan.pot_nx * c.plan.pot_ny; i++) sum += c.V[i];
            sum *= c.plan.cell[0] / c.plan.pot_nx * c.plan.cell[1] / c.plan.pot_ny;
            pot_free(&c);
            double expect = full - cutoff_loss(p, rc); /* rc = 10: the loss is < 1e-6 relative */
            CHECK_MSG(fabs(sum - expect) <= 1e-5 * expect,
                      "Z = %d rc = %g: sum(V) dx dy = %.7g, expected %.7g (2 pi a0 e sum(a/b + c) = %.7g, cutoff "
                      "removes %.4g)",
                      zs[k], rc, sum, expect, full, full - expect);
            printf("Z = %2d rc = %4.1f: sum(V) dx dy = %.6f V A^2, expected %.6f (full %.6f), relative diff %.2e\n",
                   zs[k], rc, sum, expect, full, (sum - expect) / expect);
        }
    }
}

/* Occupancy scales the potential; atoms land in the slice that holds their z; a range of
 * slices of the blurred potential holds the same numbers as the whole. */
static void test_occupancy_and_slices(void)
{
    const char *ini = "[sample]\nxyz = inline\n[simulation]\npixel_size = 0.1\nslice_thickness = 2\n"
                      "potential_radius = 3\ntransmission_oversampling = 1\n[compute]\nthreads = 2\n";
    pot_case full, half;
    double at[3] = {6.0, 6.0, 3.0}; /* z = 3: slice 1 of [0,2) [2,4) [4,6) */
    pot_build(&full, ini, 12, 6, 1, at, 29, 1.0);
    pot_build(&half, ini, 12, 6, 1, at, 29, 0.5);
    REQUIRE(full.plan.n_slices == 3);
    size_t grid = (size_t)full.plan.nx * full.plan.ny;
    double s[3] = {0, 0, 0}, maxdiff = 0, peak = 0;
    for (int sl = 0; sl < 3; sl++)
        for (size_t i = 0; i < grid; i++) s[sl] += fabs(full.V[sl * grid + i]);
    for (size_t i = 0; i < grid; i++) {
        maxdiff = fmax(maxdiff, fabs(half.V[grid + i] - 0.5 * full.V[grid + i]));
        peak = fmax(peak, full.V[grid + i]);
    }
    CHECK_MSG(s[0] == 0 && s[2] == 0 && s[1] > 0, "slice sums %g %g %g", s[0], s[1], s[2]);
    CHECK_LE(maxdiff, 1e-6 * peak);
    /* a range of slices [1, 3) holds the same numbers as the full build */
    float *part = calloc(2 * grid, sizeof(float)), *all = calloc(3 * grid, sizeof(float));
    REQUIRE(part && all && stem_potential_slices(&full.plan, &full.table, &full.atoms, 1, 3, part) == STEM_OK);
    REQUIRE(stem_potential_slices(&full.plan, &full.table, &full.atoms, 0, 3, all) == STEM_OK);
    CHECK(!memcmp(part, all + grid, 2 * grid * sizeof(float)));
    free(part);
    free(all);
    pot_free(&full);
    pot_free(&half);
}

/* Transmission: vacuum gives t = 1; with an atom, no Fourier component survives beyond
 * the 2/3-Nyquist band limit, and the mean of t (the q = 0 beam, untouched by the band
 * limit) equals the mean of exp(i sigma V), V the band-limited potential. Oversampled by
 * 2, t is the transmission of a run with half the pixel size, cut to this run's band. */
static void test_transmission(void)
{
    const char *ini = "[sample]\nxyz = inline\n[simulation]\npixel_size = 0.1\nslice_thickness = 2\n"
                      "potential_radius = 3\ntransmission_oversampling = 1\n[compute]\nthreads = 2\n";
    for (int occ = 0; occ <= 1; occ++) {
        pot_case c;
        double at[3] = {3.0, 4.0, 1.0};
        pot_build(&c, ini, 12, 2, 1, at, 79, occ);
        const stem_plan *pl = &c.plan;
        size_t grid = (size_t)pl->nx * pl->ny;
        stem_complex *t = stem_fft_alloc(grid, "t");
        REQUIRE(t && stem_transmission_build(pl, &c.table, &c.atoms, t) == STEM_OK);
        double sigma = stem_interaction_constant(c.cfg.energy_kev);
        double complex mean_expected = 0, mean_t = 0;
        double dev1 = 0;
        for (size_t i = 0; i < grid; i++) {
            mean_expected += cexp(I * sigma * c.V[i]);
            mean_t += t[i];
            dev1 = fmax(dev1, cabs(t[i] - 1));
        }
        mean_expected /= grid;
        mean_t /= grid;
        if (occ == 0) CHECK_LE(dev1, 1e-6);
        CHECK_MSG(cabs(mean_t - mean_expected) <= 1e-5, "occupancy %d: mean(t) = %g%+gi, mean(exp(i sigma V)) = %g%+gi",
                  occ, creal(mean_t), cimag(mean_t), creal(mean_expected), cimag(mean_expected));
        stem_fft fft;
        REQUIRE(stem_fft_create(&fft, pl->nx, pl->ny, 1, t, 0) == STEM_OK);
        stem_fft_forward(&fft, t);
        double inside = 0, outside = 0;
        for (int j = 0; j < pl->ny; j++)
            for (int i = 0; i < pl->nx; i++) {
                double qx = stem_fft_index(i, pl->nx) / pl->cell[0], qy = stem_fft_index(j, pl->ny) / pl->cell[1];
                double a = cabsf(t[(size_t)j * pl->nx + i]);
                if (hypot(qx, qy) > (2.0 / 3.0) * 0.5 / pl->dx * (1 + 1e-9))
                    outside += a * a;
                else
                    inside += a * a;
            }
        CHECK_LE(outside, 1e-12 * inside);
        stem_fft_destroy(&fft);
        stem_fft_free(t);
        pot_free(&c);
    }
    /* oversampling 2 at 0.1 A = the 0.05 A run's transmission inside the 0.1 A band */
    pot_case a, b;
    double at[3] = {3.03, 4.01, 1.0};
    pot_build(&a,
              "[sample]\nxyz = inline\n[simulation]\npixel_size = 0.1\nslice_thickness = 2\n"
              "potential_radius = 3\ntransmission_oversampling = 2\n[compute]\nthreads = 2\n",
              12, 2, 1, at, 79, 1);
    pot_build(&b,
              "[sample]\nxyz = inline\n[simulation]\npixel_size = 0.05\nslice_thickness = 2\n"
              "potential_radius = 3\ntransmission_oversampling = 1\n[compute]\nthreads = 2\n",
              12, 2, 1, at, 79, 1);
    REQUIRE(b.plan.nx == 2 * a.plan.nx && b.plan.ny == 2 * a.plan.ny);
    size_t ga = (size_t)a.plan.nx * a.plan.ny, gb = (size_t)b.plan.nx * b.plan.ny;
    stem_complex *ta = stem_fft_alloc(ga, "t"), *tb = stem_fft_alloc(gb, "t");
    REQUIRE(ta && tb && stem_transmission_build(&a.plan, &a.table, &a.atoms, ta) == STEM_OK);
    REQUIRE(stem_transmission_build(&b.plan, &b.table, &b.atoms, tb) == STEM_OK);
    stem_fft fa, fb;
    REQUIRE(stem_fft_create(&fa, a.plan.nx, a.plan.ny, 1, ta, 0) == STEM_OK &&
            stem_fft_create(&fb, b.plan.nx, b.plan.ny, 1, tb, 0) == STEM_OK);
    stem_fft_forward(&fa, ta);
    stem_fft_forward(&fb, tb);
    double worst = 0, norm = cabsf(ta[0]);
    for (int j = 0; j < a.plan.ny; j++)
        for (int i = 0; i < a.plan.nx; i++) {
            int kx = stem_fft_index(i, a.plan.nx), ky = stem_fft_index(j, a.plan.ny);
            double qx = kx / a.plan.cell[0], qy = ky / a.plan.cell[1];
            if (qx * qx + qy * qy > a.plan.q_limit * a.plan.q_limit) continue;
            stem_complex vb = tb[(size_t)((ky + b.plan.ny) % b.plan.ny) * b.plan.nx + (kx + b.plan.nx) % b.plan.nx] / 4;
            worst = fmax(worst, cabs(ta[(size_t)j * a.plan.nx + i] - vb) / norm);
        }
    printf("oversampling 2 at 0.1 A against the 0.05 A transmission in the band: within %.2e of the mean beam\n",
           worst);
    CHECK_MSG(worst <= 1e-5, "oversampled transmission differs from the finer run's by %.3g", worst);
    stem_fft_destroy(&fa);
    stem_fft_destroy(&fb);
    stem_fft_free(ta);
    stem_fft_free(tb);
    pot_free(&a);
    pot_free(&b);
}

int main(void)
{
    REQUIRE(stem_kirkland_load(stem_kirkland_default_path(), kirk) == STEM_OK);
    for (int z = 1; z <= STEM_MAX_Z; z++) stem_atom_potential_from_kirkland(&kirk[z], &pot[z]);
    test_spectrum();
    test_integral();
    test_occupancy_and_slices();
    test_transmission();
    return check_exit("test_potential");
}
