/* PRISM against multislice and against itself:
 *  - f = 1 keeps every plane wave and a window of the whole cell, so it is
 *    the same linear map as multislice: rings, images and totals must agree
 *    to float rounding (relative RMS < 1e-4);
 *  - the interpolation windows wrap around the cell edge: a probe near a
 *    corner (window wrapped) equals the same probe in a cell whose atoms are
 *    shifted periodically by whole pixels, with the probe shifted the same
 *    way (window in one piece), by translation invariance of periodic
 *    multislice. The shift is a whole number of pixels of both the full grid
 *    (so the potential is the same, rolled) and the S-matrix grid (so the
 *    window moves by whole pixels);
 *  - the output step's vectorised window sums (a run of probes in the vector lanes)
 *    equal the plain sum over beams of each probe alone, bit for bit, for runs of 1 to
 *    16 probes whose windows wrap around the box. */
#include "sim.h"

#include "prism.h"

static const char *si_xyz = STEMSIM_TEST_DATA_DIR "/Si100_unitcell.xyz";

static void compare(const char *what, const stem_result *a, const stem_result *b, double tol)
{
    REQUIRE(a->n_probes == b->n_probes && a->n_bins == b->n_bins && a->n_images == b->n_images);
    double e_rings = rel_rms(a->rings, b->rings, a->n_probes * a->n_bins);
    double e_total = rel_rms(a->total, b->total, a->n_probes);
    CHECK_MSG(e_rings < tol, "%s: rings relative RMS %.3g >= %.3g", what, e_rings, tol);
    CHECK_MSG(e_total < tol, "%s: totals relative RMS %.3g >= %.3g", what, e_total, tol);
    printf("%s: relative RMS rings %.2e, totals %.2e", what, e_rings, e_total);
    for (int m = 0; m < a->n_images; m++) {
        double *x = malloc(sizeof(double) * a->n_probes), *y = malloc(sizeof(double) * a->n_probes);
        for (long p = 0; p < a->n_probes; p++) {
            x[p] = a->images[p * a->n_images + m];
            y[p] = b->images[p * b->n_images + m];
        }
        double e = rel_rms(x, y, a->n_probes);
        CHECK_MSG(e < tol, "%s: image %d relative RMS %.3g >= %.3g", what, m, e, tol);
        printf(", image %d %.2e", m, e);
        free(x);
        free(y);
    }
    printf("\n");
}

static void test_f1_equals_multislice(void)
{
    char ini[2048];
    const char *common =
        "tile_x = 2\ntile_y = 2\ntile_z = 2\n[probe]\nsemiangle = 22\ndefocus = -40\ncs = 0.002\n"
        "[scan]\nstep = 2.715\n[detector]\nring_width = 1\n[compute]\nthreads = 2\n"
        "[simulation]\npixel_size = 0.1\nslice_thickness = 1.3575\ninterpolation_x = 1\ninterpolation_y = 1\n";
    /* also a rectangular cell (x/y mix-ups), with batches that leave idle
     * slots (5 probes per batch for 6 x 4 probes) on 2 threads */
    const char *rect =
        "tile_x = 3\ntile_y = 2\ntile_z = 1\n[probe]\nsemiangle = 18\ndefocus = 25\nastigmatism = 15\n"
        "astigmatism_angle = 30\n[scan]\nstep = 2.715\n[detector]\nring_width = 1.5\n[compute]\nthreads = 2\n"
        "batch_size = 5\n[simulation]\npixel_size = 0.1\nslice_thickness = 1.3575\ninterpolation_x = 1\n"
        "interpolation_y = 1\n";
    /* and the soft aperture (its edge pixels carry weights between 0 and 1) */
    const char *soft =
        "tile_x = 3\ntile_y = 2\ntile_z = 1\n[probe]\nsoft_aperture = true\nsemiangle = 18\ndefocus = 25\n"
        "[scan]\nstep = 2.715\n[detector]\nring_width = 1.5\n[compute]\nthreads = 2\n"
        "[simulation]\npixel_size = 0.1\nslice_thickness = 1.3575\ninterpolation_x = 1\ninterpolation_y = 1\n";
    /* and a tilted beam with a displaced aperture (PRISM: the probe's coefficients shifted) */
    const char *tilted =
        "tile_x = 3\ntile_y = 2\ntile_z = 1\n[probe]\nsemiangle = 18\ndefocus = 25\nbeam_tilt_x = 6\n"
        "beam_tilt_y = -4\naperture_shift_x = 1.5\n[scan]\nstep = 2.715\n[detector]\nring_width = 1.5\n"
        "[compute]\nthreads = 2\n[simulation]\npixel_size = 0.1\nslice_thickness = 1.3575\n"
        "interpolation_x = 1\ninterpolation_y = 1\n";
    for (int k = 0; k < 4; k++) {
        const char *setup = k == 3 ? tilted : k == 2 ? soft : k ? rect : common;
        sim_case ms, pr;
        snprintf(ini, sizeof ini, "[sample]\nxyz = %s\n%salgorithm = multislice\n", si_xyz, setup);
        REQUIRE(sim_setup(&ms, ini, NULL) == STEM_OK);
        snprintf(ini, sizeof ini, "[sample]\nxyz = %s\n%salgorithm = prism\n", si_xyz, setup);
        REQUIRE(sim_setup(&pr, ini, NULL) == STEM_OK);
        REQUIRE(ms.plan.nx == pr.plan.nx && ms.plan.ny == pr.plan.ny);
        REQUIRE(k ? (ms.plan.n_slices == 4 && pr.plan.n_probes == 24)
                  : (ms.plan.n_slices == 8 && pr.plan.n_probes == 16));
        CHECK_INT_EQ(pr.plan.out_nx, ms.plan.out_nx);
        CHECK_INT_EQ(pr.plan.out_ny, ms.plan.out_ny);
        REQUIRE(sim_run(&ms) == STEM_OK);
        REQUIRE(sim_run(&pr) == STEM_OK);
        static const char *what[] = {"Si 2x2x2, PRISM f = 1 vs multislice", "Si 3x2x1, PRISM f = 1 vs multislice",
                                     "Si 3x2x1 soft aperture, PRISM f = 1 vs multislice",
                                     "Si 3x2x1 tilted beam, PRISM f = 1 vs multislice"};
        compare(what[k], &pr.res, &ms.res, 1e-4);
        /* the comparison is not vacuous: the crystal scatters out of the BF disk */
        double adf = 0;
        for (long p = 0; p < ms.res.n_probes; p++) adf = fmax(adf, ms.res.images[p * ms.res.n_images + 2]);
        CHECK_GE(adf, 0.003);
        sim_free(&ms);
        sim_free(&pr);
    }
}

static double wrap(double v, double L) { return v - L * floor(v / L); }

static void test_window_wrap(int fx, int fy, int tx, int ty)
{
    char ini[2048];
    snprintf(ini, sizeof ini,
             "[sample]\nxyz = %s\ntile_x = %d\ntile_y = %d\n[probe]\nsemiangle = 20\ndefocus = -20\n"
             "[detector]\nring_width = 2\n[compute]\nthreads = 2\n[simulation]\nalgorithm = prism\npixel_size = 0.1\n"
             "slice_thickness = 1.3575\ninterpolation_x = %d\ninterpolation_y = %d\n",
             si_xyz, tx, ty, fx, fy);
    sim_case a, b;
    REQUIRE(sim_setup(&a, ini, NULL) == STEM_OK);
    const stem_plan *pa = &a.plan;
    /* smallest shift (full-grid pixels) that is also whole S-matrix pixels */
    int sx = 1, sy = 1;
    while ((sx * pa->crop_nx) % pa->nx) sx++;
    while ((sy * pa->crop_ny) % pa->ny) sy++;
    sx *= 3; /* move the corner well inside the cell */
    sy *= 2;
    double ax = sx * pa->dx, ay = sy * pa->dy, L0 = pa->cell[0], L1 = pa->cell[1];
    /* the same crystal shifted periodically by (ax, ay) */
    stem_atoms shifted = {0};
    shifted.cell[0] = L0;
    shifted.cell[1] = L1;
    shifted.cell[2] = a.atoms.cell[2];
    REQUIRE(stem_atoms_alloc(&shifted, a.atoms.n) == STEM_OK);
    for (long i = 0; i < a.atoms.n; i++) {
        shifted.Z[i] = a.atoms.Z[i];
        shifted.x[i] = wrap(a.atoms.x[i] + ax, L0);
        shifted.y[i] = wrap(a.atoms.y[i] + ay, L1);
        shifted.z[i] = a.atoms.z[i];
        shifted.occupancy[i] = a.atoms.occupancy[i];
        shifted.sigma[i] = a.atoms.sigma[i];
    }
    snprintf(ini, sizeof ini,
             "[sample]\nxyz = inline\n[probe]\nsemiangle = 20\ndefocus = -20\n"
             "[detector]\nring_width = 2\n[compute]\nthreads = 2\n[simulation]\nalgorithm = prism\npixel_size = 0.1\n"
             "slice_thickness = 1.3575\ninterpolation_x = %d\ninterpolation_y = %d\n",
             fx, fy);
    REQUIRE(sim_setup(&b, ini, &shifted) == STEM_OK);
    REQUIRE(b.plan.nx == pa->nx && b.plan.ny == pa->ny && b.plan.crop_nx == pa->crop_nx &&
            b.plan.crop_ny == pa->crop_ny && b.plan.n_beams == pa->n_beams);
    printf(
        "f = %d x %d, cell %.2f x %.2f: grid %d x %d, S-matrix grid %d x %d, window %d x %d; shift (%d, %d) pixels = "
        "(%.4f, %.4f) Angstrom\n",
        fx, fy, L0, L1, pa->nx, pa->ny, pa->crop_nx, pa->crop_ny, pa->out_nx, pa->out_ny, sx, sy, ax, ay);
    /* probes whose windows wrap: both corners, and each edge (fractions of the cell) */
    const double probes[5][2] = {{0.003, 0.005}, {0.994, 0.985}, {0.002, 0.997}, {0.497, 0.001}, {0.998, 0.56}};
    for (int k = 0; k < 5; k++) {
        double x = probes[k][0] * L0, y = probes[k][1] * L1;
        sim_single_probe(&a, x, y);
        sim_single_probe(&b, wrap(x + ax, L0), wrap(y + ay, L1));
        REQUIRE(sim_run(&a) == STEM_OK);
        REQUIRE(sim_run(&b) == STEM_OK);
        char what[128];
        snprintf(what, sizeof what, "f = %d x %d probe (%.2f, %.2f) vs shifted cell", fx, fy, x, y);
        compare(what, &a.res, &b.res, 1e-4);
        if (k == 0) {
            /* negative control: without moving the probe the result changes */
            sim_single_probe(&b, x, y);
            REQUIRE(sim_run(&b) == STEM_OK);
            double e = rel_rms(a.res.rings, b.res.rings, a.res.n_bins);
            CHECK_MSG(e > 1e-2, "control: an unshifted probe in the shifted cell gives the same rings (%.3g)", e);
        }
    }
    stem_atoms_free(&shifted);
    sim_free(&a);
    sim_free(&b);
}

/* Uniform in [-1, 1) from a 64-bit LCG: the same numbers everywhere. */
static float lcg_float(unsigned long long *state)
{
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((*state >> 40) / 8388608.0 - 1.0);
}

/* The same windows read from a tile of the box that holds them (a margin of 2 pixels; the
 * tile's corner wrapped like the windows), laid out as mpi/smatrix_tiles.c holds a rank's share:
 * equal bit for bit to the windows read from the whole box (`want`). */
static void check_tile_windows(const stem_complex *S, const float *coef_re, const float *coef_im, const int *ox, int oy,
                               int n, const stem_complex *want, size_t stride)
{
    enum { CX = 40, CY = 28, NB = 37, WX = 17, WY = 11, RUN = STEM_PRISM_RUN };
    int nx = ox[n - 1] - ox[0] + WX + 4, ny = WY + 4;
    stem_prism_tile t = {((ox[0] - 2) % CX + CX) % CX, ((oy - 2) % CY + CY) % CY, nx < CX ? nx : CX, ny < CY ? ny : CY};
    if (t.nx == CX) t.x0 = 0;
    if (t.ny == CY) t.y0 = 0;
    stem_complex *tile = malloc(sizeof(stem_complex) * t.nx * t.ny * NB),
                 *win = malloc(sizeof(stem_complex) * RUN * stride);
    for (int j = 0; j < t.ny; j++)
        for (int i = 0; i < t.nx; i++)
            memcpy(tile + ((size_t)j * t.nx + i) * NB, S + ((size_t)((t.y0 + j) % CY) * CX + (t.x0 + i) % CX) * NB,
                   sizeof(stem_complex) * NB);
    for (size_t k = 0; k < RUN * stride; k++) win[k] = NAN;
    stem_prism_view view = {tile, t};
    stem_prism_gather_windows(&view, CX, CY, NB, coef_re, coef_im, ox, oy, n, WX, WY, win, stride);
    int differ = 0;
    for (int k = 0; k < n; k++)
        differ += memcmp(win + k * stride, want + k * stride, sizeof(stem_complex) * WX * WY) != 0;
    CHECK_MSG(differ == 0,
              "run of %d from x %d, y %d: %d windows read from a %d x %d tile at (%d, %d) differ from the "
              "whole box's",
              n, ox[0], oy, differ, t.nx, t.ny, t.x0, t.y0);
    free(tile);
    free(win);
}

/* stem_prism_gather_windows against sum_b coef[t][b] * S[pixel][b] in C's complex arithmetic
 * for each window alone: equal bit for bit (the same sum in the same order), every window
 * value written, nothing outside the windows. */
static void test_gather_windows(int n, int ox0, int step, int oy)
{
    enum { CX = 40, CY = 28, NB = 37, WX = 17, WY = 11, RUN = STEM_PRISM_RUN };
    unsigned long long state = 12345 + n;
    stem_complex *S = malloc(sizeof(stem_complex) * CX * CY * NB);
    stem_complex coef[RUN][NB];
    float coef_re[NB * RUN], coef_im[NB * RUN];
    size_t stride = WX * WY + 3; /* not a multiple of anything */
    stem_complex *win = malloc(sizeof(stem_complex) * RUN * stride);
    for (int k = 0; k < CX * CY * NB; k++) S[k] = lcg_float(&state) + I * lcg_float(&state);
    for (int t = 0; t < RUN; t++)
        for (int b = 0; b < NB; b++) {
            coef[t][b] = t < n ? lcg_float(&state) + I * lcg_float(&state) : 0;
            coef_re[b * RUN + t] = crealf(coef[t][b]);
            coef_im[b * RUN + t] = cimagf(coef[t][b]);
        }
    int ox[RUN];
    for (int t = 0; t < n; t++) ox[t] = ox0 + t * step + (step ? t / 3 : 0); /* uneven steps, as positions rounded */
    for (size_t k = 0; k < RUN * stride; k++) win[k] = NAN;
    stem_prism_view whole = {S, {0, 0, CX, CY}};
    stem_prism_gather_windows(&whole, CX, CY, NB, coef_re, coef_im, ox, oy, n, WX, WY, win, stride);
    int mismatches = 0, unwritten = 0, spilled = 0;
    for (int t = 0; t < RUN; t++)
        for (size_t k = 0; k < stride; k++) {
            stem_complex v = win[t * stride + k];
            if (t >= n || k >= WX * WY) {
                spilled += !isnan(crealf(v));
                continue;
            }
            int i = (int)(k % WX), j = (int)(k / WX);
            int gx = ((ox[t] + i) % CX + CX) % CX, gy = ((oy + j) % CY + CY) % CY;
            stem_complex sum = 0;
            for (int b = 0; b < NB; b++) sum += coef[t][b] * S[((size_t)gy * CX + gx) * NB + b];
            unwritten += isnan(crealf(v));
            mismatches += memcmp(&v, &sum, sizeof v) != 0;
        }
    CHECK_MSG(mismatches == 0 && unwritten == 0 && spilled == 0,
              "run of %d from x %d (step %d), y %d: %d values differ from the plain sum, %d unwritten, %d written "
              "outside the windows",
              n, ox0, step, oy, mismatches, unwritten, spilled);
    check_tile_windows(S, coef_re, coef_im, ox, oy, n, win, stride);
    free(S);
    free(win);
}

int main(void)
{
    stem_log_init(0, STEM_LOG_QUIET);
    test_f1_equals_multislice();
    test_window_wrap(2, 2, 2, 2);
    test_window_wrap(4, 4, 2, 2);
    test_window_wrap(2, 4, 2, 3); /* rectangular cell, different factors: catches x/y mix-ups */
    test_gather_windows(1, 3, 1, 2);
    test_gather_windows(16, -5, 1, -3); /* wraps on the left and at the top */
    test_gather_windows(16, 30, 2, 20); /* wraps on the right and at the bottom */
    test_gather_windows(7, 0, 3, 0);
    test_gather_windows(16, 0, 0, 0); /* probes on the same window */
    return check_exit("test_prism");
}
