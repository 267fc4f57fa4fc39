/* Reading /potential back: see potential_file.h. */
#include "potential_file.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../src/stem.h"
#include "h5_collective.h"
#include "stored_file.h"

/* |V| beyond this (V Angstrom) is no atom's: silicon peaks near 1.2e3 on a 0.025 Angstrom
 * grid, and the projected potential grows only logarithmically towards a nucleus. */
#define POTENTIAL_MAX 1e6

/* What a stored potential was made with that this run cannot change (docs/physics.md, Potentials: "What a
 * stored file was made with"). */
static const stem_stored_key potential_keys[] = {
    /* [sample] tilt_x, tilt_y first: STEM_STORED_TILT_KEYS */
    {"sample", "tilt_x", 0},         {"sample", "tilt_y", 0},
    {"sample", "rotation_z", 0},     {"simulation", "parametrisation", 0},
    {"simulation", "projection", 0}, {"simulation", "potential_radius", 0},
    {"simulation", "thermal", 0},    {"simulation", "seed", 1},
};

/* A run's /potential, or a campaign's dataset of the plan's tilt (name: its buffer). */
static stem_stored potential_dataset(const stem_plan *plan, char *name, size_t n)
{
    snprintf(name, n, "%s", STEM_POTENTIAL_DATASET);
    if (plan->campaign_tilt) stem_stored_tilt_dataset(STEM_POTENTIAL_TILTS_GROUP, plan->campaign_tilt - 1, name, n);
    return (stem_stored){"[simulation] potential_file", plan->opt.potential_file, name, "[output] save_potential"};
}

static int check_open(const stem_plan *plan, const stem_stored *s, hid_t dset)
{
    hsize_t dims[4] = {0};
    STEM_TRY(stem_stored_dims(s, dset, 4, "configuration, slice, y, x", dims));
    if ((long)dims[2] != plan->pot_ny || (long)dims[3] != plan->pot_nx)
        return STEM_FAIL(STEM_ERR_INPUT,
                         "%s %s: grid %llu x %llu, this run's potential grid is %d x %d (set [simulation] "
                         "grid_x, grid_y or pixel_size, and transmission_oversampling, as when it was written)",
                         s->key, s->path, (unsigned long long)dims[3], (unsigned long long)dims[2], plan->pot_nx,
                         plan->pot_ny);
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

/* Every configuration the run uses holds a slice that is not all zeros (a slice of vacuum
 * may be zero; a whole sample cannot); every slice read is checked on the way. */
static int check_content(const stem_plan *plan, const stem_stored *s)
{
    float *V = stem_alloc(sizeof(float) * (size_t)plan->pot_nx * plan->pot_ny, "one stored potential slice");
    if (!V) return STEM_ERR_MEMORY;
    int err = STEM_OK;
    for (int c = 0; !err && c < plan->n_configs; c++) {
        int nonzero = 0;
        for (int k = 0; !err && !nonzero && k < plan->n_slices; k++) {
            err = stem_potential_file_read(plan, c, k, k + 1, V);
            for (long i = 0; !err && !nonzero && i < (long)plan->pot_nx * plan->pot_ny; i++) nonzero = V[i] != 0;
        }
        if (!err && !nonzero)
            err = STEM_FAIL(STEM_ERR_INPUT,
                            "%s %s: configuration %d of %s is all zeros (never written, or a model "
                            "without atoms): the file is damaged; write it again with %s",
                            s->key, s->path, c, s->dataset, s->writer);
    }
    free(V);
    return err;
}

/* An imported potential (docs/physics.md, "Potentials from elsewhere"): the file names its
 * source (root attribute potential_source) instead of recording a stemsim config, so there is
 * nothing to compare the run's keys with. */
static void say_imported(const stem_plan *plan, const stem_stored *s, const char *source)
{
    if (plan->layout.world_rank == 0)
        stem_info("potential_file %s: imported (potential_source \"%s\"): its tilt, rotation, parametrisation and "
                  "thermal displacements are the file's; stemsim checks only its grid, cell, slices and values",
                  s->path, source);
}

/* An imported potential holds one orientation: a campaign over sample tilts cannot read it. */
static int refuse_imported_tilts(const stem_stored *s, const char *source)
{
    return STEM_FAIL(STEM_ERR_INPUT,
                     "%s %s: an imported potential (potential_source \"%s\") holds one orientation of the "
                     "sample; a [series] or checkpointed campaign over sample tilts needs each tilt's slices "
                     "(write one file per tilt and run each as its own job)",
                     s->key, s->path, source);
}

int stem_potential_file_check(const stem_plan *plan, const stem_config *cfg, const stem_stored_tilt *tilt)
{
    char name[64];
    stem_stored s = potential_dataset(plan, name, sizeof name);
    hid_t dset = H5I_INVALID_HID, file;
    int err = stem_stored_open_file(&s, &file);
    char *source = err ? NULL : stem_h5_attr_read_text(file, "potential_source");
    if (source && tilt)
        err = refuse_imported_tilts(&s, source);
    else if (source)
        say_imported(plan, &s, source);
    if (!err) err = stem_stored_open_dataset(&s, file, &dset);
    if (!err) err = stem_stored_verify(&s, file, dset);
    if (!err && tilt) err = stem_stored_check_tilt(&s, file, dset, STEM_POTENTIAL_TILTS_GROUP, tilt);
    if (!err) err = check_open(plan, &s, dset);
    if (!err) err = check_content(plan, &s);
    int skip = tilt ? STEM_STORED_TILT_KEYS : 0; /* a campaign's tilts: compared angle by angle above */
    if (!err && !source)
        err = stem_stored_check_keys(&s, file, cfg, potential_keys + skip,
                                     (int)(sizeof potential_keys / sizeof *potential_keys) - skip,
                                     "the stored slices hold the sample as it was oriented, parametrised, projected "
                                     "and displaced then");
    free(source);
    stem_stored_close(file, dset);
    return err;
}

/* A value no potential reaches: the file is damaged. */
static int check_plausible(const stem_stored *s, int c, int s0, int s1, long plane, const float *V)
{
    for (long i = 0; i < (long)(s1 - s0) * plane; i++)
        if (fabsf(V[i]) > POTENTIAL_MAX)
            return STEM_FAIL(STEM_ERR_INPUT,
                             "%s %s: %s holds %g V Angstrom at configuration %d, slice %ld, beyond any "
                             "atom's projected potential (|V| <= %g): the file is damaged; write it again",
                             s->key, s->path, s->dataset, V[i], c, s0 + i / plane, POTENTIAL_MAX);
    return STEM_OK;
}

int stem_potential_file_read(const stem_plan *plan, int c, int s0, int s1, float *V)
{
    char name[64];
    stem_stored s = potential_dataset(plan, name, sizeof name);
    hsize_t start[4] = {(hsize_t)c, (hsize_t)s0, 0, 0};
    hsize_t count[4] = {1, (hsize_t)(s1 - s0), (hsize_t)plan->pot_ny, (hsize_t)plan->pot_nx};
    STEM_TRY(stem_stored_read(&s, 4, start, count, H5T_NATIVE_FLOAT, V));
    return check_plausible(&s, c, s0, s1, (long)plan->pot_nx * plan->pot_ny, V);
}

int stem_potential_file_read_rows(const stem_plan *plan, int c, int s, long row0, long rows, float *V)
{
    char name[64];
    stem_stored st = potential_dataset(plan, name, sizeof name);
    hsize_t start[4] = {(hsize_t)c, (hsize_t)s, (hsize_t)row0, 0};
    hsize_t count[4] = {1, 1, (hsize_t)rows, (hsize_t)plan->pot_nx};
    if (rows <= 0) return STEM_OK;
    STEM_TRY(stem_stored_read(&st, 4, start, count, H5T_NATIVE_FLOAT, V));
    return check_plausible(&st, c, s, s + 1, rows * plan->pot_nx, V);
}
