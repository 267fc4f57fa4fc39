/* Algorithms above the engines: one frozen-phonon configuration through the
 * algorithm the plan names. Multislice is one engine step; PRISM owns its
 * steps: the S-matrix, computed beam by beam over the rank group and held by
 * space, each rank (or node, with node-shared memory) keeping every beam over
 * the tile its probes read (smatrix_tiles.h), and the output step on it. A
 * one-rank group on an engine that can keep the S-matrix in its own memory
 * (the GPU) skips the host round trip. A focal spread repeats the probe steps
 * (multislice, or PRISM's output step on the same S-matrix) once per defocus
 * and adds their weighted results. */
#ifndef STEM_ALGORITHM_H
#define STEM_ALGORITHM_H

#include "../comm/comm.h"
#include "smatrix_tiles.h"
#include "../src/coherence.h"
#include "../src/engine.h"

typedef struct {
    const stem_plan *base; /* the plan they were made from */
    int n;                 /* 1: no focal spread */
    stem_plan *plans;
    double weight[STEM_MAX_FOCAL_POINTS];
} stem_focal_set;

/* Host buffers kept from one configuration to the next (PRISM's S-matrix over this rank's
 * tile and its exchange): first-touch page faults once per run, not once per configuration
 * (they halved the gather's speed), and node-shared windows created once. Zero-initialise. */
typedef struct {
    stem_smatrix_tiles tiles;
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
