/* Algorithms above the engines: one frozen-phonon configuration through the
 * algorithm the plan names. Multislice is one engine step; PRISM owns its
 * three: the S-matrix of this rank's beams, the gather over the rank group
 * (agreed first, so no rank waits in it alone) and the output step (which
 * arranges the S-matrix as it reads it). A one-rank group on an engine that
 * can keep the S-matrix in its own memory (the GPU) skips the host round trip. */
#ifndef STEM_ALGORITHM_H
#define STEM_ALGORITHM_H

#include <mpi.h>

#include "engine.h"

/* Host buffers kept from one configuration to the next (PRISM's gathered S-matrix
 * and this rank's beams of it): first-touch page faults once per run, not once
 * per configuration (they halved the gather's speed). Zero-initialise. */
typedef struct {
    stem_complex *S, *local; /* local: only in groups of several ranks */
} stem_algorithm_buffers;
void stem_algorithm_buffers_free(stem_algorithm_buffers *b);

/* Collective over group (the ranks sharing this configuration). */
int stem_algorithm_run_config(const stem_engine *engine, const stem_plan *plan, MPI_Comm group, const stem_complex *trans,
                              const stem_detector *det, stem_result *res, stem_algorithm_buffers *buffers);

#endif
