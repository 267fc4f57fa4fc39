/* The EMD layout's views for py4DSTEM and hyperspy: see emd_readers.h. */
#include "emd_readers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/stem.h"
#include "h5_collective.h"
#include "publish.h"

static int fail(const stem_emd_view *v, const char *what)
{
    char why[128];
    stem_output_space_note(v->path, why, sizeof why);
    return STEM_FAIL(STEM_ERR_IO, "[output] layout = emd: %s failed writing the reader views of %s (%s)", what, v->path,
                     why);
}

void stem_emd_image_group(const stem_plan *plan, int i, const char *suffix, char *name, size_t n)
{
    int plain = 0;
    for (int k = 0; k < plan->n_images; k++)
        if (!strcmp(plan->images[k].name, "HAADF")) plain = k;
    if (i == plain)
        snprintf(name, n, "annular_detector_%s", suffix);
    else
        snprintf(name, n, "annular_detector_%s_%s", suffix, plan->images[i].name);
}

/* ------------------------------------------------------------- helpers */

/* emdfile compares its type attributes with str: variable-length UTF-8, which h5py reads as str. */
static int text(hid_t loc, const char *name, const char *value)
{
    return stem_h5_attr_string(loc, name, value, 0, NULL, NULL);
}

/* A group with emdfile's emd_group_type and python_class (NULL: none). */
static hid_t node(hid_t parent, const char *name, const char *type, const char *cls)
{
    hid_t g = H5Gcreate2(parent, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g >= 0 && (text(g, "emd_group_type", type) || (cls && text(g, "python_class", cls)))) {
        H5Gclose(g);
        return H5I_INVALID_HID;
    }
    return g;
}

/* A plain group (a path of them, made as needed). */
static hid_t plain_group(hid_t parent, const char *path)
{
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE), g = H5I_INVALID_HID;
    if (lcpl >= 0 && H5Pset_create_intermediate_group(lcpl, 1) >= 0)
        g = H5Gcreate2(parent, path, lcpl, H5P_DEFAULT, H5P_DEFAULT);
    if (lcpl >= 0) H5Pclose(lcpl);
    return g;
}

int stem_emd_dim(hid_t g, int k, const double *values, hsize_t n, const char *name, const char *units)
{
    char dname[8];
    snprintf(dname, sizeof dname, "dim%d", k);
    hid_t space = H5Screate_simple(1, &n, NULL);
    hid_t d = space >= 0 ? H5Dcreate2(g, dname, H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)
                         : H5I_INVALID_HID;
    int ok = d >= 0 && H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values) >= 0 &&
        !stem_h5_attr_text(d, "name", name) && !stem_h5_attr_text(d, "units", units);
    if (d >= 0) H5Dclose(d);
    if (space >= 0) H5Sclose(space);
    return ok ? STEM_OK : STEM_ERR_IO;
}

/* Prismatic's dataset `data` of group `prism` linked as `name` into g (the same dataset: nothing
 * copied); emdfile's arrays need its units attribute. */
static int link_data(hid_t prism, hid_t g, const char *name)
{
    if (H5Lcreate_hard(prism, "data", g, name, H5P_DEFAULT, H5P_DEFAULT) < 0) return STEM_ERR_IO;
    hid_t d = H5Dopen2(prism, "data", H5P_DEFAULT);
    int ok = d >= 0 && (H5Aexists(d, "units") > 0 || !stem_h5_attr_text(d, "units", "intensity"));
    if (d >= 0) H5Dclose(d);
    return ok ? STEM_OK : STEM_ERR_IO;
}

/* A scalar of emdfile's metadata: a number, or a string (text != NULL). */
static int item(hid_t g, const char *name, double number, const char *value)
{
    hid_t type = value ? H5Tcopy(H5T_C_S1) : H5Tcopy(H5T_IEEE_F64LE), space = H5Screate(H5S_SCALAR);
    int ok = type >= 0 && space >= 0 && (!value || H5Tset_size(type, strlen(value) + 1) >= 0);
    hid_t d = ok ? H5Dcreate2(g, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT) : H5I_INVALID_HID;
    ok = d >= 0 &&
        (value ? H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, value)
               : H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, &number)) >= 0 &&
        !text(d, "type", value ? "string" : "number");
    if (d >= 0) H5Dclose(d);
    if (space >= 0) H5Sclose(space);
    if (type >= 0) H5Tclose(type);
    return ok ? STEM_OK : STEM_ERR_IO;
}

static int exists(hid_t g, const char *name) { return H5Lexists(g, name, H5P_DEFAULT) > 0; }

/* n values of /stemsim/axes/<name> (malloc'd into *v); its units as "[units]" into units. */
static int axis(const stem_emd_view *v, const char *name, hsize_t n, double **out, char *units, size_t nu)
{
    char path[64];
    snprintf(path, sizeof path, "/stemsim/axes/%s", name);
    if (!(*out = stem_calloc(n ? n : 1, sizeof(double), "EMD view axis"))) return STEM_ERR_MEMORY;
    hid_t d = H5Dopen2(v->out, path, H5P_DEFAULT);
    int ok = d >= 0 && H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, *out) >= 0;
    char *u = d >= 0 ? stem_h5_attr_read_text(d, "units") : NULL;
    if (units) /* rosettasciio parses the units with pint, which knows "Å", not "Angstrom" */
        snprintf(units, nu, "[%s]", u && !strcmp(u, "Angstrom") ? "\xc3\x85" : u ? u : "");
    free(u);
    if (d >= 0) H5Dclose(d);
    return ok ? STEM_OK : STEM_FAIL(STEM_ERR_IO, "[output] layout = emd: cannot read %s back from %s", path, v->path);
}

/* ------------------------------------------------------------ py4DSTEM */

/* The root's calibration (py4DSTEM's Calibration: one Q pixel size, so the x step; both are kept
 * as Q_pixel_size_x, _y: equal with [detector] cbed_square_q, else stemsim.to_py4dstem resamples a
 * non-square cell's patterns). */
static int calibration(const stem_emd_view *v, hid_t root, const double *qx, const double *qy)
{
    const stem_plan *plan = v->plan;
    double dqx = plan->cbed_dq_mrad[0], dqy = plan->cbed_dq_mrad[1];
    hid_t bundle = node(root, "metadatabundle", "metadatabundle", NULL);
    hid_t cal = bundle >= 0 ? node(bundle, "calibration", "metadata", "Calibration") : H5I_INVALID_HID;
    int ok = cal >= 0 && !item(cal, "R_pixel_size", plan->scan_step, NULL) && !item(cal, "R_pixel_units", 0, "A");
    if (ok && qx)
        ok = !item(cal, "Q_pixel_size", dqx, NULL) && !item(cal, "Q_pixel_units", 0, "mrad") &&
            !item(cal, "Q_pixel_size_x", dqx, NULL) && !item(cal, "Q_pixel_size_y", dqy, NULL) &&
            !item(cal, "qx0_mean", -qx[0] / dqx, NULL) && !item(cal, "qy0_mean", -qy[0] / dqy, NULL);
    if (cal >= 0) H5Gclose(cal);
    if (bundle >= 0) H5Gclose(bundle);
    return ok ? STEM_OK : fail(v, "/stemsim/metadatabundle/calibration");
}

/* An emdfile array `name` of class cls under parent: Prismatic group prism's data, dim0.. the
 * scan (Angstrom) and, for a DataCube, q (mrad). */
static int array(const stem_emd_view *v, hid_t parent, const char *name, const char *cls, hid_t prism, const double *qx,
                 const double *qy)
{
    const stem_plan *plan = v->plan;
    hid_t g = node(parent, name, "array", cls);
    int ok = g >= 0 && !link_data(prism, g, "data") &&
        !stem_emd_dim(g, 0, v->scan_x, (hsize_t)plan->scan_nx, "Rx", "A") &&
        !stem_emd_dim(g, 1, v->scan_y, (hsize_t)plan->scan_ny, "Ry", "A") &&
        (!qx ||
         (!stem_emd_dim(g, 2, qx, (hsize_t)plan->cbed_nx, "Qx", "mrad") &&
          !stem_emd_dim(g, 3, qy, (hsize_t)plan->cbed_ny, "Qy", "mrad")));
    if (g >= 0) H5Gclose(g);
    return ok ? STEM_OK : fail(v, name);
}

/* Point p's RealSlices (the [images] ranges, total_intensity) under parent; named with the
 * point's suffix when they sit at the root of a series. */
static int realslices(const stem_emd_view *v, int p, hid_t parent, int with_suffix)
{
    const stem_plan *plan = v->plan;
    for (int i = -1; i < plan->n_images; i++) {
        char prism[160], name[160];
        if (i < 0)
            snprintf(prism, sizeof prism, "total_intensity_%s", v->suffix[p]);
        else
            stem_emd_image_group(plan, i, v->suffix[p], prism, sizeof prism);
        if (!exists(v->realslices, prism)) continue;
        const char *base = i < 0 ? "total_intensity" : plan->images[i].name;
        if (with_suffix)
            snprintf(name, sizeof name, "%s_%s", base, v->suffix[p]);
        else
            snprintf(name, sizeof name, "%s", base);
        hid_t g = H5Gopen2(v->realslices, prism, H5P_DEFAULT);
        int err = g < 0 ? fail(v, prism) : array(v, parent, name, "RealSlice", g, NULL, NULL);
        if (g >= 0) H5Gclose(g);
        STEM_TRY(err);
    }
    return STEM_OK;
}

/* py4DSTEM's tree under /stemsim: per point a DataCube with its RealSlices, or the RealSlices. */
static int py4dstem(const stem_emd_view *v, const double *qx, const double *qy)
{
    hid_t root = H5Gopen2(v->out, "/stemsim", H5P_DEFAULT);
    int err = root >= 0 && !text(root, "emd_group_type", "root") && !text(root, "python_class", "Root")
        ? calibration(v, root, qx, qy)
        : fail(v, "/stemsim");
    for (int p = 0; p < v->points && !err; p++) {
        char prism[160], name[160];
        snprintf(prism, sizeof prism, "CBED_array_%s", v->suffix[p]);
        if (!exists(v->datacubes, prism)) {
            err = realslices(v, p, root, v->points > 1);
            continue;
        }
        if (v->points > 1)
            snprintf(name, sizeof name, "cbed_%s", v->suffix[p]);
        else
            snprintf(name, sizeof name, "cbed");
        hid_t g = H5Gopen2(v->datacubes, prism, H5P_DEFAULT);
        err = g < 0 ? fail(v, prism) : array(v, root, name, "DataCube", g, qx, qy);
        if (g >= 0) H5Gclose(g);
        hid_t dc = err ? H5I_INVALID_HID : H5Gopen2(root, name, H5P_DEFAULT);
        if (!err) err = dc < 0 ? fail(v, name) : realslices(v, p, dc, 0);
        if (dc >= 0) H5Gclose(dc);
    }
    if (root >= 0) H5Gclose(root);
    return err;
}

/* ------------------------------------------------------------- hyperspy */

/* rosettasciio (a file with /4DSTEM_simulation) names a signal after its group's path less the
 * last 4 characters, and stacks every dataset whose path contains that: <title>/<title>0000
 * (outer: .../<title>) gives the title and matches nothing else. */
static hid_t signal_group(hid_t outer, const char *title)
{
    char inner[200];
    snprintf(inner, sizeof inner, "%s0000", title);
    hid_t g = H5Gcreate2(outer, inner, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g >= 0 && stem_h5_attr_int(g, "emd_group_type", 1)) {
        H5Gclose(g);
        return H5I_INVALID_HID;
    }
    return g;
}

/* The series axes as dims first.. of g. */
static int lead_dims(const stem_emd_view *v, hid_t g, int first)
{
    for (int j = 0; j < v->n_lead; j++) {
        double *values = NULL;
        char units[48];
        int err = axis(v, v->lead_name[j], v->lead[j], &values, units, sizeof units);
        if (!err) err = stem_emd_dim(g, first + j, values, v->lead[j], v->lead_name[j], units);
        free(values);
        if (err) return err == STEM_ERR_MEMORY ? err : fail(v, "a series axis");
    }
    return STEM_OK;
}

/* Point p's block [Nx][Ny][k] of Prismatic's realslice prism written into d at the point's
 * series indices; d's last n_lead dims are the series. */
static int gather_point(const stem_emd_view *v, hid_t prism, hid_t d, int p, int k, double *buf)
{
    hsize_t start[4 + 8] = {0}, count[4 + 8], block[3];
    int r = 0;
    block[0] = count[r++] = (hsize_t)v->plan->scan_nx;
    block[1] = count[r++] = (hsize_t)v->plan->scan_ny;
    if (k > 1) block[2] = count[r++] = (hsize_t)k;
    for (int j = v->n_lead - 1, rest = p; j >= 0; j--) {
        start[r + j] = (hsize_t)rest % v->lead[j];
        count[r + j] = 1;
        rest /= (int)v->lead[j];
    }
    hid_t in = H5Dopen2(prism, "data", H5P_DEFAULT);
    int ok = in >= 0 && H5Dread(in, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0;
    if (in >= 0) H5Dclose(in);
    hid_t fs = H5Dget_space(d), ms = H5Screate_simple(k > 1 ? 3 : 2, block, NULL);
    ok = ok && fs >= 0 && ms >= 0 && H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL) >= 0 &&
        H5Dwrite(d, H5T_NATIVE_DOUBLE, ms, fs, H5P_DEFAULT, buf) >= 0;
    if (ms >= 0) H5Sclose(ms);
    if (fs >= 0) H5Sclose(fs);
    return ok ? STEM_OK : STEM_ERR_IO;
}

/* One signal at path (under /0_signals) of every point's Prismatic realslice fmt (k channels):
 * data [Nx][Ny](k)(series), dims Prismatic's then the series'; each point's dataset also
 * linked in path's group under its Prismatic name, so that rosettasciio meets it here first
 * and does not load it again. */
static int gathered(const stem_emd_view *v, hid_t sig, const char *path, const char *title, const char *fmt, int k)
{
    const stem_plan *plan = v->plan;
    char prism[200];
    snprintf(prism, sizeof prism, fmt, v->suffix[0]);
    if (!exists(v->realslices, prism)) return STEM_OK;
    hsize_t dims[4 + 8];
    int r = 0;
    dims[r++] = (hsize_t)plan->scan_nx, dims[r++] = (hsize_t)plan->scan_ny;
    if (k > 1) dims[r++] = (hsize_t)k;
    for (int j = 0; j < v->n_lead; j++) dims[r + j] = v->lead[j];
    hid_t outer = plain_group(sig, path), g = outer >= 0 ? signal_group(outer, title) : H5I_INVALID_HID;
    hid_t space = H5Screate_simple(r + v->n_lead, dims, NULL), d = H5I_INVALID_HID;
    if (g >= 0 && space >= 0) d = H5Dcreate2(g, "data", H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    double *buf = stem_alloc(sizeof(double) * (size_t)plan->scan_nx * (size_t)plan->scan_ny * (size_t)k, "EMD view");
    int err = !buf ? STEM_ERR_MEMORY : d < 0 ? fail(v, title) : STEM_OK;
    for (int c = 1; c <= r && !err; c++) { /* Prismatic's dims (the same at every point) */
        char from[220], name[8];
        snprintf(name, sizeof name, "dim%d", c);
        snprintf(from, sizeof from, "%s/%s", prism, name);
        if (H5Ocopy(v->realslices, from, g, name, H5P_DEFAULT, H5P_DEFAULT) < 0) err = fail(v, title);
    }
    if (!err) err = lead_dims(v, g, r + 1);
    for (int p = 0; p < v->points && !err; p++) {
        snprintf(prism, sizeof prism, fmt, v->suffix[p]);
        hid_t pg = H5Gopen2(v->realslices, prism, H5P_DEFAULT);
        err = pg < 0 || gather_point(v, pg, d, p, k, buf) ||
                H5Lcreate_hard(pg, "data", outer, prism, H5P_DEFAULT, H5P_DEFAULT) < 0
            ? fail(v, prism)
            : STEM_OK;
        if (pg >= 0) H5Gclose(pg);
    }
    free(buf);
    if (d >= 0) H5Dclose(d);
    if (space >= 0) H5Sclose(space);
    if (g >= 0) H5Gclose(g);
    if (outer >= 0) H5Gclose(outer);
    return err;
}

/* Point p's 4D patterns as cbed/<title>: Prismatic's data linked as datacube (rosettasciio reads
 * a datacube untransposed, dim1 and dim2 its navigation), q in mrad per axis. */
static int cbed_signal(const stem_emd_view *v, hid_t sig, int p, const double *qx, const double *qy)
{
    const stem_plan *plan = v->plan;
    char prism[160], title[200] = "CBED_array", path[220];
    snprintf(prism, sizeof prism, "CBED_array_%s", v->suffix[p]);
    if (!exists(v->datacubes, prism)) return STEM_OK;
    int at[8], rest = p;
    for (int j = v->n_lead - 1; j >= 0; j--) {
        at[j] = rest % (int)v->lead[j];
        rest /= (int)v->lead[j];
    }
    for (int j = 0; j < v->n_lead; j++) /* the point's series values: "CBED_array defocus=-20" */
        snprintf(title + strlen(title), sizeof title - strlen(title), " %s=%g", v->lead_name[j],
                 v->lead_values[j][at[j]]);
    snprintf(path, sizeof path, "cbed/%s", title);
    hid_t outer = plain_group(sig, path), g = outer >= 0 ? signal_group(outer, title) : H5I_INVALID_HID;
    hid_t pg = H5Gopen2(v->datacubes, prism, H5P_DEFAULT);
    int ok = g >= 0 && pg >= 0 && H5Lcreate_hard(pg, "data", g, "datacube", H5P_DEFAULT, H5P_DEFAULT) >= 0 &&
        !stem_emd_dim(g, 1, v->scan_x, (hsize_t)plan->scan_nx, "R_x", "[\xc3\x85]") &&
        !stem_emd_dim(g, 2, v->scan_y, (hsize_t)plan->scan_ny, "R_y", "[\xc3\x85]") &&
        !stem_emd_dim(g, 3, qx, (hsize_t)plan->cbed_nx, "Q_x", "[mrad]") &&
        !stem_emd_dim(g, 4, qy, (hsize_t)plan->cbed_ny, "Q_y", "[mrad]");
    if (pg >= 0) H5Gclose(pg);
    if (g >= 0) H5Gclose(g);
    if (outer >= 0) H5Gclose(outer);
    return ok ? STEM_OK : fail(v, path);
}

/* hyperspy's signals under /0_signals ('0' sorts before '4DSTEM_simulation'). */
static int hyperspy(const stem_emd_view *v, const double *qx, const double *qy)
{
    const stem_plan *plan = v->plan;
    hid_t sig = H5Gcreate2(v->out, "/0_signals", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (sig < 0) return fail(v, "/0_signals");
    int err = STEM_OK;
    for (int i = 0; i < plan->n_images && !err; i++) {
        char fmt[160], path[160];
        stem_emd_image_group(plan, i, "%s", fmt, sizeof fmt);
        snprintf(path, sizeof path, "images/%s", plan->images[i].name);
        err = gathered(v, sig, path, plan->images[i].name, fmt, 1);
    }
    if (!err) err = gathered(v, sig, "total_intensity", "total_intensity", "total_intensity_%s", 1);
    if (!err) err = gathered(v, sig, "virtual_detector", "virtual_detector", "virtual_detector_%s", plan->n_bins);
    if (!err) err = gathered(v, sig, "DPC_CoM", "DPC_CoM", "DPC_CoM_%s", 2);
    for (int p = 0; p < v->points && qx && !err; p++) err = cbed_signal(v, sig, p, qx, qy);
    H5Gclose(sig);
    return err;
}

/* ---------------------------------------------------------------- both */

int stem_emd_views_apply(const stem_plan *plan) { return !plan->positions && !stem_plan_single_wave(plan); }

int stem_emd_views(const stem_emd_view *v)
{
    const stem_plan *plan = v->plan;
    double *qx = NULL, *qy = NULL;
    int err = STEM_OK;
    if (exists(v->out, "/stemsim/axes/cbed_qx_mrad")) {
        err = axis(v, "cbed_qx_mrad", (hsize_t)plan->cbed_nx, &qx, NULL, 0);
        if (!err) err = axis(v, "cbed_qy_mrad", (hsize_t)plan->cbed_ny, &qy, NULL, 0);
    }
    if (!err &&
        (text(v->out, "emd_group_type", "file") || stem_h5_attr_int(v->out, "version_major", 1) ||
         stem_h5_attr_int(v->out, "version_minor", 0)))
        err = fail(v, "the EMD 1.0 header");
    if (!err) err = py4dstem(v, qx, qy);
    if (!err) err = hyperspy(v, qx, qy);
    free(qx);
    free(qy);
    return err;
}
