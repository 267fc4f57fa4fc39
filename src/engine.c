/* Chooses the engine for [compute] device. */
#include "engine.h"

#include <string.h>

#include "../cuda/gpu_engine.h"

static void cpu_release(stem_engine *engine) { (void)engine; }

static void cpu_engine(stem_engine *engine)
{
    memset(engine, 0, sizeof *engine);
    engine->name = "cpu";
    engine->multislice = stem_multislice_run;
    engine->prism_smatrix = stem_prism_smatrix_local;
    engine->prism_output = stem_prism_output;
    engine->release = cpu_release;
}

int stem_engine_select(const stem_plan *plan, stem_engine *engine)
{
    int device = plan->opt.device;
    cpu_engine(engine);
    if (device == STEM_DEVICE_CPU) return STEM_OK;
    int gpus = stem_gpu_count();
    if (gpus <= 0) {
        if (device == STEM_DEVICE_GPU)
            return STEM_FAIL(STEM_ERR_GPU, "[compute] device = gpu but %s", stem_gpu_unavailable_reason());
        return STEM_OK;
    }
    return stem_gpu_engine_create(plan, engine);
}
