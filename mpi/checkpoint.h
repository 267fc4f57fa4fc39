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
 * A unit file is the map's entry: present means done. Opening a directory whose
 * manifest differs (another config, model, table or version) is refused naming
 * the first difference; --restart empties it first. A unit file that fails its
 * checks (damaged storage) is refused by name: nothing is deleted silently. */
#ifndef STEM_CHECKPOINT_H
#define STEM_CHECKPOINT_H

#include <mpi.h>
#include <stdint.h>

#include "../src/config.h"

typedef struct {
    char dir[STEM_PATH_MAX];
    uint64_t identity;        /* hash of the identity text */
    int n_units;
    size_t unit_bytes;        /* payload of every unit */
    unsigned char *done;      /* [n_units]: in the checkpoint when opened (same on every rank) */
    int n_done;               /* of them */
} stem_checkpoint;

/* Collective over comm; rank 0 works on the directory, every rank learns the outcome. */
int stem_checkpoint_open(stem_checkpoint *ck, MPI_Comm comm, const char *dir, const char *identity, int n_units,
                         size_t unit_bytes, int restart);
/* One rank (a group's leader): unit u's payload, durably (see above). */
int stem_checkpoint_store(const stem_checkpoint *ck, int unit, const void *payload);
/* Bytes [offset, offset + bytes) of unit u's payload. */
int stem_checkpoint_load(const stem_checkpoint *ck, int unit, size_t offset, void *buf, size_t bytes);
/* Rank 0, once the output is published: the unit files, the manifest and the directory. */
int stem_checkpoint_remove(const stem_checkpoint *ck);
void stem_checkpoint_free(stem_checkpoint *ck);

#endif
