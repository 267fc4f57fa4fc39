/* Communicators, the rank layout, and the collective operations stemsim
 * needs: chunked broadcasts, status agreement, sums, S-matrix gathering. */
#ifndef STEM_COMM_H
#define STEM_COMM_H

#include <mpi.h>
#include <sys/types.h>

#include "../src/atoms.h"
#include "../src/detector.h"
#include "../src/physics.h"
#include "node_shared.h"

typedef struct {
    MPI_Comm world, group, cross; /* cross: same group rank in every group */
    stem_layout layout;
    stem_node_share share;        /* the group's ranks on this node (node_shared.h) */
} stem_mpi;

/* A one-process run's private Open MPI session directory (empty dir: none). */
typedef struct {
    char dir[STEM_PATH_MAX];
    dev_t dev;
    ino_t ino;
} stem_mpi_session;

/* Before MPI_Init: a process started without a launcher (no mpirun, srun or other
 * PMI environment) is a singleton, one rank that never spawns or talks to another
 * process. Open MPI would still start a helper daemon and probe the network (about
 * 0.35 s of a 0.5 s start-up); tell it not to, through its OMPI_MCA_ variables,
 * each only where the user has not set it. Other MPI libraries ignore them.
 * It also gets a session directory of its own (mkdtemp under TMPDIR, or under
 * OMPI_MCA_orte_tmpdir_base when set), so concurrent one-process jobs never share one:
 * STEM_ERR_MPI when it cannot be made. A launched process is left as it is. */
int stem_mpi_singleton_defaults(stem_mpi_session *s);
/* After MPI_Finalize: removes the private session directory (and what Open MPI left in it),
 * only if it is still the directory stem_mpi_singleton_defaults made. */
void stem_mpi_session_remove(stem_mpi_session *s);
/* Before MPI_Init: this process's rank as its launcher tells it (0 when not launched). */
int stem_mpi_launch_rank(void);

/* Communicators for frozen-phonon groups: `requested` groups (0: automatic);
 * node-shared memory when node_shared (ranks_per_node: node_shared.h). */
int stem_mpi_setup(stem_mpi *m, MPI_Comm world, int n_configs, int requested, int node_shared, int ranks_per_node);
void stem_mpi_free(stem_mpi *m);
/* Largest status over the ranks of comm, so all ranks take the same branch;
 * the lowest failing rank's message is printed (once). */
int stem_mpi_agree(int status, MPI_Comm comm);
/* MPI_Bcast in pieces below 2 GiB. */
int stem_mpi_bcast(void *buf, size_t bytes, int root, MPI_Comm comm);
/* Broadcast the model from root (other ranks allocate). */
int stem_mpi_bcast_atoms(stem_atoms *atoms, int root, MPI_Comm comm);
/* In-place sum of the result arrays over comm. */
int stem_mpi_sum_result(stem_result *res, MPI_Comm comm);
/* In-place sum of the standard-error state (res->err) over comm. */
int stem_mpi_sum_errors(stem_result *res, MPI_Comm comm);
/* The exact PACBED sums (res->pacbed_sum, 128-bit integers) added over comm, to root or
 * (root < 0) to every rank: integer sums, the same bits whatever the ranks' order or count. */
int stem_mpi_sum_pacbed(stem_result *res, int root, MPI_Comm comm);
/* In place: rank r of comm holds blocks [b, e) of stem_split_range(n_blocks, size, r) at
 * their places in buf; afterwards every rank holds all of them. */
int stem_mpi_allgather_blocks(void *buf, size_t block_bytes, long n_blocks, MPI_Comm comm);
/* The same with rank r of comm holding blocks [first[r], first[r + 1]) (first: size + 1 entries). */
int stem_mpi_allgather_ranges(void *buf, size_t block_bytes, const long *first, MPI_Comm comm);
/* Gather every rank's beams of the S-matrix ([beam][box]) on every rank of comm. */
int stem_mpi_gather_smatrix(const stem_plan *plan, const stem_complex *local, stem_complex *all, MPI_Comm comm);

#define STEM_MPI_CALL(call)                                                                    \
    do {                                                                                       \
        int stem_mpi_rc_ = (call);                                                             \
        if (stem_mpi_rc_ != MPI_SUCCESS) {                                                     \
            char stem_mpi_msg_[MPI_MAX_ERROR_STRING];                                          \
            int stem_mpi_len_ = 0;                                                             \
            MPI_Error_string(stem_mpi_rc_, stem_mpi_msg_, &stem_mpi_len_);                     \
            return STEM_FAIL(STEM_ERR_MPI, "%s failed: %s", #call, stem_mpi_msg_);            \
        }                                                                                      \
    } while (0)

#endif
