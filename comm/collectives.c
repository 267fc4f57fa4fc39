/* The collective operations: status agreement, chunked broadcasts, sums, gathers. */
#include "collectives.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../src/prism.h"

/* MPI_Allreduce that waits asleep: a rank that arrives early (it finished its share)
 * would otherwise spin at full power in MPI's progress loop until the slowest
 * arrives, and keep the whole processor at its all-core clock while the others
 * still compute. Polls every 100 us: nothing next to the seconds it waits. */
static int allreduce_quietly(const int *in, int *out, MPI_Op op, MPI_Comm comm)
{
    MPI_Request req;
    if (MPI_Iallreduce(in, out, 1, MPI_INT, op, comm, &req) != MPI_SUCCESS) return 0;
    for (int done = 0, spins = 0;; spins++) {
        if (MPI_Test(&req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return 0;
        if (done) return 1;
        if (spins > 100) { /* the first 100 polls spin: the usual case takes microseconds */
            struct timespec ts = {0, 100000};
            nanosleep(&ts, NULL);
        }
    }
}

int stem_mpi_agree(int status, MPI_Comm comm)
{
    int rank, worst = status;
    if (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS || !allreduce_quietly(&status, &worst, MPI_MAX, comm))
        return STEM_FAIL(STEM_ERR_MPI, "MPI_Allreduce of the error status failed");
    if (!worst) return STEM_OK;
    /* the lowest failing rank of comm speaks for it: world rank 0 printed
     * already if it failed (on a group's communicator, rank 0 of the group
     * may be another world rank, which held its message back); otherwise a
     * held-back message would be lost */
    int mine = status ? rank : INT_MAX, first = mine;
    if (MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS)
        return STEM_FAIL(STEM_ERR_MPI, "MPI_Allreduce of the failing rank failed");
    stem_log_release_held(first == rank && stem_log_rank() != 0);
    return worst;
}

/* Bytes this rank has received by the broadcasts and gathers below (stem_mpi_received_bytes). */
static size_t received_bytes;

size_t stem_mpi_received_bytes(void) { return received_bytes; }

int stem_mpi_bcast(void *buf, size_t bytes, int root, MPI_Comm comm)
{
    const size_t chunk = (size_t)1 << 30;
    int rank;
    STEM_MPI_CALL(MPI_Comm_rank(comm, &rank));
    if (rank != root) received_bytes += bytes;
    for (size_t off = 0; off < bytes; off += chunk) {
        size_t n = bytes - off < chunk ? bytes - off : chunk;
        STEM_MPI_CALL(MPI_Bcast((char *)buf + off, (int)n, MPI_BYTE, root, comm));
    }
    return STEM_OK;
}

int stem_mpi_bcast_atoms(stem_atoms *atoms, int root, MPI_Comm comm)
{
    int rank;
    STEM_MPI_CALL(MPI_Comm_rank(comm, &rank));
    long n = atoms->n;
    double cell[3] = {atoms->cell[0], atoms->cell[1], atoms->cell[2]};
    STEM_MPI_CALL(MPI_Bcast(&n, 1, MPI_LONG, root, comm));
    STEM_MPI_CALL(MPI_Bcast(cell, 3, MPI_DOUBLE, root, comm));
    int err = STEM_OK;
    if (rank != root) {
        memcpy(atoms->cell, cell, sizeof cell);
        err = stem_atoms_alloc(atoms, n);
    }
    /* a rank without room must not leave the root waiting in the broadcast */
    STEM_TRY(stem_mpi_agree(err, comm));
    STEM_TRY(stem_mpi_bcast(atoms->Z, n * sizeof(int), root, comm));
    double *cols[5] = {atoms->x, atoms->y, atoms->z, atoms->occupancy, atoms->sigma};
    for (int i = 0; i < 5; i++) STEM_TRY(stem_mpi_bcast(cols[i], n * sizeof(double), root, comm));
    return STEM_OK;
}

/* MPI_Op for stem_fixed128 (two's complement, memcpy: MPI's buffers need not be 16-byte aligned). */
static void fixed128_sum(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    for (int i = 0; i < *len; i++) {
        unsigned __int128 a, b;
        memcpy(&a, (char *)in + 16 * (size_t)i, 16);
        memcpy(&b, (char *)inout + 16 * (size_t)i, 16);
        b += a;
        memcpy((char *)inout + 16 * (size_t)i, &b, 16);
    }
}

int stem_mpi_allgather_ranges(void *buf, size_t block_bytes, const long *first, MPI_Comm comm)
{
    int size, err = STEM_OK;
    STEM_MPI_CALL(MPI_Comm_size(comm, &size));
    if (size == 1 || first[size] == 0) return STEM_OK;
    if (block_bytes % sizeof(float) || block_bytes / sizeof(float) > INT_MAX || first[size] > INT_MAX)
        return STEM_FAIL(STEM_ERR_INTERNAL, "blocks of %zu bytes cannot be gathered", block_bytes);
    /* one element = one block, so counts are block counts */
    MPI_Datatype block;
    STEM_MPI_CALL(MPI_Type_contiguous((int)(block_bytes / sizeof(float)), MPI_FLOAT, &block));
    STEM_MPI_CALL(MPI_Type_commit(&block));
    int *counts = stem_calloc(size, sizeof(int), "gather counts"),
        *displs = stem_calloc(size, sizeof(int), "gather counts");
    if (!counts || !displs) err = STEM_ERR_MEMORY;
    for (int r = 0; r < size && !err; r++) {
        counts[r] = (int)(first[r + 1] - first[r]);
        displs[r] = (int)first[r];
    }
    if (!err && MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, counts, displs, block, comm) != MPI_SUCCESS)
        err = STEM_FAIL(STEM_ERR_MPI, "MPI_Allgatherv of %ld blocks of %zu bytes failed", first[size], block_bytes);
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    if (!err) received_bytes += (size_t)(first[size] - (first[rank + 1] - first[rank])) * block_bytes; /* the others' */
    MPI_Type_free(&block);
    free(counts);
    free(displs);
    return err;
}

int stem_mpi_allgather_blocks(void *buf, size_t block_bytes, long n_blocks, MPI_Comm comm)
{
    int size;
    STEM_MPI_CALL(MPI_Comm_size(comm, &size));
    if (size == 1 || n_blocks == 0) return STEM_OK;
    long *first = stem_calloc((size_t)size + 1, sizeof(long), "gather ranges");
    if (!first) return STEM_ERR_MEMORY;
    for (int r = 0; r < size; r++) {
        long b, e;
        stem_split_range(n_blocks, size, r, &b, &e);
        first[r] = b;
        first[r + 1] = e;
    }
    int err = stem_mpi_allgather_ranges(buf, block_bytes, first, comm);
    free(first);
    return err;
}

int stem_mpi_gather_smatrix(const stem_plan *plan, const stem_complex *local, stem_complex *all, MPI_Comm comm)
{
    size_t stride = stem_prism_beam_stride(plan); /* a beam's waves at every detection plane */
    memcpy(all + (size_t)plan->beam_begin * stride, local,
           sizeof(stem_complex) * stride * (plan->beam_end - plan->beam_begin));
    return stem_mpi_allgather_blocks(all, sizeof(stem_complex) * stride, plan->n_beams, comm);
}

int stem_mpi_reduce_fixed(void *buf, long count, size_t elt, int root, MPI_Comm comm)
{
    int size, rank, err = STEM_OK;
    STEM_MPI_CALL(MPI_Comm_size(comm, &size));
    STEM_MPI_CALL(MPI_Comm_rank(comm, &rank));
    if (size == 1 || count == 0) return STEM_OK;
    MPI_Datatype t = MPI_INT64_T;
    MPI_Op op = MPI_SUM;
    if (elt == 16) {
        STEM_MPI_CALL(MPI_Type_contiguous(16, MPI_BYTE, &t));
        STEM_MPI_CALL(MPI_Type_commit(&t));
        STEM_MPI_CALL(MPI_Op_create(fixed128_sum, 1, &op));
    }
    const long chunk = 1L << 26;
    for (long off = 0; off < count && !err; off += chunk) {
        int n = (int)(count - off < chunk ? count - off : chunk);
        char *at = (char *)buf + (size_t)off * elt;
        int rc = root < 0
            ? MPI_Allreduce(MPI_IN_PLACE, at, n, t, op, comm)
            : MPI_Reduce(rank == root ? MPI_IN_PLACE : at, rank == root ? at : NULL, n, t, op, root, comm);
        if (rc != MPI_SUCCESS)
            err = STEM_FAIL(STEM_ERR_MPI, "the exact sum of the campaign's sums over the ranks failed");
    }
    if (elt == 16) {
        MPI_Op_free(&op);
        MPI_Type_free(&t);
    }
    return err;
}
