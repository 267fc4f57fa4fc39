/* Exact running sums of a campaign's points (accumulator.h). */
#include "accumulator.h"

#include "dispatcher.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Magnitude bound (bits) of one configuration's value of channel ch: a probe's intensity
 * is at most 1 (the probe is normalised), a centre of mass at most the largest angle times
 * it (mrad), a plane wave's image and exit wave a few times the incident 1 per pixel. */
static int bound_bits(int ch)
{
    switch ((stem_channel_id)ch) {
    case STEM_CH_COM: return 14;
    case STEM_CH_EXIT: return 8;
    case STEM_CH_HRTEM: return 12;
    default: return 2;
    }
}

static int ceil_log2(double n)
{
    int b = 0;
    while (ldexp(1, b) < n) b++;
    return b;
}

/* The per-probe channel's share of this rank: its probes, or a distributed FFT's rows. */
static void channel_part(const stem_plan *plan, int ch, long width, long *first, long *global, int *whole)
{
    *whole = 0;
    if (!plan->dist) {
        *first = plan->probe_begin * width;
        *global = plan->n_probes * width;
        return;
    }
    if (!stem_channel_image_rows(ch)) {
        *first = 0, *global = width, *whole = 1;
        return;
    }
    long row = plan->dist_rows > 0 ? width / plan->dist_rows : 0;
    *first = plan->dist_row0 * row;
    *global = row * plan->ny;
}

static int keeps_squares(const stem_plan *plan, int ch) { return stem_channel_error_width(plan, ch) > 0; }

static int keeps_cross(const stem_plan *plan, int ch)
{
    return keeps_squares(plan, ch) && stem_channel_table[ch].final == STEM_FINAL_PER_TOTAL;
}

static int keeps_channel(stem_acc_channels which, int ch);

/* Bytes per point of each kind of sums, this rank's (global = 0) or the whole campaign's. */
static double point_bytes(const stem_plan *plan, int global, stem_acc_channels which)
{
    double bytes = 0;
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++) {
        long w = stem_channel_width(plan, ch), first, all;
        int whole;
        if (!w || !stem_channel_per_probe(ch) || !keeps_channel(which, ch)) continue;
        channel_part(plan, ch, w, &first, &all, &whole);
        double n = global ? (double)all : (double)w * (plan->dist ? 1 : (double)(plan->probe_end - plan->probe_begin));
        bytes += n * (8 + 16.0 * keeps_squares(plan, ch) + 16.0 * keeps_cross(plan, ch));
    }
    if (which == STEM_ACC_ONLY_4D) return bytes;
    if (plan->opt.save_pacbed && !plan->dist) bytes += 16.0 * plan->cbed_nx * plan->cbed_ny;
    if (plan->n_images > 0 && !plan->dist) bytes += 8.0 * plan->n_configs * plan->n_images;
    return bytes;
}

double stem_acc_bytes(const stem_plan *plan, int n_points) { return n_points * point_bytes(plan, 0, STEM_ACC_ALL); }

double stem_acc_global_bytes(const stem_plan *plan, int n_points, stem_acc_channels which)
{
    return n_points * point_bytes(plan, 1, which);
}

/* Whether `which` keeps per-probe channel ch, and the scan rows (PACBED, each configuration's images). */
static int keeps_channel(stem_acc_channels which, int ch)
{
    return which == STEM_ACC_ALL || (which == STEM_ACC_NO_4D) == (ch != STEM_CH_CBED);
}

int stem_acc_alloc(const stem_plan *plan, int n_points, stem_accumulator *acc)
{
    return stem_acc_alloc_channels(plan, n_points, STEM_ACC_ALL, acc);
}

int stem_acc_alloc_channels(const stem_plan *plan, int n_points, stem_acc_channels which, stem_accumulator *acc)
{
    memset(acc, 0, sizeof *acc);
    acc->n_points = n_points;
    acc->n_configs = plan->n_configs;
    acc->n_probes = plan->dist ? 1 : plan->probe_end - plan->probe_begin;
    int configs = ceil_log2(plan->n_configs);
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++) {
        long w = stem_channel_width(plan, ch);
        if (!w || !stem_channel_per_probe(ch) || !keeps_channel(which, ch)) continue;
        acc->width[ch] = w;
        acc->frac[ch] = 62 - bound_bits(ch) - configs;
        channel_part(plan, ch, w, &acc->first[ch], &acc->global[ch], &acc->whole[ch]);
        size_t n = (size_t)n_points * (size_t)(acc->n_probes * w);
        STEM_ALLOC(acc->sum[ch], n, "the campaign's sums");
        acc->n_arrays++;
        if (keeps_squares(plan, ch)) {
            STEM_ALLOC(acc->squares[ch], n, "the campaign's sums of squares");
            acc->n_arrays++;
        }
        if (keeps_cross(plan, ch)) {
            STEM_ALLOC(acc->cross[ch], n, "the campaign's co-moment sums");
            acc->n_arrays++;
        }
    }
    acc->pattern_bins = plan->cbed_nx * plan->cbed_ny;
    int scan = which != STEM_ACC_ONLY_4D;
    if (plan->opt.save_pacbed && !plan->dist && scan) {
        STEM_ALLOC(acc->pacbed, (size_t)n_points * acc->pattern_bins, "the campaign's PACBED sums");
        acc->n_arrays++;
    }
    if (plan->n_images > 0 && !plan->dist && scan) { /* the images' scan means and errors in the log */
        acc->n_images = plan->n_images;
        /* one configuration's image summed over the whole scan: at most 4 per probe */
        acc->image_frac = 62 - 2 - ceil_log2((double)plan->n_probes + 1);
        STEM_ALLOC(acc->config_images, (size_t)n_points * plan->n_configs * plan->n_images,
                   "each configuration's images");
        acc->n_arrays++;
    }
    STEM_ALLOC(acc->bad, (size_t)n_points, "the campaign's range flags");
    return STEM_OK;
}

void stem_acc_free(stem_accumulator *acc)
{
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++) {
        free(acc->sum[ch]);
        free(acc->squares[ch]);
        free(acc->cross[ch]);
    }
    free(acc->pacbed);
    free(acc->config_images);
    free(acc->bad);
    memset(acc, 0, sizeof *acc);
}

stem_acc_array stem_acc_array_at(const stem_accumulator *acc, int i)
{
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++) {
        if (!acc->sum[ch]) continue;
        stem_acc_array a = {STEM_ACC_PART,
                            ch,
                            STEM_ACC_SUM,
                            8,
                            acc->n_probes * acc->width[ch],
                            acc->first[ch],
                            acc->global[ch],
                            acc->whole[ch],
                            (char *)acc->sum[ch]};
        if (i-- == 0) return a;
        a.elt = 16;
        if (acc->squares[ch] && i-- == 0) return a.role = STEM_ACC_SQUARES, a.base = (char *)acc->squares[ch], a;
        if (acc->cross[ch] && i-- == 0) return a.role = STEM_ACC_CROSS, a.base = (char *)acc->cross[ch], a;
    }
    stem_acc_array s = {.kind = STEM_ACC_SCAN, .role = STEM_ACC_SUM};
    if (acc->pacbed && i-- == 0) {
        s.channel = STEM_CH_PACBED, s.elt = 16, s.count = s.global = acc->pattern_bins, s.base = (char *)acc->pacbed;
        return s;
    }
    if (acc->config_images && i-- == 0) {
        s.channel = STEM_CH_IMAGES, s.elt = 8, s.count = s.global = (long)acc->n_configs * acc->n_images;
        s.base = (char *)acc->config_images;
        return s;
    }
    return (stem_acc_array){0};
}

/* x rounded to the nearest multiple of 2^-frac (scale = 2^frac), as an integer; *bad when x is not finite
 * or not below 2^bound in magnitude (the sums of n_configs such values fit 63 bits). */
static inline int64_t to_fixed(double x, double scale, double limit, int *bad)
{
    if (!(fabs(x) < limit)) {
        *bad = 1;
        return 0;
    }
    return llrint(x * scale); /* scale = 2^frac: the product is exact */
}

/* Channel ch's values of probes [q0, q1) of point p into the sums (and squares and co-moments
 * where kept), each read once and set to zero (the unit's results start the next unit zeroed). */
static void take_channel(stem_accumulator *acc, int p, long row0, int ch, stem_result *res, long q0, long q1, int *bad)
{
    long w = acc->width[ch];
    size_t at = (size_t)p * (size_t)(acc->n_probes * w) + (size_t)(row0 * w);
    double f = ldexp(1, acc->frac[ch]), ft = ldexp(1, acc->frac[STEM_CH_TOTAL]);
    int is_float = stem_channel_table[ch].is_float;
    double limit = ldexp(1, bound_bits(ch)), total_limit = ldexp(1, bound_bits(STEM_CH_TOTAL));
    int64_t *sum = acc->sum[ch] + at;
    stem_fixed128 *sq = acc->squares[ch] ? acc->squares[ch] + at : NULL;
    stem_fixed128 *cross = acc->cross[ch] ? acc->cross[ch] + at : NULL;
    float *vf = res->data[ch];
    double *vd = res->data[ch];
    for (long i = q0 * w; i < q1 * w; i++) {
        int64_t v = to_fixed(is_float ? (double)vf[i] : vd[i], f, limit, bad);
        sum[i] += v;
        if (sq) sq[i] += (stem_fixed128)v * v;
        if (cross) cross[i] += (stem_fixed128)v * to_fixed(res->total[i / w], ft, total_limit, bad);
    }
    /* the total is read by the co-moments: zeroed after every channel (stem_acc_take) */
    if (ch == STEM_CH_TOTAL) return;
    if (is_float)
        memset(vf + q0 * w, 0, sizeof(float) * (size_t)((q1 - q0) * w));
    else
        memset(vd + q0 * w, 0, sizeof(double) * (size_t)((q1 - q0) * w));
}

typedef struct {
    stem_accumulator *acc;
    stem_result *res;
    int p, config;
    long row0;       /* the result's first probe is the sums' row row0 */
    int64_t *images; /* [worker][image]: each worker's share of the configuration's scan sums */
    int *bad;        /* [worker] */
} take_work;

static int take_probes(void *ctx, int worker, long q0, long q1)
{
    take_work *t = ctx;
    stem_accumulator *acc = t->acc;
    int *bad = &t->bad[worker];
    if (acc->config_images) {
        int64_t *row = t->images + (size_t)worker * acc->n_images;
        for (long q = q0; q < q1; q++)
            for (int i = 0; i < acc->n_images; i++)
                row[i] += to_fixed(t->res->images[q * acc->n_images + i], ldexp(1, acc->image_frac), 4, bad);
    }
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++)
        if (acc->sum[ch]) take_channel(acc, t->p, t->row0, ch, t->res, q0, q1, bad);
    if (acc->sum[STEM_CH_TOTAL]) memset(t->res->total + q0, 0, sizeof(double) * (size_t)(q1 - q0));
    return STEM_OK;
}

int stem_acc_take(stem_accumulator *acc, int p, int config, stem_result *res, int threads)
{
    return stem_acc_take_rows(acc, p, config, res, 0, acc->n_probes, threads);
}

int stem_acc_take_rows(stem_accumulator *acc, int p, int config, stem_result *res, long row0, long rows, int threads)
{
    if (threads < 1) threads = 1;
    if (row0 < 0 || rows < 0 || row0 + rows > acc->n_probes || rows > res->n_probes)
        return STEM_FAIL(STEM_ERR_INTERNAL, "the sums' rows [%ld, %ld) outside their %ld (or the result's %ld)", row0,
                         row0 + rows, acc->n_probes, res->n_probes);
    take_work t = {acc, res, p, config, row0, NULL, NULL};
    t.bad = stem_calloc((size_t)threads, sizeof(int), "the sums' flags");
    if (acc->config_images) t.images = stem_calloc((size_t)threads * acc->n_images, sizeof(int64_t), "image sums");
    int err = !t.bad || (acc->config_images && !t.images) ? STEM_ERR_MEMORY : STEM_OK;
    stem_work work = {.ctx = &t, .work = take_probes};
    if (!err) /* a unit is in the sums whole, or not at all: a signal does not cut this short */
        err = stem_dispatch_whole(&work, rows, threads);
    int bad = 0;
    for (int k = 0; !err && k < threads; k++) bad |= t.bad[k];
    if (!err && acc->config_images) { /* integer sums: the workers' order does not matter */
        int64_t *row = acc->config_images + ((size_t)p * acc->n_configs + config) * acc->n_images;
        for (int k = 0; k < threads; k++)
            for (int i = 0; i < acc->n_images; i++) row[i] += t.images[(size_t)k * acc->n_images + i];
    }
    if (!err && acc->pacbed) {
        stem_fixed128 *s = acc->pacbed + (size_t)p * acc->pattern_bins, *u = res->scan_sum[STEM_CH_PACBED];
        for (int k = 0; k < acc->pattern_bins; k++) s[k] += u[k];
        memset(u, 0, sizeof(stem_fixed128) * (size_t)acc->pattern_bins);
        bad |= res->scan_bad;
        res->scan_bad = 0;
    }
    acc->bad[p] |= (uint8_t)bad;
    free(t.bad);
    free(t.images);
    return err;
}

void stem_acc_zero(stem_accumulator *acc, stem_acc_kind kind)
{
    for (int i = 0; i < acc->n_arrays; i++) {
        stem_acc_array a = stem_acc_array_at(acc, i);
        if (a.kind == kind) memset(a.base, 0, (size_t)acc->n_points * (size_t)a.count * a.elt);
    }
}

/* n S2 - S1^2 over n, scaled to values (unit = 2^-2 frac): the sum of squared deviations
 * (M2), exact in integers until the one rounding. */
static inline double m2_of(int64_t s1, stem_fixed128 s2, int n, double unit)
{
    stem_fixed128 d = (stem_fixed128)n * s2 - (stem_fixed128)s1 * s1;
    return (double)d * unit / n;
}

/* n Sxt - Sx St over n (unit = 2^-(frac_x + frac_t)): the co-moment of a value with the total. */
static inline double c_of(int64_t sx, int64_t st, stem_fixed128 sxt, int n, double unit)
{
    stem_fixed128 d = (stem_fixed128)n * sxt - (stem_fixed128)sx * st;
    return (double)d * unit / n;
}

/* Channel ch's probes [q0, q1) of point p into res: sums as values, M2 and co-moments. */
static void channel_to_result(const stem_accumulator *acc, int p, int ch, stem_result *res, long q0, long q1)
{
    long w = acc->width[ch];
    size_t at = (size_t)p * (size_t)(acc->n_probes * w);
    int bad = acc->bad[p], k = acc->n_configs;
    double unit = ldexp(1, -acc->frac[ch]), unit2 = unit * unit, unit_t = unit * ldexp(1, -acc->frac[STEM_CH_TOTAL]);
    const int64_t *sum = acc->sum[ch] + at;
    for (long i = q0 * w; i < q1 * w; i++) {
        double v = bad ? NAN : (double)sum[i] * unit;
        if (stem_channel_table[ch].is_float)
            ((float *)res->data[ch])[i] = (float)v;
        else
            ((double *)res->data[ch])[i] = v;
    }
    if (!acc->squares[ch] || !res->err[ch]) return;
    double *e = res->err[ch];
    const stem_fixed128 *sq = acc->squares[ch] + at;
    if (!acc->cross[ch]) {
        for (long i = q0 * w; i < q1 * w; i++) e[i] = bad ? NAN : m2_of(sum[i], sq[i], k, unit2);
        return;
    }
    /* a ratio channel's state: [probe][M2 x w][co-moment with the total x w] */
    const stem_fixed128 *cross = acc->cross[ch] + at;
    const int64_t *total = acc->sum[STEM_CH_TOTAL] + (size_t)p * (size_t)acc->n_probes;
    for (long q = q0; q < q1; q++)
        for (long j = 0; j < w; j++) {
            long i = q * w + j;
            e[q * 2 * w + j] = bad ? NAN : m2_of(sum[i], sq[i], k, unit2);
            e[q * 2 * w + w + j] = bad ? NAN : c_of(sum[i], total[q], cross[i], k, unit_t);
        }
}

typedef struct {
    const stem_accumulator *acc;
    int p;
    stem_result *res;
} result_work;

static int result_probes(void *ctx, int worker, long q0, long q1)
{
    const result_work *t = ctx;
    (void)worker;
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++)
        if (t->acc->sum[ch] && t->res->data[ch]) channel_to_result(t->acc, t->p, ch, t->res, q0, q1);
    return STEM_OK;
}

int stem_acc_to_result(const stem_accumulator *acc, int p, stem_result *res, int threads)
{
    result_work t = {acc, p, res};
    stem_work work = {.ctx = &t, .work = result_probes};
    STEM_TRY(stem_dispatch_whole(&work, acc->n_probes, threads));
    if (acc->pacbed && res->scan_sum[STEM_CH_PACBED]) {
        memcpy(res->scan_sum[STEM_CH_PACBED], acc->pacbed + (size_t)p * acc->pattern_bins,
               sizeof(stem_fixed128) * (size_t)acc->pattern_bins);
        res->scan_bad = acc->bad[p];
    }
    if (acc->config_images && res->config_images) {
        const int64_t *row = acc->config_images + (size_t)p * acc->n_configs * acc->n_images;
        for (long i = 0; i < (long)acc->n_configs * acc->n_images; i++)
            res->config_images[i] = acc->bad[p] ? NAN : (double)row[i] * ldexp(1, -acc->image_frac);
    }
    res->n_samples = acc->n_configs;
    return STEM_OK;
}
