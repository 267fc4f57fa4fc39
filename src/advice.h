/* Convergence advice: what the plan alone says about the accuracy of a run
 * (band limit, slices, pixel size, focal points, PRISM window), and the line
 * that turns a detector's mean and standard error over frozen-phonon
 * configurations into advice. Each check adds lines that say what was found,
 * why it matters and what to change; none when the check passes. The criteria
 * and their numbers are documented in docs/accuracy.md ("Convergence advice"). */
#ifndef STEM_ADVICE_H
#define STEM_ADVICE_H

#include <stdio.h>

#include "physics.h"
#include "plan.h"

#define STEM_ADVICE_MAX 40
#define STEM_ADVICE_LEN 512

typedef struct {
    int n;
    char check[STEM_ADVICE_MAX][24];             /* the check that wrote the line, e.g. "band_limit" */
    char line[STEM_ADVICE_MAX][STEM_ADVICE_LEN]; /* found; why; what to change */
} stem_advice;

/* Criteria (docs/accuracy.md, Convergence advice). */
#define STEM_ADVICE_DOF_FRACTION 0.125 /* slice <= this fraction of the depth of field lambda / alpha^2 */
#define STEM_ADVICE_WALK_AIRY 0.61     /* theta_out dz <= this times lambda / alpha (the Airy radius) */
#define STEM_ADVICE_CROSS_SECTION 0.99 /* the band holds this fraction of the heaviest element's sigma_el */
#define STEM_ADVICE_WINDOW_LEAK 0.01   /* PRISM: at most this fraction of the probe outside its window */
#define STEM_ADVICE_SCAN_NYQUIST 0.25  /* source_size: scan step <= this times lambda / alpha */
/* Heavy atoms (Z >= STEM_ADVICE_HEAVY_Z) scatter through several slices to beyond theta + alpha:
 * the band must reach this factor times it (Au [001], 300 keV, 20 mrad, 70-200 mrad: -1.4% at
 * 20 A and -2.1% at 245 A with a band of 1.02 (theta + alpha), converged at 1.17; thick_au.py) */
#define STEM_ADVICE_HEAVY_Z 57
#define STEM_ADVICE_HEAVY_BAND 1.15

/* The checks, one function each; every one appends to a (never fails: advice
 * that cannot be computed is left out). */
void stem_advice_band_limit(const stem_plan *plan, stem_advice *a);
void stem_advice_slice_depth_of_field(const stem_plan *plan, stem_advice *a);
void stem_advice_slice_angle(const stem_plan *plan, stem_advice *a);
/* potentials[Z] of every Z present (present[Z] != 0), the parametrisation's. */
void stem_advice_pixel_potential(const stem_plan *plan, const int *present, const stem_atom_potential *potentials,
                                 stem_advice *a);
void stem_advice_focal_points(const stem_plan *plan, stem_advice *a);
void stem_advice_prism_window(const stem_plan *plan, stem_advice *a);
void stem_advice_source_scan(const stem_plan *plan, stem_advice *a);
/* Every check; atoms and potentials may be NULL (then the pixel check is skipped). */
void stem_advice_plan(const stem_plan *plan, const stem_atoms *atoms, const stem_atom_potential *potentials,
                      stem_advice *a);
/* "advice (docs/accuracy.md: How accurate is my simulation?):" and one "  - " line each, or
 * "advice: none ..." */
void stem_advice_print(const stem_advice *a, FILE *out);
/* The lines joined by newlines ("" when there are none; malloc'd, NULL: no memory):
 * the output file's root attribute "advice". */
char *stem_advice_to_text(const stem_advice *a);

/* Quantities the checks use, exposed for the tests. The fraction of an element's first-Born
 * elastic cross-section, the integral of |f_e(q)|^2 2 pi q dq, that lies within q (1/Angstrom). */
double stem_advice_cross_section_within(const stem_atom_potential *p, double q);
/* The q within which that fraction is `fraction`. */
double stem_advice_cross_section_q(const stem_atom_potential *p, double fraction);
/* The fraction of the plan's probe intensity (in vacuum, with C10 + extra_defocus)
 * outside a centred window of wx x wy Angstrom. */
double stem_advice_probe_outside(const stem_plan *plan, double extra_defocus, double wx, double wy);

/* From the run: one named detector's mean over n configurations with its standard
 * error, as the line
 *   "HAADF 70-200 mrad: 0.0335 +- 0.0004 (1.2%) over 8 configurations; 32 would bring it to 0.6%"
 * (the suggestion: four times the configurations halve the error, down to a 0.5% target;
 * none once the error is at most 0.5%), or with n = 1
 *   "HAADF 70-200 mrad: 0.0335 from 1 configuration: no error can be estimated; run >= 8 for an error bar".
 * outer_mrad >= 1e8 is written "max". Returns the length written (snprintf's). */
int stem_advice_error_line(const char *name, double inner_mrad, double outer_mrad, double mean, double std_error,
                           int n_configs, char *out, size_t len);

#endif
