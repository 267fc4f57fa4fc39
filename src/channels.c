/* The output channel table and the channels' storage (channels.h). */
#include "channels.h"

#include "dispatcher.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

const stem_channel stem_channel_table[STEM_N_CHANNELS] = {
    /* no standard error for 4D patterns (it would double the largest output), nor for the
     * plane-wave images (a whole image per configuration, float32) */
    [STEM_CH_RINGS] = {"rings", 0, STEM_FINAL_MEAN, 1, 1},
    [STEM_CH_IMAGES] = {"images", 0, STEM_FINAL_MEAN, 1, 1},
    [STEM_CH_TOTAL] = {"total_intensity", 0, STEM_FINAL_MEAN, 1, 1},
    [STEM_CH_COM] = {"dpc_com", 0, STEM_FINAL_PER_TOTAL, 1, 1},
    [STEM_CH_SEGMENTS] = {"segments", 0, STEM_FINAL_MEAN, 1, 1},
    [STEM_CH_CBED] = {"cbed", 1, STEM_FINAL_MEAN, 0, 0},
    [STEM_CH_EXIT] = {"exit_wave", 1, STEM_FINAL_MEAN, 0, 0},
    [STEM_CH_HRTEM] = {"hrtem", 1, STEM_FINAL_MEAN, 0, 0},
    [STEM_CH_PACBED] = {"pacbed", 0, STEM_FINAL_MEAN, 0, 0, STEM_SCOPE_SCAN},
};

long stem_channel_width(const stem_plan *plan, int ch)
{
    if (plan->dist) { /* the wave in slabs: this rank's rows of the images; the diffraction sums whole */
        if (ch == STEM_CH_HRTEM) return plan->dist_rows * plan->nx;
        if (ch == STEM_CH_EXIT) return plan->opt.save_exit_wave ? 2 * plan->dist_rows * plan->nx : 0;
        if (ch == STEM_CH_COM) return plan->opt.save_dpc ? 2 : 0; /* a collective sum: only when written */
        if (ch == STEM_CH_PACBED) return 0;
    }
    switch ((stem_channel_id)ch) {
    case STEM_CH_RINGS: return plan->opt.save_3d ? plan->n_bins : 0; /* never written: never recorded nor stored */
    case STEM_CH_IMAGES: return plan->n_images;
    case STEM_CH_TOTAL: return 1;
    case STEM_CH_COM: return 2; /* accumulated always: DPC needs no second pass */
    case STEM_CH_SEGMENTS: return (long)plan->seg_n * plan->seg_rings;
    case STEM_CH_CBED: return plan->opt.save_4d ? (long)plan->cbed_nx * plan->cbed_ny : 0;
    case STEM_CH_EXIT:
        return plan->algorithm == STEM_ALG_HRTEM && plan->opt.save_exit_wave ? 2L * plan->nx * plan->ny : 0;
    case STEM_CH_HRTEM: return plan->algorithm == STEM_ALG_HRTEM ? (long)plan->nx * plan->ny : 0;
    case STEM_CH_PACBED: return plan->opt.save_pacbed ? (long)plan->cbed_nx * plan->cbed_ny : 0;
    default: return 0;
    }
}

double stem_channel_bytes_per_probe(const stem_plan *plan)
{
    double bytes = 0;
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++)
        if (stem_channel_per_probe(ch))
            bytes += (double)stem_channel_width(plan, ch) * (stem_channel_table[ch].is_float ? 4 : 8);
    return bytes;
}

long stem_channel_error_width(const stem_plan *plan, int ch)
{
    if (plan->n_configs < 2 || plan->dist || !plan->opt.standard_errors || !stem_channel_table[ch].error) return 0;
    if ((ch == STEM_CH_RINGS && !plan->opt.save_3d) || (ch == STEM_CH_COM && !plan->opt.save_dpc)) return 0;
    long w = stem_channel_width(plan, ch);
    /* the centre of mass is a ratio of sums: its co-moments with the total (and the total's own state) */
    if (stem_channel_table[ch].final == STEM_FINAL_PER_TOTAL) return 2 * w;
    return w;
}

double stem_channel_error_bytes_per_probe(const stem_plan *plan)
{
    double bytes = 0;
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++) {
        long e = stem_channel_error_width(plan, ch);
        if (e) bytes += 24.0 * e; /* the sums of squares and co-moments (16 bytes each), the finished state (8) */
    }
    return bytes;
}

int stem_channel_record_offset(const stem_plan *plan, int ch)
{
    int off = 0;
    for (int c = 0; c < ch; c++)
        if (stem_channel_table[c].gpu_record) off += (int)stem_channel_width(plan, c);
    return off;
}

int stem_channel_record_stride(const stem_plan *plan) { return stem_channel_record_offset(plan, STEM_N_CHANNELS); }

/* ------------------------------------------------------------ the channels' storage */

static size_t element_bytes(int ch) { return stem_channel_table[ch].is_float ? sizeof(float) : sizeof(double); }

/* A scan channel's exact sums, and the lock the worker threads share to add to them. */
static int alloc_scan_sums(stem_result *res, int ch)
{
    STEM_ALLOC(res->scan_sum[ch], (size_t)res->width[ch], stem_channel_table[ch].name);
    if (res->scan_lock) return STEM_OK;
    res->scan_lock = stem_alloc(sizeof(pthread_mutex_t), "scan channel lock");
    if (!res->scan_lock) return STEM_ERR_MEMORY;
    pthread_mutex_init(res->scan_lock, NULL);
    return STEM_OK;
}

/* The named views of the channels' arrays. */
static void set_views(stem_result *res)
{
    res->rings = res->data[STEM_CH_RINGS];
    res->images = res->data[STEM_CH_IMAGES];
    res->total = res->data[STEM_CH_TOTAL];
    res->com = res->data[STEM_CH_COM];
    res->cbed = res->data[STEM_CH_CBED];
    res->segments = res->data[STEM_CH_SEGMENTS];
    res->pacbed = res->data[STEM_CH_PACBED];
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
    res->pattern_bins = plan->cbed_nx * plan->cbed_ny;
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++) {
        res->width[ch] = stem_channel_width(plan, ch);
        if (!res->width[ch]) continue; /* channels that may be absent: 4D patterns, segments, PACBED */
        res->data[ch] = stem_calloc((size_t)(stem_result_rows(res, ch) * res->width[ch]), element_bytes(ch),
                                    stem_channel_table[ch].name);
        if (!res->data[ch]) return STEM_ERR_MEMORY;
        if (!stem_channel_per_probe(ch)) STEM_TRY(alloc_scan_sums(res, ch));
    }
    set_views(res);
    res->n_segments = (int)res->width[STEM_CH_SEGMENTS];
    return STEM_OK;
}

#define ROWS_ALIGN 64 /* each channel's rows on a cache line of its own */

static size_t channel_rows_bytes(const stem_plan *plan, int ch, long n_rows)
{
    size_t b = (size_t)n_rows * (size_t)stem_channel_width(plan, ch) * element_bytes(ch);
    return (b + ROWS_ALIGN - 1) / ROWS_ALIGN * ROWS_ALIGN;
}

size_t stem_result_rows_bytes(const stem_plan *plan, long n_rows)
{
    size_t bytes = 0;
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++)
        if (stem_channel_per_probe(ch)) bytes += channel_rows_bytes(plan, ch, n_rows);
    return bytes;
}

int stem_result_alloc_rows(const stem_plan *plan, void *rows, long row0, long n_rows, stem_work_queue *queue,
                           stem_result *res)
{
    stem_result own;
    STEM_TRY(stem_result_alloc(plan, &own)); /* the scan channels and the shape; its rows replaced */
    char *at = rows;
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++) {
        if (!stem_channel_per_probe(ch)) continue;
        if (own.data[ch]) {
            free(own.data[ch]);
            own.data[ch] = at + (size_t)row0 * (size_t)own.width[ch] * element_bytes(ch);
        }
        at += channel_rows_bytes(plan, ch, n_rows);
    }
    set_views(&own);
    own.queue = queue;
    own.queue_row0 = row0;
    own.queue_rows = n_rows;
    *res = own;
    return STEM_OK;
}

void stem_result_free(stem_result *res)
{
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++) {
        if (!(res->queue_rows && stem_channel_per_probe(ch))) free(res->data[ch]); /* the node's rows: the caller's */
        free(res->scan_sum[ch]);
        free(res->err[ch]);
    }
    free(res->config_images);
    if (res->scan_lock) pthread_mutex_destroy(res->scan_lock);
    free(res->scan_lock);
    memset(res, 0, sizeof *res);
}

/* v (mantissa m < 2^53, v = m 2^e2) in units of 2^-STEM_SCAN_FRAC, exactly where the
 * units resolve it (truncated below them); *bad set when v is not finite or exceeds 2^46. */
static stem_fixed128 fixed_from_parts(int neg, uint64_t m, int e2, int *bad)
{
    int shift = e2 + STEM_SCAN_FRAC;
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

static double fixed_to_double(stem_fixed128 v) { return ldexp((double)v, -STEM_SCAN_FRAC); }

void stem_result_scan_values(const stem_result *res, int ch, double *out)
{
    for (long i = 0; i < res->width[ch]; i++) out[i] = res->scan_bad ? NAN : fixed_to_double(res->scan_sum[ch][i]);
}

void stem_result_scan_mean(stem_result *res, double count)
{
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++) {
        if (!res->scan_sum[ch]) continue;
        double *v = res->data[ch];
        stem_result_scan_values(res, ch, v);
        for (long i = 0; i < res->width[ch]; i++) v[i] /= count;
    }
}

void stem_result_add_pattern(stem_result *res, long p, const int *bin, const float *intensity, int n_pixels)
{
    if (res->has_4d) {
        float *out = res->cbed + (size_t)p * res->pattern_bins;
        for (int k = 0; k < n_pixels; k++)
            if (bin[k] >= 0) out[bin[k]] += intensity[k];
    }
    stem_fixed128 *sum = res->scan_sum[STEM_CH_PACBED];
    if (!sum) return;
    int bad = 0;
    pthread_mutex_lock(res->scan_lock);
    for (int k = 0; k < n_pixels; k++)
        if (bin[k] >= 0) sum[bin[k]] += fixed_from_float(intensity[k], &bad);
    res->scan_bad |= bad;
    pthread_mutex_unlock(res->scan_lock);
}

/* Intensity-weighted sums first (they need the summed total), then means. */
void stem_result_means_range(stem_result *res, int n_configs, long q0, long q1)
{
    double inv = 1.0 / n_configs;
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++) { /* the ratios first: they need the total's sums */
        if (!res->data[ch] || !stem_channel_per_probe(ch) || stem_channel_table[ch].final != STEM_FINAL_PER_TOTAL)
            continue;
        double *v = res->data[ch];
        long w = res->width[ch];
        for (long p = q0; p < q1; p++) {
            double t = res->total[p];
            for (long k = 0; k < w; k++) v[p * w + k] = t > 0 ? v[p * w + k] / t : 0;
        }
    }
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++) { /* a scan channel's mean: stem_result_scan_mean */
        if (!res->data[ch] || !stem_channel_per_probe(ch) || stem_channel_table[ch].final != STEM_FINAL_MEAN) continue;
        long w = res->width[ch];
        if (stem_channel_table[ch].is_float) {
            float *v = res->data[ch];
            for (long i = q0 * w; i < q1 * w; i++) v[i] *= (float)inv;
        } else {
            double *v = res->data[ch];
            for (long i = q0 * w; i < q1 * w; i++) v[i] *= inv;
        }
    }
}

void stem_result_zero(stem_result *res)
{
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++) {
        if (res->data[ch])
            memset(res->data[ch], 0, (size_t)(stem_result_rows(res, ch) * res->width[ch]) * element_bytes(ch));
        if (res->scan_sum[ch]) memset(res->scan_sum[ch], 0, sizeof(stem_fixed128) * (size_t)res->width[ch]);
        if (res->err[ch]) memset(res->err[ch], 0, sizeof(double) * (size_t)(res->n_probes * res->err_width[ch]));
    }
    res->scan_bad = 0;
    if (res->config_images) memset(res->config_images, 0, sizeof(double) * (size_t)res->n_configs * res->n_images);
    res->n_samples = 0;
}

/* A scan channel: the part's exact sum, weighted, rounded once into the units. */
static void add_scaled_scan(stem_result *res, const stem_result *part, int ch, double weight)
{
    for (long i = 0; i < res->width[ch]; i++)
        res->scan_sum[ch][i] += fixed_from_double(weight * fixed_to_double(part->scan_sum[ch][i]), &res->scan_bad);
    res->scan_bad |= part->scan_bad;
}

void stem_result_add_scaled(stem_result *res, const stem_result *part, double weight)
{
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++) {
        if (!res->data[ch] || !part->data[ch]) continue;
        if (!stem_channel_per_probe(ch)) {
            add_scaled_scan(res, part, ch, weight);
            continue;
        }
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
}
