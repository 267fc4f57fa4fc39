/* Reading /potential back: see potential_file.h. */
#include "potential_file.h"

#include <hdf5.h>
#include <math.h>
#include <string.h>

#include "../src/stem.h"

/* Open the file and its dataset quietly (the errors are reported here, with the path). */
static int open_potential(const char *path, hid_t *file, hid_t *dset)
{
    *file = *dset = H5I_INVALID_HID;
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    *file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (*file < 0)
        return STEM_FAIL(STEM_ERR_INPUT, "[simulation] potential_file %s: cannot open it as an HDF5 file", path);
    *dset = H5Dopen2(*file, STEM_POTENTIAL_DATASET, H5P_DEFAULT);
    if (*dset < 0)
        return STEM_FAIL(STEM_ERR_INPUT, "[simulation] potential_file %s: no dataset %s (write it with [output] "
                         "save_potential = true)", path, STEM_POTENTIAL_DATASET);
    return STEM_OK;
}

static void close_potential(hid_t file, hid_t dset)
{
    if (dset >= 0) H5Dclose(dset);
    if (file >= 0) H5Fclose(file);
}

static int read_attr(const char *path, hid_t dset, const char *name, double *value)
{
    hid_t a = H5Aopen(dset, name, H5P_DEFAULT);
    int ok = a >= 0 && H5Aread(a, H5T_NATIVE_DOUBLE, value) >= 0;
    if (a >= 0) H5Aclose(a);
    return ok ? STEM_OK
              : STEM_FAIL(STEM_ERR_INPUT, "[simulation] potential_file %s: %s has no attribute %s", path,
                          STEM_POTENTIAL_DATASET, name);
}

static int same(double a, double b) { return fabs(a - b) <= 1e-9 * fmax(fabs(a), fabs(b)); }

static int check_open(const stem_plan *plan, const char *path, hid_t dset)
{
    hid_t space = H5Dget_space(dset);
    hsize_t dims[4] = {0};
    int rank = space >= 0 ? H5Sget_simple_extent_ndims(space) : -1;
    if (rank == 4) H5Sget_simple_extent_dims(space, dims, NULL);
    if (space >= 0) H5Sclose(space);
    if (rank != 4)
        return STEM_FAIL(STEM_ERR_INPUT, "[simulation] potential_file %s: %s has %d dimensions, expected 4 "
                         "(configuration, slice, y, x)", path, STEM_POTENTIAL_DATASET, rank);
    if ((long)dims[2] != plan->ny || (long)dims[3] != plan->nx)
        return STEM_FAIL(STEM_ERR_INPUT, "[simulation] potential_file %s: grid %llu x %llu, this run's is %d x %d "
                         "(set [simulation] grid_x, grid_y or pixel_size as when it was written)", path,
                         (unsigned long long)dims[3], (unsigned long long)dims[2], plan->nx, plan->ny);
    if ((long)dims[1] != plan->n_slices)
        return STEM_FAIL(STEM_ERR_INPUT, "[simulation] potential_file %s: %llu slices, this run has %d", path,
                         (unsigned long long)dims[1], plan->n_slices);
    if ((long)dims[0] < plan->n_configs)
        return STEM_FAIL(STEM_ERR_INPUT, "[simulation] potential_file %s: %llu configurations, this run needs %d "
                         "(frozen_phonons)", path, (unsigned long long)dims[0], plan->n_configs);
    double dz, cx, cy;
    STEM_TRY(read_attr(path, dset, "slice_thickness_angstrom", &dz));
    STEM_TRY(read_attr(path, dset, "cell_x_angstrom", &cx));
    STEM_TRY(read_attr(path, dset, "cell_y_angstrom", &cy));
    if (!same(dz, plan->dz))
        return STEM_FAIL(STEM_ERR_INPUT, "[simulation] potential_file %s: slices %.6g Angstrom thick, this run's are "
                         "%.6g", path, dz, plan->dz);
    if (!same(cx, plan->cell[0]) || !same(cy, plan->cell[1]))
        return STEM_FAIL(STEM_ERR_INPUT, "[simulation] potential_file %s: cell %.6g x %.6g Angstrom, this run's is "
                         "%.6g x %.6g", path, cx, cy, plan->cell[0], plan->cell[1]);
    if ((long)dims[0] > plan->n_configs)
        stem_info("potential_file %s: using the first %d of its %llu configurations", path, plan->n_configs,
                  (unsigned long long)dims[0]);
    return STEM_OK;
}

int stem_potential_file_check(const stem_plan *plan)
{
    const char *path = plan->opt.potential_file;
    hid_t file, dset;
    int err = open_potential(path, &file, &dset);
    if (!err) err = check_open(plan, path, dset);
    close_potential(file, dset);
    return err;
}

int stem_potential_file_read(const stem_plan *plan, int c, int s0, int s1, float *V)
{
    const char *path = plan->opt.potential_file;
    hid_t file, dset, fspace = H5I_INVALID_HID, mspace = H5I_INVALID_HID;
    int err = open_potential(path, &file, &dset);
    if (!err) {
        hsize_t start[4] = {(hsize_t)c, (hsize_t)s0, 0, 0}, count[4] = {1, (hsize_t)(s1 - s0), (hsize_t)plan->ny,
                                                                        (hsize_t)plan->nx};
        fspace = H5Dget_space(dset);
        mspace = H5Screate_simple(4, count, NULL);
        if (fspace < 0 || mspace < 0 || H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, count, NULL) < 0 ||
            H5Dread(dset, H5T_NATIVE_FLOAT, mspace, fspace, H5P_DEFAULT, V) < 0)
            err = STEM_FAIL(STEM_ERR_INPUT, "[simulation] potential_file %s: cannot read slices %d..%d of "
                            "configuration %d", path, s0, s1 - 1, c);
    }
    if (mspace >= 0) H5Sclose(mspace);
    if (fspace >= 0) H5Sclose(fspace);
    close_potential(file, dset);
    return err;
}
