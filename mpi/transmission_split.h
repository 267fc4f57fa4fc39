/* The CPU transmission build split below one slice over the ranks of a node (issue 44): a
 * group's slices are otherwise built whole, one per rank, so 20 slices on 16 ranks take two
 * slices' time on 4 ranks while 12 wait. Here the node's ranks first draw bands of rows of a
 * round of slices from one queue and add the atoms' blurred profiles into node-shared
 * samples (most of a slice's cost), then draw the round's slices from the queue for the
 * FFTs and the exponential. The same code and order of sums per pixel as a rank building
 * whole slices: the same bits. */
#ifndef STEM_TRANSMISSION_SPLIT_H
#define STEM_TRANSMISSION_SPLIT_H

#include "../comm/comm.h"
#include "../src/dispatcher.h"
#include "../src/potential.h"

typedef struct {
    stem_shared_buffer buf; /* the queue's word (first cache line), then `round` slices of samples */
    stem_work_queue queue;
    int round;       /* slices per round (0: off) */
    long first, end; /* the node's slices [first, end) of the group's split */
} stem_transmission_split;

/* Collective over m->share.node: the buffers, where the group's ranks share a node's memory
 * and enable (the CPU builds node-shared transmission functions, [compute] node_queue); off
 * (round 0) otherwise, or where /dev/shm has no room for them twice over. */
int stem_transmission_split_alloc(const stem_mpi *m, const stem_plan *plan, int enable, stem_transmission_split *s);
void stem_transmission_split_free(stem_transmission_split *s);
/* Collective over m->share.node: the node's slices of configuration `displaced` into trans
 * (the node-shared transmission functions, [slice][ny][nx]). err: this rank failed before
 * (it computes nothing); every rank meets every barrier whatever failed, and the first
 * failure is returned (the caller agrees). */
int stem_transmission_split_build(const stem_mpi *m, const stem_plan *plan, const stem_potential_table *table,
                                  const stem_atoms *displaced, stem_transmission_split *s, stem_complex *trans,
                                  int err);

#endif
