/* The campaign's exact sums (src/accumulator.h) over the ranks and on disk: every rank adds
 * the units its group computes into its own sums; a collect moves them to their owners (the
 * per-probe parts summed over the groups into the first group's ranks, the scan rows over
 * every rank into rank 0) and zeroes the others', so that no value is ever counted twice and
 * integer sums make the owners' totals independent of which group ran what. A store then
 * streams the owners' sums, in stem_acc_array order, through rank 0 into the checkpoint's
 * state (checkpoint.h); a load puts a stored state back into the owners. */
#ifndef STEM_CAMPAIGN_SUMS_H
#define STEM_CAMPAIGN_SUMS_H

#include "../src/accumulator.h"
#include "checkpoint.h"
#include "../comm/comm.h"

/* Collective over m->world: every rank's sums added into their owners' (the groups' through
 * the node's shared memory where they share a node: node_reduce.h; threads: each node's
 * adding threads; *used_node, may be NULL: whether that path ran). */
int stem_sums_collect(stem_accumulator *acc, const stem_mpi *m, int threads, int *used_node);
/* Collective over m->world, after a collect: the owners' sums and the done map (n_units
 * bytes, the same on every rank) stored as the checkpoint's new state. */
int stem_sums_store(const stem_accumulator *acc, const stem_mpi *m, stem_checkpoint *ck, const unsigned char *done);
/* Collective over m->world: the checkpoint's stored sums into the owners (others zero), the
 * state read once, in order, its checksum checked (a damaged state refused, exit 6). */
int stem_sums_load(stem_accumulator *acc, const stem_mpi *m, stem_checkpoint *ck);

#endif
