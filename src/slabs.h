/* How the distributed FFT (comm/dist_fft.h) splits an nx x ny grid over the ranks of a
 * group: real-space rows and transposed Fourier columns per rank, as FFTW-MPI's
 * default blocks give them. Pure arithmetic, so the plan can size a rank's slab
 * without MPI; comm/dist_fft.c uses the same functions. */
#ifndef STEM_SLABS_H
#define STEM_SLABS_H

/* FFTW-MPI's slabs for this grid on `ranks` ranks (its default blocks: ceil(n / ranks)
 * rows each, the last ranks possibly empty), without creating anything. */
void stem_dist_fft_slabs(int nx, int ny, int ranks, int rank, long *rows, long *row0, long *cols, long *col0);
/* STEM_ERR_CONFIG, naming the most ranks that would do, when a rank of `ranks` would get no rows or
 * no Fourier columns: collectives some ranks would skip (checked by the plan, on every rank). */
int stem_dist_fft_check(int nx, int ny, int ranks);

#endif
