/* PRISM's compact S-matrices stored in a stemsim output (/smatrix and /smatrix_beams,
 * written with [output] save_smatrix) and read back instead of computed
 * ([simulation] smatrix_file). */
#ifndef STEM_SMATRIX_FILE_H
#define STEM_SMATRIX_FILE_H

#include "../src/config.h"
#include "../src/plan.h"
#include "stored_file.h"

#define STEM_SMATRIX_DATASET "/smatrix"
#define STEM_SMATRIX_BEAMS_DATASET "/smatrix_beams"
/* a campaign's: <group>/tilt_<t> for each sample tilt t, laid out as /smatrix (one
 * /smatrix_beams for all) */
#define STEM_SMATRIX_TILTS_GROUP "/smatrix_tilts"

/* The file at plan->opt.smatrix_file holds S-matrices for this plan: float
 * /smatrix [configurations >= n_configs][n_beams][crop_ny][crop_nx][2] whose attributes
 * (wavelength, grid, cell, slices, interpolation) match the plan, and /smatrix_beams
 * [n_beams][2] the plan's beams in order; anything else is refused naming what differs
 * (STEM_ERR_INPUT). The file must be finished (its complete mark) and /smatrix written;
 * the keys the S-matrix depends on beyond its attributes (tilt, rotation, parametrisation,
 * projection, cutoff, transmission oversampling, thermal displacements and their seed)
 * must be cfg's as the writer's config records them (STEM_ERR_CONFIG naming the key).
 * Serial HDF5, any rank. A campaign's point plan (plan->campaign_tilt) reads its tilt's
 * dataset instead; tilt (NULL for a run) is checked against the file's
 * (stem_stored_check_tilt) in place of the keys [sample] tilt_x, tilt_y. */
int stem_smatrix_file_check(const stem_plan *plan, const stem_config *cfg, const stem_stored_tilt *tilt);
/* Beams [b0, b1) of configuration c into S ([beam - b0][crop_ny][crop_nx]); values that
 * are not finite, or a beam whose mean intensity is not in (0, 1.0001] (a unit plane
 * wave's is 1), are refused (STEM_ERR_INPUT). */
int stem_smatrix_file_read(const stem_plan *plan, int c, int b0, int b1, stem_complex *S);

#endif
