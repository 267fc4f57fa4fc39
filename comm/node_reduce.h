/* Exact integer sums of large arrays over a communicator's ranks, into its rank 0, where
 * ranks share a node: through the node's shared memory instead of MPI's messages. The
 * frozen-phonon groups' sums (1.2 GiB per rank for the paper's SrTiO3 slab) took 2.6 s in
 * MPI_Reduce over 4 ranks of one node (0.5 GB/s, the leader applying every rank's part in
 * turn); here each rank copies its array into shared pieces while the node's first rank adds
 * the previous pieces with its threads, and only the nodes' first ranks exchange messages. */
#ifndef STEM_NODE_REDUCE_H
#define STEM_NODE_REDUCE_H

#include <mpi.h>
#include <stddef.h>

#include "node_shared.h"

/* One array of exact sums: count elements of elt = 8 (int64) or 16 (stem_fixed128), two's
 * complement. */
typedef struct {
    void *buf;
    long count;
    size_t elt;
} stem_fixed_array;

/* Every rank's arrays[i] summed into rank 0's, for each of the n arrays (the same counts on
 * every rank); the other ranks' arrays are left as they were or hold partial sums. share:
 * the node layout of comm (stem_node_share_setup over comm); not active, or shared memory
 * not to be had: MPI_Reduce over comm. Collective over comm; threads: the copying and adding
 * threads of each rank. The same bits either way (integer sums). *used_node (may be NULL):
 * whether the shared path ran. */
int stem_node_reduce_fixed(const stem_node_share *share, const stem_fixed_array *arrays, int n, MPI_Comm comm,
                           int threads, int *used_node);

#endif
