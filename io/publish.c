/* Output checks, exclusive temporary and no-replace publication (publish.h). */
#include "publish.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "../src/series.h"
#include "../src/signals.h"

#define TAG_TEMPLATE ".XXXXXX"

static const char *file_kind(mode_t m)
{
    if (S_ISDIR(m)) return "a directory";
    if (S_ISFIFO(m)) return "a FIFO (named pipe)";
    if (S_ISSOCK(m)) return "a socket";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    return "not a regular file";
}

/* ---------------------------------------------------------------- check */

static int check_dir(const char *file)
{
    char buf[STEM_PATH_MAX];
    struct stat st;
    snprintf(buf, sizeof buf, "%s", file);
    const char *dir = dirname(buf); /* "." for a bare file name */
    if (stat(dir, &st) != 0)
        return STEM_FAIL(STEM_ERR_IO, "[output] file = %s: directory %s does not exist (%s)", file, dir,
                         strerror(errno));
    if (!S_ISDIR(st.st_mode)) return STEM_FAIL(STEM_ERR_IO, "[output] file = %s: %s is not a directory", file, dir);
    if (access(dir, W_OK | X_OK) != 0)
        return STEM_FAIL(STEM_ERR_IO, "[output] file = %s: directory %s is not writable (%s)", file, dir,
                         strerror(errno));
    return STEM_OK;
}

/* The output must not be any input, however it is reached (symlink, hard
 * link, "./", another name of the same directory): compare device and inode. */
static int check_not_input(const char *file, const struct stat *out, const stem_input_ref *inputs, int n)
{
    for (int i = 0; i < n; i++) {
        struct stat in;
        if (!inputs[i].path || stat(inputs[i].path, &in) != 0) continue;
        if (in.st_dev == out->st_dev && in.st_ino == out->st_ino)
            return STEM_FAIL(STEM_ERR_IO,
                             "[output] file = %s is the same file as the %s %s: stemsim never writes its inputs "
                             "(whatever [output] overwrite says); choose another output file",
                             file, inputs[i].what, inputs[i].path);
    }
    return STEM_OK;
}

static int check_existing(const stem_config *cfg, const stem_input_ref *inputs, int n)
{
    const char *file = cfg->output_file;
    struct stat st;
    if (stat(file, &st) != 0) {
        if (errno == ENOENT) return STEM_OK; /* also a dangling symlink: the rename replaces the link */
        return STEM_FAIL(STEM_ERR_IO, "[output] file = %s: cannot inspect it (%s)", file, strerror(errno));
    }
    STEM_TRY(check_not_input(file, &st, inputs, n));
    if (S_ISDIR(st.st_mode)) return STEM_FAIL(STEM_ERR_IO, "[output] file = %s is a directory", file);
    if (!cfg->overwrite)
        return STEM_FAIL(STEM_ERR_IO,
                         "[output] file = %s already exists; set [output] overwrite = true or choose another file",
                         file);
    if (!S_ISREG(st.st_mode))
        return STEM_FAIL(STEM_ERR_IO, "[output] file = %s is %s: overwrite replaces regular files only", file,
                         file_kind(st.st_mode));
    return STEM_OK;
}

/* "<file>.XXXXXX.reserve.incomplete" whose run is gone: every run holds its reserve's lock
 * until it ends (reserve_local), so a lock taken here means a killed run's output-sized reserve,
 * removed (repeated kills filled disks with them). A live run's stays. Returns 1 if removed. */
static int reclaim_reserve(const char *path, const char *tail)
{
    static const char tag[] = ".reserve" STEM_OUTPUT_TEMP_SUFFIX;
    size_t n = strlen(tail), lt = strlen(TAG_TEMPLATE);
    if (n != lt + strlen(tag) || strcmp(tail + lt, tag)) return 0;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    int gone = fd >= 0 && !fstat(fd, &st) && S_ISREG(st.st_mode) && flock(fd, LOCK_EX | LOCK_NB) == 0;
    if (gone && unlink(path) == 0)
        stem_info("removed %s: the space reserve (%.1f MiB) of a run that was killed", path, st.st_size / 1048576.0);
    if (fd >= 0) close(fd);
    return gone;
}

/* Temporaries of earlier runs that did not finish ("<file>.*.incomplete",
 * and "<file>.incomplete" of stemsim 0.1): reported, never touched. */
static void report_stale(const char *file)
{
    char dbuf[STEM_PATH_MAX], bbuf[STEM_PATH_MAX];
    snprintf(dbuf, sizeof dbuf, "%s", file);
    snprintf(bbuf, sizeof bbuf, "%s", file);
    const char *dir = dirname(dbuf), *base = basename(bbuf);
    DIR *d = opendir(dir);
    if (!d) return;
    size_t lb = strlen(base), ls = strlen(STEM_OUTPUT_TEMP_SUFFIX);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < lb + ls || strncmp(e->d_name, base, lb) || strcmp(e->d_name + len - ls, STEM_OUTPUT_TEMP_SUFFIX))
            continue;
        if (len != lb + ls && e->d_name[lb] != '.') continue;
        char path[STEM_OUTPUT_NAME_MAX + 16];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (!lstat(path, &st) && S_ISREG(st.st_mode) && st.st_nlink > 1) { /* a checkpoint's patterns.h5 too */
            stem_info("%s is a stopped run's output, kept by its checkpoint: resuming takes it over", path);
            continue;
        }
        if (reclaim_reserve(path, e->d_name + lb)) continue;
        if (++n <= 5)
            stem_warn("%s/%s is an unfinished output of an earlier run (killed, or still running); "
                      "it is left alone: remove it when no job writes it",
                      dir, e->d_name);
    }
    if (n > 5) stem_warn("%d more unfinished outputs of %s in %s", n - 5, base, dir);
    closedir(d);
}

/* Create "<file>.XXXXXX.incomplete" exclusively; keep it (reserve) or remove
 * it again (a dry run: the directory really accepts new files). Permission
 * bits do not tell (root, ACLs, read-only mounts, pseudo file systems). */
static int reserve_temp(const stem_config *cfg, int keep, stem_output_target *t)
{
    char name[STEM_OUTPUT_NAME_MAX];
    int n = snprintf(name, sizeof name, "%s" TAG_TEMPLATE STEM_OUTPUT_TEMP_SUFFIX, cfg->output_file);
    if (n < 0 || (size_t)n >= sizeof name)
        return STEM_FAIL(STEM_ERR_IO, "[output] file = %s: name too long", cfg->output_file);
#ifdef OMPI_MAJOR_VERSION
    /* Open MPI's MPI_File_open (its sharedfp/lockedfile component) overflows a fixed buffer
     * with the file's name and a job number: the job would crash (SIGABRT) after all its
     * computing, in the output's H5Fcreate. Measured: 244 characters open, 250 abort. */
    if (n > STEM_OUTPUT_MPIIO_PATH_MAX)
        return STEM_FAIL(STEM_ERR_IO,
                         "[output] file = %s: the output's temporary would be a path of %d characters, and Open "
                         "MPI's MPI-IO (its sharedfp lockedfile component) crashes on paths beyond about 240 "
                         "when it opens the file: give the output a path of at most %d characters (e.g. run "
                         "from its directory and name it relatively, or link a short name to the directory)",
                         cfg->output_file, n,
                         STEM_OUTPUT_MPIIO_PATH_MAX - (int)strlen(TAG_TEMPLATE STEM_OUTPUT_TEMP_SUFFIX));
#endif
    int fd = mkstemps(name, (int)strlen(STEM_OUTPUT_TEMP_SUFFIX)); /* O_CREAT | O_EXCL, never follows a link */
    if (fd < 0)
        return STEM_FAIL(STEM_ERR_IO, "[output] file = %s: cannot create a temporary file next to it (%s)",
                         cfg->output_file, strerror(errno));
    mode_t mask = umask(0);
    umask(mask);
    struct stat st;
    int rc = STEM_OK;
    if (fchmod(fd, 0666 & ~mask) != 0 || fstat(fd, &st) != 0)
        rc = STEM_FAIL(STEM_ERR_IO, "[output] file = %s: cannot set up %s (%s)", cfg->output_file, name,
                       strerror(errno));
    close(fd);
    if (rc || !keep) {
        if (unlink(name) != 0 && !rc)
            rc = STEM_FAIL(STEM_ERR_IO, "[output] file = %s: cannot remove the test file %s (%s)", cfg->output_file,
                           name, strerror(errno));
        return rc;
    }
    snprintf(t->temp_path, sizeof t->temp_path, "%s", name);
    t->dev = st.st_dev;
    t->ino = st.st_ino;
    stem_signal_cleanup_path(t->temp_path);
    return STEM_OK;
}

int stem_output_checkpointed(const stem_config *cfg)
{
    return cfg->checkpoint == STEM_CHECKPOINT_ON ||
        (cfg->checkpoint == STEM_CHECKPOINT_AUTO && stem_series_active(cfg));
}

void stem_output_checkpoint_dir(const stem_config *cfg, char *out, size_t n)
{
    if (cfg->checkpoint_dir[0])
        snprintf(out, n, "%s", cfg->checkpoint_dir);
    else if (snprintf(out, n, "%s.checkpoint", cfg->output_file) >= (int)n)
        out[n - 1] = 0; /* a path this long fails to open */
}

/* path as an absolute one, its directory resolved (links included), its last name as given:
 * two spellings of one place compare equal whether or not it exists yet. */
static void place_of(const char *path, char *out, size_t n)
{
    char dbuf[STEM_PATH_MAX], bbuf[STEM_PATH_MAX], dir[PATH_MAX];
    snprintf(dbuf, sizeof dbuf, "%s", path);
    snprintf(bbuf, sizeof bbuf, "%s", path);
    size_t len = strlen(bbuf);
    while (len > 1 && bbuf[len - 1] == '/') bbuf[--len] = 0; /* "dir/" names dir */
    const char *base = basename(bbuf);
    if (realpath(dirname(dbuf), dir))
        snprintf(out, n, "%s/%s", strcmp(dir, "/") ? dir : "", base);
    else
        snprintf(out, n, "%s", path);
}

/* The files and directories a run writes must be apart: the output, the checkpoint directory,
 * [compute] fft_wisdom and fft_cache (else the run computes everything and then finds another
 * of them in the output's place). Exit 3 naming both keys. */
static int check_apart(const stem_config *cfg)
{
    char ck[STEM_PATH_MAX], place[4][PATH_MAX + STEM_PATH_MAX];
    stem_output_checkpoint_dir(cfg, ck, sizeof ck);
    int checkpointed = stem_output_checkpointed(cfg);
    int cache = cfg->fft_cache[0] && strcmp(cfg->fft_cache, "auto") && strcmp(cfg->fft_cache, "off");
    const char *key[4] = {"[output] file", "the checkpoint directory ([output] checkpoint_dir)", "[compute] fft_wisdom",
                          "[compute] fft_cache"};
    const char *path[4] = {cfg->output_file, checkpointed ? ck : NULL, cfg->fft_wisdom[0] ? cfg->fft_wisdom : NULL,
                           cache ? cfg->fft_cache : NULL};
    for (int i = 0; i < 4; i++)
        if (path[i]) place_of(path[i], place[i], sizeof place[i]);
    for (int i = 0; i < 4; i++)
        for (int j = i + 1; j < 4; j++)
            if (path[i] && path[j] && !strcmp(place[i], place[j]))
                return STEM_FAIL(STEM_ERR_CONFIG,
                                 "%s and %s are the same place, %s: a run writes both, one would overwrite or claim "
                                 "the other; give them paths of their own",
                                 key[i], key[j], place[i]);
    return STEM_OK;
}

static int prepare_local(const stem_config *cfg, const stem_input_ref *inputs, int n_inputs, int reserve,
                         stem_output_target *t)
{
    if (!cfg->output_file[0]) return STEM_FAIL(STEM_ERR_IO, "[output] file is empty");
    STEM_TRY(check_apart(cfg));
    STEM_TRY(check_dir(cfg->output_file));
    STEM_TRY(check_existing(cfg, inputs, n_inputs));
    report_stale(cfg->output_file);
    return reserve_temp(cfg, reserve, t);
}

int stem_output_target_prepare(MPI_Comm comm, const stem_config *cfg, const stem_input_ref *inputs, int n_inputs,
                               int reserve, stem_output_target *t)
{
    int rank, rc = STEM_OK;
    memset(t, 0, sizeof *t);
    snprintf(t->final_path, sizeof t->final_path, "%s", cfg->output_file);
    t->overwrite = cfg->overwrite;
    if (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS)
        return STEM_FAIL(STEM_ERR_MPI, "MPI_Comm_rank failed while checking [output] file = %s", cfg->output_file);
    /* one rank looks at the file system, so the answer (and message) is single */
    if (rank == 0) rc = prepare_local(cfg, inputs, n_inputs, reserve, t);
    if (MPI_Bcast(&rc, 1, MPI_INT, 0, comm) != MPI_SUCCESS ||
        MPI_Bcast(t->temp_path, (int)sizeof t->temp_path, MPI_CHAR, 0, comm) != MPI_SUCCESS)
        return STEM_FAIL(STEM_ERR_MPI, "MPI_Bcast failed while checking [output] file = %s", cfg->output_file);
    return rc;
}

/* -------------------------------------------------------------- writing */

int stem_output_target_verify(const stem_output_target *t)
{
    struct stat st;
    if (lstat(t->temp_path, &st) != 0)
        return STEM_FAIL(STEM_ERR_IO,
                         "[output] file = %s: the temporary file %s has gone (%s): was its directory removed?",
                         t->final_path, t->temp_path, strerror(errno));
    if (!S_ISREG(st.st_mode) || st.st_dev != t->dev || st.st_ino != t->ino)
        return STEM_FAIL(STEM_ERR_IO,
                         "[output] file = %s: the temporary file %s was replaced by something else while the "
                         "job ran; not writing through it",
                         t->final_path, t->temp_path);
    return STEM_OK;
}

int stem_output_target_keep(const stem_output_target *t, const char *kept)
{
    if (link(t->temp_path, kept) == 0) return STEM_OK;
    if (errno == EXDEV || errno == EPERM || errno == EMLINK || errno == ENOTSUP) {
        stem_warn("the 4D patterns cannot be kept in the checkpoint (%s: %s, on another file system than the "
                  "output?): a stopped run will compute them again",
                  kept, strerror(errno));
        return STEM_OUTPUT_NOT_KEPT;
    }
    return STEM_FAIL(STEM_ERR_IO, "checkpoint: cannot link the output's temporary %s as %s: %s", t->temp_path, kept,
                     strerror(errno));
}

/* A killed run's names of the kept patterns: its temporary "<file>.XXXXXX.incomplete" (a second
 * link to the same file: this campaign's) and that run's reserve beside it, removed so that the
 * published result has one name. */
static void remove_killed_names(const stem_output_target *t, const struct stat *kept)
{
    char dbuf[STEM_PATH_MAX], bbuf[STEM_PATH_MAX], path[STEM_OUTPUT_NAME_MAX + 16];
    snprintf(dbuf, sizeof dbuf, "%s", t->final_path);
    snprintf(bbuf, sizeof bbuf, "%s", t->final_path);
    const char *dir = dirname(dbuf), *base = basename(bbuf);
    size_t lb = strlen(base), lt = strlen(TAG_TEMPLATE), ls = strlen(STEM_OUTPUT_TEMP_SUFFIX);
    DIR *d = opendir(dir);
    struct dirent *e;
    struct stat st;
    while (d && (e = readdir(d))) {
        if (strlen(e->d_name) != lb + lt + ls || strncmp(e->d_name, base, lb) || e->d_name[lb] != '.' ||
            strcmp(e->d_name + lb + lt, STEM_OUTPUT_TEMP_SUFFIX))
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (lstat(path, &st) || st.st_dev != kept->st_dev || st.st_ino != kept->st_ino || !strcmp(path, t->temp_path))
            continue;
        if (!unlink(path)) stem_info("removed %s: a stopped run's name of the 4D patterns resumed now", path);
        snprintf(path, sizeof path, "%s/%.*sreserve%s", dir, (int)(lb + lt + 1), e->d_name, STEM_OUTPUT_TEMP_SUFFIX);
        if (!lstat(path, &st) && S_ISREG(st.st_mode) && !unlink(path)) stem_info("removed %s, its reserve", path);
    }
    if (d) closedir(d);
}

int stem_output_target_adopt(stem_output_target *t, const char *kept)
{
    struct stat st;
    if (!lstat(kept, &st) && S_ISREG(st.st_mode) && st.st_nlink > 1) remove_killed_names(t, &st);
    if (lstat(kept, &st) || !S_ISREG(st.st_mode))
        return STEM_FAIL(STEM_ERR_IO,
                         "checkpoint: the 4D patterns of the finished blocks, %s, are %s: run with --restart to "
                         "compute them again",
                         kept, errno == ENOENT ? "gone" : "not a regular file");
    if (rename(kept, t->temp_path))
        return STEM_FAIL(STEM_ERR_IO, "checkpoint: cannot move %s to the output's temporary %s: %s", kept, t->temp_path,
                         strerror(errno));
    if (lstat(t->temp_path, &st)) return STEM_FAIL(STEM_ERR_IO, "output %s: %s", t->temp_path, strerror(errno));
    t->dev = st.st_dev;
    t->ino = st.st_ino;
    int rc = stem_output_target_keep(t, kept);
    return rc == STEM_OUTPUT_NOT_KEPT ? STEM_OK : rc;
}

/* Open MPI's MPI-IO keeps "<file>-<job>-<pid>.lock" beside a file when its shared-memory
 * file pointer cannot be set up (a full disk): ours, since the name holds the temporary's. */
static void remove_mpiio_locks(const stem_output_target *t)
{
    char pattern[STEM_OUTPUT_NAME_MAX + 16];
    snprintf(pattern, sizeof pattern, "%s-*-*.lock", t->temp_path);
    glob_t g;
    if (glob(pattern, GLOB_NOSORT, NULL, &g) != 0) return;
    for (size_t i = 0; i < g.gl_pathc; i++) unlink(g.gl_pathv[i]);
    globfree(&g);
}

void stem_output_target_discard(const stem_output_target *t)
{
    if (!t->temp_path[0]) return;
    stem_output_target_release(t, 0);
    remove_mpiio_locks(t);
    stem_signal_cleanup_path(NULL);
    /* several ranks may race here; only a failure other than "gone" matters */
    if (unlink(t->temp_path) != 0 && errno != ENOENT)
        stem_warn("cannot remove the unfinished output %s: %s", t->temp_path, strerror(errno));
}

/* -------------------------------------------------------------- publish */

/* Another job published first: keep our complete result under its own name. */
static int keep_conflict(const stem_output_target *t)
{
    char kept[STEM_OUTPUT_NAME_MAX];
    size_t stem_len = strlen(t->temp_path) - strlen(STEM_OUTPUT_TEMP_SUFFIX);
    snprintf(kept, sizeof kept, "%.*s.conflict.h5", (int)stem_len, t->temp_path);
    if (rename(t->temp_path, kept) != 0)
        return STEM_FAIL(STEM_ERR_IO,
                         "[output] file = %s appeared while this job ran (another job wrote it); this job's "
                         "complete result stays in %s (renaming it failed: %s)",
                         t->final_path, t->temp_path, strerror(errno));
    return STEM_FAIL(STEM_ERR_IO,
                     "[output] file = %s appeared while this job ran (another job wrote it) and is left as it "
                     "is; this job's complete result is kept as %s",
                     t->final_path, kept);
}

/* Rename without replacing: renameat2 where the file system has it, else a
 * hard link (which fails on an existing name) and an unlink. */
static int publish_noreplace(const stem_output_target *t)
{
    if (renameat2(AT_FDCWD, t->temp_path, AT_FDCWD, t->final_path, RENAME_NOREPLACE) == 0) return STEM_OK;
    if (errno == EEXIST) return keep_conflict(t);
    if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP)
        return STEM_FAIL(STEM_ERR_IO,
                         "[output] file = %s: cannot rename %s to it (%s); the complete result stays there",
                         t->final_path, t->temp_path, strerror(errno));
    if (link(t->temp_path, t->final_path) == 0) {
        if (unlink(t->temp_path) != 0)
            stem_warn("published %s but cannot remove its other name %s: %s", t->final_path, t->temp_path,
                      strerror(errno));
        return STEM_OK;
    }
    if (errno == EEXIST) return keep_conflict(t);
    return STEM_FAIL(STEM_ERR_IO,
                     "[output] file = %s: this file system supports neither a no-replace rename nor hard "
                     "links (%s); the complete result stays in %s (rename it yourself, or set overwrite = true)",
                     t->final_path, strerror(errno), t->temp_path);
}

/* Replace only a regular file (checked again: it may have changed since the start). */
static int publish_replace(const stem_output_target *t)
{
    struct stat st;
    if (stat(t->final_path, &st) == 0 && !S_ISREG(st.st_mode))
        return STEM_FAIL(STEM_ERR_IO,
                         "[output] file = %s is now %s: overwrite replaces regular files only; the complete "
                         "result stays in %s",
                         t->final_path, file_kind(st.st_mode), t->temp_path);
    if (rename(t->temp_path, t->final_path) != 0)
        return STEM_FAIL(STEM_ERR_IO,
                         "[output] file = %s: cannot rename %s to it (%s); the complete result stays there",
                         t->final_path, t->temp_path, strerror(errno));
    return STEM_OK;
}

int stem_output_target_publish(const stem_output_target *t)
{
    stem_output_target_release(t, 0); /* the reserve, if a path above kept any */
    /* a signal now would announce "no result" while the rename makes one */
    stem_signal_hold(1);
    int rc = STEM_OK;
    if (stem_signal_pending())
        rc = stem_signal_status(stem_signal_pending());
    else
        rc = t->overwrite ? publish_replace(t) : publish_noreplace(t);
    stem_signal_cleanup_path(NULL); /* published, kept or already removed: nothing for the handler to remove */
    if (!rc) stem_signal_finished();
    stem_signal_hold(0);
    return rc;
}

void stem_output_target_sibling(const stem_output_target *t, const char *tag, char *out, size_t n)
{
    size_t len = strlen(t->temp_path), suffix = strlen(STEM_OUTPUT_TEMP_SUFFIX);
    if (len >= suffix) len -= suffix;
    snprintf(out, n, "%.*s.%s%s", (int)len, t->temp_path, tag, STEM_OUTPUT_TEMP_SUFFIX);
}

/* ---------------------------------------------------------- disk space */

static void reserve_path(const stem_output_target *t, char *out, size_t n)
{
    stem_output_target_sibling(t, "reserve", out, n);
}

/* Free bytes for an unprivileged writer on path's file system (-1: unknown). */
static double free_bytes(const char *path)
{
    char buf[STEM_OUTPUT_NAME_MAX + 64];
    snprintf(buf, sizeof buf, "%s", path);
    struct statvfs v;
    if (statvfs(dirname(buf), &v) != 0) return -1;
    return (double)v.f_bavail * (double)v.f_frsize;
}

void stem_output_space_note(const char *path, char *out, size_t n)
{
    double free = free_bytes(path);
    if (free >= 0 && free < STEM_OUTPUT_RESERVE_MARGIN)
        snprintf(out, n, "no space left on device: %.0f KiB free on its file system", free / 1024);
    else
        snprintf(out, n, "disk full or quota?");
}

/* The margin as data blocks a file system cannot share or compress away (a pattern, not zeros). */
static int write_margin(int fd)
{
    static unsigned char block[65536];
    uint32_t x = 2463534242u;
    for (size_t i = 0; i < sizeof block; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        block[i] = (unsigned char)x;
    }
    for (off_t at = 0; at < (off_t)STEM_OUTPUT_RESERVE_MARGIN; at += (off_t)sizeof block) {
        ssize_t w = pwrite(fd, block, sizeof block, at);
        if (w != (ssize_t)sizeof block) return w < 0 ? -1 : (errno = ENOSPC, -1);
    }
    return fsync(fd);
}

/* The refusal of a disk without room for the output (reserve_local and the dry run). */
static int no_room(const stem_output_target *t, double file_bytes, double later_bytes, double free, int err)
{
    return STEM_FAIL(STEM_ERR_IO,
                     "[output] file = %s: no space left on device (disk full, or a quota): the output "
                     "needs about %.1f MiB%s and 1 MiB to end cleanly, its file system has %.1f MiB free (%s); "
                     "free space or choose another directory",
                     t->final_path, file_bytes / 1048576.0,
                     later_bytes > 0 ? " twice (the EMD conversion writes a copy)" : "",
                     free > 0 ? free / 1048576.0 : 0.0, strerror(err));
}

/* Rank 0: the margin written, the rest allocated (fallocate; where the file system cannot,
 * its free space is compared instead). */
static int reserve_local(stem_output_target *t, double file_bytes, double later_bytes)
{
    char path[STEM_OUTPUT_NAME_MAX + 16];
    reserve_path(t, path, sizeof path);
    /* the later copy has its own margin for its own close */
    double later = later_bytes > 0 ? later_bytes + STEM_OUTPUT_RESERVE_MARGIN : 0;
    double need = STEM_OUTPUT_RESERVE_MARGIN + file_bytes + later;
    /* held (flock) while this run lives, and released by the kernel however it ends: a later run
     * that can take the lock knows the reserve's run is gone (killed) and reclaims the space. It
     * is locked under another name first, so no run ever finds it unlocked while this one lives. */
    char made[STEM_OUTPUT_NAME_MAX + 32];
    snprintf(made, sizeof made, "%s.new", path);
    int fd = open(made, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600), err = 0;
    if (fd < 0)
        return STEM_FAIL(STEM_ERR_IO, "[output] file = %s: cannot create the space reserve %s: %s", t->final_path, made,
                         strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB) != 0 || rename(made, path) != 0) {
        err = errno;
        unlink(made);
        close(fd);
        return STEM_FAIL(STEM_ERR_IO, "[output] file = %s: cannot create the space reserve %s: %s", t->final_path, path,
                         strerror(err));
    }
    stem_signal_cleanup_slot(STEM_SIGNAL_SLOT_RESERVE, path);
    if (write_margin(fd) != 0) err = errno;
    if (!err && fallocate(fd, 0, (off_t)STEM_OUTPUT_RESERVE_MARGIN, (off_t)(need - STEM_OUTPUT_RESERVE_MARGIN)) != 0) {
        err = errno;
        double free = free_bytes(path);
        if (err != ENOSPC && err != EDQUOT) err = free >= 0 && free < need - STEM_OUTPUT_RESERVE_MARGIN ? ENOSPC : 0;
    }
    if (!err) { /* the descriptor stays open: it holds the lock until the process ends */
        t->reserve_later = later;
        return STEM_OK;
    }
    close(fd);
    unlink(path);
    stem_signal_cleanup_slot(STEM_SIGNAL_SLOT_RESERVE, NULL);
    return no_room(t, file_bytes, later_bytes, free_bytes(path), err);
}

int stem_output_target_room(MPI_Comm comm, const stem_output_target *t, double file_bytes, double later_bytes)
{
    int rank, rc = STEM_OK;
    if (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS)
        return STEM_FAIL(STEM_ERR_MPI, "MPI_Comm_rank failed while checking the space for %s", t->final_path);
    double later = later_bytes > 0 ? later_bytes + STEM_OUTPUT_RESERVE_MARGIN : 0;
    double need = STEM_OUTPUT_RESERVE_MARGIN + file_bytes + later, free = rank == 0 ? free_bytes(t->final_path) : -1;
    if (rank == 0 && free >= 0 && free < need) rc = no_room(t, file_bytes, later_bytes, free, ENOSPC);
    if (MPI_Bcast(&rc, 1, MPI_INT, 0, comm) != MPI_SUCCESS)
        return STEM_FAIL(STEM_ERR_MPI, "MPI_Bcast failed while checking the space for %s", t->final_path);
    return rc;
}

int stem_output_target_reserve(MPI_Comm comm, stem_output_target *t, double file_bytes, double later_bytes)
{
    int rank, rc = STEM_OK;
    if (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS)
        return STEM_FAIL(STEM_ERR_MPI, "MPI_Comm_rank failed while reserving space for %s", t->final_path);
    if (rank == 0 && t->temp_path[0]) rc = reserve_local(t, file_bytes, later_bytes);
    if (MPI_Bcast(&rc, 1, MPI_INT, 0, comm) != MPI_SUCCESS)
        return STEM_FAIL(STEM_ERR_MPI, "MPI_Bcast failed while reserving space for %s", t->final_path);
    if (rc && rank == 0) stem_output_target_discard(t);
    return rc;
}

void stem_output_target_release(const stem_output_target *t, double keep)
{
    if (!t->temp_path[0]) return;
    char path[STEM_OUTPUT_NAME_MAX + 16];
    reserve_path(t, path, sizeof path);
    if (keep > 0 && truncate(path, (off_t)keep) == 0) return;
    if (truncate(path, 0) != 0 && errno != ENOENT) /* its space back now, though the locking descriptor stays open */
        stem_warn("cannot empty the space reserve %s: %s", path, strerror(errno));
    if (unlink(path) != 0 && errno != ENOENT)
        stem_warn("cannot remove the space reserve %s: %s", path, strerror(errno));
    stem_signal_cleanup_slot(STEM_SIGNAL_SLOT_RESERVE, NULL);
}
