/* The file primitives of the checkpoint's files (checkpoint_files.h). */
#include "checkpoint_files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int stem_ckfile_write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n) {
        ssize_t w = write(fd, p, n > (1u << 30) ? (1u << 30) : n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int stem_ckfile_read_at(int fd, void *buf, size_t n, off_t at)
{
    char *p = buf;
    while (n) {
        ssize_t r = pread(fd, p, n > (1u << 30) ? (1u << 30) : n, at);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        p += r;
        n -= (size_t)r;
        at += r;
    }
    return 0;
}

int stem_ckfile_sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0) return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

/* Remove path if it is a regular file (a temporary a killed job left); anything else under a
 * checkpoint's name (a link, a FIFO, a directory) is not stemsim's: refused, left alone. */
int stem_ckfile_remove_stale(const char *path)
{
    struct stat st;
    if (lstat(path, &st))
        return errno == ENOENT ? STEM_OK : STEM_FAIL(STEM_ERR_IO, "checkpoint: %s: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return STEM_FAIL(STEM_ERR_IO,
                         "checkpoint: %s exists and is not a regular file (a link?): stemsim writes and "
                         "deletes nothing through it; remove it",
                         path);
    if (unlink(path) && errno != ENOENT)
        return STEM_FAIL(STEM_ERR_IO, "checkpoint: cannot remove %s: %s", path, strerror(errno));
    return STEM_OK;
}

/* A new file created exclusively, never through a link (O_EXCL refuses an existing link
 * and O_NOFOLLOW any); a stale regular temporary of the same name is removed first. */
int stem_ckfile_create_exclusive(const char *path)
{
    if (stem_ckfile_remove_stale(path)) return -1;
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) STEM_FAIL(STEM_ERR_IO, "checkpoint: cannot create %s: %s", path, strerror(errno));
    return fd;
}

/* A temporary written whole (ok: every write and its fsync succeeded) closed and given its
 * final name: renamed over path, the directory fsync'd; on any failure removed (it is ours). */
int stem_ckfile_publish_temporary(const char *dir, int fd, int ok, const char *tmp, const char *path)
{
    int err = errno;
    if (close(fd) != 0 && ok) ok = 0, err = errno;
    if (!ok) {
        unlink(tmp);
        return STEM_FAIL(STEM_ERR_IO, "checkpoint: cannot write %s: %s (disk full or quota?)", tmp, strerror(err));
    }
    if (rename(tmp, path) != 0) {
        err = errno;
        unlink(tmp);
        return STEM_FAIL(STEM_ERR_IO, "checkpoint: cannot rename %s to %s: %s", tmp, path, strerror(err));
    }
    if (stem_ckfile_sync_dir(dir) != 0)
        return STEM_FAIL(STEM_ERR_IO, "checkpoint: cannot fsync directory %s: %s", dir, strerror(errno));
    return STEM_OK;
}
