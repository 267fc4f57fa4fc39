/* Frozen phonons: stem_atoms_displace must leave the model alone when
 * thermal motion is off or the rms amplitude is zero, be reproducible
 * bit for bit for the same (seed, configuration), differ between
 * configurations and seeds, and draw Gaussian displacements whose rms along
 * each axis is the sigma column. Also checked on the transmission functions. */
#include <math.h>
#include <string.h>

#include "sim.h"

static const double CELL = 200.0;

/* N atoms on a grid in the middle of a tall cell (no clamping along z);
 * the first half has sigma s1, the second half s2. */
static void make_model(stem_atoms *a, long n, double s1, double s2)
{
    memset(a, 0, sizeof *a);
    a->cell[0] = a->cell[1] = a->cell[2] = CELL;
    REQUIRE(stem_atoms_alloc(a, n) == STEM_OK);
    for (long i = 0; i < n; i++) {
        a->Z[i] = 14;
        a->x[i] = fmod(i * 0.37, CELL);
        a->y[i] = fmod(i * 0.011, CELL);
        a->z[i] = 100.0;
        a->occupancy[i] = 1;
        a->sigma[i] = i < n / 2 ? s1 : s2;
    }
}

static double wrap_diff(double d) { return d - CELL * floor(d / CELL + 0.5); }

static int same_positions(const stem_atoms *a, const stem_atoms *b)
{
    return a->n == b->n && !memcmp(a->x, b->x, a->n * sizeof(double)) && !memcmp(a->y, b->y, a->n * sizeof(double)) &&
        !memcmp(a->z, b->z, a->n * sizeof(double));
}

static void test_no_motion(void)
{
    stem_atoms m, d0, d1;
    make_model(&m, 1000, 0.08, 0.12);
    /* thermal off: every configuration is the input model */
    REQUIRE(stem_atoms_displace(&m, 7, 0, 0, &d0) == STEM_OK);
    REQUIRE(stem_atoms_displace(&m, 7, 5, 0, &d1) == STEM_OK);
    CHECK(same_positions(&d0, &m));
    CHECK(same_positions(&d1, &m));
    stem_atoms_free(&d0);
    stem_atoms_free(&d1);
    stem_atoms_free(&m);
    /* thermal on but sigma = 0 */
    make_model(&m, 1000, 0.0, 0.0);
    REQUIRE(stem_atoms_displace(&m, 7, 0, 1, &d0) == STEM_OK);
    REQUIRE(stem_atoms_displace(&m, 7, 3, 1, &d1) == STEM_OK);
    CHECK(same_positions(&d0, &m));
    CHECK(same_positions(&d1, &m));
    /* the other columns are carried over */
    CHECK(!memcmp(d1.Z, m.Z, m.n * sizeof(int)) && !memcmp(d1.occupancy, m.occupancy, m.n * sizeof(double)));
    for (int k = 0; k < 3; k++) CHECK_INT_EQ(d1.cell[k] == m.cell[k], 1);
    stem_atoms_free(&d0);
    stem_atoms_free(&d1);
    stem_atoms_free(&m);
}

static void test_reproducible(void)
{
    stem_atoms m, a, b, c, d;
    make_model(&m, 2000, 0.1, 0.1);
    REQUIRE(stem_atoms_displace(&m, 12345, 4, 1, &a) == STEM_OK);
    REQUIRE(stem_atoms_displace(&m, 12345, 4, 1, &b) == STEM_OK);
    REQUIRE(stem_atoms_displace(&m, 12345, 5, 1, &c) == STEM_OK);
    REQUIRE(stem_atoms_displace(&m, 12346, 4, 1, &d) == STEM_OK);
    CHECK_MSG(same_positions(&a, &b), "same seed and configuration are not bit-identical");
    long same_c = 0, same_d = 0, moved = 0;
    for (long i = 0; i < m.n; i++) {
        same_c += a.x[i] == c.x[i] || a.y[i] == c.y[i] || a.z[i] == c.z[i];
        same_d += a.x[i] == d.x[i] || a.y[i] == d.y[i] || a.z[i] == d.z[i];
        moved += a.x[i] != m.x[i] && a.y[i] != m.y[i] && a.z[i] != m.z[i];
    }
    CHECK_MSG(same_c == 0, "%ld atoms share a coordinate between configurations 4 and 5", same_c);
    CHECK_MSG(same_d == 0, "%ld atoms share a coordinate between seeds 12345 and 12346", same_d);
    CHECK_INT_EQ(moved, m.n);
    /* A displacement depends on (seed, configuration, atom index) only: the
     * first 500 atoms of a smaller model move exactly as in the full one. */
    stem_atoms small, e;
    make_model(&small, 500, 0.1, 0.1);
    REQUIRE(stem_atoms_displace(&small, 12345, 4, 1, &e) == STEM_OK);
    CHECK(!memcmp(e.x, a.x, 250 * sizeof(double)) && !memcmp(e.z, a.z, 250 * sizeof(double)));
    stem_atoms_free(&small);
    stem_atoms_free(&e);
    stem_atoms_free(&a);
    stem_atoms_free(&b);
    stem_atoms_free(&c);
    stem_atoms_free(&d);
    stem_atoms_free(&m);
}

/* rms per axis matches the sigma column of each half. For N samples of a
 * Gaussian the rms estimate has relative standard deviation 1/sqrt(2N)
 * (0.5% for N = 20000): the tolerance of 3% is 6 standard deviations, so the
 * check is deterministic in practice yet fails for a sigma off by a factor
 * sqrt(2) or sqrt(3) (e.g. a 3D rms used per axis). The mean must vanish
 * (|mean| < 6 sigma/sqrt(N)), the axes be uncorrelated (|r| < 6/sqrt(N)) and
 * the kurtosis be Gaussian (3 +- 6 sqrt(24/N)). */
static void test_statistics(void)
{
    const long n = 40000;
    const double s[2] = {0.05, 0.15};
    stem_atoms m, d, d2;
    make_model(&m, n, s[0], s[1]);
    REQUIRE(stem_atoms_displace(&m, 99, 2, 1, &d) == STEM_OK);
    REQUIRE(stem_atoms_displace(&m, 99, 3, 1, &d2) == STEM_OK);
    for (int half = 0; half < 2; half++) {
        long b = half * n / 2, e = b + n / 2;
        double N = (double)(e - b);
        double sum[3] = {0}, sum2[3] = {0}, sum4[3] = {0}, sxy = 0, sxz = 0, sconf = 0;
        for (long i = b; i < e; i++) {
            double u[3] = {wrap_diff(d.x[i] - m.x[i]), wrap_diff(d.y[i] - m.y[i]), d.z[i] - m.z[i]};
            for (int k = 0; k < 3; k++) {
                sum[k] += u[k];
                sum2[k] += u[k] * u[k];
                sum4[k] += u[k] * u[k] * u[k] * u[k];
            }
            sxy += u[0] * u[1];
            sxz += u[0] * u[2];
            sconf += u[0] * wrap_diff(d2.x[i] - m.x[i]);
        }
        const char axis[3] = {'x', 'y', 'z'};
        for (int k = 0; k < 3; k++) {
            double rms = sqrt(sum2[k] / N), kurt = sum4[k] / N / pow(sum2[k] / N, 2);
            CHECK_MSG(fabs(rms - s[half]) <= 0.03 * s[half], "sigma %g: rms along %c = %.5f", s[half], axis[k], rms);
            CHECK_MSG(fabs(sum[k] / N) <= 6 * s[half] / sqrt(N), "sigma %g: mean along %c = %.5f", s[half], axis[k],
                      sum[k] / N);
            CHECK_MSG(fabs(kurt - 3) <= 6 * sqrt(24 / N), "sigma %g: kurtosis along %c = %.4f (Gaussian: 3)", s[half],
                      axis[k], kurt);
            printf("sigma %.3f axis %c: rms %.5f (%.2f%%), mean %+.2e, kurtosis %.3f\n", s[half], axis[k], rms,
                   100 * (rms / s[half] - 1), sum[k] / N, kurt);
        }
        double var = s[half] * s[half];
        CHECK_MSG(fabs(sxy / N / var) <= 6 / sqrt(N), "x-y correlation %.4f", sxy / N / var);
        CHECK_MSG(fabs(sxz / N / var) <= 6 / sqrt(N), "x-z correlation %.4f", sxz / N / var);
        CHECK_MSG(fabs(sconf / N / var) <= 6 / sqrt(N), "correlation between configurations %.4f", sconf / N / var);
    }
    stem_atoms_free(&d);
    stem_atoms_free(&d2);
    stem_atoms_free(&m);
}

/* The same through the potential: configurations of a Si crystal with
 * sigma = 0 give bit-identical transmission functions; with the XYZ sigma
 * (0.076 Angstrom) they differ. */
static void transmission_of(const char *ini, const stem_atoms *model, int config, stem_complex **out, size_t *n)
{
    sim_case s;
    REQUIRE(sim_prepare(&s, ini, model) == STEM_OK);
    REQUIRE(sim_transmission(&s, config) == STEM_OK);
    *n = (size_t)s.plan.nx * s.plan.ny * s.plan.n_slices;
    *out = s.trans; /* taken over from the case */
    s.trans = NULL;
    sim_free(&s);
}

static void test_transmission_configs(void)
{
    const char *ini =
        "[sample]\nxyz = " STEMSIM_TEST_DATA_DIR "/Si100_unitcell.xyz\n"
        "tile_x = 2\ntile_y = 2\n[simulation]\npixel_size = 0.1\nslice_thickness = 1.3575\nthermal = true\nseed = 42\n"
        "frozen_phonons = 4\n[scan]\nstep = 1\n[compute]\nthreads = 2\n";
    stem_atoms si;
    REQUIRE(stem_xyz_read(STEMSIM_TEST_DATA_DIR "/Si100_unitcell.xyz", &si) == STEM_OK);
    REQUIRE(si.n == 8 && si.sigma[0] > 0);
    stem_complex *t0, *t1, *t0b;
    size_t n;
    transmission_of(ini, &si, 0, &t0, &n);
    transmission_of(ini, &si, 0, &t0b, &n);
    transmission_of(ini, &si, 1, &t1, &n);
    CHECK_MSG(!memcmp(t0, t0b, n * sizeof(stem_complex)), "configuration 0 built twice differs");
    double diff = 0;
    for (size_t i = 0; i < n; i++) diff = fmax(diff, cabsf(t0[i] - t1[i]));
    CHECK_MSG(diff > 1e-3, "configurations 0 and 1 with sigma = 0.076 are (nearly) identical: max |t0 - t1| = %g",
              diff);
    stem_fft_free(t1);
    for (long i = 0; i < si.n; i++) si.sigma[i] = 0;
    transmission_of(ini, &si, 1, &t1, &n);
    stem_fft_free(t0);
    transmission_of(ini, &si, 0, &t0, &n);
    CHECK_MSG(!memcmp(t0, t1, n * sizeof(stem_complex)), "sigma = 0: configurations 0 and 1 differ");
    stem_fft_free(t0);
    stem_fft_free(t0b);
    stem_fft_free(t1);
    stem_atoms_free(&si);
}

int main(void)
{
    stem_log_init(0, STEM_LOG_QUIET);
    test_no_motion();
    test_reproducible();
    test_statistics();
    test_transmission_configs();
    return check_exit("test_phonons");
}
