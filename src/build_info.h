/* What this binary was built with and runs against (version, build type, compiler,
 * GPU engine and CUDA architectures, MPI library, HDF5 and whether it is parallel,
 * FFTW): printed by --version and stored as the output file's "build" attribute. */
#ifndef STEM_BUILD_INFO_H
#define STEM_BUILD_INFO_H

/* One line per item; filled on first use, valid for the whole run. */
const char *stem_build_info(void);

#endif
