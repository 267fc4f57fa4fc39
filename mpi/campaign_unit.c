/* One unit of a campaign (campaign_private.h): the tilt's model, the configuration's
 * transmission functions (built ahead while the engine runs, where the leader alone builds
 * them), the algorithm on the tilt's points or a distributed FFT's slabs; and the group
 * state every unit uses (detector, lookup table, result buffers). */
#include "campaign_private.h"

#include <stdlib.h>
#include <string.h>

#include "../src/phases.h"
#include "../src/test_hooks.h"
#include "phonon_steps.h"

/* The model rotated to tilt t into *rotated, unless *at says it is there already. */
static int rotated_to(campaign *cp, int t, int *at, stem_atoms *rotated)
{
    if (*at == t) return STEM_OK;
    double tx, ty;
    stem_atoms_free(rotated);
    *at = -1;
    stem_series_tilt_values(cp->job->series, t, &tx, &ty);
    STEM_TRY(stem_atoms_rotated(cp->job->atoms, cp->job->cfg->rotation_z, tx, ty, rotated));
    *at = t;
    return STEM_OK;
}

/* Tilt t's model: a series' rotated to the tilt (kept for the group's next unit of the same
 * tilt), a plain run's as it was prepared. */
int stem_campaign_unit_model(campaign *cp, int t, const stem_atoms **model)
{
    *model = cp->job->atoms;
    if (!cp->checkpointed) return STEM_OK;
    STEM_TRY(rotated_to(cp, t, &cp->tilt, &cp->tilted));
    *model = &cp->tilted;
    return STEM_OK;
}

/* Unit `next`'s transmission functions started on the helper (phonon_loop.h), with its tilt's
 * plan and model (a series': rotated into a copy of its own, since this thread's model moves
 * to other tilts meanwhile). A failure here only leaves next to be built when it runs. */
static void start_ahead(campaign *cp, int next)
{
    int t = next / cp->n_configs;
    const stem_atoms *model = cp->job->atoms;
    if (cp->checkpointed) { /* as stem_campaign_unit_model */
        if (rotated_to(cp, t, &cp->ahead_tilt, &cp->ahead_tilted)) return;
        model = &cp->ahead_tilted;
    }
    cp->ahead.plan = &stem_campaign_tilt_plans(cp, t)[0];
    cp->ahead.atoms = model;
    cp->ahead_unit = next;
    stem_build_ahead_start(&cp->ahead, next % cp->n_configs, cp->spare);
}

/* Unit u (tilt t, configuration c): its tilt's points computed and added into res[per_tilt];
 * collective over the group, agreed. With a static schedule (next >= 0: the unit this group
 * runs next) the group leader builds next's transmission functions ahead while the engine
 * runs this one (only where the leader alone builds them: group_state). */
/* The group agrees on err; the time a faster rank waits there for a slower one is "wait". */
static int group_agree(const stem_mpi *m, int err)
{
    double t = stem_wall_time();
    err = stem_mpi_agree(err, m->group);
    stem_phase_add(STEM_PHASE_WAIT, t);
    return err;
}

int stem_campaign_compute_unit(campaign *cp, int u, int next, stem_result *res)
{
    const stem_campaign_job *job = cp->job;
    int t = u / cp->n_configs, c = u % cp->n_configs;
    const stem_atoms *model = NULL;
    int err = group_agree(job->m, stem_campaign_unit_model(cp, t, &model));
    const stem_plan *plans = stem_campaign_tilt_plans(cp, t);
    if (cp->dist) { /* the wave in slabs: its own slices, propagation and record */
        if (!err) err = stem_dist_unit_run(cp->dist, job->m, plans, cp->n_optics, model, c, res);
        return group_agree(job->m, err);
    }
    int loaded = cp->smatrix_io && cp->smatrix_io->load; /* the S-matrix read back: no transmission functions */
    if (!err && !loaded)
        err = stem_phonon_transmission(job->m, job->engine, &plans[0], model, &cp->table, c, cp->ready_unit == u,
                                       cp->trans, &cp->trans_node, &cp->split);
    cp->buffers.config = c;
    if (!err && cp->spare && next >= 0) start_ahead(cp, next);
    /* a probe queue: the node's rows were read (taken) by their ranks before any is written again, and
     * every probe of the node is in them before any rank reads its own */
    if (cp->queue.word && stem_shared_sync(&job->m->share, &cp->res_node) && !err) err = STEM_ERR_MPI;
    if (!err)
        err =
            stem_algorithm_run_points(job->engine, plans, cp->n_optics, job->m, cp->trans, &cp->det, res, &cp->buffers);
    if (cp->queue.word && stem_shared_sync(&job->m->share, &cp->res_node) && !err) err = STEM_ERR_MPI;
    if (cp->spare) {
        int built = stem_build_ahead_finish(&cp->ahead) >= 0;
        cp->ready_unit = built ? cp->ahead_unit : -1;
        if (built) {
            stem_complex *ahead = cp->spare;
            cp->spare = cp->trans;
            cp->trans = ahead;
        }
    }
    return group_agree(job->m, err);
}

/* One unit's results, zeroed before each unit (the sums keep the rest); the group leader's
 * S-matrix buffer with [output] save_smatrix on a checkpointed run. */
static int unit_results(campaign *cp)
{
    if (cp->streamed) return STEM_OK; /* streamed 4D: the blocks' own (campaign_blocks.c) */
    STEM_ALLOC(cp->res, (size_t)cp->per_tilt, "unit results");
    for (int j = 0; j < cp->per_tilt; j++) STEM_TRY(stem_result_alloc(cp->job->plan, &cp->res[j]));
    if (cp->smatrix_bytes && cp->job->m->layout.group_rank == 0)
        STEM_ALLOC(cp->smatrix_unit, cp->smatrix_bytes, "one unit's S-matrix (checkpoint)");
    return STEM_OK;
}

/* Whether the group's ranks on this node take their multislice probes from one queue: the CPU
 * engine, more than one rank of the group here, the results whole per probe and taken after
 * the unit on this thread (not streamed in blocks, no focal-spread parts, no background take). */
static int queue_wanted(const campaign *cp)
{
    const stem_campaign_job *job = cp->job;
    const stem_plan *plan = job->plan;
    const stem_node_share *s = &job->m->share;
    int focal = plan->opt.focal_spread > 0 && plan->opt.focal_points > 1;
    return plan->opt.node_queue && s->active && s->node_size > 1 && plan->algorithm == STEM_ALG_MULTISLICE &&
        job->engine->uses_fftw && !job->engine->host_idle && !stem_test_hooks()->background_take && !plan->dist &&
        !cp->streamed && !focal;
}

/* The node's probes [first, first + n): this rank's and its node neighbours', consecutive. */
static int node_probes(const campaign *cp, long *first, long *n)
{
    const stem_plan *plan = cp->job->plan;
    const stem_node_share *s = &cp->job->m->share;
    long v[2] = {-plan->probe_begin, plan->probe_end}, count = plan->probe_end - plan->probe_begin, total = 0;
    STEM_MPI_CALL(MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_LONG, MPI_MAX, s->node));
    STEM_MPI_CALL(MPI_Allreduce(&count, &total, 1, MPI_LONG, MPI_SUM, s->node));
    *first = -v[0];
    *n = v[1] - *first;
    STEM_ASSERT(total == *n, "the probes of a node's ranks follow each other");
    return STEM_OK;
}

/* A probe queue: every unit result's per-probe rows moved into the node's shared memory (one
 * cache line for the queue's counter first), so that any rank's thread may fill any probe of
 * the node's; where /dev/shm has no room, each rank keeps its own. Collective over the node. */
static int queue_results(campaign *cp)
{
    const stem_plan *plan = cp->job->plan;
    const stem_node_share *s = &cp->job->m->share;
    cp->res_node.win = MPI_WIN_NULL;
    if (!cp->res || !queue_wanted(cp)) return STEM_OK;
    long first = 0, n = 0;
    STEM_TRY(node_probes(cp, &first, &n));
    size_t rows = stem_result_rows_bytes(plan, n), bytes = STEM_WORK_QUEUE_BYTES + rows * (size_t)cp->per_tilt;
    char dir[256] = "";
    int fit = 0;
    STEM_TRY(stem_shared_fits(s, (double)bytes, &fit, dir, sizeof dir));
    if (!fit) {
        if (cp->job->m->layout.world_rank == 0)
            stem_info("probe queue: off (%.2f GiB of node-shared results do not fit %s twice over)",
                      bytes / 1073741824.0, dir);
        return STEM_OK;
    }
    STEM_TRY(stem_shared_alloc(s, bytes, "the node's unit results (probe queue)", &cp->res_node));
    if (s->node_rank == 0) memset(cp->res_node.base, 0, bytes);
    STEM_TRY(stem_shared_sync(s, &cp->res_node));
    cp->queue = (stem_work_queue){cp->res_node.base, 0, 0};
    int err = STEM_OK;
    for (int j = 0; j < cp->per_tilt && !err; j++) {
        stem_result_free(&cp->res[j]);
        err = stem_result_alloc_rows(plan, (char *)cp->res_node.base + STEM_WORK_QUEUE_BYTES + rows * (size_t)j,
                                     plan->probe_begin - first, n, &cp->queue, &cp->res[j]);
    }
    if (!err && cp->job->m->layout.world_rank == 0)
        stem_info("probe queue: the %d ranks of a node take its %ld probes from one queue (%.1f MiB of results "
                  "in node-shared memory)",
                  s->node_size, n, bytes / 1048576.0);
    return err;
}

/* A transmission buffer of this rank's own that the engine builds and uploads (the GPU),
 * page-locked (lock) so that its copies run at the bus's rate, or released before it is freed. */
static void transmission_lock(const campaign *cp, stem_complex *p, int lock)
{
    const stem_engine *engine = cp->job->engine;
    const stem_plan *plan = cp->job->plan;
    if (!engine->transmission) return; /* the CPU builds them, in node-shared memory perhaps */
    if (lock && engine->host_pin)
        engine->host_pin(engine, p, (size_t)plan->nx * plan->ny * plan->n_slices * sizeof(stem_complex));
    if (!lock && engine->host_unpin) engine->host_unpin(engine, p);
}

/* A run's second transmission buffer, for the next unit built ahead: only where the leader
 * alone builds and broadcasts (an engine with its own transmission step, or a group of one) and
 * leaves the host's cores idle; where the group shares the build, a leader holding the
 * configuration already would broadcast while the others wait in the exchange. A series' next
 * unit may be of the next tilt: start_ahead rotates its model. */
static int ahead_buffer(campaign *cp)
{
    const stem_campaign_job *job = cp->job;
    const stem_layout *L = &job->m->layout;
    int rounds = (cp->n_units + L->n_groups - 1) / L->n_groups;
    int loaded = cp->smatrix_io && cp->smatrix_io->load;
    int idle = job->engine->host_idle || stem_test_hooks()->build_ahead;
    if (loaded || cp->streamed || !idle || L->group_rank != 0 || rounds <= 1 ||
        !(job->engine->transmission || L->group_size == 1))
        return STEM_OK;
    const stem_plan *plan = job->plan;
    size_t n = (size_t)plan->nx * plan->ny * plan->n_slices;
    cp->spare = stem_fft_alloc(n, "transmission functions (built ahead)");
    if (!cp->spare) return STEM_ERR_MEMORY;
    transmission_lock(cp, cp->spare, 1);
    stem_debug("transmission functions: each next unit's built ahead on a helper thread while this one runs "
               "(one more copy, %.2f GiB)",
               n * sizeof(stem_complex) / 1073741824.0);
    cp->ahead = (stem_build_ahead){.engine = job->engine, .table = &cp->table}; /* plan, atoms: start_ahead's */
    return STEM_OK;
}

/* What a group keeps from one unit to the next: the detector, the sink's buffers, the
 * transmission functions (in the node's shared memory where the group's ranks build them
 * together: the CPU; an engine that builds them itself, the GPU, hands each rank its own
 * copy) and the lookup table, or a distributed FFT's slabs. */
int stem_campaign_group_state(campaign *cp)
{
    const stem_campaign_job *job = cp->job;
    const stem_mpi *m = job->m;
    const stem_plan *plan = job->plan;
    double t = stem_wall_time();
    int err = stem_phonon_injected_failure(m, "campaign");
    if (!err) err = stem_detector_build(plan, &cp->det);
    if (!err) err = unit_results(cp);
    err = stem_mpi_agree(err, m->group); /* the shared buffer is allocated by the node's ranks together */
    if (!err) err = stem_mpi_agree(queue_results(cp), m->group);
    if (plan->dist) /* no rank holds a whole slice: the slabs' own state */
        return err ? err : stem_dist_unit_create(m, plan, job->atoms, job->potentials, &cp->dist);
    if (!err)
        err = stem_node_buffer_alloc(&m->share, m->share.active && !job->engine->transmission,
                                     (size_t)plan->nx * plan->ny * plan->n_slices, "transmission functions",
                                     &cp->trans_node, &cp->trans);
    if (!err) transmission_lock(cp, cp->trans, 1);
    int split = !job->engine->transmission && plan->opt.node_queue && !plan->opt.potential_file[0] &&
        !(cp->smatrix_io && cp->smatrix_io->load);
    if (!err) err = stem_mpi_agree(stem_transmission_split_alloc(m, plan, split, &cp->split), m->group);
    t = stem_phase_add(STEM_PHASE_SETUP, t);
    if (!(cp->smatrix_io && cp->smatrix_io->load)) /* the S-matrices read back: no potential needed */
        err = stem_phonon_lookup_table(m, plan, job->atoms, job->potentials, err, &cp->table, &cp->table_node);
    stem_phase_add(STEM_PHASE_TABLE, t);
    if (!err) err = ahead_buffer(cp); /* the leader's alone: agreed at the first safe point */
    return err;
}

void stem_campaign_group_state_free(campaign *cp)
{
    stem_build_ahead_finish(&cp->ahead); /* left early: never free a buffer a helper writes */
    transmission_lock(cp, cp->spare, 0); /* the two swap places unit by unit */
    transmission_lock(cp, cp->trans, 0);
    stem_fft_free(cp->spare);
    cp->spare = NULL;
    stem_dist_unit_free(cp->dist);
    cp->dist = NULL;
    stem_algorithm_buffers_free(&cp->buffers);
    stem_potential_table_free(&cp->table);
    stem_shared_free(&cp->table_node);
    stem_node_buffer_free(&cp->trans_node, cp->trans);
    cp->trans = NULL;
    stem_transmission_split_free(&cp->split);
    for (int j = 0; cp->res && j < cp->per_tilt; j++) stem_result_free(&cp->res[j]);
    free(cp->res);
    cp->res = NULL;
    if (cp->queue.word && cp->job->m->layout.world_rank == 0) /* rank 0's share of its node's probes */
        stem_debug("probe queue: rank 0 computed %ld probes", cp->queue.taken);
    stem_shared_free(&cp->res_node);
    cp->queue.word = NULL;
    stem_detector_free(&cp->det);
    stem_atoms_free(&cp->tilted);
    cp->tilt = -1;
    stem_atoms_free(&cp->ahead_tilted);
    cp->ahead_tilt = -1;
    free(cp->smatrix_unit);
    cp->smatrix_unit = NULL;
}
