/* The driver of every run (campaign.h). stem_campaign_run, first below, is the whole flow;
 * after it, in order of use: the shape, one unit, the memory sink (its schedule and finish),
 * the checkpoint sink (its schedule, storage and read-back), the output. */
#include "../io/config.h"
#include "campaign.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algorithm.h"
#include "../src/channels.h"
#include "../src/phases.h"
#include "../src/result_check.h"
#include "../src/signals.h"
#include "phonon_loop.h"
#include "checkpoint.h"
#include "../io/potential_file.h"
#include "../io/smatrix_file.h"
#include "consistency.h"
#include "dist_hrtem.h"
#include "../src/slabs.h"
#include "smatrix_store.h"
#include "phonon_steps.h"

/* Where each channel of one point sits in a unit's payload (whole scan,
 * probe-major as in stem_result), then its PACBED; a unit holds its tilt's
 * points in series order (beam tilt, defocus, then depth fastest), then, with
 * [output] save_smatrix, its S-matrix by beam ([beam][crop_ny][crop_nx], the
 * thickest tilt's plan's size: every tilt has the same beams and window). */
typedef struct {
    long width[STEM_N_CHANNELS];
    size_t elt[STEM_N_CHANNELS], offset[STEM_N_CHANNELS];
    size_t pacbed_offset, point_bytes;
    size_t smatrix_offset, smatrix_bytes, unit_bytes;
} unit_layout;

typedef struct {
    const stem_campaign_job *job;
    int checkpointed;                          /* the sink: the checkpoint, or memory */
    int n_tilts, n_configs, n_optics, n_units; /* n_optics: beam tilts x defoci, the plans of one sample tilt */
    int n_planes, per_tilt; /* detection planes (depths, at least 1); points per unit (defoci x planes) */
    /* checkpoint sink: [n_tilts x n_optics], the plan at each tilt's thickness, beam tilt and
     * defocus (stable pointers); memory sink: NULL, the run's plan */
    stem_plan *plans;
    /* the group's working state, for any unit */
    stem_detector det;
    stem_potential_table table;
    stem_complex *trans;
    stem_shared_buffer trans_node;
    stem_algorithm_buffers buffers;
    const stem_smatrix_io *smatrix_io; /* PRISM's S-matrix read back or kept (NULL: neither) */
    int tilt;                          /* the tilt whose rotated model `tilted` is (-1: none) */
    stem_atoms tilted;
    stem_dist_unit *dist; /* a distributed FFT's state (plan->dist) */
    double start, busy;   /* units' start; this rank's time in its units */
    int n_run;            /* units this run computes (the same on every rank) */
    /* the memory sink: the group's running sums, and what a static schedule allows */
    stem_result *sum; /* job->keep, or own_sum */
    stem_result own_sum;
    stem_smatrix_store store; /* [output] save_smatrix's temporaries, smatrix_file's reader */
    stem_complex *spare;      /* the next configuration's transmission functions, built ahead */
    stem_build_ahead ahead;
    int ready; /* the configuration whose functions trans holds (-1: none) */
    /* the checkpoint sink */
    unit_layout layout;
    stem_checkpoint ck;
    MPI_Win win; /* rank 0's counters: [0] units handed out, [1] units finished */
    int *counter;
    stem_result *res;        /* [per_tilt]: one unit's points */
    char *payload;           /* group leader: one unit */
    stem_smatrix_io kept_io; /* smatrix_file read per tilt, or the S-matrix kept in the unit */
    int finished_at_start;
    stem_result out; /* the final read-back */
    void *scratch;
    /* the output */
    stem_potential_source potential; /* save_potential: the slices of tilt potential_tilt (-1: none) */
    int potential_tilt;
} campaign;

/* The stages, in the order stem_campaign_run calls them. */
static void campaign_shape(campaign *cp, const stem_campaign_job *job);
static int memory_open(campaign *cp);
static int memory_units(campaign *cp);
static int memory_finish(campaign *cp);
static int checkpoint_open(campaign *cp, const char *dir);
static int checkpoint_units(campaign *cp);
static int checkpoint_end(campaign *cp, const char *dir, int err);
static void report_balance(const campaign *cp);
static int write_output(campaign *cp);
static int checkpoint_close(campaign *cp, const char *dir, int err);
static void campaign_free(campaign *cp);

/* The whole run, top to bottom. */
int stem_campaign_run(const stem_campaign_job *job)
{
    campaign cp = {0};
    char dir[STEM_PATH_MAX];
    stem_series_checkpoint_dir(job->cfg, dir, sizeof dir);
    /* 1. shape: the points, the units, the sink */
    campaign_shape(&cp, job);
    int err = cp.checkpointed ? checkpoint_open(&cp, dir) : memory_open(&cp);
    /* 2. the units, scheduled over the groups, each computed and handed to the sink */
    cp.start = stem_wall_time();
    if (cp.checkpointed) /* dynamic; stopped or failed, the checkpoint keeps every finished unit */
        err = checkpoint_end(&cp, dir, err ? err : checkpoint_units(&cp));
    else if (!err) /* static rounds, a safe point (errors, signals) between them */
        err = memory_units(&cp);
    if (!err && cp.n_run) report_balance(&cp);
    /* 3. finish: the memory sink's sums now; the checkpoint's points as the output reads them */
    if (!err && !cp.checkpointed) err = memory_finish(&cp);
    /* 4. the output */
    if (!err && !job->keep) {
        err = write_output(&cp);
        if (cp.checkpointed) err = checkpoint_close(&cp, dir, err);
    }
    campaign_free(&cp);
    return err;
}

static void campaign_free(campaign *cp)
{
    stem_smatrix_store_remove(&cp->store); /* copied into the output, or not wanted after a failure */
    stem_result_free(&cp->own_sum);
    stem_result_free(&cp->out);
    free(cp->scratch);
    free(cp->plans);
    stem_checkpoint_free(&cp->ck);
}

int stem_campaign_checkpointed(const stem_config *cfg)
{
    return cfg->checkpoint == STEM_CHECKPOINT_ON ||
        (cfg->checkpoint == STEM_CHECKPOINT_AUTO && stem_series_active(cfg));
}

void stem_series_checkpoint_dir(const stem_config *cfg, char *out, size_t n)
{
    if (cfg->checkpoint_dir[0])
        snprintf(out, n, "%s", cfg->checkpoint_dir);
    else if (snprintf(out, n, "%s.checkpoint", cfg->output_file) >= (int)n)
        out[n - 1] = 0; /* a path this long fails to open */
}

int stem_series_thickest(const stem_atoms *tiled, const stem_config *cfg, stem_series *s, stem_atoms *out)
{
    memset(out, 0, sizeof *out);
    double thinnest = 0;
    stem_progress progress;
    stem_progress_begin_quiet(&progress, "the thickest tilt (the model rotated to each tilt)", s->n_tilts);
    for (int t = 0; t < s->n_tilts; t++) {
        double tx, ty;
        stem_atoms a = {0};
        stem_progress_update(&progress, t);
        stem_series_tilt_values(s, t, &tx, &ty);
        STEM_TRY(stem_atoms_rotated(tiled, cfg->rotation_z, tx, ty, &a));
        if (t == 0 || a.cell[2] < thinnest) thinnest = a.cell[2];
        if (t == 0 || a.cell[2] > out->cell[2]) {
            stem_atoms_free(out);
            *out = a;
        } else {
            stem_atoms_free(&a);
        }
    }
    stem_progress_end(&progress);
    /* sliced as stem_plan_set_thickness slices it: the depths every tilt reaches */
    return stem_series_resolve_depths(s, cfg, thinnest);
}

/* ------------------------------------------------------------ shape: points, units, plans */

/* Channel ch's values of one probe in a unit: a distributed FFT's whole images (the
 * group's rows gathered), else what each probe records. */
static long unit_width(const stem_plan *plan, int ch)
{
    if (!plan->dist || !stem_channel_image_rows(ch)) return stem_channel_width(plan, ch);
    return stem_channel_width(plan, ch) / (plan->dist_rows > 0 ? plan->dist_rows : 1) * plan->ny;
}

static void layout_build(const stem_plan *plan, int per_tilt, unit_layout *L)
{
    size_t at = 0;
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++) { /* per-probe channels; PACBED's row after them */
        L->width[ch] = stem_channel_per_probe(ch) ? unit_width(plan, ch) : 0;
        L->elt[ch] = stem_channel_table[ch].is_float ? sizeof(float) : sizeof(double);
        L->offset[ch] = at;
        at += (size_t)plan->n_probes * (size_t)L->width[ch] * L->elt[ch];
    }
    L->pacbed_offset = at;
    if (plan->opt.save_pacbed) at += sizeof(double) * (size_t)plan->cbed_nx * plan->cbed_ny;
    L->point_bytes = at;
    L->smatrix_offset = (size_t)per_tilt * L->point_bytes;
    L->smatrix_bytes = plan->opt.save_smatrix
        ? sizeof(stem_complex) * (size_t)plan->n_beams * plan->crop_ny * (size_t)plan->crop_nx
        : 0;
    L->unit_bytes = L->smatrix_offset + L->smatrix_bytes;
}

/* The campaign's points and units: a series' (tilts x configurations, each unit its tilt's
 * points), or a plain run's one point (units: its configurations); the sink by the rule. */
static void campaign_shape(campaign *cp, const stem_campaign_job *job)
{
    const stem_series *s = job->series;
    cp->job = job;
    cp->checkpointed = stem_campaign_checkpointed(job->cfg);
    cp->win = MPI_WIN_NULL;
    cp->trans_node.win = MPI_WIN_NULL;
    cp->store.fd = cp->store.own = -1;
    cp->tilt = cp->potential_tilt = cp->ready = -1;
    cp->n_configs = job->plan->n_configs;
    cp->n_tilts = s->n_points ? s->n_tilts : 1;
    cp->n_planes = s->n_points ? s->n[STEM_SERIES_DEPTH] : 1;
    cp->per_tilt = s->n_points ? stem_series_per_tilt(s) : 1;
    cp->n_optics = cp->per_tilt / cp->n_planes;
    cp->n_units = cp->n_tilts * cp->n_configs;
    if (cp->checkpointed) layout_build(job->plan, cp->per_tilt, &cp->layout);
}

/* Tilt t's n_optics point plans: a plain run's is its plan. */
static const stem_plan *tilt_plans(const campaign *cp, int t)
{
    return cp->plans ? &cp->plans[t * cp->n_optics] : cp->job->plan;
}

/* Every point's plan: the base plan at its tilt's thickness, with its beam tilt (hrtem's
 * plane wave, already on the grid) and defocus. */
static int point_plans(campaign *cp)
{
    const stem_campaign_job *job = cp->job;
    const stem_series *s = job->series;
    STEM_ALLOC(cp->plans, (size_t)s->n_tilts * cp->n_optics, "series point plans");
    stem_progress progress;
    stem_progress_begin_quiet(&progress, "the campaign's points (the model rotated to each tilt)", s->n_tilts);
    for (int t = 0; t < s->n_tilts; t++) {
        stem_progress_update(&progress, t);
        double tx, ty;
        stem_atoms a = {0};
        stem_series_tilt_values(s, t, &tx, &ty);
        STEM_TRY(stem_atoms_rotated(job->atoms, job->cfg->rotation_z, tx, ty, &a));
        for (int d = 0; d < cp->n_optics; d++) {
            stem_plan *p = &cp->plans[t * cp->n_optics + d];
            double df, beam[2];
            int point = t * cp->per_tilt + d * cp->n_planes;
            *p = *job->plan; /* shares its tables: read only */
            stem_plan_set_thickness(p, a.cell[2]);
            p->campaign_tilt = t + 1;
            stem_series_values(s, point, &tx, &ty, &df);
            p->aberr.c[STEM_C10] = df;
            stem_series_beam_values(s, point, &beam[0], &beam[1]);
            for (int k = 0; k < 2 && p->algorithm == STEM_ALG_HRTEM; k++)
                p->plane_k[k] = (int)lround(beam[k] * 1e-3 / p->lambda * p->cell[k]);
            p->n_depths = s->depth_slice ? s->n[STEM_SERIES_DEPTH] : 0;
            for (int k = 0; k < p->n_depths; k++) p->depth_slice[k] = s->depth_slice[k];
        }
        stem_atoms_free(&a);
    }
    stem_progress_end(&progress);
    return STEM_OK;
}

/* [simulation] potential_file, smatrix_file: each tilt's stored dataset fits its point
 * plan and angles (rank 0 reads, the world agrees). */
static int check_stored_tilts(const campaign *cp)
{
    const stem_campaign_job *job = cp->job;
    const stem_options *opt = &job->plan->opt;
    int err = STEM_OK;
    for (int t = 0; job->m->layout.world_rank == 0 && t < job->series->n_tilts && !err; t++) {
        stem_stored_tilt tilt = {t, job->series->n_tilts, {0, 0}};
        stem_series_tilt_values(job->series, t, &tilt.deg[0], &tilt.deg[1]);
        const stem_plan *plan = &cp->plans[t * cp->n_optics];
        if (opt->potential_file[0]) err = stem_potential_file_check(plan, job->cfg, &tilt);
        if (!err && opt->smatrix_file[0]) err = stem_smatrix_file_check(plan, job->cfg, &tilt);
    }
    return stem_mpi_agree(err, job->m->world);
}

/* The point plans, and the stored inputs checked against them. */
static int campaign_plans(campaign *cp)
{
    const stem_options *opt = &cp->job->plan->opt;
    STEM_TRY(stem_mpi_agree(point_plans(cp), cp->job->m->world));
    return opt->potential_file[0] || opt->smatrix_file[0] ? check_stored_tilts(cp) : STEM_OK;
}

/* What determines the numbers: version, model, table and the config outside [output],
 * without the [compute] keys that only place the work (threads, groups, memory, wisdom) and
 * the paths of inputs whose contents are hashed here (the model, the probe positions): the
 * same campaign reached through another path to its config, or from another directory, is
 * the same campaign. */
static char *identity_text(const stem_campaign_job *job)
{
    static const char *placement[] = {
        "threads =",    "max_memory =", "fp_groups =", "node_shared =", "ranks_per_node =",
        "fft_wisdom =", "fft_cache =",  "xyz =",       "positions ="};
    unsigned long long model = stem_hash_model(job->atoms), table = stem_hash_table(job->potentials);
    char *ini = stem_config_to_ini(job->cfg), *buf = NULL;
    size_t size = 0;
    FILE *f = ini ? open_memstream(&buf, &size) : NULL;
    if (!f) {
        free(ini);
        return NULL;
    }
    fprintf(f, "stemsim version = %s\nmodel (tiled) = %ld atoms, hash %016llx\nscattering table hash = %016llx\n",
            STEM_VERSION, job->atoms->n, model, table);
    if (job->plan->positions) /* the file's name is in the config; its numbers are here */
        fprintf(
            f, "probe positions = %ld, hash %016llx\n", job->plan->n_probes,
            stem_hash_bytes(STEM_HASH_SEED, job->plan->positions, sizeof(double) * 2 * (size_t)job->plan->n_probes));
    fprintf(f, "detection planes (slices) =");
    for (int k = 0; job->series->depth_slice && k < job->series->n[STEM_SERIES_DEPTH]; k++)
        fprintf(f, " %d", job->series->depth_slice[k]);
    fprintf(f, "%s\n", job->series->depth_slice ? "" : " exit");
    if (job->plan->opt.save_smatrix) fprintf(f, "S-matrix kept in each unit = yes ([output] save_smatrix)\n");
    int skip = 0;
    for (char *line = strtok(ini, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '[') skip = !strcmp(line, "[output]");
        int placed = 0;
        for (size_t k = 0; k < sizeof placement / sizeof *placement; k++)
            placed |= !strncmp(line, placement[k], strlen(placement[k]));
        if (!skip && !placed) fprintf(f, "%s\n", line);
    }
    fclose(f);
    free(ini);
    return buf;
}

/* ------------------------------------------------------------ one unit */

static int tilt_model(campaign *cp, int t)
{
    if (cp->tilt == t) return STEM_OK;
    double tx, ty;
    stem_atoms_free(&cp->tilted);
    cp->tilt = -1;
    stem_series_tilt_values(cp->job->series, t, &tx, &ty);
    STEM_TRY(stem_atoms_rotated(cp->job->atoms, cp->job->cfg->rotation_z, tx, ty, &cp->tilted));
    cp->tilt = t;
    return STEM_OK;
}

/* Tilt t's model: a series' rotated to the tilt (kept for the group's next unit of the same
 * tilt), a plain run's as it was prepared. */
static int unit_model(campaign *cp, int t, const stem_atoms **model)
{
    *model = cp->job->atoms;
    if (!cp->checkpointed) return STEM_OK;
    STEM_TRY(tilt_model(cp, t));
    *model = &cp->tilted;
    return STEM_OK;
}

/* Unit u (tilt t, configuration c): its tilt's points computed and added into res[per_tilt];
 * collective over the group, agreed. With a static schedule (next >= 0: the unit this group
 * runs next) the group leader builds next's transmission functions ahead while the engine
 * runs this one (only where the leader alone builds them: group_state). */
static int compute_unit(campaign *cp, int u, int next, stem_result *res)
{
    const stem_campaign_job *job = cp->job;
    int t = u / cp->n_configs, c = u % cp->n_configs;
    const stem_atoms *model = NULL;
    int err = stem_mpi_agree(unit_model(cp, t, &model), job->m->group);
    const stem_plan *plans = tilt_plans(cp, t);
    if (cp->dist) { /* the wave in slabs: its own slices, propagation and record */
        if (!err) err = stem_dist_unit_run(cp->dist, job->m, plans, cp->n_optics, model, c, res);
        return stem_mpi_agree(err, job->m->group);
    }
    int loaded = cp->smatrix_io && cp->smatrix_io->load; /* the S-matrix read back: no transmission functions */
    if (!err && !loaded)
        err = stem_phonon_transmission(job->m, job->engine, &plans[0], model, &cp->table, c, cp->ready == c, cp->trans,
                                       &cp->trans_node);
    cp->buffers.config = c;
    if (!err && cp->spare && next >= 0) stem_build_ahead_start(&cp->ahead, next % cp->n_configs, cp->spare);
    if (!err)
        err =
            stem_algorithm_run_points(job->engine, plans, cp->n_optics, job->m, cp->trans, &cp->det, res, &cp->buffers);
    if (cp->spare && (cp->ready = stem_build_ahead_finish(&cp->ahead)) >= 0) {
        stem_complex *built = cp->spare;
        cp->spare = cp->trans;
        cp->trans = built;
    }
    return stem_mpi_agree(err, job->m->group);
}

/* The sink's own buffers: the checkpoint sink's results of one unit and the leader's payload;
 * the memory sink's standard-error state of its sums (none on a distributed FFT's wave). */
static int sink_buffers(campaign *cp)
{
    const stem_plan *plan = cp->job->plan;
    if (!cp->checkpointed) return plan->dist ? STEM_OK : stem_result_alloc_errors(plan, cp->sum);
    STEM_ALLOC(cp->res, (size_t)cp->per_tilt, "unit results");
    for (int j = 0; j < cp->per_tilt; j++) STEM_TRY(stem_result_alloc(plan, &cp->res[j]));
    if (cp->job->m->layout.group_rank == 0 &&
        !(cp->payload = stem_alloc(cp->ck.unit_bytes ? cp->ck.unit_bytes : 1, "one unit's result (checkpoint)")))
        return STEM_ERR_MEMORY;
    return STEM_OK;
}

/* The memory sink's second transmission buffer, for the next configuration built ahead: only
 * where the leader alone builds and broadcasts (an engine with its own transmission step, or a
 * group of one) and leaves the host's cores idle; where the group shares the build, a leader
 * holding the configuration already would broadcast while the others wait in the exchange. */
static int ahead_buffer(campaign *cp)
{
    const stem_campaign_job *job = cp->job;
    const stem_layout *L = &job->m->layout;
    int rounds = (cp->n_units + L->n_groups - 1) / L->n_groups;
    int loaded = cp->smatrix_io && cp->smatrix_io->load;
    if (cp->checkpointed || loaded || !job->engine->host_idle || L->group_rank != 0 || rounds <= 1 ||
        !(job->engine->transmission || L->group_size == 1))
        return STEM_OK;
    const stem_plan *plan = job->plan;
    cp->spare = stem_fft_alloc((size_t)plan->nx * plan->ny * plan->n_slices, "transmission functions (built ahead)");
    if (!cp->spare) return STEM_ERR_MEMORY;
    cp->ahead = (stem_build_ahead){.engine = job->engine, .plan = plan, .atoms = job->atoms, .table = &cp->table};
    return STEM_OK;
}

/* What a group keeps from one unit to the next: the detector, the sink's buffers, the
 * transmission functions (in the node's shared memory where the group's ranks build them
 * together: the CPU; an engine that builds them itself, the GPU, hands each rank its own
 * copy) and the lookup table, or a distributed FFT's slabs. */
static int group_state(campaign *cp)
{
    const stem_campaign_job *job = cp->job;
    const stem_mpi *m = job->m;
    const stem_plan *plan = job->plan;
    int err = stem_phonon_injected_failure(m, "campaign");
    if (!err) err = stem_detector_build(plan, &cp->det);
    if (!err) err = sink_buffers(cp);
    err = stem_mpi_agree(err, m->group); /* the shared buffer is allocated by the node's ranks together */
    if (plan->dist)                      /* no rank holds a whole slice: the slabs' own state */
        return err ? err : stem_dist_unit_create(m, plan, job->atoms, job->potentials, &cp->dist);
    if (!err)
        err = stem_node_buffer_alloc(&m->share, m->share.active && !job->engine->transmission,
                                     (size_t)plan->nx * plan->ny * plan->n_slices, "transmission functions",
                                     &cp->trans_node, &cp->trans);
    double t = stem_wall_time();
    if (!(cp->smatrix_io && cp->smatrix_io->load)) /* the S-matrices read back: no potential needed */
        err = stem_phonon_lookup_table(m, plan, job->atoms, job->potentials, err, &cp->table);
    stem_phase_add(STEM_PHASE_TABLE, t);
    if (!err) err = ahead_buffer(cp); /* the leader's alone: agreed at the first safe point */
    return err;
}

static void group_state_free(campaign *cp)
{
    stem_build_ahead_finish(&cp->ahead); /* left early: never free a buffer a helper writes */
    stem_fft_free(cp->spare);
    cp->spare = NULL;
    stem_dist_unit_free(cp->dist);
    cp->dist = NULL;
    stem_algorithm_buffers_free(&cp->buffers);
    stem_potential_table_free(&cp->table);
    stem_node_buffer_free(&cp->trans_node, cp->trans);
    cp->trans = NULL;
    for (int j = 0; cp->res && j < cp->per_tilt; j++) stem_result_free(&cp->res[j]);
    free(cp->res);
    cp->res = NULL;
    stem_detector_free(&cp->det);
    stem_atoms_free(&cp->tilted);
    cp->tilt = -1;
    free(cp->payload);
    cp->payload = NULL;
}

/* ------------------------------------------------------------ the memory sink */

/* The group's running sums (agreed: a rank without room must not leave the others waiting in
 * the units), and PRISM's S-matrices stored or read back (smatrix_store.h; agreed). */
static int memory_open(campaign *cp)
{
    const stem_campaign_job *job = cp->job;
    cp->sum = job->keep ? job->keep : &cp->own_sum;
    int err = stem_mpi_agree(stem_result_alloc(job->plan, cp->sum), job->m->world);
    if (!err && !job->keep) err = stem_smatrix_store_open(&cp->store, job->m, job->plan, job->target);
    if (!err && (cp->store.io.load || cp->store.io.store)) cp->smatrix_io = &cp->store.io;
    cp->buffers.smatrix_io = cp->smatrix_io;
    return err;
}

/* The memory sink's schedule, static: round r gives group g unit r x groups + g (rounds, not
 * units: every group meets every safe point even when the groups do not divide the units
 * evenly; a failure inside a round is agreed at the next). Each configuration's values are
 * added straight into the group's sums, its standard-error state updated around them. */
static int memory_units(campaign *cp)
{
    const stem_mpi *m = cp->job->m;
    const stem_layout *L = &m->layout;
    int rounds = (cp->n_units + L->n_groups - 1) / L->n_groups;
    int err = group_state(cp);
    cp->n_run = cp->n_units;
    for (int round = 0; round < rounds; round++) {
        if ((err = stem_phonon_safe_point(m, err))) break;
        int u = round * L->n_groups + L->group, next = u + L->n_groups;
        if (u >= cp->n_units) continue;
        stem_info("configuration %d of %d (group %d)", u + 1, cp->n_units, L->group);
        double t = stem_wall_time();
        stem_result_errors_begin(cp->sum); /* the configuration's own values, for its standard errors */
        err = compute_unit(cp, u, next < cp->n_units ? next : -1, cp->sum);
        if (!err) stem_result_errors_add(cp->sum, u % cp->n_configs);
        cp->busy += stem_wall_time() - t;
        if (!err) stem_phases_log_config(u, cp->n_units);
    }
    group_state_free(cp);
    return stem_phonon_safe_point(m, err);
}

/* The groups' sums added up, their standard-error state combined (detector.h: the
 * between-group terms, then a sum), each configuration's scan-summed images on every rank. */
static int combine_groups(const stem_mpi *m, const stem_plan *plan, stem_result *res)
{
    stem_result_errors_merge_begin(res);
    STEM_TRY(stem_mpi_sum_result(res, m->cross));
    stem_result_errors_merge_end(res, plan->n_configs);
    STEM_TRY(stem_mpi_sum_errors(res, m->cross));
    if (res->config_images && m->layout.world_size > 1)
        STEM_MPI_CALL(MPI_Allreduce(MPI_IN_PLACE, res->config_images, plan->n_configs * plan->n_images, MPI_DOUBLE,
                                    MPI_SUM, m->world));
    return STEM_OK;
}

/* The memory sink's finish: the groups combined, the mean, the scan channels (PACBED: every
 * rank's probes of every group's configurations, exactly, the same bits on any rank count),
 * the source-size blur, the scan's standard errors; then the S-matrix temporaries closed and
 * the result checked (what is not a finished simulation is never published: result_check.h). */
static int memory_finish(campaign *cp)
{
    const stem_campaign_job *job = cp->job;
    const stem_mpi *m = job->m;
    const stem_plan *plan = job->plan;
    stem_result *res = cp->sum;
    double t = stem_wall_time();
    if (plan->dist) { /* one wave: its rows summed over the groups */
        stem_dist_fft_report(m, plan);
        STEM_TRY(stem_mpi_sum_result(res, m->cross));
        stem_result_finalise(res, plan->n_configs);
    } else {
        STEM_TRY(combine_groups(m, plan, res));
        stem_result_finalise(res, plan->n_configs);
        STEM_TRY(stem_mpi_sum_scan(res, -1, m->world));
        stem_result_scan_mean(res, (double)plan->n_configs * plan->n_probes);
        if (plan->opt.source_size > 0) /* only the first group's results are written */
            STEM_TRY(stem_mpi_agree(m->layout.group == 0 ? stem_phonon_blur(m, plan, res) : STEM_OK, m->world));
        STEM_TRY(stem_phonon_scan_errors(m, plan, res));
        stem_result_log_errors(plan, res, "");
    }
    stem_phase_add(STEM_PHASE_REDUCTION, t);
    if (job->keep) return STEM_OK; /* --convergence: nothing published */
    if (plan->opt.save_smatrix) STEM_TRY(stem_smatrix_store_finish(&cp->store, m));
    return stem_mpi_agree(m->layout.group == 0 ? stem_result_check(plan, res, 1, "") : STEM_OK, m->world);
}

/* ------------------------------------------------------------ the checkpoint sink */

static int counters_create(campaign *cp, MPI_Comm world, int rank)
{
    STEM_MPI_CALL(
        MPI_Win_allocate(rank == 0 ? 2 * sizeof(int) : 0, sizeof(int), MPI_INFO_NULL, world, &cp->counter, &cp->win));
    if (rank == 0) {
        STEM_MPI_CALL(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, cp->win));
        cp->counter[0] = 0;
        cp->counter[1] = cp->ck.n_done;
        STEM_MPI_CALL(MPI_Win_unlock(0, cp->win));
    }
    STEM_MPI_CALL(MPI_Barrier(world));
    return STEM_OK;
}

/* Atomically: counter[which] += 1, returning its old value (a group leader). */
static int counter_take(campaign *cp, int which, int *old)
{
    int one = 1;
    STEM_MPI_CALL(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, cp->win));
    STEM_MPI_CALL(MPI_Fetch_and_op(&one, old, MPI_INT, 0, which, MPI_SUM, cp->win));
    STEM_MPI_CALL(MPI_Win_unlock(0, cp->win));
    return STEM_OK;
}

/* The next unit for this group (k-th of the units still to do; >= n when none). */
static int next_unit(campaign *cp, int *k)
{
    const stem_mpi *m = cp->job->m;
    int err = m->layout.group_rank == 0 ? counter_take(cp, 0, k) : STEM_OK;
    STEM_TRY(stem_mpi_agree(err, m->group));
    STEM_MPI_CALL(MPI_Bcast(k, 1, MPI_INT, 0, m->group));
    return STEM_OK;
}

/* Whether any rank of the group was asked to stop. */
static int group_stopping(const stem_mpi *m)
{
    int sig = stem_signal_pending(), any = sig;
    if (MPI_Allreduce(&sig, &any, 1, MPI_INT, MPI_MAX, m->group) != MPI_SUCCESS) return 1;
    return any;
}

/* [simulation] smatrix_file: this rank's beams of the unit's tilt (its plan names it). */
static int load_smatrix(void *ctx, const stem_plan *plan, int c, int b0, int b1, stem_complex *S)
{
    (void)ctx;
    return stem_smatrix_file_read(plan, c, b0, b1, S);
}

/* [output] save_smatrix: the group leader's whole S-matrix into the unit's payload. */
static int keep_smatrix(void *ctx, const stem_plan *plan, int c, const stem_complex *S)
{
    campaign *cp = ctx;
    (void)plan, (void)c;
    memcpy(cp->payload + cp->layout.smatrix_offset, S, cp->layout.smatrix_bytes);
    return STEM_OK;
}

static void smatrix_io_setup(campaign *cp)
{
    const stem_options *opt = &cp->job->plan->opt;
    cp->kept_io =
        (stem_smatrix_io){opt->smatrix_file[0] ? load_smatrix : NULL, opt->save_smatrix ? keep_smatrix : NULL, cp};
    if (cp->kept_io.load || cp->kept_io.store) cp->smatrix_io = &cp->kept_io;
    cp->buffers.smatrix_io = cp->smatrix_io;
}

/* The units not yet in the checkpoint, in order (tilt-major: a group's next unit
 * usually shares its tilt's model). */
static int *units_to_do(const campaign *cp, int *n)
{
    int *todo = stem_calloc((size_t)cp->n_units + 1, sizeof(int), "unit list");
    *n = 0;
    for (int u = 0; todo && u < cp->n_units; u++)
        if (!cp->ck.done[u]) todo[(*n)++] = u;
    return todo;
}

static void announce(const campaign *cp, const char *dir)
{
    const stem_series *s = cp->job->series;
    int beams = s->n[STEM_SERIES_BEAM_X] * s->n[STEM_SERIES_BEAM_Y], defoci = s->n[STEM_SERIES_DEFOCUS];
    char beam_text[48] = "";
    if (beams > 1) snprintf(beam_text, sizeof beam_text, "%d beam tilts x ", beams);
    stem_info("campaign: %d series point%s (%d tilt%s x %s%d defoc%s x %d depth%s) x %d configuration%s = %d units of "
              "(tilt, configuration); checkpoint %s",
              s->n_points, s->n_points == 1 ? "" : "s", s->n_tilts, s->n_tilts == 1 ? "" : "s", beam_text, defoci,
              defoci == 1 ? "us" : "i", cp->n_planes, cp->n_planes == 1 ? "" : "s", cp->n_configs,
              cp->n_configs == 1 ? "" : "s", cp->n_units, dir);
    if (cp->ck.n_done) stem_info("resuming: %d of %d units done (found in %s)", cp->ck.n_done, cp->n_units, dir);
}

/* The checkpoint sink opened: the point plans, the stored inputs checked against them (before
 * the checkpoint: a refused input leaves none), the checkpoint found or made, the counters. */
static int checkpoint_open(campaign *cp, const char *dir)
{
    const stem_campaign_job *job = cp->job;
    const stem_mpi *m = job->m;
    stem_signal_keeps_checkpoint(1);
    smatrix_io_setup(cp);
    char *identity = identity_text(job);
    int err = stem_mpi_agree(identity ? STEM_OK : STEM_FAIL(STEM_ERR_MEMORY, "cannot format the campaign identity"),
                             m->world);
    if (!err) err = campaign_plans(cp);
    if (!err)
        err = stem_checkpoint_open(&cp->ck, m->world, dir, identity, job->plan->fft_wisdom, cp->n_units,
                                   cp->layout.unit_bytes, job->restart);
    free(identity);
    if (!err) announce(cp, dir);
    if (!err) err = stem_mpi_agree(counters_create(cp, m->world, m->layout.world_rank), m->world);
    return err;
}

/* How the units ended, agreed by the whole job (every group has left its loop): a stop keeps
 * the checkpoint (exit STEM_STOPPED_CHECKPOINTED). */
static int checkpoint_end(campaign *cp, const char *dir, int err)
{
    const stem_mpi *m = cp->job->m;
    int sig = stem_signal_pending(), stopped = sig;
    MPI_Allreduce(&sig, &stopped, 1, MPI_INT, MPI_MAX, m->world);
    err = stem_mpi_agree(err, m->world);
    if (cp->win != MPI_WIN_NULL) MPI_Win_free(&cp->win);
    if (stopped) {
        stem_info("stopped by signal %d: the checkpoint %s keeps every finished unit; run the same command again "
                  "to continue (exit %d)",
                  stopped, dir, STEM_STOPPED_CHECKPOINTED);
        return STEM_STOPPED_CHECKPOINTED;
    }
    if (err && cp->ck.done) stem_info("the checkpoint %s keeps every unit finished before the failure", dir);
    return err;
}

/* After the output: the checkpoint removed once the file is published; a stop while writing
 * (or converting) keeps it, every unit still in it. */
static int checkpoint_close(campaign *cp, const char *dir, int err)
{
    if (!err && cp->job->m->layout.world_rank == 0) stem_checkpoint_remove(&cp->ck);
    if (err && stem_signal_pending() && err == stem_signal_status(stem_signal_pending())) {
        stem_info("stopped by signal %d while writing the output: the checkpoint %s keeps every unit; run the "
                  "same command again to write it (exit %d)",
                  stem_signal_pending(), dir, STEM_STOPPED_CHECKPOINTED);
        err = STEM_STOPPED_CHECKPOINTED;
    }
    return err;
}

/* Channel ch of point d: every rank's probes into the leader's payload. */
static int gather_channel(campaign *cp, int d, int ch)
{
    const stem_mpi *m = cp->job->m;
    const stem_plan *plan = cp->job->plan;
    int size = m->layout.group_size, err = STEM_OK;
    MPI_Datatype probe;
    STEM_MPI_CALL(MPI_Type_contiguous((int)cp->layout.width[ch],
                                      stem_channel_table[ch].is_float ? MPI_FLOAT : MPI_DOUBLE, &probe));
    STEM_MPI_CALL(MPI_Type_commit(&probe));
    int *counts = stem_calloc((size_t)size, sizeof(int), "gather counts");
    int *displs = stem_calloc((size_t)size, sizeof(int), "gather counts");
    if (!counts || !displs) err = STEM_ERR_MEMORY;
    for (int r = 0; r < size && !err; r++) {
        long b, e;
        stem_split_range(plan->n_probes, size, r, &b, &e);
        counts[r] = (int)(e - b);
        displs[r] = (int)b;
    }
    err = stem_mpi_agree(err, m->group);
    char *into = cp->payload ? cp->payload + (size_t)d * cp->layout.point_bytes + cp->layout.offset[ch] : NULL;
    if (!err &&
        MPI_Gatherv(cp->res[d].data[ch], counts ? counts[m->layout.group_rank] : 0, probe, into, counts, displs, probe,
                    0, m->group) != MPI_SUCCESS)
        err = STEM_FAIL(STEM_ERR_MPI, "MPI_Gatherv of a finished unit to its group leader failed");
    MPI_Type_free(&probe);
    free(counts);
    free(displs);
    return err;
}

/* A distributed FFT's channel ch of point d: every rank's rows of the image into the
 * leader's payload (the total and the diffraction channels, summed over the group on every
 * rank: the leader's). */
static int gather_rows(campaign *cp, int d, int ch)
{
    const stem_mpi *m = cp->job->m;
    const stem_plan *plan = cp->job->plan;
    char *into = cp->payload ? cp->payload + (size_t)d * cp->layout.point_bytes + cp->layout.offset[ch] : NULL;
    if (!stem_channel_image_rows(ch)) {
        if (into) memcpy(into, cp->res[d].data[ch], (size_t)cp->layout.width[ch] * cp->layout.elt[ch]);
        return STEM_OK;
    }
    int size = m->layout.group_size, err = STEM_OK;
    MPI_Datatype row; /* one image row: what the slabs are counted in */
    STEM_MPI_CALL(MPI_Type_contiguous((int)(cp->layout.width[ch] / plan->ny), MPI_FLOAT, &row));
    STEM_MPI_CALL(MPI_Type_commit(&row));
    int *counts = stem_calloc((size_t)size, sizeof(int), "gather counts");
    int *displs = stem_calloc((size_t)size, sizeof(int), "gather counts");
    if (!counts || !displs) err = STEM_ERR_MEMORY;
    for (int r = 0; r < size && !err; r++) {
        long rows, row0, cols, col0;
        stem_dist_fft_slabs(plan->nx, plan->ny, size, r, &rows, &row0, &cols, &col0); /* as the plan cut them */
        counts[r] = (int)rows;
        displs[r] = (int)row0;
    }
    err = stem_mpi_agree(err, m->group);
    if (!err &&
        MPI_Gatherv(cp->res[d].data[ch], counts[m->layout.group_rank], row, into, counts, displs, row, 0, m->group) !=
            MPI_SUCCESS)
        err = STEM_FAIL(STEM_ERR_MPI, "MPI_Gatherv of a finished unit's image rows to its group leader failed");
    MPI_Type_free(&row);
    free(counts);
    free(displs);
    return err;
}

/* The leader's exact PACBED sum of point d, as doubles, into the unit's payload. */
static int pacbed_into_payload(campaign *cp, int d)
{
    const stem_result *res = &cp->res[d];
    double *v = stem_alloc(sizeof(double) * (size_t)res->pattern_bins, "PACBED");
    if (!v) return STEM_ERR_MEMORY;
    stem_result_scan_values(res, STEM_CH_PACBED, v);
    memcpy(cp->payload + (size_t)d * cp->layout.point_bytes + cp->layout.pacbed_offset, v,
           sizeof(double) * (size_t)res->pattern_bins);
    free(v);
    return STEM_OK;
}

/* The unit's points gathered to the group leader, which stores them; agreed over the group. */
static int store_unit(campaign *cp, int u)
{
    const stem_mpi *m = cp->job->m;
    const stem_plan *plan = cp->job->plan;
    int err = STEM_OK, leader = m->layout.group_rank == 0;
    for (int d = 0; d < cp->per_tilt && !err; d++) {
        for (int ch = 0; ch < STEM_N_CHANNELS && !err; ch++)
            if (cp->layout.width[ch]) err = plan->dist ? gather_rows(cp, d, ch) : gather_channel(cp, d, ch);
        if (!err && plan->opt.save_pacbed) {
            err = stem_mpi_sum_scan(&cp->res[d], 0, m->group); /* exact: the same bits on any group size */
            if (!err && leader) err = pacbed_into_payload(cp, d);
        }
    }
    double t = stem_wall_time();
    if (!err && leader) err = stem_checkpoint_store(&cp->ck, u, cp->payload);
    stem_phase_add(STEM_PHASE_WRITE, t);
    return stem_mpi_agree(err, m->group);
}

/* Rank 0, after each unit its group finished: how far the campaign is. */
static void report_unit(campaign *cp, int u, double took, int finished)
{
    const stem_series *s = cp->job->series;
    int t = u / cp->n_configs, c = u % cp->n_configs;
    double tx, ty, now = stem_wall_time();
    stem_series_tilt_values(s, t, &tx, &ty);
    int here = finished - cp->finished_at_start;
    double eta = here > 0 ? (now - cp->start) / here * (cp->n_units - finished) : 0;
    stem_info("unit %d of %d done (tilt_x %g, tilt_y %g deg, configuration %d of %d, %d point%s) in %.2f s; "
              "campaign ETA %.0f s",
              finished, cp->n_units, tx, ty, c + 1, cp->n_configs, cp->per_tilt, cp->per_tilt == 1 ? "" : "s", took,
              eta);
}

/* Test hooks (the kill and resume tests): STEMSIM_TEST_KILL_AFTER_UNITS=k kills the job
 * (SIGKILL on a group leader) as a unit is about to be stored while k are already in the
 * checkpoint; STEMSIM_TEST_UNIT_DELAY=s waits s seconds after each unit (time to signal). */
static int test_kill_before_store(campaign *cp)
{
    const char *k = getenv("STEMSIM_TEST_KILL_AFTER_UNITS");
    if (!k || cp->job->m->layout.group_rank) return STEM_OK;
    int finished = 0, none = 0;
    STEM_MPI_CALL(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, cp->win));
    STEM_MPI_CALL(MPI_Fetch_and_op(&none, &finished, MPI_INT, 0, 1, MPI_NO_OP, cp->win));
    STEM_MPI_CALL(MPI_Win_unlock(0, cp->win));
    if (finished >= atoi(k)) raise(SIGKILL);
    return STEM_OK;
}

static void test_unit_delay(void)
{
    const char *d = getenv("STEMSIM_TEST_UNIT_DELAY");
    if (d) usleep((useconds_t)(atof(d) * 1e6));
}

/* The checkpoint sink's schedule, dynamic: the group takes units until none is left, a rank
 * fails, or a signal arrives; each unit computed into zeroed results and stored. */
static int run_units(campaign *cp, const int *todo, int n_todo)
{
    const stem_mpi *m = cp->job->m;
    int err = STEM_OK;
    for (;;) {
        int k = n_todo;
        if (group_stopping(m)) break;
        if ((err = next_unit(cp, &k)) || k >= n_todo) break;
        double t = stem_wall_time();
        for (int j = 0; j < cp->per_tilt; j++) stem_result_zero(&cp->res[j]);
        err = compute_unit(cp, todo[k], -1, cp->res);
        /* a signal may have cut the unit short (workers stop taking work): never stored */
        if (err || group_stopping(m)) break;
        if ((err = test_kill_before_store(cp))) break;
        if ((err = store_unit(cp, todo[k]))) break;
        int finished = 0;
        if (m->layout.group_rank == 0 && (err = counter_take(cp, 1, &finished))) break;
        cp->busy += stem_wall_time() - t;
        report_unit(cp, todo[k], stem_wall_time() - t, finished + 1);
        stem_phases_log_config(todo[k], cp->n_units);
        test_unit_delay();
    }
    return err;
}

/* The units not yet in the checkpoint, run (collective over the world). */
static int checkpoint_units(campaign *cp)
{
    const stem_mpi *m = cp->job->m;
    int n_todo = 0, *todo = units_to_do(cp, &n_todo);
    int err = stem_mpi_agree(todo ? STEM_OK : STEM_ERR_MEMORY, m->world);
    cp->finished_at_start = cp->ck.n_done;
    cp->n_run = n_todo;
    if (!err && n_todo) {
        err = group_state(cp);
        if (!err) err = run_units(cp, todo, n_todo);
        group_state_free(cp);
    }
    free(todo);
    return err;
}

/* Which of a unit's values of channel ch this rank holds (as it writes them): its probes,
 * or a distributed FFT's rows of the image (the total and the diffraction channels: all). */
static void rank_part(const stem_plan *plan, const unit_layout *L, int ch, size_t *first, size_t *n)
{
    if (!plan->dist) {
        *first = (size_t)plan->probe_begin * L->width[ch];
        *n = (size_t)(plan->probe_end - plan->probe_begin) * L->width[ch];
        return;
    }
    *n = (size_t)stem_channel_width(plan, ch);
    *first =
        !stem_channel_image_rows(ch) || !plan->dist_rows ? 0 : (size_t)plan->dist_row0 * (*n / (size_t)plan->dist_rows);
}

/* Channel ch of point p, this rank's probes: configuration c's values added to the sums. */
static int add_channel(campaign *cp, int p, int ch, int c, stem_result *res)
{
    const stem_plan *plan = cp->job->plan;
    const unit_layout *L = &cp->layout;
    int t = p / cp->per_tilt, d = p % cp->per_tilt;
    size_t first, n;
    rank_part(plan, L, ch, &first, &n);
    size_t at = (size_t)d * L->point_bytes + L->offset[ch] + first * L->elt[ch];
    STEM_TRY(stem_checkpoint_load(&cp->ck, t * cp->n_configs + c, at, cp->scratch, n * L->elt[ch]));
    if (stem_channel_table[ch].is_float) {
        float *v = res->data[ch];
        const float *u = cp->scratch;
        for (size_t i = 0; i < n; i++) v[i] += u[i];
    } else {
        double *v = res->data[ch];
        const double *u = cp->scratch;
        for (size_t i = 0; i < n; i++) v[i] += u[i];
    }
    return STEM_OK;
}

/* Point p's sums over the configurations in configuration order, each configuration's
 * values entering the standard errors (detector.h) as it is added. */
static int sum_point(campaign *cp, int p, stem_result *res)
{
    int err = STEM_OK;
    for (int c = 0; c < cp->n_configs && !err; c++) {
        stem_result_errors_begin(res);
        for (int ch = 0; ch < STEM_N_CHANNELS && !err; ch++)
            if (cp->layout.width[ch] && res->n_probes) err = add_channel(cp, p, ch, c, res);
        if (!err) stem_result_errors_add(res, c);
    }
    return err;
}

/* Every configuration's images summed over the scan, on every rank (those that hold no
 * probes add zeros); rank 0 logs the point's named images with their standard errors. */
static int point_image_errors(campaign *cp, int p, stem_result *res)
{
    const stem_plan *plan = cp->job->plan;
    size_t n = (size_t)cp->n_configs * plan->n_images;
    if (!n) return STEM_OK;
    double *rows = res ? res->config_images : stem_calloc(n, sizeof(double), "images of each configuration");
    int err = rows ? STEM_OK : STEM_ERR_MEMORY;
    STEM_TRY(stem_mpi_agree(err, cp->job->m->world));
    if (MPI_Allreduce(MPI_IN_PLACE, rows, (int)n, MPI_DOUBLE, MPI_SUM, cp->job->m->world) != MPI_SUCCESS)
        err = STEM_FAIL(STEM_ERR_MPI, "MPI_Allreduce of the images of each configuration failed");
    if (!res) free(rows);
    if (!err) err = stem_phonon_scan_errors(cp->job->m, plan, res);
    const stem_series *s = cp->job->series;
    if (!err && res && s->n_points <= 24) { /* a long series: the file holds them all */
        char where[64];
        snprintf(where, sizeof where, "point %d of %d: ", p + 1, s->n_points);
        stem_result_log_errors(plan, res, where);
    }
    return err;
}

static int sum_pacbed(campaign *cp, int p, stem_result *res)
{
    const stem_plan *plan = cp->job->plan;
    int t = p / cp->per_tilt, d = p % cp->per_tilt;
    size_t at = (size_t)d * cp->layout.point_bytes + cp->layout.pacbed_offset;
    double *u = cp->scratch;
    for (int c = 0; c < cp->n_configs; c++) {
        STEM_TRY(
            stem_checkpoint_load(&cp->ck, t * cp->n_configs + c, at, u, sizeof(double) * (size_t)res->pattern_bins));
        for (int i = 0; i < res->pattern_bins; i++) res->pacbed[i] += u[i];
    }
    for (int i = 0; i < res->pattern_bins; i++) res->pacbed[i] /= (double)cp->n_configs * plan->n_probes;
    return STEM_OK;
}

/* The output's loader (stem_output_series): point p's mean over configurations. */
static int load_point(void *ctx, int p, stem_result *res)
{
    campaign *cp = ctx;
    const stem_mpi *m = cp->job->m;
    int err = STEM_OK;
    if (res) {
        stem_result_zero(res);
        err = sum_point(cp, p, res);
        if (!err && res->pacbed && m->layout.world_rank == 0) err = sum_pacbed(cp, p, res);
        if (!err) stem_result_finalise(res, cp->n_configs);
    }
    err = stem_mpi_agree(err, m->world);
    if (!err && cp->job->plan->opt.source_size > 0) { /* only the first group's ranks write */
        err = m->layout.group == 0 ? stem_phonon_blur(m, &cp->plans[p / cp->n_planes], res) : STEM_OK;
        err = stem_mpi_agree(err, m->world);
    }
    if (!err) err = stem_mpi_agree(point_image_errors(cp, p, res), m->world);
    char where[48]; /* what is not a finished simulation is never published (result_check.h) */
    snprintf(where, sizeof where, " (series point %d)", p);
    if (!err)
        err = stem_mpi_agree(res ? stem_result_check(cp->job->plan, res, m->layout.world_rank == 0, where) : STEM_OK,
                             m->world);
    return err;
}

/* ------------------------------------------------------------ the output */

/* [output] save_potential: tilt t's slices of configuration c, built from its model as its
 * units built them (or read back from potential_file), on any rank. */
static int campaign_potential(void *ctx, int t, int c, int s0, int s1, float *V)
{
    campaign *cp = ctx;
    if (cp->potential_tilt != t) {
        stem_potential_source_free(&cp->potential);
        cp->potential_tilt = -1;
        const stem_atoms *model = NULL;
        STEM_TRY(unit_model(cp, t, &model));
        stem_potential_source_init(&cp->potential, tilt_plans(cp, t), model, cp->job->potentials);
        cp->potential_tilt = t;
    }
    return stem_potential_source_slices(&cp->potential, 0, c, s0, s1, V);
}

/* [output] save_smatrix: beam b of unit (t, c)'s S-matrix, from the checkpoint. */
static int campaign_smatrix_beam(void *ctx, int t, int c, int b, float *S)
{
    campaign *cp = ctx;
    size_t beam = cp->layout.smatrix_bytes / (size_t)cp->job->plan->n_beams;
    return stem_checkpoint_load(&cp->ck, t * cp->n_configs + c, cp->layout.smatrix_offset + (size_t)b * beam, S, beam);
}

/* What the output stores for later runs (stem_output_stored): a series' one dataset per tilt
 * (plans and tilt_deg malloc'd here, the caller frees them); a plain run's one. */
static int stored_outputs(campaign *cp, stem_output_stored *stored, const stem_plan ***plans, double **tilt_deg)
{
    const stem_series *s = cp->job->series;
    if (!cp->checkpointed || !(stored->potential || stored->smatrix)) return STEM_OK;
    *plans = stem_calloc((size_t)s->n_tilts, sizeof **plans, "each tilt's plan");
    *tilt_deg = stem_calloc((size_t)s->n_tilts * 2, sizeof **tilt_deg, "each tilt's angles");
    if (!*plans || !*tilt_deg) return STEM_ERR_MEMORY;
    for (int t = 0; t < s->n_tilts; t++) {
        (*plans)[t] = tilt_plans(cp, t);
        stem_series_tilt_values(s, t, &(*tilt_deg)[2 * t], &(*tilt_deg)[2 * t + 1]);
    }
    stored->n_tilts = s->n_tilts;
    stored->tilt_plans = *plans;
    stored->tilt_deg = *tilt_deg;
    return STEM_OK;
}

/* The checkpoint sink's read-back: the point buffer (the first group's ranks write) and the
 * scratch one unit's channel is read into; desc names the series' axes and the loader. */
static int read_back_state(campaign *cp, stem_output_series *desc)
{
    const stem_plan *plan = cp->job->plan;
    const stem_series *s = cp->job->series;
    int writes = cp->job->m->layout.group == 0, err = STEM_OK;
    size_t scratch = sizeof(double) * (size_t)(plan->opt.save_pacbed ? plan->cbed_nx * plan->cbed_ny : 1);
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++) {
        size_t first, n;
        rank_part(plan, &cp->layout, ch, &first, &n);
        if (n * cp->layout.elt[ch] > scratch) scratch = n * cp->layout.elt[ch];
    }
    if (writes) err = stem_result_alloc(plan, &cp->out);
    if (writes && !err) err = stem_result_alloc_errors(plan, &cp->out);
    if (!err && !(cp->scratch = stem_alloc(scratch, "checkpoint read buffer"))) err = STEM_ERR_MEMORY;
    *desc = (stem_output_series){.n_points = s->n_points, .load = load_point, .ctx = cp};
    for (int a = 0; a < STEM_SERIES_N_AXES; a++) {
        if (!s->given[a]) continue;
        desc->lead_name[a] = stem_series_axis_name[a];
        desc->lead_units[a] = stem_series_axis_units[a];
        desc->lead_n[a] = s->n[a];
        desc->lead_values[a] = s->v[a];
    }
    return err;
}

/* The one output call: the memory sink's finished result, or the checkpoint's points read back
 * one by one as the writer asks (load_point); with the stored potential and S-matrix. */
static int write_output(campaign *cp)
{
    const stem_campaign_job *job = cp->job;
    const stem_mpi *m = job->m;
    const stem_plan *plan = job->plan;
    int writes = m->layout.group == 0, err = STEM_OK;
    const stem_plan **stored_plans = NULL;
    double *tilt_deg = NULL;
    stem_output_potential potential = {campaign_potential, cp,
                                       plan->opt.parametrisation == STEM_PARAM_LOBATO ? "lobato" : "kirkland",
                                       plan->opt.finite_projection ? "finite" : "infinite"};
    stem_output_smatrix smatrix = {cp->checkpointed ? campaign_smatrix_beam : stem_smatrix_store_beam,
                                   cp->checkpointed ? (void *)cp : (void *)&cp->store};
    stem_output_stored stored = {plan->opt.save_potential ? &potential : NULL, plan->opt.save_smatrix ? &smatrix : NULL,
                                 0, NULL, NULL};
    stem_output_series desc = {0};
    err = stored_outputs(cp, &stored, &stored_plans, &tilt_deg);
    if (!err && cp->checkpointed) err = read_back_state(cp, &desc);
    err = stem_mpi_agree(err, m->world);
    stem_result *res = cp->checkpointed ? (writes ? &cp->out : NULL) : cp->sum;
    double t = stem_wall_time();
    if (!err)
        err = stem_output_write(m->world, job->target, plan, res, writes, job->texts, cp->checkpointed ? &desc : NULL,
                                &stored);
    stem_phase_add(STEM_PHASE_WRITE, t);
    stem_potential_source_free(&cp->potential);
    stem_atoms_free(&cp->tilted);
    free(stored_plans);
    free(tilt_deg);
    return err;
}

/* Rank 0: how evenly the groups were loaded (from their leaders' times in units). */
static void report_balance(const campaign *cp)
{
    const stem_mpi *m = cp->job->m;
    double wall = stem_wall_time() - cp->start, mine[2], lo, hi;
    int leader = m->layout.group_rank == 0;
    mine[0] = leader ? cp->busy : 1e300;
    mine[1] = leader ? cp->busy : 0;
    if (MPI_Reduce(&mine[0], &lo, 1, MPI_DOUBLE, MPI_MIN, 0, m->world) != MPI_SUCCESS ||
        MPI_Reduce(&mine[1], &hi, 1, MPI_DOUBLE, MPI_MAX, 0, m->world) != MPI_SUCCESS)
        return;
    double sum = 0, busy = leader ? cp->busy : 0;
    if (MPI_Reduce(&busy, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, m->world) != MPI_SUCCESS) return;
    int groups = m->layout.n_groups;
    if (wall > 0 && groups > 1)
        stem_info("load balance: %d groups busy in units %.2f to %.2f s of %.2f s (idle %.1f%% of group time)", groups,
                  lo, hi, wall, 100 * (1 - sum / (groups * wall)));
}

/* ------------------------------------------------------------ the dry run */

int stem_campaign_survey(const stem_campaign_job *job)
{
    campaign cp = {0};
    campaign_shape(&cp, job);
    if (!cp.checkpointed) return STEM_OK; /* nothing kept between runs */
    char dir[STEM_PATH_MAX];
    stem_series_checkpoint_dir(job->cfg, dir, sizeof dir);
    char *identity = identity_text(job);
    int err = stem_mpi_agree(identity ? STEM_OK : STEM_FAIL(STEM_ERR_MEMORY, "cannot format the campaign identity"),
                             job->m->world);
    const stem_options *opt = &job->plan->opt;
    if (!err && (opt->potential_file[0] || opt->smatrix_file[0])) err = campaign_plans(&cp); /* as the run checks */
    if (!err)
        err = stem_checkpoint_survey(job->m->world, dir, identity, cp.n_units, cp.layout.unit_bytes, job->restart);
    free(identity);
    free(cp.plans);
    return err;
}
