/* The one driver of every run: a campaign of points (the [series] points, or the single
 * point of a plain run) whose units, (tilt, configuration) pairs, are scheduled over the
 * rank groups, computed, added to the points' exact sums, finished and written through one
 * output call.
 *
 *   shape     points, units, each point's plan (a plain run: its one plan)   campaign.c
 *   unit      the tilt's model, its configuration's transmission functions (or the
 *             distributed FFT's slabs), stem_algorithm_run_points for its points   campaign_unit.c
 *   schedule  static rounds (round r: the (r x groups + group)-th unit not yet done), a safe
 *             point between rounds                                          campaign_rounds.c
 *   sums      every unit's values added as integers (src/accumulator.h), so no bit depends
 *             on the groups, the ranks or the stops; a checkpointed run (the rule:
 *             stem_campaign_checkpointed) stores them every checkpoint_interval, at a
 *             signal and at the end, and a resume loads them (campaign_sums.c, checkpoint.h)
 *   finish    each point from the sums: means, standard errors, PACBED, source-size blur,
 *             the result check                                             campaign_output.c
 *   output    stem_output_write (io/output.h), one call for every run. */
#ifndef STEM_CAMPAIGN_H
#define STEM_CAMPAIGN_H

#include "../io/output.h"
#include "../src/engine.h"
#include "../src/series.h"
#include "../comm/comm.h"

typedef struct {
    const stem_mpi *m;
    const stem_config *cfg;
    const stem_series *series; /* no points (n_points 0): a plain run, one point */
    const stem_plan *plan;     /* a series': built from the thickest tilt, its memory covers every tilt */
    const stem_engine *engine;
    const stem_atoms *atoms; /* a series': tiled, not yet rotated (stem_atoms_tile); else prepared */
    const stem_atom_potential *potentials;
    stem_output_target *target; /* a resumed 4D stream adopts the kept patterns as its temporary */
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
