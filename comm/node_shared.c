/* Node-shared buffers for the ranks of a group (node_shared.h). */
#include "node_shared.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../src/fft.h"
#include "../src/memlimit.h"
#include "../src/plan.h"
#include "collectives.h"

/* The node communicator: the real node (MPI_COMM_TYPE_SHARED), cut into runs of
 * ranks_per_node consecutive world ranks when asked (a test of several "nodes": the same
 * emulated nodes for a group and for the ranks of one group rank across the groups). */
static int split_node(MPI_Comm group, int ranks_per_node, MPI_Comm *node)
{
    int rank, world_rank;
    STEM_MPI_CALL(MPI_Comm_rank(group, &rank));
    STEM_MPI_CALL(MPI_Comm_rank(MPI_COMM_WORLD, &world_rank));
    STEM_MPI_CALL(MPI_Comm_split_type(group, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, node));
    if (ranks_per_node <= 0) return STEM_OK;
    MPI_Comm real = *node;
    int err = MPI_Comm_split(real, world_rank / ranks_per_node, rank, node);
    MPI_Comm_free(&real);
    return err == MPI_SUCCESS ? STEM_OK : STEM_FAIL(STEM_ERR_MPI, "MPI_Comm_split of the node failed");
}

/* Every node's ranks consecutive in the group, and some node with more than one. */
static int node_layout_usable(const stem_node_share *s, MPI_Comm group, int rank, const char **why)
{
    int lo = rank, hi = rank, most = s->node_size;
    STEM_MPI_CALL(MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_INT, MPI_MIN, s->node));
    STEM_MPI_CALL(MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_INT, MPI_MAX, s->node));
    int consecutive = hi - lo + 1 == s->node_size;
    STEM_MPI_CALL(MPI_Allreduce(MPI_IN_PLACE, &consecutive, 1, MPI_INT, MPI_MIN, group));
    STEM_MPI_CALL(MPI_Allreduce(MPI_IN_PLACE, &most, 1, MPI_INT, MPI_MAX, group));
    if (!consecutive)
        *why = "the ranks of a group are not consecutive on their nodes (map by slot or core)";
    else if (most == 1)
        *why = "one rank of each group per node";
    return STEM_OK;
}

/* The leaders' table of where each node's ranks begin in the group. */
static int leaders_setup(stem_node_share *s, MPI_Comm group, int rank, int size)
{
    STEM_MPI_CALL(MPI_Comm_split(group, s->node_rank == 0 ? 0 : MPI_UNDEFINED, rank, &s->leaders));
    if (s->node_rank == 0) STEM_MPI_CALL(MPI_Comm_size(s->leaders, &s->n_nodes));
    STEM_MPI_CALL(MPI_Bcast(&s->n_nodes, 1, MPI_INT, 0, s->node));
    if (s->node_rank != 0) return STEM_OK;
    if (!(s->node_first = stem_calloc((size_t)s->n_nodes + 1, sizeof(int), "node table"))) return STEM_ERR_MEMORY;
    STEM_MPI_CALL(MPI_Allgather(&rank, 1, MPI_INT, s->node_first, 1, MPI_INT, s->leaders));
    s->node_first[s->n_nodes] = size;
    return STEM_OK;
}

int stem_node_share_setup(stem_node_share *s, MPI_Comm group, int enable, int ranks_per_node, const char **why)
{
    memset(s, 0, sizeof *s);
    s->node = s->leaders = MPI_COMM_NULL;
    *why = NULL;
    int rank, size;
    STEM_MPI_CALL(MPI_Comm_rank(group, &rank));
    STEM_MPI_CALL(MPI_Comm_size(group, &size));
    if (!enable)
        *why = "[compute] node_shared = off";
    else if (size == 1)
        *why = "one rank per group";
    if (*why) return STEM_OK;
    STEM_TRY(split_node(group, ranks_per_node, &s->node));
    STEM_MPI_CALL(MPI_Comm_rank(s->node, &s->node_rank));
    STEM_MPI_CALL(MPI_Comm_size(s->node, &s->node_size));
    STEM_TRY(node_layout_usable(s, group, rank, why));
    if (*why) {
        stem_node_share_free(s);
        return STEM_OK;
    }
    int err = leaders_setup(s, group, rank, size);
    STEM_TRY(stem_mpi_agree(err, group));
    s->active = 1;
    return STEM_OK;
}

void stem_node_share_free(stem_node_share *s)
{
    if (s->node != MPI_COMM_NULL && s->node) MPI_Comm_free(&s->node);
    if (s->leaders != MPI_COMM_NULL && s->leaders) MPI_Comm_free(&s->leaders);
    free(s->node_first);
    memset(s, 0, sizeof *s);
    s->node = s->leaders = MPI_COMM_NULL;
}

int stem_shared_alloc(const stem_node_share *s, size_t bytes, const char *what, stem_shared_buffer *buf)
{
    memset(buf, 0, sizeof *buf);
    buf->win = MPI_WIN_NULL;
    void *mine = NULL;
    /* MPI's segment starts wherever its header ends (Open MPI 4.1: 8 bytes into a line):
     * one page more, and the buffer starts on the next page (aligned vector loads, and
     * the S-matrix's rows on cache-line boundaries as in fftwf_malloc'd memory) */
    const size_t align = 4096;
    MPI_Aint size = s->node_rank == 0 ? (MPI_Aint)(bytes + align) : 0;
    int err = STEM_OK;
    if (MPI_Win_allocate_shared(size, 1, MPI_INFO_NULL, s->node, &mine, &buf->win) != MPI_SUCCESS) {
        buf->win = MPI_WIN_NULL;
        err = STEM_FAIL(STEM_ERR_MEMORY, "cannot allocate %s (%.3f GiB) in memory shared by the node's ranks", what,
                        bytes / 1073741824.0);
    }
    MPI_Aint got = 0;
    int unit = 1;
    void *segment = NULL;
    if (!err && MPI_Win_shared_query(buf->win, 0, &got, &unit, &segment) != MPI_SUCCESS)
        err = STEM_FAIL(STEM_ERR_MPI, "MPI_Win_shared_query for %s failed", what);
    if (!err) buf->base = (void *)(((uintptr_t)segment + align - 1) & ~(uintptr_t)(align - 1));
    if (!err && MPI_Win_lock_all(MPI_MODE_NOCHECK, buf->win) != MPI_SUCCESS)
        err = STEM_FAIL(STEM_ERR_MPI, "MPI_Win_lock_all for %s failed", what);
    err = stem_mpi_agree(err, s->node);
    if (err) {
        if (buf->win != MPI_WIN_NULL) MPI_Win_free(&buf->win);
        memset(buf, 0, sizeof *buf);
        buf->win = MPI_WIN_NULL;
        return err;
    }
    buf->bytes = bytes;
    return STEM_OK;
}

void stem_shared_free(stem_shared_buffer *buf)
{
    if (buf->win != MPI_WIN_NULL && buf->base) {
        MPI_Win_unlock_all(buf->win);
        MPI_Win_free(&buf->win);
    }
    memset(buf, 0, sizeof *buf);
    buf->win = MPI_WIN_NULL;
}

int stem_node_buffer_alloc(const stem_node_share *s, int shared, size_t count, const char *what,
                           stem_shared_buffer *node, stem_complex **out)
{
    if (!shared) return (*out = stem_fft_alloc(count, what)) ? STEM_OK : STEM_ERR_MEMORY;
    STEM_TRY(stem_shared_alloc(s, sizeof(stem_complex) * count, what, node));
    *out = node->base;
    return STEM_OK;
}

void stem_node_buffer_free(stem_shared_buffer *node, stem_complex *p)
{
    if (node->base)
        stem_shared_free(node);
    else
        stem_fft_free(p);
}

int stem_shared_fits(const stem_node_share *s, double bytes, int *fit, char *dir, int dir_len)
{
    char here[256];
    *fit =
        s->node_rank == 0 && stem_shared_memory_room(dir ? dir : here, dir ? dir_len : (int)sizeof here) >= 2.0 * bytes;
    STEM_MPI_CALL(MPI_Bcast(fit, 1, MPI_INT, 0, s->node));
    return STEM_OK;
}

int stem_shared_sync(const stem_node_share *s, const stem_shared_buffer *buf)
{
    STEM_MPI_CALL(MPI_Win_sync(buf->win)); /* this rank's stores reach the window */
    STEM_MPI_CALL(MPI_Barrier(s->node));
    STEM_MPI_CALL(MPI_Win_sync(buf->win)); /* the others' stores are seen by this rank */
    return STEM_OK;
}

void stem_node_block_range(const stem_node_share *s, long n_blocks, int group_rank, int group_size, long *b, long *e)
{
    if (!s->active) {
        stem_split_range(n_blocks, group_size, group_rank, b, e);
        return;
    }
    long first = group_rank - s->node_rank; /* a node's ranks are consecutive in the group */
    *b = n_blocks * first / group_size;
    *e = n_blocks * (first + s->node_size) / group_size;
}

void stem_rank_block_range(const stem_node_share *s, long n_blocks, int group_rank, int group_size, long *b, long *e)
{
    stem_node_block_range(s, n_blocks, group_rank, group_size, b, e);
    if (!s->active) return;
    long nb, ne, node_b = *b;
    stem_split_range(*e - *b, s->node_size, s->node_rank, &nb, &ne);
    *b = node_b + nb;
    *e = node_b + ne;
}

int stem_shared_allgather_blocks(const stem_node_share *s, const stem_shared_buffer *buf, size_t block_bytes,
                                 long n_blocks)
{
    STEM_TRY(stem_shared_sync(s, buf));
    if (s->n_nodes <= 1 || n_blocks == 0) return STEM_OK;
    int err = STEM_OK;
    if (s->node_rank == 0) { /* node k holds the blocks of its ranks, consecutive in the group */
        long *first = stem_calloc((size_t)s->n_nodes + 1, sizeof(long), "gather ranges");
        if (!first) err = STEM_ERR_MEMORY;
        int group_size = s->node_first[s->n_nodes];
        for (int k = 0; k <= s->n_nodes && !err; k++) /* stem_node_block_range's shares */
            first[k] = n_blocks * s->node_first[k] / group_size;
        err = stem_mpi_agree(err, s->leaders); /* no leader waits in an exchange another abandoned */
        if (!err) err = stem_mpi_allgather_ranges(buf->base, block_bytes, first, s->leaders);
        free(first);
    }
    err = stem_mpi_agree(err, s->node);
    if (!err) err = stem_shared_sync(s, buf);
    return err;
}
