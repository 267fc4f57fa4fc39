/* Spatial partial coherence: the demagnified image of a finite electron source,
 * a Gaussian of full width at half maximum [probe] source_size, blurs every
 * real-space output over the scan (rings, images, DPC, total intensity). 4D patterns are left
 * as they are (each is one probe position's). */
#ifndef STEM_COHERENCE_H
#define STEM_COHERENCE_H

#include "plan_types.h"

/* Whether the scan covers the cell exactly along x (axis 0) or y (1): then the
 * blur wraps around periodically; otherwise it mirrors at the scan's edges
 * (d c b a | a b c d | d c b a, scipy.ndimage's "reflect"). */
int stem_scan_is_periodic(const stem_plan *plan, int axis);
/* Blur data [scan_ny][scan_nx][width] (the whole scan) in place with the Gaussian of
 * plan->opt.source_size (FWHM, Angstrom): the exact convolution of the band-limited
 * interpolant of the scan with the continuous Gaussian, done in Fourier space, so that
 * it does not depend on the scan step (a sampled cosine of frequency q is multiplied by
 * exp(-2 pi^2 sigma^2 q^2)): along a periodic axis the DFT of the samples, otherwise the
 * DFT of their mirrored extension (a DCT-II). Separable: along x, then along y. */
int stem_source_blur(const stem_plan *plan, double *data, long width);
/* Warn (stem_warn) when a source size is set and the scan does not cover the cell
 * periodically along both axes (its edges are then mirrored, an approximation); 1 if so. */
int stem_source_blur_warn(const stem_plan *plan);

/* Temporal partial coherence: a Gaussian spread of defocus of standard deviation
 * sigma = [probe] focal_spread (chromatic aberration times the spread of beam
 * energies, lens current noise) makes the image the incoherent, weighted mean of
 * the images at defoci C10 + dC_i. The n points and weights of Gauss-Hermite
 * quadrature, exact for a polynomial dependence on defocus up to degree 2n - 1. */
#define STEM_MAX_FOCAL_POINTS 64
/* x[i], w[i] (i < n <= STEM_MAX_FOCAL_POINTS) for the integral of exp(-x^2) f(x);
 * x ascending, the weights sum to sqrt(pi). Golub-Welsch: the nodes are the
 * eigenvalues of the Jacobi matrix of the Hermite polynomials, the weights
 * sqrt(pi) times the squared first components of its eigenvectors. */
int stem_gauss_hermite(int n, double *x, double *w);
/* The plan's defocus offsets (Angstrom, added to C10) and weights (sum 1); returns
 * their number (1 with offset 0 and weight 1 without a focal spread). */
int stem_focal_points(const stem_plan *plan, double *offset, double *weight);

/* focal_points = auto. Defocus enters an intensity only through the phase factors
 * exp(i pi lambda (q^2 - q'^2) dC) of pairs of the wave's directions q, q' (the probe's
 * aperture; hrtem: the objective aperture, else the band limit): with dC = sqrt(2)
 * sigma x, each is exp(i K x), K up to sqrt(2) sigma pi lambda q_max^2, whose exact
 * Gaussian average is exp(-K^2 / 4). The error of the n-point rule, the largest over
 * K in [0, K_max] (sampled finely): */
#define STEM_FOCAL_TOLERANCE 1e-3
double stem_focal_quadrature_error(int n, double k_max);
/* K_max of a plan (0 without a focal spread): q_max the farthest direction from the
 * centre of chi (the beam tilt) that carries intensity before the sample. */
double stem_focal_k_max(const stem_plan *plan);
/* The fewest points (1..STEM_MAX_FOCAL_POINTS) whose error is below tol for K_max;
 * STEM_MAX_FOCAL_POINTS when none is (the advice says so). */
int stem_focal_points_needed(double k_max, double tol);

#endif
