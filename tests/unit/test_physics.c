/* Relativistic optics constants and Kirkland's projected potential, checked
 * against tabulated values and against an independent evaluation of the
 * closed form (K0 by numerical quadrature, not stem_bessel_k0). */
#include <math.h>

#include "check.h"
#include "kirkland_ref.h"
#include "physics.h"
#include "../../io/scattering_tables.h"
#include "stem.h"

static double k0_quadrature(double x) { return ref_k0_quadrature(x, 1e-3); }

static const double h2_2m0e = 150.4126; /* h^2 / (2 m0 e) in V Angstrom^2 */
static const double m0c2_kev = 510.99895;

static double vz_closed_form(const stem_kirkland *p, double r) { return ref_projected_potential(p, r, 1e-3); }

static void test_wavelength(void)
{
    /* Tabulated relativistic wavelengths (Kirkland, Advanced Computing in
     * Electron Microscopy, Table 2.2; Williams & Carter Table 1.1), given to
     * 4-5 significant digits: tolerance is half a unit of the last digit. */
    CHECK_CLOSE(stem_wavelength(80), 0.04176, 5e-6);
    CHECK_CLOSE(stem_wavelength(100), 0.03701, 5e-6);
    CHECK_CLOSE(stem_wavelength(200), 0.02508, 5e-6);
    CHECK_CLOSE(stem_wavelength(300), 0.01969, 5e-6);
    CHECK_CLOSE(stem_wavelength(1000), 0.008719, 5e-7);
    /* The textbook form lambda = 12.2643 / sqrt(V (1 + 0.978476e-6 V)) in Angstrom, V in volts. */
    for (double kev = 20; kev <= 1200; kev *= 1.7) {
        double v = kev * 1e3;
        CHECK_REL(stem_wavelength(kev), 12.2643 / sqrt(v * (1 + 0.978476e-6 * v)), 2e-5);
    }
}

static void test_interaction_constant(void)
{
    /* Tabulated sigma (Kirkland Table 5.1), rad / (V Angstrom). */
    CHECK_CLOSE(stem_interaction_constant(100), 9.244e-4, 1e-6);
    CHECK_CLOSE(stem_interaction_constant(200), 7.288e-4, 1e-6);
    CHECK_CLOSE(stem_interaction_constant(300), 6.526e-4, 1e-6);
    /* sigma = 2 pi m e lambda / h^2 = pi gamma lambda / (h^2 / 2 m0 e): a
     * different route from the code's 2 pi / (lambda V) (mc^2 + eV)/(2 mc^2 + eV). */
    for (double kev = 30; kev <= 1000; kev *= 1.5) {
        double gamma = 1 + kev / m0c2_kev;
        CHECK_REL(stem_interaction_constant(kev), M_PI * gamma * stem_wavelength(kev) / h2_2m0e, 1e-5);
    }
    /* sigma falls with the beam energy */
    CHECK(stem_interaction_constant(80) > stem_interaction_constant(300));
}

static void test_kirkland_table(stem_kirkland *k)
{
    /* Si (Z = 14) as printed in Kirkland's Appendix C. */
    const double si[12] = {1.06543892, 1.04118455, 0.120143691,  68.7113368,  0.180915263, 0.0887533926,
                           1.12065620, 3.70062619, 0.0305452816, 0.214097897, 1.59963502,  9.99096638};
    for (int i = 0; i < 3; i++) {
        CHECK_REL(k[14].a[i], si[2 * i], 1e-6);
        CHECK_REL(k[14].b[i], si[2 * i + 1], 1e-6);
        CHECK_REL(k[14].c[i], si[6 + 2 * i], 1e-6);
        CHECK_REL(k[14].d[i], si[6 + 2 * i + 1], 1e-6);
    }
    /* H (Z = 1) first row, and the table is complete to Z = 103. */
    CHECK_REL(k[1].a[0], 4.20298324e-3, 1e-6);
    CHECK_REL(k[1].b[0], 0.225350888, 1e-6);
    for (int z = 1; z <= STEM_MAX_Z; z++) CHECK_MSG(k[z].a[0] > 0 && k[z].b[0] > 0 && k[z].d[2] > 0, "Z = %d", z);
}

static void test_bessel(void)
{
    /* Reference values (A&S Table 9.8): K0(0.1) = 2.4270690, K0(1) = 0.4210244382, K0(2) = 0.1138938727. */
    CHECK_REL(k0_quadrature(0.1), 2.4270690247, 1e-9);
    CHECK_REL(k0_quadrature(1.0), 0.4210244382, 1e-9);
    CHECK_REL(k0_quadrature(2.0), 0.1138938727, 1e-9);
    /* The code's polynomial fit (A&S 9.8.5/9.8.6: |error| < 2e-7 relative) against the quadrature. */
    for (double x = 1e-3; x < 40; x *= 1.13) CHECK_REL(stem_bessel_k0(x), k0_quadrature(x), 1e-6);
}

static void test_projected_potential(stem_kirkland *k, const stem_atom_potential *pot)
{
    const int zs[] = {1, 6, 14, 29, 79};
    for (int i = 0; i < 5; i++)
        for (double r = 0.005; r < 6; r *= 1.2) {
            double ref = vz_closed_form(&k[zs[i]], r);
            /* limited by the 2e-7 relative accuracy of the K0 fit */
            CHECK_MSG(fabs(stem_projected_potential(&pot[zs[i]], r) - ref) <= 1e-6 * ref + 1e-12,
                      "Z = %d r = %g: %.9g vs %.9g", zs[i], r, stem_projected_potential(&pot[zs[i]], r), ref);
        }
    /* Physical sanity: near the nucleus (0.5 Angstrom) v_z grows with Z (further
     * out screening reorders elements), and it is positive and decreasing in r. */
    CHECK(stem_projected_potential(&pot[79], 0.5) > stem_projected_potential(&pot[14], 0.5));
    CHECK(stem_projected_potential(&pot[14], 0.5) > stem_projected_potential(&pot[6], 0.5));
    for (double r = 0.01; r < 5; r += 0.1)
        CHECK_MSG(stem_projected_potential(&pot[14], r) > stem_projected_potential(&pot[14], r + 0.1), "r = %g", r);
    /* Radial integral of the closed form over the plane = 2 pi a0 e sum(a_i/b_i + c_i)
     * (each K0 term integrates to 1/(2 pi b), each Gaussian to d/pi): checks the
     * prefactors 4 pi^2 a0 e and 2 pi^2 a0 e of the code's v_z. Substituting
     * r = exp(u) makes the integrand smooth; trapezoid on u in [-14, 3.5]. */
    for (int i = 0; i < 5; i++) {
        const stem_kirkland *p = &k[zs[i]];
        double sum = 0, du = 1e-3;
        for (double u = -14; u < 3.5; u += du) {
            double r = exp(u);
            sum += stem_projected_potential(&pot[zs[i]], r) * 2 * M_PI * r * r * du;
        }
        double expect = 0;
        for (int j = 0; j < 3; j++) expect += p->a[j] / p->b[j] + p->c[j];
        expect *= 2 * M_PI * ref_a0 * ref_e_va;
        CHECK_MSG(fabs(sum - expect) <= 1e-4 * expect, "Z = %d: integral %.8g vs 2 pi a0 e sum(a/b + c) = %.8g", zs[i],
                  sum, expect);
    }
}

/* K1(x) = int_0^inf exp(-x cosh t) cosh t dt (A&S 9.6.24), by the trapezoid rule. */
static double k1_quadrature(double x)
{
    double h = 1e-3, tmax = acosh(60.0 / x + 1.0), sum = 0.5 * exp(-x);
    for (int i = 1; i <= (int)ceil(tmax / h); i++) sum += exp(-x * cosh(i * h)) * cosh(i * h);
    return sum * h;
}

/* V(sqrt(r^2 + z^2)) integrated over z in [z0, z1] by the trapezoid rule on z = r sinh t. */
static double z_integral(const stem_atom_potential *p, double r, double z0, double z1)
{
    double t0 = asinh(z0 / r), t1 = asinh(z1 / r), h = (t1 - t0) / 200000, sum = 0;
    for (int i = 0; i <= 200000; i++) {
        double t = t0 + i * h, w = (i == 0 || i == 200000) ? 0.5 : 1;
        sum += w * stem_atom_potential_at(p, r * cosh(t)) * r * cosh(t);
    }
    return sum * h;
}

/* The Lobato table's potentials: f_e(0) = 2 sum a_i, so the potential integrated over space
 * (= the projected potential over the plane) is 2 pi a0 e * 2 sum a_i; the projected potential's
 * closed forms (K0, r K1) equal a direct z-integral of V; the half projections equal direct
 * z-integrals from 0 and approach half the projection far out. Kirkland's terms too. */
static void test_lobato_and_half_projections(const stem_atom_potential *kirkland_terms)
{
    for (double x = 1e-3; x < 40; x *= 1.13) CHECK_REL(stem_bessel_k1(x), k1_quadrature(x), 2e-6);
    static stem_atom_potential lob[STEM_MAX_Z + 1];
    REQUIRE(stem_atom_potentials_load(STEM_PARAM_LOBATO, stem_lobato_default_path(), lob) == STEM_OK);
    const int zs[] = {1, 6, 14, 38, 79};
    for (int i = 0; i < 5; i++) {
        const stem_atom_potential *p = &lob[zs[i]];
        CHECK_MSG(p->n == 10, "Z = %d: %d terms", zs[i], p->n);
        for (double r = 0.01; r < 3; r *= 2.3) {
            double direct = 2 * z_integral(p, r, 0, 60);
            CHECK_MSG(fabs(stem_projected_potential(p, r) - direct) <= 2e-6 * direct,
                      "Lobato Z = %d r = %g: %.9g vs %.9g", zs[i], r, stem_projected_potential(p, r), direct);
        }
        double sum = 0, du = 1e-3;
        for (double u = -14; u < 3.5; u += du) sum += stem_projected_potential(p, exp(u)) * 2 * M_PI * exp(2 * u) * du;
        FILE *f = fopen(stem_lobato_default_path(), "r");
        REQUIRE(f);
        char line[1024];
        int z = 0;
        double a[5], b[5];
        while (z < zs[i] && fgets(line, sizeof line, f))
            if (line[0] != '#') z++; /* rows: 10 numbers, then "# symbol" */
        fclose(f);
        REQUIRE(sscanf(line, "%lf %lf %lf %lf %lf %lf %lf %lf %lf %lf", &a[0], &b[0], &a[1], &b[1], &a[2], &b[2], &a[3],
                       &b[3], &a[4], &b[4]) == 10);
        double fe0 = 2 * (a[0] + a[1] + a[2] + a[3] + a[4]), expect = 2 * M_PI * ref_a0 * ref_e_va * fe0;
        CHECK_MSG(fabs(sum - expect) <= 1e-4 * expect, "Lobato Z = %d: integral %.8g vs 2 pi a0 e f_e(0) = %.8g", zs[i],
                  sum, expect);
        /* Lobato and Kirkland describe the same atom: projected potentials within 5% at 0.3-1 Angstrom */
        for (double r = 0.3; r <= 1.0; r += 0.35) {
            double vl = stem_projected_potential(p, r), vk = stem_projected_potential(&kirkland_terms[zs[i]], r);
            CHECK_MSG(fabs(vl - vk) <= 0.05 * vk, "Z = %d r = %g: Lobato %.5g vs Kirkland %.5g", zs[i], r, vl, vk);
        }
    }
    const stem_atom_potential *both[2] = {&lob[14], &kirkland_terms[79]};
    const double depths[5] = {0.003, 0.05, 0.4, 1.5, 40};
    for (int b = 0; b < 2; b++)
        for (double r = 0.004; r < 3; r *= 3) {
            double half[5];
            stem_half_projections(both[b], r, depths, 5, half);
            for (int k = 0; k < 5; k++) {
                double direct = z_integral(both[b], r, 0, depths[k]);
                CHECK_MSG(fabs(half[k] - direct) <= 1e-6 * direct + 1e-12,
                          "half projection r = %g z = %g: %.9g vs %.9g", r, depths[k], half[k], direct);
            }
            CHECK_REL(half[4], 0.5 * stem_projected_potential(both[b], r), 2e-6);
        }
}

/* Cc 1 mm, 0.8 eV FWHM at 300 keV: E* = 300 keV x 1.293540 / 1.587086 = 244.513 keV,
 * sigma_E = 0.8 / 2.354820 = 0.339729 eV, sigma = 1e7 Angstrom x 0.339729 / 244513 = 13.894 Angstrom
 * (worked by hand); at 200 keV, Cc 1.2 mm, 0.6 eV: E* = 200 x 1.195695 / 1.391390 = 171.871 keV,
 * sigma_E = 0.254796 eV, 17.790 Angstrom. */
static void test_chromatic_focal_spread(void)
{
    CHECK_CLOSE(stem_chromatic_focal_spread(1e7, 0.8, 300), 13.894, 2e-3);
    CHECK_CLOSE(stem_chromatic_focal_spread(1.2e7, 0.6, 200), 17.790, 2e-3);
    CHECK_CLOSE(stem_chromatic_focal_spread(0, 0.6, 200), 0, 0);
}

int main(void)
{
    test_chromatic_focal_spread();
    stem_kirkland k[STEM_MAX_Z + 1];
    test_wavelength();
    test_interaction_constant();
    test_bessel();
    REQUIRE(stem_kirkland_load(stem_kirkland_default_path(), k) == STEM_OK);
    test_kirkland_table(k);
    static stem_atom_potential pot[STEM_MAX_Z + 1];
    for (int z = 1; z <= STEM_MAX_Z; z++) stem_atom_potential_from_kirkland(&k[z], &pot[z]);
    test_projected_potential(k, pot);
    test_lobato_and_half_projections(pot);
    return check_exit("test_physics");
}
