/* Algorithms above the engines: one frozen-phonon configuration through the
 * algorithm the plan names. Multislice is one engine step; PRISM owns its
 * steps: the S-matrix of this rank's beams, the exchange over the rank group
 * (agreed first, so no rank waits in it alone), the beam-fastest arrangement
 * where the engine reads it so (the CPU), and the output step. With node-shared
 * memory (mpi/node_shared.h) the ranks of a node compute their beams in place
 * into one S-matrix, only nodes exchange, and each rank arranges a share. A
 * one-rank group on an engine that can keep the S-matrix in its own memory
 * (the GPU) skips the host round trip. A focal spread repeats the probe steps
 * (multislice, or PRISM's output step on the same S-matrix) once per defocus
 * and adds their weighted results. */
#ifndef STEM_ALGORITHM_H
#define STEM_ALGORITHM_H

#include "comm.h"
#include "../src/coherence.h"
#include "../src/engine.h"

typedef struct {
    const stem_plan *base; /* the plan they were made from */
    int n;                 /* 1: no focal spread */
    stem_plan *plans;
    double weight[STEM_MAX_FOCAL_POINTS];
} stem_focal_set;

/* PRISM's S-matrix stored or read back ([output] save_smatrix, [simulation] smatrix_file):
 * load fills this rank's beams [b0, b1) of configuration c instead of computing them; store
 * receives the whole S-matrix by beam ([beam][crop_ny][crop_nx]) on the group's leader.
 * Either may be NULL. */
typedef struct {
    int (*load)(void *ctx, const stem_plan *plan, int c, int b0, int b1, stem_complex *S);
    int (*store)(void *ctx, const stem_plan *plan, int c, const stem_complex *S);
    void *ctx;
} stem_smatrix_io;

/* Host buffers kept from one configuration to the next (PRISM's whole S-matrix,
 * this rank's beams of it, the beam-fastest copy): first-touch page faults once
 * per run, not once per configuration (they halved the gather's speed), and
 * node-shared windows created once. Zero-initialise. */
typedef struct {
    stem_complex *S, *local, *by_pixel;       /* local: only in groups of several ranks without node sharing */
    stem_shared_buffer S_node, by_pixel_node; /* node-shared: S and by_pixel point into them */
    stem_shared_buffer queue_node;            /* node-shared: the counter the node's ranks take beams from */
    /* focal spread (coherence.h): for each plan of a series' points (slot), one plan per
     * defocus (stable pointers, so an engine's kept state follows them) and their weights;
     * one defocus's results (one per detection plane) */
    stem_focal_set *focal;
    int n_focal_sets;
    stem_result *focal_part;
    int n_focal_parts;
    /* set by the caller: the S-matrix's storage (NULL: none) and the configuration being run */
    const stem_smatrix_io *smatrix_io;
    int config;
} stem_algorithm_buffers;
void stem_algorithm_buffers_free(stem_algorithm_buffers *b);

/* Collective over m->group (the ranks sharing this configuration). */
int stem_algorithm_run_config(const stem_engine *engine, const stem_plan *plan, const stem_mpi *m,
                              const stem_complex *trans, const stem_detector *det, stem_result *res,
                              stem_algorithm_buffers *buffers);

/* n points of a series sharing this configuration's transmission functions (they differ
 * only in defocus): res[i * P + k] gets plans[i]'s result at detection plane k (P =
 * stem_plan_n_planes, the same for every plan); PRISM computes the S-matrix once. */
int stem_algorithm_run_points(const stem_engine *engine, const stem_plan *plans, int n, const stem_mpi *m,
                              const stem_complex *trans, const stem_detector *det, stem_result *res,
                              stem_algorithm_buffers *buffers);

#endif
