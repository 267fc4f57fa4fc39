/* The GPU engine as the executable sees it: a provider of three functions
 * that src/engine.c calls through pointers, so the core library never links
 * against the GPU library (which uses the core). Built from the .cu files in
 * cuda/ when CUDA is enabled; cuda/gpu_stub.c answers "no GPU" otherwise. */
#ifndef STEM_GPU_ENGINE_H
#define STEM_GPU_ENGINE_H

#include "../src/engine.h"

#ifdef __cplusplus
extern "C" {
#endif

/* This build's GPU engine (or the stub's). */
const stem_gpu_provider *stem_gpu_engine_provider(void);

#ifdef __cplusplus
}
#endif
#endif
