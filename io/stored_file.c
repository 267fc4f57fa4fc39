/* Stored datasets read back: see stored_file.h. */
#include "stored_file.h"

#include <math.h>

#include "../src/stem.h"

int stem_stored_open(const stem_stored *s, hid_t *file, hid_t *dset)
{
    *file = *dset = H5I_INVALID_HID;
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    *file = H5Fopen(s->path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (*file < 0) return STEM_FAIL(STEM_ERR_INPUT, "%s %s: cannot open it as an HDF5 file", s->key, s->path);
    *dset = H5Dopen2(*file, s->dataset, H5P_DEFAULT);
    if (*dset < 0)
        return STEM_FAIL(STEM_ERR_INPUT, "%s %s: no dataset %s (write it with %s = true)", s->key, s->path, s->dataset,
                         s->writer);
    return STEM_OK;
}

void stem_stored_close(hid_t file, hid_t dset)
{
    if (dset >= 0) H5Dclose(dset);
    if (file >= 0) H5Fclose(file);
}

int stem_stored_dims(const stem_stored *s, hid_t dset, int rank, const char *axes, hsize_t *dims)
{
    hid_t space = H5Dget_space(dset);
    int got = space >= 0 ? H5Sget_simple_extent_ndims(space) : -1;
    if (got == rank) H5Sget_simple_extent_dims(space, dims, NULL);
    if (space >= 0) H5Sclose(space);
    if (got != rank)
        return STEM_FAIL(STEM_ERR_INPUT, "%s %s: %s has %d dimensions, expected %d (%s)", s->key, s->path, s->dataset,
                         got, rank, axes);
    return STEM_OK;
}

int stem_stored_attr(const stem_stored *s, hid_t dset, const char *name, double *value)
{
    hid_t a = H5Aopen(dset, name, H5P_DEFAULT);
    int ok = a >= 0 && H5Aread(a, H5T_NATIVE_DOUBLE, value) >= 0;
    if (a >= 0) H5Aclose(a);
    return ok ? STEM_OK
              : STEM_FAIL(STEM_ERR_INPUT, "%s %s: %s has no attribute %s", s->key, s->path, s->dataset, name);
}

int stem_stored_match(const stem_stored *s, hid_t dset, const char *attr, double want, const char *what)
{
    double got;
    STEM_TRY(stem_stored_attr(s, dset, attr, &got));
    if (fabs(got - want) <= 1e-9 * fmax(fabs(got), fabs(want))) return STEM_OK;
    return STEM_FAIL(STEM_ERR_INPUT, "%s %s: %s %.6g, this run's is %.6g", s->key, s->path, what, got, want);
}

int stem_stored_read(const stem_stored *s, int rank, const hsize_t *start, const hsize_t *count, hid_t mem_type,
                     void *buf)
{
    hid_t file, dset, fspace = H5I_INVALID_HID, mspace = H5I_INVALID_HID;
    int err = stem_stored_open(s, &file, &dset);
    if (!err) {
        fspace = H5Dget_space(dset);
        mspace = H5Screate_simple(rank, count, NULL);
        if (fspace < 0 || mspace < 0 || H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, count, NULL) < 0 ||
            H5Dread(dset, mem_type, mspace, fspace, H5P_DEFAULT, buf) < 0)
            err = STEM_FAIL(STEM_ERR_INPUT, "%s %s: cannot read %s (item %llu, %llu)", s->key, s->path, s->dataset,
                            (unsigned long long)start[0], (unsigned long long)start[1]);
    }
    if (mspace >= 0) H5Sclose(mspace);
    if (fspace >= 0) H5Sclose(fspace);
    stem_stored_close(file, dset);
    return err;
}
