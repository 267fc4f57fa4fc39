/* Campaign checkpoints on disk (checkpoint.h): the directory, its manifest, lock and FFT-plans
 * note, the S-matrix unit files; the state file is checkpoint_state.c's. */
#include "checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "../io/input_file.h"
#include "../src/signals.h"
#include "../comm/comm.h"
#include "checkpoint_files.h"
#include "consistency.h"

#define MANIFEST_HEAD "stemsim checkpoint 2\n"
#define MANIFEST_HEAD_V1 "stemsim checkpoint 1\n"
#define UNIT_FORMAT 1u
#define LOCK_NAME "stemsim.lock"
#define PLANS_NAME "fft_plans" /* the FFT plans the units were computed with (note_plans) */

typedef struct {
    char magic[8];
    uint32_t format, unit;
    uint64_t identity, bytes, checksum;
    uint64_t reserved;
} unit_header;
_Static_assert(sizeof(unit_header) == 48, "unit header layout");

static void unit_path(const stem_checkpoint *ck, int unit, const char *suffix, char *out, size_t n)
{
    snprintf(out, n, "%s/unit_%07d%s", ck->dir, unit, suffix);
}

/* Write path atomically: path.tmp, fsync, rename, directory fsync. kill_after: test hook. */
static int write_atomic(const char *dir, const char *path, const void *a, size_t na, const void *b, size_t nb,
                        int kill_halfway)
{
    char tmp[STEM_PATH_MAX + 64];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = stem_ckfile_create_exclusive(tmp);
    if (fd < 0) return STEM_ERR_IO;
    int ok = stem_ckfile_write_all(fd, a, na) == 0;
    if (ok && kill_halfway) { /* test hook: a job killed in the middle of a checkpoint write */
        ok = stem_ckfile_write_all(fd, b, nb / 2) == 0;
        fsync(fd);
        raise(SIGKILL);
    }
    ok = ok && stem_ckfile_write_all(fd, b, nb) == 0 && fsync(fd) == 0;
    return stem_ckfile_publish_temporary(dir, fd, ok, tmp, path);
}

/* The first line where two identity texts differ, for the refusal. */
static void first_difference(const char *was, const char *now, char *out, size_t n)
{
    while (*was || *now) {
        size_t lw = strcspn(was, "\n"), ln = strcspn(now, "\n");
        if (lw != ln || strncmp(was, now, lw)) {
            snprintf(out, n, "checkpoint has '%.*s', this run '%.*s'", (int)(lw > 200 ? 200 : lw), was,
                     (int)(ln > 200 ? 200 : ln), now);
            return;
        }
        was += lw + (was[lw] == '\n');
        now += ln + (now[ln] == '\n');
    }
    snprintf(out, n, "(no line differs)");
}

static int manifest_text(const stem_checkpoint *ck, const char *identity, char **out)
{
    size_t n = strlen(identity) + 128;
    if (!(*out = stem_alloc(n, "checkpoint manifest"))) return STEM_ERR_MEMORY;
    snprintf(*out, n, MANIFEST_HEAD "units = %d\nunit_bytes = %zu\nstate_bytes = %zu\n%s", ck->n_units, ck->unit_bytes,
             ck->state_bytes, identity);
    return STEM_OK;
}

/* An existing manifest at path must be this campaign's (text mine). */
static int compare_manifest(const stem_checkpoint *ck, const char *path, const char *mine)
{
    char *theirs = NULL;
    size_t len;
    int err = stem_input_read_all(path, "checkpoint manifest", STEM_ERR_IO, &theirs, &len);
    if (!err && !strncmp(theirs, MANIFEST_HEAD_V1, strlen(MANIFEST_HEAD_V1)))
        err = STEM_FAIL(STEM_ERR_CONFIG,
                        "checkpoint %s is checkpoint version 1 (one file per unit, stemsim before the exact running "
                        "sums), which this stemsim (checkpoint version 2) cannot resume: finish it with the stemsim "
                        "that made it, or run with --restart to discard it (docs/campaigns.md)",
                        ck->dir);
    else if (!err && strcmp(theirs, mine) && (!len || theirs[len - 1] != '\n' || !strncmp(theirs, mine, len)))
        err = STEM_FAIL(STEM_ERR_IO,
                        "checkpoint %s: its manifest is truncated (%zu bytes, ending mid-line): damaged storage, or a "
                        "disk that filled while it was written; its sums cannot be trusted to be this campaign's. "
                        "Run with --restart to discard it",
                        ck->dir, len);
    else if (!err && strcmp(theirs, mine)) {
        char diff[512];
        first_difference(theirs, mine, diff, sizeof diff);
        err = STEM_FAIL(STEM_ERR_CONFIG,
                        "checkpoint %s belongs to a different campaign (%s): the config (outside [output]), the model, "
                        "the scattering table or the stemsim version changed. Run with --restart to discard it, or "
                        "set [output] checkpoint_dir elsewhere",
                        ck->dir, diff);
    }
    free(theirs);
    return err;
}

/* A new checkpoint's manifest, or an existing one that must match. */
static int check_manifest(const stem_checkpoint *ck, const char *identity, int *resumed)
{
    char path[STEM_PATH_MAX + 32], *mine;
    snprintf(path, sizeof path, "%s/manifest", ck->dir);
    STEM_TRY(manifest_text(ck, identity, &mine));
    struct stat st;
    *resumed = stat(path, &st) == 0;
    int err = *resumed ? compare_manifest(ck, path, mine) : write_atomic(ck->dir, path, mine, strlen(mine), "", 0, 0);
    free(mine);
    return err;
}

/* Unit file: whole, ours, and its payload what its checksum says. */
static int check_unit(const stem_checkpoint *ck, int unit, const char *path)
{
    FILE *f; /* without blocking: a FIFO, device or directory under a unit's name is refused */
    STEM_TRY(stem_input_open(path, "checkpoint unit", STEM_ERR_IO, &f));
    int fd = fileno(f);
    unit_header h;
    struct stat st;
    int err = STEM_OK;
    if (fstat(fd, &st) || stem_ckfile_read_at(fd, &h, sizeof h, 0) || memcmp(h.magic, "STEMUNIT", 8) ||
        h.format != UNIT_FORMAT || h.unit != (uint32_t)unit || h.identity != ck->identity ||
        h.bytes != ck->unit_bytes || (uint64_t)st.st_size != sizeof h + h.bytes)
        err = STEM_ERR_IO;
    unsigned long long sum = STEM_HASH_SEED;
    char *buf = err ? NULL : stem_alloc(1 << 20, "checkpoint check buffer");
    for (size_t at = 0; !err && buf && at < ck->unit_bytes; at += 1 << 20) {
        size_t n = ck->unit_bytes - at < (1 << 20) ? ck->unit_bytes - at : (1 << 20);
        if (stem_ckfile_read_at(fd, buf, n, (off_t)(sizeof h + at)))
            err = STEM_ERR_IO;
        else
            sum = stem_hash_bytes(sum, buf, n);
    }
    if (!err && !buf && ck->unit_bytes) err = STEM_ERR_MEMORY;
    if (!err && sum != h.checksum) err = STEM_ERR_IO;
    free(buf);
    fclose(f);
    if (err == STEM_ERR_IO)
        return STEM_FAIL(STEM_ERR_IO,
                         "checkpoint: %s is damaged or not this campaign's (header, size or checksum); "
                         "delete it to compute that unit again, or run with --restart",
                         path);
    return err;
}

/* A name a checkpoint holds: manifest, fft_plans, unit_NNNNNNN, each also with .tmp. */
static int checkpoint_name(const char *name)
{
    if (!strcmp(name, "manifest") || !strcmp(name, "manifest.tmp")) return 1;
    if (!strcmp(name, PLANS_NAME) || !strcmp(name, PLANS_NAME ".tmp")) return 1;
    if (!strcmp(name, STEM_CHECKPOINT_STATE_NAME) || !strcmp(name, STEM_CHECKPOINT_STATE_NAME ".tmp")) return 1;
    if (!strcmp(name, STEM_CHECKPOINT_PATTERNS_NAME)) return 1;
    if (strncmp(name, "unit_", 5)) return 0;
    for (int i = 5; i < 12; i++)
        if (name[i] < '0' || name[i] > '9') return 0;
    return !name[12] || !strcmp(name + 12, ".tmp");
}

/* --restart: empties the checkpoint, and only a checkpoint: the directory must hold a
 * stemsim manifest, and only the names it writes are removed (a model called
 * unit_cell.xyz beside it stays); a link under such a name is refused. With remove = 0
 * (--dry-run) nothing is removed: *count says how many files would be. */
static int restart_empty(const stem_checkpoint *ck, int remove, int *count)
{
    char path[STEM_PATH_MAX + 300], *text = NULL;
    size_t len = 0;
    snprintf(path, sizeof path, "%s/manifest", ck->dir);
    struct stat st;
    *count = 0;
    if (lstat(path, &st)) return STEM_OK; /* no checkpoint yet: nothing to empty */
    if (!S_ISREG(st.st_mode) || stem_input_read_all(path, "checkpoint manifest", STEM_ERR_IO, &text, &len) ||
        (strncmp(text, MANIFEST_HEAD, strlen(MANIFEST_HEAD)) &&
         strncmp(text, MANIFEST_HEAD_V1, strlen(MANIFEST_HEAD_V1)))) {
        free(text);
        return STEM_FAIL(STEM_ERR_IO, "--restart: %s is not a stemsim checkpoint manifest: nothing in %s is removed",
                         path, ck->dir);
    }
    free(text);
    DIR *d = opendir(ck->dir);
    if (!d) return STEM_FAIL(STEM_ERR_IO, "--restart: cannot read %s: %s", ck->dir, strerror(errno));
    int err = STEM_OK;
    for (struct dirent *e; !err && (e = readdir(d));) {
        if (!checkpoint_name(e->d_name)) continue;
        snprintf(path, sizeof path, "%s/%s", ck->dir, e->d_name);
        ++*count;
        if (remove) err = stem_ckfile_remove_stale(path);
    }
    closedir(d);
    return err;
}

/* Rank 0: the directory's lock (LOCK_NAME), held until stem_checkpoint_free: one campaign at
 * a time. An existing lock file (a finished or killed job's) is reused, not removed. */
static int take_lock(stem_checkpoint *ck)
{
    char path[STEM_PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/" LOCK_NAME, ck->dir);
    ck->lock_fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    ck->lock_created = ck->lock_fd >= 0; /* only a lock file this job created is removed with the checkpoint */
    if (ck->lock_fd < 0 && errno == EEXIST) ck->lock_fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (ck->lock_fd < 0)
        return STEM_FAIL(STEM_ERR_IO, "checkpoint: cannot open the lock %s: %s", path, strerror(errno));
    if (flock(ck->lock_fd, LOCK_EX | LOCK_NB)) {
        int e = errno;
        close(ck->lock_fd);
        ck->lock_fd = -1;
        if (e == EWOULDBLOCK)
            return STEM_FAIL(STEM_ERR_IO,
                             "checkpoint: %s is in use by another running campaign (it holds %s): wait for "
                             "it to finish, or give this job another [output] file or checkpoint_dir",
                             ck->dir, path);
        if (e == ENOLCK || e == EOPNOTSUPP || e == ENOSYS) { /* a file system without locks: say so, go on */
            stem_warn("checkpoint: %s cannot be locked (%s): two campaigns given this directory at once would not be "
                      "kept apart",
                      ck->dir, strerror(e));
            return STEM_OK;
        }
        return STEM_FAIL(STEM_ERR_IO, "checkpoint: cannot lock %s: %s", path, strerror(e));
    }
    return STEM_OK;
}

/* Rank 0: the FFT plans the units are computed with (the shared wisdom's hash; "estimate"),
 * written beside the manifest when absent. A resume under other plans (another CPU, another
 * cache) runs, warned: its units and the stored ones differ at rounding level (~1e-7), so the
 * result is not the bits an uninterrupted run gives. */
static int note_plans(const stem_checkpoint *ck, const char *plans)
{
    char path[STEM_PATH_MAX + 32], mine[96];
    snprintf(path, sizeof path, "%s/" PLANS_NAME, ck->dir);
    snprintf(mine, sizeof mine, "%s\n", plans[0] ? plans : "estimate");
    if (access(path, F_OK)) return write_atomic(ck->dir, path, mine, strlen(mine), "", 0, 0);
    char *was = NULL;
    size_t len = 0;
    STEM_TRY(stem_input_read_all(path, "checkpoint FFT plans", STEM_ERR_IO, &was, &len));
    if (strcmp(was, mine))
        stem_warn("checkpoint %s: its units were computed with other FFT plans (%.*s) than this run's (%.*s): "
                  "another CPU or wisdom cache; the results mix the two at rounding level (~1e-7) and are not the "
                  "bits of an uninterrupted run (resume where it started, or use [compute] fft_planning = estimate "
                  "for plans every machine shares)",
                  ck->dir, (int)strcspn(was, "\n"), was, (int)strcspn(mine, "\n"), mine);
    free(was);
    return STEM_OK;
}

/* A directory without a stemsim manifest (a new campaign's, e.g. checkpoint_dir = .) must not
 * hold a name a checkpoint writes (a user's fft_plans, state or unit_0000001): stemsim neither
 * trusts, overwrites nor removes a file it did not create, so it refuses by name. */
static int no_foreign_names(const stem_checkpoint *ck)
{
    DIR *d = opendir(ck->dir);
    if (!d) return STEM_FAIL(STEM_ERR_IO, "checkpoint: cannot read %s: %s", ck->dir, strerror(errno));
    char name[256] = "";
    for (struct dirent *e; !name[0] && (e = readdir(d));)
        if (checkpoint_name(e->d_name)) snprintf(name, sizeof name, "%s", e->d_name);
    closedir(d);
    if (!name[0]) return STEM_OK;
    return STEM_FAIL(STEM_ERR_IO,
                     "checkpoint: %s/%s exists but %s holds no stemsim checkpoint manifest: stemsim neither reads, "
                     "replaces nor removes a file it did not create; move it, or set [output] checkpoint_dir to a "
                     "directory of its own",
                     ck->dir, name, ck->dir);
}

/* Rank 0: the directory ready and locked, its manifest checked, its state read (the units its sums hold). */
static int open_on_root(stem_checkpoint *ck, const char *identity, const char *plans, int restart)
{
    if (mkdir(ck->dir, 0755) && errno != EEXIST)
        return STEM_FAIL(STEM_ERR_IO, "checkpoint: cannot create directory %s: %s", ck->dir, strerror(errno));
    struct stat st;
    if (stat(ck->dir, &st) || !S_ISDIR(st.st_mode))
        return STEM_FAIL(STEM_ERR_IO, "checkpoint: %s exists and is not a directory", ck->dir);
    STEM_TRY(take_lock(ck));
    int removed;
    if (restart) STEM_TRY(restart_empty(ck, 1, &removed));
    char path[STEM_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/manifest", ck->dir);
    struct stat manifest;
    int err = lstat(path, &manifest) ? no_foreign_names(ck) : STEM_OK; /* before anything is written */
    if (err && ck->lock_created) { /* the refusal leaves nothing of this job's behind */
        snprintf(path, sizeof path, "%s/" LOCK_NAME, ck->dir);
        unlink(path);
    }
    STEM_TRY(err);
    int resumed;
    STEM_TRY(check_manifest(ck, identity, &resumed));
    ck->lock_ours = ck->lock_created || resumed; /* a lock a killed job of this campaign left */
    STEM_TRY(note_plans(ck, plans));
    stem_checkpoint_state_path(ck, ".tmp", path, sizeof path);
    STEM_TRY(stem_ckfile_remove_stale(path)); /* a store a killed job left half done */
    STEM_TRY(stem_checkpoint_read_state(ck, 0));
    for (int u = 0; u < ck->n_units && ck->unit_bytes; u++) { /* the S-matrices kept of the units the sums hold */
        unit_path(ck, u, ".tmp", path, sizeof path);
        STEM_TRY(stem_ckfile_remove_stale(path));
        unit_path(ck, u, "", path, sizeof path);
        if (ck->done[u]) STEM_TRY(check_unit(ck, u, path));
    }
    return STEM_OK;
}

/* Whether another process holds a flock on path (Linux's /proc/locks lists the locks of
 * this node's processes by device and inode): looked up, never taken, so that a dry run
 * cannot turn a campaign starting at that moment away. */
static int lock_held_elsewhere(const char *path)
{
    struct stat st;
    FILE *f = stat(path, &st) ? NULL : fopen("/proc/locks", "r");
    if (!f) return 0;
    char line[256];
    int held = 0;
    while (!held && fgets(line, sizeof line, f)) {
        char kind[16];
        unsigned maj, min;
        unsigned long long ino;
        long pid;
        /* "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF" (device numbers in hex) */
        if (sscanf(line, "%*s %15s %*s %*s %ld %x:%x:%llu", kind, &pid, &maj, &min, &ino) == 5 &&
            !strcmp(kind, "FLOCK") && ino == (unsigned long long)st.st_ino && maj == major(st.st_dev) &&
            min == minor(st.st_dev) && pid != (long)getpid())
            held = 1;
    }
    fclose(f);
    return held;
}

/* The units a real run would find (none when the manifest is absent); refuses as it would. */
static int survey_units(stem_checkpoint *ck, const char *identity, int *found)
{
    char path[STEM_PATH_MAX + 32], *mine;
    snprintf(path, sizeof path, "%s/manifest", ck->dir);
    struct stat st;
    *found = 0;
    if (stat(path, &st)) return STEM_OK;
    STEM_TRY(manifest_text(ck, identity, &mine));
    int err = compare_manifest(ck, path, mine);
    free(mine);
    if (!err) err = stem_checkpoint_read_state(ck, 1);
    *found = ck->n_done;
    return err;
}

/* Rank 0 of a dry run: what the real run would do with the directory, printed; its refusals
 * returned. Nothing is created, locked, removed or written. */
static int survey_on_root(stem_checkpoint *ck, const char *identity, int restart)
{
    if (!(ck->done = stem_calloc((size_t)ck->n_units + 1, 1, "checkpoint map"))) return STEM_ERR_MEMORY;
    struct stat st;
    char lock[STEM_PATH_MAX + 16];
    if (stat(ck->dir, &st)) {
        printf("checkpoint: %s does not exist yet: a real run creates it and computes all %d units\n", ck->dir,
               ck->n_units);
        return STEM_OK;
    }
    if (!S_ISDIR(st.st_mode)) return STEM_FAIL(STEM_ERR_IO, "checkpoint: %s exists and is not a directory", ck->dir);
    snprintf(lock, sizeof lock, "%s/" LOCK_NAME, ck->dir);
    if (lock_held_elsewhere(lock))
        return STEM_FAIL(STEM_ERR_IO,
                         "checkpoint: %s is in use by another running campaign (it holds %s): wait for "
                         "it to finish, or give this job another [output] file or checkpoint_dir",
                         ck->dir, lock);
    int files, found;
    if (restart) {
        STEM_TRY(restart_empty(ck, 0, &files));
        printf("checkpoint: --restart: a real run removes the %d checkpoint file%s in %s and computes all %d units\n",
               files, files == 1 ? "" : "s", ck->dir, ck->n_units);
        return STEM_OK;
    }
    STEM_TRY(survey_units(ck, identity, &found));
    printf("checkpoint: %s holds %d of %d units of this campaign (verified): a real run %s %d\n", ck->dir, found,
           ck->n_units, found ? "resumes and computes the other" : "computes all", ck->n_units - found);
    return STEM_OK;
}

int stem_checkpoint_open(stem_checkpoint *ck, MPI_Comm comm, const char *dir, const char *identity,
                         const char *fft_plans, int n_units, size_t unit_bytes, size_t state_bytes, int restart)
{
    int rank;
    memset(ck, 0, sizeof *ck);
    ck->state_bytes = state_bytes;
    ck->store_fd = -1;
    STEM_MPI_CALL(MPI_Comm_rank(comm, &rank));
    snprintf(ck->dir, sizeof ck->dir, "%s", dir);
    ck->identity = stem_hash_bytes(STEM_HASH_SEED, identity, strlen(identity));
    ck->n_units = n_units;
    ck->unit_bytes = unit_bytes;
    ck->lock_fd = -1;
    ck->done = stem_calloc((size_t)n_units, 1, "checkpoint map");
    ck->verified = stem_calloc((size_t)n_units, 1, "checkpoint map");
    int err = ck->done && ck->verified ? STEM_OK : STEM_ERR_MEMORY;
    err = stem_mpi_agree(err, comm);
    if (!err && rank == 0) err = open_on_root(ck, identity, fft_plans, restart);
    err = stem_mpi_agree(err, comm);
    if (!err) err = stem_mpi_bcast(ck->done, (size_t)n_units, 0, comm);
    if (!err) STEM_MPI_CALL(MPI_Bcast(&ck->n_done, 1, MPI_INT, 0, comm));
    if (!err) STEM_MPI_CALL(MPI_Bcast(&ck->has_state, 1, MPI_INT, 0, comm));
    return err;
}

int stem_checkpoint_survey(MPI_Comm comm, const char *dir, const char *identity, int n_units, size_t unit_bytes,
                           size_t state_bytes, int restart)
{
    int rank;
    stem_checkpoint ck = {
        .n_units = n_units, .unit_bytes = unit_bytes, .state_bytes = state_bytes, .lock_fd = -1, .store_fd = -1};
    STEM_MPI_CALL(MPI_Comm_rank(comm, &rank));
    snprintf(ck.dir, sizeof ck.dir, "%s", dir);
    ck.identity = stem_hash_bytes(STEM_HASH_SEED, identity, strlen(identity));
    int err = rank == 0 ? survey_on_root(&ck, identity, restart) : STEM_OK;
    free(ck.done);
    fflush(stdout);
    return stem_mpi_agree(err, comm);
}

int stem_checkpoint_store(const stem_checkpoint *ck, int unit, const void *payload)
{
    unit_header h = {.format = UNIT_FORMAT, .unit = (uint32_t)unit, .identity = ck->identity, .bytes = ck->unit_bytes};
    memcpy(h.magic, "STEMUNIT", 8);
    h.checksum = stem_hash_bytes(STEM_HASH_SEED, payload, ck->unit_bytes);
    char path[STEM_PATH_MAX + 32];
    unit_path(ck, unit, "", path, sizeof path);
    return write_atomic(ck->dir, path, &h, sizeof h, payload, ck->unit_bytes, 0);
}

int stem_checkpoint_load(stem_checkpoint *ck, int unit, size_t offset, void *buf, size_t bytes)
{
    char path[STEM_PATH_MAX + 32];
    unit_path(ck, unit, "", path, sizeof path);
    if (!ck->verified[unit]) { /* whole and this campaign's now, not only when the campaign opened */
        STEM_TRY(check_unit(ck, unit, path));
        ck->verified[unit] = 1;
    }
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* verified a regular file: never blocks */
    if (fd < 0) return STEM_FAIL(STEM_ERR_IO, "checkpoint: cannot open %s: %s", path, strerror(errno));
    int bad = stem_ckfile_read_at(fd, buf, bytes, (off_t)(sizeof(unit_header) + offset));
    close(fd);
    return bad ? STEM_FAIL(STEM_ERR_IO, "checkpoint: cannot read %zu bytes of %s", bytes, path) : STEM_OK;
}

int stem_checkpoint_remove(const stem_checkpoint *ck)
{
    char path[STEM_PATH_MAX + 32];
    for (int u = 0; u < ck->n_units && ck->unit_bytes; u++) { /* unit files only where this campaign writes them */
        unit_path(ck, u, "", path, sizeof path);
        if (unlink(path) && errno != ENOENT)
            return STEM_FAIL(STEM_ERR_IO, "checkpoint: cannot remove %s: %s", path, strerror(errno));
    }
    stem_checkpoint_state_path(ck, "", path, sizeof path);
    if (unlink(path) && errno != ENOENT)
        return STEM_FAIL(STEM_ERR_IO, "checkpoint: cannot remove %s: %s", path, strerror(errno));
    snprintf(path, sizeof path, "%s/manifest", ck->dir);
    if (unlink(path) && errno != ENOENT)
        return STEM_FAIL(STEM_ERR_IO, "checkpoint: cannot remove %s: %s", path, strerror(errno));
    snprintf(path, sizeof path, "%s/" PLANS_NAME, ck->dir);
    if (unlink(path) && errno != ENOENT)
        return STEM_FAIL(STEM_ERR_IO, "checkpoint: cannot remove %s: %s", path, strerror(errno));
    snprintf(path, sizeof path, "%s/" STEM_CHECKPOINT_PATTERNS_NAME, ck->dir); /* a link: the output keeps its name */
    if (unlink(path) && errno != ENOENT)
        return STEM_FAIL(STEM_ERR_IO, "checkpoint: cannot remove %s: %s", path, strerror(errno));
    /* the lock, held until stem_checkpoint_free: its name goes now if stemsim made it (this job,
     * or a killed one of this campaign, whose manifest was there); a user's file of that name stays */
    snprintf(path, sizeof path, "%s/" LOCK_NAME, ck->dir);
    struct stat st;
    if (ck->lock_ours && !lstat(path, &st) && S_ISREG(st.st_mode) && unlink(path) && errno != ENOENT)
        return STEM_FAIL(STEM_ERR_IO, "checkpoint: cannot remove %s: %s", path, strerror(errno));
    if (rmdir(ck->dir)) stem_warn("checkpoint directory %s left in place: %s", ck->dir, strerror(errno));
    return STEM_OK;
}

void stem_checkpoint_free(stem_checkpoint *ck)
{
    stem_checkpoint_state_abort(ck);
    free(ck->done);
    free(ck->verified);
    ck->done = ck->verified = NULL;
    if (ck->lock_fd >= 0) close(ck->lock_fd); /* the lock goes with it */
    ck->lock_fd = -1;
}
