/* The FFTW wisdom cache's files (fft_cache.h). */
#include "fft_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../src/fft.h"
#include "../src/options.h"

#define CACHE_FILE_MAX (16u << 20) /* wisdom of one shape is a few KiB */

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* mkdir -p, each new level private to the user. */
static void make_dirs(char *path)
{
    for (char *p = path + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(path, 0700);
            *p = '/';
        }
    mkdir(path, 0700);
}

/* A directory only this user can write, reached without a symbolic link at its end. */
static int usable_dir(const char *dir, char *why, size_t why_size)
{
    struct stat st;
    if (lstat(dir, &st) != 0)
        snprintf(why, why_size, "cannot create or inspect it: %s", strerror(errno));
    else if (S_ISLNK(st.st_mode))
        snprintf(why, why_size, "it is a symbolic link");
    else if (!S_ISDIR(st.st_mode))
        snprintf(why, why_size, "it is not a directory");
    else if (st.st_uid != geteuid())
        snprintf(why, why_size, "it belongs to another user");
    else if (st.st_mode & (S_IWGRP | S_IWOTH))
        snprintf(why, why_size, "others may write into it");
    else
        return 1;
    return 0;
}

static void default_dir(char *dir, size_t size)
{
    const char *env = getenv("STEMSIM_FFT_CACHE"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (env && env[0])
        snprintf(dir, size, "%s", strcmp(env, "off") ? env : "");
    else if (xdg && xdg[0] == '/') /* the XDG spec ignores relative paths */
        snprintf(dir, size, "%s/stemsim", xdg);
    else if (home && home[0])
        snprintf(dir, size, "%s/.cache/stemsim", home);
    else
        dir[0] = '\0';
}

void stem_fft_cache_dir(const char *setting, char *dir, size_t size, char *why, size_t why_size)
{
    why[0] = '\0';
    if (!strcmp(setting, "auto"))
        default_dir(dir, size);
    else
        snprintf(dir, size, "%s", strcmp(setting, "off") ? setting : "");
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/') dir[--n] = '\0'; /* "link/" would follow the link */
    if (!dir[0]) return;
    make_dirs(dir);
    if (!usable_dir(dir, why, why_size)) dir[0] = '\0';
}

/* "model; flags-hash" of this CPU, from /proc/cpuinfo (what the measured timings depend on). */
static const char *machine(void)
{
    static char text[512];
    if (text[0]) return text;
    char model[256] = "unknown", line[8192];
    uint64_t flags = 0;
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (!colon) continue;
        char *value = colon + 1 + (colon[1] == ' ');
        value[strcspn(value, "\n")] = '\0';
        if (!strncmp(line, "model name", 10) && !strcmp(model, "unknown")) snprintf(model, sizeof model, "%s", value);
        if (!flags && (!strncmp(line, "flags", 5) || !strncmp(line, "Features", 8))) flags = fnv1a(value);
    }
    if (f) fclose(f);
    snprintf(text, sizeof text, "CPU: %s\nCPU flags: %016llx\n", model, (unsigned long long)flags);
    return text;
}

void stem_fft_cache_key_make(int nx, int ny, int batch, stem_fft_cache_key *key)
{
    snprintf(key->text, sizeof key->text,
             "stemsim FFTW wisdom cache, format 1\n"
             "shape: %d x %d (x fastest), %d per batch, in place, forward and inverse, single precision\n"
             "FFTW: %s\nthreads per transform: 1\nplanner: FFTW_MEASURE\n%s",
             nx, ny, batch, stem_fft_library_version(), machine());
    snprintf(key->name, sizeof key->name, "fftw-%dx%dx%d-%016llx.wisdom", nx, ny, batch,
             (unsigned long long)fnv1a(key->text));
}

/* The whole file, opened without following a link; NULL with why. */
static char *read_cache_file(const char *path, char *why, size_t why_size, int *absent)
{
    *absent = 0;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        *absent = errno == ENOENT;
        snprintf(why, why_size, "%s", errno == ELOOP ? "it is a symbolic link" : strerror(errno));
        return NULL;
    }
    struct stat st;
    char *text = NULL;
    if (fstat(fd, &st) != 0)
        snprintf(why, why_size, "cannot inspect it: %s", strerror(errno));
    else if (!S_ISREG(st.st_mode))
        snprintf(why, why_size, "it is not a regular file");
    else if (st.st_uid != geteuid())
        snprintf(why, why_size, "it belongs to another user");
    else if (st.st_size <= 0 || (size_t)st.st_size > CACHE_FILE_MAX)
        snprintf(why, why_size, "its size (%lld bytes) is not that of a wisdom file", (long long)st.st_size);
    else if (!(text = malloc((size_t)st.st_size + 1)))
        snprintf(why, why_size, "no memory to read it");
    else if (read(fd, text, (size_t)st.st_size) != st.st_size) {
        snprintf(why, why_size, "cannot read it whole");
        free(text);
        text = NULL;
    } else
        text[st.st_size] = '\0';
    close(fd);
    return text;
}

stem_fft_cache_state stem_fft_cache_read(const char *dir, const stem_fft_cache_key *key, char **wisdom, char *why,
                                         size_t why_size)
{
    char path[STEM_PATH_MAX + 128];
    snprintf(path, sizeof path, "%s/%s", dir, key->name);
    *wisdom = NULL;
    int absent;
    char *text = read_cache_file(path, why, why_size, &absent);
    if (!text) return absent ? STEM_FFT_CACHE_ABSENT : STEM_FFT_CACHE_REFUSED;
    size_t k = strlen(key->text);
    if (strncmp(text, key->text, k) != 0 || !text[k])
        snprintf(why, why_size,
                 "it does not begin with this shape's key (another shape, FFTW or CPU), or it is damaged");
    else if (!(*wisdom = strdup(text + k)))
        snprintf(why, why_size, "no memory to read it");
    free(text);
    return *wisdom ? STEM_FFT_CACHE_FOUND : STEM_FFT_CACHE_REFUSED;
}

/* Writes the file whole under a fresh name (O_EXCL); 0 or -1 with why. */
static int write_temp(const char *temp_template, char *temp, size_t temp_size, const char *a, const char *b, char *why,
                      size_t why_size)
{
    snprintf(temp, temp_size, "%s", temp_template);
    int fd = mkstemp(temp); /* O_CREAT | O_EXCL, 0600: never an existing file or link */
    if (fd < 0) {
        snprintf(why, why_size, "cannot create a file in the cache: %s", strerror(errno));
        return -1;
    }
    size_t na = strlen(a), nb = strlen(b);
    int ok = write(fd, a, na) == (ssize_t)na && write(fd, b, nb) == (ssize_t)nb && fsync(fd) == 0;
    int saved = errno;
    ok = close(fd) == 0 && ok;
    if (!ok) {
        snprintf(why, why_size, "cannot write %s: %s", temp, strerror(saved));
        unlink(temp);
        return -1;
    }
    return 0;
}

int stem_fft_cache_store(const char *dir, const stem_fft_cache_key *key, const char *wisdom, char *why, size_t why_size)
{
    char path[STEM_PATH_MAX + 128], templ[STEM_PATH_MAX + 160], temp[STEM_PATH_MAX + 160];
    snprintf(path, sizeof path, "%s/%s", dir, key->name);
    snprintf(templ, sizeof templ, "%s/.%s.XXXXXX", dir, key->name);
    if (write_temp(templ, temp, sizeof temp, key->text, wisdom, why, why_size)) return -1;
    /* link and RENAME_NOREPLACE fail when the name exists: a file another job published stays */
    int rc = link(temp, path) == 0 ? 0 : errno == EEXIST ? 1 : -1;
    if (rc < 0) rc = renameat2(AT_FDCWD, temp, AT_FDCWD, path, RENAME_NOREPLACE) == 0 ? 0 : errno == EEXIST ? 1 : -1;
    if (rc < 0) snprintf(why, why_size, "cannot publish %s: %s", path, strerror(errno));
    unlink(temp);
    return rc;
}
