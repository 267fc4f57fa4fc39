/* Plane-wave imaging (src/hrtem.c) against closed forms:
 *  - vacuum: a plane wave tilted onto Fourier pixel (2, -1) leaves the sample as that one
 *    Fourier component with modulus 1 (everything else below 1e-6), and its image is 1
 *    everywhere whatever the aberrations (a single beam has |exp(-i chi)| = 1), or 0 when
 *    the objective aperture stops it;
 *  - a crystal (Si [100]): without aberrations or aperture the image is |exit wave|^2,
 *    pixel by pixel; a focal spread of 1e-6 Angstrom gives the coherent image. */
#include "hrtem.h"
#include "sim.h"

static const char *vacuum_xyz = "vacuum: one H atom of occupancy 0\n10.86 10.86 5.43\n1 5.43 5.43 2.7 0.0 0.0\n";

static void record(sim_case *s, stem_complex *wave)
{
    stem_result_free(&s->res);
    REQUIRE(stem_result_alloc(&s->plan, &s->res) == STEM_OK);
    REQUIRE(stem_hrtem_exit_wave(&s->plan, s->trans, wave) == STEM_OK);
    REQUIRE(stem_hrtem_record(&s->plan, wave, &s->det, &s->res) == STEM_OK);
}

static void test_vacuum(void)
{
    stem_atoms vac;
    REQUIRE(stem_xyz_read_string("vacuum.xyz", vacuum_xyz, &vac) == STEM_OK);
    for (int stop = 0; stop < 2; stop++) {
        sim_case s;
        char ini[1024];
        double px = 1e3 * stem_wavelength(200) / 10.86; /* mrad per Fourier pixel */
        snprintf(ini, sizeof ini,
                 "[sample]\nxyz = inline\n[simulation]\nalgorithm = hrtem\npixel_size = 0.1\n"
                 "slice_thickness = 1.3575\n[probe]\nbeam_tilt_x = %.17g\nbeam_tilt_y = %.17g\nC10 = -50\nC30 = 2e4\n"
                 "C23 = 800\n[hrtem]\nobjective_aperture = %g\n[output]\nsave_exit_wave = true\n",
                 2 * px, -px, stop ? 1.5 * px : 0.0);
        REQUIRE(sim_setup(&s, ini, &vac) == STEM_OK);
        REQUIRE(s.plan.plane_k[0] == 2 && s.plan.plane_k[1] == -1);
        size_t grid = (size_t)s.plan.nx * s.plan.ny;
        stem_complex *wave = stem_fft_alloc(grid, "wave");
        REQUIRE(wave);
        record(&s, wave);
        size_t beam = (size_t)(s.plan.ny - 1) * s.plan.nx + 2;
        double rest = 0;
        for (size_t p = 0; p < grid; p++)
            if (p != beam) rest = fmax(rest, cabsf(wave[p]));
        CHECK_CLOSE(cabsf(wave[beam]), 1.0, 1e-6);
        CHECK_MSG(rest <= 1e-6, "vacuum exit wave: %.3g outside the plane wave's own frequency", rest);
        const float *img = s.res.data[STEM_CH_HRTEM];
        double lo = 1e9, hi = -1e9;
        for (size_t p = 0; p < grid; p++) lo = fmin(lo, img[p]), hi = fmax(hi, img[p]);
        double want = stop ? 0 : 1;
        CHECK_MSG(fabs(lo - want) <= 1e-5 && fabs(hi - want) <= 1e-5, "vacuum image in [%.7f, %.7f], expected %g", lo,
                  hi, want);
        printf("vacuum, tilted plane wave%s: exit wave one beam of modulus %.7f (rest %.1e), image in [%.7f, %.7f]\n",
               stop ? ", stopped by the aperture" : "", cabsf(wave[beam]), rest, lo, hi);
        stem_fft_free(wave);
        sim_free(&s);
    }
    stem_atoms_free(&vac);
}

static void test_crystal(void)
{
    const char *base =
        "[sample]\nxyz = " STEMSIM_TEST_DATA_DIR "/Si100_unitcell.xyz\ntile_x = 2\ntile_y = 2\ntile_z = 2\n"
        "[simulation]\nalgorithm = hrtem\npixel_size = 0.1\nslice_thickness = 1.3575\n"
        "[output]\nsave_exit_wave = true\n";
    sim_case s;
    REQUIRE(sim_setup(&s, base, NULL) == STEM_OK);
    size_t grid = (size_t)s.plan.nx * s.plan.ny;
    stem_complex *wave = stem_fft_alloc(grid, "wave");
    REQUIRE(wave);
    record(&s, wave);
    const float *img = s.res.data[STEM_CH_HRTEM], *ex = s.res.data[STEM_CH_EXIT];
    double worst = 0, contrast_lo = 1e9, contrast_hi = -1e9;
    for (size_t p = 0; p < grid; p++) {
        double i2 = (double)ex[2 * p] * ex[2 * p] + (double)ex[2 * p + 1] * ex[2 * p + 1];
        worst = fmax(worst, fabs(img[p] - i2));
        contrast_lo = fmin(contrast_lo, img[p]), contrast_hi = fmax(contrast_hi, img[p]);
    }
    CHECK_MSG(worst <= 1e-5, "perfect lens: image differs from |exit wave|^2 by %.3g", worst);
    CHECK_MSG(contrast_hi - contrast_lo >= 0.05, "the crystal's image has no contrast (%.3g)",
              contrast_hi - contrast_lo);
    printf("Si 2x2x2, perfect lens: image = |exit wave|^2 to %.1e (image in [%.3f, %.3f])\n", worst, contrast_lo,
           contrast_hi);
    /* a lens with aberrations: coherent, and with a vanishing focal spread */
    float *coherent = malloc(sizeof(float) * grid);
    REQUIRE(coherent);
    s.plan.aberr.c[STEM_C10] = -60;
    s.plan.aberr.c[STEM_C30] = 5e4;
    record(&s, wave);
    memcpy(coherent, s.res.data[STEM_CH_HRTEM], sizeof(float) * grid);
    s.plan.opt.focal_spread = 1e-6;
    s.plan.opt.focal_points = 7;
    record(&s, wave);
    double diff = 0;
    for (size_t p = 0; p < grid; p++) diff = fmax(diff, fabs(((float *)s.res.data[STEM_CH_HRTEM])[p] - coherent[p]));
    CHECK_MSG(diff <= 1e-5, "focal spread 1e-6 Angstrom vs coherent: %.3g", diff);
    printf("focal spread 1e-6 Angstrom (7 points) vs coherent: max |diff| %.1e\n", diff);
    free(coherent);
    stem_fft_free(wave);
    sim_free(&s);
}

int main(void)
{
    stem_log_init(0, STEM_LOG_QUIET);
    test_vacuum();
    test_crystal();
    return check_exit("test_hrtem");
}
