/* Every rank runs the same job: after parsing, the ranks compare a hash of
 * the effective configuration, and after the broadcast one of the model and
 * the data table. A mis-launched MPMD job, a config file that changed between
 * two ranks' reads or a different --set ends the job before any work, with
 * one message naming the first differing key (exit 3), instead of a hang or a
 * file that mixes two configurations. */
#ifndef STEM_CONSISTENCY_H
#define STEM_CONSISTENCY_H

#include <mpi.h>

#include "../src/atoms.h"
#include "../src/config.h"
#include "../src/physics.h"

/* Collective over comm; returns STEM_ERR_CONFIG on the ranks whose
 * configuration differs from rank 0's (callers agree afterwards). */
int stem_check_same_config(const stem_config *cfg, MPI_Comm comm);
/* Collective over comm: the command line's modes (flags[k] non-zero: names[k] given, e.g.
 * "--dry-run") are the same on every rank, so that no rank stops after the checks while
 * another computes; STEM_ERR_USAGE on the ranks that differ from rank 0 (callers agree). */
int stem_check_same_flags(const int *flags, const char *const *names, int n, MPI_Comm comm);
/* Collective over comm: model and table as every rank received them. */
int stem_check_same_inputs(const stem_atoms *atoms, const stem_atom_potential *potentials, MPI_Comm comm);
/* 64-bit FNV-1a, continued from h (start with STEM_HASH_SEED). */
#define STEM_HASH_SEED 1469598103934665603ULL
unsigned long long stem_hash_bytes(unsigned long long h, const void *data, size_t n);
/* The model's and the table's hashes (what stem_check_same_inputs compares). */
unsigned long long stem_hash_model(const stem_atoms *atoms);
unsigned long long stem_hash_table(const stem_atom_potential *potentials);

#endif
