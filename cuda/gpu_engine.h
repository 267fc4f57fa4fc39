/* GPU engine entry points (cuFFT). Built from the .cu files in cuda/ when CUDA is enabled;
 * cuda/gpu_stub.c answers "no GPU" otherwise. */
#ifndef STEM_GPU_ENGINE_H
#define STEM_GPU_ENGINE_H

#ifdef __cplusplus
extern "C" {
#endif

struct stem_engine;
typedef struct stem_engine stem_engine_fwd;

/* Number of usable GPUs visible to this process (0 without CUDA). */
int stem_gpu_count(void);
/* Why no GPU can be used (for the error message). */
const char *stem_gpu_unavailable_reason(void);
/* Fill the engine table with the GPU implementation for this plan. */
int stem_gpu_engine_create(const void *plan, struct stem_engine *engine);

#ifdef __cplusplus
}
#endif
#endif
