/* Spatial and temporal partial coherence (coherence.h). */
#include "coherence.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int stem_scan_is_periodic(const stem_plan *plan, int axis)
{
    int n = axis ? plan->scan_ny : plan->scan_nx;
    return fabs(n * plan->scan_step - plan->cell[axis]) <= 1e-6 * plan->cell[axis];
}

/* Index i of a line of n samples, outside [0, n) wrapped or mirrored. */
static long edge_index(long i, long n, int periodic)
{
    if (periodic) return ((i % n) + n) % n;
    long period = 2 * n;
    i = ((i % period) + period) % period;
    return i < n ? i : period - 1 - i;
}

/* One axis: n samples `stride` records apart, lines starting at every offset of `starts`. */
static void blur_axis(double *data, long n, long stride, long n_lines, long line_step, long width, const double *w,
                      int radius, int periodic, double *line)
{
    for (long l = 0; l < n_lines; l++) {
        double *base = data + l * line_step;
        for (long k = 0; k < width; k++) {
            for (long i = 0; i < n; i++) line[i] = base[i * stride * width + k];
            for (long i = 0; i < n; i++) {
                double s = 0;
                for (int d = -radius; d <= radius; d++) s += w[d + radius] * line[edge_index(i + d, n, periodic)];
                base[i * stride * width + k] = s;
            }
        }
    }
}

int stem_source_blur(const stem_plan *plan, double *data, long width)
{
    double sigma = plan->opt.source_size / (2 * sqrt(2 * log(2))) / plan->scan_step; /* in scan steps */
    if (!(sigma > 0) || width <= 0) return STEM_OK;
    int radius = (int)(4 * sigma + 0.5);
    long nx = plan->scan_nx, ny = plan->scan_ny;
    double *w = stem_alloc(sizeof(double) * (2 * radius + 1), "source blur kernel");
    double *line = stem_alloc(sizeof(double) * (nx > ny ? nx : ny), "source blur line");
    if (!w || !line) {
        free(w);
        free(line);
        return STEM_ERR_MEMORY;
    }
    double sum = 0;
    for (int d = -radius; d <= radius; d++) sum += w[d + radius] = exp(-0.5 * d * d / (sigma * sigma));
    for (int d = 0; d <= 2 * radius; d++) w[d] /= sum;
    /* rows (along x): ny lines of nx probes, 1 record apart; then columns: nx lines of ny probes, nx records apart */
    blur_axis(data, nx, 1, ny, nx * width, width, w, radius, stem_scan_is_periodic(plan, 0), line);
    blur_axis(data, ny, nx, nx, width, width, w, radius, stem_scan_is_periodic(plan, 1), line);
    free(w);
    free(line);
    return STEM_OK;
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
    if (plan->algorithm == STEM_ALG_HRTEM) /* the image's directions: inside the objective aperture or the band */
        q = plan->opt.objective_aperture > 0 ? fmin(plan->opt.objective_aperture / plan->lambda, plan->q_limit)
                                             : plan->q_limit;
    else /* the probe's: chi is centred on the beam tilt, the aperture on tilt plus shift */
        q = hypot(plan->aperture_q[0] - plan->tilt_q[0], plan->aperture_q[1] - plan->tilt_q[1]) + plan->alpha / plan->lambda;
    return sqrt(2.0) * plan->opt.focal_spread * M_PI * plan->lambda * q * q;
}

int stem_focal_points_needed(double k_max, double tol)
{
    if (!(k_max > 0)) return 1;
    for (int n = 1; n < STEM_MAX_FOCAL_POINTS; n++)
        if (stem_focal_quadrature_error(n, k_max) < tol) return n;
    return STEM_MAX_FOCAL_POINTS;
}
