/* Engine selection: the CPU engine (FFTW) or the GPU engine (cuFFT) behind
 * one table of functions with the same contracts. */
#ifndef STEM_ENGINE_H
#define STEM_ENGINE_H

#include "multislice.h"
#include "prism.h"

typedef struct stem_engine {
    const char *name;
    void *state; /* engine-private (GPU contexts) */
    int (*multislice)(const stem_plan *plan, const stem_complex *trans, const stem_detector *det, stem_result *res);
    int (*prism_smatrix)(const stem_plan *plan, const stem_complex *trans, stem_complex *S_local);
    int (*prism_output)(const stem_plan *plan, const stem_complex *S, const stem_detector *det, stem_result *res);
    void (*release)(struct stem_engine *engine);
} stem_engine;

/* [compute] device: cpu, gpu (an error without a usable GPU), auto. */
int stem_engine_select(const stem_plan *plan, stem_engine *engine);

#endif
