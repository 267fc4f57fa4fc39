/* Exact sums over the ranks of a node through shared memory (node_reduce.h). */
#include "node_reduce.h"

#include <stdint.h>
#include <string.h>

#include "../src/dispatcher.h"
#include "collectives.h"

/* The shared pieces of all the node's ranks, both halves of the pipeline: small next to
 * /dev/shm, large enough that a piece's barrier costs nothing next to its copy. */
#define PIECES_BUDGET ((size_t)64 << 20)
#define ADD_BLOCK 2048 /* elements added from every piece while the block stays in cache */

/* Bytes of one rank's piece: a share of the budget, whole elements of 16 bytes. */
static size_t piece_bytes(int node_size)
{
    size_t b = PIECES_BUDGET / (2 * (size_t)(node_size - 1));
    if (b < ((size_t)1 << 20)) b = (size_t)1 << 20;
    return b & ~(size_t)15;
}

typedef struct {
    char *to;         /* the leader's part of its array */
    const char *from; /* the first rank's piece; the others follow at `stride` */
    size_t stride, elt;
    int n_from;
} add_pieces;

static void add_block(const add_pieces *a, long b, long e)
{
    for (int r = 0; r < a->n_from; r++) {
        const char *x = a->from + (size_t)r * a->stride;
        if (a->elt == 8) {
            uint64_t *to = (uint64_t *)(void *)a->to; /* two's complement: wrapping adds are the sum */
            const uint64_t *v = (const uint64_t *)(const void *)x;
            for (long i = b; i < e; i++) to[i] += v[i];
        } else
            for (long i = b; i < e; i++) {
                unsigned __int128 s, v;
                memcpy(&s, a->to + 16 * (size_t)i, 16);
                memcpy(&v, x + 16 * (size_t)i, 16);
                s += v;
                memcpy(a->to + 16 * (size_t)i, &s, 16);
            }
    }
}

static int add_work(void *ctx, int worker, long begin, long end)
{
    (void)worker;
    for (long b = begin; b < end; b += ADD_BLOCK) add_block(ctx, b, end - b < ADD_BLOCK ? end : b + ADD_BLOCK);
    return STEM_OK;
}

typedef struct {
    char *to;
    const char *from;
} copy_piece;

static int copy_work(void *ctx, int worker, long begin, long end)
{
    (void)worker;
    const copy_piece *c = ctx;
    memcpy(c->to + begin, c->from + begin, (size_t)(end - begin));
    return STEM_OK;
}

/* Piece k (elements [k per, ...)) of every rank: the others copy theirs into half k % 2
 * while the leader adds piece k - 1's from the other half; one barrier per piece. */
static int node_pipeline(const stem_node_share *s, const stem_shared_buffer *pieces, char *buf, long count, size_t elt,
                         size_t piece, int threads)
{
    long per = (long)(piece / elt), n_pieces = (count + per - 1) / per;
    size_t half = piece * (size_t)(s->node_size - 1);
    int err = STEM_OK;
    for (long k = 0; k <= n_pieces; k++) {
        if (k < n_pieces && s->node_rank > 0 && !err) {
            long n = count - k * per < per ? count - k * per : per;
            copy_piece c = {(char *)pieces->base + (size_t)(k % 2) * half + (size_t)(s->node_rank - 1) * piece,
                            buf + (size_t)k * per * elt};
            stem_work w = {&c, NULL, copy_work, NULL};
            err = stem_dispatch_whole(&w, n * (long)elt, threads);
        }
        if (k > 0 && s->node_rank == 0 && !err) {
            long n = count - (k - 1) * per < per ? count - (k - 1) * per : per;
            add_pieces a = {buf + (size_t)(k - 1) * per * elt,
                            (const char *)pieces->base + (size_t)((k - 1) % 2) * half, piece, elt, s->node_size - 1};
            stem_work w = {&a, NULL, add_work, NULL};
            err = stem_dispatch_whole(&w, n, threads);
        }
        STEM_TRY(stem_shared_sync(s, pieces)); /* every rank meets at every piece, whatever failed */
    }
    return err;
}

static int mpi_reduce_all(const stem_fixed_array *arrays, int n, MPI_Comm comm)
{
    for (int i = 0; i < n; i++) STEM_TRY(stem_mpi_reduce_fixed(arrays[i].buf, arrays[i].count, arrays[i].elt, 0, comm));
    return STEM_OK;
}

/* The node's sums into its first rank: through shared pieces (one window for every array),
 * or MPI_Reduce over the node where /dev/shm has no room. */
static int node_sums(const stem_node_share *s, const stem_fixed_array *arrays, int n, int threads, int *used_node)
{
    size_t piece = s->piece_bytes ? (s->piece_bytes + 15) & ~(size_t)15 : piece_bytes(s->node_size);
    int fit = 0;
    STEM_TRY(stem_shared_fits(s, 2.0 * piece * (s->node_size - 1), &fit, NULL, 0));
    if (!fit) return mpi_reduce_all(arrays, n, s->node);
    stem_shared_buffer pieces;
    STEM_TRY(stem_shared_alloc(s, 2 * piece * (size_t)(s->node_size - 1), "the pieces of the groups' sums", &pieces));
    int err = STEM_OK;
    for (int i = 0; i < n && err != STEM_ERR_MPI; i++)
        if (arrays[i].count > 0) {
            int e = node_pipeline(s, &pieces, arrays[i].buf, arrays[i].count, arrays[i].elt, piece, threads);
            if (!err) err = e;
        }
    stem_shared_free(&pieces);
    if (used_node) *used_node = 1;
    return stem_mpi_agree(err, s->node);
}

int stem_node_reduce_fixed(const stem_node_share *share, const stem_fixed_array *arrays, int n, MPI_Comm comm,
                           int threads, int *used_node)
{
    if (used_node) *used_node = 0;
    int size;
    STEM_MPI_CALL(MPI_Comm_size(comm, &size));
    if (size == 1 || n == 0) return STEM_OK;
    int plain = !share->active;
    for (int i = 0; i < n; i++) plain |= arrays[i].elt != 8 && arrays[i].elt != 16;
    if (plain) return mpi_reduce_all(arrays, n, comm);
    /* comm's rank 0 is its node's first rank and the first of the leaders (both split by rank) */
    if (share->node_size > 1) STEM_TRY(node_sums(share, arrays, n, threads, used_node));
    if (share->node_rank == 0 && share->n_nodes > 1) STEM_TRY(mpi_reduce_all(arrays, n, share->leaders));
    return STEM_OK;
}
