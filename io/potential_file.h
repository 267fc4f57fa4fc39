/* Potential slices stored in a stemsim output (/potential, written with [output]
 * save_potential) and read back instead of built ([simulation] potential_file). */
#ifndef STEM_POTENTIAL_FILE_H
#define STEM_POTENTIAL_FILE_H

#include "../src/config.h"
#include "../src/plan.h"
#include "stored_file.h"

#define STEM_POTENTIAL_DATASET "/potential"
/* a campaign's: <group>/tilt_<t> for each sample tilt t, laid out as /potential */
#define STEM_POTENTIAL_TILTS_GROUP "/potential_tilts"

/* The file at plan->opt.potential_file holds slices for this plan: a float dataset
 * /potential [configurations >= plan->n_configs][n_slices][ny][nx] whose attributes
 * slice_thickness_angstrom, cell_x_angstrom, cell_y_angstrom match the plan; anything
 * else is refused naming what differs (STEM_ERR_INPUT). The file must be finished (its
 * complete mark), the dataset written, each configuration used not all zeros; the keys
 * the slices depend on (tilt, rotation, parametrisation, projection, cutoff, thermal
 * displacements and their seed) must be cfg's as the writer's config records them
 * (STEM_ERR_CONFIG naming the key). Serial HDF5, any rank.
 * A campaign's point plan (plan->campaign_tilt) reads its tilt's dataset instead; tilt (NULL
 * for a run) is checked against the file's (stem_stored_check_tilt) in place of the keys
 * [sample] tilt_x, tilt_y. */
int stem_potential_file_check(const stem_plan *plan, const stem_config *cfg, const stem_stored_tilt *tilt);
/* Slices [s0, s1) of configuration c into V ([slice - s0][ny][nx], V Angstrom); values
 * that are not finite or beyond any atom's potential are refused (STEM_ERR_INPUT). */
int stem_potential_file_read(const stem_plan *plan, int c, int s0, int s1, float *V);
/* Rows [row0, row0 + rows) of slice s of configuration c (the distributed FFT's slab), into V. */
int stem_potential_file_read_rows(const stem_plan *plan, int c, int s, long row0, long rows, float *V);

#endif
