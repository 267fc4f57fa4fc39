/* FFTW wisdom shared over the ranks (fft_wisdom.h). */
#include "fft_wisdom.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../io/input_file.h"
#include "../src/fft.h"

static int compare_lines(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* FNV-1a over the wisdom's lines in sorted order: FFTW writes the same entries in
 * an order that changes from one export to the next. 0: no memory. */
static uint64_t wisdom_hash(const char *text)
{
    size_t n = 1;
    for (const char *c = text; *c; c++) n += *c == '\n';
    char *copy = strdup(text), **lines = calloc(n, sizeof *lines);
    uint64_t h = 1469598103934665603ull;
    if (!copy || !lines) h = 0;
    size_t k = 0;
    for (char *save = NULL, *l = copy ? strtok_r(copy, "\n", &save) : NULL; l && k < n; l = strtok_r(NULL, "\n", &save))
        lines[k++] = l;
    if (h) qsort(lines, k, sizeof *lines, compare_lines);
    for (size_t i = 0; h && i < k; i++)
        for (const char *c = lines[i];; c++) {
            h = (h ^ (unsigned char)(*c ? *c : '\n')) * 1099511628211ull;
            if (!*c) break;
        }
    free(copy);
    free(lines);
    return h;
}

/* Every FFT shape the CPU engine plans with the plan's flags (multislice.c, prism.c, hrtem.c). */
static int measure_shapes(const stem_plan *plan)
{
    STEM_TRY(stem_fft_measure(plan->nx, plan->ny, plan->batch_size)); /* probes, or plane waves */
    if (plan->algorithm == STEM_ALG_HRTEM && plan->batch_size != 1) STEM_TRY(stem_fft_measure(plan->nx, plan->ny, 1));
    if (plan->algorithm == STEM_ALG_PRISM) STEM_TRY(stem_fft_measure(plan->out_nx, plan->out_ny, 1));
    return STEM_OK;
}

/* Written beside it, then renamed over it: a reader sees the old or the new file,
 * never a part. The file is FFTW's cache: it only ever gains shapes. */
static int write_file(const char *path, const char *text)
{
    char temp[STEM_PATH_MAX + 32];
    snprintf(temp, sizeof temp, "%s.XXXXXX", path);
    int fd = mkstemp(temp);
    if (fd < 0) return STEM_FAIL(STEM_ERR_IO, "cannot create a file beside %s: %s", path, strerror(errno));
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, 0666 & ~mask); /* as a file the user creates, not mkstemp's 0600 */
    size_t n = strlen(text);
    int ok = write(fd, text, n) == (ssize_t)n && fsync(fd) == 0;
    ok = close(fd) == 0 && ok;
    if (ok && rename(temp, path) != 0) ok = 0;
    int saved = errno;
    if (!ok) unlink(temp);
    if (!ok) return STEM_FAIL(STEM_ERR_IO, "cannot write the FFTW wisdom file %s: %s", path, strerror(saved));
    return STEM_OK;
}

/* Rank 0: the wisdom every rank will use, and where it came from. */
static int leader_wisdom(const char *path, const stem_plan *plan, char **text, const char **origin)
{
    int from_file = path[0] && access(path, F_OK) == 0;
    char *file_text = NULL;
    size_t file_len = 0;
    int err = from_file
        ? stem_input_read_all(path, "FFTW wisdom file ([compute] fft_wisdom)", STEM_ERR_INPUT, &file_text, &file_len)
        : STEM_OK;
    if (!err && from_file && stem_fft_wisdom_import(file_text))
        err = STEM_FAIL(STEM_ERR_INPUT, "[compute] fft_wisdom = %s is not FFTW wisdom of this FFTW", path);
    if (!err) err = measure_shapes(plan); /* plans the wisdom has are reused, the rest measured */
    if (!err && !(*text = stem_fft_wisdom_export())) err = STEM_ERR_INTERNAL;
    int grew = !err && (!from_file || wisdom_hash(*text) != wisdom_hash(file_text));
    if (!err)
        *origin = !from_file ? (path[0] ? "measured by rank 0, saved to the wisdom file" : "measured by rank 0")
            : grew           ? "read from the wisdom file, shapes it lacked measured by rank 0 and added to it"
                             : "read from the wisdom file";
    if (!err && path[0] && grew) err = write_file(path, *text);
    free(file_text);
    return err;
}

int stem_fft_wisdom_share(const stem_mpi *m, const char *path, stem_plan *plan)
{
    if (!stem_options_fft_measure(&plan->opt)) return STEM_OK;
    char *text = NULL;
    const char *origin = "";
    int rank = m->layout.world_rank;
    double t = stem_wall_time();
    int err = rank == 0 ? leader_wisdom(path, plan, &text, &origin) : STEM_OK;
    STEM_TRY(stem_mpi_agree(err, m->world));
    long n = rank == 0 ? (long)strlen(text) + 1 : 0;
    STEM_MPI_CALL(MPI_Bcast(&n, 1, MPI_LONG, 0, m->world));
    if (rank != 0 && !(text = stem_alloc((size_t)n, "FFTW wisdom"))) err = STEM_ERR_MEMORY;
    err = stem_mpi_agree(err, m->world);
    if (!err) err = stem_mpi_bcast(text, (size_t)n, 0, m->world);
    if (!err) err = stem_fft_wisdom_import(text);
    err = stem_mpi_agree(err, m->world);
    if (!err) {
        snprintf(plan->fft_wisdom, sizeof plan->fft_wisdom, "wisdom %016llx", (unsigned long long)wisdom_hash(text));
        if (rank == 0) stem_info("FFTW plans: %s, %s (%.2f s)", plan->fft_wisdom, origin, stem_wall_time() - t);
    }
    free(text);
    return err;
}
