/* The final results checked before they are published: a result with a value that is
 * not a finite number, or a probe that lost all its intensity or gained some, is a
 * numerical failure (or damaged input that slipped through), never a finished
 * simulation, so it must not reach a file marked complete. */
#ifndef STEM_RESULT_CHECK_H
#define STEM_RESULT_CHECK_H

#include "detector.h"

/* Total intensity per probe: at most the incident beam's 1 (propagation is unitary and
 * the band limit only takes some away), with room for float rounding. */
#define STEM_RESULT_TOTAL_MAX 1.0001

/* The most a probe's total may be under this plan: STEM_RESULT_TOTAL_MAX, times fx fy for
 * PRISM with interpolation (its probe is periodic with f_x f_y copies in the cell, and the
 * window around one may catch intensity the sample scattered out of the others: about
 * 1e-4 in the small tests, so only a gross gain is caught there). */
double stem_result_total_max(const stem_plan *plan);

/* Every value of every channel res holds finite; every probe's total intensity (inside
 * the band limit) in (0, stem_result_total_max]; with_scan: the scan channels (PACBED)
 * finite too (where their sums over the ranks were reduced).
 * A failure is STEM_ERR_INTERNAL naming the channel, probe and value; `where` ("" or
 * " (series point 3)") is added to the message. Finalised results of the ranks that
 * write; no communication. The test hook STEMSIM_TEST_POISON_RESULT = nan | zero | gain
 * first spoils the first local probe's total intensity (tests/integration/faults.py). */
int stem_result_check(const stem_plan *plan, stem_result *res, int with_scan, const char *where);
/* One per-probe channel's values finite (a streamed 4D block's patterns, before they are written). */
int stem_result_check_channel(const stem_plan *plan, const stem_result *res, int ch, const char *where);

#endif
