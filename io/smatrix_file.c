/* Reading /smatrix back: see smatrix_file.h. */
#include "smatrix_file.h"

#include <stdlib.h>

#include "../src/stem.h"
#include "stored_file.h"

static stem_stored smatrix_dataset(const stem_plan *plan, const char *dataset)
{
    return (stem_stored){"[simulation] smatrix_file", plan->opt.smatrix_file, dataset, "[output] save_smatrix"};
}

/* What the S-matrix depends on besides the sample: each a scalar attribute of /smatrix. */
static int check_attrs(const stem_plan *plan, const stem_stored *s, hid_t dset)
{
    STEM_TRY(stem_stored_match(s, dset, "wavelength_angstrom", plan->lambda, "wavelength (Angstrom; [beam] energy)"));
    STEM_TRY(stem_stored_match(s, dset, "grid_x", plan->nx, "grid along x"));
    STEM_TRY(stem_stored_match(s, dset, "grid_y", plan->ny, "grid along y"));
    STEM_TRY(stem_stored_match(s, dset, "cell_x_angstrom", plan->cell[0], "cell along x (Angstrom)"));
    STEM_TRY(stem_stored_match(s, dset, "cell_y_angstrom", plan->cell[1], "cell along y (Angstrom)"));
    STEM_TRY(stem_stored_match(s, dset, "slice_thickness_angstrom", plan->dz, "slices (Angstrom thick)"));
    STEM_TRY(stem_stored_match(s, dset, "slices", plan->n_slices, "number of slices"));
    STEM_TRY(stem_stored_match(s, dset, "last_slice_thickness_angstrom", plan->dz_last,
                               "last slice (Angstrom thick; the cell's thickness)"));
    STEM_TRY(stem_stored_match(s, dset, "interpolation_x", plan->fx, "interpolation_x"));
    return stem_stored_match(s, dset, "interpolation_y", plan->fy, "interpolation_y");
}

static int check_beams(const stem_plan *plan)
{
    stem_stored s = smatrix_dataset(plan, STEM_SMATRIX_BEAMS_DATASET);
    hid_t file, dset;
    hsize_t dims[2] = {0};
    int err = stem_stored_open(&s, &file, &dset);
    if (!err) err = stem_stored_dims(&s, dset, 2, "beam, (kx, ky)", dims);
    stem_stored_close(file, dset);
    if (!err && (dims[0] != (hsize_t)plan->n_beams || dims[1] != 2))
        err = STEM_FAIL(STEM_ERR_INPUT, "%s %s: %llu beams, this run has %d ([probe] semiangle, beam tilt and "
                        "interpolation choose them)", s.key, s.path, (unsigned long long)dims[0], plan->n_beams);
    int *k = err ? NULL : stem_calloc((size_t)plan->n_beams * 2, sizeof(int), "stored beam list");
    if (!err && !k) err = STEM_ERR_MEMORY;
    hsize_t start[2] = {0, 0};
    if (!err) err = stem_stored_read(&s, 2, start, dims, H5T_NATIVE_INT, k);
    for (int b = 0; !err && b < plan->n_beams; b++)
        if (k[2 * b] != plan->beam_kx[b] || k[2 * b + 1] != plan->beam_ky[b])
            err = STEM_FAIL(STEM_ERR_INPUT, "%s %s: beam %d is (%d, %d), this run's is (%d, %d) ([probe] semiangle, "
                            "beam tilt and interpolation choose the beams)", s.key, s.path, b, k[2 * b], k[2 * b + 1],
                            plan->beam_kx[b], plan->beam_ky[b]);
    free(k);
    return err;
}

int stem_smatrix_file_check(const stem_plan *plan)
{
    stem_stored s = smatrix_dataset(plan, STEM_SMATRIX_DATASET);
    hid_t file, dset;
    hsize_t dims[5] = {0};
    int err = stem_stored_open(&s, &file, &dset);
    if (!err) err = stem_stored_dims(&s, dset, 5, "configuration, beam, y, x, (re, im)", dims);
    if (!err && (dims[2] != (hsize_t)plan->crop_ny || dims[3] != (hsize_t)plan->crop_nx || dims[4] != 2))
        err = STEM_FAIL(STEM_ERR_INPUT, "%s %s: each beam %llu x %llu, this run's %d x %d (the grid, pixel_size and "
                        "interpolation must be as when it was written)", s.key, s.path, (unsigned long long)dims[3],
                        (unsigned long long)dims[2], plan->crop_nx, plan->crop_ny);
    if (!err && dims[0] < (hsize_t)plan->n_configs)
        err = STEM_FAIL(STEM_ERR_INPUT, "%s %s: %llu configurations, this run needs %d (frozen_phonons)", s.key, s.path,
                        (unsigned long long)dims[0], plan->n_configs);
    if (!err) err = check_attrs(plan, &s, dset);
    stem_stored_close(file, dset);
    if (!err) err = check_beams(plan);
    if (!err && dims[0] > (hsize_t)plan->n_configs)
        stem_info("smatrix_file %s: using the first %d of its %llu configurations", s.path, plan->n_configs,
                  (unsigned long long)dims[0]);
    return err;
}

int stem_smatrix_file_read(const stem_plan *plan, int c, int b0, int b1, stem_complex *S)
{
    stem_stored s = smatrix_dataset(plan, STEM_SMATRIX_DATASET);
    hsize_t start[5] = {(hsize_t)c, (hsize_t)b0, 0, 0, 0};
    hsize_t count[5] = {1, (hsize_t)(b1 - b0), (hsize_t)plan->crop_ny, (hsize_t)plan->crop_nx, 2};
    return b1 > b0 ? stem_stored_read(&s, 5, start, count, H5T_NATIVE_FLOAT, S) : STEM_OK;
}
