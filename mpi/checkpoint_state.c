/* The checkpoint's state file (checkpoint.h): the campaign's sums with the units they hold,
 * stored through a temporary renamed over the last state, its checksum fed in pieces as they
 * are written and as a resume reads them back. */
#include "checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../io/input_file.h"
#include "../src/test_hooks.h"
#include "checkpoint_files.h"

#define STATE_FORMAT 2u

/* The state file's header; the done map (n_units bytes) and the payload follow. */
typedef struct {
    char magic[8];
    uint32_t format, n_units;
    uint64_t identity, bytes, checksum;
    uint32_t n_done, reserved;
    uint64_t spare[2];
} state_header;
_Static_assert(sizeof(state_header) == 64, "state header layout");

/* The state's checksum: four 64-bit lanes over 32-byte blocks (multiply and shift), fed in
 * pieces of any size, so that a store and a check of many GiB run at memory speed, not at
 * a byte-wise hash's. */
static void state_hash_init(state_hash *h)
{
    memset(h, 0, sizeof *h);
    for (int k = 0; k < 4; k++) h->lane[k] = 0x243F6A8885A308D3ULL * (uint64_t)(k + 1);
}

static void state_hash_block(state_hash *h, const unsigned char *b)
{
    for (int k = 0; k < 4; k++) {
        uint64_t w;
        memcpy(&w, b + 8 * k, 8);
        uint64_t x = (h->lane[k] ^ w) * 0x9E3779B97F4A7C15ULL;
        h->lane[k] = x ^ (x >> 29);
    }
}

static void state_hash_update(state_hash *h, const void *data, size_t n)
{
    const unsigned char *p = data;
    h->total += n;
    if (h->n_tail) {
        size_t take = 32 - h->n_tail < n ? 32 - h->n_tail : n;
        memcpy(h->tail + h->n_tail, p, take);
        h->n_tail += take, p += take, n -= take;
        if (h->n_tail < 32) return;
        state_hash_block(h, h->tail);
        h->n_tail = 0;
    }
    for (; n >= 32; p += 32, n -= 32) state_hash_block(h, p);
    memcpy(h->tail, p, n);
    h->n_tail = n;
}

static uint64_t state_hash_final(state_hash *h)
{
    memset(h->tail + h->n_tail, 0, 32 - h->n_tail);
    memcpy(h->tail + 24, &h->total, 8); /* the length, so that trailing zeros count */
    state_hash_block(h, h->tail);
    uint64_t r = 0;
    for (int k = 0; k < 4; k++) r = (r ^ h->lane[k]) * 0x100000001B3ULL + (r >> 31);
    return r;
}

void stem_checkpoint_state_path(const stem_checkpoint *ck, const char *suffix, char *out, size_t n)
{
    snprintf(out, n, "%s/" STEM_CHECKPOINT_STATE_NAME "%s", ck->dir, suffix);
}

static int state_damaged(const char *path, const char *why)
{
    return STEM_FAIL(STEM_ERR_IO,
                     "checkpoint: %s is damaged or not this campaign's (%s): nothing is deleted; run with --restart "
                     "to start the campaign over",
                     path, why);
}

/* The state file: whole and this campaign's (header, size), the done map into ck->done; its
 * checksum over the payload too when `whole` (a dry run), else as the run loads it
 * (stem_checkpoint_state_read in order, stem_checkpoint_state_loaded), so that a resume reads
 * its many GiB once. A missing state is an empty one (no store yet). */
int stem_checkpoint_read_state(stem_checkpoint *ck, int whole)
{
    char path[STEM_PATH_MAX + 32];
    stem_checkpoint_state_path(ck, "", path, sizeof path);
    struct stat st;
    if (lstat(path, &st))
        return errno == ENOENT ? STEM_OK : STEM_FAIL(STEM_ERR_IO, "checkpoint: %s: %s", path, strerror(errno));
    FILE *f;
    STEM_TRY(stem_input_open(path, "checkpoint state", STEM_ERR_IO, &f));
    int fd = fileno(f);
    state_header h;
    const char *why = NULL;
    if (fstat(fd, &st) || stem_ckfile_read_at(fd, &h, sizeof h, 0) || memcmp(h.magic, "STEMSTAT", 8) ||
        h.format != STATE_FORMAT)
        why = "header";
    else if (h.identity != ck->identity || h.n_units != (uint32_t)ck->n_units || h.bytes != ck->state_bytes)
        why = "another campaign's identity or size";
    else if ((uint64_t)st.st_size != sizeof h + h.n_units + h.bytes)
        why = "size";
    state_hash sum;
    state_hash_init(&sum);
    size_t total = (size_t)ck->n_units + (whole ? ck->state_bytes : 0);
    char *buf = why ? NULL : stem_alloc(1 << 22, "checkpoint check buffer");
    int err = !why && !buf ? STEM_ERR_MEMORY : STEM_OK;
    for (size_t at = 0; !why && buf && at < total; at += 1 << 22) {
        size_t n = total - at < (1 << 22) ? total - at : (1 << 22);
        if (stem_ckfile_read_at(fd, buf, n, (off_t)(sizeof h + at)))
            why = "short read";
        else
            state_hash_update(&sum, buf, n);
    }
    ck->load_hash = sum; /* the done map's part: the load adds the payload */
    ck->load_at = 0;
    ck->state_checksum = h.checksum;
    if (!why && !err && whole && state_hash_final(&sum) != h.checksum) why = "checksum";
    if (!why && !err && stem_ckfile_read_at(fd, ck->done, (size_t)ck->n_units, sizeof h)) why = "done map";
    free(buf);
    fclose(f);
    if (why) return state_damaged(path, why);
    if (err) return err;
    ck->n_done = 0;
    for (int u = 0; u < ck->n_units; u++) ck->n_done += ck->done[u] != 0;
    if (ck->n_done != (int)h.n_done) return state_damaged(path, "done count");
    ck->has_state = 1;
    return STEM_OK;
}

int stem_checkpoint_state_read(stem_checkpoint *ck, size_t offset, void *buf, size_t bytes)
{
    char path[STEM_PATH_MAX + 32];
    stem_checkpoint_state_path(ck, "", path, sizeof path);
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC); /* verified a regular file when opened */
    if (fd < 0) return STEM_FAIL(STEM_ERR_IO, "checkpoint: cannot open %s: %s", path, strerror(errno));
    int bad = stem_ckfile_read_at(fd, buf, bytes, (off_t)(sizeof(state_header) + (size_t)ck->n_units + offset));
    close(fd);
    if (bad) return STEM_FAIL(STEM_ERR_IO, "checkpoint: cannot read %zu bytes of %s", bytes, path);
    if (offset == ck->load_at) { /* read in order: the checksum follows */
        state_hash_update(&ck->load_hash, buf, bytes);
        ck->load_at += bytes;
    }
    return STEM_OK;
}

int stem_checkpoint_state_loaded(stem_checkpoint *ck)
{
    char path[STEM_PATH_MAX + 32];
    stem_checkpoint_state_path(ck, "", path, sizeof path);
    if (ck->load_at != ck->state_bytes || state_hash_final(&ck->load_hash) != ck->state_checksum)
        return state_damaged(path, ck->load_at != ck->state_bytes ? "not read whole" : "checksum");
    return STEM_OK;
}

int stem_checkpoint_state_begin(stem_checkpoint *ck, const unsigned char *done)
{
    char path[STEM_PATH_MAX + 32];
    stem_checkpoint_state_path(ck, ".tmp", path, sizeof path);
    ck->n_store = 0;
    for (int u = 0; u < ck->n_units; u++) ck->n_store += done[u] != 0;
    const stem_test_hooks_t *hooks = stem_test_hooks();
    if (hooks->kill_after_units >= 0 && ck->n_done >= hooks->kill_after_units) raise(SIGKILL); /* as a store begins */
    ck->kill_in_store = hooks->kill_in_checkpoint >= 0 && ck->n_store >= hooks->kill_in_checkpoint; /* halfway */
    ck->store_fd = stem_ckfile_create_exclusive(path);
    if (ck->store_fd < 0) return STEM_ERR_IO;
    state_hash_init(&ck->store_sum);
    state_hash_update(&ck->store_sum, done, (size_t)ck->n_units);
    ck->store_at = 0;
    state_header h = {0};
    if (stem_ckfile_write_all(ck->store_fd, &h, sizeof h) ||
        stem_ckfile_write_all(ck->store_fd, done, (size_t)ck->n_units))
        return stem_checkpoint_state_abort(ck),
               STEM_FAIL(STEM_ERR_IO, "checkpoint: cannot write %s: %s (disk full or quota?)", path, strerror(errno));
    return STEM_OK;
}

int stem_checkpoint_state_append(stem_checkpoint *ck, const void *buf, size_t bytes)
{
    char path[STEM_PATH_MAX + 32];
    stem_checkpoint_state_path(ck, ".tmp", path, sizeof path);
    if (ck->kill_in_store && ck->store_at + bytes >= ck->state_bytes / 2) { /* test hook */
        stem_ckfile_write_all(ck->store_fd, buf, bytes / 2);
        fsync(ck->store_fd);
        raise(SIGKILL);
    }
    if (stem_ckfile_write_all(ck->store_fd, buf, bytes)) {
        int e = errno;
        stem_checkpoint_state_abort(ck);
        return STEM_FAIL(STEM_ERR_IO, "checkpoint: cannot write %s: %s (disk full or quota?)", path, strerror(e));
    }
    state_hash_update(&ck->store_sum, buf, bytes);
    ck->store_at += bytes;
    return STEM_OK;
}

void stem_checkpoint_state_abort(stem_checkpoint *ck)
{
    char path[STEM_PATH_MAX + 32];
    if (ck->store_fd <= 0 || !ck->dir[0]) return;
    close(ck->store_fd);
    ck->store_fd = -1;
    stem_checkpoint_state_path(ck, ".tmp", path, sizeof path);
    unlink(path); /* this job's own temporary */
}

int stem_checkpoint_state_commit(stem_checkpoint *ck)
{
    char tmp[STEM_PATH_MAX + 32], path[STEM_PATH_MAX + 32];
    stem_checkpoint_state_path(ck, ".tmp", tmp, sizeof tmp);
    stem_checkpoint_state_path(ck, "", path, sizeof path);
    STEM_ASSERT(ck->store_at == ck->state_bytes, "the stored sums have the planned size");
    state_header h = {.format = STATE_FORMAT,
                      .n_units = (uint32_t)ck->n_units,
                      .identity = ck->identity,
                      .bytes = ck->state_bytes,
                      .checksum = state_hash_final(&ck->store_sum),
                      .n_done = (uint32_t)ck->n_store};
    memcpy(h.magic, "STEMSTAT", 8);
    int ok = pwrite(ck->store_fd, &h, sizeof h, 0) == (ssize_t)sizeof h && fsync(ck->store_fd) == 0;
    int fd = ck->store_fd;
    ck->store_fd = -1;
    STEM_TRY(stem_ckfile_publish_temporary(ck->dir, fd, ok, tmp, path));
    ck->n_done = ck->n_store;
    ck->has_state = 1;
    return STEM_OK;
}
