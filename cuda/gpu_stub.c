/* Built when stemsim is configured without CUDA. */
#include "../src/engine.h"
#include "gpu_engine.h"

int stem_gpu_count(void) { return 0; }

const char *stem_gpu_unavailable_reason(void) { return "stemsim was built without CUDA (STEMSIM_ENABLE_CUDA=OFF)"; }

int stem_gpu_engine_create(const void *plan, stem_engine *engine)
{
    (void)plan;
    (void)engine;
    return STEM_FAIL(STEM_ERR_GPU, "%s", stem_gpu_unavailable_reason());
}
