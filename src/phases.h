/* Where the wall time goes: each rank adds the time of each phase of the
 * campaign; rank 0 logs every configuration's phases and, at the end, its own
 * totals next to each phase's largest and mean over the ranks (-v). Process-wide like the log level. */
#ifndef STEM_PHASES_H
#define STEM_PHASES_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    STEM_PHASE_TABLE,        /* potential lookup table (group leader, once) */
    STEM_PHASE_TRANSMISSION, /* displaced atoms -> transmission functions (group leader) */
    STEM_PHASE_BROADCAST,    /* transmission functions to the group, waiting for the leader included */
    STEM_PHASE_SMATRIX,      /* PRISM: this rank's plane waves through the sample */
    STEM_PHASE_GATHER,       /* PRISM: the S-matrix gathered over the group (or copied to a rank's other GPUs) */
    STEM_PHASE_ARRANGE,      /* PRISM: the S-matrix put beam fastest into the ranks' tiles (mpi/smatrix_tiles.c) */
    STEM_PHASE_PROBES,       /* multislice probes or the PRISM output step */
    STEM_PHASE_WAIT,         /* agreements and safe points: waiting for slower ranks */
    STEM_PHASE_REDUCTION,    /* results summed over groups */
    STEM_PHASE_WRITE,        /* HDF5 output */
    STEM_PHASE_SETUP,        /* the campaign opened and a group's state made: detector, results, buffers */
    STEM_PHASE_FINISH,       /* the output finished (checks, close, publish), its writes apart */
    STEM_N_PHASES
} stem_phase;

/* Add the wall time since t0 (stem_wall_time()) to phase p; returns the current time. */
double stem_phase_add(stem_phase p, double t0);
/* Rank 0, -v: the phases since the previous call, as one line for configuration c. */
void stem_phases_log_config(int c, int n_configs);
/* Collective over comm: rank 0's totals, each phase's largest and mean over the ranks, with
 * "other" = wall - phases (the mean shows the imbalance the largest hides). */
void stem_phases_log_summary(MPI_Comm comm, double wall);
/* The time phase p has taken on this rank so far. */
double stem_phase_total(stem_phase p);
/* Rank 0 logs the smallest and largest peak resident set size of comm's ranks (getrusage). */
void stem_log_peak_memory(MPI_Comm comm);

#ifdef __cplusplus
}
#endif
#endif
