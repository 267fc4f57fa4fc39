/* Default memory limit from the machine, the cgroup and the rlimit. */
#include "memlimit.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/statvfs.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define GIB 1073741824.0
#define UNLIMITED_FROM 4.0e18 /* v1 writes 2^63 - page for "no limit" */

/* One number (or "max") from a cgroup file; 0 when absent or unlimited. */
static double read_limit_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char buf[64] = "";
    int ok = fgets(buf, sizeof buf, f) != NULL;
    fclose(f);
    if (!ok || !strncmp(buf, "max", 3)) return 0;
    char *end;
    double v = strtod(buf, &end);
    return end != buf && v > 0 && v < UNLIMITED_FROM ? v : 0;
}

/* Smallest limit in <root>/<dir>/<file> for dir and each of its parents. */
static double walk_up(const char *root, const char *dir, const char *file)
{
    char rel[4096], path[8192];
    snprintf(rel, sizeof rel, "%s", dir);
    double best = 0;
    for (;;) {
        snprintf(path, sizeof path, "%s%s/%s", root, rel, file);
        double v = read_limit_file(path);
        if (v > 0 && (best == 0 || v < best)) best = v;
        char *slash = strrchr(rel, '/');
        if (!slash || rel[0] == 0) break;
        *slash = 0; /* "/a/b" -> "/a" -> "" (the root itself) */
    }
    return best;
}

double stem_cgroup_memory_limit(const char *proc_cgroup, const char *root)
{
    FILE *f = fopen(proc_cgroup, "r");
    if (!f) return 0;
    char line[4096];
    double best = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2) continue;
        *c1 = *c2 = 0; /* line: hierarchy id, c1 + 1: controllers, c2 + 1: path */
        const char *controllers = c1 + 1, *dir = c2 + 1;
        double v = 0;
        char base[4200];
        if (!strcmp(line, "0") && !controllers[0]) { /* v2: "0::/path" */
            v = walk_up(root, dir, "memory.max");
        } else if (strstr(controllers, "memory")) { /* v1: "N:memory:/path" (maybe with others) */
            snprintf(base, sizeof base, "%s/memory", root);
            v = walk_up(base, dir, "memory.limit_in_bytes");
        }
        if (v > 0 && (best == 0 || v < best)) best = v;
    }
    fclose(f);
    return best;
}

static double physical_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page > 0 ? (double)pages * page : 8.0 * GIB;
}

void stem_memory_limit_choose(double config_gib, int ranks_on_node, stem_memory_limit *out)
{
    if (config_gib > 0) {
        out->bytes = config_gib * GIB;
        snprintf(out->source, sizeof out->source, "[compute] max_memory = %g GiB", config_gib);
        return;
    }
    int ranks = ranks_on_node > 0 ? ranks_on_node : 1;
    double node = physical_memory();
    const char *what = "physical memory";
    double cg = stem_cgroup_memory_limit("/proc/self/cgroup", "/sys/fs/cgroup");
    if (cg > 0 && cg < node) {
        node = cg;
        what = "the cgroup memory limit (Slurm --mem, a container)";
    }
    out->bytes = STEM_MEMORY_FRACTION * node / ranks;
    snprintf(out->source, sizeof out->source, "%.0f%% of %s, %.2f GiB, shared by %d rank(s) on this node",
             100 * STEM_MEMORY_FRACTION, what, node / GIB, ranks);
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        STEM_MEMORY_FRACTION * (double)rl.rlim_cur < out->bytes) {
        out->bytes = STEM_MEMORY_FRACTION * (double)rl.rlim_cur;
        snprintf(out->source, sizeof out->source,
                 "%.0f%% of this process's address-space limit RLIMIT_AS (ulimit -v), %.2f GiB",
                 100 * STEM_MEMORY_FRACTION, (double)rl.rlim_cur / GIB);
    }
}

double stem_process_resident_bytes(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[128];
    double kib = 0;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6)) kib = atof(line + 6); /* the peak so far: MPI_Init's exceeds what it keeps */
    if (f) fclose(f);
    return kib * 1024;
}

double stem_shared_memory_room(char *dir, int dir_len)
{
    const char *d = getenv("OMPI_MCA_osc_sm_backing_directory");
    snprintf(dir, (size_t)dir_len, "%s", d && *d ? d : "/dev/shm");
    struct statvfs fs;
    if (statvfs(dir, &fs) != 0) return -1;
    return (double)fs.f_bavail * fs.f_frsize;
}
