/* Spatial partial coherence (src/coherence.c):
 *  - closed forms: a sampled cosine of frequency q (1/Angstrom) over a periodic scan comes out
 *    multiplied by exp(-2 pi^2 sigma^2 q^2), the continuous Gaussian's transform, for sigma
 *    of 0.5, 1 and 2 scan steps and frequencies up to Nyquist; over a window (mirrored edges)
 *    so does every cosine symmetric about the edges, cos(pi k (i + 1/2) / n); the same
 *    band-limited image sampled at two steps gives the same blurred values (step independence);
 *  - random data and a point near an edge against the definition written here: the DFT
 *    sums of the line (periodic) or of its mirrored extension of 2n samples, the Gaussian's
 *    transform at each frequency, the inverse sums;
 *  - a source size on a scan that does not cover the cell periodically is warned about. */
#include <math.h>
#include <stdio.h>
#include <unistd.h>

#include "check.h"
#include "coherence.h"
#include "sim.h"

/* A plan with only what the blur reads: scan grid, step, cell, source size. */
static stem_plan scan_plan(int nx, int ny, double step, double cell_x, double cell_y, double fwhm)
{
    stem_plan p;
    memset(&p, 0, sizeof p);
    p.scan_nx = nx, p.scan_ny = ny, p.scan_step = step;
    p.cell[0] = cell_x, p.cell[1] = cell_y, p.cell[2] = 10;
    p.opt.source_size = fwhm;
    return p;
}

static const double fwhm_per_sigma = 2.3548200450309493; /* 2 sqrt(2 ln 2) */

static double gauss_ft(double sigma, double q) { return exp(-2 * M_PI * M_PI * sigma * sigma * q * q); }

/* Cosines on a periodic nx x ny scan: cos(2 pi kx i / nx) cos(2 pi ky j / ny + 0.3), kx, ky up
 * to Nyquist, must come out times gauss_ft(qx) gauss_ft(qy) exactly. */
static void check_periodic_cosines(double sigma_steps)
{
    const int nx = 16, ny = 10;
    const double step = 0.4;
    stem_plan p = scan_plan(nx, ny, step, nx * step, ny * step, sigma_steps * step * fwhm_per_sigma);
    REQUIRE(stem_scan_is_periodic(&p, 0) && stem_scan_is_periodic(&p, 1));
    int kxs[] = {0, 1, 3, 7, 8}, kys[] = {0, 2, 4, 5};
    double worst = 0, worst_gain = 1;
    for (int a = 0; a < 5; a++)
        for (int b = 0; b < 4; b++) {
            double v[16 * 10], want[16 * 10];
            double gain =
                gauss_ft(sigma_steps * step, kxs[a] / (nx * step)) * gauss_ft(sigma_steps * step, kys[b] / (ny * step));
            for (int j = 0; j < ny; j++)
                for (int i = 0; i < nx; i++) {
                    double c =
                        cos(2 * M_PI * kxs[a] * i / nx) * cos(2 * M_PI * kys[b] * j / ny + (kys[b] == 5 ? 0 : 0.3));
                    v[j * nx + i] = c;
                    want[j * nx + i] = gain * c;
                }
            CHECK_INT_EQ(stem_source_blur(&p, v, 1), STEM_OK);
            for (int k = 0; k < nx * ny; k++) worst = fmax(worst, fabs(v[k] - want[k]));
            worst_gain = fmin(worst_gain, gain);
        }
    printf("periodic cosines, sigma %.1f steps: max |blurred - exp(-2 pi^2 sigma^2 q^2) cos| %.2g (smallest factor "
           "%.3g)\n",
           sigma_steps, worst, worst_gain);
    CHECK_MSG(worst <= 1e-13, "sigma %.1f steps: cosines off exp(-2 pi^2 sigma^2 q^2) by %.3g", sigma_steps, worst);
}

/* A window (mirrored edges): cos(pi kx (i + 1/2) / nx) cos(pi ky (j + 1/2) / ny) times
 * gauss_ft at q = k / (2 n step). */
static void check_mirrored_cosines(double sigma_steps)
{
    const int nx = 9, ny = 6;
    const double step = 0.25;
    stem_plan p = scan_plan(nx, ny, step, 20, 20, sigma_steps * step * fwhm_per_sigma);
    REQUIRE(!stem_scan_is_periodic(&p, 0) && !stem_scan_is_periodic(&p, 1));
    double worst = 0;
    for (int kx = 0; kx < nx; kx += 2)
        for (int ky = 0; ky < ny; ky++) {
            double v[9 * 6], want[9 * 6];
            double gain = gauss_ft(sigma_steps * step, kx / (2.0 * nx * step)) *
                gauss_ft(sigma_steps * step, ky / (2.0 * ny * step));
            for (int j = 0; j < ny; j++)
                for (int i = 0; i < nx; i++) {
                    double c = cos(M_PI * kx * (i + 0.5) / nx) * cos(M_PI * ky * (j + 0.5) / ny);
                    v[j * nx + i] = c;
                    want[j * nx + i] = gain * c;
                }
            CHECK_INT_EQ(stem_source_blur(&p, v, 1), STEM_OK);
            for (int k = 0; k < nx * ny; k++) worst = fmax(worst, fabs(v[k] - want[k]));
        }
    printf("mirrored cosines, sigma %.1f steps: max |blurred - exp(-2 pi^2 sigma^2 q^2) cos| %.2g\n", sigma_steps,
           worst);
    CHECK_MSG(worst <= 1e-13, "mirrored, sigma %.1f steps: cosines off exp(-2 pi^2 sigma^2 q^2) by %.3g", sigma_steps,
              worst);
}

/* One band-limited image of a 6 x 4.8 A cell (three cosines), scanned at 0.6 and at 0.3 A,
 * blurred with a 0.9 A FWHM source (sigma 0.64 and 1.27 steps): the same values where the
 * scans meet, equal to the closed form. */
static double cell_image(double x, double y, double sigma)
{
    double L[2] = {6, 4.8};
    return 1 + 0.5 * gauss_ft(sigma, 2 / L[0]) * cos(2 * M_PI * 2 * x / L[0]) +
        0.3 * gauss_ft(sigma, 3 / L[1]) * sin(2 * M_PI * 3 * y / L[1]) +
        0.2 * gauss_ft(sigma, hypot(4 / L[0], 3 / L[1])) * cos(2 * M_PI * (4 * x / L[0] + 3 * y / L[1]) + 1);
}

static void check_step_independence(void)
{
    const double fwhm = 0.9, sigma = fwhm / fwhm_per_sigma;
    double worst = 0;
    for (int fine = 0; fine < 2; fine++) {
        double step = fine ? 0.3 : 0.6;
        int nx = (int)lround(6 / step), ny = (int)lround(4.8 / step);
        stem_plan p = scan_plan(nx, ny, step, 6, 4.8, fwhm);
        double *v = calloc((size_t)nx * ny, sizeof *v);
        REQUIRE(v);
        for (int j = 0; j < ny; j++)
            for (int i = 0; i < nx; i++) v[j * nx + i] = cell_image(i * step, j * step, 0);
        CHECK_INT_EQ(stem_source_blur(&p, v, 1), STEM_OK);
        for (int j = 0; j < ny; j++)
            for (int i = 0; i < nx; i++)
                worst = fmax(worst, fabs(v[j * nx + i] - cell_image(i * step, j * step, sigma)));
        free(v);
    }
    printf("one image scanned at 0.6 and 0.3 A, 0.9 A FWHM source: max |blurred - closed form| %.2g\n", worst);
    CHECK_MSG(worst <= 1e-13, "blur depends on the scan step: %.3g from the closed form", worst);
}

/* The definition along one axis: the line (periodic) or its mirrored extension e of N = 2n
 * samples, out_i = (1/N) sum_k gauss_ft(q_k) sum_m e_m cos(2 pi k (i - m) / N), q_k = min(k, N - k) / (N step). */
static void define_axis(const double *in, double *out, int n, int periodic, double sigma, double step)
{
    int N = periodic ? n : 2 * n;
    for (int i = 0; i < n; i++) {
        double s = 0;
        for (int k = 0; k < N; k++) {
            double g = gauss_ft(sigma, (k < N - k ? k : N - k) / (N * step));
            for (int m = 0; m < N; m++) s += g * in[m < n ? m : N - 1 - m] * cos(2 * M_PI * (double)k * (i - m) / N);
        }
        out[i] = s / N;
    }
}

/* The whole scan [ny][nx][width] by the definition, along x then y. */
static void define_blur(const stem_plan *p, double *data, int width)
{
    double sigma = p->opt.source_size / fwhm_per_sigma, in[64], out[64];
    int nx = p->scan_nx, ny = p->scan_ny;
    for (int k = 0; k < width; k++) {
        for (int j = 0; j < ny; j++) {
            for (int i = 0; i < nx; i++) in[i] = data[((long)j * nx + i) * width + k];
            define_axis(in, out, nx, stem_scan_is_periodic(p, 0), sigma, p->scan_step);
            for (int i = 0; i < nx; i++) data[((long)j * nx + i) * width + k] = out[i];
        }
        for (int i = 0; i < nx; i++) {
            for (int j = 0; j < ny; j++) in[j] = data[((long)j * nx + i) * width + k];
            define_axis(in, out, ny, stem_scan_is_periodic(p, 1), sigma, p->scan_step);
            for (int j = 0; j < ny; j++) data[((long)j * nx + i) * width + k] = out[j];
        }
    }
}

static void compare_with_definition(stem_plan p, int width, int point)
{
    long n = (long)p.scan_nx * p.scan_ny * width;
    double *a = calloc(n, sizeof *a), *b = calloc(n, sizeof *b);
    srand(5);
    for (long i = 0; i < n; i++) a[i] = point ? 0 : rand() / (double)RAND_MAX - 0.3;
    if (point) a[(3L * p.scan_nx + 1) * width] = 1; /* a point near an edge */
    memcpy(b, a, n * sizeof *a);
    double tin = 0, ta = 0, d = 0, m = 0;
    for (long i = 0; i < n; i++) tin += a[i];
    CHECK_INT_EQ(stem_source_blur(&p, a, width), STEM_OK);
    define_blur(&p, b, width);
    for (long i = 0; i < n; i++) {
        d = fmax(d, fabs(a[i] - b[i]));
        m = fmax(m, fabs(b[i]));
        ta += a[i];
    }
    CHECK_MSG(d <= 1e-12 * m, "blur vs its definition: max diff %.3g (max %.3g)", d, m);
    CHECK_CLOSE(ta, tin, 1e-10 * fabs(tin) + 1e-12); /* both the periodic and the mirrored blur keep the total */
    free(a), free(b);
}

/* What stem_warn writes while f runs (stderr through a temporary file). */
static void capture_stderr(void (*f)(void *), void *arg, char *text, size_t size)
{
    fflush(stderr);
    int saved = dup(2);
    FILE *tmp = tmpfile();
    REQUIRE(saved >= 0 && tmp);
    dup2(fileno(tmp), 2);
    f(arg);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(tmp);
    size_t got = fread(text, 1, size - 1, tmp);
    text[got] = 0;
    fclose(tmp);
}

static char warn_ini[1024];

static int warn_err;

static void build_plan(void *arg) { warn_err = sim_prepare(arg, warn_ini, NULL); }

/* The plan of a Si cell scanned as `scan` (fractional, the step in Angstrom) with a 1 A source: the warning, if any. */
static void plan_warning(const char *scan, char *text, size_t size)
{
    sim_case *s = calloc(1, sizeof *s);
    REQUIRE(s);
    snprintf(warn_ini, sizeof warn_ini,
             "[sample]\nxyz = %s/Si100_unitcell.xyz\n[probe]\nsemiangle = 20\nsource_size = 1\n"
             "[scan]\n%s\n[simulation]\npixel_size = 0.05\n",
             STEMSIM_TEST_DATA_DIR, scan);
    capture_stderr(build_plan, s, text, size);
    REQUIRE(warn_err == STEM_OK);
    sim_free(s);
    free(s);
}

static void check_warning(void)
{
    char text[2048];
    plan_warning("x_start = 0\nx_end = 1\ny_start = 0\ny_end = 1\nstep = 0.543", text, sizeof text);
    CHECK_MSG(!strstr(text, "source_size"), "a scan of the whole cell warns: %s", text);
    plan_warning("x_start = 0.2\nx_end = 0.6\ny_start = 0\ny_end = 1\nstep = 0.543", text, sizeof text);
    printf("a window of the cell: %s", text);
    CHECK_MSG(strstr(text, "warning: [probe] source_size") && strstr(text, "periodically along x:"),
              "no warning for a scan that does not cover the cell along x: \"%s\"", text);
}

/* Gauss-Hermite points against the closed forms: n = 1 and 3 exactly, and for n
 * points the moments int x^k exp(-x^2) dx = (k-1)!! sqrt(pi) / 2^(k/2) (even k
 * <= 2n - 1, exact for the rule) and 0 (odd k). */
static void check_gauss_hermite(void)
{
    double x[STEM_MAX_FOCAL_POINTS], w[STEM_MAX_FOCAL_POINTS], sp = sqrt(M_PI);
    CHECK_INT_EQ(stem_gauss_hermite(1, x, w), STEM_OK);
    CHECK_CLOSE(x[0], 0, 1e-15);
    CHECK_CLOSE(w[0], sp, 1e-14);
    CHECK_INT_EQ(stem_gauss_hermite(3, x, w), STEM_OK);
    CHECK_CLOSE(x[0], -sqrt(1.5), 1e-13);
    CHECK_CLOSE(x[1], 0, 1e-13);
    CHECK_CLOSE(x[2], sqrt(1.5), 1e-13);
    CHECK_CLOSE(w[0], sp / 6, 1e-13);
    CHECK_CLOSE(w[1], 2 * sp / 3, 1e-13);
    CHECK_CLOSE(w[2], sp / 6, 1e-13);
    int sizes[] = {2, 5, 7, 12, 20, 40};
    for (int t = 0; t < 6; t++) {
        int n = sizes[t];
        CHECK_INT_EQ(stem_gauss_hermite(n, x, w), STEM_OK);
        for (int k = 0; k <= 2 * n - 1 && k <= 24; k++) {
            double sum = 0, exact = 0, scale = 0; /* scale: the size of the terms, for the rounding */
            for (int i = 0; i < n; i++) sum += w[i] * pow(x[i], k), scale += w[i] * pow(fabs(x[i]), k);
            if (k % 2 == 0) {
                exact = sp;
                for (int j = k - 1; j > 0; j -= 2) exact *= j / 2.0;
            }
            CHECK_MSG(fabs(sum - exact) <= 1e-10 * scale, "n %d moment %d: %.15g vs %.15g", n, k, sum, exact);
        }
        for (int i = 1; i < n; i++) CHECK(x[i] > x[i - 1]);
    }
    CHECK(stem_gauss_hermite(0, x, w) != STEM_OK);
    /* the plan's defoci: weights sum to 1, variance sigma^2, fourth moment 3 sigma^4 */
    stem_plan p;
    memset(&p, 0, sizeof p);
    p.opt.focal_spread = 30, p.opt.focal_points = 7;
    double off[STEM_MAX_FOCAL_POINTS], wt[STEM_MAX_FOCAL_POINTS], m0 = 0, m2 = 0, m4 = 0;
    CHECK_INT_EQ(stem_focal_points(&p, off, wt), 7);
    for (int i = 0; i < 7; i++) m0 += wt[i], m2 += wt[i] * off[i] * off[i], m4 += wt[i] * pow(off[i], 4);
    CHECK_CLOSE(m0, 1, 1e-13);
    CHECK_CLOSE(m2, 900, 1e-9);
    CHECK_CLOSE(m4, 3 * 900.0 * 900, 1e-6);
    p.opt.focal_spread = 0; /* none: one point, the coherent probe */
    CHECK_INT_EQ(stem_focal_points(&p, off, wt), 1);
    CHECK(off[0] == 0 && wt[0] == 1);
}

int main(void)
{
    check_gauss_hermite();
    for (int k = 0; k < 3; k++) { /* sigma 0.5, 1 and 2 scan steps */
        check_periodic_cosines(0.5 * (1 << k));
        check_mirrored_cosines(0.5 * (1 << k));
    }
    check_step_independence();
    /* 12 x 9 probes of 0.5 A over a 6 x 4.5 A cell: both axes periodic */
    stem_plan p = scan_plan(12, 9, 0.5, 6.0, 4.5, 1.3);
    CHECK(stem_scan_is_periodic(&p, 0) && stem_scan_is_periodic(&p, 1));
    compare_with_definition(p, 3, 0);
    compare_with_definition(p, 1, 1);
    /* a window: mirrored on both axes, and a source wider than the window */
    p = scan_plan(7, 5, 0.4, 20, 20, 1.1);
    CHECK(!stem_scan_is_periodic(&p, 0) && !stem_scan_is_periodic(&p, 1));
    compare_with_definition(p, 2, 0);
    compare_with_definition(p, 1, 1);
    p = scan_plan(6, 4, 0.3, 20, 20, 3.0);
    compare_with_definition(p, 1, 0);
    /* periodic along x only */
    p = scan_plan(10, 6, 0.5, 5.0, 20, 0.9);
    CHECK(stem_scan_is_periodic(&p, 0) && !stem_scan_is_periodic(&p, 1));
    compare_with_definition(p, 2, 0);
    /* no source size: unchanged */
    p = scan_plan(4, 4, 0.5, 2, 2, 0);
    double v[16];
    for (int i = 0; i < 16; i++) v[i] = i;
    CHECK_INT_EQ(stem_source_blur(&p, v, 1), STEM_OK);
    for (int i = 0; i < 16; i++) CHECK(v[i] == i);
    check_warning();
    return check_exit("test_coherence");
}
