/* Memory shared by the ranks of a group that run on the same node (MPI-3
 * shared-memory windows). The transmission functions and PRISM's S-matrix are
 * the same on every rank of a group: one copy per node instead of one per rank
 * (16 ranks of a node: 1/16 of the memory), each rank writing its share in
 * place, so exchanging them moves data only between nodes. */
#ifndef STEM_NODE_SHARED_H
#define STEM_NODE_SHARED_H

#include <mpi.h>
#include <stddef.h>

#include "../src/stem.h"

typedef struct {
    int active;       /* 0: every rank keeps its own copies (the exchanges go over the group) */
    MPI_Comm node;    /* this group's ranks on this node */
    MPI_Comm leaders; /* node rank 0 of each node of the group; MPI_COMM_NULL on the others */
    int node_rank, node_size;
    int n_nodes;
    int *node_first;    /* group rank of each node's first rank; [n_nodes] = group size (leaders only) */
    size_t piece_bytes; /* node_reduce.c's pieces (0: its default; [debug] sum_piece_bytes) */
} stem_node_share;

/* Collective over group. ranks_per_node > 0 pretends that nodes hold that many
 * consecutive ranks (tests of the multi-node path on one machine); 0: the real
 * nodes. Sharing needs each node's ranks to be consecutive in the group (mpirun's
 * default mapping by slot or core); otherwise, or when enable is 0, it stays off
 * and why is in *why (NULL: on). */
int stem_node_share_setup(stem_node_share *s, MPI_Comm group, int enable, int ranks_per_node, const char **why);
void stem_node_share_free(stem_node_share *s);

typedef struct {
    MPI_Win win;
    void *base; /* the whole buffer, the same bytes on every rank of the node */
    size_t bytes;
} stem_shared_buffer;

/* Collective over s->node: the node's first rank allocates bytes, every rank maps
 * them. The failure of any rank is agreed over the node. MPI backs the buffer with
 * a file in /dev/shm (Open MPI: osc_sm_backing_directory) and cannot always report
 * a full one cleanly: the plan checks its room first (stem_plan_check_memory). */
int stem_shared_alloc(const stem_node_share *s, size_t bytes, const char *what, stem_shared_buffer *buf);
void stem_shared_free(stem_shared_buffer *buf);
/* A buffer of count complex numbers: in the node's shared memory when shared (then
 * collective over s->node, *out pointing into node), else this rank's own (FFTW-aligned). */
int stem_node_buffer_alloc(const stem_node_share *s, int shared, size_t count, const char *what,
                           stem_shared_buffer *node, stem_complex **out);
/* Frees what stem_node_buffer_alloc gave (shared: collective over the node). */
void stem_node_buffer_free(stem_shared_buffer *node, stem_complex *p);
/* Collective over s->node: whether the file system that backs shared windows (/dev/shm, or
 * Open MPI's osc_sm_backing_directory) has room for bytes twice over, as its first rank sees
 * it; dir (may be NULL, dir_len bytes) names it there. A window that does not fit would fail
 * on first touch, not on allocation: callers fall back to their private path. */
int stem_shared_fits(const stem_node_share *s, double bytes, int *fit, char *dir, int dir_len);
/* Collective over s->node: writes before it are seen by every rank of the node after it. */
int stem_shared_sync(const stem_node_share *s, const stem_shared_buffer *buf);
/* The blocks [b, e) of n_blocks that this rank's node holds: a share in proportion to its
 * ranks (n_blocks x first rank / group size, rounded down), so that 20 slices on 4 nodes of
 * 16 ranks are 5 a node, not 16, 4, 0 and 0. s not active: the rank's share of the group. */
void stem_node_block_range(const stem_node_share *s, long n_blocks, int group_rank, int group_size, long *b, long *e);
/* This rank's blocks: its share of its node's (s active), else its share of the group's. */
void stem_rank_block_range(const stem_node_share *s, long n_blocks, int group_rank, int group_size, long *b, long *e);
/* Collective over the group: rank r of the group has written its blocks
 * (stem_rank_block_range; its node's, built together) into buf; afterwards every rank sees
 * all of them (only the nodes' first ranks exchange, each its node's blocks). */
int stem_shared_allgather_blocks(const stem_node_share *s, const stem_shared_buffer *buf, size_t block_bytes,
                                 long n_blocks);

#endif
