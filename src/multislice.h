/* CPU multislice engine and the propagation step shared with PRISM. */
#ifndef STEM_MULTISLICE_H
#define STEM_MULTISLICE_H

#include "detector.h"
#include "fft.h"

/* Fresnel propagator exp(-i pi lambda dz q^2), zero beyond the band limit,
 * with the 1/N of the FFT round trip folded in: stem_propagator_count grids, the
 * slices' (dz) and, where the last slice is thinner (plan.h), the last one's (dz_last). */
int stem_propagator_count(const stem_plan *plan);
int stem_propagator_build(const stem_plan *plan, stem_complex *prop);
/* Allocated (stem_fft_free) and built; NULL when out of memory. */
stem_complex *stem_propagator_alloc(const stem_plan *plan);
/* The propagator after slice s among those stem_propagator_build made. */
static inline const stem_complex *stem_propagator_of(const stem_plan *plan, const stem_complex *prop, int s)
{
    return s == plan->n_slices - 1 && stem_plan_thin_last(plan) ? prop + (size_t)plan->nx * plan->ny : prop;
}
/* The value at one frequency (qx, qy), 1/Angstrom, over a thickness dz (Angstrom). */
stem_complex stem_propagator_at(const stem_plan *plan, double dz, double qx, double qy);
/* w[k] *= t[k] for n values, written out in real arithmetic: C's complex product checks
 * for infinities and NaNs after each multiply, which keeps the loop from vectorising; for
 * finite numbers both give the same two roundings per part. */
void stem_multiply_grid(stem_complex *w, const stem_complex *t, size_t n);
/* Propagate `batch` waves through slices [from, to) (prop: stem_propagator_build's). The waves come in real
 * space when from = 0, else as this function left them after slice from - 1;
 * on return they hold the band-limited waves below slice to - 1 in Fourier
 * space, normalised so that a unit probe gives sum |Psi(q)|^2 = 1. */
void stem_multislice_propagate(const stem_plan *plan, const stem_complex *trans, const stem_complex *prop,
                               const stem_fft *fft, stem_complex *waves, int batch, int from, int to);
/* |Psi|^2 of a full-grid Fourier wave cut to the detector grid (f = 1). */
void stem_multislice_intensity(const stem_plan *plan, const stem_complex *wave, float *intensity);
/* Simulate this rank's probes [probe_begin, probe_end) for one configuration:
 * res[k] for each detection plane k (stem_plan_n_planes). */
int stem_multislice_run(const stem_plan *plan, const stem_complex *trans, const stem_detector *det, stem_result *res);

#endif
