/* Spatial partial coherence: the demagnified image of a finite electron source,
 * a Gaussian of full width at half maximum [probe] source_size, blurs every
 * real-space output over the scan (rings, images, DPC, total intensity). 4D patterns are left
 * as they are (each is one probe position's). */
#ifndef STEM_COHERENCE_H
#define STEM_COHERENCE_H

#include "plan.h"

/* Whether the scan covers the cell exactly along x (axis 0) or y (1): then the
 * blur wraps around periodically; otherwise it mirrors at the scan's edges
 * (d c b a | a b c d | d c b a, scipy.ndimage's "reflect"). */
int stem_scan_is_periodic(const stem_plan *plan, int axis);
/* Blur data [scan_ny][scan_nx][width] (the whole scan) in place with the
 * Gaussian of plan->opt.source_size, sampled at the scan step and cut at 4
 * standard deviations, normalised to sum 1 (scipy.ndimage.gaussian_filter's
 * kernel). Separable: along x, then along y. */
int stem_source_blur(const stem_plan *plan, double *data, long width);

#endif
