/* The build's description: see build_info.h. CMake passes what only it knows
 * (STEMSIM_BUILD_TYPE, STEMSIM_GPU_BUILD); the libraries are asked at run time. */
#include "build_info.h"

#include <fftw3.h>
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "stem.h"

#ifndef STEMSIM_BUILD_TYPE
#define STEMSIM_BUILD_TYPE "unknown"
#endif
#ifndef STEMSIM_GPU_BUILD
#define STEMSIM_GPU_BUILD "off"
#endif

/* The library's own first line (Open MPI: "Open MPI v4.1.4, package: ..."). */
static void mpi_library(char *out, size_t n)
{
    char text[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int len = 0, major = 0, minor = 0;
    MPI_Get_library_version(text, &len); /* allowed before MPI_Init */
    MPI_Get_version(&major, &minor);
    text[strcspn(text, "\n,")] = 0;
    snprintf(out, n, "%s (MPI %d.%d)", text, major, minor);
}

const char *stem_build_info(void)
{
    static char info[1024];
    if (info[0]) return info;
    char mpi[MPI_MAX_LIBRARY_VERSION_STRING + 32];
    mpi_library(mpi, sizeof mpi);
    unsigned h5major = 0, h5minor = 0, h5release = 0;
    H5get_libversion(&h5major, &h5minor, &h5release);
#ifdef H5_HAVE_PARALLEL
    const char *h5parallel = "parallel";
#else
    const char *h5parallel = "serial";
#endif
    snprintf(info, sizeof info,
             "stemsim %s\n"
             "build: %s, %s %s\n"
             "GPU engine: %s\n"
             "MPI: %s\n"
             "HDF5: %u.%u.%u (%s)\n"
             "FFTW: %s (single precision, threads, MPI)\n",
             STEM_VERSION, STEMSIM_BUILD_TYPE,
#if defined(__clang__)
             "clang", __clang_version__,
#elif defined(__GNUC__)
             "gcc", __VERSION__,
#else
             "cc", "",
#endif
             STEMSIM_GPU_BUILD, mpi, h5major, h5minor, h5release, h5parallel, fftwf_version);
    return info;
}
