/* The checkpoint of a campaign: a directory beside the output holding one file
 * per finished unit of work and a manifest naming what determines the numbers.
 *
 *   <dir>/manifest        text: "stemsim checkpoint 1", units = N, then the identity
 *                         (stemsim version, model and table hashes, the effective
 *                         config without [output]); written once, atomically
 *   <dir>/unit_NNNNNNN    one finished unit: a 48-byte header (magic "STEMUNIT",
 *                         format, unit number, identity hash, payload bytes, payload
 *                         checksum) and the payload; written to unit_NNNNNNN.tmp,
 *                         fsync'd, renamed, and the directory fsync'd, so a unit
 *                         file under its final name is whole: a job killed while
 *                         writing leaves only the .tmp, removed when it resumes
 *
 *   <dir>/stemsim.lock    held (flock, exclusive) by the campaign's rank 0 while it runs:
 *                         a second campaign on the same directory is refused (exit 6);
 *                         the kernel drops the lock when that process ends, however it
 *                         ends (on node-local and most cluster file systems; see docs/campaigns.md)
 *
 * A unit file is the map's entry: present means done. Opening a directory whose
 * manifest differs (another config, model, table or version) is refused naming
 * the first difference; --restart empties it first, removing only what a checkpoint
 * holds (its manifest and files named exactly unit_NNNNNNN[.tmp], regular files, and
 * only under a stemsim manifest). Temporaries are created exclusively and never through
 * a link. A unit file that fails its checks (damaged storage, another campaign's) is
 * refused by name, when the campaign opens and again when each unit is read back:
 * nothing is deleted silently. */
#ifndef STEM_CHECKPOINT_H
#define STEM_CHECKPOINT_H

#include <mpi.h>
#include <stdint.h>

#include "../src/config.h"

typedef struct {
    char dir[STEM_PATH_MAX];
    uint64_t identity; /* hash of the identity text */
    int n_units;
    size_t unit_bytes;       /* payload of every unit */
    unsigned char *done;     /* [n_units]: in the checkpoint when opened (same on every rank) */
    int n_done;              /* of them */
    unsigned char *verified; /* [n_units]: checked (header, checksum) on this rank since the last store */
    int lock_fd;             /* rank 0: <dir>/stemsim.lock, held; -1 elsewhere */
    int lock_created;        /* rank 0 created it (and removes it with the checkpoint) */
} stem_checkpoint;

/* Collective over comm; rank 0 works on the directory, every rank learns the outcome.
 * fft_plans: the run's FFT plans (plan->fft_wisdom), kept beside the manifest; a resume under
 * other plans is warned that its units mix two sets of plans. */
int stem_checkpoint_open(stem_checkpoint *ck, MPI_Comm comm, const char *dir, const char *identity,
                         const char *fft_plans, int n_units, size_t unit_bytes, int restart);
/* --dry-run: what a real run would find in dir (nothing, units to resume, a refusal), printed by
 * rank 0, with the real run's refusal as the result (agreed over comm); nothing is written. */
int stem_checkpoint_survey(MPI_Comm comm, const char *dir, const char *identity, int n_units, size_t unit_bytes,
                           int restart);
/* One rank (a group's leader): unit u's payload, durably (see above). */
int stem_checkpoint_store(const stem_checkpoint *ck, int unit, const void *payload);
/* Bytes [offset, offset + bytes) of unit u's payload; the unit is verified whole (header,
 * identity, checksum) the first time this rank reads it. */
int stem_checkpoint_load(stem_checkpoint *ck, int unit, size_t offset, void *buf, size_t bytes);
/* Rank 0, once the output is published: the unit files, the manifest and the directory. */
int stem_checkpoint_remove(const stem_checkpoint *ck);
void stem_checkpoint_free(stem_checkpoint *ck);

#endif
