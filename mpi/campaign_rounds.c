/* The campaign's schedule (campaign_private.h): the units not yet in the sums, in static
 * rounds (round r gives group g the (r x groups + g)-th of them), each unit computed into
 * zeroed results and added to the group's exact sums. Between rounds every rank meets at a
 * safe point (errors and signals agreed); there a checkpointed run collects the sums into
 * their owners and stores them, once checkpoint_interval has passed since the last store, at
 * a signal (then exit STEM_STOPPED_CHECKPOINTED) and after the last round. Integer sums make
 * the result independent of the rounds, the groups and the stops. */
#include "campaign_private.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../src/signals.h"
#include "../src/test_hooks.h"
#include "campaign_sums.h"
#include "../src/phases.h"
#include "phonon_steps.h"

/* The units not in the sums, in order (tilt-major: a group's next unit usually shares its
 * tilt's model). */
static int *units_to_do(const campaign *cp, int *n)
{
    int *todo = stem_calloc((size_t)cp->n_units + 1, sizeof(int), "unit list");
    *n = 0;
    for (int u = 0; todo && u < cp->n_units; u++)
        if (!cp->done[u]) todo[(*n)++] = u;
    return todo;
}

/* Whether any rank of the group was asked to stop (a unit a signal cut short is never added). */
static int group_stopping(const stem_mpi *m)
{
    int sig = stem_signal_pending(), any = sig;
    if (MPI_Allreduce(&sig, &any, 1, MPI_INT, MPI_MAX, m->group) != MPI_SUCCESS) return 1;
    return any;
}

/* Unit u's results (every point of its tilt) into the sums, zeroed as they are read. */
static int take_unit(campaign *cp, stem_result *res, int u)
{
    double t = stem_wall_time();
    int tilt = u / cp->n_configs, c = u % cp->n_configs, err = STEM_OK;
    for (int d = 0; d < cp->per_tilt && !err; d++)
        err = stem_acc_take(&cp->acc, tilt * cp->per_tilt + d, c, &res[d], cp->job->plan->threads);
    if (err) cp->sums_damaged = 1; /* part of the unit may be in the sums: never stored */
    cp->take_busy += stem_wall_time() - t;
    return err;
}

static void *take_in_background(void *arg)
{
    campaign *cp = arg;
    cp->take_err = take_unit(cp, cp->res_taken, cp->take_unit);
    return NULL;
}

/* The background take finished (its failure returned); the time the units waited for it. */
static int take_join(campaign *cp)
{
    if (!cp->taking) return STEM_OK;
    double t = stem_wall_time();
    pthread_join(cp->taker, NULL);
    cp->taking = 0;
    cp->take_wait += stem_wall_time() - t;
    stem_phase_add(STEM_PHASE_REDUCTION, t);
    return cp->take_err;
}

/* Unit u's results res to the sums on this thread, the units waiting for it. */
static int take_in_line(campaign *cp, stem_result *res, int u)
{
    double t = stem_wall_time();
    int err = take_unit(cp, res, u);
    stem_phase_add(STEM_PHASE_REDUCTION, t);
    return err;
}

/* Unit u's results to the sums: by a helper thread while the next unit computes (the two
 * result buffers swap), or in line; the engine's results are zero again either way. */
static int take_or_hand_over(campaign *cp, int u)
{
    STEM_TRY(take_join(cp));
    if (!cp->res_taken) return take_in_line(cp, cp->res, u);
    stem_result *r = cp->res_taken;
    cp->res_taken = cp->res;
    cp->res = r;
    cp->take_unit = u;
    cp->take_err = STEM_OK;
    if (pthread_create(&cp->taker, NULL, take_in_background, cp)) /* no thread: in line */
        return take_in_line(cp, cp->res_taken, u);
    cp->taking = 1;
    return STEM_OK;
}

/* An engine that leaves the host idle: the second set of results the helper thread takes
 * (test hook STEMSIM_TEST_BACKGROUND_TAKE=1: on any engine, so that the CPU tests run it). */
static int take_buffers(campaign *cp)
{
    if (!cp->job->engine->host_idle && !stem_test_hooks()->background_take) return STEM_OK;
    STEM_ALLOC(cp->res_taken, (size_t)cp->per_tilt, "unit results (added in the background)");
    for (int j = 0; j < cp->per_tilt; j++) STEM_TRY(stem_result_alloc(cp->job->plan, &cp->res_taken[j]));
    return STEM_OK;
}

static void take_buffers_free(campaign *cp)
{
    take_join(cp);
    for (int j = 0; cp->res_taken && j < cp->per_tilt; j++) stem_result_free(&cp->res_taken[j]);
    free(cp->res_taken);
    cp->res_taken = NULL;
}

/* Every rank's sums into their owners and, on a checkpointed run with new units, the state
 * stored with the units it holds (collective over the world). */
int stem_campaign_store(campaign *cp, const char *why)
{
    const stem_mpi *m = cp->job->m;
    int err = stem_mpi_agree(take_join(cp), m->world); /* every unit in the sums first */
    if (err) return err;
    double t = stem_wall_time();
    int added = cp->n_added;
    STEM_MPI_CALL(MPI_Allreduce(MPI_IN_PLACE, &added, 1, MPI_INT, MPI_SUM, m->world));
    double waited = stem_wall_time() - t;
    int node = 0;
    STEM_TRY(stem_sums_collect(&cp->acc, m, cp->job->plan->threads, &node));
    double collected = stem_phase_add(STEM_PHASE_REDUCTION, t) - t - waited;
    if (m->layout.world_size > 1)
        stem_debug(
            "the campaign's sums (%s): %.3f s waiting for the other ranks, %.1f MiB per rank collected in %.3f s%s",
            why, waited, stem_acc_bytes(cp->job->plan, cp->acc.n_points) / 1048576.0, collected,
            node ? " (the groups' through node-shared memory)" : "");
    cp->n_added = 0;
    if (!cp->checkpointed || (!added && cp->ck.has_state)) return STEM_OK;
    t = stem_wall_time();
    if (m->layout.world_size > 1)
        STEM_MPI_CALL(MPI_Allreduce(MPI_IN_PLACE, cp->done, cp->n_units, MPI_UNSIGNED_CHAR, MPI_MAX, m->world));
    STEM_TRY(stem_sums_store(&cp->acc, m, &cp->ck, cp->done));
    cp->last_store = stem_wall_time();
    stem_phase_add(STEM_PHASE_WRITE, t);
    stem_info("checkpoint: stored the sums of %d of %d units (%.1f MiB, %s) in %.2f s", cp->ck.n_done, cp->n_units,
              (double)cp->ck.state_bytes / 1048576.0, why, cp->last_store - t);
    return STEM_OK;
}

/* Rank 0 decides (its clock): a store is due once checkpoint_interval has passed. */
int stem_campaign_store_due(const campaign *cp)
{
    int due = cp->checkpointed && stem_wall_time() - cp->last_store >= cp->job->cfg->checkpoint_interval;
    MPI_Bcast(&due, 1, MPI_INT, 0, cp->job->m->world);
    return due;
}

/* Rank 0, after each unit its group finished: how far the campaign is. */
static void report_unit(const campaign *cp, int u, double took, int finished)
{
    const stem_series *s = cp->job->series;
    int t = u / cp->n_configs, c = u % cp->n_configs;
    double tx, ty, now = stem_wall_time();
    int here = finished - (cp->n_units - cp->n_run);
    double eta = here > 0 ? (now - cp->start) / here * (cp->n_units - finished) : 0;
    if (!s->n_points) {
        stem_info("configuration %d of %d done in %.2f s; ETA %.0f s", c + 1, cp->n_configs, took, eta);
        return;
    }
    stem_series_tilt_values(s, t, &tx, &ty);
    stem_info("unit %d of %d done (tilt_x %g, tilt_y %g deg, configuration %d of %d, %d point%s) in %.2f s; "
              "campaign ETA %.0f s",
              finished, cp->n_units, tx, ty, c + 1, cp->n_configs, cp->per_tilt, cp->per_tilt == 1 ? "" : "s", took,
              eta);
}

void stem_campaign_test_delay(void)
{
    double d = stem_test_hooks()->unit_delay_s; /* test hook: time to signal a running job */
    if (d > 0) usleep((useconds_t)(d * 1e6));
}

/* [output] save_smatrix on a checkpointed run: the unit's S-matrix in its unit file, written by
 * the group leader before any state that holds the unit. */
static int store_smatrix(campaign *cp, int u)
{
    const stem_mpi *m = cp->job->m;
    int err = cp->smatrix_unit ? stem_checkpoint_store(&cp->ck, u, cp->smatrix_unit) : STEM_OK;
    return stem_mpi_agree(err, m->group);
}

/* Unit u computed and, unless a signal cut it short, added to the sums. */
static int run_unit(campaign *cp, int u, int next)
{
    const stem_mpi *m = cp->job->m;
    double t = stem_wall_time(); /* the results are zero: allocated so, and zeroed as the sums take them */
    int err = stem_campaign_compute_unit(cp, u, next, cp->res);
    if (err || group_stopping(m)) return err;
    if (cp->smatrix_bytes) STEM_TRY(store_smatrix(cp, u));
    STEM_TRY(take_or_hand_over(cp, u));
    cp->done[u] = 1;
    cp->n_added++;
    cp->busy += stem_wall_time() - t;
    return STEM_OK;
}

/* The rounds; at each round's start the safe point (err: a failure before them) and, when due, a store. */
static int rounds(campaign *cp, const int *todo, int n_todo, int err)
{
    const stem_mpi *m = cp->job->m;
    const stem_layout *L = &m->layout;
    int n_rounds = (n_todo + L->n_groups - 1) / L->n_groups;
    for (int r = 0; r <= n_rounds; r++) {
        if ((err = stem_phonon_safe_point(m, err))) break;
        if (r == n_rounds) break;
        if (r > 0 && stem_campaign_store_due(cp) &&
            (err = stem_mpi_agree(stem_campaign_store(cp, "interval"), m->world)))
            break;
        int k = r * L->n_groups + L->group;
        if (k >= n_todo) continue;
        double t = stem_wall_time();
        err = run_unit(cp, todo[k], k + L->n_groups < n_todo ? todo[k + L->n_groups] : -1);
        if (err) continue;
        int finished = (cp->n_units - n_todo) + (r + 1) * L->n_groups;
        if (L->group_rank == 0 && cp->done[todo[k]])
            report_unit(cp, todo[k], stem_wall_time() - t, finished < cp->n_units ? finished : cp->n_units);
        stem_phases_log_config(todo[k], cp->n_units);
        stem_campaign_test_delay();
    }
    return err;
}

/* A stop keeps what the units added: collected and stored, exit STEM_STOPPED_CHECKPOINTED. */
int stem_campaign_stop_stored(campaign *cp, const char *dir, int sig)
{
    stem_signal_orderly_stop(); /* every rank is here: the store may take longer than the grace period */
    int err = stem_mpi_agree(stem_campaign_store(cp, "signal"), cp->job->m->world);
    if (err) return err;
    stem_info("stopped by signal %d: the checkpoint %s keeps the sums of every finished unit; run the same command "
              "again to continue (exit %d)",
              sig, dir, STEM_STOPPED_CHECKPOINTED);
    return STEM_STOPPED_CHECKPOINTED;
}

int stem_campaign_rounds(campaign *cp, const char *dir)
{
    const stem_mpi *m = cp->job->m;
    int n_todo = 0, *todo = units_to_do(cp, &n_todo);
    int err = stem_mpi_agree(todo ? STEM_OK : STEM_ERR_MEMORY, m->world);
    cp->n_run = n_todo;
    if (!err && n_todo) {
        err = stem_campaign_group_state(cp);
        if (!err) err = take_buffers(cp);
        err = rounds(cp, todo, n_todo, err); /* a failure of the state agreed at the first safe point */
        int taken = take_join(cp), background = cp->res_taken != NULL;
        if (!err) err = taken;
        take_buffers_free(cp);
        stem_campaign_group_state_free(cp);
        double hidden = background && cp->take_busy > cp->take_wait ? cp->take_busy - cp->take_wait : 0;
        if (cp->take_busy > 0 && m->layout.world_rank == 0)
            stem_info("the campaign's sums: %.2f s of adding the units' values, %.2f s of it hidden behind the units",
                      cp->take_busy, hidden);
    }
    free(todo);
    int sig = stem_signal_pending(), stopped = sig;
    MPI_Allreduce(&sig, &stopped, 1, MPI_INT, MPI_MAX, m->world);
    /* a stop keeps the sums, whatever the unit it cut short returned (never added): only a failed
     * take may have left them half added, and then nothing is stored */
    if (stopped && cp->checkpointed && !cp->sums_damaged) return stem_campaign_stop_stored(cp, dir, stopped);
    if (err) {
        if (cp->checkpointed && cp->ck.has_state)
            stem_info("the checkpoint %s keeps the sums of the %d units it held at its last store", dir, cp->ck.n_done);
        return err;
    }
    return stem_mpi_agree(stem_campaign_store(cp, "all units"), m->world);
}
