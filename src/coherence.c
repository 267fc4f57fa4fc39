/* Spatial and temporal partial coherence (coherence.h). */
#include "coherence.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <fftw3.h>

int stem_scan_is_periodic(const stem_plan *plan, int axis)
{
    int n = axis ? plan->scan_ny : plan->scan_nx;
    return fabs(n * plan->scan_step - plan->cell[axis]) <= 1e-6 * plan->cell[axis];
}

/* One axis's blur in Fourier space: each line is copied out, transformed (periodic: a
 * real DFT of its n samples; otherwise a DCT-II, the DFT of its mirrored extension of 2n
 * samples, d c b a | a b c d | d c b a), its frequency q (1/Angstrom) multiplied by the
 * continuous Gaussian's transform exp(-2 pi^2 sigma^2 q^2) and transformed back. This is
 * the exact convolution of the band-limited interpolant of the samples with the Gaussian,
 * whatever the step: a sampled cosine comes out attenuated by exactly that factor. */
typedef struct {
    long n, N; /* samples; length of the periodic line transformed (n or 2n) */
    int periodic;
    double *line, *gain; /* gain[k] for each transform coefficient, the 1/N of the round trip folded in */
    fftw_complex *spec;
    fftw_plan fwd, inv;
} blur_axis_plan;

static void axis_plan_free(blur_axis_plan *a)
{
    if (a->fwd) fftw_destroy_plan(a->fwd);
    if (a->inv) fftw_destroy_plan(a->inv);
    fftw_free(a->line);
    fftw_free(a->spec);
    free(a->gain);
}

static int axis_plan_create(blur_axis_plan *a, long n, int periodic, double sigma, double step)
{
    memset(a, 0, sizeof *a);
    a->n = n, a->periodic = periodic, a->N = periodic ? n : 2 * n;
    long coeffs = periodic ? n / 2 + 1 : n;
    a->line = fftw_malloc(sizeof(double) * n);
    a->spec = periodic ? fftw_malloc(sizeof(fftw_complex) * coeffs) : NULL;
    a->gain = stem_alloc(sizeof(double) * coeffs, "source blur gains");
    if (!a->line || (periodic && !a->spec) || !a->gain) {
        axis_plan_free(a);
        return STEM_FAIL(STEM_ERR_MEMORY, "out of memory for the source size blur (%ld samples)", n);
    }
    for (long k = 0; k < coeffs; k++) {
        double q = k / (a->N * step); /* the DCT's k: cos(pi k (2 j + 1) / 2n), frequency k / (2 n step) */
        a->gain[k] = exp(-2 * M_PI * M_PI * sigma * sigma * q * q) / a->N;
    }
    if (periodic) {
        a->fwd = fftw_plan_dft_r2c_1d((int)n, a->line, a->spec, FFTW_ESTIMATE);
        a->inv = fftw_plan_dft_c2r_1d((int)n, a->spec, a->line, FFTW_ESTIMATE);
    } else {
        a->fwd = fftw_plan_r2r_1d((int)n, a->line, a->line, FFTW_REDFT10, FFTW_ESTIMATE);
        a->inv = fftw_plan_r2r_1d((int)n, a->line, a->line, FFTW_REDFT01, FFTW_ESTIMATE);
    }
    if (!a->fwd || !a->inv) {
        axis_plan_free(a);
        return STEM_FAIL(STEM_ERR_INTERNAL, "FFTW could not plan the source size blur (%ld samples)", n);
    }
    return STEM_OK;
}

/* The line at base, n samples `stride` values apart, blurred in place. */
static void axis_blur_line(blur_axis_plan *a, double *base, long stride)
{
    for (long i = 0; i < a->n; i++) a->line[i] = base[i * stride];
    fftw_execute(a->fwd);
    if (a->periodic) {
        for (long k = 0; k <= a->n / 2; k++)
            a->spec[k] *= a->gain[k]; /* fftw_complex is C99's complex (complex.h first) */
    } else {
        for (long k = 0; k < a->n; k++) a->line[k] *= a->gain[k];
    }
    fftw_execute(a->inv);
    for (long i = 0; i < a->n; i++) base[i * stride] = a->line[i];
}

/* One axis: n samples `stride` records apart, n_lines lines line_step values apart, each record `width` values. */
static int blur_axis(double *data, long n, long stride, long n_lines, long line_step, long width, int periodic,
                     double sigma, double step)
{
    blur_axis_plan a;
    STEM_TRY(axis_plan_create(&a, n, periodic, sigma, step));
    for (long l = 0; l < n_lines; l++)
        for (long k = 0; k < width; k++) axis_blur_line(&a, data + l * line_step + k, stride * width);
    axis_plan_free(&a);
    return STEM_OK;
}

int stem_source_blur(const stem_plan *plan, double *data, long width)
{
    double sigma = plan->opt.source_size / (2 * sqrt(2 * log(2))); /* Angstrom */
    if (!(sigma > 0) || width <= 0) return STEM_OK;
    long nx = plan->scan_nx, ny = plan->scan_ny;
    /* rows (along x): ny lines of nx probes, 1 record apart; then columns: nx lines of ny probes, nx records apart */
    STEM_TRY(blur_axis(data, nx, 1, ny, nx * width, width, stem_scan_is_periodic(plan, 0), sigma, plan->scan_step));
    return blur_axis(data, ny, nx, nx, width, width, stem_scan_is_periodic(plan, 1), sigma, plan->scan_step);
}

int stem_source_blur_warn(const stem_plan *plan)
{
    if (!(plan->opt.source_size > 0) || plan->positions) return 0;
    int px = stem_scan_is_periodic(plan, 0), py = stem_scan_is_periodic(plan, 1);
    if (px && py) return 0;
    stem_warn("[probe] source_size: the scan (%d x %d probes of %g Angstrom) does not cover the %g x %g Angstrom cell "
              "periodically along %s: the blur there mirrors the images at the scan's edges, an approximation within "
              "about a source size (%g Angstrom FWHM) of them; a scan of the whole cell (from 0 to the cell's length, "
              "the step dividing it) is blurred exactly",
              plan->scan_nx, plan->scan_ny, plan->scan_step, plan->cell[0], plan->cell[1],
              px       ? "y"
                  : py ? "x"
                       : "x and y",
              plan->opt.source_size);
    return 1;
}

/* Eigen-decomposition of the symmetric n x n matrix a (destroyed: its diagonal
 * becomes the eigenvalues) by cyclic Jacobi rotations; v: the eigenvectors as
 * columns. Small n (the quadrature's points): simplicity over speed. */
static void jacobi_eigen(int n, double *a, double *v)
{
    for (int i = 0; i < n * n; i++) v[i] = i % (n + 1) ? 0 : 1;
    for (int sweep = 0; sweep < 100; sweep++) {
        double off = 0;
        for (int p = 0; p < n; p++)
            for (int q = p + 1; q < n; q++) off += a[p * n + q] * a[p * n + q];
        if (off < 1e-30) return;
        for (int p = 0; p < n; p++)
            for (int q = p + 1; q < n; q++) {
                double apq = a[p * n + q];
                if (fabs(apq) < 1e-300) continue;
                double theta = (a[q * n + q] - a[p * n + p]) / (2 * apq);
                double t = (theta >= 0 ? 1 : -1) / (fabs(theta) + sqrt(theta * theta + 1));
                double c = 1 / sqrt(t * t + 1), s = t * c;
                for (int k = 0; k < n; k++) { /* a <- J^T a J: columns p, q, then rows p, q */
                    double akp = a[k * n + p], akq = a[k * n + q];
                    a[k * n + p] = c * akp - s * akq;
                    a[k * n + q] = s * akp + c * akq;
                }
                for (int k = 0; k < n; k++) {
                    double apk = a[p * n + k], aqk = a[q * n + k];
                    a[p * n + k] = c * apk - s * aqk;
                    a[q * n + k] = s * apk + c * aqk;
                }
                for (int k = 0; k < n; k++) {
                    double vkp = v[k * n + p], vkq = v[k * n + q];
                    v[k * n + p] = c * vkp - s * vkq;
                    v[k * n + q] = s * vkp + c * vkq;
                }
            }
    }
}

int stem_gauss_hermite(int n, double *x, double *w)
{
    if (n < 1 || n > STEM_MAX_FOCAL_POINTS) return STEM_FAIL(STEM_ERR_INTERNAL, "%d Gauss-Hermite points", n);
    double *a = stem_calloc((size_t)n * n, sizeof(double), "Jacobi matrix");
    double *v = stem_calloc((size_t)n * n, sizeof(double), "eigenvectors");
    if (!a || !v) {
        free(a);
        free(v);
        return STEM_ERR_MEMORY;
    }
    /* x H_k = H_{k+1}/2 + k H_{k-1}: orthonormalised, the off-diagonal is sqrt(k / 2) */
    for (int k = 1; k < n; k++) a[(k - 1) * n + k] = a[k * n + k - 1] = sqrt(k / 2.0);
    jacobi_eigen(n, a, v);
    for (int i = 0; i < n; i++) {
        x[i] = a[i * n + i];
        w[i] = sqrt(M_PI) * v[i] * v[i]; /* v[0 * n + i]: first component of eigenvector i */
    }
    for (int i = 1; i < n; i++) /* ascending (insertion sort: n is small) */
        for (int j = i; j > 0 && x[j] < x[j - 1]; j--) {
            double tx = x[j], tw = w[j];
            x[j] = x[j - 1], w[j] = w[j - 1];
            x[j - 1] = tx, w[j - 1] = tw;
        }
    free(a);
    free(v);
    return STEM_OK;
}

int stem_focal_points(const stem_plan *plan, double *offset, double *weight)
{
    int n = plan->opt.focal_spread > 0 ? plan->opt.focal_points : 1;
    if (n <= 1 || stem_gauss_hermite(n, offset, weight) != STEM_OK) {
        offset[0] = 0, weight[0] = 1;
        return 1;
    }
    /* a Gaussian of standard deviation sigma: dC = sqrt(2) sigma x, weight w / sqrt(pi) */
    for (int i = 0; i < n; i++) {
        offset[i] *= sqrt(2.0) * plan->opt.focal_spread;
        weight[i] /= sqrt(M_PI);
    }
    return n;
}

double stem_focal_quadrature_error(int n, double k_max)
{
    double x[STEM_MAX_FOCAL_POINTS], w[STEM_MAX_FOCAL_POINTS], worst = 0;
    if (n < 1 || n > STEM_MAX_FOCAL_POINTS || stem_gauss_hermite(n, x, w) != STEM_OK) return 1;
    /* the error oscillates in K with a period ~ pi / max|x|: 2000 samples resolve it up to K ~ 400 */
    const int samples = 2000;
    for (int s = 1; s <= samples; s++) {
        double K = k_max * s / samples, rule = 0;
        for (int i = 0; i < n; i++) rule += w[i] * cos(K * x[i]); /* the sine parts cancel (symmetric nodes) */
        double err = fabs(rule / sqrt(M_PI) - exp(-K * K / 4));
        if (err > worst) worst = err;
    }
    return worst;
}

double stem_focal_k_max(const stem_plan *plan)
{
    if (!(plan->opt.focal_spread > 0)) return 0;
    double q;
    double aperture = stem_options_objective_aperture(&plan->opt);
    if (plan->algorithm == STEM_ALG_HRTEM) /* the image's directions: inside the objective aperture or the band */
        q = aperture > 0 ? fmin(aperture / plan->lambda, plan->q_limit) : plan->q_limit;
    else /* the probe's: chi is centred on the beam tilt, the aperture on tilt plus shift */
        q = hypot(plan->aperture_q[0] - plan->tilt_q[0], plan->aperture_q[1] - plan->tilt_q[1]) +
            plan->alpha / plan->lambda;
    return sqrt(2.0) * plan->opt.focal_spread * M_PI * plan->lambda * q * q;
}

int stem_focal_points_needed(double k_max, double tol)
{
    if (!(k_max > 0)) return 1;
    for (int n = 1; n < STEM_MAX_FOCAL_POINTS; n++)
        if (stem_focal_quadrature_error(n, k_max) < tol) return n;
    return STEM_MAX_FOCAL_POINTS;
}
