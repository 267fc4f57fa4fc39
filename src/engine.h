/* The engine: CPU (FFTW) or GPU (cuFFT, cuBLAS) behind one object, created
 * once per run (the GPU engine chooses its devices there) and used for every
 * frozen-phonon configuration. The algorithms (mpi/algorithm.h) call its steps. */
#ifndef STEM_ENGINE_H
#define STEM_ENGINE_H

#include <stdio.h>

#include "multislice.h"
#include "potential.h"
#include "prism.h"

#define STEM_NOT_APPLICABLE (-1) /* an optional engine step declined; not an error */

typedef struct stem_engine {
    const char *name;
    void *state;   /* engine-private, lives from create to destroy (the GPU engine: its devices) */
    int host_idle; /* its steps leave the host's cores mostly idle (GPU): the campaign builds the
                      next configuration's transmission functions meanwhile (one more copy of them) */
    /* What the engine needs beyond the plan's host estimate (GPU memory, memory modes): for --dry-run. */
    void (*describe)(const struct stem_engine *e, const stem_plan *plan, FILE *out);
    /* Optional (NULL: the CPU builds them, src/potential.c): one configuration's transmission
     * functions from its displaced atoms, into host memory; STEM_NOT_APPLICABLE when it
     * declines (too little device memory), and the CPU builds them. */
    int (*transmission)(const struct stem_engine *e, const stem_plan *plan, const stem_potential_table *table,
                        const stem_atoms *atoms, stem_complex *trans);
    int (*multislice)(const struct stem_engine *e, const stem_plan *plan, const stem_complex *trans,
                      const stem_detector *det, stem_result *res);
    /* PRISM's plane waves [first, first + count), by beam (stem_prism_smatrix_beams); opening: the
     * configuration's first call on this rank (the GPU uploads its transmission functions then). */
    int (*prism_smatrix)(const struct stem_engine *e, const stem_plan *plan, const stem_complex *trans, int first,
                         int count, int opening, stem_complex *out);
    int uses_fftw;   /* its FFTs are FFTW's (the CPU): measured plans are shared over the ranks */
    int prism_tiles; /* prism_output reads any tile of the box (prism_tiles.h); 0: the whole box only */
    /* One detection plane's S-matrix over a tile holding the windows of the plan's probes, beam fastest */
    int (*prism_output)(const struct stem_engine *e, const stem_plan *plan, const stem_prism_view *S,
                        const stem_detector *det, stem_result *res);
    /* Optional (NULL on the CPU): a whole PRISM configuration of a one-rank group with
     * the S-matrix kept where the engine computes it (the GPU: in device memory, no
     * round trip through the host), and the output step of each of its n points (plans[i]
     * into res[i]: a defocus series shares the S-matrix). Returns STEM_NOT_APPLICABLE when
     * it cannot (too little memory, a thickness series): the algorithm then runs the three steps. */
    int (*prism_resident)(const struct stem_engine *e, const stem_plan *plans, int n, const stem_complex *trans,
                          const stem_detector *det, stem_result *res);
    /* Optional (NULL on the CPU: src/hrtem.c point by point, mpi/algorithm.c): algorithm = hrtem's
     * points of one configuration (plans[0 .. n), consecutive points of one beam tilt sharing
     * its exit wave), each point's detector channels, exit wave and image into res[i].
     * STEM_NOT_APPLICABLE when it cannot (the wave does not fit the GPU): the CPU's runs. */
    int (*hrtem)(const struct stem_engine *e, const stem_plan *plans, int n, const stem_complex *trans,
                 const stem_detector *det, stem_result *res);
    /* Optional (NULL: nothing to do): page-lock a host buffer that the engine's steps copy to
     * and from (the GPU: its transfers then run at the bus's rate, not through the driver's
     * staging), and release it before the buffer is freed. A buffer the engine cannot or will
     * not lock stays as it was: its copies are only slower. */
    void (*host_pin)(const struct stem_engine *e, void *p, size_t bytes);
    void (*host_unpin)(const struct stem_engine *e, void *p);
    void (*destroy)(struct stem_engine *e);
} stem_engine;

/* The GPU engine, handed in by the executable (cuda/gpu_engine.h): the core
 * calls it only through these pointers, never links against it. */
typedef struct {
    int (*count)(void); /* usable GPUs visible to this process */
    const char *(*unavailable_reason)(void);
    int (*create)(const stem_plan *plan, stem_engine *engine);
    /* start (1): create GPU 0's CUDA context on a thread of its own while the model is
     * read and the run planned (only where GPU 0 will be this rank's first GPU); wait (0)
     * for it. count and create wait for it themselves. */
    void (*warm_up)(int start);
} stem_gpu_provider;

/* [compute] device = auto made cpu or gpu (a GPU engine that sees a GPU) before the plan's
 * memory estimate, which differs between the two (hrtem's stays auto); the engine created
 * later is the one named. */
void stem_engine_resolve_device(stem_plan *plan, const stem_gpu_provider *gpu);
/* [compute] device: cpu, gpu (an error without a usable GPU), auto. Once per
 * run. gpu may be NULL (no GPU engine in this program). */
int stem_engine_create(const stem_plan *plan, const stem_gpu_provider *gpu, stem_engine *engine);
/* Safe on a zeroed or already destroyed engine. */
void stem_engine_destroy(stem_engine *engine);

#endif
