/* Non-blocking, type-checked opening of input files. */
#include "input_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../src/stem.h"

static const char *input_kind(mode_t m)
{
    if (S_ISDIR(m)) return "a directory";
    if (S_ISFIFO(m)) return "a pipe (FIFO)";
    if (S_ISSOCK(m)) return "a socket";
    if (S_ISCHR(m) || S_ISBLK(m)) return "a device";
    return "not a regular file";
}

int stem_input_open(const char *path, const char *what, int code, FILE **out)
{
    *out = NULL;
    /* O_NONBLOCK: opening a FIFO for reading would wait for a writer */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return stem_fail(code, __FILE__, __LINE__, __func__, "cannot open %s '%s': %s", what, path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return stem_fail(code, __FILE__, __LINE__, __func__, "cannot inspect %s '%s': %s", what, path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        if (S_ISFIFO(st.st_mode))
            return stem_fail(code, __FILE__, __LINE__, __func__,
                             "%s '%s' is a pipe (FIFO, or a shell's <(...)): reading a pipe is not supported "
                             "(every rank reads its inputs); write it to a file first",
                             what, path);
        return stem_fail(code, __FILE__, __LINE__, __func__, "%s '%s' is %s, not a regular file", what, path,
                         input_kind(st.st_mode));
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0 || !(*out = fdopen(fd, "r"))) {
        int e = errno;
        close(fd);
        return stem_fail(code, __FILE__, __LINE__, __func__, "cannot open %s '%s': %s", what, path, strerror(e));
    }
    return STEM_OK;
}

int stem_input_read_all(const char *path, const char *what, int code, char **text, size_t *len)
{
    FILE *f;
    *text = NULL;
    *len = 0;
    STEM_TRY(stem_input_open(path, what, code, &f));
    struct stat st; /* text is never sparse: a file mostly of holes is refused before it is read */
    if (!fstat(fileno(f), &st) && st.st_size > (1 << 20) && (double)st.st_blocks * 512 < st.st_size / 8.0) {
        fclose(f);
        return stem_fail(code, __FILE__, __LINE__, __func__,
                         "%s '%s' is a sparse file of %.2f GiB holding %.1f MiB of data: not a text file stemsim "
                         "reads (a truncated or preallocated copy?)",
                         what, path, st.st_size / 1073741824.0, (double)st.st_blocks * 512 / 1048576.0);
    }
    size_t cap = 4096, n = 0;
    char *buf = stem_alloc(cap, what);
    int err = buf ? STEM_OK : STEM_ERR_MEMORY;
    while (!err) {
        if (n + 1 >= cap) {
            char *bigger = cap < ((size_t)1 << 62) ? realloc(buf, cap * 2) : NULL;
            if (!bigger) {
                err = STEM_FAIL(STEM_ERR_MEMORY, "out of memory reading %s '%s' (%zu bytes so far)", what, path, n);
                break;
            }
            buf = bigger;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - 1 - n, f);
        n += got;
        if (got == 0) break;
    }
    if (!err && ferror(f))
        err = stem_fail(code, __FILE__, __LINE__, __func__, "cannot read %s '%s': %s", what, path, strerror(errno));
    fclose(f);
    if (err) {
        free(buf);
        return err;
    }
    buf[n] = 0;
    *text = buf;
    *len = n;
    return STEM_OK;
}
