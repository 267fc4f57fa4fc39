/* The campaign's state, shared by its files (campaign.h): campaign.c the flow, the shape and
 * the opening (sums, checkpoint); campaign_unit.c one unit and the group state it needs;
 * campaign_rounds.c the schedule and the stores; campaign_output.c the finished points and
 * the output. Private to mpi/campaign*.c. */
#ifndef STEM_CAMPAIGN_PRIVATE_H
#define STEM_CAMPAIGN_PRIVATE_H

#include <pthread.h>

#include "../io/potential_file.h"
#include "../src/accumulator.h"
#include "../src/dispatcher.h"
#include "algorithm.h"
#include "campaign.h"
#include "checkpoint.h"
#include "dist_hrtem.h"
#include "phonon_loop.h"
#include "smatrix_store.h"

typedef struct {
    const stem_campaign_job *job;
    /* checkpointed (stem_campaign_checkpointed): each tilt's point plans and rotated model, the
     * checkpoint's state stored as the units go, each unit's S-matrix in a unit file */
    int checkpointed;
    int n_tilts, n_configs, n_optics, n_units; /* n_optics: beam tilts x defoci, the plans of one sample tilt */
    int n_planes, per_tilt, n_points;          /* detection planes (depths, at least 1); points per unit; in all */
    stem_plan *plans; /* checkpointed: [n_tilts x n_optics] (stable pointers); else NULL, the run's plan */
    /* the group's working state, for any unit */
    stem_detector det;
    stem_potential_table table;
    stem_complex *trans;
    stem_shared_buffer trans_node;
    stem_shared_buffer table_node; /* the potential profiles, one copy per node (CPU and GPU alike) */
    stem_algorithm_buffers buffers;
    const stem_smatrix_io *smatrix_io; /* PRISM's S-matrix read back or kept (NULL: neither) */
    int tilt;                          /* the tilt whose rotated model `tilted` is (-1: none) */
    stem_atoms tilted;
    stem_dist_unit *dist; /* a distributed FFT's state (plan->dist) */
    stem_complex *spare;  /* the next unit's transmission functions, built ahead */
    stem_build_ahead ahead;
    int ahead_unit; /* the unit the helper builds for (campaign_unit.c) */
    int ready_unit; /* the unit whose functions trans holds from the helper (-1: none) */
    int ahead_tilt; /* the tilt whose rotated model `ahead_tilted` is (-1: none) */
    stem_atoms ahead_tilted;
    int ready;          /* streamed blocks: the configuration whose functions trans holds (-1: none) */
    double start, busy; /* units' start; this rank's time in its units */
    int n_run;          /* units this run computes (the same on every rank) */
    /* the sums */
    stem_accumulator acc;
    stem_result *res;              /* [per_tilt]: one unit's points */
    stem_shared_buffer res_node;   /* a probe queue's node rows of res and its counter (campaign_unit.c) */
    stem_transmission_split split; /* the transmission build below one slice (transmission_split.h) */
    stem_work_queue queue;
    /* an engine that leaves the host idle (the GPU): the last unit's results, added to the sums
     * by a helper thread while the next unit computes (campaign_rounds.c); else NULL */
    stem_result *res_taken;
    pthread_t taker;
    int taking, take_unit, take_err;
    int sums_damaged;            /* a take failed part way: the sums are never stored */
    double take_busy, take_wait; /* seconds of adding to the sums, and of the units waiting for it */
    unsigned char *done;         /* [n_units]: in the sums (this group's since the last collect, and the stored) */
    int n_added;                 /* units added since the last store, by this rank's group */
    double last_store;           /* when the state was last stored (or the units began) */
    /* the S-matrices: a plain run's temporaries (store), a checkpointed run's unit files */
    stem_smatrix_store store;
    stem_smatrix_io kept_io;
    char *smatrix_unit; /* group leader: one unit's S-matrix, stored as its unit file */
    size_t smatrix_bytes;
    stem_checkpoint ck;
    int ck_opened; /* the checkpoint is open: a stop from now keeps the units (exit 75) */
    /* a plain run's 4D patterns streamed in blocks (plan->probe_block; campaign_blocks.c): the
     * output open since the units began, the block's plan (this rank's probes of the block),
     * results and 4D sums, each configuration's kept transmission functions (NULL: built again) */
    int streamed; /* plan->probe_block, and a result written (not --convergence's) */
    stem_output_stream *stream;
    stem_plan block_plan;
    stem_result block_res;
    stem_accumulator block_acc;
    stem_complex **kept;
    stem_shared_buffer *kept_node;
    stem_result out;                 /* a finished point, rebuilt from the sums */
    stem_potential_source potential; /* save_potential: the slices of tilt potential_tilt (-1: none) */
    int potential_tilt;
} campaign;

/* campaign.c */
const stem_plan *stem_campaign_tilt_plans(const campaign *cp, int t);
/* campaign_unit.c */
int stem_campaign_unit_model(campaign *cp, int t, const stem_atoms **model);
int stem_campaign_group_state(campaign *cp);
void stem_campaign_group_state_free(campaign *cp);
int stem_campaign_compute_unit(campaign *cp, int u, int next, stem_result *res);
/* campaign_rounds.c: the units not in the sums, in static rounds, each added to the sums; the
 * state stored every checkpoint_interval, at a signal (STEM_STOPPED_CHECKPOINTED) and at the end. */
int stem_campaign_rounds(campaign *cp, const char *dir);
/* The stores (campaign_rounds.c): whether checkpoint_interval has passed (rank 0 decides, every
 * rank learns); every rank's sums collected into their owners and, checkpointed, stored with
 * the units they hold; a stop's store, returning STEM_STOPPED_CHECKPOINTED. Collective. */
int stem_campaign_store_due(const campaign *cp);
int stem_campaign_store(campaign *cp, const char *why);
int stem_campaign_stop_stored(campaign *cp, const char *dir, int sig);
/* Test hook: STEMSIM_TEST_UNIT_DELAY=s waits s seconds after each unit or 4D block (time to signal a job). */
void stem_campaign_test_delay(void);
/* campaign_blocks.c: every block of a streamed 4D run (plan->probe_block) not yet done computed
 * over every configuration, its patterns written (cp->stream, left open for
 * stem_campaign_write_output; closed and removed on a failure, or kept for a resume where the
 * run is checkpointed: the units are the blocks), the other channels in the sums, collected
 * (and stored). */
int stem_campaign_blocks(campaign *cp, const char *dir);
/* campaign_output.c */
int stem_campaign_write_output(campaign *cp);
/* Point p finished from the sums into res (the first group's ranks; NULL elsewhere): the mean,
 * the standard errors, PACBED, the source-size blur, the checks; collective over the world. */
int stem_campaign_finish_point(campaign *cp, int p, stem_result *res);

#endif
