/* The campaign's finished points and its output (campaign_private.h): each point's mean and
 * standard errors from the exact sums, its PACBED, source-size blur, scan errors and checks,
 * then the one output call. */
#include "campaign_private.h"

#include <stdlib.h>
#include <string.h>

#include "../src/result_check.h"
#include "../src/phases.h"
#include "phonon_steps.h"

/* The first group's ranks: point p from the sums, as a configuration loop would have left it
 * (sums and standard-error state), then finalised; PACBED's mean on rank 0 (its sums are
 * there), each configuration's images on every one of them. */
static int point_from_sums(campaign *cp, int p, stem_result *res)
{
    const stem_mpi *m = cp->job->m;
    const stem_plan *plan = cp->job->plan;
    stem_result_zero(res);
    STEM_TRY(stem_acc_to_result(&cp->acc, p, res, plan->threads));
    if (res->config_images)
        STEM_MPI_CALL(MPI_Bcast(res->config_images, cp->n_configs * plan->n_images, MPI_DOUBLE, 0, m->group));
    STEM_TRY(stem_result_finalise(res, cp->n_configs, plan->threads));
    if (res->pacbed && m->layout.world_rank == 0) stem_result_scan_mean(res, (double)cp->n_configs * plan->n_probes);
    return STEM_OK;
}

/* Rank 0 logs the named images' means with their standard errors (a long series: the file
 * holds them all); every rank takes part in the scan sums. */
static int point_image_errors(campaign *cp, int p, stem_result *res)
{
    const stem_plan *plan = cp->job->plan;
    STEM_TRY(stem_phonon_scan_errors(cp->job->m, plan, res));
    const stem_series *s = cp->job->series;
    if (res && s->n_points <= 24) {
        char where[64] = "";
        if (s->n_points) snprintf(where, sizeof where, "point %d of %d: ", p + 1, s->n_points);
        stem_result_log_errors(plan, res, where);
    }
    return STEM_OK;
}

int stem_campaign_finish_point(campaign *cp, int p, stem_result *res)
{
    const stem_mpi *m = cp->job->m;
    const stem_plan *plan = cp->job->plan;
    double t = stem_wall_time();
    int err = STEM_OK;
    if (res && !res->data[STEM_CH_TOTAL]) { /* --convergence's result: allocated here, freed by the caller */
        err = stem_result_alloc(plan, res);
        if (!err && !plan->dist) err = stem_result_alloc_errors(plan, res);
    }
    err = stem_mpi_agree(err, m->world);
    if (!err && res && m->layout.group == 0) err = point_from_sums(cp, p, res);
    err = stem_mpi_agree(err, m->world);
    if (!err && plan->dist) stem_dist_fft_report(m, plan);
    if (!err && !plan->dist && plan->opt.source_size > 0) { /* only the first group's ranks write */
        const stem_plan *point_plan = cp->plans ? &cp->plans[p / cp->n_planes] : plan;
        err = m->layout.group == 0 ? stem_phonon_blur(m, point_plan, res) : STEM_OK;
        err = stem_mpi_agree(err, m->world);
    }
    if (!err && !plan->dist)
        err = stem_mpi_agree(point_image_errors(cp, p, m->layout.group == 0 ? res : NULL), m->world);
    double took = stem_phase_add(STEM_PHASE_REDUCTION, t) - t;
    if (cp->job->series->n_points <= 24 || took > 0.1)
        stem_debug("point %d finished from the sums (means, errors, blur) in %.3f s", p, took);
    char where[48] = ""; /* what is not a finished simulation is never published (result_check.h) */
    if (cp->job->series->n_points) snprintf(where, sizeof where, " (series point %d)", p);
    if (!err && !cp->job->keep)
        err = stem_mpi_agree(
            m->layout.group == 0 && res ? stem_result_check(plan, res, m->layout.world_rank == 0, where) : STEM_OK,
            m->world);
    return err;
}

/* The output's loader (stem_output_series): point p finished from the sums. */
static int load_point(void *ctx, int p, stem_result *res) { return stem_campaign_finish_point(ctx, p, res); }

/* [output] save_potential: tilt t's slices of configuration c, built from its model as its
 * units built them (or read back from potential_file), on any rank. */
static int campaign_potential(void *ctx, int t, int c, int s0, int s1, float *V)
{
    campaign *cp = ctx;
    if (cp->potential_tilt != t) {
        stem_potential_source_free(&cp->potential);
        cp->potential_tilt = -1;
        const stem_atoms *model = NULL;
        STEM_TRY(stem_campaign_unit_model(cp, t, &model));
        stem_potential_source_init(&cp->potential, stem_campaign_tilt_plans(cp, t), model, cp->job->potentials);
        cp->potential_tilt = t;
    }
    return stem_potential_source_slices(&cp->potential, 0, c, s0, s1, V);
}

/* [output] save_smatrix: beam b of unit (t, c)'s S-matrix, from its unit file. */
static int campaign_smatrix_beam(void *ctx, int t, int c, int b, float *S)
{
    campaign *cp = ctx;
    size_t beam = cp->smatrix_bytes / (size_t)cp->job->plan->n_beams;
    return stem_checkpoint_load(&cp->ck, t * cp->n_configs + c, (size_t)b * beam, S, beam);
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
        (*plans)[t] = stem_campaign_tilt_plans(cp, t);
        stem_series_tilt_values(s, t, &(*tilt_deg)[2 * t], &(*tilt_deg)[2 * t + 1]);
    }
    stored->n_tilts = s->n_tilts;
    stored->tilt_plans = *plans;
    stored->tilt_deg = *tilt_deg;
    return STEM_OK;
}

/* The finished points' buffer (the first group's ranks write); desc names the series' axes
 * and the loader. */
static int read_back_state(campaign *cp, stem_output_series *desc)
{
    const stem_plan *plan = cp->job->plan;
    const stem_series *s = cp->job->series;
    int writes = cp->job->m->layout.group == 0, err = STEM_OK;
    stem_plan no_4d = *plan; /* streamed 4D: the patterns are in the file already */
    if (cp->streamed) no_4d.opt.save_4d = 0;
    if (writes) err = stem_result_alloc(&no_4d, &cp->out);
    if (writes && !err && !plan->dist) err = stem_result_alloc_errors(&no_4d, &cp->out);
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

/* The one output call: a plain run's finished point, or a checkpointed run's points finished
 * one by one as the writer asks (load_point); with the stored potential and S-matrix. */
int stem_campaign_write_output(campaign *cp)
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
    if (!err) err = read_back_state(cp, &desc);
    err = stem_mpi_agree(err, m->world);
    stem_result *res = writes ? &cp->out : NULL;
    if (!err && !cp->checkpointed) err = stem_campaign_finish_point(cp, 0, res); /* one point, finished now */
    if (!err && !cp->checkpointed && plan->opt.save_smatrix) err = stem_smatrix_store_finish(&cp->store, m);
    double t = stem_wall_time();
    if (!err) {
        err = stem_output_write(m->world, job->target, plan, res, writes, job->texts, cp->checkpointed ? &desc : NULL,
                                &stored, cp->stream);
        cp->stream = NULL; /* finished and freed by the writer, whatever its status */
    }
    stem_phase_add(STEM_PHASE_WRITE, t);
    stem_potential_source_free(&cp->potential);
    stem_atoms_free(&cp->tilted);
    free(stored_plans);
    free(tilt_deg);
    return err;
}
