/* Plane-wave imaging: exit wave and HRTEM image (hrtem.h). */
#include "hrtem.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "channels.h"
#include "coherence.h"
#include "multislice.h"
#include "probe.h"

void stem_hrtem_plane_wave_rows(const stem_plan *plan, long row0, long rows, stem_complex *w)
{
    int nx = plan->nx, ny = plan->ny;
    long kx = plan->plane_k[0], ky = plan->plane_k[1];
    for (long r = 0; r < rows; r++)
        for (int i = 0; i < nx; i++) { /* the phase reduced exactly in integers */
            long mx = ((kx * i) % nx + nx) % nx, my = ((ky * (row0 + r)) % ny + ny) % ny;
            double phase = 2 * M_PI * ((double)mx / nx + (double)my / ny);
            w[(size_t)r * nx + i] = (stem_complex)(cos(phase) + I * sin(phase));
        }
}

/* What a plane wave's propagation through the slices needs: the propagators and an FFT plan on wave. */
typedef struct {
    stem_complex *prop;
    stem_fft fft;
} propagation;

static int propagation_open(const stem_plan *plan, stem_complex *wave, propagation *p)
{
    memset(p, 0, sizeof *p);
    p->prop = stem_propagator_alloc(plan);
    if (!p->prop) return STEM_ERR_MEMORY;
    return stem_fft_create(&p->fft, plan->nx, plan->ny, 1, wave, stem_options_fft_measure(&plan->opt));
}

static void propagation_close(propagation *p)
{
    stem_fft_destroy(&p->fft);
    stem_fft_free(p->prop);
}

int stem_hrtem_exit_wave(const stem_plan *plan, const stem_complex *trans, stem_complex *wave)
{
    propagation p;
    int err = propagation_open(plan, wave, &p);
    if (!err) {
        stem_hrtem_plane_wave_rows(plan, 0, plan->ny, wave);
        stem_multislice_propagate(plan, trans, p.prop, &p.fft, wave, 1, 0, plan->n_slices);
    }
    propagation_close(&p);
    return err;
}

int stem_hrtem_same_tilt_end(const stem_plan *plans, int i, int n)
{
    int j = i + 1;
    while (j < n && !memcmp(plans[j].plane_k, plans[i].plane_k, sizeof plans[i].plane_k)) j++;
    return j;
}

/* Points [i, j), one beam tilt: its plane wave through the slices once, every point recorded at
 * each detection plane (the wave goes on in Fourier space from one plane to the next). */
static int tilt_points(const stem_plan *plans, int i, int j, const stem_complex *trans, const stem_detector *det,
                       stem_complex *wave, stem_result *res)
{
    const stem_plan *plan = &plans[i];
    int planes = stem_plan_n_planes(plan);
    propagation p;
    int err = propagation_open(plan, wave, &p);
    if (!err) stem_hrtem_plane_wave_rows(plan, 0, plan->ny, wave);
    for (int k = 0, above = 0; k < planes && !err; k++) {
        int below = stem_plan_plane_slices(plan, k);
        stem_multislice_propagate(plan, trans, p.prop, &p.fft, wave, 1, above, below);
        for (int q = i; q < j && !err; q++) err = stem_hrtem_record(&plans[q], wave, det, &res[(size_t)q * planes + k]);
        above = below;
    }
    propagation_close(&p);
    return err;
}

int stem_hrtem_points(const stem_plan *plans, int n, const stem_complex *trans, const stem_detector *det,
                      stem_result *res)
{
    int err = STEM_OK;
    stem_complex *wave = stem_fft_alloc((size_t)plans[0].nx * plans[0].ny, "exit wave");
    if (!wave) return STEM_ERR_MEMORY;
    for (int i = 0, j; i < n && !err; i = j) {
        j = stem_hrtem_same_tilt_end(plans, i, n);
        err = tilt_points(plans, i, j, trans, det, wave, res);
    }
    stem_fft_free(wave);
    return err;
}

/* Whether the objective aperture ([hrtem] objective_aperture, 0: none) stops (qx, qy). */
static int lens_stops(const stem_plan *lens, double qx, double qy)
{
    double q_ap = stem_options_objective_aperture(&lens->opt) / lens->lambda;
    return q_ap > 0 && qx * qx + qy * qy > q_ap * q_ap;
}

stem_complex stem_hrtem_lens_at(const stem_plan *lens, double qx, double qy)
{
    if (lens_stops(lens, qx, qy)) return 0;
    double chi = stem_probe_chi(lens, qx, qy);
    return (stem_complex)(cos(chi) - I * sin(chi));
}

void stem_hrtem_chi_without_defocus(const stem_plan *plan, double *chi)
{
    stem_plan lens = *plan; /* read only: the aberrations without defocus */
    lens.aberr.c[STEM_C10] = 0;
    for (int j = 0; j < plan->ny; j++) {
        double qy = stem_fft_index(j, plan->ny) / plan->cell[1];
        for (int i = 0; i < plan->nx; i++) {
            double qx = stem_fft_index(i, plan->nx) / plan->cell[0];
            chi[(size_t)j * plan->nx + i] = lens_stops(&lens, qx, qy) ? NAN : stem_probe_chi(&lens, qx, qy);
        }
    }
}

/* The lens's transfer at each pixel for one defocus offset. */
static void lens_transfer(const stem_plan *plan, double dC10, stem_complex *h)
{
    stem_plan lens = *plan; /* read only: the aberrations with this defocus */
    lens.aberr.c[STEM_C10] += dC10;
    for (int j = 0; j < plan->ny; j++) {
        double qy = stem_fft_index(j, plan->ny) / plan->cell[1];
        for (int i = 0; i < plan->nx; i++)
            h[(size_t)j * plan->nx + i] = stem_hrtem_lens_at(&lens, stem_fft_index(i, plan->nx) / plan->cell[0], qy);
    }
}

/* The image, summed over the focal points with their weights, into image (nx x ny). */
static int lens_image(const stem_plan *plan, const stem_complex *wave, float *image)
{
    size_t grid = (size_t)plan->nx * plan->ny;
    double offset[STEM_MAX_FOCAL_POINTS], weight[STEM_MAX_FOCAL_POINTS];
    int n = stem_focal_points(plan, offset, weight);
    stem_complex *h = stem_fft_alloc(grid, "lens transfer"), *w = stem_fft_alloc(grid, "image wave");
    stem_fft fft = {0};
    int err = h && w ? stem_fft_create(&fft, plan->nx, plan->ny, 1, w, stem_options_fft_measure(&plan->opt))
                     : STEM_ERR_MEMORY;
    for (int k = 0; k < n && !err; k++) {
        lens_transfer(plan, offset[k], h);
        for (size_t p = 0; p < grid; p++) w[p] = wave[p] * h[p];
        stem_fft_inverse(&fft, w);
        for (size_t p = 0; p < grid; p++)
            image[p] += (float)(weight[k] * (crealf(w[p]) * crealf(w[p]) + cimagf(w[p]) * cimagf(w[p])));
    }
    stem_fft_destroy(&fft);
    stem_fft_free(h);
    stem_fft_free(w);
    return err;
}

/* The exit wave in real space, (re, im) interleaved, added to out. */
static int exit_in_real_space(const stem_plan *plan, const stem_complex *wave, float *out)
{
    size_t grid = (size_t)plan->nx * plan->ny;
    stem_complex *w = stem_fft_alloc(grid, "exit wave");
    stem_fft fft = {0};
    int err =
        w ? stem_fft_create(&fft, plan->nx, plan->ny, 1, w, stem_options_fft_measure(&plan->opt)) : STEM_ERR_MEMORY;
    if (!err) {
        memcpy(w, wave, grid * sizeof *w);
        stem_fft_inverse(&fft, w);
        for (size_t p = 0; p < grid; p++) {
            out[2 * p] += crealf(w[p]);
            out[2 * p + 1] += cimagf(w[p]);
        }
    }
    stem_fft_destroy(&fft);
    stem_fft_free(w);
    return err;
}

int stem_hrtem_record_pattern(const stem_plan *plan, const stem_complex *wave, const stem_detector *det,
                              stem_result *res)
{
    if (res->n_probes == 0) return STEM_OK;
    float *pattern = stem_alloc(sizeof(float) * (size_t)plan->out_nx * plan->out_ny, "diffraction pattern");
    if (!pattern) return STEM_ERR_MEMORY;
    stem_multislice_intensity(plan, wave, pattern);
    stem_detect(det, pattern, res, 0);
    free(pattern);
    return STEM_OK;
}

int stem_hrtem_record(const stem_plan *plan, const stem_complex *wave, const stem_detector *det, stem_result *res)
{
    if (res->n_probes == 0) return STEM_OK;
    STEM_TRY(stem_hrtem_record_pattern(plan, wave, det, res));
    if (res->data[STEM_CH_EXIT]) STEM_TRY(exit_in_real_space(plan, wave, res->data[STEM_CH_EXIT]));
    return lens_image(plan, wave, res->data[STEM_CH_HRTEM]);
}
