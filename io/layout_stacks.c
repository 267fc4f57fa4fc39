/* The stored stacks of stemsim's layout (docs/output.md): [output] save_potential's
 * /potential and save_smatrix's /smatrix with /smatrix_beams (a campaign's: a dataset per
 * sample tilt in /potential_tilts, /smatrix_tilts), written plane by plane through
 * stem_h5_write_stack as the run computes or reads them. A piece of io/layout.c. */
#include "layout_private.h"

#include "potential_file.h"
#include "smatrix_file.h"

#include <stdio.h>
#include <stdlib.h>

/* A stored stack (/potential, /smatrix) on its way through stem_h5_write_stack: float32
 * [configuration][item][ny][nx] (+ [2]); /potential's item i is configuration i / n_slices,
 * slice i % n_slices, and in each collective round every rank computes (or reads) one item
 * and writes it, the others of the last round nothing. */
typedef struct {
    const stem_output *o;
    const char *name;
    const stem_output_attr *attrs;
    int n_attrs;
    int tilt; /* a campaign's sample tilt (0 in a run) */
} stem_output_stacking;

static int stem_output_stack_attrs(void *ctx, hid_t dset)
{
    const stem_output_stacking *s = ctx;
    return stem_output_attrs(s->o, dset, s->name, s->attrs, s->n_attrs);
}

static int stem_output_write_stack(const stem_output *o, stem_h5_stack st, const stem_output_attr *attrs, int n_attrs,
                                   int tilt)
{
    stem_output_stacking s = {o, st.name, attrs, n_attrs, tilt};
    st.attrs = stem_output_stack_attrs;
    st.ctx = &s;
    return stem_h5_write_stack(&o->h5, &st);
}

/* Where a stored stack goes: a run's one dataset, or a campaign's tilt t's in its group
 * (created, with the number of tilts, before the first). */
static int stem_output_stack_place(const stem_output *o, const char *single, const char *group, int t, char *name,
                                   size_t n)
{
    snprintf(name, n, "%s", single);
    if (!o->stored->n_tilts) return STEM_OK;
    stem_stored_tilt_dataset(group, t, name, n);
    if (t) return STEM_OK;
    STEM_TRY(stem_h5_group(&o->h5, group));
    hid_t g = H5Gopen2(o->h5.file, group, H5P_DEFAULT);
    int rc = stem_h5_agree(
        o->h5.comm, g >= 0 ? STEM_OK : STEM_FAIL(STEM_ERR_IO, "output %s: cannot open group %s", o->h5.path, group));
    if (!rc) rc = stem_h5_put_int(&o->h5, g, group, "tilts", o->stored->n_tilts);
    if (g >= 0) H5Gclose(g);
    return rc;
}

/* The plan of a stored stack: a run's, or a campaign's tilt t's (its slices). */
static const stem_plan *stem_output_stack_plan(const stem_output *o, int t)
{
    return o->stored->n_tilts ? o->stored->tilt_plans[t] : o->plan;
}

/* A campaign's tilt angles close each stored stack's attributes (none in a run). */
static int stem_output_stack_n_attrs(const stem_output *o, int n_attrs)
{
    return o->stored->n_tilts ? n_attrs : n_attrs - 2;
}

static int potential_plane(void *ctx, int c, int s, float *V)
{
    const stem_output_stacking *st = ctx;
    const stem_output *o = st->o;
    return o->stored->potential->slices(o->stored->potential->ctx, st->tilt, c, s, s + 1, V);
}

static int stem_output_potential_tilt(const stem_output *o, int t)
{
    const stem_plan *plan = stem_output_stack_plan(o, t);
    char name[64];
    int rc = stem_h5_agree(
        o->h5.comm,
        stem_output_stack_place(o, STEM_POTENTIAL_DATASET, STEM_POTENTIAL_TILTS_GROUP, t, name, sizeof name));
    if (rc) return rc;
    stem_h5_stack st = {
        .name = name,
        .rank = 4,
        .dims = {(hsize_t)plan->n_configs, (hsize_t)plan->n_slices, (hsize_t)plan->pot_ny, (hsize_t)plan->pot_nx},
        .plane = potential_plane};
    const double *deg = o->stored->n_tilts ? &o->stored->tilt_deg[2 * t] : NULL;
    const stem_output_attr attrs[] = {
        {"units", "V Angstrom", 0},
        {"axes", "configuration, slice, y, x", 0},
        {"content",
         "projected potential of each slice as its transmission function uses it, on a grid "
         "transmission_oversampling times finer than the run's, band-limited to 2/3 of its Nyquist: "
         "t = exp(i sigma V), then band-limited to the run's band",
         0},
        {"parametrisation", o->stored->potential->parametrisation, 0},
        {"projection", o->stored->potential->projection, 0},
        {"slice_thickness_angstrom", NULL, plan->dz},
        {"transmission_oversampling", NULL, plan->opt.oversampling},
        {"cell_x_angstrom", NULL, plan->cell[0]},
        {"cell_y_angstrom", NULL, plan->cell[1]},
        {"tilt_x_deg", NULL, deg ? deg[0] : 0},
        {"tilt_y_deg", NULL, deg ? deg[1] : 0},
    };
    return stem_output_write_stack(o, st, attrs, stem_output_stack_n_attrs(o, (int)(sizeof attrs / sizeof *attrs)), t);
}

int stem_layout_potential_stack(const stem_output *o)
{
    if (!o->stored || !o->stored->potential) return STEM_OK;
    int rc = STEM_OK;
    for (int t = 0; t < (o->stored->n_tilts ? o->stored->n_tilts : 1) && !rc; t++)
        rc = stem_output_potential_tilt(o, t);
    return rc;
}

static int smatrix_plane(void *ctx, int c, int b, float *S)
{
    const stem_output_stacking *st = ctx;
    const stem_output *o = st->o;
    return o->stored->smatrix->beam(o->stored->smatrix->ctx, st->tilt, c, b, S);
}

/* /smatrix_beams [beam][kx, ky] (rank 0 writes it whole). */
static int stem_output_smatrix_beams(const stem_output *o)
{
    const stem_plan *plan = o->plan;
    int *k = stem_calloc((size_t)plan->n_beams * 2, sizeof(int), "beam list");
    int rc = stem_h5_agree(o->h5.comm, k ? STEM_OK : STEM_ERR_MEMORY);
    for (int b = 0; !rc && b < plan->n_beams; b++) k[2 * b] = plan->beam_kx[b], k[2 * b + 1] = plan->beam_ky[b];
    stem_output_attr beam_attrs[] = {{"units", "Fourier index on the grid_x x grid_y grid (q = k / cell)", 0},
                                     {"axes", "beam, (kx, ky)", 0}};
    stem_output_dataset d = {.name = STEM_SMATRIX_BEAMS_DATASET,
                             .file_type = H5T_STD_I32LE,
                             .mem_type = H5T_NATIVE_INT,
                             .rank = 2,
                             .dims = {(hsize_t)plan->n_beams, 2},
                             .grid = 0,
                             .data = k,
                             .attrs = beam_attrs,
                             .n_attrs = 2,
                             .fixed = 1};
    if (!rc) rc = stem_h5_agree(o->h5.comm, stem_output_write_dataset(o, &d));
    free(k);
    return rc;
}

static int stem_output_smatrix_tilt(const stem_output *o, int t)
{
    const stem_plan *plan = stem_output_stack_plan(o, t);
    char name[64];
    int rc = stem_h5_agree(
        o->h5.comm, stem_output_stack_place(o, STEM_SMATRIX_DATASET, STEM_SMATRIX_TILTS_GROUP, t, name, sizeof name));
    if (rc) return rc;
    stem_h5_stack st = {
        .name = name,
        .rank = 5,
        .dims = {(hsize_t)plan->n_configs, (hsize_t)plan->n_beams, (hsize_t)plan->crop_ny, (hsize_t)plan->crop_nx, 2},
        .plane = smatrix_plane};
    const double *deg = o->stored->n_tilts ? &o->stored->tilt_deg[2 * t] : NULL;
    const stem_output_attr attrs[] = {
        {"axes", "configuration, beam, y, x, (real, imaginary)", 0},
        {"content",
         "PRISM's compact S-matrix: each beam's plane wave (/smatrix_beams) through the sample, cut to "
         "the band-limited Fourier box of crop_ny x crop_nx and transformed back; a unit plane wave in "
         "vacuum has modulus 1",
         0},
        {"wavelength_angstrom", NULL, plan->lambda},
        {"grid_x", NULL, plan->nx},
        {"grid_y", NULL, plan->ny},
        {"cell_x_angstrom", NULL, plan->cell[0]},
        {"cell_y_angstrom", NULL, plan->cell[1]},
        {"slice_thickness_angstrom", NULL, plan->dz},
        {"last_slice_thickness_angstrom", NULL, plan->dz_last},
        {"slices", NULL, plan->n_slices},
        {"interpolation_x", NULL, plan->fx},
        {"interpolation_y", NULL, plan->fy},
        {"tilt_x_deg", NULL, deg ? deg[0] : 0},
        {"tilt_y_deg", NULL, deg ? deg[1] : 0},
    };
    return stem_output_write_stack(o, st, attrs, stem_output_stack_n_attrs(o, (int)(sizeof attrs / sizeof *attrs)), t);
}

int stem_layout_smatrix_stack(const stem_output *o)
{
    if (!o->stored || !o->stored->smatrix) return STEM_OK;
    int rc = stem_output_smatrix_beams(o);
    for (int t = 0; t < (o->stored->n_tilts ? o->stored->n_tilts : 1) && !rc; t++) rc = stem_output_smatrix_tilt(o, t);
    return rc;
}
