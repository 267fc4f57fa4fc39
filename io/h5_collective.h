/* Generic HDF5 writing, independent of what a file holds:
 *
 *   attributes  scalar or 1D attributes of any object, on one rank (stem_h5_attr_*):
 *               quiet, the caller says what failed (io/emd.c's serial conversion);
 *   collective  a file every rank of a communicator writes together over MPI-IO
 *               (stem_h5_file): each step ends with every rank agreeing on its status
 *               (a signal on any rank stops the write too), attributes and groups on
 *               it, a dataset written as each rank's selection, a stack of planes one
 *               per rank per round, and the full-disk-safe close: the space it needs is
 *               released first and a failed close is never retried.
 *
 * What the files hold is elsewhere: io/layout.c (stemsim's layout, docs/output.md),
 * io/emd.c (Prismatic's EMD tree). */
#ifndef STEM_H5_COLLECTIVE_H
#define STEM_H5_COLLECTIVE_H

#include <stddef.h>

#include <hdf5.h>
#include <mpi.h>

#include "publish.h"

/* ------------------------------------------------------ attributes (one rank) */

/* An attribute `name` of loc: n values (n == 0: a scalar) of the given file and memory
 * types. Returns STEM_OK or STEM_ERR_IO; file != NULL: a failure is reported as
 * "output <file>: ... of <where>", else the caller reports it. */
int stem_h5_attr(hid_t loc, const char *name, hid_t file_type, hid_t mem_type, const void *value, hsize_t n,
                 const char *file, const char *where);
/* A UTF-8 string: variable length (h5py reads it back as str), or fixed (strlen + 1
 * bytes, null-terminated, as Prismatic writes its attributes). */
int stem_h5_attr_string(hid_t loc, const char *name, const char *text, int fixed, const char *file, const char *where);
/* Quiet scalars and fixed-length strings (serial writers that report failures themselves). */
int stem_h5_attr_int(hid_t loc, const char *name, int value);
int stem_h5_attr_double(hid_t loc, const char *name, double value);
int stem_h5_attr_text(hid_t loc, const char *name, const char *text);
/* A string attribute of loc (a file: its root), fixed or variable length, malloc'd; NULL when
 * absent, unreadable or not a string. */
char *stem_h5_attr_read_text(hid_t loc, const char *name);

/* ------------------------------------------------------- a collective file */

typedef struct {
    MPI_Comm comm;
    int rank;
    const stem_output_target *target; /* the reserved temporary the file is written to */
    char path[STEM_OUTPUT_NAME_MAX];  /* target->temp_path */
    hid_t fapl, dxpl, file;
    int reopen; /* stem_h5_file_open opens the temporary's existing HDF5 file (a resumed stream) */
} stem_h5_file;

/* Every rank learns the worst status, so all take the same path; a failure every rank
 * sees (a full disk) is reported once. A signal on any rank stops the write here too
 * (its handler removed the temporary already). */
int stem_h5_agree(MPI_Comm comm, int rc);

/* Run a step only while every rank is fine, then agree on how it went. */
#define STEM_H5_STEP(rc, comm, expr)                                                                                   \
    do {                                                                                                               \
        if (!(rc)) (rc) = stem_h5_agree((comm), (expr));                                                               \
    } while (0)

/* Why a write to f failed: a full file system said so, else the usual suspects. */
const char *stem_h5_why(const stem_h5_file *f, char *buf, size_t n);

/* Local: no file open yet, the rank and path known, HDF5's own error printing off. */
int stem_h5_file_init(stem_h5_file *f, MPI_Comm comm, const stem_output_target *target);
/* Collective: create the (verified) temporary over MPI-IO, with collective transfers. */
int stem_h5_file_open(stem_h5_file *f);
/* Collective flush, agreed. */
int stem_h5_file_flush(const stem_h5_file *f);
/* Collective: close everything still open; the first failure is reported. discard: the
 * content failed and the file will be removed (its space is given back first). A close
 * that fails on any rank ends the job (exit 6) once the temporary is removed: HDF5
 * cannot finish a failed close. */
int stem_h5_file_close(stem_h5_file *f, int discard);

/* Collective attributes (agreed): variable-length string, float64, int32. */
int stem_h5_put_string(const stem_h5_file *f, hid_t loc, const char *where, const char *name, const char *value);
int stem_h5_put_double(const stem_h5_file *f, hid_t loc, const char *where, const char *name, double value);
int stem_h5_put_int(const stem_h5_file *f, hid_t loc, const char *where, const char *name, int value);
/* Collective: an empty group. */
int stem_h5_group(const stem_h5_file *f, const char *name);

#define STEM_H5_MAX_RANK 12

/* One collectively written dataset: every rank passes the same description but its own
 * part (data, select). */
typedef struct {
    const char *name;
    hid_t file_type, mem_type;
    int rank; /* of the file's dataspace */
    hsize_t dims[STEM_H5_MAX_RANK];
    int open;                        /* open the dataset an earlier write created (a later series point) */
    hsize_t chunk[STEM_H5_MAX_RANK]; /* chunk[0] > 0: chunked in these (no fill: every value is written) */
    const void *data;                /* this rank's part (NULL where it writes nothing) */
    /* this rank's part: select it in fspace and create the memory space *mspace; local, a
     * failure reported inside */
    int (*select)(void *ctx, hid_t fspace, hid_t *mspace);
    /* NULL, or (created datasets) its attributes, collective and agreed */
    int (*attrs)(void *ctx, hid_t dset);
    void *ctx;
} stem_h5_dataset;

/* Create (or open) d, write every rank's part in one collective transfer, add its
 * attributes; every collective call is entered by every rank or by none. */
int stem_h5_write_dataset(const stem_h5_file *f, const stem_h5_dataset *d);

/* A float32 stack [dims[0]][dims[1]][plane...] written one plane per rank per collective
 * round, plane (c, k) produced by `plane` on the rank that writes it; then attrs. */
typedef struct {
    const char *name;
    int rank; /* 4, or 5 for complex planes ([..][2]) */
    hsize_t dims[5];
    int (*plane)(void *ctx, int c, int k, float *buf);
    int (*attrs)(void *ctx, hid_t dset);
    void *ctx;
} stem_h5_stack;

int stem_h5_write_stack(const stem_h5_file *f, const stem_h5_stack *st);

#endif
