/* Reading /smatrix back: see smatrix_file.h. */
#include "smatrix_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/stem.h"
#include "stored_file.h"

static stem_stored smatrix_dataset(const stem_plan *plan, const char *dataset)
{
    return (stem_stored){"[simulation] smatrix_file", plan->opt.smatrix_file, dataset, "[output] save_smatrix"};
}

/* A run's /smatrix, or a campaign's dataset of the plan's tilt (name: its buffer). */
static stem_stored smatrix_stack(const stem_plan *plan, char *name, size_t n)
{
    snprintf(name, n, "%s", STEM_SMATRIX_DATASET);
    if (plan->campaign_tilt) stem_stored_tilt_dataset(STEM_SMATRIX_TILTS_GROUP, plan->campaign_tilt - 1, name, n);
    return smatrix_dataset(plan, name);
}

/* A beam carries at most the unit plane wave's intensity (mean |S|^2 = 1 in vacuum; the
 * sample and the band limit only take some away); float rounding stays far below this. */
#define BEAM_MAX_INTENSITY 1.0001

/* What a stored S-matrix was made with besides what its attributes and beams say
 * (docs/physics.md, Potentials: "What a stored file was made with"). */
static const stem_stored_key smatrix_keys[] = {
    /* [sample] tilt_x, tilt_y first: STEM_STORED_TILT_KEYS */
    {"sample", "tilt_x", 0},         {"sample", "tilt_y", 0},
    {"sample", "rotation_z", 0},     {"simulation", "parametrisation", 0},
    {"simulation", "projection", 0}, {"simulation", "potential_radius", 0},
    {"simulation", "thermal", 0},    {"simulation", "seed", 1},
};

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
        err = STEM_FAIL(STEM_ERR_INPUT,
                        "%s %s: %llu beams, this run has %d ([probe] semiangle, beam tilt and "
                        "interpolation choose them)",
                        s.key, s.path, (unsigned long long)dims[0], plan->n_beams);
    int *k = err ? NULL : stem_calloc((size_t)plan->n_beams * 2, sizeof(int), "stored beam list");
    if (!err && !k) err = STEM_ERR_MEMORY;
    hsize_t start[2] = {0, 0};
    if (!err) err = stem_stored_read(&s, 2, start, dims, H5T_NATIVE_INT, k);
    for (int b = 0; !err && b < plan->n_beams; b++)
        if (k[2 * b] != plan->beam_kx[b] || k[2 * b + 1] != plan->beam_ky[b])
            err = STEM_FAIL(STEM_ERR_INPUT,
                            "%s %s: beam %d is (%d, %d), this run's is (%d, %d) ([probe] semiangle, "
                            "beam tilt and interpolation choose the beams)",
                            s.key, s.path, b, k[2 * b], k[2 * b + 1], plan->beam_kx[b], plan->beam_ky[b]);
    free(k);
    return err;
}

/* transmission_oversampling by the factor used, not the key's text (auto resolves from the
 * model and grid): the writer's plan records it ("formed on a 4x finer grid"). */
static int check_oversampling(const stem_plan *plan, const stem_stored *s, hid_t file, const stem_config *cfg)
{
    char *text = stem_stored_record(file, "plan");
    const char *at = text ? strstr(text, "formed on a ") : NULL;
    int m = 0;
    if (at && sscanf(at, "formed on a %dx", &m) != 1) m = 0;
    free(text);
    if (m < 1)
        return STEM_FAIL(STEM_ERR_INPUT,
                         "%s %s: its plan (root attribute plan) does not record the transmission "
                         "oversampling it was made with: not a stemsim output?",
                         s->key, s->path);
    if (m == plan->opt.oversampling) return STEM_OK;
    return STEM_FAIL(STEM_ERR_CONFIG,
                     "%s: [simulation] transmission_oversampling gives %d here, but %s %s was made "
                     "with %d: the stored S-matrix holds the transmission functions formed then; set "
                     "transmission_oversampling = %d as when it was written, or run without %s",
                     cfg->config_path, plan->opt.oversampling, s->key, s->path, m, m, s->key);
}

int stem_smatrix_file_check(const stem_plan *plan, const stem_config *cfg, const stem_stored_tilt *tilt)
{
    char name[64];
    stem_stored s = smatrix_stack(plan, name, sizeof name);
    hid_t file, dset;
    hsize_t dims[5] = {0};
    int err = stem_stored_open(&s, &file, &dset);
    if (!err) err = stem_stored_dims(&s, dset, 5, "configuration, beam, y, x, (re, im)", dims);
    if (!err && (dims[2] != (hsize_t)plan->crop_ny || dims[3] != (hsize_t)plan->crop_nx || dims[4] != 2))
        err = STEM_FAIL(STEM_ERR_INPUT,
                        "%s %s: each beam %llu x %llu, this run's %d x %d (the grid, pixel_size and "
                        "interpolation must be as when it was written)",
                        s.key, s.path, (unsigned long long)dims[3], (unsigned long long)dims[2], plan->crop_nx,
                        plan->crop_ny);
    if (!err && dims[0] < (hsize_t)plan->n_configs)
        err = STEM_FAIL(STEM_ERR_INPUT, "%s %s: %llu configurations, this run needs %d (frozen_phonons)", s.key, s.path,
                        (unsigned long long)dims[0], plan->n_configs);
    if (!err) err = check_attrs(plan, &s, dset);
    if (!err) err = stem_stored_verify(&s, file, dset);
    if (!err && tilt) err = stem_stored_check_tilt(&s, file, dset, STEM_SMATRIX_TILTS_GROUP, tilt);
    int skip = tilt ? STEM_STORED_TILT_KEYS : 0; /* a campaign's tilts: compared angle by angle above */
    if (!err)
        err = stem_stored_check_keys(&s, file, cfg, smatrix_keys + skip,
                                     (int)(sizeof smatrix_keys / sizeof *smatrix_keys) - skip,
                                     "the stored S-matrix holds the sample as it was oriented, parametrised, "
                                     "projected and displaced then");
    if (!err) err = check_oversampling(plan, &s, file, cfg);
    stem_stored_close(file, dset);
    if (!err) err = check_beams(plan);
    if (!err && dims[0] > (hsize_t)plan->n_configs)
        stem_info("smatrix_file %s: using the first %d of its %llu configurations", s.path, plan->n_configs,
                  (unsigned long long)dims[0]);
    return err;
}

/* Each beam read: its mean intensity in (0, BEAM_MAX_INTENSITY] (all zeros: never written). */
static int check_beams_read(const stem_plan *plan, const stem_stored *s, int c, int b0, int b1, const stem_complex *S)
{
    size_t n = (size_t)plan->crop_nx * plan->crop_ny;
    for (int b = b0; b < b1; b++) {
        double sum = 0;
        const stem_complex *beam = S + (size_t)(b - b0) * n;
        for (size_t i = 0; i < n; i++)
            sum += (double)crealf(beam[i]) * crealf(beam[i]) + (double)cimagf(beam[i]) * cimagf(beam[i]);
        double mean = sum / (double)n;
        if (!(mean > 0 && mean <= BEAM_MAX_INTENSITY))
            return STEM_FAIL(STEM_ERR_INPUT,
                             "%s %s: beam %d of configuration %d has mean intensity %g, outside (0, %g] "
                             "(a unit plane wave through a sample: %s): the file is damaged; write it again with %s",
                             s->key, s->path, b, c, mean, BEAM_MAX_INTENSITY,
                             mean == 0 ? "all zeros, never written" : "more than came in", s->writer);
    }
    return STEM_OK;
}

int stem_smatrix_file_read(const stem_plan *plan, int c, int b0, int b1, stem_complex *S)
{
    char name[64];
    stem_stored s = smatrix_stack(plan, name, sizeof name);
    hsize_t start[5] = {(hsize_t)c, (hsize_t)b0, 0, 0, 0};
    hsize_t count[5] = {1, (hsize_t)(b1 - b0), (hsize_t)plan->crop_ny, (hsize_t)plan->crop_nx, 2};
    if (b1 <= b0) return STEM_OK;
    STEM_TRY(stem_stored_read(&s, 5, start, count, H5T_NATIVE_FLOAT, S));
    return check_beams_read(plan, &s, c, b0, b1, S);
}
