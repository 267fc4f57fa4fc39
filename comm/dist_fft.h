/* One 2D FFT shared by the ranks of a communicator (FFTW3-MPI), for plane-wave
 * cells whose wave does not fit one rank. Real space: each rank holds rows
 * [row0, row0 + rows) of the ny x nx grid (x fastest). Fourier space is left
 * transposed (FFTW_MPI_TRANSPOSED_OUT / _IN): each rank holds the kx columns
 * [col0, col0 + cols), each as a line of ny ky values, element (kx, ky) at
 * [(kx - col0) * ny + ky] - so a forward and inverse pair costs one global
 * transpose each way, not two. All calls are collective over the communicator. */
#ifndef STEM_DIST_FFT_H
#define STEM_DIST_FFT_H

#include <mpi.h>
#include <stddef.h>

#include "../src/slabs.h"
#include "../src/stem.h"

typedef struct {
    MPI_Comm comm;
    int nx, ny;
    long rows, row0;         /* real-space slab */
    long cols, col0;         /* Fourier-space slab (transposed) */
    size_t alloc;            /* complex elements a buffer needs (FFTW may need more than either slab) */
    void *forward, *inverse; /* fftwf_plan */
} stem_dist_fft;

/* Plans for in-place transforms (FFTW_ESTIMATE, or FFTW_MEASURE when measure); collective over
 * comm, entered by every rank even when one fails (the caller agrees on the status). */
int stem_dist_fft_create(stem_dist_fft *d, MPI_Comm comm, int nx, int ny, int measure);
stem_complex *stem_dist_fft_alloc(const stem_dist_fft *d, const char *what);
/* In place on buf (a stem_dist_fft_alloc buffer); both unnormalised. */
void stem_dist_fft_forward(const stem_dist_fft *d, stem_complex *buf);
void stem_dist_fft_inverse(const stem_dist_fft *d, stem_complex *buf);
void stem_dist_fft_destroy(stem_dist_fft *d);
/* This process's time in the transforms so far (transposes included) and their count. */
double stem_dist_fft_seconds(long *count);

#endif
