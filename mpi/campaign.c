/* The driver of every run (campaign.h): the flow, first below, then the shape (points,
 * units, plans, identity), one unit's computation and the group state it needs. The rounds
 * and the checkpoint are in campaign_rounds.c, the finished points and the output in
 * campaign_output.c; the exact sums in src/accumulator.c and campaign_sums.c. */
#include "../io/config.h"
#include "campaign_private.h"

#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "../io/finish.h"
#include "../io/smatrix_file.h"
#include "../src/phases.h"
#include "../src/signals.h"
#include "campaign_sums.h"
#include "consistency.h"
#include "phonon_steps.h"

static void campaign_shape(campaign *cp, const stem_campaign_job *job);
/* The channels of the run's sums: a streamed run's 4D patterns are its blocks' (campaign_blocks.c). */
static stem_acc_channels campaign_sums_channels(const campaign *cp)
{
    return cp->streamed ? STEM_ACC_NO_4D : STEM_ACC_ALL;
}
static int campaign_open(campaign *cp, const char *dir);
static int campaign_close(campaign *cp, const char *dir, int err);
static void report_balance(const campaign *cp);
static void campaign_free(campaign *cp);

/* The whole run, top to bottom. */
int stem_campaign_run(const stem_campaign_job *job)
{
    campaign cp = {0};
    char dir[STEM_PATH_MAX];
    stem_series_checkpoint_dir(job->cfg, dir, sizeof dir);
    /* 1. shape: the points, the units, the sums (and the checkpoint's state loaded into them) */
    campaign_shape(&cp, job);
    double t = stem_wall_time();
    int err = campaign_open(&cp, dir);
    stem_phase_add(STEM_PHASE_SETUP, t);
    /* 2. the units in rounds, each added to the sums; the state stored as it goes */
    cp.start = cp.last_store = stem_wall_time();
    if (!err) err = cp.streamed ? stem_campaign_blocks(&cp, dir) : stem_campaign_rounds(&cp, dir);
    if (!err && cp.n_run) report_balance(&cp);
    /* 3. the output: each point finished from the sums, written; the checkpoint removed */
    t = stem_wall_time();
    double written = stem_phase_total(STEM_PHASE_WRITE);
    if (!err && job->keep) err = stem_campaign_finish_point(&cp, 0, job->keep);
    if (!err && !job->keep) err = campaign_close(&cp, dir, stem_campaign_write_output(&cp));
    stem_phase_add(STEM_PHASE_FINISH, t + (stem_phase_total(STEM_PHASE_WRITE) - written)); /* its writes apart */
    campaign_free(&cp);
    return err;
}

static void campaign_free(campaign *cp)
{
    stem_output_stream_abort(cp->stream, STEM_ERR_INTERNAL); /* only where the output was never reached */
    stem_smatrix_store_remove(&cp->store);                   /* copied into the output, or not wanted after a failure */
    stem_result_free(&cp->out);
    stem_acc_free(&cp->acc);
    free(cp->done);
    free(cp->plans);
    stem_checkpoint_free(&cp->ck);
}

int stem_campaign_checkpointed(const stem_config *cfg) { return stem_output_checkpointed(cfg); }

void stem_series_checkpoint_dir(const stem_config *cfg, char *out, size_t n)
{
    stem_output_checkpoint_dir(cfg, out, n);
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

/* The campaign's points and units: a series' (tilts x configurations, each unit its tilt's
 * points), or a plain run's one point (units: its configurations). */
static void campaign_shape(campaign *cp, const stem_campaign_job *job)
{
    const stem_series *s = job->series;
    cp->job = job;
    cp->checkpointed = stem_campaign_checkpointed(job->cfg);
    cp->streamed = job->plan->probe_block > 0 && !job->keep;
    cp->trans_node.win = MPI_WIN_NULL;
    cp->table_node.win = MPI_WIN_NULL;
    cp->store.fd = cp->store.own = -1;
    cp->ck.lock_fd = cp->ck.store_fd = -1;
    cp->tilt = cp->potential_tilt = cp->ready = cp->ready_unit = cp->ahead_unit = cp->ahead_tilt = -1;
    cp->n_configs = job->plan->n_configs;
    cp->n_tilts = s->n_points ? s->n_tilts : 1;
    cp->n_planes = s->n_points ? s->n[STEM_SERIES_DEPTH] : 1;
    cp->per_tilt = s->n_points ? stem_series_per_tilt(s) : 1;
    cp->n_optics = cp->per_tilt / cp->n_planes;
    cp->n_units = cp->n_tilts * cp->n_configs;
    if (cp->streamed) cp->n_units = job->plan->n_blocks; /* each block holds every configuration */
    cp->n_points = cp->n_tilts * cp->per_tilt;
    const stem_plan *plan = job->plan;
    cp->smatrix_bytes = cp->checkpointed && plan->opt.save_smatrix
        ? sizeof(stem_complex) * (size_t)plan->n_beams * plan->crop_ny * (size_t)plan->crop_nx
        : 0;
}

/* Tilt t's n_optics point plans: a plain run's is its plan. */
const stem_plan *stem_campaign_tilt_plans(const campaign *cp, int t)
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
/* [simulation] potential_file and smatrix_file's contents: each file's bytes hashed 8 at a time
 * (rank 0 reads it once; every rank learns the hashes), so that a resume refuses a stored file
 * rewritten from another model with the same grid and keys (it blended the two, exit 0). */
static int stored_hashes(const stem_campaign_job *job, unsigned long long hash[2])
{
    const char *path[2] = {job->plan->opt.potential_file, job->plan->opt.smatrix_file};
    int err = STEM_OK;
    size_t chunk = 16u << 20;
    unsigned char *buf = job->m->layout.world_rank == 0 ? stem_alloc(chunk, "a stored file's hash") : NULL;
    if (job->m->layout.world_rank == 0 && !buf) err = STEM_ERR_MEMORY;
    double t = stem_wall_time();
    for (int i = 0; i < 2; i++) {
        hash[i] = 0;
        if (!path[i][0] || err || job->m->layout.world_rank != 0) continue;
        FILE *f = fopen(path[i], "rb");
        if (!f) {
            err =
                STEM_FAIL(STEM_ERR_INPUT, "%s: cannot read it to identify the campaign: %s", path[i], strerror(errno));
            continue;
        }
        unsigned long long h = STEM_HASH_SEED;
        for (size_t n; (n = fread(buf, 1, chunk, f)) > 0;) {
            size_t words = n / 8;
            for (size_t w = 0; w < words; w++) {
                unsigned long long v;
                memcpy(&v, buf + 8 * w, 8);
                h = (h ^ v) * 0x100000001b3ULL;
                h ^= h >> 29;
            }
            h = stem_hash_bytes(h, buf + 8 * words, n - 8 * words);
        }
        if (ferror(f)) err = STEM_FAIL(STEM_ERR_INPUT, "%s: read error while identifying the campaign", path[i]);
        fclose(f);
        hash[i] = h;
    }
    free(buf);
    if (!err && job->m->layout.world_rank == 0 && stem_wall_time() - t > 2)
        stem_info("the stored files identified (hashed) in %.1f s", stem_wall_time() - t);
    err = stem_mpi_agree(err, job->m->world);
    if (!err) STEM_MPI_CALL(MPI_Bcast(hash, 2, MPI_UNSIGNED_LONG_LONG, 0, job->m->world));
    return err;
}

static char *identity_text(const stem_campaign_job *job, const unsigned long long stored[2])
{
    static const char *placement[] = {
        "threads =",    "max_memory =", "fp_groups =", "node_shared =", "ranks_per_node =", "sum_piece_bytes =",
        "node_queue =", "fft_wisdom =", "fft_cache =", "xyz =",         "positions ="};
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
    if (job->plan->opt.potential_file[0]) fprintf(f, "stored potentials (potential_file) hash = %016llx\n", stored[0]);
    if (job->plan->opt.smatrix_file[0]) fprintf(f, "stored S-matrices (smatrix_file) hash = %016llx\n", stored[1]);
    if (job->plan->probe_block && !job->keep) /* the units are blocks of each rank's probes */
        fprintf(f, "4D patterns streamed = %d blocks of %ld probes of each of %d ranks' shares, %d groups\n",
                job->plan->n_blocks, job->plan->probe_block, job->plan->layout.group_size, job->plan->layout.n_groups);
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

/* ------------------------------------------------------------ opening: the sums, the S-matrices, the checkpoint */

/* [simulation] smatrix_file: this rank's beams of the unit's tilt (its plan names it). */
static int load_smatrix(void *ctx, const stem_plan *plan, int c, int b0, int b1, stem_complex *S)
{
    (void)ctx;
    return stem_smatrix_file_read(plan, c, b0, b1, S);
}

/* [output] save_smatrix: the group leader's whole S-matrix, kept for the unit's file: each
 * round's beams [b0, b1) of every rank gathered there (collective over the group). */
static int keep_smatrix(void *ctx, const stem_plan *plan, const stem_mpi *m, int c, int b0, int b1,
                        const stem_complex *S)
{
    campaign *cp = ctx;
    (void)c;
    if (!cp->smatrix_bytes) return STEM_OK; /* the same on every rank: kept only on a checkpointed run */
    int P = plan->layout.group_size, mine[2] = {b1 - b0, b0}, *pairs = NULL, *count = NULL, err = STEM_OK;
    if (plan->layout.group_rank == 0) {
        pairs = stem_calloc((size_t)2 * P, sizeof(int), "S-matrix gather");
        count = stem_calloc((size_t)2 * P, sizeof(int), "S-matrix gather"); /* then the firsts */
        if (!pairs || !count) err = STEM_ERR_MEMORY;
    }
    MPI_Datatype beam;
    if (!err &&
        (MPI_Type_contiguous(2 * plan->crop_nx * plan->crop_ny, MPI_FLOAT, &beam) != MPI_SUCCESS ||
         MPI_Type_commit(&beam) != MPI_SUCCESS))
        err = STEM_FAIL(STEM_ERR_MPI, "[output] save_smatrix: no MPI type for a beam");
    if ((err = stem_mpi_agree(err, m->group))) {
        free(pairs);
        free(count);
        return err;
    }
    if (MPI_Gather(mine, 2, MPI_INT, pairs, 2, MPI_INT, 0, m->group) != MPI_SUCCESS)
        err = STEM_FAIL(STEM_ERR_MPI, "[output] save_smatrix: gathering the round's beams failed");
    for (int r = 0; count && r < P; r++) count[r] = pairs[2 * r], count[P + r] = pairs[2 * r + 1];
    if (!err &&
        MPI_Gatherv(S, b1 - b0, beam, cp->smatrix_unit, count, count ? count + P : NULL, beam, 0, m->group) !=
            MPI_SUCCESS)
        err = STEM_FAIL(STEM_ERR_MPI, "[output] save_smatrix: gathering the round's beams failed");
    MPI_Type_free(&beam);
    free(pairs);
    free(count);
    return err;
}

static void smatrix_io_setup(campaign *cp)
{
    const stem_options *opt = &cp->job->plan->opt;
    cp->kept_io =
        (stem_smatrix_io){opt->smatrix_file[0] ? load_smatrix : NULL, opt->save_smatrix ? keep_smatrix : NULL, cp};
    if (cp->kept_io.load || cp->kept_io.store) cp->smatrix_io = &cp->kept_io;
    cp->buffers.smatrix_io = cp->smatrix_io;
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

/* A plain run's S-matrices stored or read back beside the output (smatrix_store.h). */
static int open_smatrix_store(campaign *cp)
{
    const stem_campaign_job *job = cp->job;
    if (job->keep) return STEM_OK;
    STEM_TRY(stem_smatrix_store_open(&cp->store, job->m, job->plan, job->target));
    if (cp->store.io.load || cp->store.io.store) cp->smatrix_io = &cp->store.io;
    cp->buffers.smatrix_io = cp->smatrix_io;
    return STEM_OK;
}

/* Rank 0: the checkpoint's file system holds what the campaign will store (refused before any
 * computing otherwise, exit 6): its state twice while a store replaces the last (less a state
 * already there) and every unit's S-matrix file with save_smatrix. A real run's output room is
 * already reserved (io/publish.h), so the free space seen then is the checkpoint's; a dry run
 * reserves nothing, and adds the output's need (output_bytes) where the two share a file system. */
static int checkpoint_room(const campaign *cp, const char *dir, double state, double output_bytes)
{
    char path[STEM_PATH_MAX + 16], parent[STEM_PATH_MAX];
    struct stat st;
    double have = 0, units = (double)cp->smatrix_bytes * cp->n_units;
    snprintf(path, sizeof path, "%s/state", dir);
    if (!stat(path, &st)) have = (double)st.st_size;
    snprintf(parent, sizeof parent, "%s", dir);
    const char *where = stat(parent, &st) ? dirname(parent) : parent; /* the directory, or where it will be */
    struct statvfs v;
    struct stat here, out;
    if (statvfs(where, &v) || stat(where, &here)) return STEM_OK; /* not there: the run's open says why */
    double free = (double)v.f_bavail * (double)v.f_frsize, need = 2 * state - have + units;
    char out_dir[STEM_PATH_MAX];
    snprintf(out_dir, sizeof out_dir, "%s", cp->job->cfg->output_file);
    if (output_bytes > 0 && !stat(dirname(out_dir), &out) && out.st_dev == here.st_dev) free -= output_bytes;
    if (free >= need) return STEM_OK;
    return STEM_FAIL(STEM_ERR_IO,
                     "checkpoint %s: no space left on device for the campaign's checkpoint: its state (every "
                     "point's exact sums) is "
                     "%.1f MiB, %.1f MiB while a store replaces the last%s, and its file system has %.1f MiB free "
                     "(after the output's room); free space, or set [output] checkpoint_dir on a larger "
                     "file system",
                     dir, state / 1048576.0, 2 * state / 1048576.0,
                     units > 0 ? ", with every unit's S-matrix ([output] save_smatrix)" : "", free / 1048576.0);
}

/* The checkpoint found or made, its state loaded into the sums (after the point plans and the
 * stored inputs are checked: a refused input leaves no checkpoint). */
/* The test hook's wait (io/finish.h) ends at a signal, with its status. */
static int signal_tick(void *ctx)
{
    (void)ctx;
    return stem_signal_pending() ? stem_signal_status(stem_signal_pending()) : STEM_OK;
}

static int open_checkpoint(campaign *cp, const char *dir)
{
    const stem_campaign_job *job = cp->job;
    const stem_mpi *m = job->m;
    smatrix_io_setup(cp);
    unsigned long long stored[2];
    int err = m->layout.world_rank == 0 ? stem_output_test_pause("checkpoint", signal_tick, NULL) : STEM_OK;
    if (!err) err = stored_hashes(job, stored);
    char *identity = err ? NULL : identity_text(job, stored);
    if (!err)
        err = stem_mpi_agree(identity ? STEM_OK : STEM_FAIL(STEM_ERR_MEMORY, "cannot format the campaign identity"),
                             m->world);
    if (!err) err = campaign_plans(cp);
    double state = stem_acc_global_bytes(job->plan, cp->n_points, campaign_sums_channels(cp)); /* as the dry run */
    if (!err) err = stem_mpi_agree(m->layout.world_rank == 0 ? checkpoint_room(cp, dir, state, 0) : STEM_OK, m->world);
    /* a stop before the checkpoint opens keeps nothing: the signal's own status (128 + N), not 75 */
    if (!err)
        err = stem_mpi_agree(stem_signal_pending() ? stem_signal_status(stem_signal_pending()) : STEM_OK, m->world);
    if (!err)
        err = stem_checkpoint_open(&cp->ck, m->world, dir, identity, job->plan->fft_wisdom, cp->n_units,
                                   cp->smatrix_bytes, (size_t)state, job->restart);
    if (!err) {
        cp->ck_opened = 1;
        stem_signal_keeps_checkpoint(1); /* from now a signal's message says the checkpoint keeps the units */
    }
    free(identity);
    if (!err) memcpy(cp->done, cp->ck.done, (size_t)cp->n_units);
    if (!err) err = stem_sums_load(&cp->acc, m, &cp->ck);
    if (!err) announce(cp, dir);
    return err;
}

/* The sums (agreed: a rank without room must not leave the others waiting in the units), then a
 * checkpointed run's checkpoint or a plain run's S-matrix store. */
static int campaign_open(campaign *cp, const char *dir)
{
    const stem_campaign_job *job = cp->job;
    int err = stem_acc_alloc_channels(job->plan, cp->n_points, campaign_sums_channels(cp), &cp->acc);
    if (!err && !(cp->done = stem_calloc((size_t)cp->n_units + 1, 1, "the units in the sums"))) err = STEM_ERR_MEMORY;
    err = stem_mpi_agree(err, job->m->world);
    if (!err) err = cp->checkpointed ? open_checkpoint(cp, dir) : open_smatrix_store(cp);
    return stem_mpi_agree(err, job->m->world);
}

/* After the output: the checkpoint removed once the file is published; a stop while writing
 * (or converting) keeps it, every unit still in it. */
static int campaign_close(campaign *cp, const char *dir, int err)
{
    if (!cp->checkpointed || !cp->ck_opened) return err; /* a stop before it opened kept nothing */
    if (!err && cp->job->m->layout.world_rank == 0) stem_checkpoint_remove(&cp->ck);
    if (err && cp->streamed && cp->ck.n_done + cp->n_added) /* the patterns' file went with the failed write */
        stem_info("the checkpoint %s keeps the finished 4D blocks' sums; if their patterns were lost with the "
                  "output's temporary, run with --restart",
                  dir);
    if (err && stem_signal_pending() && err == stem_signal_status(stem_signal_pending())) {
        stem_info("stopped by signal %d while writing the output: the checkpoint %s keeps every unit; run the "
                  "same command again to write it (exit %d)",
                  stem_signal_pending(), dir, STEM_STOPPED_CHECKPOINTED);
        err = STEM_STOPPED_CHECKPOINTED;
    }
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

/* What the output's reserve would take (io/publish.h: the file, its EMD copy, their margins). */
static double dry_run_output(const stem_campaign_job *job)
{
    const stem_series *s = job->series;
    int points = s->n_points ? s->n_points : 1;
    double bytes = stem_output_estimate_bytes(job->plan, points, s->n_tilts);
    double emd = job->plan->opt.layout_emd ? stem_output_estimate_emd_bytes(job->plan, points, s->n_tilts) : 0;
    return bytes + STEM_OUTPUT_RESERVE_MARGIN + (emd > 0 ? emd + STEM_OUTPUT_RESERVE_MARGIN : 0);
}

int stem_campaign_survey(const stem_campaign_job *job)
{
    campaign cp = {0};
    campaign_shape(&cp, job);
    if (!cp.checkpointed) return STEM_OK; /* nothing kept between runs */
    char dir[STEM_PATH_MAX];
    stem_series_checkpoint_dir(job->cfg, dir, sizeof dir);
    unsigned long long stored[2];
    int err = stored_hashes(job, stored);
    char *identity = err ? NULL : identity_text(job, stored);
    if (!err)
        err = stem_mpi_agree(identity ? STEM_OK : STEM_FAIL(STEM_ERR_MEMORY, "cannot format the campaign identity"),
                             job->m->world);
    const stem_options *opt = &job->plan->opt;
    if (!err && (opt->potential_file[0] || opt->smatrix_file[0])) err = campaign_plans(&cp); /* as the run checks */
    double state = stem_acc_global_bytes(job->plan, cp.n_points, campaign_sums_channels(&cp));
    if (!err)
        err = stem_mpi_agree(job->m->layout.world_rank == 0 ? checkpoint_room(&cp, dir, state, dry_run_output(job))
                                                            : STEM_OK,
                             job->m->world);
    if (!err)
        err = stem_checkpoint_survey(job->m->world, dir, identity, cp.n_units, cp.smatrix_bytes, (size_t)state,
                                     job->restart);
    if (!err && job->m->layout.world_rank == 0)
        printf("checkpoint: its state (every point's exact sums) is %.2f MiB, at most %.2f MiB on disk while a store "
               "replaces it%s\n",
               state / 1048576.0, 2 * state / 1048576.0 + (double)cp.smatrix_bytes * cp.n_units / 1048576.0,
               cp.smatrix_bytes ? " (with every unit's S-matrix)" : "");
    fflush(stdout);
    free(identity);
    free(cp.plans);
    return err;
}
