/* FFTW wisdom shared over the ranks (fft_wisdom.h). */
#include "fft_wisdom.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../io/fft_cache.h"
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

/* Every FFT shape the CPU engine plans with the plan's flags (multislice.c, prism.c, hrtem.c,
 * potential.c), each once. */
typedef struct {
    int n;
    int nx[5], ny[5], batch[5];
} shape_list;

static void add_shape(shape_list *l, int nx, int ny, int batch)
{
    for (int i = 0; i < l->n; i++)
        if (l->nx[i] == nx && l->ny[i] == ny && l->batch[i] == batch) return;
    l->nx[l->n] = nx;
    l->ny[l->n] = ny;
    l->batch[l->n++] = batch;
}

static shape_list run_shapes(const stem_plan *plan)
{
    shape_list l = {0};
    add_shape(&l, plan->nx, plan->ny, plan->batch_size);                                 /* probes, or plane waves */
    if (plan->algorithm == STEM_ALG_HRTEM) add_shape(&l, plan->nx, plan->ny, 1);         /* hrtem.c */
    if (plan->algorithm == STEM_ALG_PRISM) add_shape(&l, plan->out_nx, plan->out_ny, 1); /* prism.c's output */
    add_shape(&l, plan->pot_nx, plan->pot_ny, 1); /* potential.c: the transmission on its grid */
    if (plan->pot_nx != plan->nx || plan->pot_ny != plan->ny) add_shape(&l, plan->nx, plan->ny, 1);
    return l;
}

static int measure_shapes(const stem_plan *plan)
{
    shape_list l = run_shapes(plan);
    for (int i = 0; i < l.n; i++) STEM_TRY(stem_fft_measure(l.nx[i], l.ny[i], l.batch[i]));
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
    struct stat st;
    if (from_file && !stat(path, &st) && S_ISREG(st.st_mode) && st.st_size == 0) { /* e.g. touched by a job script */
        stem_info("[compute] fft_wisdom = %s is empty: no wisdom yet; the plans are measured and written to it", path);
        from_file = 0;
    }
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

/* Rank 0, one shape: its wisdom from the cache, else measured (and stored when dir is
 * given). A refused file is left alone. Appends what happened to log. */
static char *shape_wisdom(const char *dir, int nx, int ny, int batch, FILE *log)
{
    stem_fft_cache_key key;
    stem_fft_cache_key_make(nx, ny, batch, &key);
    char why[512] = "", *wisdom = NULL;
    stem_fft_cache_state state =
        dir[0] ? stem_fft_cache_read(dir, &key, &wisdom, why, sizeof why) : STEM_FFT_CACHE_ABSENT;
    if (state == STEM_FFT_CACHE_FOUND && !stem_fft_shape_wisdom_complete(nx, ny, batch, wisdom)) {
        snprintf(why, sizeof why, "FFTW cannot plan this shape from it (damaged, or not this FFTW's wisdom)");
        free(wisdom);
        wisdom = NULL;
        state = STEM_FFT_CACHE_REFUSED;
    }
    if (state == STEM_FFT_CACHE_FOUND) {
        fprintf(log, "; %dx%dx%d read from the cache", nx, ny, batch);
        return wisdom;
    }
    if (state == STEM_FFT_CACHE_REFUSED)
        stem_warn("FFTW wisdom cache file %s/%s ignored: %s. Its plans are measured again for this run and not stored "
                  "(remove the file to let stemsim store them; runs are then reproducible again)",
                  dir, key.name, why);
    double t = stem_wall_time();
    if (!(wisdom = stem_fft_measure_shape(nx, ny, batch))) return NULL;
    fprintf(log, "; %dx%dx%d measured in %.2f s", nx, ny, batch, stem_wall_time() - t);
    int stored =
        dir[0] && state == STEM_FFT_CACHE_ABSENT ? stem_fft_cache_store(dir, &key, wisdom, why, sizeof why) : -2;
    if (stored == -1) stem_warn("FFTW wisdom not stored in the cache (%s): later runs measure again", why);
    if (stored == 0) fprintf(log, " and stored (later runs read it)");
    char *theirs = NULL; /* another job published first: use its wisdom, as every later run will */
    if (stored == 1 && stem_fft_cache_read(dir, &key, &theirs, why, sizeof why) == STEM_FFT_CACHE_FOUND &&
        stem_fft_shape_wisdom_complete(nx, ny, batch, theirs)) {
        free(wisdom);
        fprintf(log, ", another job's stored first: read from the cache");
        return theirs;
    }
    free(theirs);
    return wisdom;
}

/* Rank 0: every shape's wisdom, one after another, NUL-separated in one buffer. */
static int leader_shapes(const char *dir, const shape_list *l, char **all, size_t *n, FILE *log)
{
    *all = NULL;
    *n = 0;
    for (int i = 0; i < l->n; i++) {
        char *w = shape_wisdom(dir, l->nx[i], l->ny[i], l->batch[i], log);
        if (!w) return STEM_ERR_INTERNAL;
        size_t k = strlen(w) + 1;
        char *grown = realloc(*all, *n + k);
        if (grown) memcpy(grown + *n, w, k);
        free(w);
        if (!grown) return STEM_FAIL(STEM_ERR_MEMORY, "no memory for the FFTW wisdom");
        *all = grown;
        *n += k;
    }
    return STEM_OK;
}

/* Every rank: each shape's measured plans from its own wisdom; the record's hash. */
static int use_shapes(const shape_list *l, const char *all, stem_plan *plan)
{
    uint64_t h = 1469598103934665603ull;
    const char *w = all;
    for (int i = 0; i < l->n; i++, w += strlen(w) + 1) {
        STEM_TRY(stem_fft_wisdom_use(l->nx[i], l->ny[i], l->batch[i], w));
        h = (h ^ wisdom_hash(w)) * 1099511628211ull;
    }
    snprintf(plan->fft_wisdom, sizeof plan->fft_wisdom, "wisdom %016llx", (unsigned long long)h);
    return STEM_OK;
}

/* The wisdom cache (or none: cache "off"): rank 0 reads or measures each shape, every
 * rank uses the same. */
static int share_cached(const stem_mpi *m, const char *cache, stem_plan *plan)
{
    int rank = m->layout.world_rank;
    double t = stem_wall_time();
    shape_list l = run_shapes(plan);
    char dir[STEM_PATH_MAX] = "", why[512] = "", *all = NULL, *log = NULL;
    size_t n = 0, log_size = 0;
    FILE *logf = NULL;
    int err = STEM_OK;
    if (rank == 0) {
        stem_fft_cache_dir(cache, dir, sizeof dir, why, sizeof why);
        if (why[0]) stem_warn("FFTW wisdom cache ([compute] fft_cache = %s) not used: %s", cache, why);
        logf = open_memstream(&log, &log_size);
        err = logf ? leader_shapes(dir, &l, &all, &n, logf) : STEM_FAIL(STEM_ERR_MEMORY, "no memory");
        if (logf) fclose(logf);
    }
    STEM_TRY(stem_mpi_agree(err, m->world));
    long len = (long)n;
    STEM_MPI_CALL(MPI_Bcast(&len, 1, MPI_LONG, 0, m->world));
    if (rank != 0 && !(all = stem_alloc((size_t)len, "FFTW wisdom"))) err = STEM_ERR_MEMORY;
    err = stem_mpi_agree(err, m->world);
    if (!err) err = stem_mpi_bcast(all, (size_t)len, 0, m->world);
    if (!err) err = use_shapes(&l, all, plan);
    err = stem_mpi_agree(err, m->world);
    if (!err && rank == 0)
        stem_info("FFTW plans: %s (cache %s)%s (%.2f s)", plan->fft_wisdom, dir[0] ? dir : "off", log ? log : "",
                  stem_wall_time() - t);
    free(log);
    free(all);
    return err;
}

int stem_fft_wisdom_share(const stem_mpi *m, const char *path, const char *cache, stem_plan *plan)
{
    if (!stem_options_fft_measure(&plan->opt)) return STEM_OK;
    if (!path[0]) return share_cached(m, cache, plan);
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
