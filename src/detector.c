/* Detector geometry and the binning of each probe's pattern (detector.h). */
#include "detector.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Segmented detector: the segment of angle theta (mrad) at (qx, qy), -1 outside: ring r of
 * seg_rings equal rings in [inner, outer), sector s of seg_n equal sectors starting at
 * seg_rotation (azimuth from +x towards +y); index r * seg_n + s. */
static int segment_of(const stem_plan *plan, double theta, double qx, double qy)
{
    if (theta < plan->seg_inner || theta >= plan->seg_outer) return -1;
    int r = (int)floor((theta - plan->seg_inner) / ((plan->seg_outer - plan->seg_inner) / plan->seg_rings));
    double phi = fmod(atan2(qy, qx) - plan->seg_rotation, 2 * M_PI);
    if (phi < 0) phi += 2 * M_PI;
    int s = (int)floor(phi / (2 * M_PI) * plan->seg_n);
    if (r > plan->seg_rings - 1) r = plan->seg_rings - 1; /* rounding at the edges */
    if (s > plan->seg_n - 1) s = plan->seg_n - 1;
    return r * plan->seg_n + s;
}

/* Square q (plan->cbed_square): the bin along one axis of the pixel at centred index c (zero
 * angle at c = 0), step_mrad per pixel: the bin nearest its angle, -1 beyond the crop or the bins. */
static int square_bin(int c, double step_mrad, double max_mrad, double dq, int bins)
{
    double q = c * step_mrad;
    if (max_mrad > 0 && fabs(q) > max_mrad * (1 + 1e-9)) return -1;
    int k = bins / 2 + (int)floor(q / dq + 0.5);
    return k >= 0 && k < bins ? k : -1;
}

/* 4D patterns and PACBED: detector pixel (FFT order) -> bin of the written pattern. */
static int pattern_table(const stem_plan *plan, stem_detector *det)
{
    int nx = plan->out_nx, b = plan->cbed_bin;
    STEM_ALLOC(det->pattern_bin, det->n_pixels, "pattern bins");
    det->pattern_bins = plan->cbed_nx * plan->cbed_ny;
    if (plan->cbed_square) {
        double mrad = plan->lambda * 1e3, dq = plan->cbed_dq_mrad[0];
        for (int k = 0; k < det->n_pixels; k++) {
            int bx = square_bin(stem_fft_index(k % nx, nx), plan->out_dqx * mrad, plan->cbed_max_mrad, dq,
                                plan->cbed_nx),
                by = square_bin(stem_fft_index(k / nx, plan->out_ny), plan->out_dqy * mrad, plan->cbed_max_mrad, dq,
                                plan->cbed_ny);
            det->pattern_bin[k] = bx >= 0 && by >= 0 ? by * plan->cbed_nx + bx : -1;
        }
        return STEM_OK;
    }
    for (int k = 0; k < det->n_pixels; k++) {
        int ix = stem_centred_index(k % nx, nx) - plan->cbed_x0,
            iy = stem_centred_index(k / nx, plan->out_ny) - plan->cbed_y0;
        int inside = ix >= 0 && iy >= 0 && ix < plan->cbed_nx * b && iy < plan->cbed_ny * b;
        det->pattern_bin[k] = inside ? (iy / b) * plan->cbed_nx + ix / b : -1;
    }
    return STEM_OK;
}

int *stem_pattern_bins_centred(const stem_plan *plan, const stem_detector *det)
{
    int nx = plan->out_nx, ny = plan->out_ny;
    int *c = stem_alloc(sizeof(int) * (size_t)det->n_pixels, "pattern bins (centred)");
    if (!c) return NULL;
    for (int k = 0; k < det->n_pixels; k++)
        c[stem_centred_index(k / nx, ny) * nx + stem_centred_index(k % nx, nx)] = det->pattern_bin[k];
    return c;
}

int stem_detector_build(const stem_plan *plan, stem_detector *det)
{
    const stem_image_range *images = plan->images;
    int nx = plan->out_nx, ny = plan->out_ny;
    memset(det, 0, sizeof *det);
    det->n_pixels = nx * ny;
    STEM_ALLOC(det->bin, det->n_pixels, "detector bins");
    STEM_ALLOC(det->image_mask, det->n_pixels, "detector masks");
    STEM_ALLOC(det->theta_x, det->n_pixels, "detector angles");
    STEM_ALLOC(det->theta_y, det->n_pixels, "detector angles");
    if (plan->seg_n) STEM_ALLOC(det->segment, det->n_pixels, "detector segments");
    for (int j = 0; j < ny; j++)
        for (int i = 0; i < nx; i++) {
            int k = j * nx + i;
            double qx = stem_fft_index(i, nx) * plan->out_dqx, qy = stem_fft_index(j, ny) * plan->out_dqy;
            double q = hypot(qx, qy), theta = q * plan->lambda * 1e3;
            det->theta_x[k] = (float)(qx * plan->lambda * 1e3);
            det->theta_y[k] = (float)(qy * plan->lambda * 1e3);
            det->bin[k] = -1;
            if (det->segment) det->segment[k] = -1;
            if (q > plan->q_limit) continue;                                     /* removed by the band limit */
            if (det->segment) det->segment[k] = segment_of(plan, theta, qx, qy); /* the rings' angle: the same edges */
            int bin = (int)floor(theta / plan->ring_width);
            det->bin[k] = bin < plan->n_bins ? bin : plan->n_bins - 1;
            for (int m = 0; m < plan->n_images; m++)
                if (theta >= images[m].inner_mrad && theta < images[m].outer_mrad) det->image_mask[k] |= 1u << m;
        }
    return plan->opt.save_4d || plan->opt.save_pacbed ? pattern_table(plan, det) : STEM_OK;
}

void stem_detector_free(stem_detector *det)
{
    free(det->bin);
    free(det->image_mask);
    free(det->theta_x);
    free(det->theta_y);
    free(det->segment);
    free(det->pattern_bin);
    memset(det, 0, sizeof *det);
}

void stem_detect(const stem_detector *det, const float *intensity, stem_result *res, long p)
{
    double *rings = res->rings ? res->rings + p * res->n_bins : NULL, *images = res->images + p * res->n_images;
    double total = 0, cx = 0, cy = 0;
    for (int k = 0; k < det->n_pixels; k++) {
        float v = intensity[k];
        if (det->bin[k] < 0) continue;
        total += v;
        if (rings) rings[det->bin[k]] += v;
        cx += v * det->theta_x[k];
        cy += v * det->theta_y[k];
        for (uint32_t m = det->image_mask[k]; m; m &= m - 1) images[__builtin_ctz(m)] += v;
        if (res->segments && det->segment[k] >= 0) res->segments[p * res->n_segments + det->segment[k]] += v;
    }
    res->total[p] += total;
    res->com[2 * p] += cx;
    res->com[2 * p + 1] += cy;
    stem_result_add_pattern(res, p, det->pattern_bin, intensity, det->n_pixels); /* cropped, binned */
}
