/* Measured FFT plans of the CPU engine ([compute] fft_planning = auto or measure):
 * rank 0 measures every FFT shape the run needs (or reads them from the wisdom
 * cache or [compute] fft_wisdom), every rank
 * imports the same wisdom, so all ranks run the same FFT algorithms: a measured
 * run is bit-identical across rank counts, and across runs with one wisdom file. */
#ifndef STEM_FFT_WISDOM_H
#define STEM_FFT_WISDOM_H

#include "../comm/comm.h"

/* Collective over m->world. path: the wisdom file ([compute] fft_wisdom, "" none):
 * read when it exists, else written (never replaced) with what rank 0 measured.
 * Without it, the wisdom cache ([compute] fft_cache: "auto", "off" or a directory,
 * io/fft_cache.h): rank 0 reads each shape's wisdom from it or measures and stores
 * it, and every rank plans each shape from that shape's wisdom alone. Sets
 * plan->fft_wisdom (the wisdom's hash, for the plan text in the output). Nothing
 * to do when the plan does not measure. */
int stem_fft_wisdom_share(const stem_mpi *m, const char *path, const char *cache, stem_plan *plan);

#endif
