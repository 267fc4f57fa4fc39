/* A plain run's 4D patterns streamed to the output in blocks of probes (plan->probe_block,
 * src/plan_blocks.c; campaign_private.h). Each block of a rank's probes runs through every
 * configuration (its group's share of them) before it is written: the block's patterns go
 * to the block's exact sums (the groups' added in the first), are finished, checked and
 * written to /cbed collectively; every other channel goes to the run's sums at the block's
 * rows, finished and written at the end as any run's. Integer sums: the file equals the
 * unstreamed run's bit for bit. The transmission functions of every configuration are kept
 * (built once) where the plan found room, else built again for each block. */
#include "campaign_private.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../src/phases.h"
#include "../src/result_check.h"
#include "../src/signals.h"
#include "campaign_sums.h"
#include "checkpoint_files.h"
#include "phonon_steps.h"

/* This rank's probes of block b: [begin(b), begin(b + 1)). */
static long block_begin(const stem_plan *plan, int b)
{
    long x = plan->probe_begin + (long)b * plan->probe_block;
    return x < plan->probe_end ? x : plan->probe_end;
}

static int configs_of_group(const campaign *cp, int c) { return c % cp->job->m->layout.n_groups; }

/* The block's plan, results (every channel: what one configuration leaves) and 4D sums, sized
 * for the first (the largest) block. */
static int blocks_alloc(campaign *cp)
{
    const stem_plan *plan = cp->job->plan;
    cp->block_plan = *plan; /* shares the plan's tables: read only */
    cp->block_plan.probe_end = block_begin(plan, 1);
    STEM_TRY(stem_result_alloc(&cp->block_plan, &cp->block_res));
    return stem_acc_alloc_channels(&cp->block_plan, 1, STEM_ACC_ONLY_4D, &cp->block_acc);
}

/* [simulation] smatrix_file: the S-matrices are read back, no transmission functions needed. */
static int smatrix_loaded(const campaign *cp) { return cp->smatrix_io && cp->smatrix_io->load; }

/* plan->keep_configs: every configuration this group runs, built once into buffers of their
 * own (node-shared where the group's ranks build them together, as the unit's buffer). */
static int keep_transmissions(campaign *cp)
{
    const stem_campaign_job *job = cp->job;
    const stem_mpi *m = job->m;
    const stem_plan *plan = job->plan;
    if (!plan->keep_configs || cp->n_configs == 1 || smatrix_loaded(cp)) return STEM_OK;
    STEM_ALLOC(cp->kept, (size_t)cp->n_configs, "each configuration's transmission functions");
    STEM_ALLOC(cp->kept_node, (size_t)cp->n_configs, "each configuration's shared buffer");
    for (int c = 0; c < cp->n_configs; c++) cp->kept_node[c].win = MPI_WIN_NULL;
    size_t n = (size_t)plan->nx * plan->ny * plan->n_slices;
    int err = STEM_OK;
    for (int c = 0; c < cp->n_configs && !err; c++) {
        if (configs_of_group(cp, c) != m->layout.group) continue;
        err = stem_node_buffer_alloc(&m->share, m->share.active && !job->engine->transmission, n,
                                     "transmission functions (one per configuration, kept for the blocks)",
                                     &cp->kept_node[c], &cp->kept[c]);
        err = stem_mpi_agree(err, m->group);
        if (!err)
            err = stem_phonon_transmission(m, job->engine, plan, job->atoms, &cp->table, c, 0, cp->kept[c],
                                           &cp->kept_node[c], &cp->split);
    }
    return err;
}

static void keep_free(campaign *cp)
{
    for (int c = 0; cp->kept && c < cp->n_configs; c++)
        if (cp->kept[c]) stem_node_buffer_free(&cp->kept_node[c], cp->kept[c]);
    free(cp->kept);
    free(cp->kept_node);
    cp->kept = NULL;
    cp->kept_node = NULL;
}

/* Configuration c's transmission functions: kept, built once (one configuration), or built again. */
static int block_transmission(campaign *cp, int c, const stem_complex **trans)
{
    const stem_campaign_job *job = cp->job;
    if (cp->kept) {
        *trans = cp->kept[c];
        return STEM_OK;
    }
    *trans = cp->trans;
    if (cp->ready == c || smatrix_loaded(cp)) return STEM_OK; /* built, or not needed */
    cp->ready = -1;
    STEM_TRY(stem_phonon_transmission(job->m, job->engine, job->plan, job->atoms, &cp->table, c, 0, cp->trans,
                                      &cp->trans_node, &cp->split));
    cp->ready = c;
    return STEM_OK;
}

/* The group's configurations of block b (probes [b0, b1)): the patterns into the block's sums,
 * the rest into the run's at the block's rows. Collective over the group. */
static int block_configs(campaign *cp, long b0, long b1)
{
    const stem_campaign_job *job = cp->job;
    const stem_mpi *m = job->m;
    int threads = job->plan->threads, err = STEM_OK;
    for (int c = m->layout.group; c < cp->n_configs && !err; c += m->layout.n_groups) {
        const stem_complex *trans = NULL;
        err = stem_mpi_agree(block_transmission(cp, c, &trans), m->group);
        cp->buffers.config = c;
        if (!err)
            err = stem_algorithm_run_points(job->engine, &cp->block_plan, 1, m, trans, &cp->det, &cp->block_res,
                                            &cp->buffers);
        err = stem_mpi_agree(err, m->group);
        double t = stem_wall_time();
        if (!err) err = stem_acc_take(&cp->block_acc, 0, c, &cp->block_res, threads);
        if (!err)
            err = stem_acc_take_rows(&cp->acc, 0, c, &cp->block_res, b0 - job->plan->probe_begin, b1 - b0, threads);
        stem_phase_add(STEM_PHASE_REDUCTION, t);
    }
    return err;
}

/* The first group's ranks: the block's patterns finished from its sums (the mean) and checked. */
static int block_finish(campaign *cp)
{
    const stem_plan *plan = cp->job->plan;
    STEM_TRY(stem_acc_to_result(&cp->block_acc, 0, &cp->block_res, plan->threads));
    STEM_TRY(stem_result_finalise(&cp->block_res, cp->n_configs, plan->threads));
    return stem_result_check_channel(&cp->block_plan, &cp->block_res, STEM_CH_CBED, "");
}

/* Block b: computed, its sums over the groups, finished, written; collective over the world. */
static int run_block(campaign *cp, int b)
{
    const stem_campaign_job *job = cp->job;
    const stem_mpi *m = job->m;
    long b0 = block_begin(job->plan, b), b1 = block_begin(job->plan, b + 1), n = b1 - b0;
    cp->block_plan.probe_begin = b0;
    cp->block_plan.probe_end = b1;
    cp->block_res.n_probes = cp->block_acc.n_probes = n;
    int err = stem_mpi_agree(block_configs(cp, b0, b1), m->world);
    double t = stem_wall_time();
    if (!err && m->layout.n_groups > 1) { /* the groups' configurations into the first's sums */
        stem_fixed_array patterns = {cp->block_acc.sum[STEM_CH_CBED], n * cp->block_acc.width[STEM_CH_CBED], 8};
        err = stem_node_reduce_fixed(&m->cross_share, &patterns, 1, m->cross, job->plan->threads, NULL);
        if (!err)
            err = MPI_Allreduce(MPI_IN_PLACE, cp->block_acc.bad, 1, MPI_UINT8_T, MPI_MAX, m->cross) == MPI_SUCCESS
                ? STEM_OK
                : STEM_FAIL(STEM_ERR_MPI, "MPI_Allreduce of a 4D block's range flag failed");
    }
    int writes = m->layout.group == 0;
    if (!err && writes) err = block_finish(cp);
    err = stem_mpi_agree(err, m->world);
    stem_phase_add(STEM_PHASE_REDUCTION, t);
    t = stem_wall_time();
    if (!err) err = stem_output_stream_cbed(cp->stream, b0, writes ? n : 0, writes ? cp->block_res.cbed : NULL);
    stem_phase_add(STEM_PHASE_WRITE, t);
    stem_result_zero(&cp->block_res);
    stem_acc_zero(&cp->block_acc, STEM_ACC_PART);
    cp->block_acc.bad[0] = 0;
    return err;
}

/* The output opened for the blocks. Checkpointed: the patterns' file is also kept in the
 * checkpoint (a hard link), so that a stop leaves it; a resume adopts it as its temporary. */
static int open_stream(campaign *cp, const char *dir)
{
    const stem_campaign_job *job = cp->job;
    const stem_mpi *m = job->m;
    char kept[STEM_PATH_MAX + 32];
    snprintf(kept, sizeof kept, "%s/" STEM_CHECKPOINT_PATTERNS_NAME, dir);
    int resume = cp->checkpointed && cp->ck.n_done > 0, err = STEM_OK;
    if (cp->checkpointed && m->layout.world_rank == 0) {
        if (resume)
            err = stem_output_target_adopt(job->target, kept);
        else if (unlink(kept) && errno != ENOENT) /* a stopped run's before any block was stored: this campaign's */
            err = STEM_FAIL(STEM_ERR_IO, "checkpoint: cannot remove %s: %s", kept, strerror(errno));
    }
    err = stem_mpi_agree(err, m->world);
    if (!err) err = stem_output_stream_open(m->world, job->target, job->plan, resume, &cp->stream);
    if (!err && cp->checkpointed && !resume && m->layout.world_rank == 0) {
        err = stem_output_target_keep(job->target, kept);
        if (err == STEM_OUTPUT_NOT_KEPT) err = STEM_OK;
    }
    if (!err && resume && m->layout.world_rank == 0)
        stem_info("resuming: %d of %d 4D blocks done, their patterns in %s", cp->ck.n_done, cp->n_units, kept);
    return stem_mpi_agree(err, m->world);
}

/* Checkpointed: the blocks written so far made durable, then the sums stored with them. */
static int store_blocks(campaign *cp, const char *why)
{
    int err = stem_output_stream_flush(cp->stream);
    return err ? err : stem_mpi_agree(stem_campaign_store(cp, why), cp->job->m->world);
}

/* Every block not done (a resume's are in the checkpoint), a safe point after each. */
static int run_blocks(campaign *cp)
{
    const stem_mpi *m = cp->job->m;
    const stem_plan *plan = cp->job->plan;
    stem_progress progress;
    stem_progress_begin(&progress, "4D blocks (every configuration of each)", plan->n_blocks);
    double start = stem_wall_time();
    int err = STEM_OK;
    for (int b = 0; b < plan->n_blocks && !err; b++) {
        if (cp->done[b]) continue; /* the same map on every rank */
        err = stem_phonon_safe_point(m, run_block(cp, b));
        if (!err) cp->done[b] = 1, cp->n_added++;
        if (!err && stem_campaign_store_due(cp)) err = store_blocks(cp, "interval");
        stem_progress_update(&progress, b + 1);
        stem_campaign_test_delay();
    }
    stem_progress_end(&progress);
    cp->busy = stem_wall_time() - start;
    return err;
}

/* After the blocks: the sums collected (and stored), or at a failure the output removed or,
 * checkpointed, closed whole for a resume (a signal's stop stores the sums first). */
static int blocks_end(campaign *cp, const char *dir, int err)
{
    const stem_mpi *m = cp->job->m;
    int sig = stem_signal_pending(), stopped = sig;
    MPI_Allreduce(&sig, &stopped, 1, MPI_INT, MPI_MAX, m->world);
    if ((err || stopped) && cp->stream) {
        int kept =
            cp->checkpointed ? stem_output_stream_suspend(cp->stream) : stem_output_stream_abort(cp->stream, err);
        cp->stream = NULL;
        if (!err) err = kept;
    }
    if (stopped && cp->checkpointed) return stem_campaign_stop_stored(cp, dir, stopped);
    if (err) return err;
    return cp->checkpointed ? store_blocks(cp, "all blocks")
                            : stem_mpi_agree(stem_sums_collect(&cp->acc, m, cp->job->plan->threads, NULL), m->world);
}

int stem_campaign_blocks(campaign *cp, const char *dir)
{
    const stem_campaign_job *job = cp->job;
    const stem_mpi *m = job->m;
    const stem_plan *plan = job->plan;
    cp->n_run = cp->n_units - cp->ck.n_done;
    int err = stem_campaign_group_state(cp);
    if (!err) err = blocks_alloc(cp);
    err = stem_mpi_agree(err, m->world);
    if (!err) err = open_stream(cp, dir);
    if (!err) err = stem_mpi_agree(keep_transmissions(cp), m->world);
    if (!err && m->layout.world_rank == 0)
        stem_info("4D patterns streamed to the output in %d blocks of up to %ld probes per rank", plan->n_blocks,
                  plan->probe_block);
    if (!err) err = run_blocks(cp);
    keep_free(cp);
    stem_acc_free(&cp->block_acc);
    stem_result_free(&cp->block_res);
    stem_campaign_group_state_free(cp);
    return blocks_end(cp, dir, err);
}
