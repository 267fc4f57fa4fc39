/* The probe: aberration phase chi against the textbook expressions, the
 * aperture, the normalisation, and shifted probes (the Fourier shift theorem:
 * a probe at (x, y) is the probe at the origin circularly shifted in real
 * space, exactly, when the shift is a whole number of pixels). */
#include <complex.h>
#include <math.h>

#include "check.h"
#include "../../io/config.h"
#include "../../io/xyz.h"
#include "fft.h"
#include "multislice.h"
#include "physics.h"
#include "plan.h"
#include "probe.h"

typedef struct {
    stem_config cfg;
    stem_atoms atoms;
    stem_plan plan;
} probe_case;

/* A 12 x 10 Angstrom cell (non-square, to catch x/y mix-ups), one atom of zero occupancy. */
static void probe_build(probe_case *c, const char *extra_ini)
{
    char ini[2048];
    snprintf(ini, sizeof ini, "[sample]\nxyz = inline\n[simulation]\npixel_size = 0.1\n[compute]\nthreads = 2\n%s",
             extra_ini);
    memset(c, 0, sizeof *c);
    REQUIRE(stem_config_load_string(&c->cfg, "probe.ini", ini) == STEM_OK);
    REQUIRE(stem_xyz_read_string("vacuum.xyz", "vacuum\n12 10 2\n1 6 5 1 0 0\n", &c->atoms) == STEM_OK);
    stem_layout L = {.world_size = 1, .n_groups = 1, .group_size = 1, .ranks_on_node = 1};
    REQUIRE(stem_plan_build(&c->plan, &c->cfg, &c->atoms, NULL, &L) == STEM_OK);
}

static void probe_free(probe_case *c)
{
    stem_plan_free(&c->plan);
    stem_atoms_free(&c->atoms);
}

/* chi(q) for one aberration at a time (Kirkland eq. 3.42-3.44, Krivanek's
 * notation): C1: pi lambda C1 q^2; C3: (pi/2) C3 lambda^3 q^4;
 * C5: (pi/3) C5 lambda^5 q^6; A1: pi lambda A1 q^2 cos 2(phi - phi_A). */
static void test_chi(void)
{
    probe_case c;
    const double qs[4][2] = {{0.3, 0.0}, {0.0, 0.5}, {-0.4, 0.25}, {0.55, -0.6}};
    double lambda = 0.025079; /* 200 keV, Angstrom (tabulated) */

    probe_build(&c, "[probe]\ndefocus = -150\n");
    CHECK_REL(c.plan.lambda, lambda, 1e-4);
    lambda = c.plan.lambda;
    for (int i = 0; i < 4; i++) {
        double q2 = qs[i][0] * qs[i][0] + qs[i][1] * qs[i][1];
        CHECK_REL(stem_probe_chi(&c.plan, qs[i][0], qs[i][1]), M_PI * lambda * -150 * q2, 1e-12);
    }
    probe_free(&c);

    probe_build(&c, "[probe]\ncs = 1.2\n");
    for (int i = 0; i < 4; i++) {
        double q2 = qs[i][0] * qs[i][0] + qs[i][1] * qs[i][1];
        CHECK_REL(stem_probe_chi(&c.plan, qs[i][0], qs[i][1]), 0.5 * M_PI * 1.2e7 * pow(lambda, 3) * q2 * q2, 1e-12);
    }
    probe_free(&c);

    probe_build(&c, "[probe]\nc5 = 5\n");
    for (int i = 0; i < 4; i++) {
        double q2 = qs[i][0] * qs[i][0] + qs[i][1] * qs[i][1];
        CHECK_REL(stem_probe_chi(&c.plan, qs[i][0], qs[i][1]), M_PI / 3 * 5e7 * pow(lambda, 5) * q2 * q2 * q2, 1e-12);
    }
    probe_free(&c);

    probe_build(&c, "[probe]\nastigmatism = 40\nastigmatism_angle = 30\n");
    for (int i = 0; i < 4; i++) {
        double q2 = qs[i][0] * qs[i][0] + qs[i][1] * qs[i][1], phi = atan2(qs[i][1], qs[i][0]);
        CHECK_CLOSE(stem_probe_chi(&c.plan, qs[i][0], qs[i][1]), M_PI * lambda * 40 * q2 * cos(2 * (phi - M_PI / 6)),
                    1e-12);
    }
    /* Astigmatism is two-fold: chi(q) = chi(-q), and it vanishes at 45 degrees from its axis. */
    CHECK_CLOSE(stem_probe_chi(&c.plan, 0.3, 0.2), stem_probe_chi(&c.plan, -0.3, -0.2), 1e-12);
    CHECK_CLOSE(stem_probe_chi(&c.plan, 0.4 * cos(M_PI / 6 + M_PI / 4), 0.4 * sin(M_PI / 6 + M_PI / 4)), 0, 1e-12);
    probe_free(&c);

    /* Scherzer: with C1 = -sqrt(4/3 C3 lambda) the phase is stationary
     * (dchi/dq = 0) at q^2 = -C1/(C3 lambda^2), where chi = -pi C1^2 / (2 C3 lambda). */
    probe_build(&c, "[probe]\ncs = 1.0\ndefocus = -600\n");
    double c1 = -600, c3 = 1e7, qs2 = -c1 / (c3 * lambda * lambda), q = sqrt(qs2);
    CHECK_REL(stem_probe_chi(&c.plan, q, 0), -M_PI * c1 * c1 / (2 * c3 * lambda), 1e-9);
    double h = 1e-5;
    CHECK_CLOSE((stem_probe_chi(&c.plan, q + h, 0) - stem_probe_chi(&c.plan, q - h, 0)) / (2 * h), 0, 1e-3);
    probe_free(&c);
}

/* Aperture, normalisation, and the PRISM beam coefficients. */
static void test_aperture(void)
{
    probe_case c;
    probe_build(&c, "[probe]\nsemiangle = 21.3\ndefocus = 30\ncs = 0.5\n");
    const stem_plan *p = &c.plan;
    size_t grid = (size_t)p->nx * p->ny;
    stem_complex *psi = stem_fft_alloc(grid, "probe");
    REQUIRE(psi);
    stem_probe_fourier(p, 1.234, 5.678, psi);
    double qap = 21.3e-3 / stem_wavelength(200), norm = 0;
    int inside = 0, bad = 0;
    for (int j = 0; j < p->ny; j++)
        for (int i = 0; i < p->nx; i++) {
            double qx = stem_fft_index(i, p->nx) / 12.0, qy = stem_fft_index(j, p->ny) / 10.0;
            double a = cabsf(psi[(size_t)j * p->nx + i]);
            norm += a * a;
            if (hypot(qx, qy) <= qap) {
                inside++;
            } else if (a != 0) {
                bad++;
            }
        }
    CHECK_CLOSE(norm, 1.0, 1e-6);
    CHECK_INT_EQ(bad, 0);
    /* every beam inside the aperture has the same modulus 1/sqrt(count) */
    for (size_t k = 0; k < grid; k++)
        if (cabsf(psi[k]) != 0) CHECK_CLOSE(cabsf(psi[k]), 1 / sqrt((double)inside), 1e-6);
    /* the probe phase is exp(-i chi(q) - 2 pi i q.r) */
    int i0 = 3, j0 = 2;
    double qx = i0 / 12.0, qy = j0 / 10.0;
    double complex expect =
        cexp(-I * stem_probe_chi(p, qx, qy) - 2 * M_PI * I * (qx * 1.234 + qy * 5.678)) / sqrt((double)inside);
    CHECK_CLOSE(cabs(psi[(size_t)j0 * p->nx + i0] - expect), 0, 1e-6);
    /* PRISM coefficients for f = 1 are the same plane waves */
    stem_complex *coef = stem_fft_alloc(p->n_beams, "coefficients");
    stem_probe_beam_coefficients(p, 1.234, 5.678, coef);
    CHECK_INT_EQ(p->n_beams, inside);
    double cn = 0, worst = 0;
    for (int b = 0; b < p->n_beams; b++) {
        cn += cabsf(coef[b]) * cabsf(coef[b]);
        int i = (p->beam_kx[b] + p->nx) % p->nx, j = (p->beam_ky[b] + p->ny) % p->ny;
        worst = fmax(worst, cabsf(coef[b] - psi[(size_t)j * p->nx + i]));
    }
    CHECK_CLOSE(cn, 1.0, 1e-6);
    CHECK_LE(worst, 1e-6);
    stem_fft_free(coef);
    stem_fft_free(psi);
    probe_free(&c);
}

/* A probe at (m dx, n dy), transformed to real space, equals the probe at the
 * origin circularly shifted by (m, n) pixels; also across the cell edge. */
static void test_shift(void)
{
    probe_case c;
    probe_build(&c, "[probe]\nsemiangle = 25\ndefocus = -40\ncs = 0.01\nastigmatism = 10\nastigmatism_angle = 20\n");
    const stem_plan *p = &c.plan;
    size_t grid = (size_t)p->nx * p->ny;
    stem_complex *a = stem_fft_alloc(grid, "probe"), *b = stem_fft_alloc(grid, "probe");
    REQUIRE(a && b);
    stem_fft fft;
    REQUIRE(stem_fft_create(&fft, p->nx, p->ny, 1, a, 0) == STEM_OK);
    stem_probe_fourier(p, 0, 0, a);
    stem_fft_inverse(&fft, a);
    double peak = 0;
    for (size_t k = 0; k < grid; k++) peak = fmax(peak, cabsf(a[k]));
    const int shifts[4][2] = {{17, 9}, {-5, 3}, {119, 99}, {60, 50}};
    for (int s = 0; s < 4; s++) {
        int m = shifts[s][0], n = shifts[s][1];
        stem_probe_fourier(p, m * p->dx, n * p->dy, b);
        stem_fft_inverse(&fft, b);
        double worst = 0;
        for (int j = 0; j < p->ny; j++)
            for (int i = 0; i < p->nx; i++) {
                int si = ((i - m) % p->nx + p->nx) % p->nx, sj = ((j - n) % p->ny + p->ny) % p->ny;
                worst = fmax(worst, cabsf(b[(size_t)j * p->nx + i] - a[(size_t)sj * p->nx + si]));
            }
        CHECK_MSG(worst <= 2e-6 * peak, "shift (%d, %d) px: max |psi_shifted - roll(psi_0)| = %.3g (peak %.3g)", m, n,
                  worst, peak);
    }
    /* Sub-pixel check of the sign convention: the intensity centroid of a
     * probe at (x, y) (minimum image about the requested centre) is (x, y). */
    double x = 3.33, y = 7.77;
    stem_probe_fourier(p, x, y, b);
    stem_fft_inverse(&fft, b);
    double sx = 0, sy = 0, st = 0;
    for (int j = 0; j < p->ny; j++)
        for (int i = 0; i < p->nx; i++) {
            double w = cabsf(b[(size_t)j * p->nx + i]);
            w *= w;
            double ddx = i * p->dx - x, ddy = j * p->dy - y;
            ddx -= 12.0 * floor(ddx / 12.0 + 0.5);
            ddy -= 10.0 * floor(ddy / 10.0 + 0.5);
            if (hypot(ddx, ddy) > 2.5) continue; /* the probe's core, away from aliasing of the tails */
            sx += w * ddx;
            sy += w * ddy;
            st += w;
        }
    /* astigmatism and defocus are centro-symmetric in intensity: the centroid stays put */
    CHECK_CLOSE(sx / st, 0, 0.01);
    CHECK_CLOSE(sy / st, 0, 0.01);
    stem_fft_destroy(&fft);
    stem_fft_free(a);
    stem_fft_free(b);
    probe_free(&c);
}

/* Fresnel propagation through vacuum of thickness T is a change of focus:
 * the propagator exp(-i pi lambda T q^2) times a probe with C1 = -T (focused
 * T below the entrance surface) gives the C1 = 0 probe, as complex waves. */
static void test_vacuum_propagation(void)
{
    probe_case a, b;
    const double T = 24; /* 12 slices of 2 Angstrom */
    probe_build(&a, "[probe]\nsemiangle = 25\ndefocus = -24\ncs = 0.003\n");
    probe_build(&b, "[probe]\nsemiangle = 25\ndefocus = 0\ncs = 0.003\n");
    a.atoms.cell[2] = T; /* the plan's slices come from the cell height */
    stem_plan_free(&a.plan);
    stem_layout L = {.world_size = 1, .n_groups = 1, .group_size = 1, .ranks_on_node = 1};
    REQUIRE(stem_plan_build(&a.plan, &a.cfg, &a.atoms, NULL, &L) == STEM_OK);
    const stem_plan *p = &a.plan;
    REQUIRE(p->n_slices == 12 && p->dz == 2);
    size_t grid = (size_t)p->nx * p->ny;
    stem_complex *trans = stem_fft_alloc(grid * p->n_slices, "vacuum"), *prop = stem_fft_alloc(grid, "propagator");
    stem_complex *w = stem_fft_alloc(grid, "wave"), *ref = stem_fft_alloc(grid, "reference");
    REQUIRE(trans && prop && w && ref);
    for (size_t k = 0; k < grid * p->n_slices; k++) trans[k] = 1;
    REQUIRE(stem_propagator_build(p, prop) == STEM_OK);
    stem_fft fft;
    REQUIRE(stem_fft_create(&fft, p->nx, p->ny, 1, w, 0) == STEM_OK);
    stem_probe_fourier(p, 4.4, 3.3, w);
    stem_fft_inverse(&fft, w);
    stem_multislice_propagate(p, trans, prop, &fft, w, 1, 0, p->n_slices);
    stem_probe_fourier(&b.plan, 4.4, 3.3, ref);
    double worst = 0, peak = 0;
    for (size_t k = 0; k < grid; k++) {
        worst = fmax(worst, cabsf(w[k] - ref[k]));
        peak = fmax(peak, cabsf(ref[k]));
    }
    CHECK_MSG(worst <= 1e-5 * peak,
              "C1 = -%g probe after %g Angstrom of vacuum vs C1 = 0 probe: max |diff| %.3g (peak %.3g)", T, T, worst,
              peak);
    stem_fft_destroy(&fft);
    stem_fft_free(trans);
    stem_fft_free(prop);
    stem_fft_free(w);
    stem_fft_free(ref);
    probe_free(&a);
    probe_free(&b);
}

/* The Krivanek coefficients: each C_nm alone gives 2 pi/lambda C theta^(n+1)/(n+1)
 * cos(m (phi - phi_nm)) with theta = lambda q (a closed form written out per term here,
 * not the loop of probe.c); the older names equal their Krivanek keys to the bit; an
 * m-fold term repeats every 360/m degrees. */
static void test_krivanek(void)
{
    static const struct {
        const char *name;
        int n, m;
        double c, phi_deg;
    } terms[] = {{"C21", 2, 1, 2e3, 35},   {"C23", 2, 3, 1.8e3, -50}, {"C32", 3, 2, 6e4, 70},
                 {"C34", 3, 4, 7e4, -15},  {"C41", 4, 1, 2.5e6, 110}, {"C43", 4, 3, 2.2e6, -80},
                 {"C45", 4, 5, 2.4e6, 10}, {"C52", 5, 2, 1.2e8, 45},  {"C54", 5, 4, 1.3e8, -30},
                 {"C56", 5, 6, 1.1e8, 60}};
    const double qs[3][2] = {{0.3, 0.1}, {-0.2, 0.5}, {0.45, -0.35}};
    for (size_t t = 0; t < sizeof terms / sizeof terms[0]; t++) {
        probe_case c;
        char ini[256];
        snprintf(ini, sizeof ini, "[probe]\n%s = %g\nphi%s = %g\n", terms[t].name, terms[t].c, terms[t].name + 1,
                 terms[t].phi_deg);
        probe_build(&c, ini);
        double lambda = c.plan.lambda, phi0 = terms[t].phi_deg * M_PI / 180;
        for (int i = 0; i < 3; i++) {
            double theta = lambda * hypot(qs[i][0], qs[i][1]), phi = atan2(qs[i][1], qs[i][0]);
            double want = 2 * M_PI / lambda * terms[t].c * pow(theta, terms[t].n + 1) / (terms[t].n + 1) *
                cos(terms[t].m * (phi - phi0));
            CHECK_CLOSE(stem_probe_chi(&c.plan, qs[i][0], qs[i][1]), want, 1e-9 * fabs(want) + 1e-12);
            /* m-fold symmetry: the same phase 360/m degrees further round */
            double r = hypot(qs[i][0], qs[i][1]), turn = phi + 2 * M_PI / terms[t].m;
            CHECK_CLOSE(stem_probe_chi(&c.plan, r * cos(turn), r * sin(turn)), want, 1e-9 * fabs(want) + 1e-9);
        }
        probe_free(&c);
    }
    /* older names = Krivanek names, bit for bit */
    probe_case a, b;
    probe_build(&a, "[probe]\ndefocus = -35\ncs = 0.012\nc5 = 3\nastigmatism = 12\nastigmatism_angle = 25\n");
    probe_build(&b, "[probe]\nC10 = -35\nC30 = 1.2e5\nC50 = 3e7\nC12 = 12\nphi12 = 25\n");
    for (int i = 0; i < 3; i++)
        CHECK(stem_probe_chi(&a.plan, qs[i][0], qs[i][1]) == stem_probe_chi(&b.plan, qs[i][0], qs[i][1]));
    probe_free(&a);
    probe_free(&b);
}

/* A beam tilted by whole Fourier pixels is the untilted probe's Fourier
 * coefficients shifted by those pixels (aperture and aberrations move together);
 * an aperture shift moves the aperture alone: |coefficients| shifted, phases not. */
static void test_tilt(void)
{
    probe_case flat, tilted, shifted;
    const char *optics =
        "[probe]\nsemiangle = 20\ndefocus = -60\ncs = 0.01\nastigmatism = 12\nastigmatism_angle = 20\n";
    char ini[1024];
    probe_build(&flat, optics);
    double px = flat.plan.lambda / flat.plan.cell[0] * 1e3, py = flat.plan.lambda / flat.plan.cell[1] * 1e3; /* mrad */
    int kx = 5, ky = -3;
    snprintf(ini, sizeof ini, "%sbeam_tilt_x = %.17g\nbeam_tilt_y = %.17g\n", optics, kx * px, ky * py);
    probe_build(&tilted, ini);
    snprintf(ini, sizeof ini, "%saperture_shift_x = %.17g\naperture_shift_y = %.17g\n", optics, kx * px, ky * py);
    probe_build(&shifted, ini);
    int nx = flat.plan.nx, ny = flat.plan.ny;
    size_t grid = (size_t)nx * ny;
    stem_complex *a = stem_fft_alloc(grid, "probe"), *b = stem_fft_alloc(grid, "probe"),
                 *c = stem_fft_alloc(grid, "probe");
    REQUIRE(a && b && c);
    stem_probe_fourier(&flat.plan, 3.1, 4.7, a);
    stem_probe_fourier(&tilted.plan, 3.1, 4.7, b);
    stem_probe_fourier(&shifted.plan, 3.1, 4.7, c);
    double tilt_err = 0, mag_err = 0, phase_diff = 0, peak = 0;
    for (int j = 0; j < ny; j++)
        for (int i = 0; i < nx; i++) {
            int i0 = ((i - kx) % nx + nx) % nx, j0 = ((j - ky) % ny + ny) % ny; /* where b's pixel came from */
            stem_complex want = a[(size_t)j0 * nx + i0], got = b[(size_t)j * nx + i], ap = c[(size_t)j * nx + i];
            /* a tilted probe at (x, y) also carries the tilt's own phase ramp exp(-2 pi i q_t.r) */
            double ramp = -2 * M_PI * (kx / flat.plan.cell[0] * 3.1 + ky / flat.plan.cell[1] * 4.7);
            want *= (stem_complex)(cos(ramp) + I * sin(ramp));
            tilt_err = fmax(tilt_err, cabsf(got - want));
            mag_err = fmax(mag_err, fabs(cabsf(ap) - cabsf(want)));
            if (cabsf(ap) > 0) phase_diff = fmax(phase_diff, cabsf(ap - want));
            peak = fmax(peak, cabsf(want));
        }
    CHECK_MSG(tilt_err <= 1e-5 * peak, "tilted probe vs shifted coefficients: max |diff| %.3g (peak %.3g)", tilt_err,
              peak);
    CHECK_MSG(mag_err <= 1e-5 * peak, "aperture shift: |coefficients| differ from the shifted aperture by %.3g",
              mag_err);
    CHECK_MSG(phase_diff >= 0.1 * peak, "aperture shift moved the aberrations too (phases agree to %.3g)", phase_diff);
    printf("beam tilt (%d, %d) pixels: coefficients = shifted untilted ones to %.2e of the peak; aperture shift: "
           "magnitudes to %.2e, phases differ by up to %.2f of the peak\n",
           kx, ky, tilt_err / peak, mag_err / peak, phase_diff / peak);
    stem_fft_free(a);
    stem_fft_free(b);
    stem_fft_free(c);
    probe_free(&flat);
    probe_free(&tilted);
    probe_free(&shifted);
}

int main(void)
{
    test_tilt();
    test_vacuum_propagation();
    test_chi();
    test_krivanek();
    test_aperture();
    test_shift();
    return check_exit("test_probe");
}
