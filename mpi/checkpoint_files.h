/* Private to mpi/checkpoint*.c: the file primitives the checkpoint's files share (whole
 * writes and reads, exclusive temporaries never through a link, atomic publication). */
#ifndef STEM_CHECKPOINT_FILES_H
#define STEM_CHECKPOINT_FILES_H

#include <stddef.h>
#include <sys/types.h>

#include "../src/stem.h"

#define STEM_CHECKPOINT_STATE_NAME "state"
#define STEM_CHECKPOINT_PATTERNS_NAME                                                                                  \
    "patterns.h5" /* a streamed run's 4D patterns (a link to the output's temporary) */

int stem_ckfile_write_all(int fd, const void *buf, size_t n);
int stem_ckfile_read_at(int fd, void *buf, size_t n, off_t at);
int stem_ckfile_sync_dir(const char *dir);
/* Remove path if it is a regular file (a temporary a killed job left); anything else under a
 * checkpoint's name is refused, left alone. */
int stem_ckfile_remove_stale(const char *path);
/* A new file created exclusively, never through a link (a stale regular temporary removed
 * first); -1 on failure (reported). */
int stem_ckfile_create_exclusive(const char *path);
/* A whole temporary (ok) closed, renamed over path, the directory fsync'd; removed on failure. */
int stem_ckfile_publish_temporary(const char *dir, int fd, int ok, const char *tmp, const char *path);

#endif
