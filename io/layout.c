/* stemsim's own HDF5 layout: which datasets, with which attributes and units, one small
 * writer per dataset kind, driven by the channel table (src/channels.h). The layout is
 * documented once, in docs/output.md; tests/integration (check_h5.py, interop.py,
 * python_pkg.py) read it back. The writing itself (collective transfers, agreed
 * steps) is io/h5_collective.c's; the stored stacks (/potential, /smatrix) are
 * io/layout_stacks.c's. */
#include "layout_private.h"

#include "../src/build_info.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STEM_OUTPUT_INTENSITY "fraction of incident intensity"

/* Length of the longest 1D axis (scan, rings, detector). */
int stem_layout_longest_axis(const stem_plan *plan, const stem_output_series *series)
{
    /* the written patterns' bins too: square q (cbed_square_q = N) has up to N times the detector's pixels */
    const int n[9] = {plan->scan_nx, plan->scan_ny, plan->n_bins,  plan->out_nx, plan->out_ny,
                      plan->nx,      plan->ny,      plan->cbed_nx, plan->cbed_ny};
    int m = 1;
    for (int i = 0; i < 9; i++)
        if (n[i] > m) m = n[i];
    for (int a = 0; series && a < STEM_OUTPUT_MAX_LEAD; a++)
        if (series->lead_n[a] > m) m = series->lead_n[a];
    return m;
}

int stem_output_attrs(const stem_output *o, hid_t loc, const char *where, const stem_output_attr *a, int n)
{
    for (int i = 0; i < n; i++) {
        static const char grid_axes[] = "scan_y, scan_x";
        if (a[i].text && o->plan->positions && !strncmp(a[i].text, grid_axes, strlen(grid_axes))) {
            char probe_axis[256]; /* [scan] positions: the grid's two axes are one probe axis */
            snprintf(probe_axis, sizeof probe_axis, "probe%s", a[i].text + strlen(grid_axes));
            STEM_TRY(stem_h5_put_string(&o->h5, loc, where, a[i].name, probe_axis));
        } else if (a[i].text)
            STEM_TRY(stem_h5_put_string(&o->h5, loc, where, a[i].name, a[i].text));
        else
            STEM_TRY(stem_h5_put_double(&o->h5, loc, where, a[i].name, a[i].value));
    }
    return STEM_OK;
}

/* One block of whole scan positions: rows y..y+ny-1, columns x..x+nx-1. */
typedef struct {
    hsize_t y, x, ny, nx;
} stem_output_block;

/* The flattened probes [begin, begin+count) seen as rows of the scan grid:
 * a partial first row, full rows, a partial last row (any may be absent).
 * Returns the number of blocks (at most 3). */
static int stem_output_probe_blocks(hsize_t begin, hsize_t count, hsize_t nx, stem_output_block b[3])
{
    const hsize_t last = begin + count - 1;
    const hsize_t y0 = begin / nx, x0 = begin % nx, y1 = last / nx, x1 = last % nx;
    int n = 0;
    if (y0 == y1) {
        b[n++] = (stem_output_block){y0, x0, 1, x1 - x0 + 1};
        return n;
    }
    hsize_t ya = x0 > 0 ? y0 + 1 : y0, yb = x1 < nx - 1 ? y1 - 1 : y1; /* full rows ya..yb */
    if (x0 > 0) b[n++] = (stem_output_block){y0, x0, 1, nx - x0};
    if (ya <= yb) b[n++] = (stem_output_block){ya, 0, yb - ya + 1, nx};
    if (x1 < nx - 1) b[n++] = (stem_output_block){y1, 0, 1, x1 + 1};
    return n;
}

/* Select this rank's probes as the union of their blocks. HDF5 visits a
 * selection in row-major order, which is probe order, so the probe-major
 * memory buffer lines up. */
static int stem_output_select_probes(const stem_output *o, hid_t space, const stem_output_dataset *d, int lead)
{
    if (d->grid == 3) { /* this rank's rows of the wave's images */
        const stem_plan *plan = o->plan;
        if (!o->writes || plan->dist_rows == 0) return H5Sselect_none(space) < 0 ? STEM_ERR_IO : STEM_OK;
        hsize_t start[STEM_OUTPUT_MAX_LEAD + 6] = {0}, count[STEM_OUTPUT_MAX_LEAD + 6] = {0};
        for (int k = 0; k < lead; k++) start[k] = o->at[k], count[k] = 1;
        count[lead] = 1; /* the probe axis of length 1 */
        start[lead + 1] = (hsize_t)plan->dist_row0;
        count[lead + 1] = (hsize_t)plan->dist_rows;
        for (int k = 2; k < d->rank; k++) count[lead + k] = d->dims[k];
        return H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL) < 0 ? STEM_ERR_IO : STEM_OK;
    }
    if (o->count == 0) return H5Sselect_none(space) < 0 ? STEM_ERR_IO : STEM_OK;
    if (d->grid == 2) { /* one probe axis: this rank's probes are one block */
        hsize_t start[STEM_OUTPUT_MAX_LEAD + 6] = {0}, count[STEM_OUTPUT_MAX_LEAD + 6] = {0};
        for (int k = 0; k < lead; k++) start[k] = o->at[k], count[k] = 1;
        start[lead] = o->begin;
        count[lead] = o->count;
        for (int k = 1; k < d->rank; k++) count[lead + k] = d->dims[k];
        return H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL) < 0 ? STEM_ERR_IO : STEM_OK;
    }
    stem_output_block b[3];
    int n = stem_output_probe_blocks(o->begin, o->count, d->dims[1], b);
    for (int i = 0; i < n; i++) {
        hsize_t start[STEM_OUTPUT_MAX_LEAD + 6] = {0}, count[STEM_OUTPUT_MAX_LEAD + 6] = {0};
        for (int k = 0; k < lead; k++) start[k] = o->at[k], count[k] = 1;
        start[lead] = b[i].y, start[lead + 1] = b[i].x;
        count[lead] = b[i].ny, count[lead + 1] = b[i].nx;
        for (int k = 2; k < d->rank; k++) count[lead + k] = d->dims[k];
        if (H5Sselect_hyperslab(space, i ? H5S_SELECT_OR : H5S_SELECT_SET, start, NULL, count, NULL) < 0)
            return STEM_ERR_IO;
    }
    return STEM_OK;
}

/* Rank 0's whole small dataset at the current series point. */
static int stem_output_select_point(const stem_output *o, hid_t space, const stem_output_dataset *d, int lead)
{
    hsize_t start[STEM_OUTPUT_MAX_LEAD + 6] = {0}, count[STEM_OUTPUT_MAX_LEAD + 6] = {0};
    for (int k = 0; k < lead; k++) start[k] = o->at[k], count[k] = 1;
    for (int k = 0; k < d->rank; k++) count[lead + k] = d->dims[k];
    return H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL) < 0 ? STEM_ERR_IO : STEM_OK;
}

/* Leading series axes of d (0: none). */
static int stem_output_lead(const stem_output *o, const stem_output_dataset *d) { return d->fixed ? 0 : o->n_lead; }

/* File and memory selections of this rank's part of a dataset. */
static int stem_output_select(const stem_output *o, const stem_output_dataset *d, hid_t fspace, hid_t *mspace)
{
    hsize_t mdims[6];
    int mrank;
    if (d->grid == 3) {
        /* memory: [local rows][trailing dims...] */
        mrank = d->rank - 1;
        mdims[0] = o->writes ? (hsize_t)o->plan->dist_rows : 0;
        for (int k = 2; k < d->rank; k++) mdims[k - 1] = d->dims[k];
    } else if (d->grid) {
        /* memory: [local probes][trailing dims...] */
        int first = d->grid == 2 ? 1 : 2; /* the first trailing dimension */
        mrank = d->rank - first + 1;
        mdims[0] = o->count;
        for (int k = first; k < d->rank; k++) mdims[k - first + 1] = d->dims[k];
        stem_output_block b[3];
        if (d->grid == 1 && o->count && stem_output_probe_blocks(o->begin, o->count, d->dims[1], b) == 1) {
            /* one rectangle of the scan: the memory shaped as the file's selection, which HDF5
             * maps onto chunks directly (not value by value) */
            mrank = d->rank;
            mdims[0] = b[0].ny, mdims[1] = b[0].nx;
            for (int k = 2; k < d->rank; k++) mdims[k] = d->dims[k];
        }
    } else {
        mrank = d->rank;
        memcpy(mdims, d->dims, sizeof mdims);
    }
    *mspace = H5Screate_simple(mrank, mdims, NULL);
    if (*mspace < 0) return STEM_ERR_IO;
    int lead = stem_output_lead(o, d);
    if (d->grid) {
        if ((d->grid == 3 ? mdims[0] : o->count) == 0 && H5Sselect_none(*mspace) < 0) return STEM_ERR_IO;
        return stem_output_select_probes(o, fspace, d, lead);
    }
    /* small datasets: rank 0 writes, the others join with empty selections */
    if (o->h5.rank != 0 && (H5Sselect_none(fspace) < 0 || H5Sselect_none(*mspace) < 0)) return STEM_ERR_IO;
    return o->h5.rank == 0 && lead ? stem_output_select_point(o, fspace, d, lead) : STEM_OK;
}

/* The "series_axes" attribute of a per-point dataset of a series. */
static int stem_output_series_attr(const stem_output *o, hid_t dset, const char *name)
{
    char axes[128] = "";
    for (int a = 0, k = 0; a < STEM_OUTPUT_MAX_LEAD && o->series; a++)
        if (o->series->lead_name[a])
            snprintf(axes + strlen(axes), sizeof axes - strlen(axes), "%s%s", k++ ? ", " : "", o->series->lead_name[a]);
    return stem_h5_put_string(&o->h5, dset, name, "series_axes", axes);
}

/* With [scan] positions a grid dataset's [1][n_probes] becomes one probe axis [n_probes]. */
static stem_output_dataset stem_output_probe_axis(const stem_output *o, const stem_output_dataset *d)
{
    stem_output_dataset p = *d;
    if (!d->grid || !(o->plan->positions || stem_plan_single_wave(o->plan))) return p;
    p.grid = 2;
    p.rank = d->rank - 1;
    p.dims[0] = (hsize_t)o->plan->n_probes;
    for (int k = 1; k < p.rank; k++) p.dims[k] = d->dims[k + 1];
    if (d->image_rows && o->plan->dist) p.grid = 3;
    return p;
}

/* A standard error's own attributes, beside those of the values it belongs to. */
static int stem_output_error_attrs(const stem_output *o, hid_t dset, const char *name)
{
    STEM_TRY(stem_h5_put_string(&o->h5, dset, name, "statistic",
                                "standard error of the mean over the frozen-phonon configurations: the sample "
                                "standard deviation of the per-configuration values (n - 1) divided by sqrt(n); "
                                "DPC: of the ratio of sums, to first order; with [probe] source_size blurred "
                                "like the values (an upper bound)"));
    STEM_TRY(stem_h5_put_string(&o->h5, dset, name, "standard_error_of", name + strlen(STEM_OUTPUT_ERRORS)));
    return stem_h5_put_int(&o->h5, dset, name, "n_configs", o->plan->n_configs);
}

/* One dataset of the layout on its way through stem_h5_write_dataset. */
typedef struct {
    const stem_output *o;
    const stem_output_dataset *d; /* shaped: with [scan] positions, one probe axis */
    int lead;
} stem_output_writing;

static int stem_output_select_part(void *ctx, hid_t fspace, hid_t *mspace)
{
    const stem_output_writing *w = ctx;
    const stem_output *o = w->o;
    if (stem_output_select(o, w->d, fspace, mspace) == STEM_OK) return STEM_OK;
    return STEM_FAIL(STEM_ERR_IO, "output %s: cannot select probes [%llu, %llu) of %s", o->h5.path,
                     (unsigned long long)o->begin, (unsigned long long)(o->begin + o->count), w->d->name);
}

/* A created dataset's attributes: its own, the series axes, what a standard error is. */
static int stem_output_dataset_attrs(void *ctx, hid_t dset)
{
    const stem_output_writing *w = ctx;
    const stem_output_dataset *d = w->d;
    int rc = stem_output_attrs(w->o, dset, d->name, d->attrs, d->n_attrs);
    if (w->lead && !rc) rc = stem_output_series_attr(w->o, dset, d->name);
    if (w->o->errors && !rc) rc = stem_output_error_attrs(w->o, dset, d->name);
    return rc;
}

/* Create a contiguous dataset (at the first series point; open it at the
 * others), write this rank's part collectively, add attributes. */
int stem_output_write_dataset(const stem_output *o, const stem_output_dataset *given)
{
    stem_output_dataset shaped = stem_output_probe_axis(o, given);
    stem_output_writing w = {o, &shaped, stem_output_lead(o, &shaped)};
    stem_h5_dataset h = {.name = shaped.name,
                         .file_type = shaped.file_type,
                         .mem_type = shaped.mem_type,
                         .rank = shaped.rank + w.lead,
                         .open = (w.lead && o->point > 0) || shaped.reopen,
                         .data = shaped.data,
                         .select = stem_output_select_part,
                         .attrs = stem_output_dataset_attrs,
                         .ctx = &w};
    memcpy(h.dims, o->lead, sizeof(hsize_t) * (size_t)w.lead);
    memcpy(h.dims + w.lead, shaped.dims, sizeof(hsize_t) * (size_t)shaped.rank);
    if (shaped.patterns > 0) /* [1 ...][patterns along the probe axis][qy][qx] */
        for (int k = 0; k < h.rank; k++)
            h.chunk[k] = k >= h.rank - 2 ? h.dims[k]
                : k == h.rank - 3        ? (h.dims[k] < (hsize_t)shaped.patterns ? h.dims[k] : (hsize_t)shaped.patterns)
                                         : 1;
    return stem_h5_write_dataset(&o->h5, &h);
}

/* ------------------------------------------------------------- content */

static int stem_output_root_attrs(const stem_output *o)
{
    const stem_plan *plan = o->plan;
    const char *alg = stem_algorithm_name(plan->algorithm);
    STEM_TRY(stem_h5_put_string(&o->h5, o->h5.file, "/", "program", "stemsim"));
    STEM_TRY(stem_h5_put_string(&o->h5, o->h5.file, "/", "version", STEM_VERSION));
    STEM_TRY(stem_h5_put_string(&o->h5, o->h5.file, "/", "build", stem_build_info()));
    STEM_TRY(stem_h5_put_string(&o->h5, o->h5.file, "/", "config", o->config_text));
    STEM_TRY(stem_h5_put_string(&o->h5, o->h5.file, "/", "plan", o->plan_text));
    STEM_TRY(stem_h5_put_string(&o->h5, o->h5.file, "/", "environment", o->env_text));
    STEM_TRY(stem_h5_put_string(&o->h5, o->h5.file, "/", "advice", o->advice_text));
    STEM_TRY(stem_h5_put_string(&o->h5, o->h5.file, "/", "algorithm", alg));
    STEM_TRY(stem_h5_put_double(&o->h5, o->h5.file, "/", "energy_kev", plan->energy_kev));
    STEM_TRY(stem_h5_put_double(&o->h5, o->h5.file, "/", "wavelength_angstrom", plan->lambda));
    const char *se = o->has_errors   ? "under /standard_error: the standard error of the mean over the n_configs "
                                       "frozen-phonon configurations of every image, ring, DPC, segment and total "
                                       "intensity value (none for 4D patterns, PACBED, exit waves and HRTEM images)"
        : plan->n_configs < 2        ? "none: one frozen-phonon configuration, no error can be estimated "
                                       "([simulation] frozen_phonons >= 2)"
        : !plan->opt.standard_errors ? "none: [output] standard_errors = false"
                                     : "none (the wave distributed over the ranks)";
    STEM_TRY(stem_h5_put_string(&o->h5, o->h5.file, "/", "standard_error", se));
    return stem_h5_put_int(&o->h5, o->h5.file, "/", "n_configs", plan->n_configs);
}

static int stem_output_groups(const stem_output *o)
{
    STEM_TRY(stem_h5_group(&o->h5, "/images"));
    if (o->has_errors) {
        STEM_TRY(stem_h5_group(&o->h5, STEM_OUTPUT_ERRORS));
        STEM_TRY(stem_h5_group(&o->h5, STEM_OUTPUT_ERRORS "/images"));
    }
    return stem_h5_group(&o->h5, "/axes");
}

/* What channel ch's writer writes: the means, or (o->errors) their standard errors, both
 * [probe][width] (stem_result_finalise). */
static const double *stem_output_values(const stem_output *o, int ch)
{
    return o->errors ? o->res->err[ch] : o->res->data[ch];
}

/* The dataset's name, under /standard_error for the standard errors. */
static const char *stem_output_name(const stem_output *o, const char *name, char *buf, size_t n)
{
    if (!o->errors) return name;
    snprintf(buf, n, "%s%s", STEM_OUTPUT_ERRORS, name);
    return buf;
}

/* A [scan_ny][scan_nx] float64 dataset from the packed scratch column. */
static int stem_output_write_map(const stem_output *o, const char *name, const stem_output_attr *attrs, int n_attrs)
{
    stem_output_dataset d = {.name = name,
                             .file_type = H5T_IEEE_F64LE,
                             .mem_type = H5T_NATIVE_DOUBLE,
                             .rank = 2,
                             .dims = {(hsize_t)o->plan->scan_ny, (hsize_t)o->plan->scan_nx},
                             .grid = 1,
                             .data = o->scratch,
                             .attrs = attrs,
                             .n_attrs = n_attrs};
    return stem_output_write_dataset(o, &d);
}

/* Column `col` of a probe-major [count][stride] array into the scratch buffer. */
static void stem_output_pack(const stem_output *o, const double *src, int stride, int col)
{
    for (hsize_t p = 0; p < o->count; p++) o->scratch[p] = src[p * (hsize_t)stride + (hsize_t)col];
}

static int stem_output_image(const stem_output *o, int i)
{
    const stem_image_range *im = &o->plan->images[i];
    char name[STEM_IMAGE_NAME_MAX + 48];
    snprintf(name, sizeof name, "%s/images/%s", o->errors ? STEM_OUTPUT_ERRORS : "", im->name);
    if (o->count) stem_output_pack(o, stem_output_values(o, STEM_CH_IMAGES), o->plan->n_images, i);
    /* a range asked beyond the simulated angles integrates up to them: labelled so, what was asked
     * kept beside (an open-ended range, 1e9 and more, keeps its mark: "and beyond") */
    int clipped = im->outer_mrad < 1e9 && im->outer_mrad > o->plan->max_angle_mrad * 1.0001;
    stem_output_attr attrs[] = {
        {"inner_mrad", NULL, im->inner_mrad},
        {"outer_mrad", NULL, clipped ? o->plan->max_angle_mrad : im->outer_mrad},
        {"units", STEM_OUTPUT_INTENSITY, 0},
        {"outer_mrad_requested", NULL, im->outer_mrad},
    };
    return stem_output_write_map(o, name, attrs, clipped ? 4 : 3);
}

static int stem_output_images(const stem_output *o)
{
    for (int i = 0; i < o->plan->n_images; i++) STEM_TRY(stem_output_image(o, i));
    return STEM_OK;
}

static int stem_output_total(const stem_output *o)
{
    char buf[64];
    if (o->count) stem_output_pack(o, stem_output_values(o, STEM_CH_TOTAL), 1, 0);
    stem_output_attr attrs[] = {
        {"units", STEM_OUTPUT_INTENSITY, 0},
        {"description",
         "intensity inside the simulated band limit: 1 minus what the anti-aliasing aperture "
         "removed (a sanity map: strong scatterers show as dips)",
         0},
    };
    return stem_output_write_map(o, stem_output_name(o, "/total_intensity", buf, sizeof buf), attrs, 2);
}

static int stem_output_dpc(const stem_output *o, int axis)
{
    char buf[64];
    if (o->count) stem_output_pack(o, stem_output_values(o, STEM_CH_COM), 2, axis);
    stem_output_attr attrs[] = {
        {"units", "mrad", 0},
        {"description",
         axis ? "centre of mass of the diffraction pattern along y"
              : "centre of mass of the diffraction pattern along x",
         0},
    };
    return stem_output_write_map(o, stem_output_name(o, axis ? "/dpc_com_y" : "/dpc_com_x", buf, sizeof buf), attrs, 2);
}

static int stem_output_dpc_both(const stem_output *o)
{
    if (!o->has_dpc) return STEM_OK;
    STEM_TRY(stem_output_dpc(o, 0));
    return stem_output_dpc(o, 1);
}

/* The segmented detector's DPC along axis (0: x, 1: y) into the scratch column. */
static void stem_output_segment_dpc(const stem_output *o, int axis)
{
    const stem_plan *plan = o->plan;
    int n = plan->seg_n, w = n * plan->seg_rings;
    for (hsize_t p = 0; p < o->count; p++) {
        const double *S = o->res->segments + p * (hsize_t)w;
        double sum = 0, dir = 0;
        for (int k = 0; k < w; k++) {
            double phi = plan->seg_rotation + 2 * M_PI * (k % n + 0.5) / n;
            sum += S[k];
            dir += S[k] * (axis ? sin(phi) : cos(phi));
        }
        o->scratch[p] = sum > 0 ? dir / sum : 0;
    }
}

static int stem_output_segments(const stem_output *o)
{
    const stem_plan *plan = o->plan;
    if (!plan->seg_n) return STEM_OK;
    stem_output_attr attrs[] = {
        {"inner_mrad", NULL, plan->seg_inner},
        {"outer_mrad", NULL, plan->seg_outer},
        {"rotation_deg", NULL, plan->seg_rotation * 180 / M_PI},
        {"units", STEM_OUTPUT_INTENSITY, 0},
        {"axes",
         "scan_y, scan_x, ring (equal widths from inner_mrad), segment (from rotation_deg, azimuth from +x "
         "towards +y)",
         0},
    };
    char buf[64];
    stem_output_dataset d = {
        .name = stem_output_name(o, "/segments", buf, sizeof buf),
        .file_type = H5T_IEEE_F64LE,
        .mem_type = H5T_NATIVE_DOUBLE,
        .rank = 4,
        .dims = {(hsize_t)plan->scan_ny, (hsize_t)plan->scan_nx, (hsize_t)plan->seg_rings, (hsize_t)plan->seg_n},
        .grid = 1,
        .data = o->count ? stem_output_values(o, STEM_CH_SEGMENTS) : NULL,
        .attrs = attrs,
        .n_attrs = 5};
    STEM_TRY(stem_output_write_dataset(o, &d));
    if (o->errors) return STEM_OK; /* the segments' DPC (a ratio of them) has none */
    for (int axis = 0; axis < 2; axis++) {
        if (o->count) stem_output_segment_dpc(o, axis);
        stem_output_attr dattrs[] = {
            {"units", "1", 0},
            {"description",
             "DPC from the segmented detector: sum over segments of S_s u_s / sum of S_s, u_s the unit "
             "vector at the centre azimuth of segment s (all rings together)",
             0},
        };
        STEM_TRY(stem_output_write_map(o, axis ? "/dpc_segments_y" : "/dpc_segments_x", dattrs, 2));
    }
    return STEM_OK;
}

static int stem_output_rings(const stem_output *o)
{
    const stem_plan *plan = o->plan;
    if (!plan->opt.save_3d) return STEM_OK;
    stem_output_attr attrs[] = {
        {"ring_width_mrad", NULL, plan->ring_width},
        {"units", STEM_OUTPUT_INTENSITY, 0},
        {"axes", "scan_y, scan_x, ring", 0},
    };
    char buf[64];
    stem_output_dataset d = {.name = stem_output_name(o, "/rings", buf, sizeof buf),
                             .file_type = H5T_IEEE_F64LE,
                             .mem_type = H5T_NATIVE_DOUBLE,
                             .rank = 3,
                             .dims = {(hsize_t)plan->scan_ny, (hsize_t)plan->scan_nx, (hsize_t)plan->n_bins},
                             .grid = 1,
                             .data = o->count ? stem_output_values(o, STEM_CH_RINGS) : NULL,
                             .attrs = attrs,
                             .n_attrs = 3};
    return stem_output_write_dataset(o, &d);
}

/* PACBED: rank 0 writes the mean pattern every rank holds after the reduction. */
static int stem_output_pacbed(const stem_output *o)
{
    const stem_plan *plan = o->plan;
    if (!plan->opt.save_pacbed || o->errors) return STEM_OK;
    stem_output_attr attrs[] = {
        {"qx_step_mrad", NULL, plan->cbed_dq_mrad[0]},
        {"qy_step_mrad", NULL, plan->cbed_dq_mrad[1]},
        {"units", STEM_OUTPUT_INTENSITY, 0},
        {"axes", "qy, qx (as /axes/cbed_qy_mrad, /axes/cbed_qx_mrad)", 0},
        {"description",
         "position-averaged CBED: the diffraction pattern averaged over every probe and "
         "configuration (a probe's pattern sums to its /total_intensity)",
         0},
    };
    stem_output_dataset d = {.name = "/pacbed",
                             .file_type = H5T_IEEE_F64LE,
                             .mem_type = H5T_NATIVE_DOUBLE,
                             .rank = 2,
                             .dims = {(hsize_t)plan->cbed_ny, (hsize_t)plan->cbed_nx},
                             .grid = 0,
                             .data = o->res ? o->res->pacbed : NULL,
                             .attrs = attrs,
                             .n_attrs = 5};
    return stem_output_write_dataset(o, &d);
}

/* The 4D patterns of this rank's probes [begin, begin + count) (data, probe-major) into /cbed,
 * chunked in whole patterns of about STEM_OUTPUT_CHUNK_BYTES; created by the first part
 * (open 0), the same layout whether written whole at the end or in streamed blocks. */
static int cbed_part(const stem_output *o, hsize_t begin, hsize_t count, const float *data, int open)
{
    const stem_plan *plan = o->plan;
    stem_output part = *o;
    part.begin = begin;
    part.count = count;
    stem_output_attr attrs[] = {
        {"qx_step_mrad", NULL, plan->cbed_dq_mrad[0]},
        {"qy_step_mrad", NULL, plan->cbed_dq_mrad[1]},
        {"units", STEM_OUTPUT_INTENSITY, 0},
        {"axes", "scan_y, scan_x, qy, qx (bin centres in /axes/cbed_qy_mrad, /axes/cbed_qx_mrad)", 0},
        {"cbed_bin", NULL, plan->cbed_bin},
    };
    stem_output_dataset d = {
        .name = plan->algorithm == STEM_ALG_CBED ? "/cbed_pattern" : "/cbed",
        .file_type = H5T_IEEE_F32LE,
        .mem_type = H5T_NATIVE_FLOAT,
        .rank = 4,
        .dims = {(hsize_t)plan->scan_ny, (hsize_t)plan->scan_nx, (hsize_t)plan->cbed_ny, (hsize_t)plan->cbed_nx},
        .grid = 1,
        .data = count ? data : NULL,
        .attrs = attrs,
        .n_attrs = 5,
        .patterns = (int)fmax(1, STEM_OUTPUT_CHUNK_BYTES / (4.0 * plan->cbed_nx * plan->cbed_ny)),
        .reopen = open};
    return stem_output_write_dataset(&part, &d);
}

/* In up to three collective writes, each of one rectangle of the scan (a partial first row,
 * whole rows, a partial last row): HDF5 maps a single rectangle onto the chunks directly, a
 * union of them value by value (4x slower). Every rank makes the three calls. */
static int cbed_rows(const stem_output *o, hsize_t begin, hsize_t count, const float *data, int open)
{
    stem_output_block b[3];
    hsize_t nx =
        o->plan->positions || stem_plan_single_wave(o->plan) ? (hsize_t)o->plan->n_probes : (hsize_t)o->plan->scan_nx;
    int n = count ? stem_output_probe_blocks(begin, count, nx, b) : 0;
    size_t pattern = (size_t)o->plan->cbed_nx * o->plan->cbed_ny;
    for (int i = 0; i < 3; i++) {
        hsize_t b0 = i < n ? b[i].y * nx + b[i].x : 0, bn = i < n ? b[i].ny * b[i].nx : 0;
        STEM_TRY(cbed_part(o, b0, bn, bn ? data + (b0 - begin) * pattern : NULL, open || i > 0));
    }
    return STEM_OK;
}

static int stem_output_cbed(const stem_output *o)
{
    if (!o->has_4d || o->cbed_streamed) return STEM_OK; /* streamed: written block by block */
    return cbed_rows(o, o->begin, o->count, o->count ? o->res->cbed : NULL, 0);
}

int stem_layout_cbed_block(const stem_output *o, long begin, long count, const float *cbed, int first)
{
    return cbed_rows(o, (hsize_t)begin, (hsize_t)count, cbed, !first);
}

/* Whether the output has a leading depth axis ([output] depths: a detection plane each). */
static int stem_output_has_depths(const stem_output *o)
{
    for (int a = 0; o->series && a < STEM_OUTPUT_MAX_LEAD; a++)
        if (o->series->lead_name[a] && !strcmp(o->series->lead_name[a], "depth")) return 1;
    return 0;
}

/* hrtem: the exit wave (re, im interleaved) and the image, each [ny][nx] over the cell. */
static int stem_output_exit_wave(const stem_output *o)
{
    const stem_plan *plan = o->plan;
    if (!stem_channel_width(plan, STEM_CH_EXIT)) return STEM_OK;
    stem_output_attr attrs[] = {
        {"units", "amplitude (a unit plane wave in vacuum is 1)", 0},
        {"axes", "scan_y, scan_x, y, x, (real, imaginary) (pixels at /axes/x, /axes/y)", 0},
        {"description",
         stem_output_has_depths(o)
             ? "the wave at each depth of /axes/depth (leaving the slice that ends there), averaged over the "
               "configurations"
             : "the exit wave below the last slice, averaged over the configurations",
         0},
    };
    stem_output_dataset d = {
        .name = "/exit_wave",
        .file_type = H5T_IEEE_F32LE,
        .mem_type = H5T_NATIVE_FLOAT,
        .rank = 5,
        .dims = {(hsize_t)plan->scan_ny, (hsize_t)plan->scan_nx, (hsize_t)plan->ny, (hsize_t)plan->nx, 2},
        .grid = 1,
        .data = o->writes ? o->res->data[STEM_CH_EXIT] : NULL,
        .attrs = attrs,
        .n_attrs = 3,
        .image_rows = 1};
    return stem_output_write_dataset(o, &d);
}

static int stem_output_hrtem(const stem_output *o)
{
    const stem_plan *plan = o->plan;
    if (!stem_channel_width(plan, STEM_CH_HRTEM)) return STEM_OK;
    stem_output_attr attrs[] = {
        {"units", "intensity (a unit plane wave in vacuum images to 1)", 0},
        {"axes", "scan_y, scan_x, y, x (pixels at /axes/x, /axes/y)", 0},
        {"description",
         "the HRTEM image: the exit wave through the objective lens ([probe] aberrations, focal "
         "spread, [hrtem] objective_aperture), the intensities averaged over configurations",
         0},
        {"objective_aperture_mrad", NULL, plan->opt.objective_aperture_mrad},
    };
    stem_output_dataset d = {
        .name = "/hrtem",
        .file_type = H5T_IEEE_F32LE,
        .mem_type = H5T_NATIVE_FLOAT,
        .rank = 4,
        .dims = {(hsize_t)plan->scan_ny, (hsize_t)plan->scan_nx, (hsize_t)plan->ny, (hsize_t)plan->nx},
        .grid = 1,
        .data = o->writes ? o->res->data[STEM_CH_HRTEM] : NULL,
        .attrs = attrs,
        .n_attrs = 4,
        .image_rows = 1};
    return stem_output_write_dataset(o, &d);
}

/* A 1D axis from o->axis, written by rank 0. */
static int stem_output_axis(const stem_output *o, const char *name, int n, const char *units)
{
    stem_output_attr attrs[] = {{"units", units, 0}};
    stem_output_dataset d = {.name = name,
                             .file_type = H5T_IEEE_F64LE,
                             .mem_type = H5T_NATIVE_DOUBLE,
                             .rank = 1,
                             .dims = {(hsize_t)n},
                             .grid = 0,
                             .data = o->axis,
                             .attrs = attrs,
                             .n_attrs = 1,
                             .fixed = 1};
    return stem_output_write_dataset(o, &d);
}

/* Angle of the centre of each of `bins` bins of the written pattern, bin i covering the
 * centred detector pixels first + i b .. first + i b + b - 1 (zero angle at pixel n / 2); with
 * square q, bin i at (i - bins / 2) times the written step dq. */
static void stem_output_fill_bins(const stem_output *o, int n, int first, int bins, double step, double dq)
{
    int b = o->plan->cbed_bin;
    for (int i = 0; i < bins; i++)
        o->axis[i] = o->plan->cbed_square ? (i - bins / 2) * dq : (first + i * b + (b - 1) / 2.0 - n / 2) * step;
}

static int stem_output_axes(const stem_output *o)
{
    const stem_plan *plan = o->plan;
    double x, y;
    if (plan->positions || stem_plan_single_wave(plan)) { /* the probe axis: each probe's position */
        for (long p = 0; p < plan->n_probes; p++) stem_plan_probe_position(plan, p, &o->axis[p], &y);
        STEM_TRY(stem_output_axis(o, "/axes/probe_x", (int)plan->n_probes, "Angstrom"));
        for (long p = 0; p < plan->n_probes; p++) stem_plan_probe_position(plan, p, &x, &o->axis[p]);
        STEM_TRY(stem_output_axis(o, "/axes/probe_y", (int)plan->n_probes, "Angstrom"));
    } else {
        for (int i = 0; i < plan->scan_nx; i++) {
            stem_plan_probe_position(plan, i, &x, &y);
            o->axis[i] = x;
        }
        STEM_TRY(stem_output_axis(o, "/axes/scan_x", plan->scan_nx, "Angstrom"));
        for (int i = 0; i < plan->scan_ny; i++) {
            stem_plan_probe_position(plan, (long)i * plan->scan_nx, &x, &y);
            o->axis[i] = y;
        }
        STEM_TRY(stem_output_axis(o, "/axes/scan_y", plan->scan_ny, "Angstrom"));
    }
    if (stem_channel_width(plan, STEM_CH_HRTEM)) { /* the image's pixels */
        for (int i = 0; i < plan->nx; i++) o->axis[i] = i * plan->dx;
        STEM_TRY(stem_output_axis(o, "/axes/x", plan->nx, "Angstrom"));
        for (int i = 0; i < plan->ny; i++) o->axis[i] = i * plan->dy;
        STEM_TRY(stem_output_axis(o, "/axes/y", plan->ny, "Angstrom"));
    }
    if (plan->n_bins > 0) {
        for (int i = 0; i < plan->n_bins; i++) o->axis[i] = i * plan->ring_width;
        STEM_TRY(stem_output_axis(o, "/axes/ring_inner_mrad", plan->n_bins, "mrad"));
    }
    for (int a = 0; o->series && a < STEM_OUTPUT_MAX_LEAD; a++) {
        if (!o->series->lead_name[a]) continue;
        char name[64];
        snprintf(name, sizeof name, "/axes/%s", o->series->lead_name[a]);
        memcpy(o->axis, o->series->lead_values[a], sizeof(double) * (size_t)o->series->lead_n[a]);
        STEM_TRY(stem_output_axis(o, name, o->series->lead_n[a], o->series->lead_units[a]));
    }
    if (o->has_4d || o->cbed_streamed || plan->opt.save_pacbed) {
        stem_output_fill_bins(o, plan->out_nx, plan->cbed_x0, plan->cbed_nx, plan->out_dqx * plan->lambda * 1e3,
                              plan->cbed_dq_mrad[0]);
        STEM_TRY(stem_output_axis(o, "/axes/cbed_qx_mrad", plan->cbed_nx, "mrad"));
        stem_output_fill_bins(o, plan->out_ny, plan->cbed_y0, plan->cbed_ny, plan->out_dqy * plan->lambda * 1e3,
                              plan->cbed_dq_mrad[1]);
        STEM_TRY(stem_output_axis(o, "/axes/cbed_qy_mrad", plan->cbed_ny, "mrad"));
    }
    return STEM_OK;
}

/* Data reaches the disk before the marker that says it is all there, and the
 * marker before the close (which then has nothing left that could fail to fit). */
static int stem_output_mark_complete(const stem_output *o)
{
    STEM_TRY(stem_h5_file_flush(&o->h5));
    STEM_TRY(stem_h5_put_int(&o->h5, o->h5.file, "/", "complete", 1));
    return stem_h5_file_flush(&o->h5);
}

/* The writer of each output channel (channels.h); it decides from the plan
 * whether its datasets are asked for. */
typedef int (*stem_output_channel_writer)(const stem_output *o);
static const stem_output_channel_writer stem_output_writers[STEM_N_CHANNELS] = {
    [STEM_CH_RINGS] = stem_output_rings,       [STEM_CH_IMAGES] = stem_output_images,
    [STEM_CH_TOTAL] = stem_output_total,       [STEM_CH_COM] = stem_output_dpc_both,
    [STEM_CH_SEGMENTS] = stem_output_segments, [STEM_CH_CBED] = stem_output_cbed,
    [STEM_CH_EXIT] = stem_output_exit_wave,    [STEM_CH_HRTEM] = stem_output_hrtem,
    [STEM_CH_PACBED] = stem_output_pacbed,
};

/* Series point p: its result loaded, its place on the leading axes. */
static int stem_output_load_point(stem_output *o, int p)
{
    o->point = p;
    for (int k = o->n_lead - 1, rest = p; k >= 0; k--) {
        o->at[k] = (hsize_t)rest % o->lead[k];
        rest /= (int)o->lead[k];
    }
    return o->series->load(o->series->ctx, p, (stem_result *)o->res);
}

int stem_layout_write(stem_output *o)
{
    int rc = STEM_OK, points = o->series ? o->series->n_points : 1;
    STEM_H5_STEP(rc, o->h5.comm, stem_output_root_attrs(o));
    STEM_H5_STEP(rc, o->h5.comm, stem_output_groups(o));
    for (int p = 0; p < points && !rc; p++) {
        if (o->series) rc = stem_output_load_point(o, p); /* agreed by the loader */
        for (int ch = 0; ch < STEM_N_CHANNELS; ch++) {
            STEM_H5_STEP(rc, o->h5.comm, stem_output_writers[ch](o));
            if (!o->has_errors || !stem_channel_table[ch].error) continue;
            o->errors = 1; /* the same writer again, for the channel's standard errors */
            STEM_H5_STEP(rc, o->h5.comm, stem_output_writers[ch](o));
            o->errors = 0;
        }
    }
    STEM_H5_STEP(rc, o->h5.comm, stem_output_axes(o));
    if (!rc) rc = stem_layout_potential_stack(o); /* agreed inside */
    if (!rc) rc = stem_layout_smatrix_stack(o);   /* agreed inside */
    STEM_H5_STEP(rc, o->h5.comm, stem_output_mark_complete(o));
    return rc;
}

double stem_layout_estimate_bytes(const stem_plan *plan, int n_points, int n_tilts)
{
    double tilts = n_tilts > 0 ? n_tilts : 1; /* each its stored potential and S-matrix, none thicker than plan's */
    double per_probe = 0, per_scan = 0;       /* as written: float32 channels (4D, images of plane waves) 4 bytes */
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++)
        *(stem_channel_per_probe(ch) ? &per_probe : &per_scan) +=
            (stem_channel_table[ch].is_float ? 4.0 : 8.0) * (double)stem_channel_width(plan, ch) +
            8.0 * (double)stem_channel_error_width(plan, ch) /
                (stem_channel_table[ch].final == STEM_FINAL_PER_TOTAL ? 2 : 1);
    double bytes = per_probe * (double)plan->n_probes * (n_points > 0 ? n_points : 1);
    bytes += per_scan * (n_points > 0 ? n_points : 1);
    if (plan->opt.save_potential)
        bytes += tilts * 4.0 * plan->n_configs * plan->n_slices * plan->pot_ny * (double)plan->pot_nx;
    if (plan->opt.save_smatrix)
        bytes +=
            tilts * 8.0 * plan->n_configs * plan->n_beams * plan->crop_ny * (double)plan->crop_nx + 8.0 * plan->n_beams;
    /* HDF5's headers, attributes (the config and plan texts) and axes */
    return bytes * 1.01 + 64.0 * 1024; /* measured: 15-30 kB of them in the small test files */
}
