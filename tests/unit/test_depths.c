/* Detection planes inside the sample ([output] depths): one pass of the waves
 * records every plane, and each plane's result is what a thinner sample gives.
 *  - Si [100] 2 x 2 x 3 cells (12 slices), planes after slices 4, 8 and 12:
 *    plane 1 and 2 equal, to 1e-6 relative RMS, the runs of separately built
 *    2 x 2 x 1 and 2 x 2 x 2 samples (their own atoms, their own transmission
 *    functions: an independent computation of the thinner samples), and plane
 *    3 equals the plain run of the whole sample bitwise (same operations);
 *  - at every plane the total intensity lies in [0.98, 1 + 1e-3] and the
 *    rings sum to it (conservation through the interruption);
 *  - PRISM (f = 2): the S-matrix recorded at each plane in one pass of the plane waves
 *    ([beam][plane][box]), the output step on each plane's: planes 1 and 2 equal the PRISM
 *    runs of the separately built thinner samples and plane 3 the plain run, bit for bit;
 *    with f = 1 every plane equals multislice's to 1e-4 relative RMS (float rounding). */
#include "sim.h"

#include "prism.h"

static const char *si_ini = "[sample]\nxyz = " STEMSIM_TEST_DATA_DIR "/Si100_unitcell.xyz\ntile_x = 2\ntile_y = 2\n"
                            "tile_z = %d\n[probe]\nsemiangle = 20\ndefocus = -20\n[scan]\nx_end = 0.3\ny_end = 0.3\n"
                            "step = 0.8\n[detector]\nring_width = 2\nsave_4d = true\n[compute]\nthreads = 2\n"
                            "[simulation]\npixel_size = 0.1\nslice_thickness = 1.3575\nthermal = false\n";

/* The config of a sample `cells` unit cells thick, with more [simulation] keys. */
static void sample_ini(char *ini, size_t n, int cells, const char *more)
{
    int len = snprintf(ini, n, si_ini, cells);
    snprintf(ini + len, n - (size_t)len, "%s", more);
}

/* The plain run of a sample `cells` unit cells thick. */
static void thinner_run(int cells, const char *more, sim_case *s)
{
    char ini[2048];
    sample_ini(ini, sizeof ini, cells, more);
    REQUIRE(sim_setup(s, ini, NULL) == STEM_OK);
    REQUIRE(sim_run(s) == STEM_OK);
}

static double channel_rms(const stem_result *a, const stem_result *b, int ch)
{
    long n = a->n_probes * (long)a->width[ch];
    if (stem_channel_table[ch].is_float) {
        const float *x = a->data[ch], *y = b->data[ch];
        double num = 0, den = 0;
        for (long i = 0; i < n; i++) {
            num += ((double)x[i] - y[i]) * ((double)x[i] - y[i]);
            den += (double)y[i] * y[i];
        }
        return den > 0 ? sqrt(num / den) : sqrt(num);
    }
    return rel_rms(a->data[ch], b->data[ch], n);
}

static void compare(const char *what, const stem_result *got, const stem_result *want, double tol)
{
    double worst = 0;
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++)
        if (got->width[ch]) worst = fmax(worst, channel_rms(got, want, ch));
    printf("%-44s worst channel relative RMS %.3g (tolerance %g)\n", what, worst, tol);
    CHECK_MSG(worst <= tol, "%s: relative RMS %.3g > %g", what, worst, tol);
}

/* PRISM with detection planes, as mpi/algorithm.c runs it on one rank: the S-matrix of every
 * plane from one pass, each plane put beam fastest over the whole box for the output step. */
static void prism_planes(const stem_plan *plan, const stem_complex *trans, const stem_detector *det, stem_result *res)
{
    size_t box = (size_t)plan->crop_nx * plan->crop_ny;
    REQUIRE(stem_prism_beam_stride(plan) == box * (size_t)plan->n_depths);
    for (int k = 0; k < plan->n_depths; k++) {
        stem_prism_view S;
        stem_complex *by_beam = sim_prism_smatrix(plan, trans, k, &S);
        REQUIRE(by_beam);
        REQUIRE(stem_result_alloc(plan, &res[k]) == STEM_OK);
        REQUIRE(stem_prism_output(plan, &S, det, &res[k]) == STEM_OK);
        stem_result_finalise(&res[k], 1, 1);
        stem_fft_free(by_beam);
        stem_fft_free((stem_complex *)S.S);
    }
}

/* The plan of `s` with planes after slices 4, 8 and 12. */
static stem_plan three_planes(const sim_case *s)
{
    stem_plan planes = s->plan;
    planes.n_depths = 3;
    for (int k = 0; k < 3; k++) planes.depth_slice[k] = 4 * (k + 1);
    return planes;
}

static void test_prism(const stem_result *multislice)
{
    static const char *f2 = "algorithm = prism\ninterpolation_x = 2\ninterpolation_y = 2\n";
    static const char *f1 = "algorithm = prism\ninterpolation_x = 1\ninterpolation_y = 1\n";
    sim_case whole, thin;
    char ini[2048], what[96];
    stem_result res[3];
    sample_ini(ini, sizeof ini, 3, f2);
    REQUIRE(sim_setup(&whole, ini, NULL) == STEM_OK);
    REQUIRE(whole.plan.n_slices == 12 && whole.plan.fx == 2);
    stem_plan planes = three_planes(&whole);
    prism_planes(&planes, whole.trans, &whole.det, res);
    for (int k = 0; k < 3; k++) {
        thinner_run(k + 1, f2, &thin);
        snprintf(what, sizeof what, "PRISM f = 2: plane after %d slices vs %d cells", 4 * (k + 1), k + 1);
        compare(what, &res[k], &thin.res, 0);
        sim_free(&thin);
    }
    CHECK_MSG(channel_rms(&res[0], &res[2], STEM_CH_RINGS) > 1e-3, "PRISM: the first and last planes are the same");
    for (int k = 0; k < 3; k++) stem_result_free(&res[k]);
    sim_free(&whole);

    sample_ini(ini, sizeof ini, 3, f1);
    REQUIRE(sim_setup(&whole, ini, NULL) == STEM_OK);
    planes = three_planes(&whole);
    prism_planes(&planes, whole.trans, &whole.det, res);
    for (int k = 0; k < 3; k++) {
        snprintf(what, sizeof what, "PRISM f = 1 vs multislice, plane %d", k + 1);
        compare(what, &res[k], &multislice[k], 1e-4);
        stem_result_free(&res[k]);
    }
    sim_free(&whole);
}

static void conserved(const char *what, const stem_result *r)
{
    for (long p = 0; p < r->n_probes; p++) {
        double rings = 0;
        for (int b = 0; b < r->n_bins; b++) rings += r->rings[p * r->n_bins + b];
        CHECK_MSG(r->total[p] >= 0.98 && r->total[p] <= 1 + 1e-3, "%s probe %ld: total %.7f", what, p, r->total[p]);
        CHECK_MSG(fabs(rings - r->total[p]) <= 1e-6, "%s probe %ld: rings %.7f != total %.7f", what, p, rings,
                  r->total[p]);
    }
}

int main(void)
{
    stem_log_init(0, STEM_LOG_QUIET);
    sim_case whole, thin[2];
    char ini[2048];
    snprintf(ini, sizeof ini, si_ini, 3);
    REQUIRE(sim_setup(&whole, ini, NULL) == STEM_OK);
    REQUIRE(whole.plan.n_slices == 12);
    REQUIRE(sim_run(&whole) == STEM_OK); /* the plain run: whole.res */

    stem_plan planes = whole.plan;
    planes.n_depths = 3;
    planes.depth_slice[0] = 4;
    planes.depth_slice[1] = 8;
    planes.depth_slice[2] = 12;
    stem_result res[3];
    for (int k = 0; k < 3; k++) REQUIRE(stem_result_alloc(&planes, &res[k]) == STEM_OK);
    REQUIRE(stem_multislice_run(&planes, whole.trans, &whole.det, res) == STEM_OK);
    for (int k = 0; k < 3; k++) stem_result_finalise(&res[k], 1, 1);

    for (int k = 0; k < 2; k++) {
        thinner_run(k + 1, "", &thin[k]);
        REQUIRE(thin[k].plan.n_slices == 4 * (k + 1));
        char what[96];
        snprintf(what, sizeof what, "plane after %d slices vs a %d-cell sample", 4 * (k + 1), k + 1);
        compare(what, &res[k], &thin[k].res, 1e-6);
        conserved(what, &res[k]);
        sim_free(&thin[k]);
    }
    compare("plane at the exit vs the plain run", &res[2], &whole.res, 0);
    conserved("exit plane", &res[2]);
    /* the planes differ from each other: the test would notice a plane recorded twice */
    CHECK_MSG(channel_rms(&res[0], &res[2], STEM_CH_RINGS) > 1e-3, "the first and last planes are the same");
    test_prism(res);
    for (int k = 0; k < 3; k++) stem_result_free(&res[k]);
    sim_free(&whole);
    return check_exit("test_depths");
}
