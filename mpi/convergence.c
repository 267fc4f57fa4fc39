/* --convergence (convergence.h). */
#include "convergence.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The first of at most STEM_CONVERGENCE_PROBES positions around the middle of n. */
static int window_start(int n) { return n > STEM_CONVERGENCE_PROBES ? (n - STEM_CONVERGENCE_PROBES) / 2 : 0; }

int stem_convergence_overrides(const stem_plan *plan, const stem_config *cfg, int refined,
                               char sets[STEM_CONVERGENCE_MAX_SETS][STEM_CONVERGENCE_SET_LEN])
{
    if (stem_plan_single_wave(plan) || plan->positions || plan->dist)
        return STEM_FAIL(STEM_ERR_CONFIG, "--convergence reruns a window of a STEM scan grid: not with %s",
                         plan->positions  ? "[scan] positions"
                             : plan->dist ? "a distributed FFT"
                                          : stem_algorithm_name(plan->algorithm)),
               -1;
    if (plan->opt.potential_file[0] || plan->opt.smatrix_file[0])
        return STEM_FAIL(STEM_ERR_CONFIG,
                         "--convergence changes the grid and slices: not with a stored potential or "
                         "S-matrix"),
               -1;
    int n = 0, nx = plan->scan_nx < STEM_CONVERGENCE_PROBES ? plan->scan_nx : STEM_CONVERGENCE_PROBES;
    int ny = plan->scan_ny < STEM_CONVERGENCE_PROBES ? plan->scan_ny : STEM_CONVERGENCE_PROBES;
    double x0 = plan->scan_x0 + window_start(plan->scan_nx) * plan->scan_step;
    double y0 = plan->scan_y0 + window_start(plan->scan_ny) * plan->scan_step;
    /* end: half a step past the last probe (at most the cell's edge), so rounding keeps exactly nx x ny */
    snprintf(sets[n++], STEM_CONVERGENCE_SET_LEN, "scan.units=angstrom");
    snprintf(sets[n++], STEM_CONVERGENCE_SET_LEN, "scan.x_start=%.17g", x0);
    snprintf(sets[n++], STEM_CONVERGENCE_SET_LEN, "scan.x_end=%.17g",
             fmin(x0 + (nx - 0.5) * plan->scan_step, plan->cell[0]));
    snprintf(sets[n++], STEM_CONVERGENCE_SET_LEN, "scan.y_start=%.17g", y0);
    snprintf(sets[n++], STEM_CONVERGENCE_SET_LEN, "scan.y_end=%.17g",
             fmin(y0 + (ny - 0.5) * plan->scan_step, plan->cell[1]));
    if (!refined) return n;
    if (cfg->grid_x > 0) snprintf(sets[n++], STEM_CONVERGENCE_SET_LEN, "simulation.grid_x=%d", 2 * cfg->grid_x);
    if (cfg->grid_y > 0) snprintf(sets[n++], STEM_CONVERGENCE_SET_LEN, "simulation.grid_y=%d", 2 * cfg->grid_y);
    snprintf(sets[n++], STEM_CONVERGENCE_SET_LEN, "simulation.pixel_size=%.17g", cfg->pixel_size / 2);
    snprintf(sets[n++], STEM_CONVERGENCE_SET_LEN, "simulation.slice_thickness=%.17g", cfg->slice_thickness / 2);
    return n;
}

int stem_convergence_means(const stem_mpi *m, const stem_config *cfg, const stem_plan *plan, const stem_engine *engine,
                           const stem_atoms *atoms, const stem_atom_potential *potentials, double *means)
{
    stem_result res = {0};
    stem_series plain = {0}; /* one point: the campaign leaves its finished result in res */
    stem_campaign_job job = {m, cfg, &plain, plan, engine, atoms, potentials, NULL, NULL, 0, &res};
    int err = stem_campaign_run(&job);
    int ni = plan->n_images;
    double *local = calloc((size_t)ni + 1, sizeof *local);
    if (!err) err = stem_mpi_agree(local ? STEM_OK : STEM_FAIL(STEM_ERR_MEMORY, "out of memory"), m->world);
    /* every group holds the same averaged result: group 0's probes tile the scan */
    if (!err && m->layout.group == 0)
        for (long p = 0; p < res.n_probes; p++)
            for (int i = 0; i < ni; i++) local[i] += res.images[p * ni + i];
    if (!err && MPI_Allreduce(local, means, ni, MPI_DOUBLE, MPI_SUM, m->world) != MPI_SUCCESS)
        err = STEM_FAIL(STEM_ERR_MPI, "--convergence: MPI_Allreduce of the detector means failed");
    for (int i = 0; !err && i < ni; i++) means[i] /= (double)plan->n_probes;
    free(local);
    stem_result_free(&res);
    return err;
}

void stem_convergence_report(FILE *out, const stem_plan *base, const stem_plan *fine, const double *m_base,
                             const double *m_fine)
{
    fprintf(out, "convergence over %d x %d probes from (%.3f, %.3f) Angstrom, %d configuration(s):\n", base->scan_nx,
            base->scan_ny, base->scan_x0, base->scan_y0, base->n_configs);
    fprintf(out, "  as configured: pixel %.4g Angstrom (band limit %.0f mrad), %d slices of %.4g Angstrom\n",
            fmax(base->dx, base->dy), base->max_angle_mrad, base->n_slices, base->dz);
    fprintf(out, "  refined:       pixel %.4g Angstrom (band limit %.0f mrad), %d slices of %.4g Angstrom\n",
            fmax(fine->dx, fine->dy), fine->max_angle_mrad, fine->n_slices, fine->dz);
    for (int i = 0; i < base->n_images; i++) {
        const stem_image_range *r = &base->images[i];
        double change = m_fine[i] != 0 ? (m_base[i] - m_fine[i]) / fabs(m_fine[i]) : 0;
        char range[64];
        if (r->outer_mrad >= 1e8)
            snprintf(range, sizeof range, "%g-max mrad", r->inner_mrad);
        else
            snprintf(range, sizeof range, "%g-%g mrad", r->inner_mrad, r->outer_mrad);
        fprintf(out, "  %s %s: %.6g as configured, %.6g refined: %+.2f%% (%s)\n", r->name, range, m_base[i], m_fine[i],
                100 * change, fabs(change) <= 0.01 ? "converged to 1%" : "not converged to 1%: use the finer sampling");
    }
}
