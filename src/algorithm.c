/* Multislice and PRISM as algorithms over an engine (algorithm.h). */
#include "algorithm.h"

#include "../mpi/comm.h"
#include "phases.h"

void stem_algorithm_buffers_free(stem_algorithm_buffers *b)
{
    stem_fft_free(b->S);
    stem_fft_free(b->local);
    b->S = b->local = NULL;
}

static int prism_run_config(const stem_engine *engine, const stem_plan *plan, MPI_Comm group, const stem_complex *trans,
                            const stem_detector *det, stem_result *res, stem_algorithm_buffers *buf)
{
    size_t box = (size_t)plan->crop_nx * plan->crop_ny;
    size_t local_beams = (size_t)(plan->beam_end - plan->beam_begin);
    int shared = plan->layout.group_size > 1;
    if (!buf->S) buf->S = stem_fft_alloc(box * plan->n_beams, "S-matrix");
    if (shared && !buf->local) buf->local = stem_fft_alloc(box * local_beams, "local S-matrix");
    /* one rank computes every beam straight into the whole S-matrix */
    stem_complex *local = shared ? buf->local : buf->S;
    int err = buf->S && local ? STEM_OK : STEM_ERR_MEMORY;
    double t = stem_wall_time();
    if (!err) err = engine->prism_smatrix(engine, plan, trans, local);
    t = stem_phase_add(STEM_PHASE_SMATRIX, t);
    err = stem_mpi_agree(err, group); /* before the gather: all ranks have their beams */
    t = stem_phase_add(STEM_PHASE_WAIT, t);
    if (!err && shared) err = stem_mpi_gather_smatrix(plan, local, buf->S, group);
    t = stem_phase_add(STEM_PHASE_GATHER, t);
    if (!err) err = engine->prism_output(engine, plan, buf->S, det, res); /* arranges, then the probes */
    stem_phase_add(STEM_PHASE_PROBES, t);
    return err;
}

int stem_algorithm_run_config(const stem_engine *engine, const stem_plan *plan, MPI_Comm group, const stem_complex *trans,
                              const stem_detector *det, stem_result *res, stem_algorithm_buffers *buffers)
{
    if (plan->algorithm == STEM_ALG_PRISM && plan->layout.group_size == 1 && engine->prism_resident) {
        /* nothing to gather: the engine may keep the S-matrix where it made it */
        int err = engine->prism_resident(engine, plan, trans, det, res);
        if (err != STEM_NOT_APPLICABLE) return err;
    }
    if (plan->algorithm == STEM_ALG_PRISM) return prism_run_config(engine, plan, group, trans, det, res, buffers);
    double t = stem_wall_time();
    int err = engine->multislice(engine, plan, trans, det, res);
    stem_phase_add(STEM_PHASE_PROBES, t);
    return err;
}
