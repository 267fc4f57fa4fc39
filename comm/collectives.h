/* The collective operations stemsim needs, on any communicator: status agreement,
 * chunked broadcasts, sums of the results, gathers (below the communicators of
 * comm.h and the node shares of node_shared.h, which use them). */
#ifndef STEM_COLLECTIVES_H
#define STEM_COLLECTIVES_H

#include <mpi.h>

#include "../src/atoms.h"
#include "../src/detector.h"
#include "../src/physics.h"

/* Largest status over the ranks of comm, so all ranks take the same branch;
 * the lowest failing rank's message is printed (once). */
int stem_mpi_agree(int status, MPI_Comm comm);
/* What this rank has received so far through stem_mpi_bcast and the allgathers below
 * (bytes; the -v report of the transmission functions' exchange, mpi/phonon_loop.c). */
size_t stem_mpi_received_bytes(void);
/* MPI_Bcast in pieces below 2 GiB. */
int stem_mpi_bcast(void *buf, size_t bytes, int root, MPI_Comm comm);
/* Broadcast the model from root (other ranks allocate). */
int stem_mpi_bcast_atoms(stem_atoms *atoms, int root, MPI_Comm comm);
/* Exact integer sums (elt 8: int64; 16: stem_fixed128) over comm, in place, to root or
 * (root < 0) to every rank; in pieces below INT_MAX. */
int stem_mpi_reduce_fixed(void *buf, long count, size_t elt, int root, MPI_Comm comm);
/* In place: rank r of comm holds blocks [b, e) of stem_split_range(n_blocks, size, r) at
 * their places in buf; afterwards every rank holds all of them. */
int stem_mpi_allgather_blocks(void *buf, size_t block_bytes, long n_blocks, MPI_Comm comm);
/* The same with rank r of comm holding blocks [first[r], first[r + 1]) (first: size + 1 entries). */
int stem_mpi_allgather_ranges(void *buf, size_t block_bytes, const long *first, MPI_Comm comm);
/* Gather every rank's beams of the S-matrix ([beam][plane][box], src/prism.h) on every rank of comm. */
int stem_mpi_gather_smatrix(const stem_plan *plan, const stem_complex *local, stem_complex *all, MPI_Comm comm);

#define STEM_MPI_CALL(call)                                                                                            \
    do {                                                                                                               \
        int stem_mpi_rc_ = (call);                                                                                     \
        if (stem_mpi_rc_ != MPI_SUCCESS) {                                                                             \
            char stem_mpi_msg_[MPI_MAX_ERROR_STRING];                                                                  \
            int stem_mpi_len_ = 0;                                                                                     \
            MPI_Error_string(stem_mpi_rc_, stem_mpi_msg_, &stem_mpi_len_);                                             \
            return STEM_FAIL(STEM_ERR_MPI, "%s failed: %s", #call, stem_mpi_msg_);                                     \
        }                                                                                                              \
    } while (0)

#endif
