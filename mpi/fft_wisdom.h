/* [compute] fft_planning = measure on the CPU engine: rank 0 measures every FFT
 * shape the run needs (or reads them from [compute] fft_wisdom), every rank
 * imports the same wisdom, so all ranks run the same FFT algorithms: a measured
 * run is bit-identical across rank counts, and across runs with one wisdom file. */
#ifndef STEM_FFT_WISDOM_H
#define STEM_FFT_WISDOM_H

#include "comm.h"

/* Collective over m->world. path: the wisdom file ("" none): read when it exists,
 * else written (never replaced) with what rank 0 measured. Sets plan->fft_wisdom
 * (hash and origin, for the plan text in the output). Nothing to do when the
 * plan does not measure. */
int stem_fft_wisdom_share(const stem_mpi *m, const char *path, stem_plan *plan);

#endif
