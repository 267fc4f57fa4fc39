/* A configuration's transmission functions for the campaign's units (phonon_loop.h):
 * built or received inside a group, built ahead, or read from potential_file. */
#include "phonon_loop.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../io/potential_file.h"
#include "../src/test_hooks.h"
#include "algorithm.h"
#include "../src/fft.h"
#include "../src/phases.h"
#include "../src/potential.h"
#include "phonon_steps.h"

int stem_phonon_injected_failure(const stem_mpi *m, const char *site)
{
    const stem_test_hooks_t *hooks = stem_test_hooks();
    const char *fault = hooks->fault;
    if (!strcmp(site, "campaign") && hooks->fail_rank >= 0 && hooks->fail_rank == m->layout.world_rank)
        return STEM_FAIL(STEM_ERR_INTERNAL, "injected failure (STEMSIM_TEST_FAIL_RANK=%d)", hooks->fail_rank);
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

/* -v, the first configuration: which slices each rank of the group built and what the exchange
 * brought it by MPI (node-shared memory: nothing inside a node, the other nodes' slices to
 * each node's first rank), gathered to the group's leader. Collective over the group. */
static void report_shares(const stem_mpi *m, int c, long s0, long s1, size_t received, int together)
{
    if (c != 0 || !stem_log_verbose()) return;
    const stem_layout *L = &m->layout;
    double mine[5] = {(double)s0, (double)s1, (double)received, (double)(m->share.active ? m->share.node_rank : 0),
                      together ? (double)m->share.node_size : 0};
    double *all = L->group_rank == 0 ? stem_calloc((size_t)L->group_size * 5, sizeof(double), "shares") : NULL;
    if (MPI_Gather(mine, 5, MPI_DOUBLE, all, 5, MPI_DOUBLE, 0, m->group) != MPI_SUCCESS || !all) {
        free(all);
        return;
    }
    for (int r = 0; r < L->group_size; r++) {
        char with[64] = "";
        if (all[5 * r + 4] > 0) snprintf(with, sizeof with, " with the %.0f ranks of its node", all[5 * r + 4]);
        stem_debug("transmission share: group rank %d built slices [%.0f, %.0f)%s, received %.0f bytes by MPI "
                   "(node rank %.0f)",
                   r, all[5 * r], all[5 * r + 1], with, all[5 * r + 2], all[5 * r + 3]);
    }
    free(all);
}

/* On the CPU every rank of the group builds its share of the slices (the same
 * code, so the same numbers as one rank building all), then the group
 * exchanges them: in node-shared memory (trans_node) only the nodes do. */
static int transmission_shared(const stem_mpi *m, const stem_plan *plan, const stem_atoms *atoms,
                               const stem_potential_table *table, int c, stem_complex *trans,
                               const stem_shared_buffer *trans_node, stem_transmission_split *split)
{
    const stem_layout *L = &m->layout;
    size_t grid = (size_t)plan->nx * plan->ny;
    long s0, s1;
    if (trans_node->base) /* node-shared: this rank's part of its node's share */
        stem_rank_block_range(&m->share, plan->n_slices, L->group_rank, L->group_size, &s0, &s1);
    else
        stem_split_range(plan->n_slices, L->group_size, L->group_rank, &s0, &s1);
    double t = stem_wall_time();
    stem_atoms displaced = {0};
    int err = L->group_rank ? stem_phonon_injected_failure(m, "transmission") : STEM_OK;
    int together = split && split->round > 0 && trans_node->base && !plan->opt.potential_file[0];
    if (!err && plan->opt.potential_file[0])
        err = transmission_from_file(plan, c, (int)s0, (int)s1, trans);
    else if (!err)
        err = stem_atoms_displace(atoms, plan->opt.seed, c, plan->opt.thermal, &displaced);
    if (together) { /* the node's slices by all its ranks, below one slice (transmission_split.h) */
        err = stem_transmission_split_build(m, plan, table, &displaced, split, trans, err);
        s0 = split->first, s1 = split->end;
    } else if (!err && !plan->opt.potential_file[0])
        err = stem_transmission_build_slices(plan, table, &displaced, (int)s0, (int)s1, trans);
    stem_atoms_free(&displaced);
    t = stem_phase_add(STEM_PHASE_TRANSMISSION, t);
    err = stem_mpi_agree(err, m->group); /* no rank waits in an exchange another abandoned */
    size_t before = stem_mpi_received_bytes();
    if (!err && trans_node->base)
        err = stem_shared_allgather_blocks(&m->share, trans_node, sizeof(stem_complex) * grid, plan->n_slices);
    else if (!err)
        err = stem_mpi_allgather_blocks(trans, sizeof(stem_complex) * grid, plan->n_slices, m->group);
    stem_phase_add(STEM_PHASE_BROADCAST, t);
    if (!err) report_shares(m, c, s0, s1, stem_mpi_received_bytes() - before, together);
    return err;
}

/* With an engine that builds them itself (the GPU), the group leader builds
 * configuration c from the lookup table (built once per run) unless it was
 * built ahead (prebuilt); the group agrees that leader and receivers are
 * ready, then receives it. On the CPU the group shares the work. */
int stem_phonon_transmission(const stem_mpi *m, const stem_engine *engine, const stem_plan *plan,
                             const stem_atoms *atoms, const stem_potential_table *table, int c, int prebuilt,
                             stem_complex *trans, const stem_shared_buffer *trans_node, stem_transmission_split *split)
{
    if (!engine->transmission && !prebuilt)
        return transmission_shared(m, plan, atoms, table, c, trans, trans_node, split);
    size_t bytes = sizeof(stem_complex) * (size_t)plan->nx * plan->ny * plan->n_slices;
    int err = STEM_OK;
    double t = stem_wall_time();
    if (m->layout.group_rank == 0) {
        if (!prebuilt) err = build_transmission(engine, plan, atoms, table, c, trans);
        t = stem_phase_add(STEM_PHASE_TRANSMISSION, t);
    } else {
        err = stem_phonon_injected_failure(m, "transmission");
    }
    err = stem_mpi_agree(err, m->group); /* no rank waits in a broadcast another abandoned */
    if (!err) err = stem_mpi_bcast(trans, bytes, 0, m->group);
    stem_phase_add(STEM_PHASE_BROADCAST, t);
    return err;
}

/* Ahead (phonon_loop.h): the same functions, only sooner. */
static void *build_ahead_main(void *arg)
{
    stem_build_ahead *b = (stem_build_ahead *)arg;
    b->err = build_transmission(b->engine, b->plan, b->atoms, b->table, b->c, b->trans);
    return NULL;
}

void stem_build_ahead_start(stem_build_ahead *b, int c, stem_complex *into)
{
    b->c = c;
    b->trans = into;
    b->err = STEM_OK;
    b->started = !pthread_create(&b->thread, NULL, build_ahead_main, b); /* not started: built when needed */
}

int stem_build_ahead_finish(stem_build_ahead *b)
{
    if (!b->started) return -1;
    double t = stem_wall_time();
    pthread_join(b->thread, NULL);
    stem_phase_add(STEM_PHASE_TRANSMISSION, t); /* only the part the engine did not hide */
    b->started = 0;
    return b->err ? -1 : b->c; /* a failure here is met again, and reported, when c is built for use */
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
