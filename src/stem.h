/* Common definitions for stemsim: status codes, error reporting, logging,
 * and the complex type shared by the C engine and the CUDA engine. */
#ifndef STEM_H
#define STEM_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#define STEM_VERSION "0.1.0"

/* Exit codes (documented in docs/running.md, "Exit codes"). */
typedef enum {
    STEM_OK = 0,
    STEM_ERR_USAGE = 2,            /* bad command line */
    STEM_ERR_CONFIG = 3,           /* bad config.ini key or value */
    STEM_ERR_INPUT = 4,            /* bad or missing XYZ model / data file */
    STEM_ERR_MEMORY = 5,           /* plan exceeds the memory allowed, or allocation failed */
    STEM_ERR_IO = 6,               /* output file cannot be written */
    STEM_ERR_MPI = 7,              /* MPI failure */
    STEM_ERR_GPU = 8,              /* CUDA / cuFFT failure */
    STEM_ERR_INTERNAL = 9,         /* a bug: please report */
    STEM_STOPPED_CHECKPOINTED = 75 /* stopped by a signal with its finished units in the checkpoint:
                                      run the same command again to continue (EX_TEMPFAIL) */
} stem_status;

#ifdef __cplusplus
typedef struct {
    float re, im;
} stem_complex; /* layout of float _Complex */
extern "C" {
#else
#include <complex.h>
typedef float complex stem_complex;
#endif

/* Print "stemsim: error: <message> [file:line func]" to stderr and return code.
 * Errors are printed where they are detected; callers only propagate the code. */
int stem_fail(int code, const char *file, int line, const char *func, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
#define STEM_FAIL(code, ...) stem_fail((code), __FILE__, __LINE__, __func__, __VA_ARGS__)
/* An internal invariant (a bug if false, exit 9), distinct from user errors. */
#define STEM_ASSERT(cond, ...)                                                                                         \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            char stem_assert_msg_[512];                                                                                \
            snprintf(stem_assert_msg_, sizeof stem_assert_msg_, __VA_ARGS__);                                          \
            return STEM_FAIL(STEM_ERR_INTERNAL, "internal error (please report): %s: %s", #cond, stem_assert_msg_);    \
        }                                                                                                              \
    } while (0)
/* Propagate a non-zero status up the stack (PetscCall style). */
#define STEM_TRY(expr)                                                                                                 \
    do {                                                                                                               \
        int stem_rc_ = (expr);                                                                                         \
        if (stem_rc_) return stem_rc_;                                                                                 \
    } while (0)

/* Logging: the only process-wide state (level, rank, progress switch). */
typedef enum { STEM_LOG_QUIET = 0, STEM_LOG_INFO = 1, STEM_LOG_DEBUG = 2 } stem_log_level;
void stem_log_init(int rank, stem_log_level level);
/* Errors are scoped to the communicator that agrees on them (PETSc's model):
 * rank 0 prints at once; any other rank holds its first error until the
 * ranks agree on the outcome (stem_mpi_agree over a communicator), where the
 * lowest failing rank prints, so a failure every rank sees is printed once
 * and one seen by a single rank is printed by that rank. Release (print when
 * print != 0) and forget the held error; returns whether there was one. */
int stem_log_release_held(int print);
int stem_log_rank(void);
int stem_log_enabled(stem_log_level level);
/* The run's level is debug (-v), on every rank (stem_log_enabled answers for rank 0 alone):
 * collective reports decide on it together. */
int stem_log_verbose(void);
/* As stem_info, at debug level (-v). */
void stem_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Informational line from rank 0 only. */
void stem_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void stem_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Checked allocation: NULL plus a reported STEM_ERR_MEMORY on failure. */
void *stem_alloc(size_t bytes, const char *what);
void *stem_calloc(size_t count, size_t size, const char *what);
#define STEM_ALLOC(ptr, count, what)                                                                                   \
    do {                                                                                                               \
        (ptr) = stem_calloc((size_t)(count), sizeof(*(ptr)), (what));                                                  \
        if (!(ptr)) return STEM_ERR_MEMORY;                                                                            \
    } while (0)

/* Before a hot loop written for vectors: an AVX2 clone beside the baseline one, chosen when
 * the program loads (GCC on x86-64; elsewhere the baseline only). Neither uses FMA, whose
 * other rounding would make results depend on the CPU. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define STEM_VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define STEM_VECTOR_CLONES
#endif

double stem_wall_time(void);

/* Progress of a long stage on rank 0: "stage: 42% ETA 12 s". */
typedef struct {
    const char *stage;
    double start, last_print;
    long total;
    int quiet_start; /* printed only once it has taken a while (set-up steps) */
} stem_progress;
void stem_progress_begin(stem_progress *p, const char *stage, long total);
/* A stage that is usually quick: nothing is printed unless it runs past 2 s. */
void stem_progress_begin_quiet(stem_progress *p, const char *stage, long total);
void stem_progress_update(stem_progress *p, long done);
void stem_progress_end(stem_progress *p);

#ifdef __cplusplus
}
#endif
#endif
