/* Probe wave functions and PRISM beam coefficients. */
#include "probe.h"

#include <math.h>

double stem_probe_chi(const stem_plan *plan, double qx, double qy)
{
    const stem_aberrations *ab = &plan->aberr;
    double lambda = plan->lambda;
    double tx = lambda * qx, ty = lambda * qy, t2 = tx * tx + ty * ty;
    double phi = atan2(ty, tx), phi_a = ab->astigmatism_phi;
    double c3 = ab->c3, c5 = ab->c5;
    double w = 0.5 * ab->defocus * t2 + 0.5 * ab->astigmatism * t2 * cos(2 * (phi - phi_a)) + 0.25 * c3 * t2 * t2 +
               c5 * t2 * t2 * t2 / 6;
    return 2 * M_PI / lambda * w;
}

stem_complex stem_probe_coefficient(const stem_plan *plan, double qx, double qy, double x, double y)
{
    double q_ap = plan->alpha / plan->lambda;
    if (qx * qx + qy * qy > q_ap * q_ap) return 0;
    double phase = -stem_probe_chi(plan, qx, qy) - 2 * M_PI * (qx * x + qy * y);
    return (stem_complex)(cos(phase) + I * sin(phase));
}

void stem_probe_fourier(const stem_plan *plan, double x, double y, stem_complex *out)
{
    int nx = plan->nx, ny = plan->ny;
    double norm = 0;
    for (int j = 0; j < ny; j++) {
        double qy = stem_fft_index(j, ny) / plan->cell[1];
        for (int i = 0; i < nx; i++) {
            stem_complex c = stem_probe_coefficient(plan, stem_fft_index(i, nx) / plan->cell[0], qy, x, y);
            out[(size_t)j * nx + i] = c;
            norm += crealf(c) * crealf(c) + cimagf(c) * cimagf(c);
        }
    }
    float scale = (float)(1 / sqrt(norm));
    for (size_t k = 0; k < (size_t)nx * ny; k++) out[k] *= scale;
}

void stem_probe_beam_coefficients(const stem_plan *plan, double x, double y, stem_complex *coef)
{
    double norm = 0;
    for (int b = 0; b < plan->n_beams; b++) {
        coef[b] = stem_probe_coefficient(plan, plan->beam_kx[b] / plan->cell[0], plan->beam_ky[b] / plan->cell[1], x, y);
        norm += crealf(coef[b]) * crealf(coef[b]) + cimagf(coef[b]) * cimagf(coef[b]);
    }
    float scale = (float)(1 / sqrt(norm));
    for (int b = 0; b < plan->n_beams; b++) coef[b] *= scale;
}
