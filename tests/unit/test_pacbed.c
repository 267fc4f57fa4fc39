/* PACBED's sum over probes (a scan channel, src/channels.c): exact, so that the order in which worker
 * threads and ranks add their probes' patterns cannot change a bit.
 *  - a large value and 256 small ones whose sum a double accumulator keeps or loses
 *    depending on the order (2^40 + 256 x 2^-20 = 2^40 + 2^-12): both orders give the
 *    exact sum;
 *  - 200 random patterns added in two shuffled orders (and split in two halves added
 *    separately and then together, as two ranks' sums are): the same bits, and equal to
 *    an exact reference (sums of floats whose exponents span 2^-24..2^0 are exact in
 *    long double's 64-bit mantissa within 1 part in 2^40);
 *  - the weighted add of the focal spread and a non-finite intensity (NaN result). */
#include <pthread.h>

#include "check.h"
#include "detector.h"

static void pacbed_init(stem_result *r, int bins)
{
    memset(r, 0, sizeof *r);
    r->pattern_bins = bins;
    r->width[STEM_CH_PACBED] = bins;
    r->pacbed = r->data[STEM_CH_PACBED] = calloc((size_t)bins, sizeof(double));
    r->scan_sum[STEM_CH_PACBED] = calloc((size_t)bins, sizeof(stem_fixed128));
    r->scan_lock = malloc(sizeof(pthread_mutex_t));
    REQUIRE(r->pacbed && r->scan_sum[STEM_CH_PACBED] && r->scan_lock);
    pthread_mutex_init(r->scan_lock, NULL);
}

static void test_order_of_a_large_and_small_values(void)
{
    stem_result a, b;
    pacbed_init(&a, 1);
    pacbed_init(&b, 1);
    int bin = 0;
    float big = 0x1p40f, small = 0x1p-20f;
    stem_result_add_pattern(&a, 0, &bin, &big, 1);
    for (int i = 0; i < 256; i++) stem_result_add_pattern(&a, 0, &bin, &small, 1);
    for (int i = 0; i < 256; i++) stem_result_add_pattern(&b, 0, &bin, &small, 1);
    stem_result_add_pattern(&b, 0, &bin, &big, 1);
    double va, vb;
    stem_result_scan_values(&a, STEM_CH_PACBED, &va);
    stem_result_scan_values(&b, STEM_CH_PACBED, &vb);
    CHECK_MSG(va == 0x1p40 + 0x1p-12 && vb == va, "large first %.17g, small first %.17g, exact %.17g", va, vb,
              0x1p40 + 0x1p-12);
    stem_result_free(&a);
    stem_result_free(&b);
}

static void test_shuffled_patterns(void)
{
    enum { P = 200, N = 64 };
    static float pat[P][N];
    int bin[N];
    srand(5);
    for (int k = 0; k < N; k++) bin[k] = k % 16 == 15 ? -1 : k / 2; /* binned 2:1, some pixels cropped away */
    for (int p = 0; p < P; p++)
        for (int k = 0; k < N; k++) pat[p][k] = (float)ldexp((double)rand() / RAND_MAX, -(rand() % 24));
    int order[P];
    for (int p = 0; p < P; p++) order[p] = p;
    stem_result fwd, shuf, half1, half2;
    pacbed_init(&fwd, N / 2);
    pacbed_init(&shuf, N / 2);
    pacbed_init(&half1, N / 2);
    pacbed_init(&half2, N / 2);
    for (int p = P - 1; p > 0; p--) { /* Fisher-Yates */
        int q = rand() % (p + 1), t = order[p];
        order[p] = order[q];
        order[q] = t;
    }
    for (int p = 0; p < P; p++) {
        stem_result_add_pattern(&fwd, p, bin, pat[p], N);
        stem_result_add_pattern(&shuf, order[p], bin, pat[order[p]], N);
        stem_result_add_pattern(p < 77 ? &half1 : &half2, p, bin, pat[p], N);
    }
    for (int i = 0; i < N / 2; i++)
        half1.scan_sum[STEM_CH_PACBED][i] +=
            half2.scan_sum[STEM_CH_PACBED][i]; /* as two ranks' sums add (stem_mpi_reduce_fixed) */
    double vf[N / 2], vs[N / 2], vh[N / 2], worst = 0;
    stem_result_scan_values(&fwd, STEM_CH_PACBED, vf);
    stem_result_scan_values(&shuf, STEM_CH_PACBED, vs);
    stem_result_scan_values(&half1, STEM_CH_PACBED, vh);
    CHECK_MSG(!memcmp(vf, vs, sizeof vf) && !memcmp(vf, vh, sizeof vf), "the sum depends on the order of the patterns");
    for (int i = 0; i < N / 2; i++) {
        long double ref = 0;
        for (int p = 0; p < P; p++)
            for (int k = 0; k < N; k++)
                if (bin[k] == i) ref += pat[p][k];
        worst = fmax(worst, fabs((double)((vf[i] - ref) / ref)));
    }
    CHECK_MSG(worst <= 1e-15, "largest relative difference from the exact sum %.3g", worst);
    printf("200 patterns, 3 orders: the same bits; largest relative difference from the exact sum %.2e\n", worst);
    stem_result_free(&fwd);
    stem_result_free(&shuf);
    stem_result_free(&half1);
    stem_result_free(&half2);
}

static void test_weights_and_bad_values(void)
{
    stem_result res, part;
    pacbed_init(&res, 1);
    pacbed_init(&part, 1);
    int bin = 0;
    float v = 0.75f;
    stem_result_add_pattern(&part, 0, &bin, &v, 1);
    stem_result_add_scaled(&res, &part, 0.5);
    stem_result_add_scaled(&res, &part, 0.25);
    double out;
    stem_result_scan_values(&res, STEM_CH_PACBED, &out);
    CHECK_MSG(out == 0.5625, "0.75 x (0.5 + 0.25) = %.17g", out);
    float nan = NAN;
    stem_result_add_pattern(&part, 0, &bin, &nan, 1);
    stem_result_add_scaled(&res, &part, 1.0);
    stem_result_scan_values(&res, STEM_CH_PACBED, &out);
    CHECK_MSG(isnan(out), "a NaN intensity must give a NaN PACBED, got %g", out);
    stem_result_free(&res);
    stem_result_free(&part);
}

int main(void)
{
    test_order_of_a_large_and_small_values();
    test_shuffled_patterns();
    test_weights_and_bad_values();
    return check_exit("test_pacbed");
}
