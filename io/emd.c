/* Prismatic's EMD tree from a finished native output: see emd.h. */
#include "emd.h"

#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/stem.h"
#include "emd_readers.h"
#include "h5_collective.h"
#include "publish.h"

#define EMD_MAX_LEAD 6

typedef struct {
    hid_t in, out, realslices, datacubes;
    const stem_plan *plan;
    const char *native, *path;
    int n_lead, depth_axis; /* the native datasets' leading series axes */
    hsize_t lead[EMD_MAX_LEAD];
    char lead_name[EMD_MAX_LEAD][32];
    double *lead_values[EMD_MAX_LEAD];
    int grid_rank;           /* 2: [scan_ny][scan_nx]; 1: one probe axis [n_probes] */
    double *scan_x, *scan_y; /* dim1, dim2 of every scan group (see scan_dims) */
    const char *scan_x_name, *scan_y_name, *scan_units;
    double *probe_x, *probe_y; /* one probe axis: /axes/probe_x, probe_y (Angstrom) */
    const stem_emd_hooks *hooks;
} emd;

static int fail(const emd *e, const char *what)
{
    char why[128];
    stem_output_space_note(e->path, why, sizeof why);
    return STEM_FAIL(STEM_ERR_IO, "[output] layout = emd: %s failed writing %s (%s)", what, e->path, why);
}

/* Between steps: the caller may stop the conversion (a signal). */
static int tick(const emd *e) { return e->hooks && e->hooks->tick ? e->hooks->tick(e->hooks->ctx) : STEM_OK; }

/* ------------------------------------------------------------ attributes */

/* Written with h5_collective.h's quiet helpers (stem_h5_attr_text: fixed-length strings,
 * as Prismatic writes them); a failure is reported by the step (fail). */

/* ------------------------------------------------------------- datasets */

/* A small 1D dataset of doubles (a dim vector) with its name and units. */
static int dim_vector(const emd *e, hid_t group, int k, const double *v, hsize_t n, const char *name, const char *units)
{
    if (stem_emd_dim(group, k, v, n, name, units) == STEM_OK) return STEM_OK;
    char dname[8];
    snprintf(dname, sizeof dname, "dim%d", k);
    return fail(e, dname);
}

/* A dim3 of n labels, as variable-length strings (py4DSTEM's legacy reader fails on
 * fixed-length ones with h5py 3: it opens them with astype as a context). */
static int dim_labels(const emd *e, hid_t group, const char *const *labels, hsize_t n, const char *name,
                      const char *units)
{
    hid_t t = H5Tcopy(H5T_C_S1), space = H5Screate_simple(1, &n, NULL), d = H5I_INVALID_HID;
    int ok = t >= 0 && space >= 0 && H5Tset_size(t, H5T_VARIABLE) >= 0 && H5Tset_cset(t, H5T_CSET_UTF8) >= 0;
    if (ok) d = H5Dcreate2(group, "dim3", t, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    ok = ok && d >= 0 && H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, labels) >= 0 &&
        !stem_h5_attr_text(d, "name", name) && !stem_h5_attr_text(d, "units", units);
    if (d >= 0) H5Dclose(d);
    if (space >= 0) H5Sclose(space);
    if (t >= 0) H5Tclose(t);
    return ok ? STEM_OK : fail(e, "a dim3 of labels");
}

/* dim3 of the DPC group: its two components. */
static int dpc_labels(const emd *e, hid_t group)
{
    static const char *const labels[2] = {"DPC_CoM_x", "DPC_CoM_y"};
    return dim_labels(e, group, labels, 2, "X/Y", "[none]");
}

/* A data group with its attributes (dims are the caller's). */
static hid_t bare_group(hid_t parent, const char *name, double depth, const double *defocus)
{
    hid_t g = H5Gcreate2(parent, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0) return g;
    int ok = !stem_h5_attr_int(g, "emd_group_type", 1) && !stem_h5_attr_int(g, "metadata", 0) &&
        !stem_h5_attr_double(g, "output_depth", depth) &&
        (!defocus || !stem_h5_attr_double(g, "output_defocus", *defocus));
    if (!ok) {
        H5Gclose(g);
        return H5I_INVALID_HID;
    }
    return g;
}

/* A data group: its attributes and the scan's dim1, dim2 (R_x, R_y on a grid). */
static hid_t data_group(const emd *e, hid_t parent, const char *name, double depth, const double *defocus)
{
    hid_t g = bare_group(parent, name, depth, defocus);
    if (g < 0) return g;
    const stem_plan *plan = e->plan;
    int ok = !dim_vector(e, g, 1, e->scan_x, (hsize_t)plan->scan_nx, e->scan_x_name, e->scan_units) &&
        !dim_vector(e, g, 2, e->scan_y, (hsize_t)plan->scan_ny, e->scan_y_name, e->scan_units);
    if (!ok) {
        H5Gclose(g);
        return H5I_INVALID_HID;
    }
    return g;
}

/* Point p's index on each leading axis (row-major, the last fastest). */
static void point_index(const emd *e, int p, hsize_t *at)
{
    for (int k = e->n_lead - 1, rest = p; k >= 0; k--) {
        at[k] = (hsize_t)rest % e->lead[k];
        rest /= (int)e->lead[k];
    }
}

/* Point p's block of native dataset `name`: the leading indices of p, then the whole
 * core (core_rank dims, read into buf as mem type). */
static int read_point(const emd *e, const char *name, int p, int core_rank, const hsize_t *core, hid_t mem, void *buf)
{
    hsize_t start[EMD_MAX_LEAD + 4] = {0}, count[EMD_MAX_LEAD + 4];
    point_index(e, p, start);
    for (int k = 0; k < e->n_lead; k++) count[k] = 1;
    for (int k = 0; k < core_rank; k++) count[e->n_lead + k] = core[k];
    hid_t d = H5Dopen2(e->in, name, H5P_DEFAULT);
    hid_t fs = d >= 0 ? H5Dget_space(d) : H5I_INVALID_HID;
    hid_t ms = H5Screate_simple(e->n_lead + core_rank, count, NULL);
    int ok = fs >= 0 && ms >= 0 && H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL) >= 0 &&
        H5Dread(d, mem, ms, fs, H5P_DEFAULT, buf) >= 0;
    if (ms >= 0) H5Sclose(ms);
    if (fs >= 0) H5Sclose(fs);
    if (d >= 0) H5Dclose(d);
    return ok ? STEM_OK
              : STEM_FAIL(STEM_ERR_IO, "[output] layout = emd: cannot read %s (point %d) from %s", name, p, e->native);
}

/* A scan dataset's core dims after the leading axes: the grid [ny][nx] or the one probe
 * axis [n_probes], then k when k > 1; returns their number. */
static int scan_core(const emd *e, int k, hsize_t *core)
{
    int r = 0;
    if (e->grid_rank == 2) core[r++] = (hsize_t)e->plan->scan_ny;
    core[r++] = (hsize_t)e->plan->scan_nx;
    if (k > 1) core[r++] = (hsize_t)k;
    return r;
}

/* data = [ny][nx][k] transposed to [nx][ny][k], scaled, as float64. */
static int write_scan_data(const emd *e, hid_t g, const double *in, int k, double scale)
{
    const stem_plan *plan = e->plan;
    size_t nx = (size_t)plan->scan_nx, ny = (size_t)plan->scan_ny;
    double *out = stem_alloc(sizeof(double) * nx * ny * (size_t)k, "EMD transpose");
    if (!out) return STEM_ERR_MEMORY;
    for (size_t y = 0; y < ny; y++)
        for (size_t x = 0; x < nx; x++)
            for (int c = 0; c < k; c++) out[(x * ny + y) * k + c] = in[(y * nx + x) * k + c] * scale;
    hsize_t dims[3] = {nx, ny, (hsize_t)k};
    hid_t space = H5Screate_simple(k > 1 ? 3 : 2, dims, NULL);
    hid_t d = space >= 0 ? H5Dcreate2(g, "data", H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)
                         : H5I_INVALID_HID;
    int ok = d >= 0 && H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) >= 0;
    if (d >= 0) H5Dclose(d);
    if (space >= 0) H5Sclose(space);
    free(out);
    return ok ? STEM_OK : fail(e, "a realslice");
}

/* ------------------------------------------------------------ the series */

static int exists(hid_t file, const char *path) { return H5Lexists(file, path, H5P_DEFAULT) > 0; }

static int read_axis(const emd *e, const char *name, hsize_t n, double **v)
{
    char path[64];
    snprintf(path, sizeof path, "/axes/%s", name);
    if (!(*v = stem_calloc(n ? n : 1, sizeof(double), "EMD axis"))) return STEM_ERR_MEMORY;
    hid_t d = H5Dopen2(e->in, path, H5P_DEFAULT);
    int ok = d >= 0 && H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, *v) >= 0;
    if (d >= 0) H5Dclose(d);
    return ok ? STEM_OK : STEM_FAIL(STEM_ERR_IO, "[output] layout = emd: cannot read %s from %s", path, e->native);
}

/* The leading axes from total_intensity's series_axes attribute ("tilt_x, defocus") and shape. */
static int series_axes(emd *e)
{
    e->depth_axis = -1;
    int g = e->grid_rank; /* total_intensity's dims after the series axes */
    hid_t d = H5Dopen2(e->in, "/total_intensity", H5P_DEFAULT);
    if (d < 0) return STEM_FAIL(STEM_ERR_IO, "[output] layout = emd: %s has no /total_intensity", e->native);
    hid_t s = H5Dget_space(d);
    hsize_t dims[EMD_MAX_LEAD + 2];
    int rank = s >= 0 ? H5Sget_simple_extent_ndims(s) : -1;
    if (rank >= g && rank <= EMD_MAX_LEAD + g) H5Sget_simple_extent_dims(s, dims, NULL);
    if (s >= 0) H5Sclose(s);
    char *names = rank > g ? stem_h5_attr_read_text(d, "series_axes") : NULL;
    H5Dclose(d);
    if (rank < g || rank > EMD_MAX_LEAD + g || (rank > g && !names)) {
        free(names);
        return STEM_FAIL(STEM_ERR_IO, "[output] layout = emd: cannot read the series axes of %s", e->native);
    }
    e->n_lead = rank - g;
    char *save = NULL, *tok = names ? strtok_r(names, ", ", &save) : NULL;
    int err = STEM_OK;
    for (int k = 0; k < e->n_lead && !err; k++, tok = strtok_r(NULL, ", ", &save)) {
        if (!tok)
            err = STEM_FAIL(STEM_ERR_IO, "[output] layout = emd: series_axes names too few axes");
        else {
            snprintf(e->lead_name[k], sizeof e->lead_name[k], "%s", tok);
            e->lead[k] = dims[k];
            if (!strcmp(tok, "depth")) e->depth_axis = k;
            err = read_axis(e, tok, dims[k], &e->lead_values[k]);
        }
    }
    free(names);
    return err;
}

static int is_beam_tilt(const char *axis) { return !strncmp(axis, "beam_tilt_", 10); }

/* Point p's name suffix: depthNNNN then the other axes' tags (but the beam tilts' where
 * stacked instead: HRTEM); its depth and defocus. */
static void point_name_of(const emd *e, int p, int stacked_tilts, char *suffix, size_t n, double *depth,
                          const double **defocus)
{
    static const struct {
        const char *axis, *tag;
    } tags[] = {
        {"tilt_x", "_tx"}, {"tilt_y", "_ty"}, {"beam_tilt_x", "_bx"}, {"beam_tilt_y", "_by"}, {"defocus", "_df"}};
    hsize_t at[EMD_MAX_LEAD];
    point_index(e, p, at);
    *depth = stem_plan_depth(e->plan, e->plan->n_slices); /* the exit surface */
    *defocus = NULL;
    int d = 0;
    if (e->depth_axis >= 0) {
        d = (int)at[e->depth_axis];
        *depth = e->lead_values[e->depth_axis][d];
    }
    snprintf(suffix, n, "depth%04d", d);
    for (size_t t = 0; t < sizeof tags / sizeof *tags; t++)
        for (int k = 0; k < e->n_lead; k++)
            if (!strcmp(e->lead_name[k], tags[t].axis) && !(stacked_tilts && is_beam_tilt(tags[t].axis))) {
                snprintf(suffix + strlen(suffix), n - strlen(suffix), "%s%04d", tags[t].tag, (int)at[k]);
                if (!strcmp(tags[t].axis, "defocus")) *defocus = &e->lead_values[k][at[k]];
            }
}

static void point_name(const emd *e, int p, char *suffix, size_t n, double *depth, const double **defocus)
{
    point_name_of(e, p, 0, suffix, n, depth, defocus);
}

/* ---------------------------------------------------------- the outputs */

/* A [ny][nx](x k) native dataset of point p as realslice `name`; dim3 for k > 1. */
static int realslice(const emd *e, int p, const char *native, const char *name, int k, double scale, const double *dim3,
                     const char *dim3_name, const char *dim3_units, int dpc)
{
    const stem_plan *plan = e->plan;
    char suffix[96], group[160];
    double depth;
    const double *defocus;
    point_name(e, p, suffix, sizeof suffix, &depth, &defocus);
    snprintf(group, sizeof group, name, suffix);
    size_t count = (size_t)plan->scan_nx * plan->scan_ny * (size_t)k;
    double *buf = stem_alloc(sizeof(double) * count, "EMD realslice");
    if (!buf) return STEM_ERR_MEMORY;
    int err = STEM_OK;
    if (dpc) { /* two native maps into one [..][2] block */
        double *one = stem_alloc(sizeof(double) * count / 2, "EMD DPC map");
        hsize_t core[3];
        int rank = scan_core(e, 1, core);
        for (int c = 0; c < 2 && one && !err; c++) {
            err = read_point(e, c ? "/dpc_com_y" : "/dpc_com_x", p, rank, core, H5T_NATIVE_DOUBLE, one);
            for (size_t i = 0; !err && i < count / 2; i++) buf[2 * i + c] = one[i];
        }
        if (!one) err = STEM_ERR_MEMORY;
        free(one);
    } else {
        hsize_t core[3];
        err = read_point(e, native, p, scan_core(e, k, core), core, H5T_NATIVE_DOUBLE, buf);
    }
    hid_t g = err ? H5I_INVALID_HID : data_group(e, e->realslices, group, depth, defocus);
    if (!err && g < 0) err = fail(e, group);
    if (!err) err = write_scan_data(e, g, buf, k, scale);
    if (!err && dim3) err = dim_vector(e, g, 3, dim3, (hsize_t)k, dim3_name, dim3_units);
    if (!err && dpc) err = dpc_labels(e, g);
    if (g >= 0) H5Gclose(g);
    free(buf);
    return err;
}

static int image_signals(const emd *e, int p)
{
    const stem_plan *plan = e->plan;
    if (!exists(e->in, "/images")) return STEM_OK; /* hrtem */
    for (int i = 0; i < plan->n_images; i++) {
        char native[96], name[160];
        snprintf(native, sizeof native, "/images/%s", plan->images[i].name);
        stem_emd_image_group(plan, i, "%s", name, sizeof name);
        STEM_TRY(realslice(e, p, native, name, 1, 1.0, NULL, NULL, NULL, 0));
    }
    return STEM_OK;
}

static int rings(const emd *e, int p)
{
    if (!exists(e->in, "/rings")) return STEM_OK;
    const stem_plan *plan = e->plan;
    double *centre = stem_calloc((size_t)plan->n_bins, sizeof(double), "ring centres");
    if (!centre) return STEM_ERR_MEMORY;
    for (int b = 0; b < plan->n_bins; b++) centre[b] = (b + 0.5) * plan->ring_width;
    int err =
        realslice(e, p, "/rings", "virtual_detector_%s", plan->n_bins, 1.0, centre, "bin_center_angle", "[mrad]", 0);
    free(centre);
    return err;
}

/* Scan row y of point p's patterns: read from the native dataset in ([nx][qy][qx]), written
 * transposed into d ([nx][1][qx][qy]) of EMD group `group`; row, out: buffers of a row. */
static int pattern_row(const emd *e, int p, const char *native, hid_t in, hid_t d, const char *group, size_t y,
                       float *row, float *out)
{
    const stem_plan *plan = e->plan;
    size_t nx = (size_t)plan->scan_nx, qx = (size_t)plan->cbed_nx, qy = (size_t)plan->cbed_ny;
    hsize_t start[EMD_MAX_LEAD + 4] = {0}, count[EMD_MAX_LEAD + 4];
    point_index(e, p, start);
    for (int k = 0; k < e->n_lead; k++) count[k] = 1;
    int r = e->n_lead;
    if (e->grid_rank == 2) start[r] = y, count[r++] = 1;
    count[r++] = nx, count[r++] = qy, count[r++] = qx;
    hid_t fs = H5Dget_space(in), ms = H5Screate_simple(r, count, NULL);
    int ok = fs >= 0 && ms >= 0 && H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL) >= 0 &&
        H5Dread(in, H5T_NATIVE_FLOAT, ms, fs, H5P_DEFAULT, row) >= 0;
    if (ms >= 0) H5Sclose(ms);
    if (fs >= 0) H5Sclose(fs);
    if (!ok)
        return STEM_FAIL(STEM_ERR_IO, "[output] layout = emd: cannot read %s row %zu from %s", native, y, e->native);
    for (size_t x = 0; x < nx; x++)
        for (size_t j = 0; j < qy; j++)
            for (size_t i = 0; i < qx; i++) out[(x * qx + i) * qy + j] = row[(x * qy + j) * qx + i];
    hsize_t ostart[4] = {0, y, 0, 0}, ocount[4] = {nx, 1, qx, qy};
    fs = H5Dget_space(d);
    ms = H5Screate_simple(4, ocount, NULL);
    ok = fs >= 0 && ms >= 0 && H5Sselect_hyperslab(fs, H5S_SELECT_SET, ostart, NULL, ocount, NULL) >= 0 &&
        H5Dwrite(d, H5T_NATIVE_FLOAT, ms, fs, H5P_DEFAULT, out) >= 0;
    if (ms >= 0) H5Sclose(ms);
    if (fs >= 0) H5Sclose(fs);
    return ok ? STEM_OK : fail(e, group);
}

/* The datacube's Q axes (dims 3 and 4) in 1/Angstrom from the native mrad axes; q: room for the longer. */
static int q_axes(const emd *e, hid_t g, double *q)
{
    const stem_plan *plan = e->plan;
    double mrad_to_q = 1e-3 / plan->lambda;
    int err = STEM_OK;
    for (int a = 0; a < 2 && !err; a++) {
        size_t n = (size_t)(a ? plan->cbed_ny : plan->cbed_nx);
        double *mrad = NULL;
        err = read_axis(e, a ? "cbed_qy_mrad" : "cbed_qx_mrad", n, &mrad);
        for (size_t i = 0; !err && i < n; i++) q[i] = mrad[i] * mrad_to_q;
        free(mrad);
        if (!err) err = dim_vector(e, g, 3 + a, q, n, a ? "Q_y" : "Q_x", "[\xc3\x85^-1]");
    }
    return err;
}

/* The 4D patterns (/cbed, or cbed's one /cbed_pattern), one scan row at a time: [nx][qy][qx]
 * read, [nx][1][qx][qy] written (one probe axis: the single row). */
static int datacube(const emd *e, int p)
{
    const char *native = exists(e->in, "/cbed") ? "/cbed" : exists(e->in, "/cbed_pattern") ? "/cbed_pattern" : NULL;
    if (!native) return STEM_OK;
    const stem_plan *plan = e->plan;
    size_t nx = (size_t)plan->scan_nx, ny = (size_t)plan->scan_ny, qx = (size_t)plan->cbed_nx,
           qy = (size_t)plan->cbed_ny;
    char suffix[96], group[160];
    double depth;
    const double *defocus;
    point_name(e, p, suffix, sizeof suffix, &depth, &defocus);
    snprintf(group, sizeof group, "CBED_array_%s", suffix);
    hid_t g = data_group(e, e->datacubes, group, depth, defocus);
    if (g < 0) return fail(e, group);
    float *row = stem_alloc(sizeof(float) * nx * qx * qy, "EMD pattern row"),
          *out = stem_alloc(sizeof(float) * nx * qx * qy, "EMD pattern row");
    double *q = stem_calloc(qx > qy ? qx : qy, sizeof(double), "EMD q axis");
    hsize_t dims[4] = {nx, ny, qx, qy}, chunk[4] = {1, 1, qx, qy};
    hid_t space = H5Screate_simple(4, dims, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE), d = H5I_INVALID_HID;
    int err = row && out && q ? STEM_OK : STEM_ERR_MEMORY;
    if (!err &&
        (space < 0 || dcpl < 0 || H5Pset_chunk(dcpl, 4, chunk) < 0 ||
         (d = H5Dcreate2(g, "data", H5T_IEEE_F32LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT)) < 0))
        err = fail(e, group);
    hid_t in = err ? H5I_INVALID_HID : H5Dopen2(e->in, native, H5P_DEFAULT);
    if (!err && in < 0) err = STEM_FAIL(STEM_ERR_IO, "[output] layout = emd: cannot open %s in %s", native, e->native);
    for (size_t y = 0; y < ny && !err && !(err = tick(e)); y++)
        err = pattern_row(e, p, native, in, d, group, y, row, out);
    if (!err) err = q_axes(e, g, q);
    if (in >= 0) H5Dclose(in);
    if (d >= 0) H5Dclose(d);
    if (dcpl >= 0) H5Pclose(dcpl);
    if (space >= 0) H5Sclose(space);
    H5Gclose(g);
    free(row);
    free(out);
    free(q);
    return err;
}

/* ------------------------------------------------------------- HRTEM */

/* hrtem's plane-wave tilt along axis a (mrad), as rounded to the cell's plane waves. */
static double plane_tilt_mrad(const stem_plan *plan, int a)
{
    return plan->plane_k[a] / plan->cell[a] * plan->lambda * 1e3;
}

/* Point p's index in its HRTEM stack (row-major over the beam tilt axes); n_tilts: the stack's size. */
static hsize_t stack_index(const emd *e, int p, hsize_t *n_tilts)
{
    hsize_t at[EMD_MAX_LEAD], t = 0;
    point_index(e, p, at);
    *n_tilts = 1;
    for (int k = 0; k < e->n_lead; k++)
        if (is_beam_tilt(e->lead_name[k])) {
            t = t * e->lead[k] + at[k];
            *n_tilts *= e->lead[k];
        }
    return t;
}

/* An HRTEM stack's tilts: Prismatic's [n_tilts][2] (x, y) in mrad as the dataset tilts, and
 * as dim3 one label per image ("0, 4.62 mrad"): py4DSTEM reads dim3 as the slices' labels
 * and fails on Prismatic's 2D dim3. From the beam tilt axes, else the run's one tilt. */
static int tilts_dim(const emd *e, hid_t g, hsize_t n_tilts)
{
    double *v = stem_alloc(sizeof(double) * 2 * n_tilts, "EMD tilts");
    char *text = stem_alloc(64 * n_tilts, "EMD tilt labels");
    const char **labels = stem_alloc(sizeof(char *) * n_tilts, "EMD tilt labels");
    if (!v || !text || !labels) {
        free(v), free(text), free(labels);
        return STEM_ERR_MEMORY;
    }
    for (hsize_t t = 0; t < n_tilts; t++) {
        hsize_t rest = t;
        for (int a = 0; a < 2; a++) v[2 * t + a] = plane_tilt_mrad(e->plan, a);
        for (int k = e->n_lead - 1; k >= 0; k--)
            if (is_beam_tilt(e->lead_name[k])) {
                v[2 * t + (e->lead_name[k][10] == 'y')] = e->lead_values[k][rest % e->lead[k]];
                rest /= e->lead[k];
            }
        snprintf(text + 64 * t, 64, "%.6g, %.6g mrad", v[2 * t], v[2 * t + 1]);
        labels[t] = text + 64 * t;
    }
    hsize_t dims[2] = {n_tilts, 2};
    hid_t space = H5Screate_simple(2, dims, NULL);
    hid_t d = space >= 0 ? H5Dcreate2(g, "tilts", H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)
                         : H5I_INVALID_HID;
    int ok = d >= 0 && H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0 &&
        !stem_h5_attr_text(d, "name", "Tilts") && !stem_h5_attr_text(d, "units", "[mrad]");
    if (d >= 0) H5Dclose(d);
    if (space >= 0) H5Sclose(space);
    int err = ok ? dim_labels(e, g, labels, n_tilts, "Tilts", "[mrad]") : fail(e, "the HRTEM tilts");
    free(v), free(text), free(labels);
    return err;
}

/* Prismatic's complex type for waves (h5py's default: members r, i). */
static hid_t complex_type(hid_t member)
{
    hid_t t = H5Tcreate(H5T_COMPOUND, 2 * sizeof(float));
    if (t >= 0 && (H5Tinsert(t, "r", 0, member) < 0 || H5Tinsert(t, "i", sizeof(float), member) < 0)) {
        H5Tclose(t);
        return H5I_INVALID_HID;
    }
    return t;
}

/* The HRTEM stack of point p's series point: realslices/<base> (no series but beam tilts) or
 * <base>_<suffix>, [Nx][Ny][n_tilts] float32 ({r, i} when complex) with the image's pixels as
 * dim1, dim2 and the tilts as dim3; its data opened, or created by the stack's first point. */
static hid_t hrtem_stack(const emd *e, int p, const char *base, int complex_wave, const hsize_t *image, hsize_t n_tilts)
{
    char suffix[96], group[160];
    double depth;
    const double *defocus;
    int others = 0;
    for (int k = 0; k < e->n_lead; k++) others += !is_beam_tilt(e->lead_name[k]);
    point_name_of(e, p, 1, suffix, sizeof suffix, &depth, &defocus);
    if (others)
        snprintf(group, sizeof group, "%s_%s", base, suffix);
    else
        snprintf(group, sizeof group, "%s", base);
    hid_t g = exists(e->realslices, group) ? H5Gopen2(e->realslices, group, H5P_DEFAULT) : H5I_INVALID_HID;
    if (g >= 0) {
        hid_t d = H5Dopen2(g, "data", H5P_DEFAULT);
        H5Gclose(g);
        return d;
    }
    if ((g = bare_group(e->realslices, group, depth, defocus)) < 0) return g;
    double *x = NULL, *y = NULL;
    int err = read_axis(e, "x", image[1], &x);
    if (!err) err = read_axis(e, "y", image[0], &y);
    if (!err) err = dim_vector(e, g, 1, x, image[1], "R_x", "[\xc3\x85]");
    if (!err) err = dim_vector(e, g, 2, y, image[0], "R_y", "[\xc3\x85]");
    if (!err) err = tilts_dim(e, g, n_tilts);
    free(x);
    free(y);
    hsize_t dims[3] = {image[1], image[0], n_tilts};
    hid_t type = complex_wave ? complex_type(H5T_IEEE_F32LE) : H5Tcopy(H5T_IEEE_F32LE);
    hid_t space = H5Screate_simple(3, dims, NULL), d = H5I_INVALID_HID;
    if (!err && type >= 0 && space >= 0) d = H5Dcreate2(g, "data", type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (space >= 0) H5Sclose(space);
    if (type >= 0) H5Tclose(type);
    H5Gclose(g);
    return d;
}

/* The image size [ny][nx] of native dataset `name` ([lead][1][ny][nx], then [2] when complex). */
static int image_shape(const emd *e, const char *name, int complex_wave, hsize_t *image)
{
    hsize_t dims[EMD_MAX_LEAD + 4];
    hid_t d = H5Dopen2(e->in, name, H5P_DEFAULT), s = d >= 0 ? H5Dget_space(d) : H5I_INVALID_HID;
    int rank = s >= 0 ? H5Sget_simple_extent_ndims(s) : -1, want = e->n_lead + 3 + complex_wave;
    if (rank == want) H5Sget_simple_extent_dims(s, dims, NULL);
    if (s >= 0) H5Sclose(s);
    if (d >= 0) H5Dclose(d);
    if (rank != want)
        return STEM_FAIL(STEM_ERR_IO, "[output] layout = emd: cannot read the shape of %s in %s", name, e->native);
    image[0] = dims[e->n_lead + 1], image[1] = dims[e->n_lead + 2];
    return STEM_OK;
}

/* Slice t of an HRTEM stack: out, [Nx][Ny] (x c floats), written as [Nx][Ny][1] at t. */
static int write_stack_slice(const emd *e, hid_t d, hsize_t t, const hsize_t *image, int complex_wave, const float *out)
{
    hsize_t start[3] = {0, 0, t}, count[3] = {image[1], image[0], 1};
    hid_t fs = H5Dget_space(d), ms = H5Screate_simple(3, count, NULL);
    hid_t type = complex_wave ? complex_type(H5T_NATIVE_FLOAT) : H5Tcopy(H5T_NATIVE_FLOAT);
    int ok = fs >= 0 && ms >= 0 && type >= 0 &&
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL) >= 0 &&
        H5Dwrite(d, type, ms, fs, H5P_DEFAULT, out) >= 0;
    if (type >= 0) H5Tclose(type);
    if (ms >= 0) H5Sclose(ms);
    if (fs >= 0) H5Sclose(fs);
    return ok ? STEM_OK : fail(e, "an HRTEM stack");
}

/* hrtem's image (/hrtem) or mean exit wave (/exit_wave: complex) of point p, transposed into its
 * slice of the HRTEM stack (realslices/HRTEM..., exit_wave...). */
static int hrtem_slice(const emd *e, int p, const char *native, const char *base, int complex_wave)
{
    if (!exists(e->in, native)) return STEM_OK;
    hsize_t image[2] = {0, 0}, n_tilts, t = stack_index(e, p, &n_tilts);
    STEM_TRY(image_shape(e, native, complex_wave, image));
    hsize_t core[4] = {1, image[0], image[1], 2}; /* the probe axis of 1, y, x, re/im */
    size_t px = (size_t)(image[0] * image[1]), c = complex_wave ? 2 : 1;
    float *buf = stem_alloc(sizeof(float) * px * c, "EMD HRTEM image");
    float *out = stem_alloc(sizeof(float) * px * c, "EMD HRTEM image");
    int err = buf && out ? read_point(e, native, p, 3 + complex_wave, core, H5T_NATIVE_FLOAT, buf) : STEM_ERR_MEMORY;
    for (size_t y = 0; !err && y < image[0]; y++)
        for (size_t x = 0; x < image[1]; x++)
            for (size_t k = 0; k < c; k++) out[(x * image[0] + y) * c + k] = buf[(y * image[1] + x) * c + k];
    hid_t d = err ? H5I_INVALID_HID : hrtem_stack(e, p, base, complex_wave, image, n_tilts);
    if (!err) err = d < 0 ? fail(e, base) : write_stack_slice(e, d, t, image, complex_wave, out);
    if (d >= 0) H5Dclose(d);
    free(buf);
    free(out);
    return err;
}

static int convert_point(const emd *e, int p)
{
    const stem_plan *plan = e->plan;
    STEM_TRY(tick(e));
    STEM_TRY(image_signals(e, p));
    STEM_TRY(realslice(e, p, "/total_intensity", "total_intensity_%s", 1, 1.0, NULL, NULL, NULL, 0));
    STEM_TRY(tick(e));
    STEM_TRY(rings(e, p));
    if (exists(e->in, "/dpc_com_x"))
        STEM_TRY(realslice(e, p, NULL, "DPC_CoM_%s", 2, 1e-3 / plan->lambda, NULL, NULL, NULL, 1));
    STEM_TRY(datacube(e, p));
    STEM_TRY(hrtem_slice(e, p, "/hrtem", "HRTEM", 0));
    return hrtem_slice(e, p, "/exit_wave", "exit_wave", 1);
}

/* ------------------------------------------------------------- the tree */

static int tree(emd *e, hid_t *sim)
{
    static const char *const data_groups[] = {"datacubes",  "counted_datacubes", "diffractionslices", "realslices",
                                              "pointlists", "pointlistarrays",   "supergroups"};
    static const char *const meta_groups[] = {"microscope", "sample", "user", "calibration", "comments"};
    *sim = H5Gcreate2(e->out, "/4DSTEM_simulation", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (*sim < 0 || stem_h5_attr_int(*sim, "version_major", 0) || stem_h5_attr_int(*sim, "version_minor", 9) ||
        stem_h5_attr_int(*sim, "version_release", 0) || stem_h5_attr_int(*sim, "emd_group_type", 2))
        return fail(e, "/4DSTEM_simulation");
    hid_t data = H5Gcreate2(*sim, "data", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (data < 0) return fail(e, "data");
    for (size_t i = 0; i < sizeof data_groups / sizeof *data_groups; i++) {
        hid_t g = H5Gcreate2(data, data_groups[i], H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        if (g < 0) {
            H5Gclose(data);
            return fail(e, data_groups[i]);
        }
        if (!strcmp(data_groups[i], "realslices"))
            e->realslices = g;
        else if (!strcmp(data_groups[i], "datacubes"))
            e->datacubes = g;
        else
            H5Gclose(g);
    }
    H5Gclose(data);
    const char *paths[] = {"log",
                           "metadata",
                           "metadata/metadata_0",
                           "metadata/metadata_0/original",
                           "metadata/metadata_0/original/shortlist",
                           "metadata/metadata_0/original/all"};
    for (size_t i = 0; i < sizeof paths / sizeof *paths; i++) {
        hid_t g = H5Gcreate2(*sim, paths[i], H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        if (g < 0) return fail(e, paths[i]);
        H5Gclose(g);
    }
    for (size_t i = 0; i < sizeof meta_groups / sizeof *meta_groups; i++) {
        char path[64];
        snprintf(path, sizeof path, "metadata/metadata_0/%s", meta_groups[i]);
        hid_t g = H5Gcreate2(*sim, path, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        if (g < 0) return fail(e, path);
        H5Gclose(g);
    }
    return STEM_OK;
}

/* dim1, dim2 of the scan groups: on a grid the probe positions R_x, R_y; with one probe axis
 * ([scan] positions, hrtem, cbed: the data [n_probes][1], as Prismatic shapes arbitrary probes)
 * one probe's position as R_x, R_y, or for several the probe index (their positions are not
 * a grid: a reader's axis from dim1 would be wrong; they are in simulation_parameters'
 * probes_x, probes_y and /stemsim/axes/probe_x, probe_y). */
static int scan_dims(emd *e)
{
    const stem_plan *plan = e->plan;
    hsize_t n = (hsize_t)plan->n_probes;
    e->grid_rank = stem_emd_views_apply(plan) ? 2 : 1;
    e->scan_x_name = "R_x", e->scan_y_name = "R_y", e->scan_units = "[\xc3\x85]";
    if (e->grid_rank == 2) {
        STEM_TRY(read_axis(e, "scan_x", (hsize_t)plan->scan_nx, &e->scan_x));
        return read_axis(e, "scan_y", (hsize_t)plan->scan_ny, &e->scan_y);
    }
    STEM_TRY(read_axis(e, "probe_x", n, &e->probe_x));
    STEM_TRY(read_axis(e, "probe_y", n, &e->probe_y));
    if (n == 1) {
        STEM_TRY(read_axis(e, "probe_x", n, &e->scan_x));
        return read_axis(e, "probe_y", n, &e->scan_y);
    }
    e->scan_x = stem_calloc(n, sizeof(double), "EMD probe index");
    e->scan_y = stem_calloc(1, sizeof(double), "EMD probe index");
    if (!e->scan_x || !e->scan_y) return STEM_ERR_MEMORY;
    for (hsize_t i = 0; i < n; i++) e->scan_x[i] = (double)i;
    e->scan_x_name = "probe", e->scan_y_name = "none", e->scan_units = "[index]";
    return STEM_OK;
}

/* Prismatic's numSlices (-ns): slices between the outputs of a thickness series whose depths
 * are evenly spaced from the entrance (d_k = (k + 1) d_0), else 0 (outputs at the exit only, or
 * depths Prismatic could not have asked for). rosettasciio builds its depth axis from it. */
static int slices_between_outputs(const emd *e)
{
    if (e->depth_axis < 0) return 0;
    const double *d = e->lead_values[e->depth_axis];
    for (hsize_t k = 0; k < e->lead[e->depth_axis]; k++)
        if (fabs(d[k] - (double)(k + 1) * d[0]) > 1e-6 * d[0]) return 0;
    double n = d[0] / e->plan->dz;
    return fabs(n - round(n)) < 1e-6 ? (int)round(n) : 0;
}

/* Prismatic's short keys for what stemsim has (its units: keV, mrad, Angstrom). */
static int parameters(const emd *e, hid_t sim)
{
    const stem_plan *plan = e->plan;
    int hrtem = plan->algorithm == STEM_ALG_HRTEM;
    hid_t g =
        H5Gcreate2(sim, "metadata/metadata_0/original/simulation_parameters", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0) return fail(e, "simulation_parameters");
    const struct {
        const char *name;
        int is_int; /* int32, else float64 */
        double value;
    } keys[] = {
        {"fx", 1, plan->fx},
        {"fy", 1, plan->fy},
        {"F", 1, plan->n_configs},
        {"E", 0, plan->energy_kev},
        {"sa", 0, plan->semiangle_mrad},
        {"px", 0, plan->dx},
        {"py", 0, plan->dy},
        {"s", 0, plan->dz},
        {"ns", 1, slices_between_outputs(e)},
        {"zs", 0, 0},
        {"P", 0, plan->opt.potential_radius},
        {"rx", 0, plan->scan_step},
        {"ry", 0, plan->scan_step},
        {"df", 0, plan->aberr.c[STEM_C10]},
        {"C3", 0, plan->aberr.c[STEM_C30]},
        {"C5", 0, plan->aberr.c[STEM_C50]},
        {"tx", 0, hrtem ? plane_tilt_mrad(plan, 0) : plan->tilt_q[0] * plan->lambda * 1e3},
        {"ty", 0, hrtem ? plane_tilt_mrad(plan, 1) : plan->tilt_q[1] * plan->lambda * 1e3},
        {"d", 0, plan->ring_width},
        {"te", 1, plan->opt.thermal},
        {"3D", 1, plan->n_bins > 0},
        {"4D", 1, plan->opt.save_4d},
        {"DPC", 1, plan->opt.save_dpc},
        {"ps", 1, plan->opt.save_potential},
        {"sm", 1, plan->opt.save_smatrix},
        {"lambda", 0, plan->lambda},
    };
    int ok = !stem_h5_attr_text(g, "a", plan->algorithm == STEM_ALG_PRISM ? "p" : hrtem ? "t" : "m");
    for (size_t i = 0; ok && i < sizeof keys / sizeof *keys; i++)
        ok = keys[i].is_int ? !stem_h5_attr_int(g, keys[i].name, (int)keys[i].value)
                            : !stem_h5_attr_double(g, keys[i].name, keys[i].value);
    long seed = plan->opt.seed; /* 64 bits exact (a double or an int would round or cut a large seed) */
    ok = ok && !stem_h5_attr(g, "rs", H5T_STD_I64LE, H5T_NATIVE_LONG, &seed, 0, NULL, NULL);
    ok = ok && !stem_h5_attr_text(g, "program", "stemsim");
    /* [scan] positions: the probes where Prismatic keeps its arbitrary probes (-p file) */
    hsize_t n = (hsize_t)plan->n_probes;
    if (plan->positions)
        ok = ok && !stem_h5_attr(g, "probes_x", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, e->probe_x, n, NULL, NULL) &&
            !stem_h5_attr(g, "probes_y", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, e->probe_y, n, NULL, NULL);
    /* Prismatic's cell (x, y, z) and tiles: the sample, already tiled, is one cell here (readers
     * such as rosettasciio need both to stack a thickness series) */
    double cell[3] = {plan->cell[0], plan->cell[1], plan->cell[2]};
    int tiles[3] = {1, 1, 1};
    ok = ok && !stem_h5_attr(g, "c", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, cell, 3, NULL, NULL) &&
        !stem_h5_attr(g, "t", H5T_STD_I32LE, H5T_NATIVE_INT, tiles, 3, NULL, NULL);
    H5Gclose(g);
    return ok ? STEM_OK : fail(e, "simulation_parameters");
}

/* stemsim's own record (config, plan, environment, build) in log; the root's program,
 * version and build; the stored datasets copied unchanged. */
static int copy_stemsim_record(const emd *e, hid_t sim)
{
    static const char *const texts[] = {"config", "plan", "environment", "advice", "build"};
    hid_t log = H5Gopen2(sim, "log", H5P_DEFAULT);
    int ok = log >= 0;
    for (size_t i = 0; ok && i < sizeof texts / sizeof *texts; i++) {
        char *t = stem_h5_attr_read_text(e->in, texts[i]), name[32];
        snprintf(name, sizeof name, "stemsim_%s", texts[i]);
        if (t) ok = !stem_h5_attr_text(log, name, t);
        if (t && !strcmp(texts[i], "build")) ok = ok && !stem_h5_attr_text(e->out, "build", t);
        free(t);
    }
    if (log >= 0) H5Gclose(log);
    ok = ok && !stem_h5_attr_text(e->out, "program", "stemsim") &&
        !stem_h5_attr_text(e->out, "version", STEM_VERSION) &&
        !stem_h5_attr_text(e->out, "layout", "emd (Prismatic 2.0 / py4DSTEM v0.9)");
    static const char *const stored[] = {"/potential", "/smatrix", "/smatrix_beams", "/potential_tilts",
                                         "/smatrix_tilts"}; /* the last two: a campaign's, one per tilt */
    for (size_t i = 0; ok && i < sizeof stored / sizeof *stored; i++)
        if (exists(e->in, stored[i])) ok = H5Ocopy(e->in, stored[i], e->out, stored[i], H5P_DEFAULT, H5P_DEFAULT) >= 0;
    /* what Prismatic's tree has no place for is kept as stemsim wrote it, under /stemsim */
    static const char *const unmapped[] = {"segments", "dpc_segments_x", "dpc_segments_y",
                                           "pacbed",   "axes",           "standard_error"};
    hid_t keep = H5I_INVALID_HID;
    for (size_t i = 0; ok && i < sizeof unmapped / sizeof *unmapped; i++) {
        char from[32], to[48];
        snprintf(from, sizeof from, "/%s", unmapped[i]);
        snprintf(to, sizeof to, "/stemsim/%s", unmapped[i]);
        if (!exists(e->in, from)) continue;
        if (keep < 0 && (keep = H5Gcreate2(e->out, "/stemsim", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)) < 0) ok = 0;
        ok = ok && H5Ocopy(e->in, from, e->out, to, H5P_DEFAULT, H5P_DEFAULT) >= 0;
    }
    /* the plan's convergence advice where the other stemsim extras live (always: "" when there is none) */
    char *advice = stem_h5_attr_read_text(e->in, "advice");
    if (ok && keep < 0 && (keep = H5Gcreate2(e->out, "/stemsim", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)) < 0) ok = 0;
    ok = ok && !stem_h5_attr_text(keep, "advice", advice ? advice : "");
    free(advice);
    if (keep >= 0) H5Gclose(keep);
    return ok ? STEM_OK : fail(e, "the log and stored datasets");
}

/* py4DSTEM's and hyperspy's views of a grid scan (emd_readers.h). */
static int views(const emd *e, int points)
{
    char(*suffix)[STEM_EMD_SUFFIX] = stem_alloc(sizeof *suffix * (size_t)points, "EMD point names");
    if (!suffix) return STEM_ERR_MEMORY;
    for (int p = 0; p < points; p++) {
        double depth;
        const double *defocus;
        point_name(e, p, suffix[p], sizeof suffix[p], &depth, &defocus);
    }
    stem_emd_view v = {.out = e->out,
                       .realslices = e->realslices,
                       .datacubes = e->datacubes,
                       .path = e->path,
                       .plan = e->plan,
                       .points = points,
                       .suffix = (const char(*)[STEM_EMD_SUFFIX])suffix,
                       .n_lead = e->n_lead,
                       .lead = e->lead,
                       .lead_name = (const char(*)[32])e->lead_name,
                       .lead_values = e->lead_values,
                       .scan_x = e->scan_x,
                       .scan_y = e->scan_y};
    int err = stem_emd_views(&v);
    free(suffix);
    return err;
}

int stem_emd_convert(const char *native, const char *path, const stem_plan *plan, const stem_emd_hooks *hooks)
{
    emd e = {.in = H5I_INVALID_HID,
             .out = H5I_INVALID_HID,
             .realslices = H5I_INVALID_HID,
             .datacubes = H5I_INVALID_HID,
             .plan = plan,
             .native = native,
             .path = path,
             .hooks = hooks};
    hid_t sim = H5I_INVALID_HID;
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    e.in = H5Fopen(native, H5F_ACC_RDONLY, H5P_DEFAULT);
    int err = e.in < 0 ? STEM_FAIL(STEM_ERR_IO, "[output] layout = emd: cannot reopen %s", native) : STEM_OK;
    if (!err && (e.out = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT)) < 0) err = fail(&e, "H5Fcreate");
    if (!err) err = scan_dims(&e);
    if (!err) err = series_axes(&e);
    if (!err) err = tree(&e, &sim);
    int points = 1;
    for (int k = 0; k < e.n_lead; k++) points *= (int)e.lead[k];
    for (int p = 0; p < points && !err; p++) err = convert_point(&e, p);
    if (!err) err = tick(&e);
    if (!err) err = parameters(&e, sim);
    if (!err) err = copy_stemsim_record(&e, sim);
    if (!err && e.grid_rank == 2) err = views(&e, points);
    if (!err && (H5Fflush(e.out, H5F_SCOPE_GLOBAL) < 0 || stem_h5_attr_int(e.out, "complete", 1)))
        err = fail(&e, "the marker");
    /* all on disk before the close: a close that cannot write leaves HDF5 a half-closed file */
    if (!err && H5Fflush(e.out, H5F_SCOPE_GLOBAL) < 0) err = fail(&e, "H5Fflush");
    if (sim >= 0) H5Gclose(sim);
    if (e.realslices >= 0) H5Gclose(e.realslices);
    if (e.datacubes >= 0) H5Gclose(e.datacubes);
    if (e.out >= 0 && hooks && hooks->before_close) hooks->before_close(hooks->ctx, path, err != STEM_OK);
    if (e.out >= 0 && H5Fclose(e.out) < 0 && !err) err = fail(&e, "H5Fclose");
    if (e.in >= 0) H5Fclose(e.in);
    for (int k = 0; k < e.n_lead; k++) free(e.lead_values[k]);
    free(e.scan_x);
    free(e.scan_y);
    free(e.probe_x);
    free(e.probe_y);
    return err;
}
