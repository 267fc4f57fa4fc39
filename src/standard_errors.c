/* Standard errors over configurations (standard_errors.h). */
#include "standard_errors.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "advice.h"
#include "dispatcher.h"

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

/* M2 -> the standard error of the mean, sqrt(M2 / (n - 1) / n), probes [q0, q1). */
static void errors_finalise_mean(stem_result *res, int ch, long q0, long q1)
{
    long w = res->width[ch];
    int n = res->n_samples;
    double *e = res->err[ch];
    for (long i = q0 * w; i < q1 * w; i++) e[i] = n > 1 ? sqrt(e[i] / ((double)(n - 1) * n)) : NAN;
}

typedef struct {
    stem_result *res;
    int n_configs;
} finalise_work;

/* Probes [q0, q1): each value's standard error and mean (elementwise, so any split of the
 * probes over threads gives the same bits). */
static int finalise_probes(void *ctx, int worker, long q0, long q1)
{
    finalise_work *f = ctx;
    (void)worker;
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++)
        if (f->res->err[ch] && stem_channel_table[ch].final == STEM_FINAL_MEAN)
            errors_finalise_mean(f->res, ch, q0, q1);
    stem_result_means_range(f->res, f->n_configs, q0, q1);
    return STEM_OK;
}

int stem_result_finalise(stem_result *res, int n_configs, int threads)
{
    /* the ratios first, on one thread: they need the total's M2, and rewrite their state in place
     * from [p][2 w] to [p][w], which a split over threads would overtake (a few values per probe) */
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++)
        if (res->err[ch] && stem_channel_table[ch].final == STEM_FINAL_PER_TOTAL) errors_finalise_ratio(res, ch);
    finalise_work f = {res, n_configs};
    stem_work work = {.ctx = &f, .work = finalise_probes};
    return stem_dispatch_whole(&work, res->n_probes, threads);
}

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
    }
    return STEM_OK;
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
