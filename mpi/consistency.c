/* Same job on every rank: hash comparison, then the first differing key. */
#include "../io/config.h"
#include "consistency.h"

#include <stdlib.h>
#include <string.h>

#include "../comm/comm.h"

unsigned long long stem_hash_model(const stem_atoms *atoms)
{
    unsigned long long h = stem_hash_bytes(STEM_HASH_SEED, &atoms->n, sizeof atoms->n);
    h = stem_hash_bytes(h, atoms->cell, sizeof atoms->cell);
    h = stem_hash_bytes(h, atoms->Z, (size_t)atoms->n * sizeof *atoms->Z);
    const double *cols[5] = {atoms->x, atoms->y, atoms->z, atoms->occupancy, atoms->sigma};
    for (int i = 0; i < 5; i++) h = stem_hash_bytes(h, cols[i], (size_t)atoms->n * sizeof(double));
    return h;
}

unsigned long long stem_hash_table(const stem_atom_potential *potentials)
{
    return stem_hash_bytes(STEM_HASH_SEED, potentials, sizeof(stem_atom_potential) * (STEM_MAX_Z + 1));
}

unsigned long long stem_hash_bytes(unsigned long long h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ULL;
    }
    return h;
}

/* Do all ranks hold the same hash? (min == max over comm) */
static int same_everywhere(unsigned long long h, MPI_Comm comm, int *same)
{
    unsigned long long lo, hi;
    STEM_MPI_CALL(MPI_Allreduce(&h, &lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, comm));
    STEM_MPI_CALL(MPI_Allreduce(&h, &hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, comm));
    *same = lo == hi;
    return STEM_OK;
}

/* One line of INI text starting at p (without the newline), as a copy. */
static void copy_line(const char *p, char *out, size_t n)
{
    size_t len = strcspn(p, "\n");
    if (len >= n) len = n - 1;
    memcpy(out, p, len);
    out[len] = 0;
}

/* Name the first line where mine differs from rank 0's, as "[section] key". */
static int report_first_difference(const char *mine, const char *theirs, int rank)
{
    char section[128] = "", a[STEM_PATH_MAX + 64], b[STEM_PATH_MAX + 64];
    const char *p = mine, *q = theirs;
    while (*p || *q) {
        copy_line(p, a, sizeof a);
        copy_line(q, b, sizeof b);
        if (strcmp(a, b)) break;
        if (a[0] == '[') snprintf(section, sizeof section, "%.100s", a);
        p += strcspn(p, "\n");
        q += strcspn(q, "\n");
        if (*p) p++;
        if (*q) q++;
    }
    char key[128];
    const char *line = a[0] ? a : b;
    size_t klen = strcspn(line, " =");
    snprintf(key, sizeof key, "%.*s", (int)(klen < 100 ? klen : 100), line);
    const char *va = strchr(a, '='), *vb = strchr(b, '=');
    return STEM_FAIL(STEM_ERR_CONFIG,
                     "rank %d does not run the same job as rank 0: %s %s is '%s' on rank 0 but '%s' on rank %d "
                     "(a mis-launched MPMD job, different --set options, or a config file that changed while the "
                     "ranks read it)",
                     rank, section, key, vb ? vb + 2 : b, va ? va + 2 : a, rank);
}

int stem_check_same_config(const stem_config *cfg, MPI_Comm comm)
{
    int rank, same;
    STEM_MPI_CALL(MPI_Comm_rank(comm, &rank));
    char *mine = stem_config_to_ini(cfg);
    /* a rank that cannot format its config hashes to a value no other rank has */
    unsigned long long h = mine ? stem_hash_bytes(STEM_HASH_SEED, mine, strlen(mine)) : (unsigned long long)rank + 1;
    int err = same_everywhere(h, comm, &same);
    if (err || same) {
        free(mine);
        return err;
    }
    /* rank 0's text to everyone, so each rank can name its difference */
    unsigned long long len = rank == 0 && mine ? strlen(mine) : 0;
    char *theirs = NULL;
    if (MPI_Bcast(&len, 1, MPI_UNSIGNED_LONG_LONG, 0, comm) != MPI_SUCCESS) err = STEM_ERR_MPI;
    if (!err) theirs = rank == 0 ? mine : calloc(len + 1, 1);
    if (!err && MPI_Bcast(theirs ? theirs : (char[1]){0}, theirs ? (int)len : 0, MPI_CHAR, 0, comm) != MPI_SUCCESS)
        err = STEM_ERR_MPI;
    if (err)
        err = STEM_FAIL(STEM_ERR_MPI, "MPI_Bcast of rank 0's configuration failed");
    else if (!mine || !theirs)
        err = STEM_FAIL(STEM_ERR_MEMORY, "cannot compare the configuration with rank 0's");
    else if (strcmp(mine, theirs))
        err = report_first_difference(mine, theirs, rank);
    if (theirs != mine) free(theirs);
    free(mine);
    return err;
}

/* Does this rank's hash differ from rank 0's? Only asked when not all agree. */
static int differs_from_root(unsigned long long h, MPI_Comm comm, int *differs)
{
    unsigned long long h0 = h;
    STEM_MPI_CALL(MPI_Bcast(&h0, 1, MPI_UNSIGNED_LONG_LONG, 0, comm));
    *differs = h != h0;
    return STEM_OK;
}

int stem_check_same_flags(const int *flags, const char *const *names, int n, MPI_Comm comm)
{
    int rank;
    STEM_MPI_CALL(MPI_Comm_rank(comm, &rank));
    for (int k = 0; k < n; k++) {
        int same = 0, differs = 0;
        STEM_TRY(same_everywhere(flags[k] != 0, comm, &same));
        if (same) continue;
        STEM_TRY(differs_from_root(flags[k] != 0, comm, &differs));
        if (differs)
            return STEM_FAIL(STEM_ERR_USAGE,
                             "rank %d was started %s %s but rank 0 %s it: every rank of a job needs "
                             "the same options (a mis-launched MPMD job?)",
                             rank, flags[k] ? "with" : "without", names[k], flags[k] ? "without" : "with");
        return STEM_OK; /* the ranks that differ report it */
    }
    return STEM_OK;
}

int stem_check_same_inputs(const stem_atoms *atoms, const stem_atom_potential *potentials, MPI_Comm comm)
{
    int rank;
    STEM_MPI_CALL(MPI_Comm_rank(comm, &rank));
    const unsigned long long hashes[2] = {stem_hash_model(atoms), stem_hash_table(potentials)};
    const char *what[2] = {"XYZ model", "scattering-factor table"};
    for (int k = 0; k < 2; k++) {
        int same = 0, differs = 0;
        STEM_TRY(same_everywhere(hashes[k], comm, &same));
        if (same) continue;
        STEM_TRY(differs_from_root(hashes[k], comm, &differs));
        if (differs) return STEM_FAIL(STEM_ERR_CONFIG, "rank %d holds a different %s than rank 0", rank, what[k]);
        return STEM_OK; /* the ranks that differ report it */
    }
    return STEM_OK;
}
