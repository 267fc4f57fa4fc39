/* Standard errors over frozen-phonon configurations from the campaign's exact sums
 * (src/accumulator.h): the state of every channel, the centre of mass as a ratio of sums
 * and the named images' scan means against the textbook two-pass formulas evaluated here
 * in long double on known per-configuration values; groups of unequal size, adding in
 * another order and summing their integers, give the same bits; values beyond a channel's
 * range are flagged, never wrapped. */
#include "check.h"

#include "../../src/accumulator.h"
#include "../../src/detector.h"

enum { PROBES = 3, BINS = 2, IMAGES = 2, CONFIGS = 7 };

static stem_plan small_plan(int n_configs)
{
    stem_plan p;
    memset(&p, 0, sizeof p);
    p.algorithm = STEM_ALG_MULTISLICE;
    p.n_probes = PROBES;
    p.probe_begin = 0;
    p.probe_end = PROBES;
    p.scan_nx = PROBES;
    p.scan_ny = 1;
    p.n_bins = BINS;
    p.n_images = IMAGES;
    p.n_configs = n_configs;
    p.opt.save_3d = 1;
    p.opt.save_dpc = 1;
    p.opt.standard_errors = 1;
    snprintf(p.images[0].name, sizeof p.images[0].name, "BF");
    snprintf(p.images[1].name, sizeof p.images[1].name, "HAADF");
    p.images[0].outer_mrad = 20;
    p.images[1].inner_mrad = 70;
    p.images[1].outer_mrad = 200;
    return p;
}

/* Configuration c's value of a channel's k-th number: a large mean with a spread a
 * million times smaller, which the sums of squares (sum x^2 - n mean^2) would lose. */
static double value(int ch, int c, long k)
{
    double mean = ch == STEM_CH_COM ? 3.0 + k : 0.9 + 0.01 * k;
    double u = sin(12.9898 * (c + 1) + 78.233 * (k + 1) + 37.719 * ch); /* deterministic, irregular */
    return mean * (1 + 1e-6 * u);
}

/* Configuration c's values, as an engine leaves one unit's, added to the sums. */
static void add_config(stem_accumulator *acc, const stem_plan *p, int c)
{
    stem_result u;
    CHECK(stem_result_alloc(p, &u) == STEM_OK);
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++) {
        if (!u.data[ch] || stem_channel_table[ch].is_float || !stem_channel_per_probe(ch)) continue;
        double *v = u.data[ch];
        for (long k = 0; k < u.n_probes * u.width[ch]; k++) v[k] = value(ch, c, k);
    }
    int workers = 1 + c % 3; /* any worker count: the same integers */
    CHECK(stem_acc_take(acc, 0, c, &u, workers) == STEM_OK);
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++) /* taken: the unit's results are zero again */
        for (long k = 0; u.data[ch] && stem_channel_per_probe(ch) && !stem_channel_table[ch].is_float &&
             k < u.n_probes * u.width[ch];
             k++)
            CHECK(((double *)u.data[ch])[k] == 0);
    stem_result_free(&u);
}

/* The sums' point 0 as the output reads it: finalised. */
static void finished(const stem_accumulator *acc, const stem_plan *p, stem_result *r)
{
    CHECK(stem_result_alloc(p, r) == STEM_OK && stem_result_alloc_errors(p, r) == STEM_OK);
    CHECK(stem_acc_to_result(acc, 0, r, 2) == STEM_OK);
    int workers = 3; /* any count: elementwise */
    CHECK(stem_result_finalise(r, p->n_configs, workers) == STEM_OK);
}

/* sqrt(sum (x - mean)^2 / (n - 1) / n) over the configurations, two passes. */
static double se_mean(int ch, long k)
{
    long double m = 0, s = 0;
    for (int c = 0; c < CONFIGS; c++) m += value(ch, c, k);
    m /= CONFIGS;
    for (int c = 0; c < CONFIGS; c++) s += (value(ch, c, k) - m) * (value(ch, c, k) - m);
    return (double)sqrtl(s / (CONFIGS - 1) / CONFIGS);
}

/* The centre of mass R = sum x / sum t: the standard error of x_c - R t_c over n, over mean t. */
static double se_ratio(long p, int axis)
{
    long double X = 0, T = 0, s = 0, zm = 0;
    for (int c = 0; c < CONFIGS; c++) X += value(STEM_CH_COM, c, 2 * p + axis), T += value(STEM_CH_TOTAL, c, p);
    long double R = X / T;
    for (int c = 0; c < CONFIGS; c++) zm += value(STEM_CH_COM, c, 2 * p + axis) - R * value(STEM_CH_TOTAL, c, p);
    zm /= CONFIGS;
    for (int c = 0; c < CONFIGS; c++) {
        long double z = value(STEM_CH_COM, c, 2 * p + axis) - R * value(STEM_CH_TOTAL, c, p) - zm;
        s += z * z;
    }
    return (double)(sqrtl(s / (CONFIGS - 1) / CONFIGS) / (T / CONFIGS));
}

static void check_against_formulas(const stem_result *r, const char *what)
{
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++) {
        if (!r->err[ch]) continue;
        for (long k = 0; k < r->n_probes * r->width[ch]; k++) {
            double want = ch == STEM_CH_COM ? se_ratio(k / 2, (int)(k % 2)) : se_mean(ch, k);
            CHECK_MSG(fabs(r->err[ch][k] - want) <= 1e-7 * want, "%s: channel %s value %ld: %.12g vs %.12g", what,
                      stem_channel_table[ch].name, k, r->err[ch][k], want);
        }
    }
}

/* One group running every configuration in order. */
static void one_group(stem_result *r)
{
    stem_plan p = small_plan(CONFIGS);
    stem_accumulator acc;
    CHECK(stem_acc_alloc(&p, 1, &acc) == STEM_OK);
    CHECK(acc.squares[STEM_CH_RINGS] && acc.squares[STEM_CH_IMAGES] && acc.squares[STEM_CH_TOTAL] &&
          acc.cross[STEM_CH_COM] && !acc.cross[STEM_CH_RINGS]);
    for (int c = 0; c < CONFIGS; c++) add_config(&acc, &p, c);
    finished(&acc, &p, r);
    CHECK(r->err[STEM_CH_RINGS] && r->err[STEM_CH_IMAGES] && r->err[STEM_CH_TOTAL] && r->err[STEM_CH_COM]);
    check_against_formulas(r, "one group");
    for (long k = 0; k < PROBES * BINS; k++) { /* the mean itself, to the values' rounding */
        long double m = 0;
        for (int c = 0; c < CONFIGS; c++) m += value(STEM_CH_RINGS, c, k);
        CHECK_CLOSE(r->rings[k], (double)(m / CONFIGS), 1e-15);
    }
    stem_acc_free(&acc);
}

/* Every array's integers of b added into a (as the collect sums the groups'). */
static void add_sums(stem_accumulator *a, const stem_accumulator *b)
{
    for (int i = 0; i < a->n_arrays; i++) {
        stem_acc_array x = stem_acc_array_at(a, i), y = stem_acc_array_at(b, i);
        for (long k = 0; k < x.count; k++) {
            if (x.elt == 8)
                ((int64_t *)x.base)[k] += ((const int64_t *)y.base)[k];
            else
                ((stem_fixed128 *)x.base)[k] += ((const stem_fixed128 *)y.base)[k];
        }
    }
}

/* Groups of 4, 2 and 1 configurations (as 3 rank groups leave 7 configurations), each adding
 * its own in reverse order, their integers summed: the same bits as one group in order. */
static void unequal_groups(const stem_result *single)
{
    static const int group_of[CONFIGS] = {0, 1, 2, 0, 1, 0, 0};
    stem_plan p = small_plan(CONFIGS);
    stem_accumulator g[3];
    for (int i = 0; i < 3; i++) CHECK(stem_acc_alloc(&p, 1, &g[i]) == STEM_OK);
    for (int c = CONFIGS - 1; c >= 0; c--) add_config(&g[group_of[c]], &p, c);
    add_sums(&g[0], &g[1]);
    add_sums(&g[0], &g[2]);
    stem_result r;
    finished(&g[0], &p, &r);
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++) {
        if (!r.data[ch] || !stem_channel_per_probe(ch)) continue;
        CHECK_MSG(!memcmp(r.data[ch], single->data[ch], sizeof(double) * (size_t)(PROBES * r.width[ch])),
                  "groups vs one group: %s not bit for bit", stem_channel_table[ch].name);
        CHECK_MSG(!r.err[ch] || !memcmp(r.err[ch], single->err[ch], sizeof(double) * (size_t)(PROBES * r.width[ch])),
                  "groups vs one group: the standard errors of %s not bit for bit", stem_channel_table[ch].name);
    }
    CHECK(!memcmp(r.config_images, single->config_images, sizeof(double) * CONFIGS * IMAGES));
    stem_result_free(&r);
    for (int i = 0; i < 3; i++) stem_acc_free(&g[i]);
}

/* A value beyond its channel's range (or not finite) is flagged: the point reads NaN. */
static void out_of_range(void)
{
    stem_plan p = small_plan(CONFIGS);
    stem_accumulator acc;
    stem_result u, r;
    CHECK(stem_acc_alloc(&p, 2, &acc) == STEM_OK && stem_result_alloc(&p, &u) == STEM_OK);
    u.rings[0] = 5.0; /* a probe's intensity is at most 1 */
    CHECK(stem_acc_take(&acc, 1, 0, &u, 2) == STEM_OK);
    CHECK(acc.bad[1] && !acc.bad[0] && u.rings[0] == 0);
    u.rings[0] = NAN;
    CHECK(stem_acc_take(&acc, 0, 0, &u, 1) == STEM_OK);
    CHECK(acc.bad[0]);
    CHECK(stem_result_alloc(&p, &r) == STEM_OK && stem_result_alloc_errors(&p, &r) == STEM_OK);
    CHECK(stem_acc_to_result(&acc, 1, &r, 1) == STEM_OK);
    CHECK(isnan(r.rings[0]) && isnan(r.total[0]));
    stem_result_free(&r);
    stem_result_free(&u);
    stem_acc_free(&acc);
}

/* The named images' scan means: mean and standard error of the per-configuration means. */
static void image_errors(stem_result *r)
{
    stem_plan p = small_plan(CONFIGS);
    stem_image_error e[IMAGES];
    stem_result_errors_scan(r); /* one rank holds the whole scan */
    CHECK(stem_result_image_errors(&p, r, e) == IMAGES);
    for (int i = 0; i < IMAGES; i++) {
        long double m[CONFIGS], mean = 0, s = 0;
        for (int c = 0; c < CONFIGS; c++) {
            m[c] = 0;
            for (long q = 0; q < PROBES; q++) m[c] += value(STEM_CH_IMAGES, c, q * IMAGES + i) / PROBES;
            mean += m[c] / CONFIGS;
        }
        for (int c = 0; c < CONFIGS; c++) s += (m[c] - mean) * (m[c] - mean);
        double se = (double)sqrtl(s / (CONFIGS - 1) / CONFIGS);
        CHECK(!strcmp(e[i].name, i ? "HAADF" : "BF") && e[i].n_configs == CONFIGS);
        CHECK_CLOSE(e[i].mean, (double)mean, 1e-13);
        CHECK_MSG(fabs(e[i].se - se) <= 1e-6 * se, "image %d: se %.12g vs %.12g", i, e[i].se, se);
        double s2 = 0; /* the per-probe standard errors' root mean square */
        for (long q = 0; q < PROBES; q++)
            s2 += se_mean(STEM_CH_IMAGES, q * IMAGES + i) * se_mean(STEM_CH_IMAGES, q * IMAGES + i);
        CHECK_MSG(fabs(e[i].pixel_se - sqrt(s2 / PROBES)) <= 1e-7 * sqrt(s2 / PROBES), "image %d: pixel se %.12g", i,
                  e[i].pixel_se);
    }
}

/* One configuration: no error state, the image's mean and a NaN error. */
static void one_configuration(void)
{
    stem_plan p = small_plan(1);
    stem_result r;
    stem_accumulator acc;
    CHECK(stem_acc_alloc(&p, 1, &acc) == STEM_OK);
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++) CHECK(!acc.squares[ch] && stem_channel_error_width(&p, ch) == 0);
    CHECK(stem_channel_error_bytes_per_probe(&p) == 0);
    add_config(&acc, &p, 0);
    CHECK(stem_result_alloc(&p, &r) == STEM_OK && stem_result_alloc_errors(&p, &r) == STEM_OK);
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++) CHECK(r.err[ch] == NULL);
    CHECK(stem_acc_to_result(&acc, 0, &r, 3) == STEM_OK);
    CHECK(stem_result_finalise(&r, 1, 2) == STEM_OK);
    stem_acc_free(&acc);
    stem_image_error e[IMAGES];
    stem_result_image_errors(&p, &r, e);
    CHECK_CLOSE(e[0].mean,
                (value(STEM_CH_IMAGES, 0, 0) + value(STEM_CH_IMAGES, 0, 2) + value(STEM_CH_IMAGES, 0, 4)) / 3, 1e-15);
    CHECK(isnan(e[0].se) && isnan(e[0].pixel_se) && e[0].n_configs == 1);
    stem_result_free(&r);
}

/* The memory estimate counts the squares' sums (16 bytes), the finished state (8); 4D none;
 * the sums' bytes are what stem_acc_alloc allocates. */
static void memory(void)
{
    stem_plan p = small_plan(CONFIGS);
    p.opt.save_4d = 1;
    p.cbed_nx = p.cbed_ny = 16;
    double want = 24.0 * (BINS + IMAGES + 1 + 4); /* rings, images, total, DPC (x, y and their co-moments) */
    CHECK_CLOSE(stem_channel_error_bytes_per_probe(&p), want, 0);
    CHECK(stem_channel_error_width(&p, STEM_CH_CBED) == 0);
    double sums = PROBES * (8.0 * (BINS + IMAGES + 1 + 2 + 256) + 16.0 * (BINS + IMAGES + 1 + 2 + 2)) +
        8.0 * CONFIGS * IMAGES; /* values; squares; the DPC's co-moments; each configuration's images */
    CHECK_CLOSE(stem_acc_bytes(&p, 3), 3 * sums, 0);
    CHECK_CLOSE(stem_acc_global_bytes(&p, 3, STEM_ACC_ALL), 3 * sums, 0); /* one rank: its part is the whole */
    p.opt.save_3d = p.opt.save_dpc = 0;
    CHECK_CLOSE(stem_channel_error_bytes_per_probe(&p), 24.0 * (IMAGES + 1), 0);
    p.opt.standard_errors = 0; /* [output] standard_errors = false */
    CHECK(stem_channel_error_bytes_per_probe(&p) == 0);
}

int main(void)
{
    stem_result single;
    one_group(&single);
    unequal_groups(&single);
    image_errors(&single);
    stem_result_free(&single);
    one_configuration();
    out_of_range();
    memory();
    return check_exit("errors");
}
