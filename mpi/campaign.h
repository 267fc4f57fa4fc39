/* Campaign scheduling: frozen-phonon configurations over rank groups, the
 * potential broadcast inside a group, the algorithm, the reduction. */
#ifndef STEM_CAMPAIGN_H
#define STEM_CAMPAIGN_H

#include "comm.h"

#include "algorithm.h"
#include "../src/engine.h"
#include "../src/potential.h"

/* Runs every configuration of this rank's group through the plan's algorithm
 * on the engine and leaves in res the configuration-averaged result of this
 * rank's probes (same on all groups). smatrix_io: PRISM's S-matrices stored or
 * read back (NULL: neither); when it loads them no potential is built. */
int stem_campaign_run(const stem_mpi *m, const stem_plan *plan, const stem_engine *engine, const stem_atoms *atoms,
                      const stem_atom_potential *potentials, const stem_smatrix_io *smatrix_io, stem_result *res);

/* Steps the series campaign (series_campaign.h) shares, collective over m->group. */
/* Configuration c's transmission functions (prebuilt: already in trans) on every rank of the group. */
int stem_campaign_transmission(const stem_mpi *m, const stem_engine *engine, const stem_plan *plan,
                               const stem_atoms *atoms, const stem_potential_table *table, int c, int prebuilt,
                               stem_complex *trans, const stem_shared_buffer *trans_node);
/* A safe point, collective over m->world: every rank learns whether any failed (its
 * message printed once) or was asked to stop, and all leave with the same status. */
int stem_campaign_safe_point(const stem_mpi *m, int err);
/* The potential lookup table, built in shares over the group; err: a failure before it, agreed here. */
int stem_campaign_lookup_table(const stem_mpi *m, const stem_plan *plan, const stem_atoms *atoms,
                               const stem_atom_potential *potentials, int err, stem_potential_table *table);
/* Each named image's squared standard errors summed over the whole scan (res->image_se2,
 * from the first group's ranks), on every rank; collective over m->world (res may be NULL). */
int stem_campaign_scan_errors(const stem_mpi *m, const stem_plan *plan, stem_result *res);
/* The source-size blur of every real-space channel of res (this rank's probes). */
int stem_campaign_blur(const stem_mpi *m, const stem_plan *plan, stem_result *res);

/* [output] save_potential: where /potential's slices come from. Each rank builds its own
 * lookup table on first use (the campaign's is gone by then) and the displaced atoms of the
 * last configuration asked for; with [simulation] potential_file they are read back. */
typedef struct {
    const stem_plan *plan;
    const stem_atoms *atoms;
    const stem_atom_potential *potentials;
    stem_potential_table table;
    stem_atoms displaced;
    int displaced_config; /* -1: none yet */
} stem_potential_source;

void stem_potential_source_init(stem_potential_source *src, const stem_plan *plan, const stem_atoms *atoms,
                                const stem_atom_potential *potentials);
/* stem_output_potential's callback: configuration c's slices [s0, s1) into V. */
int stem_potential_source_slices(void *src, int c, int s0, int s1, float *V);
void stem_potential_source_free(stem_potential_source *src);

#endif
