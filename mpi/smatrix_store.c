/* PRISM's S-matrices kept and read back: see smatrix_store.h. */
#include "smatrix_store.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "../io/smatrix_file.h"

static void group_path(const stem_smatrix_store *st, int g, char *out, size_t n)
{
    char tag[32];
    snprintf(tag, sizeof tag, "smatrix-g%d", g);
    stem_output_target_sibling(st->target, tag, out, n);
}

static int load_beams(void *ctx, const stem_plan *plan, int c, int b0, int b1, stem_complex *S)
{
    (void)ctx;
    return stem_smatrix_file_read(plan, c, b0, b1, S);
}

/* Whole writes: pwrite may write less than asked. */
static int write_all(int fd, const void *data, size_t bytes, off_t at)
{
    const char *p = data;
    while (bytes) {
        ssize_t n = pwrite(fd, p, bytes, at);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        p += n, bytes -= (size_t)n, at += n;
    }
    return 0;
}

/* Each rank writes its own beams [b0, b1) of configuration c into its group's temporary. */
static int store_beams(void *ctx, const stem_plan *plan, const stem_mpi *m, int c, int b0, int b1,
                       const stem_complex *S)
{
    stem_smatrix_store *st = ctx;
    (void)m;
    if (b1 <= b0) return STEM_OK;
    char path[STEM_OUTPUT_NAME_MAX + 32];
    group_path(st, c % st->n_groups, path, sizeof path);
    size_t beam_bytes = st->config_bytes / (size_t)plan->n_beams;
    off_t at = (off_t)(c / st->n_groups) * (off_t)st->config_bytes + (off_t)b0 * (off_t)beam_bytes;
    if (st->fd < 0 || write_all(st->fd, S, beam_bytes * (size_t)(b1 - b0), at))
        return STEM_FAIL(STEM_ERR_IO,
                         "[output] save_smatrix: cannot write beams %d-%d of configuration %d's S-matrix to %s: %s",
                         b0 + 1, b1, c + 1, path, strerror(errno));
    return STEM_OK;
}

int stem_smatrix_store_open(stem_smatrix_store *st, const stem_mpi *m, const stem_plan *plan,
                            const stem_output_target *target)
{
    memset(st, 0, sizeof *st);
    st->plan = plan;
    st->fd = st->own = -1;
    st->n_groups = m->layout.n_groups;
    st->config_bytes = sizeof(stem_complex) * (size_t)plan->crop_nx * plan->crop_ny * (size_t)plan->n_beams;
    st->io.ctx = st;
    if (plan->opt.smatrix_file[0]) st->io.load = load_beams;
    if (!plan->opt.save_smatrix) return STEM_OK;
    st->io.store = store_beams;
    st->target = target;
    int err = STEM_OK;
    char path[STEM_OUTPUT_NAME_MAX + 32];
    group_path(st, m->layout.group, path, sizeof path);
    if (m->layout.group_rank == 0) {
        st->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (st->fd < 0)
            err = STEM_FAIL(STEM_ERR_IO, "[output] save_smatrix: cannot create the temporary %s: %s", path,
                            strerror(errno));
        else
            st->own = m->layout.group;
    }
    err = stem_mpi_agree(err, m->world);
    if (!err && m->layout.group_rank != 0 && (st->fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC)) < 0)
        err = STEM_FAIL(STEM_ERR_IO, "[output] save_smatrix: cannot open the group's temporary %s: %s", path,
                        strerror(errno)); /* every rank writes its own beams */
    err = stem_mpi_agree(err, m->world);
    if (err) stem_smatrix_store_remove(st);
    return err;
}

int stem_smatrix_store_finish(stem_smatrix_store *st, const stem_mpi *m)
{
    int err = STEM_OK;
    if (st->fd >= 0 && close(st->fd) != 0)
        err =
            STEM_FAIL(STEM_ERR_IO, "[output] save_smatrix: closing the S-matrix temporary failed: %s", strerror(errno));
    st->fd = -1;
    return stem_mpi_agree(err, m->world);
}

int stem_smatrix_store_beam(void *ctx, int t, int c, int b, float *S)
{
    (void)t; /* one run: one tilt */
    stem_smatrix_store *st = ctx;
    char path[STEM_OUTPUT_NAME_MAX + 32];
    group_path(st, c % st->n_groups, path, sizeof path);
    size_t beam_bytes = st->config_bytes / (size_t)st->plan->n_beams;
    off_t at = (off_t)(c / st->n_groups) * (off_t)st->config_bytes + (off_t)b * (off_t)beam_bytes;
    int fd = open(path, O_RDONLY | O_CLOEXEC), err = STEM_OK;
    char *p = (char *)S;
    size_t left = beam_bytes;
    while (fd >= 0 && left) {
        ssize_t n = pread(fd, p, left, at);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        p += n, left -= (size_t)n, at += n;
    }
    if (fd < 0 || left)
        err = STEM_FAIL(STEM_ERR_IO, "[output] save_smatrix: cannot read beam %d of configuration %d back from %s: %s",
                        b, c + 1, path, fd < 0 || errno ? strerror(errno) : "the file is short");
    if (fd >= 0) close(fd);
    return err;
}

void stem_smatrix_store_remove(stem_smatrix_store *st)
{
    if (st->fd >= 0) close(st->fd);
    st->fd = -1;
    if (st->own < 0) return;
    char path[STEM_OUTPUT_NAME_MAX + 32];
    group_path(st, st->own, path, sizeof path);
    unlink(path);
    st->own = -1;
}
