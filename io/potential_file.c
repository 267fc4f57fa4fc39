/* Reading /potential back: see potential_file.h. */
#include "potential_file.h"

#include "../src/stem.h"
#include "stored_file.h"

static stem_stored potential_dataset(const stem_plan *plan)
{
    return (stem_stored){"[simulation] potential_file", plan->opt.potential_file, STEM_POTENTIAL_DATASET,
                         "[output] save_potential"};
}

static int check_open(const stem_plan *plan, const stem_stored *s, hid_t dset)
{
    hsize_t dims[4] = {0};
    STEM_TRY(stem_stored_dims(s, dset, 4, "configuration, slice, y, x", dims));
    if ((long)dims[2] != plan->pot_ny || (long)dims[3] != plan->pot_nx)
        return STEM_FAIL(STEM_ERR_INPUT, "%s %s: grid %llu x %llu, this run's potential grid is %d x %d (set [simulation] "
                         "grid_x, grid_y or pixel_size, and transmission_oversampling, as when it was written)", s->key,
                         s->path, (unsigned long long)dims[3], (unsigned long long)dims[2], plan->pot_nx, plan->pot_ny);
    if ((long)dims[1] != plan->n_slices)
        return STEM_FAIL(STEM_ERR_INPUT, "%s %s: %llu slices, this run has %d", s->key, s->path,
                         (unsigned long long)dims[1], plan->n_slices);
    if ((long)dims[0] < plan->n_configs)
        return STEM_FAIL(STEM_ERR_INPUT, "%s %s: %llu configurations, this run needs %d (frozen_phonons)", s->key,
                         s->path, (unsigned long long)dims[0], plan->n_configs);
    STEM_TRY(stem_stored_match(s, dset, "slice_thickness_angstrom", plan->dz, "slices (Angstrom thick)"));
    STEM_TRY(stem_stored_match(s, dset, "cell_x_angstrom", plan->cell[0], "cell along x (Angstrom)"));
    STEM_TRY(stem_stored_match(s, dset, "cell_y_angstrom", plan->cell[1], "cell along y (Angstrom)"));
    if ((long)dims[0] > plan->n_configs)
        stem_info("potential_file %s: using the first %d of its %llu configurations", s->path, plan->n_configs,
                  (unsigned long long)dims[0]);
    return STEM_OK;
}

int stem_potential_file_check(const stem_plan *plan)
{
    stem_stored s = potential_dataset(plan);
    hid_t file, dset;
    int err = stem_stored_open(&s, &file, &dset);
    if (!err) err = check_open(plan, &s, dset);
    stem_stored_close(file, dset);
    return err;
}

int stem_potential_file_read(const stem_plan *plan, int c, int s0, int s1, float *V)
{
    stem_stored s = potential_dataset(plan);
    hsize_t start[4] = {(hsize_t)c, (hsize_t)s0, 0, 0};
    hsize_t count[4] = {1, (hsize_t)(s1 - s0), (hsize_t)plan->pot_ny, (hsize_t)plan->pot_nx};
    return stem_stored_read(&s, 4, start, count, H5T_NATIVE_FLOAT, V);
}
