/* Data files beside the binary: see data_files.h. */
#include "data_files.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { N_CANDIDATES = 3 };

/* The directory of the running binary ("." when /proc is unavailable). */
static void binary_dir(char *dir, size_t n)
{
    ssize_t len = readlink("/proc/self/exe", dir, n - 1);
    if (len <= 0) {
        snprintf(dir, n, ".");
        return;
    }
    dir[len] = 0;
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir)
        *slash = 0;
    else
        snprintf(dir, n, "/");
}

static void candidate(int i, const char *bin, const char *name, char *out, size_t n)
{
    static const char *const where[N_CANDIDATES] = {"%s/../share/stemsim/data/%s", "%s/data/%s", "%s/../data/%s"};
    snprintf(out, n, where[i], bin, name);
}

const char *stem_data_file(const char *name, const char *override)
{
    const char *env = override ? getenv(override) : NULL;
    if (env && env[0]) return env;
    static struct {
        char name[64], path[PATH_MAX + 64];
    } cache[4]; /* searched once per name */
    int slot = 0;
    while (slot < 3 && cache[slot].name[0] && strcmp(cache[slot].name, name)) slot++;
    if (!strcmp(cache[slot].name, name)) return cache[slot].path;
    char bin[PATH_MAX];
    binary_dir(bin, sizeof bin);
    snprintf(cache[slot].name, sizeof cache[slot].name, "%s", name);
    candidate(0, bin, name, cache[slot].path, sizeof cache[slot].path); /* none exists: the installed one */
    for (int i = 0; i < N_CANDIDATES; i++) {
        char path[PATH_MAX + 64];
        candidate(i, bin, name, path, sizeof path);
        if (access(path, R_OK) == 0) {
            snprintf(cache[slot].path, sizeof cache[slot].path, "%s", path);
            break;
        }
    }
    return cache[slot].path;
}

void stem_data_file_candidates(const char *name, char *out, size_t n)
{
    char bin[PATH_MAX];
    binary_dir(bin, sizeof bin);
    out[0] = 0;
    for (int i = 0; i < N_CANDIDATES; i++) {
        char path[PATH_MAX + 64];
        candidate(i, bin, name, path, sizeof path);
        snprintf(out + strlen(out), n - strlen(out), "%s%s", i ? ", " : "", path);
    }
}
