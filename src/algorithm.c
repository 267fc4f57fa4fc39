/* Multislice and PRISM as algorithms over an engine (algorithm.h). */
#include "algorithm.h"

#include "../mpi/comm.h"
#include "phases.h"

static int prism_run_config(const stem_engine *engine, const stem_plan *plan, MPI_Comm group, const stem_complex *trans,
                            const stem_detector *det, stem_result *res)
{
    size_t box = (size_t)plan->crop_nx * plan->crop_ny;
    size_t local_beams = (size_t)(plan->beam_end - plan->beam_begin);
    stem_complex *local = stem_fft_alloc(box * local_beams, "local S-matrix");
    stem_complex *by_beam = stem_fft_alloc(box * plan->n_beams, "S-matrix");
    int err = local && by_beam ? STEM_OK : STEM_ERR_MEMORY;
    double t = stem_wall_time();
    if (!err) err = engine->prism_smatrix(engine, plan, trans, local);
    t = stem_phase_add(STEM_PHASE_SMATRIX, t);
    err = stem_mpi_agree(err, group); /* before the gather: all ranks have their beams */
    t = stem_phase_add(STEM_PHASE_WAIT, t);
    if (!err) err = stem_mpi_gather_smatrix(plan, local, by_beam, group);
    t = stem_phase_add(STEM_PHASE_GATHER, t);
    stem_fft_free(local);
    if (!err) err = engine->prism_output(engine, plan, by_beam, det, res); /* arranges, then the probes */
    stem_phase_add(STEM_PHASE_PROBES, t);
    stem_fft_free(by_beam);
    return err;
}

int stem_algorithm_run_config(const stem_engine *engine, const stem_plan *plan, MPI_Comm group, const stem_complex *trans,
                              const stem_detector *det, stem_result *res)
{
    if (plan->algorithm == STEM_ALG_PRISM && plan->layout.group_size == 1 && engine->prism_resident) {
        /* nothing to gather: the engine may keep the S-matrix where it made it */
        int err = engine->prism_resident(engine, plan, trans, det, res);
        if (err != STEM_NOT_APPLICABLE) return err;
    }
    if (plan->algorithm == STEM_ALG_PRISM) return prism_run_config(engine, plan, group, trans, det, res);
    double t = stem_wall_time();
    int err = engine->multislice(engine, plan, trans, det, res);
    stem_phase_add(STEM_PHASE_PROBES, t);
    return err;
}
