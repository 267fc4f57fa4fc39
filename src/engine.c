/* Chooses and creates the engine for [compute] device. */
#include "engine.h"

#include <stdlib.h>
#include <string.h>

#include "fft.h"

static void cpu_describe(const stem_engine *e, const stem_plan *plan, FILE *out)
{
    (void)e;
    fprintf(out, "engine: cpu (FFTW), %d worker thread(s) per rank, batch %d\n", plan->threads, plan->batch_size);
}

static int cpu_multislice(const stem_engine *e, const stem_plan *plan, const stem_complex *trans,
                          const stem_detector *det, stem_result *res)
{
    (void)e;
    return stem_multislice_run(plan, trans, det, res);
}

static int cpu_prism_smatrix(const stem_engine *e, const stem_plan *plan, const stem_complex *trans, int first,
                             int count, int opening, stem_complex *out)
{
    (void)e, (void)opening;
    return stem_prism_smatrix_beams(plan, trans, first, count, out);
}

static int cpu_prism_output(const stem_engine *e, const stem_plan *plan, const stem_prism_view *S,
                            const stem_detector *det, stem_result *res)
{
    (void)e;
    return stem_prism_output(plan, S, det, res);
}

static int cpu_engine(stem_engine *engine)
{
    memset(engine, 0, sizeof *engine);
    engine->name = "cpu";
    engine->uses_fftw = 1;
    engine->prism_tiles = 1;
    engine->describe = cpu_describe;
    engine->multislice = cpu_multislice;
    engine->prism_smatrix = cpu_prism_smatrix;
    engine->prism_output = cpu_prism_output;
    return STEM_OK;
}

void stem_engine_resolve_device(stem_plan *plan, const stem_gpu_provider *gpu)
{
    /* hrtem's wave may yet be distributed over the ranks (the plan decides from its estimate),
     * which only the CPU engine does: it stays auto, for stem_engine_create */
    if (plan->opt.device != STEM_DEVICE_AUTO || plan->algorithm == STEM_ALG_HRTEM) return;
    plan->opt.device = gpu && gpu->count() > 0 ? STEM_DEVICE_GPU : STEM_DEVICE_CPU;
}

int stem_engine_create(const stem_plan *plan, const stem_gpu_provider *gpu, stem_engine *engine)
{
    int device = plan->opt.device;
    memset(engine, 0, sizeof *engine);
    if (device == STEM_DEVICE_CPU) return cpu_engine(engine);
    if (plan->dist) { /* the wave in slabs over the group's ranks: FFTW-MPI (mpi/dist_hrtem.c) */
        if (device == STEM_DEVICE_GPU && plan->layout.world_rank == 0)
            stem_warn("hrtem on a distributed FFT runs on the CPU engine: its wave is cut in slabs over the ranks "
                      "with FFTW-MPI ([compute] device = gpu applies to waves that fit one GPU)");
        return cpu_engine(engine);
    }
    int gpus = gpu ? gpu->count() : 0;
    if (gpus <= 0) {
        if (device == STEM_DEVICE_GPU)
            return STEM_FAIL(STEM_ERR_GPU, "[compute] device = gpu but %s",
                             gpu ? gpu->unavailable_reason() : "this program has no GPU engine");
        return cpu_engine(engine);
    }
    return gpu->create(plan, engine);
}

void stem_engine_destroy(stem_engine *engine)
{
    if (engine->destroy) engine->destroy(engine);
    memset(engine, 0, sizeof *engine);
}
