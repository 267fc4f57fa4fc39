/* The distributed FFT's slabs as arithmetic (slabs.h): no MPI, no FFTW. */
#include "slabs.h"

#include "stem.h"

void stem_dist_fft_slabs(int nx, int ny, int ranks, int rank, long *rows, long *row0, long *cols, long *col0)
{
    long by = (ny + ranks - 1) / ranks, bx = (nx + ranks - 1) / ranks;
    *row0 = by * rank < ny ? by * rank : ny;
    *rows = ny - *row0 < by ? ny - *row0 : by;
    *col0 = bx * rank < nx ? bx * rank : nx;
    *cols = nx - *col0 < bx ? nx - *col0 : bx;
}

/* Does every one of `ranks` ranks get rows and Fourier columns of an nx x ny grid? */
static int every_rank_has_rows(int nx, int ny, int ranks)
{
    long rows, row0, cols, col0;
    stem_dist_fft_slabs(nx, ny, ranks, ranks - 1, &rows, &row0, &cols, &col0); /* the last rank's are the fewest */
    return rows > 0 && cols > 0;
}

int stem_dist_fft_check(int nx, int ny, int ranks)
{
    if (every_rank_has_rows(nx, ny, ranks)) return STEM_OK;
    int most = ranks - 1;
    while (most > 1 && !every_rank_has_rows(nx, ny, most)) most--;
    long by = (ny + ranks - 1) / ranks, bx = (nx + ranks - 1) / ranks;
    return STEM_FAIL(STEM_ERR_CONFIG,
                     "[compute] distributed_fft: the %d x %d grid cannot be shared by the %d ranks of a "
                     "group: FFTW-MPI gives each rank %ld of its %d rows and %ld of its %d Fourier columns, which "
                     "leaves the last ranks none; use at most %d rank%s per group (more [compute] fp_groups, or fewer "
                     "ranks), a finer grid ([simulation] pixel_size), or distributed_fft = off",
                     nx, ny, ranks, by, ny, bx, nx, most, most == 1 ? "" : "s");
}
