/* A campaign of units with checkpoints: the series points ([series]: tilts,
 * defoci) times the frozen-phonon configurations, run by the rank groups and
 * written as one file with leading series axes.
 *
 * A unit is one (tilt, configuration) pair: it computes every defocus of its
 * tilt, which share its transmission functions and, under PRISM, its S-matrix.
 * Groups take units dynamically (an MPI-3 atomic counter on rank 0; a group that
 * finishes early takes the next). Each finished unit is gathered to its group's
 * leader and stored in the checkpoint (checkpoint.h). The result of a point is
 * the sum of its units read back in configuration order (each unit one configuration's
 * values, from which its standard errors are formed as they are added), so no number depends on
 * which group ran which unit, on how often the job was stopped, or on the rank
 * count (beyond the 1e-7 of float sums). A run finds the units already in the
 * checkpoint and computes only the others. */
#ifndef STEM_SERIES_CAMPAIGN_H
#define STEM_SERIES_CAMPAIGN_H

#include "../io/output.h"
#include "../src/engine.h"
#include "../src/series.h"
#include "comm.h"

typedef struct {
    const stem_mpi *m;
    const stem_config *cfg;
    const stem_series *series;
    const stem_plan *plan; /* built from the thickest tilt: its memory covers every tilt */
    const stem_engine *engine;
    const stem_atoms *atoms; /* tiled, not yet rotated (stem_atoms_tile) */
    const stem_atom_potential *potentials;
    const stem_output_target *target;
    const stem_output_texts *texts;
    int restart; /* --restart: discard the checkpoint first */
} stem_series_job;

/* Whether this config runs as a checkpointed campaign ([output] checkpoint, [series]). */
int stem_series_campaign_wanted(const stem_config *cfg);
/* The checkpoint directory of the config. */
void stem_series_checkpoint_dir(const stem_config *cfg, char *out, size_t n);
/* The model rotated to the series' thickest tilt (the plan's memory is the largest); the
 * depths resolved on the thinnest tilt's slices (the depths every tilt reaches). */
int stem_series_thickest(const stem_atoms *tiled, const stem_config *cfg, stem_series *s, stem_atoms *out);
/* Collective over job->m->world: the campaign, then the output (published) and the
 * checkpoint removed. STEM_STOPPED_CHECKPOINTED when a signal stopped it. */
/* --dry-run: what a real run would do with the campaign's checkpoint (checkpoint.h), printed;
 * the real run's refusal returned (collective). */
int stem_series_campaign_survey(const stem_series_job *job);
int stem_series_campaign_run(const stem_series_job *job);

#endif
