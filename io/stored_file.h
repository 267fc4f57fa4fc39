/* Datasets a stemsim output stores for a later run to read back instead of
 * computing them (/potential, /smatrix): opening, attributes and hyperslab reads
 * with every failure reported against the config key that named the file. */
#ifndef STEM_STORED_FILE_H
#define STEM_STORED_FILE_H

#include <hdf5.h>

#include "../src/config.h"

/* Which stored dataset a reader wants, for its messages. */
typedef struct {
    const char *key;     /* "[simulation] potential_file" */
    const char *path;    /* the file */
    const char *dataset; /* "/potential" */
    const char *writer;  /* "[output] save_potential": the key that writes it */
} stem_stored;

/* Open the file read-only and the dataset, quietly (the errors are reported here). A
 * path that is not a regular file (a FIFO, a device, a directory) is refused before
 * HDF5 opens it, without blocking (STEM_ERR_INPUT). */
int stem_stored_open(const stem_stored *s, hid_t *file, hid_t *dset);
/* stem_stored_open in its two steps: the file, then its dataset s->dataset. */
int stem_stored_open_file(const stem_stored *s, hid_t *file);
int stem_stored_open_dataset(const stem_stored *s, hid_t file, hid_t *dset);
void stem_stored_close(hid_t file, hid_t dset);
/* The dataset's dimensions: exactly `rank` of them, else STEM_ERR_INPUT naming `axes`. */
int stem_stored_dims(const stem_stored *s, hid_t dset, int rank, const char *axes, hsize_t *dims);
/* A scalar double attribute of the dataset (missing: STEM_ERR_INPUT). */
int stem_stored_attr(const stem_stored *s, hid_t dset, const char *name, double *value);
/* A stored attribute against this run's value, to 1e-9 relative; what names it in the refusal. */
int stem_stored_match(const stem_stored *s, hid_t dset, const char *attr, double want, const char *what);
/* Read the hyperslab start/count (rank dims) of the dataset into buf as mem_type; float
 * values that are not finite are refused (STEM_ERR_INPUT, naming the item). */
int stem_stored_read(const stem_stored *s, int rank, const hsize_t *start, const hsize_t *count, hid_t mem_type,
                     void *buf);
/* The file is one a run finished (root attribute complete = 1, as stemsim writes last)
 * and the dataset's storage was written, not only declared (a dataset created and never
 * written reads HDF5's fill values); else STEM_ERR_INPUT naming file and dataset. */
int stem_stored_verify(const stem_stored *s, hid_t file, hid_t dset);

/* One of the writer's records, "config" or "plan" (the text the output's root attribute of
 * that name holds, or stemsim_<name> of /4DSTEM_simulation/log in an EMD file); malloc'd,
 * NULL when the file has none. */
char *stem_stored_record(hid_t file, const char *name);

/* A config key whose value the stored data were made with. */
typedef struct {
    const char *section, *key;
    int thermal_only; /* compared only when this run displaces atoms ([simulation] thermal) */
} stem_stored_key;
/* Each key of this run's config (cfg) against the config the file's writer recorded (the
 * root attribute config, or stemsim_config of /4DSTEM_simulation/log in an EMD file; a key
 * it lacks counts as its default): a difference is refused (STEM_ERR_CONFIG) naming the
 * key, both values and why (`why`: what the stored data hold). */
int stem_stored_check_keys(const stem_stored *s, hid_t file, const stem_config *cfg, const stem_stored_key *keys,
                           int n_keys, const char *why);

/* Key lists begin with [sample] tilt_x, tilt_y: this many, which a campaign compares by
 * its tilts' angles instead. */
#define STEM_STORED_TILT_KEYS 2

/* A campaign's sample tilt as stored (save_potential, save_smatrix in a campaign): the
 * dataset <group>/tilt_<index> of each tilt, with attributes tilt_x_deg, tilt_y_deg, and
 * the group's attribute tilts (how many). */
typedef struct {
    int index, count;
    double deg[2]; /* tilt_x, tilt_y */
} stem_stored_tilt;
void stem_stored_tilt_dataset(const char *group, int index, char *out, size_t n);
/* The file stores as many tilts as the campaign has, and the dataset this tilt's angles
 * (to 1e-9 relative); else STEM_ERR_INPUT naming both. */
int stem_stored_check_tilt(const stem_stored *s, hid_t file, hid_t dset, const char *group,
                           const stem_stored_tilt *tilt);

#endif
