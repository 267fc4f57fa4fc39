/* One configuration after another: build or receive the transmission
 * functions, run the engine on this rank's share, then reduce. */
#include "phonon_loop.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../io/potential_file.h"
#include "algorithm.h"
#include "../src/channels.h"
#include "../src/coherence.h"
#include "../src/fft.h"
#include "../src/phases.h"
#include "../src/potential.h"
#include "../src/signals.h"
#include "dist_hrtem.h"
#include "phonon_steps.h"

/* Test-only hooks: STEMSIM_TEST_FAIL_RANK=r makes rank r fail as the
 * campaign starts; STEMSIM_TEST_FAULT=SITE:r makes rank r fail at SITE
 * ("transmission": its receive buffer for the broadcast transmission
 * functions cannot be allocated). */
static int injected_failure(const stem_mpi *m, const char *site)
{
    const char *rank_env = getenv("STEMSIM_TEST_FAIL_RANK"), *fault = getenv("STEMSIM_TEST_FAULT");
    if (!strcmp(site, "campaign") && rank_env && atoi(rank_env) == m->layout.world_rank)
        return STEM_FAIL(STEM_ERR_INTERNAL, "injected failure (STEMSIM_TEST_FAIL_RANK=%s)", rank_env);
    size_t n = strlen(site);
    if (fault && !strncmp(fault, site, n) && fault[n] == ':' && atoi(fault + n + 1) == m->layout.world_rank)
        return STEM_FAIL(STEM_ERR_MEMORY, "injected failure at %s: cannot allocate (STEMSIM_TEST_FAULT=%s)", site,
                         fault);
    return STEM_OK;
}

/* Slices [s0, s1) of configuration c from [simulation] potential_file instead of the atoms. */
static int transmission_from_file(const stem_plan *plan, int c, int s0, int s1, stem_complex *trans)
{
    float *V = stem_alloc(sizeof(float) * (size_t)plan->pot_nx * plan->pot_ny * (size_t)(s1 - s0 > 0 ? s1 - s0 : 1),
                          "potential slices read from potential_file");
    if (!V) return STEM_ERR_MEMORY;
    int err = s1 > s0 ? stem_potential_file_read(plan, c, s0, s1, V) : STEM_OK;
    if (!err) err = stem_transmission_from_potentials(plan, V, s0, s1, trans);
    free(V);
    return err;
}

/* Configuration c's atoms, displaced, as transmission functions: by the engine
 * where it has that step (the GPU), else on the CPU. */
static int build_transmission(const stem_engine *engine, const stem_plan *plan, const stem_atoms *atoms,
                              const stem_potential_table *table, int c, stem_complex *trans)
{
    if (plan->opt.potential_file[0]) return transmission_from_file(plan, c, 0, plan->n_slices, trans);
    stem_atoms displaced = {0};
    int err = stem_atoms_displace(atoms, plan->opt.seed, c, plan->opt.thermal, &displaced);
    int done = 0;
    if (!err && engine->transmission) { /* the engine may decline (STEM_NOT_APPLICABLE): then the CPU builds them */
        err = engine->transmission(engine, plan, table, &displaced, trans);
        done = err != STEM_NOT_APPLICABLE;
        if (!done) err = STEM_OK;
    }
    if (!err && !done) err = stem_transmission_build(plan, table, &displaced, trans);
    stem_atoms_free(&displaced);
    return err;
}

/* On the CPU every rank of the group builds its share of the slices (the same
 * code, so the same numbers as one rank building all), then the group
 * exchanges them: in node-shared memory (trans_node) only the nodes do. */
static int transmission_shared(const stem_mpi *m, const stem_plan *plan, const stem_atoms *atoms,
                               const stem_potential_table *table, int c, stem_complex *trans,
                               const stem_shared_buffer *trans_node)
{
    const stem_layout *L = &m->layout;
    size_t grid = (size_t)plan->nx * plan->ny;
    long s0, s1;
    stem_split_range(plan->n_slices, L->group_size, L->group_rank, &s0, &s1);
    double t = stem_wall_time();
    stem_atoms displaced = {0};
    int err = L->group_rank ? injected_failure(m, "transmission") : STEM_OK;
    if (!err && plan->opt.potential_file[0])
        err = transmission_from_file(plan, c, (int)s0, (int)s1, trans);
    else if (!err)
        err = stem_atoms_displace(atoms, plan->opt.seed, c, plan->opt.thermal, &displaced);
    if (!err && !plan->opt.potential_file[0])
        err = stem_transmission_build_slices(plan, table, &displaced, (int)s0, (int)s1, trans);
    stem_atoms_free(&displaced);
    t = stem_phase_add(STEM_PHASE_TRANSMISSION, t);
    err = stem_mpi_agree(err, m->group); /* no rank waits in an exchange another abandoned */
    if (!err && trans_node->base)
        err = stem_shared_allgather_blocks(&m->share, trans_node, sizeof(stem_complex) * grid, plan->n_slices);
    else if (!err)
        err = stem_mpi_allgather_blocks(trans, sizeof(stem_complex) * grid, plan->n_slices, m->group);
    stem_phase_add(STEM_PHASE_BROADCAST, t);
    return err;
}

/* With an engine that builds them itself (the GPU), the group leader builds
 * configuration c from the lookup table (built once per run) unless it was
 * built ahead (prebuilt); the group agrees that leader and receivers are
 * ready, then receives it. On the CPU the group shares the work. */
int stem_phonon_transmission(const stem_mpi *m, const stem_engine *engine, const stem_plan *plan,
                             const stem_atoms *atoms, const stem_potential_table *table, int c, int prebuilt,
                             stem_complex *trans, const stem_shared_buffer *trans_node)
{
    if (!engine->transmission && !prebuilt) return transmission_shared(m, plan, atoms, table, c, trans, trans_node);
    size_t bytes = sizeof(stem_complex) * (size_t)plan->nx * plan->ny * plan->n_slices;
    int err = STEM_OK;
    double t = stem_wall_time();
    if (m->layout.group_rank == 0) {
        if (!prebuilt) err = build_transmission(engine, plan, atoms, table, c, trans);
        t = stem_phase_add(STEM_PHASE_TRANSMISSION, t);
    } else {
        err = injected_failure(m, "transmission");
    }
    err = stem_mpi_agree(err, m->group); /* no rank waits in a broadcast another abandoned */
    if (!err) err = stem_mpi_bcast(trans, bytes, 0, m->group);
    stem_phase_add(STEM_PHASE_BROADCAST, t);
    return err;
}

/* Ahead: while an engine that leaves the host's cores idle (the GPU) runs
 * configuration c, the group leader builds its next one on a helper thread
 * into a second buffer. The same functions, only sooner. */
typedef struct {
    pthread_t thread;
    const stem_engine *engine;
    const stem_plan *plan;
    const stem_atoms *atoms;
    const stem_potential_table *table;
    stem_complex *trans;
    int c, err, started;
} build_ahead;

static void *build_ahead_main(void *arg)
{
    build_ahead *b = (build_ahead *)arg;
    b->err = build_transmission(b->engine, b->plan, b->atoms, b->table, b->c, b->trans);
    return NULL;
}

static void build_ahead_start(build_ahead *b, int c, stem_complex *into)
{
    b->c = c;
    b->trans = into;
    b->err = STEM_OK;
    b->started = !pthread_create(&b->thread, NULL, build_ahead_main, b); /* not started: built when needed */
}

/* Waits for the helper; returns the configuration now in its buffer, or -1. */
static int build_ahead_finish(build_ahead *b)
{
    if (!b->started) return -1;
    double t = stem_wall_time();
    pthread_join(b->thread, NULL);
    stem_phase_add(STEM_PHASE_TRANSMISSION, t); /* only the part the engine did not hide */
    b->started = 0;
    return b->err ? -1 : b->c; /* a failure here is met again, and reported, when c is built for use */
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

int stem_phonon_loop_run(const stem_mpi *m, const stem_plan *plan, const stem_engine *engine, const stem_atoms *atoms,
                         const stem_atom_potential *potentials, const stem_smatrix_io *smatrix_io, stem_result *res)
{
    if (plan->dist) return stem_dist_hrtem_run(m, plan, atoms, potentials, res); /* the wave in slabs */
    const stem_layout *L = &m->layout;
    stem_detector det = {0};
    stem_potential_table table = {0};
    stem_complex *trans = NULL;
    stem_shared_buffer trans_node = {.win = MPI_WIN_NULL};
    int err = injected_failure(m, "campaign");
    if (!err) err = stem_detector_build(plan, &det);
    if (!err) err = stem_result_alloc_errors(plan, res);
    err = stem_mpi_agree(err, m->group); /* the shared buffer is allocated by the node's ranks together */
    /* in the node's shared memory when the group's ranks build them together (the CPU);
     * an engine that builds them itself (the GPU) hands each rank its own copy */
    if (!err)
        err = stem_node_buffer_alloc(&m->share, m->share.active && !engine->transmission,
                                     (size_t)plan->nx * plan->ny * plan->n_slices, "transmission functions",
                                     &trans_node, &trans);
    int loaded = smatrix_io && smatrix_io->load; /* the S-matrices read back: no potential needed */
    double t = stem_wall_time();
    if (!loaded) err = stem_phonon_lookup_table(m, plan, atoms, potentials, err, &table);
    stem_phase_add(STEM_PHASE_TABLE, t);
    /* rounds, not configurations: every group meets every safe point even
     * when the groups do not divide the configurations evenly; a failure
     * inside a round is agreed at the next one */
    int rounds = (plan->n_configs + L->n_groups - 1) / L->n_groups;
    stem_complex *spare = NULL;
    /* only where the leader alone builds and broadcasts (an engine with its own transmission step,
     * or a group of one): where the group shares the build, a leader holding configuration c
     * already would broadcast while the others wait in the shared build's exchange */
    int ahead_wanted = !err && !loaded && engine->host_idle && L->group_rank == 0 && rounds > 1 &&
        (engine->transmission || L->group_size == 1);
    if (ahead_wanted)
        spare = stem_fft_alloc((size_t)plan->nx * plan->ny * plan->n_slices, "transmission functions (built ahead)");
    if (ahead_wanted && !spare) err = STEM_ERR_MEMORY;
    build_ahead ahead = {.engine = engine, .plan = plan, .atoms = atoms, .table = &table};
    stem_algorithm_buffers buffers = {.smatrix_io = smatrix_io};
    int ready = -1; /* the configuration whose functions trans holds */
    for (int round = 0; round < rounds; round++) {
        err = stem_phonon_safe_point(m, err);
        if (err) break;
        int c = round * L->n_groups + L->group;
        if (c >= plan->n_configs) continue;
        stem_info("configuration %d of %d (group %d)", c + 1, plan->n_configs, L->group);
        if (!loaded) err = stem_phonon_transmission(m, engine, plan, atoms, &table, c, ready == c, trans, &trans_node);
        if (err) continue;
        buffers.config = c;
        if (spare && c + L->n_groups < plan->n_configs) build_ahead_start(&ahead, c + L->n_groups, spare);
        stem_result_errors_begin(res); /* the configuration's own values, for its standard errors */
        err = stem_algorithm_run_config(engine, plan, m, trans, &det, res, &buffers);
        if (!err) stem_result_errors_add(res, c);
        if (spare && (ready = build_ahead_finish(&ahead)) >= 0) {
            stem_complex *t = trans;
            trans = spare;
            spare = t;
        }
        if (!err) stem_phases_log_config(c, plan->n_configs);
    }
    build_ahead_finish(&ahead); /* a round left early: never free a buffer a helper writes */
    stem_fft_free(spare);
    stem_algorithm_buffers_free(&buffers);
    err = stem_phonon_safe_point(m, err);
    stem_potential_table_free(&table);
    stem_node_buffer_free(&trans_node, trans);
    stem_detector_free(&det);
    if (err) return err;
    t = stem_wall_time();
    STEM_TRY(combine_groups(m, plan, res));
    stem_result_finalise(res, plan->n_configs);
    /* the scan channels (PACBED): every rank's probes of every group's configurations, exactly
     * (the same bits on any rank count), then the mean */
    STEM_TRY(stem_mpi_sum_scan(res, -1, m->world));
    stem_result_scan_mean(res, (double)plan->n_configs * plan->n_probes);
    if (plan->opt.source_size > 0) { /* only the first group's results are written */
        err = L->group == 0 ? stem_phonon_blur(m, plan, res) : STEM_OK;
        STEM_TRY(stem_mpi_agree(err, m->world));
    }
    STEM_TRY(stem_phonon_scan_errors(m, plan, res));
    stem_result_log_errors(plan, res, "");
    stem_phase_add(STEM_PHASE_REDUCTION, t);
    return STEM_OK;
}

void stem_potential_source_init(stem_potential_source *src, const stem_plan *plan, const stem_atoms *atoms,
                                const stem_atom_potential *potentials)
{
    memset(src, 0, sizeof *src);
    src->plan = plan, src->atoms = atoms, src->potentials = potentials;
    src->displaced_config = -1;
}

int stem_potential_source_slices(void *ctx, int t, int c, int s0, int s1, float *V)
{
    (void)t; /* one run: one tilt */
    stem_potential_source *src = ctx;
    const stem_plan *plan = src->plan;
    if (plan->opt.potential_file[0]) return stem_potential_file_read(plan, c, s0, s1, V);
    if (!src->table.profiles) STEM_TRY(stem_potential_table_build(plan, src->atoms, src->potentials, &src->table));
    if (src->displaced_config != c) {
        stem_atoms_free(&src->displaced);
        src->displaced_config = -1;
        STEM_TRY(stem_atoms_displace(src->atoms, plan->opt.seed, c, plan->opt.thermal, &src->displaced));
        src->displaced_config = c;
    }
    return stem_potential_band_slices(plan, &src->table, &src->displaced, s0, s1, V);
}

void stem_potential_source_free(stem_potential_source *src)
{
    stem_potential_table_free(&src->table);
    stem_atoms_free(&src->displaced);
}
