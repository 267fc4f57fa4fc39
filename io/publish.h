/* The output file's life outside HDF5: checks before any computation, an
 * exclusively created temporary under a unique name, and publication by a
 * rename that never replaces what it must not.
 *
 *   check    (rank 0, before computing; also for --dry-run) the directory is
 *            writable; the output is none of the inputs (same device and
 *            inode, so symlinks and hard links count); an existing output is
 *            refused unless overwrite, and even then only a regular file may
 *            be replaced; stale temporaries of earlier runs are reported.
 *   reserve  "<file>.XXXXXX.incomplete" is created with O_CREAT|O_EXCL
 *            (mkstemps), so no existing file or symlink is ever opened,
 *            truncated or followed, and two jobs never share a temporary.
 *   publish  overwrite = false: renameat2(RENAME_NOREPLACE), else link() +
 *            unlink(); if another job published first, this job's complete
 *            result is kept as "<file>.XXXXXX.conflict.h5" and the job fails
 *            with exit 6 naming it. overwrite = true: rename() over a regular
 *            file only. */
#ifndef STEM_PUBLISH_H
#define STEM_PUBLISH_H

#include <mpi.h>
#include <sys/types.h>

#include "../src/config.h"

#define STEM_OUTPUT_TEMP_SUFFIX ".incomplete"
/* The longest temporary's path Open MPI's MPI-IO opens safely (publish.c, reserve_temp). */
#define STEM_OUTPUT_MPIIO_PATH_MAX 224
#define STEM_OUTPUT_NAME_MAX (STEM_PATH_MAX + 32)

/* A file stemsim reads, which the output must never be. */
typedef struct {
    const char *what; /* "config file", "[sample] xyz", ... */
    const char *path;
} stem_input_ref;

typedef struct {
    char final_path[STEM_PATH_MAX];
    char temp_path[STEM_OUTPUT_NAME_MAX]; /* empty until reserved */
    int overwrite;
    dev_t dev; /* of the reservation, so it is known to be ours when written */
    ino_t ino;
    double reserve_later; /* rank 0: bytes of the reserve kept for the EMD conversion, its margin included (0: none) */
} stem_output_target;

/* The output's disk space is held from the start in "<file>.XXXXXX.reserve.incomplete"
 * (rank 0): a margin of real blocks, which a failing write releases so that HDF5 can
 * always close the file (a close that fails for lack of space leaves HDF5 a half-closed
 * file it crashes on in MPI_Finalize), and the estimated size of the file (and of the EMD
 * conversion's copy), given back just before each is written. A disk that cannot hold it
 * is refused before any computation. */
#define STEM_OUTPUT_RESERVE_MARGIN ((double)(1 << 20))

/* Whether this config's units go to a checkpoint ([output] checkpoint = on, or auto with a
 * [series] or depths), and its directory: [output] checkpoint_dir, or "<file>.checkpoint". */
int stem_output_checkpointed(const stem_config *cfg);
void stem_output_checkpoint_dir(const stem_config *cfg, char *out, size_t n);
/* Collective over comm. Rank 0 runs the checks and (reserve != 0) creates
 * the temporary; every rank receives the same status and target. */
int stem_output_target_prepare(MPI_Comm comm, const stem_config *cfg, const stem_input_ref *inputs, int n_inputs,
                               int reserve, stem_output_target *t);
/* Rank 0, just before HDF5 opens the temporary: it is still the file we created. */
int stem_output_target_verify(const stem_output_target *t);
/* Rank 0, after every rank closed the file: give it its final name. */
int stem_output_target_publish(const stem_output_target *t);
/* "<file>.XXXXXX.<tag>.incomplete": a companion file of the reserved temporary (its
 * directory, its unique part, so the report of stale temporaries finds it too). */
void stem_output_target_sibling(const stem_output_target *t, const char *tag, char *out, size_t n);
/* Rank 0, a checkpointed stream of 4D patterns (mpi/campaign_blocks.c): kept, a second name
 * of the temporary in the checkpoint (a hard link; a stop removes only the temporary's name),
 * so that a resumed run adopts it: rename(kept, temporary) replaces the empty temporary just
 * reserved, its identity (dev, inode) recorded for verify, and kept linked again. keep makes
 * the link (another file system: STEM_OUTPUT_NOT_KEPT, warned, nothing kept); adopt refuses
 * a kept name that is not a regular file. */
#define STEM_OUTPUT_NOT_KEPT 1
int stem_output_target_keep(const stem_output_target *t, const char *kept);
int stem_output_target_adopt(stem_output_target *t, const char *kept);
/* Remove the temporary (and the space reserve) if it exists (failure paths; any rank). */
void stem_output_target_discard(const stem_output_target *t);
/* Collective, after prepare reserved the temporary: rank 0 creates the space reserve for a
 * file of file_bytes and a later copy of later_bytes (0: none); on failure (a full disk)
 * the temporary is removed and every rank returns the same status. */
int stem_output_target_reserve(MPI_Comm comm, stem_output_target *t, double file_bytes, double later_bytes);
/* Collective, for --dry-run: whether the output's directory has the room the reserve would take
 * (free space only; nothing is created); the real run's refusal when it has not. */
int stem_output_target_room(MPI_Comm comm, const stem_output_target *t, double file_bytes, double later_bytes);
/* Rank 0: shrink the reserve to keep bytes, releasing the rest to the next write; keep 0
 * removes it. */
void stem_output_target_release(const stem_output_target *t, double keep);
/* Why a write to path failed, as far as the file system tells: "no space left on device
 * (N KiB free ...)" when its file system is (nearly) full, else a general hint. */
void stem_output_space_note(const char *path, char *out, size_t n);

#endif
