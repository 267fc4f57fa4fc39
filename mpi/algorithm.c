/* Multislice and PRISM as algorithms over an engine (algorithm.h). */
#include "algorithm.h"

#include <stdlib.h>
#include <string.h>

#include "../src/coherence.h"
#include "../src/dispatcher.h"
#include "../src/hrtem.h"
#include "../src/phases.h"

void stem_algorithm_buffers_free(stem_algorithm_buffers *b)
{
    for (int i = 0; i < b->n_focal_sets; i++) free(b->focal[i].plans);
    free(b->focal);
    for (int k = 0; k < b->n_focal_parts; k++) stem_result_free(&b->focal_part[k]);
    free(b->focal_part);
    stem_node_buffer_free(&b->S_node, b->S);
    stem_node_buffer_free(&b->by_pixel_node, b->by_pixel);
    stem_shared_free(&b->queue_node);
    stem_fft_free(b->local);
    memset(b, 0, sizeof *b);
}

/* Every buffer this configuration needs; agreed over the group (node-shared ones are collective).
 * A thickness series keeps the S-matrix of every detection plane (stem_prism_beam_stride); the
 * beam-fastest copy holds one plane at a time. */
static int prism_buffers(const stem_engine *engine, const stem_plan *plan, const stem_mpi *m,
                         stem_algorithm_buffers *buf)
{
    size_t stride = stem_prism_beam_stride(plan), count = stride * plan->n_beams;
    size_t one_plane = (size_t)plan->crop_nx * plan->crop_ny * plan->n_beams;
    /* kept from one configuration to the next: allocated once (collectively when shared) */
    int err =
        buf->S ? STEM_OK : stem_node_buffer_alloc(&m->share, m->share.active, count, "S-matrix", &buf->S_node, &buf->S);
    if (!err && engine->output_beam_fastest && !buf->by_pixel)
        err = stem_node_buffer_alloc(&m->share, m->share.active, one_plane, "S-matrix (beam fastest)",
                                     &buf->by_pixel_node, &buf->by_pixel);
    size_t local_beams = (size_t)(plan->beam_end - plan->beam_begin);
    if (!err && plan->layout.group_size > 1 && !m->share.active && !buf->local &&
        !(buf->local = stem_fft_alloc(stride * local_beams, "local S-matrix")))
        err = STEM_ERR_MEMORY;
    return stem_mpi_agree(err, m->group);
}

/* Where this rank computes its beams: in place in the whole S-matrix when it is
 * alone or shares it with its node, else in its own buffer, gathered after. */
static stem_complex *beams_destination(const stem_plan *plan, const stem_mpi *m, const stem_algorithm_buffers *buf)
{
    if (plan->layout.group_size == 1) return buf->S;
    if (m->share.active) return buf->S + (size_t)plan->beam_begin * stem_prism_beam_stride(plan);
    return buf->local;
}

/* The S-matrix step of a node's ranks from one queue (engine->prism_smatrix_queue): the
 * node's beams are those its ranks would compute one by one (consecutive group ranks), taken
 * one batch at a time, so a rank slowed by its neighbours on the node leaves beams to the
 * others instead of keeping them waiting. The counter is reset and then published to the
 * node before anyone takes from it; the exchange's node synchronisation ends the step. */
static int smatrix_node_queue(const stem_engine *engine, const stem_plan *plan, const stem_mpi *m,
                              const stem_complex *trans, stem_algorithm_buffers *buf)
{
    const stem_node_share *s = &m->share;
    if (!buf->queue_node.base) STEM_TRY(stem_shared_alloc(s, sizeof(long), "S-matrix beam counter", &buf->queue_node));
    long *next = buf->queue_node.base;
    int first_rank = m->layout.group_rank - s->node_rank; /* the node's ranks are consecutive in the group */
    long b0, e0, b1, e1;
    stem_split_range(plan->n_beams, m->layout.group_size, first_rank, &b0, &e0);
    stem_split_range(plan->n_beams, m->layout.group_size, first_rank + s->node_size - 1, &b1, &e1);
    if (s->node_rank == 0) __atomic_store_n(next, 0L, __ATOMIC_RELAXED);
    STEM_TRY(stem_shared_sync(s, &buf->queue_node));
    stem_beam_queue q = {next, (int)b0, (int)(e1 - b0), buf->S};
    return engine->prism_smatrix_queue(engine, plan, trans, &q);
}

static int smatrix_exchange(const stem_plan *plan, const stem_mpi *m, stem_algorithm_buffers *buf)
{
    size_t stride = stem_prism_beam_stride(plan); /* a beam's waves at every detection plane */
    if (plan->layout.group_size == 1) return STEM_OK;
    if (m->share.active)
        return stem_shared_allgather_blocks(&m->share, &buf->S_node, sizeof(stem_complex) * stride, plan->n_beams);
    return stem_mpi_gather_smatrix(plan, buf->local, buf->S, m->group);
}

typedef struct {
    const stem_plan *plan;
    const stem_complex *by_beam;
    stem_complex *by_pixel;
    size_t first, last; /* this rank's pixels [first, last) */
} arrange_job;

enum { ARRANGE_TILE = 64 }; /* pixels per work item (the transpose's tile) */

static int arrange_work(void *ctx, int worker, long begin, long end)
{
    (void)worker;
    arrange_job *job = ctx;
    size_t b = job->first + (size_t)begin * ARRANGE_TILE, e = job->first + (size_t)end * ARRANGE_TILE;
    stem_prism_arrange_pixels(job->plan, job->by_beam, job->by_pixel, b, e < job->last ? e : job->last);
    return STEM_OK;
}

/* Beam-fastest arrangement of detection plane k's S-matrix, threaded; with node sharing each
 * rank of the node a share of the pixels. */
static int arrange_smatrix(const stem_plan *plan, const stem_mpi *m, stem_algorithm_buffers *buf, int k)
{
    size_t box = (size_t)plan->crop_nx * plan->crop_ny;
    long b = 0, e = (long)box;
    if (m->share.active) stem_split_range((long)box, m->share.node_size, m->share.node_rank, &b, &e);
    b -= b % ARRANGE_TILE; /* ranks' shares in whole tiles, so they meet exactly */
    if (e != (long)box) e -= e % ARRANGE_TILE;
    arrange_job job = {plan, buf->S + (size_t)k * box, buf->by_pixel, (size_t)b, (size_t)e};
    stem_work work = {&job, NULL, arrange_work, NULL};
    long tiles = (e - b + ARRANGE_TILE - 1) / ARRANGE_TILE; /* the last may be short */
    int err = tiles > 0 ? stem_dispatch(&work, tiles, 16, plan->threads, "S-matrix arrangement") : STEM_OK;
    if (m->share.active) err = stem_mpi_agree(err, m->share.node);
    if (!err && m->share.active) err = stem_shared_sync(&m->share, &buf->by_pixel_node);
    return err;
}

/* The focal plans of slot i (once per run for each plan the slot is used with):
 * the plan with C10 moved to each quadrature point. */
static int focal_setup(const stem_plan *plan, stem_algorithm_buffers *buf, int slot, stem_focal_set **out)
{
    if (slot >= buf->n_focal_sets) {
        stem_focal_set *more = realloc(buf->focal, sizeof *more * (size_t)(slot + 1));
        if (!more) return STEM_FAIL(STEM_ERR_MEMORY, "out of memory for the focal spread plans");
        memset(more + buf->n_focal_sets, 0, sizeof *more * (size_t)(slot + 1 - buf->n_focal_sets));
        buf->focal = more;
        buf->n_focal_sets = slot + 1;
    }
    stem_focal_set *set = *out = &buf->focal[slot];
    if (set->base == plan) { /* a streamed 4D run's blocks move the plan's probes */
        for (int i = 0; set->plans && i < set->n; i++) {
            set->plans[i].probe_begin = plan->probe_begin;
            set->plans[i].probe_end = plan->probe_end;
        }
        return STEM_OK;
    }
    double offset[STEM_MAX_FOCAL_POINTS];
    int n = stem_focal_points(plan, offset, set->weight);
    free(set->plans);
    set->plans = NULL;
    set->base = plan;
    set->n = 1;
    if (n == 1) return STEM_OK;
    if (!(set->plans = stem_calloc((size_t)n, sizeof(stem_plan), "focal spread plans"))) return STEM_ERR_MEMORY;
    for (int i = 0; i < n; i++) {
        set->plans[i] = *plan; /* shares the plan's tables: read only */
        set->plans[i].aberr.c[STEM_C10] += offset[i];
    }
    if (!buf->focal_part) {
        int planes = stem_plan_n_planes(plan);
        STEM_ALLOC(buf->focal_part, planes, "focal spread results");
        for (; buf->n_focal_parts < planes; buf->n_focal_parts++)
            STEM_TRY(stem_result_alloc(plan, &buf->focal_part[buf->n_focal_parts]));
    }
    set->n = n;
    return STEM_OK;
}

/* The probe step (step: multislice, or PRISM's output on S) once per defocus,
 * weighted into res (the `planes` results the step makes: multislice's every detection
 * plane, PRISM's output step the one of its S-matrix); a single call without a focal spread. */
typedef int (*probe_step)(const stem_engine *engine, const stem_plan *plan, const stem_complex *input,
                          const stem_detector *det, stem_result *res);

static int over_focal_points(probe_step step, int planes, const stem_engine *engine, const stem_plan *plan,
                             const stem_complex *input, const stem_detector *det, stem_result *res,
                             stem_algorithm_buffers *buf, int slot)
{
    stem_focal_set *set;
    STEM_TRY(focal_setup(plan, buf, slot, &set));
    if (set->n == 1) return step(engine, plan, input, det, res);
    for (int i = 0; i < set->n; i++) {
        for (int k = 0; k < planes; k++) stem_result_zero(&buf->focal_part[k]);
        STEM_TRY(step(engine, &set->plans[i], input, det, buf->focal_part));
        for (int k = 0; k < planes; k++) stem_result_add_scaled(&res[k], &buf->focal_part[k], set->weight[i]);
    }
    return STEM_OK;
}

static int multislice_step(const stem_engine *engine, const stem_plan *plan, const stem_complex *trans,
                           const stem_detector *det, stem_result *res)
{
    return engine->multislice(engine, plan, trans, det, res);
}

static int prism_output_step(const stem_engine *engine, const stem_plan *plan, const stem_complex *S,
                             const stem_detector *det, stem_result *res)
{
    return engine->prism_output(engine, plan, S, det, res);
}

/* The S-matrix of this configuration (every detection plane's), whole on every rank of the group, by beam. */
static int prism_smatrix(const stem_engine *engine, const stem_plan *plan, const stem_mpi *m, const stem_complex *trans,
                         stem_algorithm_buffers *buf)
{
    double t = stem_wall_time();
    const stem_smatrix_io *io = buf->smatrix_io;
    int err = prism_buffers(engine, plan, m, buf);
    if (!err && io && io->load)
        err = io->load(io->ctx, plan, buf->config, plan->beam_begin, plan->beam_end, beams_destination(plan, m, buf));
    else if (!err && engine->prism_smatrix_queue && m->share.active && plan->layout.group_size > 1)
        err = smatrix_node_queue(engine, plan, m, trans, buf);
    else if (!err)
        err = engine->prism_smatrix(engine, plan, trans, beams_destination(plan, m, buf));
    t = stem_phase_add(STEM_PHASE_SMATRIX, t);
    err = stem_mpi_agree(err, m->group); /* before the exchange: all ranks have their beams */
    t = stem_phase_add(STEM_PHASE_WAIT, t);
    if (!err) err = smatrix_exchange(plan, m, buf);
    t = stem_phase_add(STEM_PHASE_GATHER, t);
    if (!err && io && io->store) { /* whole on every rank of the group now: its leader keeps it */
        if (m->layout.group_rank == 0) err = io->store(io->ctx, plan, buf->config, buf->S);
        err = stem_mpi_agree(err, m->group);
        stem_phase_add(STEM_PHASE_WRITE, t);
    }
    return err;
}

/* Detection plane k's S-matrix in the layout the engine's output step reads: arranged beam
 * fastest (the CPU), or as gathered (plane k of each beam, beams stem_prism_beam_stride apart). */
static int prism_plane(const stem_engine *engine, const stem_plan *plan, const stem_mpi *m, stem_algorithm_buffers *buf,
                       int k, const stem_complex **S)
{
    double t = stem_wall_time();
    *S = buf->S + (size_t)k * plan->crop_nx * plan->crop_ny;
    int err = STEM_OK;
    if (engine->output_beam_fastest) {
        err = arrange_smatrix(plan, m, buf, k);
        *S = buf->by_pixel;
    }
    stem_phase_add(STEM_PHASE_ARRANGE, t);
    return err;
}

/* PRISM's output step for the n points on each detection plane's S-matrix in turn (each
 * plane arranged once for all points): res[i * planes + k]. Before the next plane the group
 * agrees: no rank of a node still reads the shared arrangement that the next replaces, and a
 * rank that failed leaves no other waiting in the next arrangement's node exchange. */
static int prism_points(const stem_engine *engine, const stem_plan *plans, int n, const stem_mpi *m,
                        const stem_detector *det, stem_result *res, stem_algorithm_buffers *buf)
{
    int planes = stem_plan_n_planes(&plans[0]), err = STEM_OK;
    for (int k = 0; k < planes; k++) {
        if (k > 0 && (err = stem_mpi_agree(err, m->group))) break;
        const stem_complex *S;
        err = prism_plane(engine, &plans[0], m, buf, k, &S);
        double t = stem_wall_time();
        for (int i = 0; i < n && !err; i++)
            err = over_focal_points(prism_output_step, 1, engine, &plans[i], S, det, &res[(size_t)i * planes + k], buf,
                                    i);
        stem_phase_add(STEM_PHASE_PROBES, t);
    }
    return err;
}

/* hrtem: one exit wave for each beam tilt among the points (consecutive points with the
 * same tilt differ only in the lens), recorded at each detection plane, on the rank that holds
 * the plane wave (probe 0); the lens's focal spread is summed inside the record. */
static int hrtem_points(const stem_engine *engine, const stem_plan *plans, int n, const stem_complex *trans,
                        const stem_detector *det, stem_result *res)
{
    if (plans[0].probe_end <= plans[0].probe_begin) return STEM_OK;
    double t = stem_wall_time();
    if (engine->hrtem) { /* the GPU's; declined (the wave does not fit), the CPU's below */
        int err = engine->hrtem(engine, plans, n, trans, det, res);
        if (err != STEM_NOT_APPLICABLE) {
            stem_phase_add(STEM_PHASE_PROBES, t);
            return err;
        }
    }
    int err = stem_hrtem_points(plans, n, trans, det, res);
    stem_phase_add(STEM_PHASE_PROBES, t); /* the wave and the lens: the "probe" step of a plane wave */
    return err;
}

int stem_algorithm_run_points(const stem_engine *engine, const stem_plan *plans, int n, const stem_mpi *m,
                              const stem_complex *trans, const stem_detector *det, stem_result *res,
                              stem_algorithm_buffers *buffers)
{
    if (plans[0].algorithm == STEM_ALG_HRTEM) return hrtem_points(engine, plans, n, trans, det, res);
    int focal = plans[0].opt.focal_spread > 0 && plans[0].opt.focal_points > 1;
    int planes = stem_plan_n_planes(&plans[0]);
    if (plans[0].algorithm == STEM_ALG_PRISM && plans[0].layout.group_size == 1 && engine->prism_resident && !focal &&
        !buffers->smatrix_io && planes == 1) {
        /* nothing to gather: the engine may keep the S-matrix where it made it, for every point's output step */
        int err = engine->prism_resident(engine, plans, n, trans, det, res);
        if (err != STEM_NOT_APPLICABLE) return err;
    }
    if (plans[0].algorithm == STEM_ALG_PRISM) {
        STEM_TRY(prism_smatrix(engine, &plans[0], m, trans, buffers)); /* the same for every defocus */
        return prism_points(engine, plans, n, m, det, res, buffers);
    }
    double t = stem_wall_time();
    int err = STEM_OK;
    for (int i = 0; i < n && !err; i++)
        err = over_focal_points(multislice_step, planes, engine, &plans[i], trans, det, &res[(size_t)i * planes],
                                buffers, i);
    stem_phase_add(STEM_PHASE_PROBES, t);
    return err;
}

int stem_algorithm_run_config(const stem_engine *engine, const stem_plan *plan, const stem_mpi *m,
                              const stem_complex *trans, const stem_detector *det, stem_result *res,
                              stem_algorithm_buffers *buffers)
{
    return stem_algorithm_run_points(engine, plan, 1, m, trans, det, res, buffers);
}
