/* Algorithms above the engines: one frozen-phonon configuration through the
 * algorithm the plan names. Multislice is one engine step; PRISM owns its
 * four: the S-matrix of this rank's beams, the gather over the rank group
 * (agreed first, so no rank waits in it alone), the beam-fastest arrangement
 * and the output step. A one-rank group on an engine that can keep the
 * S-matrix in its own memory (the GPU) skips the host round trip. */
#ifndef STEM_ALGORITHM_H
#define STEM_ALGORITHM_H

#include <mpi.h>

#include "engine.h"

/* Collective over group (the ranks sharing this configuration). */
int stem_algorithm_run_config(const stem_engine *engine, const stem_plan *plan, MPI_Comm group, const stem_complex *trans,
                              const stem_detector *det, stem_result *res);

#endif
