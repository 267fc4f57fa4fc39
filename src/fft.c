/* FFTW backend of the FFT interface. */
#include "fft.h"

#include <fftw3.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* FFTW's planner is not thread safe; execution of existing plans is. */
static pthread_mutex_t stem_fft_planner_lock = PTHREAD_MUTEX_INITIALIZER;
static int wisdom_imported; /* measured plans must come from the shared wisdom */

/* Per-shape wisdom (stem_fft_wisdom_use): each measured plan is made from its own
 * shape's wisdom alone, and the process's wisdom is empty otherwise, so a plan never
 * depends on which other shapes a run needs, nor an estimated plan on any wisdom. */
#define STEM_FFT_SHAPES 64 /* a run needs at most 5 */
static struct {
    int nx, ny, batch;
    char *text;
} shape_wisdom[STEM_FFT_SHAPES];
static int n_shape_wisdom;

stem_complex *stem_fft_alloc(size_t count, const char *what)
{
    stem_complex *p = fftwf_malloc((count ? count : 1) * sizeof(stem_complex));
    if (!p) STEM_FAIL(STEM_ERR_MEMORY, "cannot allocate %.1f MiB for %s", count * 8.0 / 1048576.0, what);
    return p;
}

void stem_fft_free(void *p) { fftwf_free(p); }

static const char *find_shape_wisdom(int nx, int ny, int batch)
{
    for (int i = 0; i < n_shape_wisdom; i++)
        if (shape_wisdom[i].nx == nx && shape_wisdom[i].ny == ny && shape_wisdom[i].batch == batch)
            return shape_wisdom[i].text;
    return NULL;
}

/* wisdom_only: a measured plan must come from the imported wisdom (see stem_fft_wisdom_import);
 * measuring: stem_fft_measure's, which times what the wisdom lacks. */
static int create_plans(stem_fft *fft, int nx, int ny, int batch, stem_complex *buf, int measure, int wisdom_only,
                        int measuring)
{
    int n[2] = {ny, nx};
    /* FFTW_MEASURE chooses algorithms by timing them, so two runs or two ranks
     * can pick different ones and round differently (HAADF moved by 2e-6 between
     * runs): measured plans come from one wisdom, rank 0's, shared by the ranks and
     * kept per shape in the wisdom cache (mpi/fft_wisdom.c), so that runs sharing it
     * are bit-identical. */
    fftwf_complex *b = (fftwf_complex *)buf;
    fft->nx = nx;
    fft->ny = ny;
    fft->batch = batch;
    pthread_mutex_lock(&stem_fft_planner_lock);
    const char *own = measure ? find_shape_wisdom(nx, ny, batch) : NULL;
    /* measured plans only from a wisdom the ranks share (or stem_fft_measure): a shape no
     * wisdom was shared for (CPU FFTs of a GPU run, the tests' own) is estimated */
    if (measure && !own && !wisdom_only && !measuring) measure = 0;
    unsigned flags = measure ? FFTW_MEASURE : FFTW_ESTIMATE;
    if (own) {
        fftwf_forget_wisdom();
        fftwf_import_wisdom_from_string(own); /* checked when it was registered */
        wisdom_only = 1;
    }
    unsigned first = measure && wisdom_only ? flags | FFTW_WISDOM_ONLY : flags;
    fft->forward = fftwf_plan_many_dft(2, n, batch, b, NULL, 1, nx * ny, b, NULL, 1, nx * ny, FFTW_FORWARD, first);
    fft->inverse = fftwf_plan_many_dft(2, n, batch, b, NULL, 1, nx * ny, b, NULL, 1, nx * ny, FFTW_BACKWARD, first);
    if (first != flags && (!fft->forward || !fft->inverse)) { /* a shape the shared wisdom lacks */
        stem_warn("FFTW wisdom has no plan for %d transforms of %d x %d: measured on this rank (results may "
                  "differ from other ranks at the 1e-7 level)",
                  batch, nx, ny);
        if (!fft->forward)
            fft->forward =
                fftwf_plan_many_dft(2, n, batch, b, NULL, 1, nx * ny, b, NULL, 1, nx * ny, FFTW_FORWARD, flags);
        if (!fft->inverse)
            fft->inverse =
                fftwf_plan_many_dft(2, n, batch, b, NULL, 1, nx * ny, b, NULL, 1, nx * ny, FFTW_BACKWARD, flags);
    }
    if (own) fftwf_forget_wisdom();
    pthread_mutex_unlock(&stem_fft_planner_lock);
    if (!fft->forward || !fft->inverse) {
        stem_fft_destroy(fft);
        return STEM_FAIL(STEM_ERR_INTERNAL, "FFTW could not plan %d transforms of %d x %d", batch, nx, ny);
    }
    return STEM_OK;
}

void stem_fft_forward(const stem_fft *fft, stem_complex *buf)
{
    fftwf_execute_dft(fft->forward, (fftwf_complex *)buf, (fftwf_complex *)buf);
}

void stem_fft_inverse(const stem_fft *fft, stem_complex *buf)
{
    fftwf_execute_dft(fft->inverse, (fftwf_complex *)buf, (fftwf_complex *)buf);
}

void stem_fft_destroy(stem_fft *fft)
{
    pthread_mutex_lock(&stem_fft_planner_lock);
    if (fft->forward) fftwf_destroy_plan(fft->forward);
    if (fft->inverse) fftwf_destroy_plan(fft->inverse);
    pthread_mutex_unlock(&stem_fft_planner_lock);
    fft->forward = fft->inverse = NULL;
}

int stem_fft_create(stem_fft *fft, int nx, int ny, int batch, stem_complex *buf, int measure)
{
    return create_plans(fft, nx, ny, batch, buf, measure, wisdom_imported, 0);
}

int stem_fft_measure(int nx, int ny, int batch)
{
    stem_complex *buf = stem_fft_alloc((size_t)nx * ny * batch, "FFT measurement buffer");
    if (!buf) return STEM_ERR_MEMORY;
    stem_fft fft = {0};
    int err = create_plans(&fft, nx, ny, batch, buf, 1, 0, 1); /* wisdom it has is reused; the rest measured */
    stem_fft_destroy(&fft);
    stem_fft_free(buf);
    return err;
}

char *stem_fft_wisdom_export(void)
{
    pthread_mutex_lock(&stem_fft_planner_lock);
    char *text = fftwf_export_wisdom_to_string();
    pthread_mutex_unlock(&stem_fft_planner_lock);
    if (!text) STEM_FAIL(STEM_ERR_INTERNAL, "FFTW could not export its wisdom");
    return text;
}

int stem_fft_wisdom_import(const char *text)
{
    pthread_mutex_lock(&stem_fft_planner_lock);
    int ok = fftwf_import_wisdom_from_string(text);
    if (ok) wisdom_imported = 1;
    pthread_mutex_unlock(&stem_fft_planner_lock);
    return ok ? STEM_OK : STEM_FAIL(STEM_ERR_INPUT, "FFTW rejected the wisdom (not FFTW single-precision wisdom?)");
}

const char *stem_fft_library_version(void) { return fftwf_version; }

/* Plans both directions of the shape from the process's wisdom; 1: they exist. */
static int plan_shape(int nx, int ny, int batch, unsigned flags)
{
    stem_complex *buf = fftwf_malloc((size_t)nx * ny * batch * sizeof(stem_complex));
    if (!buf) return 0;
    int n[2] = {ny, nx};
    fftwf_complex *b = (fftwf_complex *)buf;
    fftwf_plan f = fftwf_plan_many_dft(2, n, batch, b, NULL, 1, nx * ny, b, NULL, 1, nx * ny, FFTW_FORWARD, flags);
    fftwf_plan i = fftwf_plan_many_dft(2, n, batch, b, NULL, 1, nx * ny, b, NULL, 1, nx * ny, FFTW_BACKWARD, flags);
    int ok = f && i;
    if (f) fftwf_destroy_plan(f);
    if (i) fftwf_destroy_plan(i);
    fftwf_free(buf);
    return ok;
}

char *stem_fft_measure_shape(int nx, int ny, int batch)
{
    pthread_mutex_lock(&stem_fft_planner_lock);
    fftwf_forget_wisdom();
    char *text = plan_shape(nx, ny, batch, FFTW_MEASURE) ? fftwf_export_wisdom_to_string() : NULL;
    fftwf_forget_wisdom();
    pthread_mutex_unlock(&stem_fft_planner_lock);
    if (!text) STEM_FAIL(STEM_ERR_INTERNAL, "FFTW could not measure %d transforms of %d x %d", batch, nx, ny);
    return text;
}

int stem_fft_shape_wisdom_complete(int nx, int ny, int batch, const char *text)
{
    pthread_mutex_lock(&stem_fft_planner_lock);
    fftwf_forget_wisdom();
    int ok = fftwf_import_wisdom_from_string(text) && plan_shape(nx, ny, batch, FFTW_MEASURE | FFTW_WISDOM_ONLY);
    fftwf_forget_wisdom();
    pthread_mutex_unlock(&stem_fft_planner_lock);
    return ok;
}

int stem_fft_wisdom_use(int nx, int ny, int batch, const char *text)
{
    char *copy = strdup(text);
    pthread_mutex_lock(&stem_fft_planner_lock);
    int i = 0;
    while (i < n_shape_wisdom &&
           !(shape_wisdom[i].nx == nx && shape_wisdom[i].ny == ny && shape_wisdom[i].batch == batch))
        i++;
    int room = copy && i < STEM_FFT_SHAPES;
    if (room) {
        if (i == n_shape_wisdom) n_shape_wisdom++;
        free(shape_wisdom[i].text);
        shape_wisdom[i].nx = nx;
        shape_wisdom[i].ny = ny;
        shape_wisdom[i].batch = batch;
        shape_wisdom[i].text = copy;
    }
    pthread_mutex_unlock(&stem_fft_planner_lock);
    if (!room) free(copy);
    return room ? STEM_OK : STEM_FAIL(STEM_ERR_MEMORY, "cannot keep the FFTW wisdom of %d x %d", nx, ny);
}
