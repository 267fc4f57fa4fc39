/* The one driver of every run: a campaign of points (the [series] points, or the single
 * point of a plain run) whose units, (tilt, configuration) pairs, are scheduled over the
 * rank groups, computed, handed to a sink, finished and written through one output call.
 *
 *   shape     points, units, each point's plan (a plain run: its one plan)
 *   schedule  static rounds (unit u of round r: u = r x groups + group) for the memory
 *             sink; dynamic for the checkpoint sink (an MPI-3 atomic counter on rank 0:
 *             a group that finishes early takes the next unit)
 *   unit      the tilt's model, its configuration's transmission functions (or the
 *             distributed FFT's slabs), stem_algorithm_run_points for its points
 *   sink      where a finished unit goes, chosen by one rule (stem_campaign_checkpointed):
 *             - memory (no checkpoint): the unit's values are added straight into the
 *               group's running sums, configuration after configuration, and the groups'
 *               sums are reduced at the end (the frozen-phonon loop of a single run);
 *             - checkpoint ([output] checkpoint = on, or a [series]/depths campaign with
 *               checkpoint = auto): each unit is computed into zeroed results, gathered to
 *               its group's leader and stored (checkpoint.h); a point is the sum of its
 *               units read back in configuration order, so no number depends on which
 *               group ran which unit, on how often the job was stopped, or on the rank
 *               count (beyond the 1e-7 of float sums). A run finds the units already in
 *               the checkpoint and computes only the others.
 *             The two sinks add in different orders, so each keeps the bits it always gave.
 *   finish    sums, standard errors, PACBED, source-size blur, the result check
 *   output    stem_output_write (io/output.h), one call for every run. */
#ifndef STEM_CAMPAIGN_H
#define STEM_CAMPAIGN_H

#include "../io/output.h"
#include "../src/engine.h"
#include "../src/series.h"
#include "comm.h"

typedef struct {
    const stem_mpi *m;
    const stem_config *cfg;
    const stem_series *series; /* no points (n_points 0): a plain run, one point */
    const stem_plan *plan;     /* a series': built from the thickest tilt, its memory covers every tilt */
    const stem_engine *engine;
    const stem_atoms *atoms; /* a series': tiled, not yet rotated (stem_atoms_tile); else prepared */
    const stem_atom_potential *potentials;
    const stem_output_target *target;
    const stem_output_texts *texts;
    int restart;       /* --restart: discard the checkpoint first */
    stem_result *keep; /* --convergence: a plain run's finished result left here (the caller frees
                          it), nothing written */
} stem_campaign_job;

/* The sink rule: whether this config's units go to a checkpoint ([output] checkpoint = on,
 * or auto with a [series] or depths). A [series] with checkpoint = off is refused in setup. */
int stem_campaign_checkpointed(const stem_config *cfg);
/* The checkpoint directory of the config. */
void stem_series_checkpoint_dir(const stem_config *cfg, char *out, size_t n);
/* The model rotated to the series' thickest tilt (the plan's memory is the largest); the
 * depths resolved on the thinnest tilt's slices (the depths every tilt reaches). */
int stem_series_thickest(const stem_atoms *tiled, const stem_config *cfg, stem_series *s, stem_atoms *out);
/* --dry-run: what a real run would do with the campaign's checkpoint (checkpoint.h), printed;
 * the real run's refusal returned (collective). */
int stem_campaign_survey(const stem_campaign_job *job);
/* Collective over job->m->world: the units, the finish and the output (published), the
 * checkpoint removed. STEM_STOPPED_CHECKPOINTED when a signal stopped a checkpointed one. */
int stem_campaign_run(const stem_campaign_job *job);

#endif
