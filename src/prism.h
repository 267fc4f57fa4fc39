/* PRISM on CPUs (Ophus 2017): compact S-matrix and the output step. */
#ifndef STEM_PRISM_H
#define STEM_PRISM_H

#include "detector.h"

/* Propagate this rank's beams [beam_begin, beam_end) and store each exit wave
 * cut to the Fourier box and transformed back: S_local[beam - beam_begin][crop_ny][crop_nx]. */
int stem_prism_smatrix_local(const stem_plan *plan, const stem_complex *trans, stem_complex *S_local);
/* Reorder all beams [beam][pixel] into the beam-fastest layout [pixel][beam]
 * that the output step reads contiguously. */
void stem_prism_arrange(const stem_plan *plan, const stem_complex *by_beam, stem_complex *by_pixel);
/* The same for pixels [begin, end) of the box only (a share of the work). */
void stem_prism_arrange_pixels(const stem_plan *plan, const stem_complex *by_beam, stem_complex *by_pixel, size_t begin,
                               size_t end);
/* Output step for this rank's probes: windows of 1/f of the cell around each
 * probe, weighted by the probe's beam coefficients, summed, FFT, |.|^2, detectors. */
int stem_prism_output(const stem_plan *plan, const stem_complex *S, const stem_detector *det, stem_result *res);
/* First pixel (coarse grid, before wrapping) of the window around position x. */
int stem_prism_window_origin(double x, double cell, int crop, int window);

#endif
