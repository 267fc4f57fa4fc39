/* Linked into stemsim when it is configured without CUDA. */
#include "gpu_engine.h"

static int stub_count(void) { return 0; }

static const char *stub_reason(void) { return "stemsim was built without CUDA (STEMSIM_ENABLE_CUDA=OFF)"; }

static void stub_warm_up(int start) { (void)start; }

static int stub_create(const stem_plan *plan, stem_engine *engine)
{
    (void)plan;
    (void)engine;
    return STEM_FAIL(STEM_ERR_GPU, "%s", stub_reason());
}

const stem_gpu_provider *stem_gpu_engine_provider(void)
{
    static const stem_gpu_provider stub = {stub_count, stub_reason, stub_create, stub_warm_up};
    return &stub;
}
