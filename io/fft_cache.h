/* The FFTW wisdom cache: one file per FFT shape and machine, holding what FFTW_MEASURE
 * chose for it, so that measured plans cost their measurement once per user and machine
 * and runs sharing the cache are bit-identical. A file is named by a hash of its key
 * (shape, FFTW version, threads per transform, CPU model and flags), begins with the key
 * in words and is published whole by a hard link (never replacing a file: the first job
 * to publish wins and later ones read its file). Files that are not regular, owned by
 * someone else, links, or whose key or wisdom is wrong are ignored with a warning. */
#ifndef STEM_IO_FFT_CACHE_H
#define STEM_IO_FFT_CACHE_H

#include <stddef.h>

#include "../src/stem.h"

/* The cache directory from [compute] fft_cache: "auto" ($STEMSIM_FFT_CACHE, else
 * $XDG_CACHE_HOME/stemsim, else $HOME/.cache/stemsim), "off" (dir "": no cache) or a
 * directory. Created (0700) if missing; a directory that is a symbolic link, someone
 * else's or writable by others is not used: dir "" and why says so. */
void stem_fft_cache_dir(const char *setting, char *dir, size_t size, char *why, size_t why_size);

/* The key of one shape (text that begins its file) and the file's name. */
typedef struct {
    char text[1024];
    char name[96];
} stem_fft_cache_key;
void stem_fft_cache_key_make(int nx, int ny, int batch, stem_fft_cache_key *key);

typedef enum { STEM_FFT_CACHE_ABSENT = 0, STEM_FFT_CACHE_FOUND = 1, STEM_FFT_CACHE_REFUSED = 2 } stem_fft_cache_state;
/* FOUND: *wisdom is the file's wisdom (malloc'd) after its key; REFUSED: why says why. */
stem_fft_cache_state stem_fft_cache_read(const char *dir, const stem_fft_cache_key *key, char **wisdom, char *why,
                                         size_t why_size);
/* Publish key + wisdom under the key's name. 0: stored; 1: another job's file was
 * there first (not replaced); -1: not stored (why). */
int stem_fft_cache_store(const char *dir, const stem_fft_cache_key *key, const char *wisdom, char *why,
                         size_t why_size);

#endif
