/* Chooses and creates the engine for [compute] device. */
#include "engine.h"

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

static int cpu_prism_smatrix(const stem_engine *e, const stem_plan *plan, const stem_complex *trans, stem_complex *S_local)
{
    (void)e;
    return stem_prism_smatrix_local(plan, trans, S_local);
}

/* The output step reads each pixel's beams together: arrange them beam-fastest first. */
static int cpu_prism_output(const stem_engine *e, const stem_plan *plan, const stem_complex *S_by_beam,
                            const stem_detector *det, stem_result *res)
{
    (void)e;
    stem_complex *by_pixel = stem_fft_alloc((size_t)plan->crop_nx * plan->crop_ny * plan->n_beams, "S-matrix (beam fastest)");
    if (!by_pixel) return STEM_ERR_MEMORY;
    stem_prism_arrange(plan, S_by_beam, by_pixel);
    int err = stem_prism_output(plan, by_pixel, det, res);
    stem_fft_free(by_pixel);
    return err;
}

static void cpu_destroy(stem_engine *e) { memset(e, 0, sizeof *e); }

static void cpu_engine(stem_engine *engine)
{
    memset(engine, 0, sizeof *engine);
    engine->name = "cpu";
    engine->describe = cpu_describe;
    engine->multislice = cpu_multislice;
    engine->prism_smatrix = cpu_prism_smatrix;
    engine->prism_output = cpu_prism_output;
    engine->destroy = cpu_destroy;
}

int stem_engine_create(const stem_plan *plan, const stem_gpu_provider *gpu, stem_engine *engine)
{
    int device = plan->opt.device;
    cpu_engine(engine);
    if (device == STEM_DEVICE_CPU) return STEM_OK;
    int gpus = gpu ? gpu->count() : 0;
    if (gpus <= 0) {
        if (device == STEM_DEVICE_GPU)
            return STEM_FAIL(STEM_ERR_GPU, "[compute] device = gpu but %s",
                             gpu ? gpu->unavailable_reason() : "this program has no GPU engine");
        return STEM_OK;
    }
    return gpu->create(plan, engine);
}

void stem_engine_destroy(stem_engine *engine)
{
    if (engine->destroy) engine->destroy(engine);
    memset(engine, 0, sizeof *engine);
}
