/* Final results checked before publishing: see result_check.h. */
#include "result_check.h"

#include "test_hooks.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stem.h"

/* Index of the first value of n that is not finite (-1: none). */
static long first_not_finite(const void *v, long n, int is_float)
{
    for (long i = 0; i < n; i++)
        if (!isfinite(is_float ? ((const float *)v)[i] : ((const double *)v)[i])) return i;
    return -1;
}

/* STEMSIM_TEST_POISON_RESULT: what a numerical failure would leave, so that tests can
 * show it is never published. */
static void test_poison(const stem_plan *plan, stem_result *res)
{
    const char *hook = stem_test_hooks()->poison_result;
    if (!hook || !res->total || res->n_probes < 1) return;
    if (!strcmp(hook, "nan"))
        res->total[0] = NAN;
    else if (!strcmp(hook, "zero"))
        res->total[0] = 0;
    else if (!strcmp(hook, "gain"))
        res->total[0] = 2 * stem_result_total_max(plan);
}

static int check_channel(const stem_plan *plan, const stem_result *res, int ch, const char *where)
{
    long w = res->width[ch], rows = stem_result_rows(res, ch);
    long i = res->data[ch] && w > 0 ? first_not_finite(res->data[ch], rows * w, stem_channel_table[ch].is_float) : -1;
    if (i < 0) return STEM_OK;
    double v = stem_channel_table[ch].is_float ? ((const float *)res->data[ch])[i] : ((const double *)res->data[ch])[i];
    if (!stem_channel_per_probe(ch))
        return STEM_FAIL(STEM_ERR_INTERNAL,
                         "result check%s: %s bin %ld is %g, not a finite number; nothing is "
                         "published (please report, with the config)",
                         where, stem_channel_table[ch].name, i, v);
    return STEM_FAIL(STEM_ERR_INTERNAL,
                     "result check%s: %s of probe %ld (value %ld) is %g, not a finite number: a "
                     "numerical failure or damaged input; nothing is published (please report, with the config)",
                     where, stem_channel_table[ch].name, plan->probe_begin + i / w, i % w, v);
}

int stem_result_check_channel(const stem_plan *plan, const stem_result *res, int ch, const char *where)
{
    return check_channel(plan, res, ch, where);
}

double stem_result_total_max(const stem_plan *plan)
{
    return STEM_RESULT_TOTAL_MAX * (plan->algorithm == STEM_ALG_PRISM ? (double)plan->fx * plan->fy : 1.0);
}

int stem_result_check(const stem_plan *plan, stem_result *res, int with_scan, const char *where)
{
    test_poison(plan, res);
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++) /* scan channels hold every rank's probes only with_scan */
        if (stem_channel_per_probe(ch) || with_scan) STEM_TRY(check_channel(plan, res, ch, where));
    double most = stem_result_total_max(plan);
    for (long p = 0; res->total && p < res->n_probes; p++)
        if (!(res->total[p] > 0 && res->total[p] <= most))
            return STEM_FAIL(STEM_ERR_INTERNAL,
                             "result check%s: the total intensity of probe %ld is %.9g, outside (0, "
                             "%g]: the beam %s; nothing is published (please report, with the config)",
                             where, plan->probe_begin + p, res->total[p], most,
                             res->total[p] > 0 ? "gained intensity"
                                               : "lost all its intensity (or a number is not finite)");
    return STEM_OK;
}
