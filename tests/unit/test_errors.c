/* Standard errors over frozen-phonon configurations (detector.h): the state kept while
 * configurations are added (Welford), groups of unequal size combined (Chan), the
 * centre of mass as a ratio of sums, and the named images' scan means, against the
 * textbook two-pass formulas evaluated here in long double on known per-configuration
 * values. */
#include "check.h"

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

/* The configuration's values added to the sums as an engine adds them. */
static void add_config(stem_result *r, int c)
{
    stem_result_errors_begin(r);
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++) {
        if (!r->data[ch] || stem_channel_table[ch].is_float) continue;
        double *v = r->data[ch];
        for (long k = 0; k < r->n_probes * r->width[ch]; k++) v[k] += value(ch, c, k);
    }
    stem_result_errors_add(r, c);
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
    CHECK(stem_result_alloc(&p, r) == STEM_OK && stem_result_alloc_errors(&p, r) == STEM_OK);
    CHECK(r->err[STEM_CH_RINGS] && r->err[STEM_CH_IMAGES] && r->err[STEM_CH_TOTAL] && r->err[STEM_CH_COM]);
    for (int c = 0; c < CONFIGS; c++) add_config(r, c);
    stem_result_errors_merge_begin(r); /* one group: the combination changes nothing */
    stem_result_errors_merge_end(r, CONFIGS);
    stem_result_finalise(r, CONFIGS);
    check_against_formulas(r, "one group");
}

/* Groups of 4, 2 and 1 configurations (as 3 rank groups leave 7 configurations when
 * they take them round-robin, in another order), combined as the campaign does. */
static void unequal_groups(const stem_result *single)
{
    static const int group_of[CONFIGS] = {0, 1, 2, 0, 1, 0, 0};
    stem_plan p = small_plan(CONFIGS);
    stem_result g[3];
    for (int i = 0; i < 3; i++)
        CHECK(stem_result_alloc(&p, &g[i]) == STEM_OK && stem_result_alloc_errors(&p, &g[i]) == STEM_OK);
    for (int c = 0; c < CONFIGS; c++) add_config(&g[group_of[c]], c);
    for (int i = 0; i < 3; i++) stem_result_errors_merge_begin(&g[i]);
    /* the sums over the groups (MPI_Allreduce), the same on every group */
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++) {
        if (!g[0].data[ch] || stem_channel_table[ch].is_float) continue;
        for (long k = 0; k < PROBES * g[0].width[ch]; k++) {
            double s = 0;
            for (int i = 0; i < 3; i++) s += ((double *)g[i].data[ch])[k];
            for (int i = 0; i < 3; i++) ((double *)g[i].data[ch])[k] = s;
        }
    }
    for (int i = 0; i < 3; i++) stem_result_errors_merge_end(&g[i], CONFIGS);
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++) /* the state summed over the groups */
        for (long k = 0; g[0].err[ch] && k < PROBES * g[0].err_width[ch]; k++)
            g[0].err[ch][k] += g[1].err[ch][k] + g[2].err[ch][k];
    for (int c = 0; c < CONFIGS * IMAGES; c++) g[0].config_images[c] += g[1].config_images[c] + g[2].config_images[c];
    stem_result_finalise(&g[0], CONFIGS);
    check_against_formulas(&g[0], "groups of 4, 2, 1");
    for (long k = 0; k < PROBES * IMAGES; k++)
        CHECK_MSG(fabs(g[0].err[STEM_CH_IMAGES][k] - single->err[STEM_CH_IMAGES][k]) <=
                      1e-7 * single->err[STEM_CH_IMAGES][k],
                  "groups vs one group, image value %ld", k);
    for (int i = 0; i < 3; i++) stem_result_free(&g[i]);
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
    CHECK(stem_result_alloc(&p, &r) == STEM_OK && stem_result_alloc_errors(&p, &r) == STEM_OK);
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++) CHECK(r.err[ch] == NULL && stem_channel_error_width(&p, ch) == 0);
    CHECK(stem_channel_error_bytes_per_probe(&p) == 0);
    add_config(&r, 0);
    stem_result_finalise(&r, 1);
    stem_image_error e[IMAGES];
    stem_result_image_errors(&p, &r, e);
    CHECK_CLOSE(e[0].mean,
                (value(STEM_CH_IMAGES, 0, 0) + value(STEM_CH_IMAGES, 0, 2) + value(STEM_CH_IMAGES, 0, 4)) / 3, 1e-15);
    CHECK(isnan(e[0].se) && isnan(e[0].pixel_se) && e[0].n_configs == 1);
    stem_result_free(&r);
}

/* The memory estimate counts the state and the sums before a configuration; 4D none. */
static void memory(void)
{
    stem_plan p = small_plan(CONFIGS);
    p.opt.save_4d = 1;
    p.cbed_nx = p.cbed_ny = 16;
    double want = 8.0 * ((BINS + BINS) + (IMAGES + IMAGES) + (1 + 1) + (4 + 2)); /* rings, images, total, DPC */
    CHECK_CLOSE(stem_channel_error_bytes_per_probe(&p), want, 0);
    CHECK(stem_channel_error_width(&p, STEM_CH_CBED) == 0);
    p.opt.save_3d = p.opt.save_dpc = 0;
    CHECK_CLOSE(stem_channel_error_bytes_per_probe(&p), 8.0 * ((IMAGES + IMAGES) + (1 + 1)), 0);
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
    memory();
    return check_exit("errors");
}
