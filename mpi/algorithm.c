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
    stem_smatrix_tiles_free(&b->tiles);
    memset(b, 0, sizeof *b);
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

/* The probe step (step: multislice on the transmission functions, or PRISM's output on a
 * stem_prism_view of the S-matrix: input) once per defocus,
 * weighted into res (the `planes` results the step makes: multislice's every detection
 * plane, PRISM's output step the one of its S-matrix); a single call without a focal spread. */
typedef int (*probe_step)(const stem_engine *engine, const stem_plan *plan, const void *input, const stem_detector *det,
                          stem_result *res);

static int over_focal_points(probe_step step, int planes, const stem_engine *engine, const stem_plan *plan,
                             const void *input, const stem_detector *det, stem_result *res, stem_algorithm_buffers *buf,
                             int slot)
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

static int multislice_step(const stem_engine *engine, const stem_plan *plan, const void *trans,
                           const stem_detector *det, stem_result *res)
{
    return engine->multislice(engine, plan, trans, det, res);
}

static int prism_output_step(const stem_engine *engine, const stem_plan *plan, const void *S, const stem_detector *det,
                             stem_result *res)
{
    return engine->prism_output(engine, plan, S, det, res);
}

/* The S-matrix of this configuration (every detection plane's) over this rank's tile. */
static int prism_smatrix(const stem_engine *engine, const stem_plan *plan, const stem_mpi *m, const stem_complex *trans,
                         stem_algorithm_buffers *buf)
{
    return stem_smatrix_tiles_build(engine, plan, m, trans, buf->smatrix_io, buf->config, &buf->tiles);
}

/* PRISM's output step for the n points on each detection plane's S-matrix in turn: res[i * planes + k]. */
static int prism_points(const stem_engine *engine, const stem_plan *plans, int n, const stem_detector *det,
                        stem_result *res, stem_algorithm_buffers *buf)
{
    int planes = stem_plan_n_planes(&plans[0]), err = STEM_OK;
    double t = stem_wall_time();
    for (int k = 0; k < planes && !err; k++) {
        stem_prism_view S = stem_smatrix_tiles_view(&plans[0], &buf->tiles, k);
        for (int i = 0; i < n && !err; i++)
            err = over_focal_points(prism_output_step, 1, engine, &plans[i], &S, det, &res[(size_t)i * planes + k], buf,
                                    i);
    }
    stem_phase_add(STEM_PHASE_PROBES, t);
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
        return prism_points(engine, plans, n, det, res, buffers);
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
