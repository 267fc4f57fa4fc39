/* The campaign's sums over the ranks and on disk (campaign_sums.h). */
#include "campaign_sums.h"

#include <stdlib.h>
#include <string.h>

#define PIECE_BYTES ((size_t)1 << 26) /* one message or write: 64 MiB */

static size_t point_bytes(const stem_acc_array *a) { return (size_t)a->count * a->elt; }

int stem_sums_collect(stem_accumulator *acc, const stem_mpi *m, int threads, int *used_node)
{
    const stem_layout *L = &m->layout;
    stem_fixed_array *parts = stem_calloc((size_t)acc->n_arrays + 1, sizeof *parts, "the sums' list");
    int err = parts ? STEM_OK : STEM_ERR_MEMORY, n_parts = 0;
    for (int i = 0; i < acc->n_arrays && !err; i++) {
        stem_acc_array a = stem_acc_array_at(acc, i);
        long count = a.count * (long)acc->n_points;
        if (a.kind == STEM_ACC_PART) /* the groups' parts: together, through the node where it can */
            parts[n_parts++] = (stem_fixed_array){a.base, count, a.elt};
        else if (a.kind == STEM_ACC_SCAN && L->world_size > 1)
            err = stem_mpi_reduce_fixed(a.base, count, a.elt, 0, m->world);
    }
    err = stem_mpi_agree(err, m->world);
    if (!err && L->n_groups > 1)
        err = stem_node_reduce_fixed(&m->cross_share, parts, n_parts, m->cross, threads, used_node);
    free(parts);
    if (!err && L->world_size > 1 &&
        MPI_Allreduce(MPI_IN_PLACE, acc->bad, acc->n_points, MPI_UINT8_T, MPI_MAX, m->world) != MPI_SUCCESS)
        err = STEM_FAIL(STEM_ERR_MPI, "the campaign's range flags could not be combined over the ranks");
    err = stem_mpi_agree(err, m->world);
    if (err) return err;
    if (L->group > 0) stem_acc_zero(acc, STEM_ACC_PART);      /* now in the first group's */
    if (L->world_rank > 0) stem_acc_zero(acc, STEM_ACC_SCAN); /* now rank 0's */
    return STEM_OK;
}

/* Every first-group rank's share of part array a, on rank 0 (first, count; NULL elsewhere):
 * its own elements, or none of a distributed FFT's whole sums but the first rank's (store);
 * every rank all of them (load). */
static int part_table(const stem_acc_array *a, const stem_mpi *m, int storing, long *table)
{
    long mine[2] = {a->first, storing && a->whole && m->layout.group_rank > 0 ? 0 : a->count};
    STEM_MPI_CALL(MPI_Gather(mine, 2, MPI_LONG, table, 2, MPI_LONG, 0, m->group));
    return STEM_OK;
}

/* Rank 0: the store's parts come in rank order and tile the point's array exactly. */
static int check_tiling(const stem_acc_array *a, const long *table, int ranks)
{
    long at = 0;
    for (int r = 0; r < ranks; r++) {
        if (!table[2 * r + 1]) continue;
        STEM_ASSERT(table[2 * r] == at, "the ranks' parts of the campaign's sums follow each other");
        at += table[2 * r + 1];
    }
    STEM_ASSERT(at == a->global, "the ranks' parts of the campaign's sums cover the point");
    return STEM_OK;
}

/* Rank 0: bytes from group rank r (0: its own) appended to the state, in pieces. */
static int append_from(stem_checkpoint *ck, const stem_mpi *m, int r, const char *own, size_t bytes, char *piece)
{
    for (size_t at = 0; at < bytes; at += PIECE_BYTES) {
        size_t n = bytes - at < PIECE_BYTES ? bytes - at : PIECE_BYTES;
        const char *from = own + at;
        if (r > 0) {
            STEM_MPI_CALL(MPI_Recv(piece, (int)n, MPI_BYTE, r, 41, m->group, MPI_STATUS_IGNORE));
            from = piece;
        }
        STEM_TRY(stem_checkpoint_state_append(ck, from, n));
    }
    return STEM_OK;
}

static int send_pieces_to(const stem_mpi *m, const char *buf, size_t bytes, int to)
{
    for (size_t at = 0; at < bytes; at += PIECE_BYTES) {
        size_t n = bytes - at < PIECE_BYTES ? bytes - at : PIECE_BYTES;
        STEM_MPI_CALL(MPI_Send(buf + at, (int)n, MPI_BYTE, to, to ? 42 : 41, m->group));
    }
    return STEM_OK;
}

/* The first group: array a of point p, every rank's part through rank 0 into the state. */
static int store_part(const stem_acc_array *a, int p, const stem_mpi *m, stem_checkpoint *ck, const long *table,
                      char *piece)
{
    const char *own = a->base + (size_t)p * point_bytes(a);
    if (m->layout.group_rank > 0) {
        int sends = !(a->whole && m->layout.group_rank > 0);
        return sends ? send_pieces_to(m, own, point_bytes(a), 0) : STEM_OK;
    }
    for (int r = 0; r < m->layout.group_size; r++)
        STEM_TRY(append_from(ck, m, r, own, (size_t)table[2 * r + 1] * a->elt, piece));
    return STEM_OK;
}

/* The first group's ranks: every point's arrays in order (rank 0 writes). */
static int store_group(const stem_accumulator *acc, const stem_mpi *m, stem_checkpoint *ck, const unsigned char *done)
{
    int root = m->layout.world_rank == 0, ranks = m->layout.group_size;
    long *tables = root ? stem_calloc((size_t)acc->n_arrays * 2 * ranks, sizeof(long), "the parts' table") : NULL;
    char *piece = root ? stem_alloc(PIECE_BYTES, "a piece of the campaign's sums") : NULL;
    int err = root && (!tables || !piece) ? STEM_ERR_MEMORY : STEM_OK;
    for (int i = 0; i < acc->n_arrays && !err; i++) {
        stem_acc_array a = stem_acc_array_at(acc, i);
        if (a.kind != STEM_ACC_PART) continue;
        err = part_table(&a, m, 1, tables ? tables + (size_t)i * 2 * ranks : NULL);
        if (!err && root) err = check_tiling(&a, tables + (size_t)i * 2 * ranks, ranks);
    }
    err = stem_mpi_agree(err, m->group);
    if (!err && root) err = stem_checkpoint_state_begin(ck, done);
    err = stem_mpi_agree(err, m->group);
    for (int p = 0; p < acc->n_points && !err; p++)
        for (int i = 0; i < acc->n_arrays && !err; i++) {
            stem_acc_array a = stem_acc_array_at(acc, i);
            if (a.kind == STEM_ACC_PART)
                err = store_part(&a, p, m, ck, tables ? tables + (size_t)i * 2 * ranks : NULL, piece);
            else if (root)
                err = stem_checkpoint_state_append(ck, a.base + (size_t)p * point_bytes(&a), point_bytes(&a));
        }
    if (!err && root) err = stem_checkpoint_state_commit(ck);
    if (err && root) stem_checkpoint_state_abort(ck);
    free(tables);
    free(piece);
    return err;
}

int stem_sums_store(const stem_accumulator *acc, const stem_mpi *m, stem_checkpoint *ck, const unsigned char *done)
{
    for (int p = 0; p < acc->n_points; p++) /* the flags are the same on every rank after a collect */
        if (acc->bad[p])
            return STEM_FAIL(STEM_ERR_INTERNAL,
                             "series point %d received a value that is not finite or beyond its channel's range "
                             "(the simulation is not sound: see the warnings above); the checkpoint keeps its last "
                             "state and nothing is published",
                             p);
    int err = m->layout.group == 0 ? store_group(acc, m, ck, done) : STEM_OK;
    err = stem_mpi_agree(err, m->world);
    int stored[2] = {ck->n_done, ck->has_state}; /* rank 0's, on every rank: the next store's decision */
    if (!err) STEM_MPI_CALL(MPI_Bcast(stored, 2, MPI_INT, 0, m->world));
    ck->n_done = stored[0];
    ck->has_state = stored[1];
    return err;
}

/* Rank 0: the state's bytes [at, at + bytes) to group rank r (0: into own), in pieces. */
static int read_to(stem_checkpoint *ck, const stem_mpi *m, int r, size_t at, size_t bytes, char *own, char *piece)
{
    for (size_t k = 0; k < bytes; k += PIECE_BYTES) {
        size_t n = bytes - k < PIECE_BYTES ? bytes - k : PIECE_BYTES;
        STEM_TRY(stem_checkpoint_state_read(ck, at + k, r ? piece : own + k, n));
        if (r) STEM_MPI_CALL(MPI_Send(piece, (int)n, MPI_BYTE, r, 42, m->group));
    }
    return STEM_OK;
}

static int recv_pieces(const stem_mpi *m, char *buf, size_t bytes)
{
    for (size_t at = 0; at < bytes; at += PIECE_BYTES) {
        size_t n = bytes - at < PIECE_BYTES ? bytes - at : PIECE_BYTES;
        STEM_MPI_CALL(MPI_Recv(buf + at, (int)n, MPI_BYTE, 0, 42, m->group, MPI_STATUS_IGNORE));
    }
    return STEM_OK;
}

/* The first group: array a of point p from the state at `at` (its place in the file). Rank 0
 * reads every rank's part in turn, so the file is read once, in order (its checksum follows);
 * a distributed FFT's whole sums go to every rank but are read where they lie, once. */
static int load_part(const stem_acc_array *a, int p, const stem_mpi *m, stem_checkpoint *ck, const long *table,
                     size_t at, char *piece)
{
    char *own = a->base + (size_t)p * point_bytes(a);
    if (m->layout.world_rank != 0) return recv_pieces(m, own, point_bytes(a));
    if (a->whole) { /* rank 0 reads it; the others get the same bytes */
        STEM_TRY(read_to(ck, m, 0, at, point_bytes(a), own, piece));
        for (int r = 1; r < m->layout.group_size; r++) STEM_TRY(send_pieces_to(m, own, point_bytes(a), r));
        return STEM_OK;
    }
    for (int r = 0; r < m->layout.group_size; r++)
        STEM_TRY(read_to(ck, m, r, at + (size_t)table[2 * r] * a->elt, (size_t)table[2 * r + 1] * a->elt, own, piece));
    return STEM_OK;
}

/* The first group's ranks: every point's arrays from the state, in the file's order (rank 0
 * reads), its checksum checked at the end. */
static int load_group(stem_accumulator *acc, const stem_mpi *m, stem_checkpoint *ck)
{
    int root = m->layout.world_rank == 0, ranks = m->layout.group_size;
    long *tables = root ? stem_calloc((size_t)acc->n_arrays * 2 * ranks, sizeof(long), "the parts' table") : NULL;
    char *piece = root ? stem_alloc(PIECE_BYTES, "a piece of the campaign's sums") : NULL;
    int err = root && (!tables || !piece) ? STEM_ERR_MEMORY : STEM_OK;
    err = stem_mpi_agree(err, m->group);
    for (int i = 0; i < acc->n_arrays && !err; i++) {
        stem_acc_array a = stem_acc_array_at(acc, i);
        if (a.kind == STEM_ACC_PART) err = part_table(&a, m, 0, tables ? tables + (size_t)i * 2 * ranks : NULL);
    }
    size_t at = 0;
    for (int p = 0; p < acc->n_points && !err; p++)
        for (int i = 0; i < acc->n_arrays && !err; i++) {
            stem_acc_array a = stem_acc_array_at(acc, i);
            if (a.kind == STEM_ACC_PART)
                err = load_part(&a, p, m, ck, tables ? tables + (size_t)i * 2 * ranks : NULL, at, piece);
            else if (root)
                err = read_to(ck, m, 0, at, point_bytes(&a), a.base + (size_t)p * point_bytes(&a), piece);
            at += (size_t)a.global * a.elt;
        }
    if (!err && root) err = stem_checkpoint_state_loaded(ck);
    free(tables);
    free(piece);
    return err;
}

int stem_sums_load(stem_accumulator *acc, const stem_mpi *m, stem_checkpoint *ck)
{
    stem_acc_zero(acc, STEM_ACC_PART);
    stem_acc_zero(acc, STEM_ACC_SCAN);
    memset(acc->bad, 0, (size_t)acc->n_points);
    if (!ck->has_state) return STEM_OK;
    int err = m->layout.group == 0 ? load_group(acc, m, ck) : STEM_OK;
    return stem_mpi_agree(err, m->world);
}
