/* Detector cross-sections of single atoms under a plane wave, from the product's
 * transmission functions (potential, oversampled exp(i sigma V), band limit), against
 * closed forms computed here from Kirkland's table:
 * - the thin phase object: F(q) = 2 pi int (exp(i sigma v(r)) - 1) J0(2 pi q r) r dr,
 *   the exact single-slice scattering amplitude of the atom's projected potential v;
 * - the first Born approximation: sigma times the potential's transform, 2 pi a0 e f_e(q),
 *   f_e(q) = sum a_i / (q^2 + b_i) + c_i exp(-d_i q^2) (right for light atoms only).
 * With one atom in a periodic cell wider than twice its cutoff, the transmission's Fourier
 * coefficients are exactly F(q) / area at the grid's frequencies, so the detector sums are
 * compared frequency by frequency: area * sum |T(q)|^2 = sum |F(q)|^2 / area over the
 * annulus. Goals (issue 26): C and Si (kinematic limit) within 0.5% of first Born; Au within 2% of the thin
 * phase object on and off pixels (Born is ~30% too high there); the same whatever the
 * atom's sub-pixel position. */
#include <complex.h>
#include <math.h>

#include "check.h"
#include "fft.h"
#include "kirkland_ref.h"
#include "physics.h"
#include "../../io/config.h"
#include "../../io/scattering_tables.h"
#include "plan.h"
#include "potential.h"

static stem_kirkland kirk[STEM_MAX_Z + 1];
static stem_atom_potential pot[STEM_MAX_Z + 1];

#define NQ 1200
#define NR 6000

/* The thin-phase amplitude F(q_k) and Born's sigma V(q_k) on q_k = k dq, for the potential
 * v(r) - v(rc) inside rc (the product's atom): log-substituted Simpson's rule. */
static void closed_forms(const stem_kirkland *p, double sigma, double rc, double dq, double complex *F, double *born)
{
    double u0 = -20, h = (log(rc) - u0) / NR, vcut = ref_projected_potential(p, rc, 0.01);
    for (int k = 0; k < NQ; k++) F[k] = 0, born[k] = 0;
    for (int i = 0; i <= NR; i++) {
        double r = exp(u0 + i * h), w = (i == 0 || i == NR) ? 1 : (i % 2 ? 4 : 2);
        double v = ref_projected_potential(p, r, 0.01) - vcut;
        double complex f = (cexp(I * sigma * v) - 1) * r * r;
        for (int k = 0; k < NQ; k++) {
            double j = j0(2 * M_PI * k * dq * r);
            F[k] += w * f * j;
            born[k] += w * sigma * v * r * r * j;
        }
    }
    for (int k = 0; k < NQ; k++) F[k] *= 2 * M_PI * h / 3, born[k] *= 2 * M_PI * h / 3;
}

/* First Born from the table's f_e itself (no cutoff), at |q|. */
static double born_fe(const stem_kirkland *p, double sigma, double q)
{
    double fe = 0;
    for (int i = 0; i < 3; i++) fe += p->a[i] / (q * q + p->b[i]) + p->c[i] * exp(-p->d[i] * q * q);
    return sigma * 2 * M_PI * ref_a0 * ref_e_va * fe;
}

typedef struct {
    double stemsim, thin_phase, born_cut, born_table; /* Angstrom^2 */
} cross_sections;

/* One atom Z fx, fy pixels past a pixel near the centre of a cell x cell Angstrom cell,
 * pixel px, detector [lo, hi) mrad, transmission_oversampling m (0: auto). */
static cross_sections measure(int Z, double occupancy, double cell, double px, double fx, double fy, double lo,
                              double hi, int m)
{
    char ini[512];
    snprintf(ini, sizeof ini,
             "[sample]\nxyz = inline\n[beam]\nenergy = 300\n[probe]\nsemiangle = 20\n[simulation]\npixel_size = %g\n"
             "slice_thickness = 2\npotential_radius = 4\ntransmission_oversampling = %s\n[compute]\nthreads = 2\n",
             px, m == 0 ? "auto" : (m == 1 ? "1" : "2"));
    stem_config cfg;
    stem_atoms atoms = {0};
    stem_plan plan;
    stem_potential_table table;
    REQUIRE(stem_config_load_string(&cfg, "cross_section.ini", ini) == STEM_OK);
    atoms.cell[0] = atoms.cell[1] = cell;
    atoms.cell[2] = 2;
    REQUIRE(stem_atoms_alloc(&atoms, 1) == STEM_OK);
    stem_layout L = {.world_size = 1, .n_groups = 1, .group_size = 1, .ranks_on_node = 1};
    atoms.Z[0] = Z, atoms.x[0] = atoms.y[0] = cell / 2, atoms.z[0] = 1, atoms.occupancy[0] = occupancy;
    REQUIRE(stem_plan_build(&plan, &cfg, &atoms, NULL, &L) == STEM_OK);
    atoms.x[0] = (floor(cell / 2 / plan.dx) + fx) * plan.dx; /* fx, fy pixels past a pixel */
    atoms.y[0] = (floor(cell / 2 / plan.dy) + fy) * plan.dy;
    REQUIRE(stem_potential_table_build(&plan, &atoms, pot, &table) == STEM_OK);
    size_t grid = (size_t)plan.nx * plan.ny;
    stem_complex *t = stem_fft_alloc(grid, "t");
    REQUIRE(t && stem_transmission_build(&plan, &table, &atoms, t) == STEM_OK);
    stem_fft fft;
    REQUIRE(stem_fft_create(&fft, plan.nx, plan.ny, 1, t, 0) == STEM_OK);
    for (size_t i = 0; i < grid; i++) t[i] -= 1; /* the scattered part */
    stem_fft_forward(&fft, t);
    double sigma = stem_interaction_constant(300), lambda = stem_wavelength(300), area = plan.cell[0] * plan.cell[1];
    double q_lo = lo * 1e-3 / lambda, q_hi = hi * 1e-3 / lambda, dq = 1.01 * q_hi / (NQ - 1);
    REQUIRE(q_hi < plan.q_limit);
    static double complex F[NQ];
    static double B[NQ];
    closed_forms(&kirk[Z], sigma * occupancy, cfg.opt.potential_radius, dq, F, B);
    cross_sections c = {0};
    for (int j = 0; j < plan.ny; j++)
        for (int i = 0; i < plan.nx; i++) {
            double qx = stem_fft_index(i, plan.nx) / plan.cell[0], qy = stem_fft_index(j, plan.ny) / plan.cell[1];
            double q = hypot(qx, qy), u = q / dq;
            if (q < q_lo || q >= q_hi) continue;
            int k = (int)u;
            double complex Fq = F[k] + (u - k) * (F[k + 1] - F[k]);
            double Bq = B[k] + (u - k) * (B[k + 1] - B[k]), Bt = born_fe(&kirk[Z], sigma * occupancy, q);
            double a = cabsf(t[(size_t)j * plan.nx + i]) / grid;
            c.stemsim += area * a * a;
            c.thin_phase += cabs(Fq) * cabs(Fq) / area;
            c.born_cut += Bq * Bq / area;
            c.born_table += Bt * Bt / area;
        }
    stem_fft_destroy(&fft);
    stem_fft_free(t);
    stem_potential_table_free(&table);
    stem_plan_free(&plan);
    stem_atoms_free(&atoms);
    return c;
}

/* C at full strength, and Si in the kinematic limit (occupancy 0.1: the phase a tenth),
 * within 0.5% of first Born; Si at full strength within 0.5% of the thin phase object
 * (its first Born is already ~1% high at 300 keV). */
static void test_light_atoms_born(void)
{
    const int zs[3] = {6, 14, 14};
    const double occ[3] = {1, 0.1, 1};
    for (int k = 0; k < 3; k++) {
        cross_sections c = measure(zs[k], occ[k], 10, 0.03, 0.5, 0.25, 40, 120, 0);
        double born = c.stemsim / c.born_table - 1, thin = c.stemsim / c.thin_phase - 1;
        printf("Z = %2d occupancy %.1f, 40-120 mrad, 0.03 A: stemsim %.6g A^2, first Born (f_e) %.6g (%+.2f%%), thin "
               "phase "
               "%.6g (%+.2f%%)\n",
               zs[k], occ[k], c.stemsim, c.born_table, 100 * born, c.thin_phase, 100 * thin);
        if (k < 2)
            CHECK_MSG(fabs(born) <= 0.005, "Z = %d occupancy %g: cross-section %.4g, first Born %.4g (%+.2f%%)", zs[k],
                      occ[k], c.stemsim, c.born_table, 100 * born);
        CHECK_MSG(fabs(thin) <= 0.005, "Z = %d occupancy %g: cross-section %.4g, thin phase %.4g (%+.2f%%)", zs[k],
                  occ[k], c.stemsim, c.thin_phase, 100 * thin);
    }
}

static void test_heavy_atom_thin_phase(void)
{
    const double offsets[4][2] = {{0, 0}, {0.5, 0}, {0, 0.5}, {0.5, 0.5}};
    double lo = 1e30, hi = 0;
    for (int o = 0; o < 4; o++) {
        cross_sections c = measure(79, 1, 10, 0.03, offsets[o][0], offsets[o][1], 70, 200, 0);
        double rel = c.stemsim / c.thin_phase - 1;
        printf(
            "Au at (%.2f, %.2f) px, 70-200 mrad, 0.03 A: stemsim %.6g A^2, thin phase %.6g (%+.2f%%), first Born %.6g "
            "(%+.1f%% above the thin phase)\n",
            offsets[o][0], offsets[o][1], c.stemsim, c.thin_phase, 100 * rel, c.born_table,
            100 * (c.born_table / c.thin_phase - 1));
        CHECK_MSG(fabs(rel) <= 0.02, "Au at (%.2f, %.2f) px: %.4g vs thin phase %.4g (%+.2f%%)", offsets[o][0],
                  offsets[o][1], c.stemsim, c.thin_phase, 100 * rel);
        lo = fmin(lo, c.stemsim), hi = fmax(hi, c.stemsim);
    }
    printf("Au: spread over sub-pixel offsets %.3f%%\n", 100 * (hi - lo) / lo);
    CHECK_MSG(hi - lo <= 0.002 * lo, "Au cross-section varies by %.3f%% with the sub-pixel position",
              100 * (hi - lo) / lo);
    /* without oversampling the strong phase is cut at the band limit: the negative control */
    cross_sections c1 = measure(79, 1, 10, 0.03, 0, 0, 70, 200, 1);
    printf("Au without oversampling: %.6g A^2 (%+.1f%% from the thin phase)\n", c1.stemsim,
           100 * (c1.stemsim / c1.thin_phase - 1));
    CHECK_MSG(fabs(c1.stemsim / c1.thin_phase - 1) > 0.02,
              "oversampling 1 is already within 2%%: the check cannot fail");
}

int main(void)
{
    REQUIRE(stem_kirkland_load(stem_kirkland_default_path(), kirk) == STEM_OK);
    for (int z = 1; z <= STEM_MAX_Z; z++) stem_atom_potential_from_kirkland(&kirk[z], &pot[z]);
    test_light_atoms_born();
    test_heavy_atom_thin_phase();
    return check_exit("test_cross_section");
}
