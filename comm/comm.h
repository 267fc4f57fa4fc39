/* Communicators and the rank layout of a run (frozen-phonon groups, node shares);
 * the collective operations it uses are in collectives.h (included). */
#ifndef STEM_COMM_H
#define STEM_COMM_H

#include <mpi.h>
#include <sys/types.h>

#include "collectives.h"
#include "node_reduce.h"
#include "node_shared.h"

typedef struct {
    MPI_Comm world, group, cross; /* cross: same group rank in every group */
    stem_layout layout;
    stem_node_share share;       /* the group's ranks on this node (node_shared.h) */
    stem_node_share cross_share; /* cross's ranks on this node: the groups' sums added there (node_reduce.h) */
} stem_mpi;

/* A one-process run's private Open MPI session directory (empty dir: none). */
typedef struct {
    char dir[STEM_PATH_MAX];
    dev_t dev;
    ino_t ino;
    int lock_fd; /* <dir>/stemsim.lock, held (flock) while the process lives: a later run that takes it
                    knows the run is gone and removes the directory it left (a kill -9) */
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
#endif
