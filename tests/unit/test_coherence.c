/* Spatial partial coherence (src/coherence.c) against a direct 2D convolution
 * written here from the definition (a 2D Gaussian of the source's FWHM sampled
 * at the scan positions, cut at 4 sigma, normalised; wrapped over a scan that
 * covers the cell, mirrored at the edges of a window): a point response, random
 * data, and the total of a periodic scan kept. */
#include <math.h>

#include "check.h"
#include "coherence.h"

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

static long reflect(long i, long n)
{
    while (i < 0 || i >= n) i = i < 0 ? -i - 1 : 2 * n - i - 1;
    return i;
}

/* out[y][x][k] = sum over (dx, dy) in the 4-sigma square of g(dx) g(dy) in[y+dy][x+dx][k], edges per axis. */
static void direct(const stem_plan *p, const double *in, double *out, int width, int wrap_x, int wrap_y)
{
    double s = p->opt.source_size / (2 * sqrt(2 * log(2))) / p->scan_step;
    int r = (int)(4 * s + 0.5);
    double norm = 0;
    for (int d = -r; d <= r; d++) norm += exp(-d * d / (2 * s * s));
    for (int y = 0; y < p->scan_ny; y++)
        for (int x = 0; x < p->scan_nx; x++)
            for (int k = 0; k < width; k++) {
                double sum = 0;
                for (int dy = -r; dy <= r; dy++)
                    for (int dx = -r; dx <= r; dx++) {
                        long X = wrap_x ? ((x + dx) % p->scan_nx + p->scan_nx) % p->scan_nx : reflect(x + dx, p->scan_nx);
                        long Y = wrap_y ? ((y + dy) % p->scan_ny + p->scan_ny) % p->scan_ny : reflect(y + dy, p->scan_ny);
                        sum += exp(-(dx * dx + dy * dy) / (2 * s * s)) / (norm * norm) * in[(Y * p->scan_nx + X) * width + k];
                    }
                out[((long)y * p->scan_nx + x) * width + k] = sum;
            }
}

static void compare_with_direct(stem_plan p, int width, int wrap_x, int wrap_y, int point)
{
    long n = (long)p.scan_nx * p.scan_ny * width;
    double *a = calloc(n, sizeof *a), *b = calloc(n, sizeof *b), *in = calloc(n, sizeof *in);
    srand(5);
    for (long i = 0; i < n; i++) in[i] = point ? 0 : rand() / (double)RAND_MAX - 0.3;
    if (point) in[(3L * p.scan_nx + 1) * width] = 1; /* a point near an edge */
    memcpy(a, in, n * sizeof *a);
    CHECK_INT_EQ(stem_source_blur(&p, a, width), STEM_OK);
    direct(&p, in, b, width, wrap_x, wrap_y);
    double d = 0, m = 0, ta = 0, tin = 0;
    for (long i = 0; i < n; i++) {
        d = fmax(d, fabs(a[i] - b[i]));
        m = fmax(m, fabs(b[i]));
        ta += a[i], tin += in[i];
    }
    CHECK_MSG(d <= 1e-12 * m, "blur vs direct convolution: max diff %.3g (max %.3g)", d, m);
    if (wrap_x && wrap_y) CHECK_CLOSE(ta, tin, 1e-10 * fabs(tin) + 1e-12); /* a periodic blur keeps the total */
    free(a), free(b), free(in);
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
    /* 12 x 9 probes of 0.5 A over a 6 x 4.5 A cell: both axes periodic */
    stem_plan p = scan_plan(12, 9, 0.5, 6.0, 4.5, 1.3);
    CHECK(stem_scan_is_periodic(&p, 0) && stem_scan_is_periodic(&p, 1));
    compare_with_direct(p, 3, 1, 1, 0);
    compare_with_direct(p, 1, 1, 1, 1);
    /* a window: mirrored on both axes, and a kernel wider than the window */
    p = scan_plan(7, 5, 0.4, 20, 20, 1.1);
    CHECK(!stem_scan_is_periodic(&p, 0) && !stem_scan_is_periodic(&p, 1));
    compare_with_direct(p, 2, 0, 0, 0);
    compare_with_direct(p, 1, 0, 0, 1);
    p = scan_plan(6, 4, 0.3, 20, 20, 3.0); /* radius 5 steps over 4-6 probes: mirrored more than once */
    compare_with_direct(p, 1, 0, 0, 0);
    /* periodic along x only */
    p = scan_plan(10, 6, 0.5, 5.0, 20, 0.9);
    CHECK(stem_scan_is_periodic(&p, 0) && !stem_scan_is_periodic(&p, 1));
    compare_with_direct(p, 2, 1, 0, 0);
    /* no source size: unchanged */
    p = scan_plan(4, 4, 0.5, 2, 2, 0);
    double v[16];
    for (int i = 0; i < 16; i++) v[i] = i;
    CHECK_INT_EQ(stem_source_blur(&p, v, 1), STEM_OK);
    for (int i = 0; i < 16; i++) CHECK(v[i] == i);
    return check_exit("test_coherence");
}
