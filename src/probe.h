/* The probe: aperture, aberration phase chi(q), shift, normalisation. */
#ifndef STEM_PROBE_H
#define STEM_PROBE_H

#include "plan_types.h"

/* Aberration phase chi in rad at spatial frequency (qx, qy) in 1/Angstrom. */
double stem_probe_chi(const stem_plan *plan, double qx, double qy);
/* Complex coefficient of the plane wave (qx, qy) for a probe centred at (x, y),
 * without normalisation: exp(-i chi) exp(-2 pi i q.r) inside the aperture, else 0. */
stem_complex stem_probe_coefficient(const stem_plan *plan, double qx, double qy, double x, double y);
/* The aperture's weight at q (1 / Angstrom): 1 inside, 0 outside; with [probe] soft_aperture
 * a linear ramp one grid pixel wide across the edge (abTEM's soft aperture). */
double stem_probe_aperture(const stem_plan *plan, double qx, double qy);
/* Probe in Fourier space on the full grid (FFT order), sum |psi(q)|^2 = 1. */
void stem_probe_fourier(const stem_plan *plan, double x, double y, stem_complex *out);
/* PRISM coefficients for the plan's beams, normalised: sum |c|^2 = 1. */
void stem_probe_beam_coefficients(const stem_plan *plan, double x, double y, stem_complex *coef);

#endif
