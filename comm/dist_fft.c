/* FFTW3-MPI slab FFTs (dist_fft.h). */
#include "dist_fft.h"

#include <fftw3-mpi.h>
#include <string.h>

int stem_dist_fft_create(stem_dist_fft *d, MPI_Comm comm, int nx, int ny, int measure)
{
    static int initialised;
    memset(d, 0, sizeof *d);
    if (!initialised) {
        fftwf_mpi_init();
        initialised = 1;
    }
    d->comm = comm;
    d->nx = nx;
    d->ny = ny;
    ptrdiff_t n0, s0, n1, s1;
    ptrdiff_t alloc = fftwf_mpi_local_size_2d_transposed(ny, nx, comm, &n0, &s0, &n1, &s1);
    int size, rank;
    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(comm, &rank);
    stem_dist_fft_slabs(nx, ny, size, rank, &d->rows, &d->row0, &d->cols, &d->col0);
    d->alloc = (size_t)(alloc > 0 ? alloc : 1);
    fftwf_complex *buf = fftwf_alloc_complex(d->alloc);
    /* planning is collective over comm (the same flags on every rank): every rank plans when
     * every rank has its buffer, whatever else it found, and reports after */
    int have = buf != NULL, all = have;
    if (MPI_Allreduce(MPI_IN_PLACE, &all, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS) all = -1;
    unsigned flags = measure ? FFTW_MEASURE : FFTW_ESTIMATE;
    if (all == 1) {
        d->forward = fftwf_mpi_plan_dft_2d(ny, nx, buf, buf, comm, FFTW_FORWARD, flags | FFTW_MPI_TRANSPOSED_OUT);
        d->inverse = fftwf_mpi_plan_dft_2d(ny, nx, buf, buf, comm, FFTW_BACKWARD, flags | FFTW_MPI_TRANSPOSED_IN);
    }
    fftwf_free(buf);
    int err = STEM_OK;
    if (all < 0)
        err = STEM_FAIL(STEM_ERR_MPI, "MPI_Allreduce before planning the distributed FFT failed");
    else if (!have)
        err = STEM_FAIL(STEM_ERR_MEMORY, "out of memory for a %d x %d distributed FFT buffer", nx, ny);
    else if (!all)
        err = STEM_ERR_MEMORY; /* another rank's, reported there */
    else if (!d->forward || !d->inverse)
        err = STEM_FAIL(STEM_ERR_INTERNAL, "FFTW-MPI could not plan a %d x %d transform", nx, ny);
    else if (n0 != d->rows || s0 != d->row0 || n1 != d->cols || s1 != d->col0)
        err = STEM_FAIL(STEM_ERR_INTERNAL,
                        "FFTW-MPI's slabs (rows %td from %td, columns %td from %td) are not the "
                        "plan's (%ld from %ld, %ld from %ld)",
                        n0, s0, n1, s1, d->rows, d->row0, d->cols, d->col0);
    if (err) stem_dist_fft_destroy(d);
    return err;
}

stem_complex *stem_dist_fft_alloc(const stem_dist_fft *d, const char *what)
{
    stem_complex *p = (stem_complex *)fftwf_alloc_complex(d->alloc);
    if (!p)
        STEM_FAIL(STEM_ERR_MEMORY, "out of memory for %s (%zu bytes)", what, d->alloc * sizeof(stem_complex));
    else
        memset(p, 0, d->alloc * sizeof(stem_complex));
    return p;
}

static double seconds; /* in the transforms, their transposes included (one thread per rank) */
static long transforms;

void stem_dist_fft_forward(const stem_dist_fft *d, stem_complex *buf)
{
    double t = stem_wall_time();
    fftwf_mpi_execute_dft((fftwf_plan)d->forward, (fftwf_complex *)buf, (fftwf_complex *)buf);
    seconds += stem_wall_time() - t;
    transforms++;
}

void stem_dist_fft_inverse(const stem_dist_fft *d, stem_complex *buf)
{
    double t = stem_wall_time();
    fftwf_mpi_execute_dft((fftwf_plan)d->inverse, (fftwf_complex *)buf, (fftwf_complex *)buf);
    seconds += stem_wall_time() - t;
    transforms++;
}

double stem_dist_fft_seconds(long *count)
{
    if (count) *count = transforms;
    return seconds;
}

void stem_dist_fft_destroy(stem_dist_fft *d)
{
    if (d->forward) fftwf_destroy_plan((fftwf_plan)d->forward);
    if (d->inverse) fftwf_destroy_plan((fftwf_plan)d->inverse);
    d->forward = d->inverse = NULL;
}
