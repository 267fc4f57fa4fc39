/* Detector geometry and per-probe accumulation. */
#include "detector.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "advice.h"

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

/* 4D patterns and PACBED: detector pixel (FFT order) -> bin of the written pattern. */
static int pattern_table(const stem_plan *plan, stem_detector *det)
{
    int nx = plan->out_nx, b = plan->cbed_bin;
    STEM_ALLOC(det->pattern_bin, det->n_pixels, "pattern bins");
    det->pattern_bins = plan->cbed_nx * plan->cbed_ny;
    for (int k = 0; k < det->n_pixels; k++) {
        int ix = stem_centred_index(k % nx, nx) - plan->cbed_x0, iy = stem_centred_index(k / nx, plan->out_ny) - plan->cbed_y0;
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
            if (q > plan->q_limit) continue; /* removed by the band limit */
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

int stem_result_alloc(const stem_plan *plan, stem_result *res)
{
    memset(res, 0, sizeof *res);
    res->n_probes = plan->probe_end - plan->probe_begin;
    res->n_bins = plan->n_bins;
    res->n_images = plan->n_images;
    res->out_nx = plan->out_nx;
    res->out_ny = plan->out_ny;
    res->has_4d = stem_channel_width(plan, STEM_CH_CBED) > 0;
    res->has_dpc = plan->opt.save_dpc;
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++) {
        const stem_channel *c = &stem_channel_table[ch];
        res->width[ch] = stem_channel_width(plan, ch);
        if (!res->width[ch]) continue; /* channels that may be absent: 4D patterns, segments */
        res->data[ch] = stem_calloc((size_t)(res->n_probes * res->width[ch]), c->is_float ? sizeof(float) : sizeof(double),
                                    c->name);
        if (!res->data[ch]) return STEM_ERR_MEMORY;
    }
    res->rings = res->data[STEM_CH_RINGS];
    res->images = res->data[STEM_CH_IMAGES];
    res->total = res->data[STEM_CH_TOTAL];
    res->com = res->data[STEM_CH_COM];
    res->cbed = res->data[STEM_CH_CBED];
    res->segments = res->data[STEM_CH_SEGMENTS];
    res->pattern_bins = plan->cbed_nx * plan->cbed_ny;
    if (plan->opt.save_pacbed) {
        res->pacbed = stem_calloc((size_t)res->pattern_bins, sizeof(double), "PACBED");
        res->pacbed_sum = stem_calloc((size_t)res->pattern_bins, sizeof(stem_fixed128), "PACBED");
        res->pacbed_lock = stem_alloc(sizeof(pthread_mutex_t), "PACBED lock");
        if (!res->pacbed || !res->pacbed_sum || !res->pacbed_lock) return STEM_ERR_MEMORY;
        pthread_mutex_init(res->pacbed_lock, NULL);
    }
    res->n_segments = (int)res->width[STEM_CH_SEGMENTS];
    return STEM_OK;
}

void stem_result_free(stem_result *res)
{
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++) {
        free(res->data[ch]);
        free(res->err[ch]);
        free(res->before[ch]);
    }
    free(res->config_images);
    free(res->pacbed);
    free(res->pacbed_sum);
    if (res->pacbed_lock) pthread_mutex_destroy(res->pacbed_lock);
    free(res->pacbed_lock);
    memset(res, 0, sizeof *res);
}

/* v (mantissa m < 2^53, v = m 2^e2) in units of 2^-STEM_PACBED_FRAC, exactly where the
 * units resolve it (truncated below them); *bad set when v is not finite or exceeds 2^46. */
static stem_fixed128 fixed_from_parts(int neg, uint64_t m, int e2, int *bad)
{
    int shift = e2 + STEM_PACBED_FRAC;
    if (m == 0 || shift <= -64) return 0;
    if (shift + 64 - __builtin_clzll(m) > 126) { /* |v| >= 2^46: sums could leave the 128 bits */
        *bad = 1;
        return 0;
    }
    stem_fixed128 v = shift >= 0 ? (stem_fixed128)m << shift : (stem_fixed128)(m >> -shift);
    return neg ? -v : v;
}

static stem_fixed128 fixed_from_float(float x, int *bad)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    int e = (int)(u >> 23 & 0xffu);
    uint64_t m = u & 0x7fffffu;
    if (e == 0xff) {
        *bad = 1;
        return 0;
    }
    if (e) m |= 0x800000u;
    return fixed_from_parts((int)(u >> 31), m, (e ? e : 1) - 150, bad);
}

static stem_fixed128 fixed_from_double(double x, int *bad)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    int e = (int)(u >> 52 & 0x7ffu);
    uint64_t m = u & 0xfffffffffffffull;
    if (e == 0x7ff) {
        *bad = 1;
        return 0;
    }
    if (e) m |= 1ull << 52;
    return fixed_from_parts((int)(u >> 63), m, (e ? e : 1) - 1075, bad);
}

static double fixed_to_double(stem_fixed128 v) { return ldexp((double)v, -STEM_PACBED_FRAC); }

void stem_result_pacbed_values(const stem_result *res, double *out)
{
    for (int i = 0; i < res->pattern_bins; i++) out[i] = res->pacbed_bad ? NAN : fixed_to_double(res->pacbed_sum[i]);
}

void stem_result_add_pattern(stem_result *res, long p, const int *bin, const float *intensity, int n_pixels)
{
    if (res->has_4d) {
        float *out = res->cbed + (size_t)p * res->pattern_bins;
        for (int k = 0; k < n_pixels; k++)
            if (bin[k] >= 0) out[bin[k]] += intensity[k];
    }
    if (!res->pacbed_sum) return;
    int bad = 0;
    pthread_mutex_lock(res->pacbed_lock);
    for (int k = 0; k < n_pixels; k++)
        if (bin[k] >= 0) res->pacbed_sum[bin[k]] += fixed_from_float(intensity[k], &bad);
    res->pacbed_bad |= bad;
    pthread_mutex_unlock(res->pacbed_lock);
}

void stem_detect(const stem_detector *det, const float *intensity, stem_result *res, long p)
{
    double *rings = res->rings + p * res->n_bins, *images = res->images + p * res->n_images;
    double total = 0, cx = 0, cy = 0;
    for (int k = 0; k < det->n_pixels; k++) {
        float v = intensity[k];
        if (det->bin[k] < 0) continue;
        total += v;
        rings[det->bin[k]] += v;
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

/* Standard error of a ratio of sums R = X / T (the centre of mass: intensity-weighted
 * angles over the intensity), to first order (the delta method): the sample variance of
 * x_c - R t_c over the configurations, M2_x - 2 R C_xt + R^2 M2_t over n - 1, divided by n
 * and by the mean of t squared. In place: [p][M2 x w][C_xt x w] -> [p][se x w] (err_width
 * stays the state's size). */
static void errors_finalise_ratio(stem_result *res, int ch)
{
    long w = res->width[ch];
    int n = res->n_samples;
    const double *X = res->data[ch], *T = res->total, *M2t = res->err[STEM_CH_TOTAL];
    double *e = res->err[ch];
    for (long p = 0; p < res->n_probes; p++)
        for (long k = 0; k < w; k++) {
            const double *s = e + p * 2 * w;
            double se = NAN;
            if (n > 1 && T[p] > 0) {
                double R = X[p * w + k] / T[p], var = (s[k] - 2 * R * s[w + k] + R * R * M2t[p]) / (n - 1);
                se = sqrt((var > 0 ? var : 0) / n) / (T[p] / n);
            } else if (n > 1) {
                se = 0; /* no intensity: the centre of mass is set to 0 */
            }
            e[p * w + k] = se; /* p * w + k <= p * 2 w + k: read before written */
        }
}

/* M2 -> the standard error of the mean, sqrt(M2 / (n - 1) / n). */
static void errors_finalise_mean(stem_result *res, int ch)
{
    long count = res->n_probes * res->width[ch];
    int n = res->n_samples;
    double *e = res->err[ch];
    for (long i = 0; i < count; i++) e[i] = n > 1 ? sqrt(e[i] / ((double)(n - 1) * n)) : NAN;
}

static void errors_finalise(stem_result *res)
{
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++) /* the ratios first: they need the total's M2 */
        if (res->err[ch] && stem_channel_table[ch].final == STEM_FINAL_PER_TOTAL) errors_finalise_ratio(res, ch);
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++)
        if (res->err[ch] && stem_channel_table[ch].final == STEM_FINAL_MEAN) errors_finalise_mean(res, ch);
}

/* Intensity-weighted sums first (they need the summed total), then means. */
void stem_result_finalise(stem_result *res, int n_configs)
{
    double inv = 1.0 / n_configs;
    errors_finalise(res); /* from the sums, before they become means */
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++) {
        if (!res->data[ch] || stem_channel_table[ch].final != STEM_FINAL_PER_TOTAL) continue;
        double *v = res->data[ch];
        long w = res->width[ch];
        for (long p = 0; p < res->n_probes; p++) {
            double t = res->total[p];
            for (long k = 0; k < w; k++) v[p * w + k] = t > 0 ? v[p * w + k] / t : 0;
        }
    }
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++) {
        if (!res->data[ch] || stem_channel_table[ch].final != STEM_FINAL_MEAN) continue;
        long n = res->n_probes * res->width[ch];
        if (stem_channel_table[ch].is_float) {
            float *v = res->data[ch];
            for (long i = 0; i < n; i++) v[i] *= (float)inv;
        } else {
            double *v = res->data[ch];
            for (long i = 0; i < n; i++) v[i] *= inv;
        }
    }
}

void stem_result_zero(stem_result *res)
{
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++)
        if (res->data[ch])
            memset(res->data[ch], 0, (size_t)(res->n_probes * res->width[ch]) *
                                         (stem_channel_table[ch].is_float ? sizeof(float) : sizeof(double)));
    if (res->pacbed) memset(res->pacbed, 0, sizeof(double) * (size_t)res->pattern_bins);
    if (res->pacbed_sum) memset(res->pacbed_sum, 0, sizeof(stem_fixed128) * (size_t)res->pattern_bins);
    res->pacbed_bad = 0;
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++) {
        if (res->err[ch]) memset(res->err[ch], 0, sizeof(double) * (size_t)(res->n_probes * res->err_width[ch]));
        if (res->before[ch]) memset(res->before[ch], 0, sizeof(double) * (size_t)(res->n_probes * res->width[ch]));
    }
    if (res->config_images) memset(res->config_images, 0, sizeof(double) * (size_t)res->n_configs * res->n_images);
    res->n_samples = 0;
}

/* ------------------------------------------------------------ standard errors */

int stem_result_alloc_errors(const stem_plan *plan, stem_result *res)
{
    res->n_configs = plan->n_configs;
    res->n_samples = 0;
    if (plan->n_images > 0)
        STEM_ALLOC(res->config_images, (size_t)plan->n_configs * plan->n_images, "images of each configuration");
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++) {
        long e = stem_channel_error_width(plan, ch);
        if (!e || !res->data[ch]) continue;
        res->err_width[ch] = e;
        STEM_ALLOC(res->err[ch], (size_t)(res->n_probes * e), "standard error state");
        STEM_ALLOC(res->before[ch], (size_t)(res->n_probes * res->width[ch]), "sums before a configuration");
    }
    /* the scan means' errors in the log need each configuration's images even without the maps' */
    if (plan->n_configs > 1 && plan->n_images > 0 && !res->before[STEM_CH_IMAGES])
        STEM_ALLOC(res->before[STEM_CH_IMAGES], (size_t)(res->n_probes * res->width[STEM_CH_IMAGES]), "images before a configuration");
    return STEM_OK;
}

void stem_result_errors_begin(stem_result *res)
{
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++)
        if (res->before[ch]) memcpy(res->before[ch], res->data[ch], sizeof(double) * (size_t)(res->n_probes * res->width[ch]));
}

/* Welford's update of M2 from the sums before (b) and after (a) the k-th sample x = a - b:
 * M2 += (x - b / (k - 1)) (x - a / k); the co-moment of x with y likewise, y's mean after. */
static void welford_mean(stem_result *res, int ch, int k)
{
    const double *a = res->data[ch], *b = res->before[ch];
    double *m2 = res->err[ch];
    long count = res->n_probes * res->width[ch];
    for (long i = 0; i < count; i++) {
        double x = a[i] - b[i];
        m2[i] += (x - b[i] / (k - 1)) * (x - a[i] / k);
    }
}

static void welford_ratio(stem_result *res, int ch, int k)
{
    long w = res->width[ch];
    const double *a = res->data[ch], *b = res->before[ch];
    const double *ta = res->total, *tb = res->before[STEM_CH_TOTAL];
    for (long p = 0; p < res->n_probes; p++) {
        double *m2 = res->err[ch] + p * 2 * w, t = ta[p] - tb[p];
        for (long j = 0; j < w; j++) {
            double x = a[p * w + j] - b[p * w + j], dx = x - b[p * w + j] / (k - 1);
            m2[j] += dx * (x - a[p * w + j] / k);
            m2[w + j] += dx * (t - ta[p] / k);
        }
    }
}

void stem_result_errors_add(stem_result *res, int config)
{
    int k = ++res->n_samples;
    if (res->config_images && config >= 0 && config < res->n_configs) { /* this configuration's images over the scan */
        const double *b = res->before[STEM_CH_IMAGES]; /* NULL with one configuration: the sums were zero before */
        double *row = res->config_images + (size_t)config * res->n_images;
        for (int i = 0; i < res->n_images; i++) row[i] = 0;
        for (long p = 0; p < res->n_probes; p++)
            for (int i = 0; i < res->n_images; i++)
                row[i] += res->images[p * res->n_images + i] - (b ? b[p * res->n_images + i] : 0);
    }
    if (k < 2) return; /* M2 of one sample is 0 */
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++) {
        if (!res->err[ch]) continue;
        if (stem_channel_table[ch].final == STEM_FINAL_PER_TOTAL) welford_ratio(res, ch, k);
        else welford_mean(res, ch, k);
    }
}

void stem_result_errors_merge_begin(stem_result *res)
{
    int n = res->n_samples;
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++) {
        if (!res->before[ch]) continue;
        long count = res->n_probes * res->width[ch];
        const double *s = res->data[ch];
        for (long i = 0; i < count; i++) res->before[ch][i] = n ? s[i] / n : 0;
    }
}

void stem_result_errors_merge_end(stem_result *res, int n_total)
{
    double ng = res->n_samples;
    const double *tg = res->before[STEM_CH_TOTAL], *T = res->total;
    for (int ch = 0; ch < STEM_N_CHANNELS && n_total > 0; ch++) {
        if (!res->err[ch]) continue;
        long w = res->width[ch];
        const double *mg = res->before[ch], *S = res->data[ch];
        int ratio = stem_channel_table[ch].final == STEM_FINAL_PER_TOTAL;
        long stride = ratio ? 2 * w : w;
        for (long p = 0; p < res->n_probes; p++) {
            double *m2 = res->err[ch] + p * stride, dt = tg[p] - T[p] / n_total;
            for (long j = 0; j < w; j++) {
                double d = mg[p * w + j] - S[p * w + j] / n_total;
                m2[j] += ng * d * d;
                if (ratio) m2[w + j] += ng * d * dt;
            }
        }
    }
    res->n_samples = n_total;
}

void stem_result_errors_scan(stem_result *res)
{
    for (int i = 0; i < res->n_images && i < STEM_MAX_IMAGES; i++) {
        res->image_se2[i] = 0;
        for (long p = 0; res->err[STEM_CH_IMAGES] && p < res->n_probes; p++) {
            double se = res->err[STEM_CH_IMAGES][p * res->n_images + i];
            res->image_se2[i] += se * se;
        }
    }
}

int stem_result_image_errors(const stem_plan *plan, const stem_result *res, stem_image_error *out)
{
    int n = res->n_configs, ni = plan->n_images;
    double probes = (double)plan->n_probes;
    for (int i = 0; i < ni; i++) {
        stem_image_error *e = &out[i];
        e->name = plan->images[i].name;
        e->inner_mrad = plan->images[i].inner_mrad;
        e->outer_mrad = plan->images[i].outer_mrad;
        e->n_configs = n;
        e->mean = e->se = e->pixel_se = NAN;
        if (!res->config_images || n < 1) continue;
        double sum = 0, m2 = 0; /* two passes in configuration order: the same bits however the work was spread */
        for (int c = 0; c < n; c++) sum += res->config_images[(size_t)c * ni + i] / probes;
        e->mean = sum / n;
        for (int c = 0; c < n; c++) {
            double d = res->config_images[(size_t)c * ni + i] / probes - e->mean;
            m2 += d * d;
        }
        if (n > 1) e->se = sqrt(m2 / (n - 1) / n);
        if (n > 1 && res->err[STEM_CH_IMAGES]) e->pixel_se = sqrt(res->image_se2[i] / probes);
    }
    return ni;
}

void stem_result_log_errors(const stem_plan *plan, const stem_result *res, const char *where)
{
    stem_image_error e[STEM_MAX_IMAGES];
    int ni = stem_result_image_errors(plan, res, e);
    for (int i = 0; i < ni; i++) {
        char line[384];
        if (isnan(e[i].mean)) continue;
        /* "HAADF 70-200 mrad: 0.0335 +- 0.0004 (1.2%) over 8 configurations; 32 would bring it to 0.6%" */
        stem_advice_error_line(e[i].name, e[i].inner_mrad, e[i].outer_mrad, e[i].mean, e[i].se, e[i].n_configs, line,
                               sizeof line);
        if (e[i].n_configs < 2 || isnan(e[i].pixel_se)) /* [output] standard_errors = false: no per-probe errors */
            stem_info("%s%s", where, line);
        else
            stem_info("%s%s; per probe position +- %.2g rms", where, line, e[i].pixel_se);
    }
}

void stem_result_add_scaled(stem_result *res, const stem_result *part, double weight)
{
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++) {
        if (!res->data[ch] || !part->data[ch]) continue;
        long n = res->n_probes * res->width[ch];
        if (stem_channel_table[ch].is_float) {
            float *v = res->data[ch];
            const float *u = part->data[ch];
            for (long i = 0; i < n; i++) v[i] += (float)weight * u[i];
        } else {
            double *v = res->data[ch];
            const double *u = part->data[ch];
            for (long i = 0; i < n; i++) v[i] += weight * u[i];
        }
    }
    if (res->pacbed_sum && part->pacbed_sum) { /* the part's exact sum, weighted, rounded once into the units */
        for (int i = 0; i < res->pattern_bins; i++)
            res->pacbed_sum[i] += fixed_from_double(weight * fixed_to_double(part->pacbed_sum[i]), &res->pacbed_bad);
        res->pacbed_bad |= part->pacbed_bad;
    }
}
