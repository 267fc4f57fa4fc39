/* The steps of the frozen-phonon loop that the series campaign and the distributed
 * plane wave share: the lookup table, the safe point, the blur and the scan's errors. */
#include "phonon_steps.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "../src/coherence.h"
#include "../src/phases.h"
#include "../src/signals.h"

/* The table's profiles moved into the node's shared memory (one copy per node: 16 ranks'
 * copies of a 35 MB table compete for the cache that one copy has to itself). Collective
 * over the node. */
static int share_profiles(const stem_mpi *m, stem_potential_table *table, stem_shared_buffer *node)
{
    size_t bytes = sizeof(float) * (size_t)table->points * table->n_profiles;
    STEM_TRY(stem_shared_alloc(&m->share, bytes, "potential profiles (node-shared)", node));
    free(table->profiles);
    table->profiles = node->base;
    table->borrowed = 1;
    return STEM_OK;
}

/* The profile table (it depends only on species and grid: once per run), each
 * rank of the group building a share of its profiles, then exchanged: every
 * rank of the group needs it to build its slices. With node-shared memory (node
 * non-NULL and the share active) the node holds one copy, which its ranks fill and
 * only the nodes exchange. err: a failure before it, agreed here with the group. */
int stem_phonon_lookup_table(const stem_mpi *m, const stem_plan *plan, const stem_atoms *atoms,
                             const stem_atom_potential *potentials, int err, stem_potential_table *table,
                             stem_shared_buffer *node)
{
    const stem_layout *L = &m->layout;
    if (!err) err = stem_potential_table_init(plan, atoms, table); /* every rank comes here: it agrees below */
    int shared = node && m->share.active;
    if (shared) { /* collective over the node: every rank must arrive without a failure */
        err = stem_mpi_agree(err, m->group);
        if (!err) err = share_profiles(m, table, node);
        STEM_TRY(stem_mpi_agree(err, m->group));
    }
    long k0 = 0, k1 = 0;
    if (!err && shared)
        stem_rank_block_range(&m->share, table->n_profiles, L->group_rank, L->group_size, &k0, &k1);
    else if (!err)
        stem_split_range(table->n_profiles, L->group_size, L->group_rank, &k0, &k1);
    if (!err) err = stem_potential_table_profiles(plan, potentials, table, k0, k1);
    STEM_TRY(stem_mpi_agree(err, m->group));
    size_t block = sizeof(float) * table->points;
    if (shared) return stem_shared_allgather_blocks(&m->share, node, block, table->n_profiles);
    return stem_mpi_allgather_blocks(table->profiles, block, table->n_profiles, m->group);
}

/* Spatial partial coherence: the blur needs each real-space channel over the
 * whole scan, which the ranks of a group hold in pieces (their probe ranges):
 * gathered over the group, blurred, each rank keeping its own probes. */
static int blur_channel(const stem_mpi *m, const stem_plan *plan, double *mine, long width)
{
    int size = m->layout.group_size, err = STEM_OK;
    long local = plan->probe_end - plan->probe_begin;
    double *full = stem_alloc(sizeof(double) * plan->n_probes * width, "whole scan (source size blur)");
    int *counts = stem_calloc(size, sizeof(int), "gather counts"),
        *displs = stem_calloc(size, sizeof(int), "gather counts");
    if (!full || !counts || !displs) err = STEM_ERR_MEMORY;
    if (!err && (double)plan->n_probes * width > INT_MAX)
        err = STEM_FAIL(STEM_ERR_CONFIG, "[probe] source_size: %ld probes x %ld values are too many to gather",
                        plan->n_probes, width);
    for (int r = 0; r < size && !err; r++) { /* the plan's split (plan.c) */
        long b, e;
        stem_split_range(plan->n_probes, size, r, &b, &e);
        counts[r] = (int)((e - b) * width);
        displs[r] = (int)(b * width);
    }
    err = stem_mpi_agree(err, m->group);
    if (!err &&
        MPI_Allgatherv(mine, (int)(local * width), MPI_DOUBLE, full, counts, displs, MPI_DOUBLE, m->group) !=
            MPI_SUCCESS)
        err = STEM_FAIL(STEM_ERR_MPI, "MPI_Allgatherv of the scan for the source size blur failed");
    if (!err) err = stem_source_blur(plan, full, width);
    if (!err) memcpy(mine, full + plan->probe_begin * width, sizeof(double) * local * width);
    free(full);
    free(counts);
    free(displs);
    return stem_mpi_agree(err, m->group); /* every rank goes on to the next channel, or none */
}

int stem_phonon_blur(const stem_mpi *m, const stem_plan *plan, stem_result *res)
{
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++) {
        if (ch == STEM_CH_CBED || !res->data[ch] || stem_channel_table[ch].is_float || !stem_channel_per_probe(ch))
            continue;
        STEM_TRY(blur_channel(m, plan, (double *)res->data[ch], res->width[ch]));
        /* the standard error blurred alike: an upper bound of the blurred mean's (docs/accuracy.md) */
        if (res->err[ch]) STEM_TRY(blur_channel(m, plan, res->err[ch], res->width[ch]));
    }
    return STEM_OK;
}

int stem_phonon_scan_errors(const stem_mpi *m, const stem_plan *plan, stem_result *res)
{
    double local[STEM_MAX_IMAGES] = {0};
    if (res && m->layout.group == 0) { /* the written maps (every group holds the same) */
        stem_result_errors_scan(res);
        memcpy(local, res->image_se2, sizeof local);
    }
    if (plan->n_images > 0)
        STEM_MPI_CALL(MPI_Allreduce(MPI_IN_PLACE, local, plan->n_images, MPI_DOUBLE, MPI_SUM, m->world));
    if (res) memcpy(res->image_se2, local, sizeof local);
    return STEM_OK;
}

/* A safe point: all ranks learn whether any failed (its message printed
 * once) or was asked to stop, and leave together with the same status, so
 * none waits in a collective the others abandoned. */
int stem_phonon_safe_point(const stem_mpi *m, int err)
{
    double t = stem_wall_time();
    err = stem_mpi_agree(err, m->world);
    int sig = stem_signal_pending(), any = sig;
    STEM_MPI_CALL(MPI_Allreduce(&sig, &any, 1, MPI_INT, MPI_MAX, m->world));
    stem_phase_add(STEM_PHASE_WAIT, t);
    return any ? stem_signal_status(any) : err;
}
