/* The frozen-phonon steps of a campaign's units (mpi/campaign.c): a configuration's
 * transmission functions built or received inside a group, built ahead on a helper
 * thread, and the potential slices that [output] save_potential writes. */
#ifndef STEM_PHONON_LOOP_H
#define STEM_PHONON_LOOP_H

#include <pthread.h>

#include "algorithm.h"
#include "../comm/comm.h"
#include "phonon_steps.h"
#include "transmission_split.h"
#include "../src/engine.h"
#include "../src/potential.h"

/* Configuration c's transmission functions (prebuilt: already in trans) on every rank of the group;
 * collective over m->group. split (may be NULL, or off): the node's ranks build its slices
 * together below one slice (transmission_split.h). */
int stem_phonon_transmission(const stem_mpi *m, const stem_engine *engine, const stem_plan *plan,
                             const stem_atoms *atoms, const stem_potential_table *table, int c, int prebuilt,
                             stem_complex *trans, const stem_shared_buffer *trans_node, stem_transmission_split *split);
/* Test-only hooks: STEMSIM_TEST_FAIL_RANK=r makes rank r fail at site "campaign" (as the
 * units start); STEMSIM_TEST_FAULT=SITE:r makes rank r fail at SITE ("transmission": its
 * receive buffer for the broadcast transmission functions cannot be allocated). */
int stem_phonon_injected_failure(const stem_mpi *m, const char *site);

/* Ahead: while an engine that leaves the host's cores idle (the GPU) runs configuration c,
 * the group leader builds the configuration it runs next (known where the schedule is
 * static) on a helper thread into a second buffer. Zero-initialise, then set the inputs. */
typedef struct {
    pthread_t thread;
    const stem_engine *engine;
    const stem_plan *plan;
    const stem_atoms *atoms;
    const stem_potential_table *table;
    stem_complex *trans;
    int c, err, started;
} stem_build_ahead;
void stem_build_ahead_start(stem_build_ahead *b, int c, stem_complex *into);
/* Waits for the helper; returns the configuration now in its buffer, or -1 (none started, or failed). */
int stem_build_ahead_finish(stem_build_ahead *b);

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
