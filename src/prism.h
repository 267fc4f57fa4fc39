/* PRISM on CPUs (Ophus 2017): compact S-matrix and the output step. */
#ifndef STEM_PRISM_H
#define STEM_PRISM_H

#include "detector.h"
#include "prism_tiles.h"

/* The S-matrix's layout: each beam's waves at every detection plane (stem_plan_n_planes: a
 * thickness series records the S-matrix at each depth, else the exit surface only), the
 * plane after the beam: S[beam][plane][crop_ny][crop_nx]. Complex numbers from one beam to
 * the next; plane k of an S-matrix starts k * crop_nx * crop_ny after it. */
static inline size_t stem_prism_beam_stride(const stem_plan *plan)
{
    return (size_t)stem_plan_n_planes(plan) * plan->crop_nx * plan->crop_ny;
}

/* Propagate beams [first, first + count) and store each exit wave (and the waves at the
 * detection planes above it) cut to the Fourier box and transformed back:
 * out[beam - first][plane][crop_ny][crop_nx]. Which rank or thread computes a beam, and with
 * which others, does not change it. */
int stem_prism_smatrix_beams(const stem_plan *plan, const stem_complex *trans, int first, int count, stem_complex *out);
/* Output step for this rank's probes on one detection plane's S-matrix over a tile that holds
 * their windows (prism_tiles.h): windows of 1/f of the cell around each probe, weighted by the
 * probe's beam coefficients, summed, FFT, |.|^2, detectors. */
int stem_prism_output(const stem_plan *plan, const stem_prism_view *S, const stem_detector *det, stem_result *res);

/* The output step's windows of a run of n <= STEM_PRISM_RUN probes of one scan row
 * (separate so that tests/unit/test_prism.c checks it against the plain sum): window t
 * (at window + t * win_stride, wx x wy) is sum_b coef[t][b] S[pixel][b] over the box
 * pixels from (ox[t], oy) on, wrapped periodically, read from the tile; ox ascending. coef_re and coef_im
 * are the coefficients transposed, [b][STEM_PRISM_RUN], entries t >= n zero. Each value
 * is the sum in beam order with the plain complex product, as a probe alone would get it,
 * so results do not depend on how probes are grouped into runs. */
enum { STEM_PRISM_RUN = 16 };
void stem_prism_gather_windows(const stem_prism_view *S, int cx, int cy, int nb, const float *coef_re,
                               const float *coef_im, const int *ox, int oy, int n, int wx, int wy, stem_complex *window,
                               size_t win_stride);

#endif
