/* Steps of the frozen-phonon loop (phonon_loop.h) that the series campaign and the
 * distributed plane wave (dist_hrtem.h) share. */
#ifndef STEM_PHONON_STEPS_H
#define STEM_PHONON_STEPS_H

#include "../comm/comm.h"
#include "../comm/node_shared.h"
#include "../src/potential.h"

/* A safe point, collective over m->world: every rank learns whether any failed (its
 * message printed once) or was asked to stop, and all leave with the same status. */
int stem_phonon_safe_point(const stem_mpi *m, int err);
/* The potential lookup table, built in shares over the group; err: a failure before it, agreed here.
 * node (NULL: each rank its own copy): where the node's one shared copy lives when the group shares
 * node memory (free it with stem_shared_free after stem_potential_table_free). */
int stem_phonon_lookup_table(const stem_mpi *m, const stem_plan *plan, const stem_atoms *atoms,
                             const stem_atom_potential *potentials, int err, stem_potential_table *table,
                             stem_shared_buffer *node);
/* Each named image's squared standard errors summed over the whole scan (res->image_se2,
 * from the first group's ranks), on every rank; collective over m->world (res may be NULL). */
int stem_phonon_scan_errors(const stem_mpi *m, const stem_plan *plan, stem_result *res);
/* The source-size blur of every real-space channel of res (this rank's probes). */
int stem_phonon_blur(const stem_mpi *m, const stem_plan *plan, stem_result *res);

#endif
