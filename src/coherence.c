/* Spatial partial coherence (coherence.h). */
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
