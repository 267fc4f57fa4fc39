/* Datasets a stemsim output stores for a later run to read back instead of
 * computing them (/potential, /smatrix): opening, attributes and hyperslab reads
 * with every failure reported against the config key that named the file. */
#ifndef STEM_STORED_FILE_H
#define STEM_STORED_FILE_H

#include <hdf5.h>

/* Which stored dataset a reader wants, for its messages. */
typedef struct {
    const char *key;     /* "[simulation] potential_file" */
    const char *path;    /* the file */
    const char *dataset; /* "/potential" */
    const char *writer;  /* "[output] save_potential": the key that writes it */
} stem_stored;

/* Open the file read-only and the dataset, quietly (the errors are reported here). */
int stem_stored_open(const stem_stored *s, hid_t *file, hid_t *dset);
void stem_stored_close(hid_t file, hid_t dset);
/* The dataset's dimensions: exactly `rank` of them, else STEM_ERR_INPUT naming `axes`. */
int stem_stored_dims(const stem_stored *s, hid_t dset, int rank, const char *axes, hsize_t *dims);
/* A scalar double attribute of the dataset (missing: STEM_ERR_INPUT). */
int stem_stored_attr(const stem_stored *s, hid_t dset, const char *name, double *value);
/* A stored attribute against this run's value, to 1e-9 relative; what names it in the refusal. */
int stem_stored_match(const stem_stored *s, hid_t dset, const char *attr, double want, const char *what);
/* Read the hyperslab start/count (rank dims) of the dataset into buf as mem_type. */
int stem_stored_read(const stem_stored *s, int rank, const hsize_t *start, const hsize_t *count, hid_t mem_type,
                     void *buf);

#endif
