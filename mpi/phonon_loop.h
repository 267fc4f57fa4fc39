/* The frozen-phonon loop of one run: the configurations over the rank groups, the
 * transmission functions built or received inside a group, the algorithm, the
 * reduction. (A series of runs is mpi/series_campaign.c.) */
#ifndef STEM_PHONON_LOOP_H
#define STEM_PHONON_LOOP_H

#include "algorithm.h"
#include "comm.h"
#include "phonon_steps.h"
#include "../src/engine.h"
#include "../src/potential.h"

/* Runs every configuration of this rank's group through the plan's algorithm
 * on the engine and leaves in res the configuration-averaged result of this
 * rank's probes (same on all groups). smatrix_io: PRISM's S-matrices stored or
 * read back (NULL: neither); when it loads them no potential is built. */
int stem_phonon_loop_run(const stem_mpi *m, const stem_plan *plan, const stem_engine *engine, const stem_atoms *atoms,
                         const stem_atom_potential *potentials, const stem_smatrix_io *smatrix_io, stem_result *res);

/* Shared with the series campaign (series_campaign.h), collective over m->group. */
/* Configuration c's transmission functions (prebuilt: already in trans) on every rank of the group. */
int stem_phonon_transmission(const stem_mpi *m, const stem_engine *engine, const stem_plan *plan,
                             const stem_atoms *atoms, const stem_potential_table *table, int c, int prebuilt,
                             stem_complex *trans, const stem_shared_buffer *trans_node);
/* [output] save_potential: where /potential's slices come from. Each rank builds its own
 * lookup table on first use (the loop's is gone by then) and the displaced atoms of the
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
/* stem_output_potential's callback: configuration c's slices [s0, s1) into V (t: 0). */
int stem_potential_source_slices(void *src, int t, int c, int s0, int s1, float *V);
void stem_potential_source_free(stem_potential_source *src);

#endif
