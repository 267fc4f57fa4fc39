/* The checkpoint of a campaign (version 2): a directory beside the output holding the
 * campaign's running sums and a manifest naming what determines the numbers.
 *
 *   <dir>/manifest        text: "stemsim checkpoint 2", units, unit_bytes, state_bytes, then the
 *                         identity (stemsim version, model and table hashes, the effective config
 *                         without [output]); written once, atomically
 *   <dir>/state           the exact running sums of every series point (src/accumulator.h, in
 *                         stem_acc_array order, every rank's part once) with the set of units they
 *                         hold: a 64-byte header (magic "STEMSTAT", format 2, units, identity hash,
 *                         payload bytes, checksum of map and payload, units held), the done map
 *                         (a byte per unit), the payload. Rank 0 writes state.tmp, fsyncs it and
 *                         renames it over the last state, so the state under its name is always
 *                         whole; its size grows with the points, never with the units
 *   <dir>/unit_NNNNNNN    only with [output] save_smatrix: unit NNNNNNN's S-matrix (48-byte
 *                         header, payload), written atomically before a state that holds the unit
 *   <dir>/stemsim.lock    held (flock, exclusive) by the campaign's rank 0 while it runs:
 *                         a second campaign on the same directory is refused (exit 6);
 *                         the kernel drops the lock when that process ends, however it
 *                         ends (on node-local and most cluster file systems; see docs/campaigns.md)
 *
 * Opening a directory whose manifest differs (another config, model, table or version) is
 * refused naming the first difference; a version 1 checkpoint (one file per unit) is refused
 * (exit 3, naming the version); --restart empties it first, removing only what a checkpoint
 * holds (its manifest, state, fft_plans and unit_NNNNNNN[.tmp] names, regular files, and only
 * under a stemsim manifest). Temporaries are created exclusively and never through a link. A
 * state or unit file that fails its checks (damaged storage, another campaign's) is refused
 * by name: nothing is deleted silently. */
#ifndef STEM_CHECKPOINT_H
#define STEM_CHECKPOINT_H

#include <mpi.h>
#include <stdint.h>

#include "../src/config.h"

typedef struct { /* the state's checksum (checkpoint.c) */
    uint64_t lane[4], total;
    unsigned char tail[32];
    size_t n_tail;
} state_hash;

typedef struct {
    char dir[STEM_PATH_MAX];
    uint64_t identity; /* hash of the identity text */
    int n_units;
    size_t unit_bytes;                    /* payload of every unit file (0: none: the S-matrices are not kept) */
    size_t state_bytes;                   /* the state's payload: the campaign's sums */
    int has_state;                        /* a state was found or stored */
    int store_fd, kill_in_store, n_store; /* rank 0, during a store: state.tmp, test hook, units it holds */
    size_t store_at;
    state_hash store_sum;
    state_hash load_hash; /* rank 0, resuming: the state's checksum as the load reads it in order */
    size_t load_at;
    uint64_t state_checksum;
    unsigned char *done;     /* [n_units]: in the checkpoint when opened (same on every rank) */
    int n_done;              /* of them */
    unsigned char *verified; /* [n_units]: checked (header, checksum) on this rank since the last store */
    int lock_fd;             /* rank 0: <dir>/stemsim.lock, held; -1 elsewhere */
    int lock_created;        /* rank 0 created it (and removes it with the checkpoint) */
    int lock_ours;           /* rank 0: created by this job or by an earlier run of this campaign */
} stem_checkpoint;

/* Collective over comm; rank 0 works on the directory, every rank learns the outcome.
 * fft_plans: the run's FFT plans (plan->fft_wisdom), kept beside the manifest; a resume under
 * other plans is warned that its units mix two sets of plans. */
int stem_checkpoint_open(stem_checkpoint *ck, MPI_Comm comm, const char *dir, const char *identity,
                         const char *fft_plans, int n_units, size_t unit_bytes, size_t state_bytes, int restart);
/* --dry-run: what a real run would find in dir (nothing, units to resume, a refusal), printed by
 * rank 0, with the real run's refusal as the result (agreed over comm); nothing is written. */
int stem_checkpoint_survey(MPI_Comm comm, const char *dir, const char *identity, int n_units, size_t unit_bytes,
                           size_t state_bytes, int restart);
/* checkpoint_state.c: <dir>/state<suffix>; rank 0 opening the directory: the state file read
 * (header, size, the done map into ck->done; the payload's checksum too when whole), or none. */
void stem_checkpoint_state_path(const stem_checkpoint *ck, const char *suffix, char *out, size_t n);
int stem_checkpoint_read_state(stem_checkpoint *ck, int whole);
/* Rank 0: bytes [offset, offset + bytes) of the state's payload; read in order, the checksum
 * follows, and stem_checkpoint_state_loaded then says whether the payload was what the header
 * says (a damaged state refused by name, exit 6: nothing is computed from it). */
int stem_checkpoint_state_read(stem_checkpoint *ck, size_t offset, void *buf, size_t bytes);
int stem_checkpoint_state_loaded(stem_checkpoint *ck);
/* Rank 0: a new state, durably: begin (the units it holds), append the payload in order
 * (exactly state_bytes in all), commit (header, fsync, rename over the last state, directory
 * fsync); abort removes the temporary (any failure does). */
int stem_checkpoint_state_begin(stem_checkpoint *ck, const unsigned char *done);
int stem_checkpoint_state_append(stem_checkpoint *ck, const void *buf, size_t bytes);
int stem_checkpoint_state_commit(stem_checkpoint *ck);
void stem_checkpoint_state_abort(stem_checkpoint *ck);
/* One rank (a group's leader): unit u's S-matrix payload, durably (see above). */
int stem_checkpoint_store(const stem_checkpoint *ck, int unit, const void *payload);
/* Bytes [offset, offset + bytes) of unit u's payload; the unit is verified whole (header,
 * identity, checksum) the first time this rank reads it. */
int stem_checkpoint_load(stem_checkpoint *ck, int unit, size_t offset, void *buf, size_t bytes);
/* Rank 0, once the output is published: the unit files, the manifest and the directory. */
int stem_checkpoint_remove(const stem_checkpoint *ck);
void stem_checkpoint_free(stem_checkpoint *ck);

#endif
