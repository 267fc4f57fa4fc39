/* The GPU engine's table: chooses this rank's GPUs, prints the memory
 * estimate and the memory mode of each step, refuses plans that cannot fit
 * even when streaming, and hands out the GPU implementations. The per-step
 * functions recompute the same (deterministic) decisions quietly. */
#include <string.h>

#include "gpu_internal.cuh"

static void gpu_release(stem_engine *engine) { engine->state = NULL; }

extern "C" int stem_gpu_engine_create(const void *plan_, stem_engine *engine)
{
    const stem_plan *plan = (const stem_plan *)plan_;
    gpu_devices d;
    STEM_TRY(gpu_devices_select(plan, &d));
    char ids[256] = "";
    for (int i = 0, len = 0; i < d.n_gpus && len < (int)sizeof ids - 8; i++)
        len += snprintf(ids + len, sizeof ids - len, "%s%d", i ? "," : "", d.ids[i]);
    stem_info("GPU engine: %d x %s (%d SMs, %.1f of %.1f GiB free), GPU(s) %s on this rank, %d stream(s) per GPU%s",
              d.n_gpus, d.name, d.sm_count, d.free_bytes / GPU_GIB, d.total_bytes / GPU_GIB, ids, d.streams,
              d.sharing > 1 ? " (GPU shared with other ranks of the node)" : "");
    if (plan->algorithm == STEM_ALG_PRISM) {
        gpu_prop_plan pp;
        gpu_out_plan op;
        STEM_TRY(gpu_prop_plan_build(plan, &d, 1, 1, &pp));
        STEM_TRY(gpu_out_plan_build(plan, &d, 1, &op));
        gpu_out_plan_free(&op);
    } else {
        gpu_prop_plan pp;
        STEM_TRY(gpu_prop_plan_build(plan, &d, 0, 1, &pp));
    }
    memset(engine, 0, sizeof *engine);
    engine->name = "gpu";
    engine->state = NULL; /* the step functions receive only the plan: they keep no state between calls */
    engine->multislice = gpu_multislice_run;
    engine->prism_smatrix = gpu_prism_smatrix;
    engine->prism_output = gpu_prism_output;
    engine->release = gpu_release;
    return STEM_OK;
}
