/* Error reporting, logging, checked allocation and progress output. */
#include "stem.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* The one piece of process-wide state the conventions allow. */
static struct {
    int rank;
    stem_log_level level;
    char held[2300]; /* first error of a rank other than 0, until the job agrees on it */
} stem_log_state = {0, STEM_LOG_INFO, ""};

void stem_log_init(int rank, stem_log_level level)
{
    /* a killed job's log shows how far it got */
    setvbuf(stdout, NULL, _IOLBF, 0);
    stem_log_state.rank = rank;
    stem_log_state.level = level;
}

int stem_log_release_held(int print)
{
    int had = stem_log_state.held[0] != 0;
    if (had && print) {
        fputs(stem_log_state.held, stderr);
        fflush(stderr);
    }
    stem_log_state.held[0] = 0;
    return had;
}

int stem_log_rank(void) { return stem_log_state.rank; }

int stem_log_enabled(stem_log_level level) { return stem_log_state.rank == 0 && stem_log_state.level >= level; }

int stem_fail(int code, const char *file, int line, const char *func, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (stem_log_state.rank > 0) {
        /* every rank may be failing the same way (the same config, the same
         * full disk): held until the ranks agree (stem_mpi_agree), where the
         * lowest failing rank prints, or until this rank leaves alone */
        if (!stem_log_state.held[0])
            snprintf(stem_log_state.held, sizeof stem_log_state.held, "stemsim: error (rank %d): %s [%s:%d %s]\n",
                     stem_log_state.rank, msg, file, line, func);
        return code;
    }
    fprintf(stderr, "stemsim: error: %s [%s:%d %s]\n", msg, file, line, func);
    fflush(stderr);
    return code;
}

/* One line on stdout, rank 0 at this level or above. */
static void log_line(stem_log_level level, const char *fmt, va_list ap)
{
    if (!stem_log_enabled(level)) return;
    vfprintf(stdout, fmt, ap);
    fputc('\n', stdout);
    fflush(stdout);
}

void stem_info(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_line(STEM_LOG_INFO, fmt, ap);
    va_end(ap);
}

int stem_log_verbose(void) { return stem_log_state.level >= STEM_LOG_DEBUG; }

void stem_debug(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_line(STEM_LOG_DEBUG, fmt, ap);
    va_end(ap);
}

void stem_warn(const char *fmt, ...)
{
    if (stem_log_state.rank != 0) return;
    va_list ap;
    va_start(ap, fmt);
    fputs("stemsim: warning: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
}

void *stem_alloc(size_t bytes, const char *what)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) STEM_FAIL(STEM_ERR_MEMORY, "cannot allocate %.1f MiB for %s", bytes / 1048576.0, what);
    return p;
}

void *stem_calloc(size_t count, size_t size, const char *what)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) STEM_FAIL(STEM_ERR_MEMORY, "cannot allocate %.1f MiB for %s", (double)count * size / 1048576.0, what);
    return p;
}

double stem_wall_time(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static void progress_start(stem_progress *p, const char *stage, long total, int quiet)
{
    p->stage = stage;
    p->total = total > 0 ? total : 1;
    p->start = p->last_print = stem_wall_time();
    p->quiet_start = quiet;
}

void stem_progress_begin(stem_progress *p, const char *stage, long total)
{
    progress_start(p, stage, total, 0);
    stem_info("%s ...", stage);
}

void stem_progress_begin_quiet(stem_progress *p, const char *stage, long total) { progress_start(p, stage, total, 1); }

void stem_progress_update(stem_progress *p, long done)
{
    if (!stem_log_enabled(STEM_LOG_INFO)) return;
    double now = stem_wall_time();
    if (now - p->last_print < 2.0) return;
    p->last_print = now;
    p->quiet_start = 0; /* it has taken a while: its end is reported too */
    double frac = (double)done / p->total;
    double eta = frac > 0 ? (now - p->start) * (1 - frac) / frac : 0;
    fprintf(stdout, "  %s: %3.0f%%  elapsed %.0f s  ETA %.0f s\n", p->stage, 100 * frac, now - p->start, eta);
    fflush(stdout);
}

void stem_progress_end(stem_progress *p)
{
    if (p->quiet_start) return; /* quick: never shown */
    stem_info("  %s: done in %.2f s", p->stage, stem_wall_time() - p->start);
}
