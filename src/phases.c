/* Phase timing (phases.h). */
#include "phases.h"

#include <stdio.h>
#include <sys/resource.h>

#include "stem.h"

static const char *const phase_names[STEM_N_PHASES] = {"table",     "transmission", "broadcast", "S-matrix",
                                                       "gather",    "arrange",      "probes",    "wait",
                                                       "reduction", "write",        "setup",     "finish"};
static double total[STEM_N_PHASES], logged[STEM_N_PHASES];

double stem_phase_add(stem_phase p, double t0)
{
    double now = stem_wall_time();
    if (p >= 0 && p < STEM_N_PHASES) total[p] += now - t0;
    return now;
}

double stem_phase_total(stem_phase p) { return p >= 0 && p < STEM_N_PHASES ? total[p] : 0; }

/* "name 1.234 s, ..." of the phases with nonzero time in v[]. */
static void format_phases(const double *v, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = 0;
    for (int p = 0; p < STEM_N_PHASES && len + 1 < size; p++)
        if (v[p] >= 5e-4) {
            int n = snprintf(buf + len, size - len, "%s%s %.3f", len ? ", " : "", phase_names[p], v[p]);
            if (n > 0) len += (size_t)n;
        }
}

void stem_phases_log_config(int c, int n_configs)
{
    double d[STEM_N_PHASES];
    char line[512];
    for (int p = 0; p < STEM_N_PHASES; p++) {
        d[p] = total[p] - logged[p];
        logged[p] = total[p];
    }
    format_phases(d, line, sizeof line);
    stem_info("  configuration %d of %d on rank 0, seconds: %s", c + 1, n_configs, line);
}

void stem_phases_log_summary(MPI_Comm comm, double wall)
{
    double mine[STEM_N_PHASES + 1], slowest[STEM_N_PHASES + 1], sum_all[STEM_N_PHASES + 1];
    double sum = 0;
    int size = 1;
    for (int p = 0; p < STEM_N_PHASES; p++) sum += mine[p] = total[p];
    mine[STEM_N_PHASES] = wall - sum; /* other */
    if (MPI_Comm_size(comm, &size) != MPI_SUCCESS ||
        MPI_Reduce(mine, slowest, STEM_N_PHASES + 1, MPI_DOUBLE, MPI_MAX, 0, comm) != MPI_SUCCESS ||
        MPI_Reduce(mine, sum_all, STEM_N_PHASES + 1, MPI_DOUBLE, MPI_SUM, 0, comm) != MPI_SUCCESS)
        return;
    if (!stem_log_enabled(STEM_LOG_INFO)) return;
    for (int p = 0; p <= STEM_N_PHASES; p++) sum_all[p] /= size; /* the mean */
    char a[512], b[512], c[512];
    format_phases(mine, a, sizeof a);
    format_phases(slowest, b, sizeof b);
    format_phases(sum_all, c, sizeof c);
    stem_info("time per phase, seconds (wall %.3f):\n  rank 0:       %s, other %.3f\n  slowest rank: %s, other "
              "%.3f\n  mean rank:    %s, other %.3f",
              wall, a, mine[STEM_N_PHASES], b, slowest[STEM_N_PHASES], c, sum_all[STEM_N_PHASES]);
}

void stem_log_peak_memory(MPI_Comm comm)
{
    struct rusage u;
    double mine = getrusage(RUSAGE_SELF, &u) == 0 ? u.ru_maxrss / 1048576.0 : 0, lo = 0, hi = 0; /* KiB -> GiB */
    if (MPI_Reduce(&mine, &lo, 1, MPI_DOUBLE, MPI_MIN, 0, comm) != MPI_SUCCESS ||
        MPI_Reduce(&mine, &hi, 1, MPI_DOUBLE, MPI_MAX, 0, comm) != MPI_SUCCESS)
        return;
    stem_info("peak resident memory per rank: %.3f to %.3f GiB", lo, hi);
}
