/* Probe wave functions and PRISM beam coefficients. */
#include "probe.h"

#include <math.h>

double stem_probe_chi(const stem_plan *plan, double qx, double qy)
{
    const double *c = plan->aberr.c, *phi_nm = plan->aberr.phi;
    double lambda = plan->lambda;
    qx -= plan->tilt_q[0]; /* the aberrations are centred on the tilted beam */
    qy -= plan->tilt_q[1];
    double tx = lambda * qx, ty = lambda * qy, t2 = tx * tx + ty * ty;
    double phi = atan2(ty, tx), c1 = c[STEM_C10], a1 = c[STEM_C12], c3 = c[STEM_C30], c5 = c[STEM_C50];
    /* C10, C12, C30, C50 as stemsim always evaluated them (results unchanged to the bit) */
    double w =
        0.5 * c1 * t2 + 0.5 * a1 * t2 * cos(2 * (phi - phi_nm[STEM_C12])) + 0.25 * c3 * t2 * t2 + c5 * t2 * t2 * t2 / 6;
    double theta = sqrt(t2);
    for (int k = 0; k < STEM_N_ABERR; k++) { /* the others: C_nm theta^(n+1) / (n+1) cos(m (phi - phi_nm)) */
        if (k == STEM_C10 || k == STEM_C12 || k == STEM_C30 || k == STEM_C50 || c[k] == 0) continue;
        int n = stem_aberration_orders[k].n, m = stem_aberration_orders[k].m;
        w += c[k] * pow(theta, n + 1) / (n + 1) * cos(m * (phi - phi_nm[k]));
    }
    return 2 * M_PI / lambda * w;
}

double stem_probe_aperture(const stem_plan *plan, double qx, double qy)
{
    qx -= plan->aperture_q[0];
    qy -= plan->aperture_q[1];
    double q_ap = plan->alpha / plan->lambda, q2 = qx * qx + qy * qy;
    if (!plan->opt.soft_aperture) return q2 > q_ap * q_ap ? 0 : 1;
    if (q2 == 0) return 1;
    /* abTEM's soft edge: the angle's distance inside the edge in units of the grid's
     * angular step along this azimuth, plus one half, clipped to [0, 1] */
    double theta = plan->lambda * sqrt(q2), phi = atan2(qy, qx);
    double dx = plan->lambda / plan->cell[0], dy = plan->lambda / plan->cell[1];
    double d = sqrt(cos(phi) * cos(phi) * dx * dx + sin(phi) * sin(phi) * dy * dy);
    double a = (plan->alpha - theta) / d + 0.5;
    return a < 0 ? 0 : a > 1 ? 1 : a;
}

stem_complex stem_probe_coefficient(const stem_plan *plan, double qx, double qy, double x, double y)
{
    double a = stem_probe_aperture(plan, qx, qy);
    if (a == 0) return 0;
    double phase = -stem_probe_chi(plan, qx, qy) - 2 * M_PI * (qx * x + qy * y);
    return (stem_complex)(a * cos(phase) + I * (a * sin(phase)));
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
        coef[b] =
            stem_probe_coefficient(plan, plan->beam_kx[b] / plan->cell[0], plan->beam_ky[b] / plan->cell[1], x, y);
        norm += crealf(coef[b]) * crealf(coef[b]) + cimagf(coef[b]) * cimagf(coef[b]);
    }
    float scale = (float)(1 / sqrt(norm));
    for (int b = 0; b < plan->n_beams; b++) coef[b] *= scale;
}
