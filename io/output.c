/* HDF5 result writer: one file per run, written collectively by all ranks
 * with parallel HDF5 (MPI-IO, collective transfers), even on one rank.
 *
 * The file's layout (every dataset, attribute and unit, the series axes, /potential and
 * /smatrix) is documented once, in docs/output.md; the writers below follow it, and
 * tests/integration (check_h5.py, interop.py, examples_check.py) read it back.
 *
 * The file is written to the temporary that io/publish.c created exclusively
 * ("<file>.XXXXXX.incomplete") and given its final name by publish.c only
 * after every rank closed it, so a file under its final name is complete. */
#include "output.h"
#include "emd.h"
#include "../src/build_info.h"
#include "potential_file.h"
#include "smatrix_file.h"

#include "../mpi/collectives.h"
#include "../src/signals.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <hdf5.h>

#define STEM_OUTPUT_INTENSITY "fraction of incident intensity"
#define STEM_OUTPUT_CLOSE_DEADLINE_S 30 /* seconds a discarded file's close may take */
#define STEM_OUTPUT_ERRORS "/standard_error" /* the standard errors mirror the datasets they belong to */

/* One attribute: a string when text != NULL, else a double. */
typedef struct {
    const char *name;
    const char *text;
    double value;
} stem_output_attr;

/* One dataset. grid != 0: the shape starts with [scan_ny][scan_nx] and each
 * rank writes its own probes from data (probe-major); with [scan] positions
 * those two become one probe axis (grid == 2, see stem_output_probe_axis);
 * grid == 0: a small dataset that rank 0 writes whole. */
typedef struct {
    const char *name;
    hid_t file_type, mem_type;
    int rank;
    hsize_t dims[6];
    int grid;
    const void *data;
    const stem_output_attr *attrs;
    int n_attrs;
    int fixed;  /* the same for every series point (an axis): no leading series axes */
    int image_rows; /* [..][ny][nx]... images whose rows a distributed FFT spreads over a group (grid 3) */
} stem_output_dataset;

/* Everything one collective write needs; handles are closed in one place. */
typedef struct {
    MPI_Comm comm;
    int rank;
    const stem_plan *plan;
    const stem_result *res;   /* NULL on ranks that write no probes */
    const stem_output_target *target;
    stem_output_target converted; /* layout = emd: the target once the EMD file replaced the native one */
    int writes;
    char path[STEM_OUTPUT_NAME_MAX];
    hid_t fapl, dxpl, file;
    hsize_t begin, count;     /* this rank's flattened probes */
    int has_4d, has_dpc;      /* agreed over comm */
    int has_errors;           /* standard errors over configurations (agreed over comm) */
    int errors;               /* the channel writers write the standard errors, under /standard_error */
    double *scratch;          /* count values: one image column, one DPC axis */
    double *axis;             /* longest axis */
    char *config_text, *plan_text, *env_text, *advice_text; /* rank 0's texts, on every rank */
    const stem_output_series *series; /* NULL: one point, no leading axes */
    const stem_output_stored *stored; /* NULL: no /potential, no /smatrix */
    int n_lead;                /* leading series axes of every per-point dataset */
    hsize_t lead[STEM_OUTPUT_MAX_LEAD], at[STEM_OUTPUT_MAX_LEAD]; /* their lengths; the point being written */
    int point;
} stem_output;

/* ------------------------------------------------------ collective glue */

/* Every rank learns the worst status, so all take the same path; a failure
 * every rank sees (a full disk) is reported once. A signal on any rank stops the
 * write here too (its handler removed the temporary already): a large file is not
 * written to the end into a removed name, and no rank waits for the watchdog. */
static int stem_output_agree(MPI_Comm comm, int rc)
{
    int sig = stem_signal_pending();
    if (!rc && sig) rc = stem_signal_status(sig);
    return stem_mpi_agree(rc, comm);
}

/* Why a write failed: a full file system said so, else the usual suspects. */
static const char *stem_output_why(const stem_output *o, char *buf, size_t n)
{
    stem_output_space_note(o->path, buf, n);
    return buf;
}

/* Run a step only while every rank is fine, then agree on how it went. */
#define STEM_OUTPUT_STEP(rc, comm, expr)                          \
    do {                                                          \
        if (!(rc)) (rc) = stem_output_agree((comm), (expr));      \
    } while (0)

/* ------------------------------------------------------------- prepare */

static int stem_output_check_result(const stem_output *o)
{
    const stem_plan *plan = o->plan;
    const stem_result *res = o->res;
    if (plan->probe_begin < 0 || plan->probe_begin > plan->probe_end || plan->probe_end > plan->n_probes)
        return STEM_FAIL(STEM_ERR_INTERNAL, "output %s: probe range [%ld, %ld) outside [0, %ld)", o->path,
                         plan->probe_begin, plan->probe_end, plan->n_probes);
    if (!res)
        return STEM_FAIL(STEM_ERR_INTERNAL, "output %s: a writing rank has no result", o->path);
    if (res->n_probes != plan->probe_end - plan->probe_begin || res->n_images != plan->n_images ||
        res->n_bins != plan->n_bins)
        return STEM_FAIL(STEM_ERR_INTERNAL,
                         "output %s: result (%ld probes, %d images, %d bins) does not match the plan "
                         "(%ld probes, %d images, %d bins)",
                         o->path, res->n_probes, res->n_images, res->n_bins,
                         plan->probe_end - plan->probe_begin, plan->n_images, plan->n_bins);
    if (res->has_4d && (res->out_nx != plan->out_nx || res->out_ny != plan->out_ny))
        return STEM_FAIL(STEM_ERR_INTERNAL, "output %s: 4D result is %dx%d, the plan says %dx%d", o->path,
                         res->out_nx, res->out_ny, plan->out_nx, plan->out_ny);
    if (res->n_probes > 0 &&
        ((plan->n_images > 0 && !res->images) || (plan->opt.save_3d && !res->rings) ||
         (res->has_4d && !res->cbed) || (res->has_dpc && !res->com)))
        return STEM_FAIL(STEM_ERR_INTERNAL, "output %s: result arrays missing", o->path);
    return STEM_OK;
}

static int stem_output_check_plan(const stem_output *o)
{
    const stem_plan *plan = o->plan;
    if (plan->scan_nx <= 0 || plan->scan_ny <= 0 || (long)plan->scan_nx * plan->scan_ny != plan->n_probes)
        return STEM_FAIL(STEM_ERR_INTERNAL, "output %s: scan %d x %d does not hold %ld probes", o->path,
                         plan->scan_nx, plan->scan_ny, plan->n_probes);
    if (plan->n_images < 0 || plan->n_images > STEM_MAX_IMAGES || plan->n_bins < 0)
        return STEM_FAIL(STEM_ERR_INTERNAL, "output %s: plan has %d images (at most %d), %d bins", o->path,
                         plan->n_images, STEM_MAX_IMAGES, plan->n_bins);
    return STEM_OK;
}

/* Length of the longest 1D axis (scan, rings, detector). */
static int stem_output_longest_axis(const stem_plan *plan, const stem_output_series *series)
{
    const int n[7] = {plan->scan_nx, plan->scan_ny, plan->n_bins, plan->out_nx, plan->out_ny, plan->nx, plan->ny};
    int m = 1;
    for (int i = 0; i < 7; i++)
        if (n[i] > m) m = n[i];
    for (int a = 0; series && a < STEM_OUTPUT_MAX_LEAD; a++)
        if (series->lead_n[a] > m) m = series->lead_n[a];
    return m;
}

/* Local only (no collective calls): validate and allocate what the steps use. */
static int stem_output_prepare(stem_output *o)
{
    const stem_plan *plan = o->plan;
    STEM_TRY(stem_output_check_plan(o));
    if (o->writes) {
        STEM_TRY(stem_output_check_result(o));
        o->begin = (hsize_t)plan->probe_begin;
        o->count = (hsize_t)(plan->probe_end - plan->probe_begin);
        if (plan->dist && plan->layout.group_rank != 0) o->count = 0; /* the group's one wave: its first rank */
    }
    o->scratch = stem_alloc((o->count ? o->count : 1) * sizeof(double), "output packing buffer");
    if (!o->scratch) return STEM_ERR_MEMORY;
    o->axis = stem_alloc((size_t)stem_output_longest_axis(plan, o->series) * sizeof(double), "output axis buffer");
    return o->axis ? STEM_OK : STEM_ERR_MEMORY;
}

static int stem_output_cmp_range(const void *a, const void *b)
{
    long x = ((const long *)a)[1], y = ((const long *)b)[1];
    return (x > y) - (x < y);
}

/* The writers' ranges must cover every probe exactly once, or the file
 * would claim to be complete with holes or double writes. Every rank sees
 * the same gathered table, so all reach the same verdict. */
static int stem_output_check_coverage(stem_output *o)
{
    int size;
    if (MPI_Comm_size(o->comm, &size) != MPI_SUCCESS)
        return STEM_FAIL(STEM_ERR_MPI, "output %s: MPI_Comm_size failed", o->path);
    long mine[3] = {o->writes != 0, (long)o->begin, (long)(o->begin + o->count)};
    long *all = stem_alloc((size_t)size * sizeof mine, "output probe ranges");
    if (!all) return STEM_ERR_MEMORY;
    int rc = STEM_OK;
    if (MPI_Allgather(mine, 3, MPI_LONG, all, 3, MPI_LONG, o->comm) != MPI_SUCCESS) {
        rc = STEM_FAIL(STEM_ERR_MPI, "output %s: MPI_Allgather of probe ranges failed", o->path);
        goto done;
    }
    qsort(all, (size_t)size, sizeof mine, stem_output_cmp_range);
    long next = 0;
    for (int r = 0; r < size; r++) {
        if (!all[3 * r] || all[3 * r + 1] == all[3 * r + 2]) continue;
        if (all[3 * r + 1] != next) break;
        next = all[3 * r + 2];
    }
    if (next != o->plan->n_probes) {
        if (o->rank == 0)
            STEM_FAIL(STEM_ERR_INTERNAL, "output %s: the writing ranks' probe ranges do not tile [0, %ld)",
                      o->path, o->plan->n_probes);
        rc = STEM_ERR_INTERNAL;
    }
done:
    free(all);
    return rc;
}

/* Ranks that write no probes may hold no result: take the 4D/DPC switches
 * from the writers, and refuse writers that disagree. */
static int stem_output_agree_flags(stem_output *o)
{
    const stem_result *r = o->res;
    int mine[6] = {0, 0, 0, 0, 0, 0}, all[6];
    if (o->writes) {
        mine[0] = r->has_4d != 0;
        mine[1] = r->has_dpc != 0;
        mine[2] = r->has_4d == 0;
        mine[3] = r->has_dpc == 0;
        mine[4] = r->err[STEM_CH_TOTAL] != NULL; /* every result with errors has the total's */
        mine[5] = r->err[STEM_CH_TOTAL] == NULL;
    }
    if (MPI_Allreduce(mine, all, 6, MPI_INT, MPI_MAX, o->comm) != MPI_SUCCESS)
        return STEM_FAIL(STEM_ERR_MPI, "output %s: MPI_Allreduce of the result switches failed", o->path);
    if ((all[0] && all[2]) || (all[1] && all[3]) || (all[4] && all[5])) {
        if (o->rank == 0)
            STEM_FAIL(STEM_ERR_INTERNAL, "output %s: writing ranks disagree on 4D/DPC/error output", o->path);
        return STEM_ERR_INTERNAL;
    }
    o->has_4d = all[0];
    o->has_dpc = all[1];
    o->has_errors = all[4];
    return STEM_OK;
}

/* Attribute values must be identical on every rank: use rank 0's text. */
static int stem_output_share_text(stem_output *o, const char *mine, const char *what, char **out)
{
    unsigned long long len = (o->rank == 0 && mine) ? strlen(mine) : 0;
    if (MPI_Bcast(&len, 1, MPI_UNSIGNED_LONG_LONG, 0, o->comm) != MPI_SUCCESS)
        return STEM_FAIL(STEM_ERR_MPI, "output %s: MPI_Bcast of the %s length failed", o->path, what);
    if (len >= INT_MAX)
        return STEM_FAIL(STEM_ERR_INTERNAL, "output %s: %s text of %llu bytes is too long", o->path, what, len);
    *out = stem_alloc(len + 1, what);
    /* Agree before the collective copy: a rank without a buffer must not stall the rest. */
    int rc = stem_output_agree(o->comm, *out ? STEM_OK : STEM_ERR_MEMORY);
    if (rc) return rc;
    if (o->rank == 0) memcpy(*out, mine ? mine : "", len + 1);
    if (MPI_Bcast(*out, (int)len + 1, MPI_CHAR, 0, o->comm) != MPI_SUCCESS)
        return STEM_FAIL(STEM_ERR_MPI, "output %s: MPI_Bcast of the %s text failed", o->path, what);
    return STEM_OK;
}

/* ------------------------------------------------------------ HDF5 core */

static int stem_output_open(stem_output *o)
{
    o->fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (o->fapl < 0) return STEM_FAIL(STEM_ERR_IO, "output %s: H5Pcreate(file access) failed", o->path);
    if (H5Pset_fapl_mpio(o->fapl, o->comm, MPI_INFO_NULL) < 0)
        return STEM_FAIL(STEM_ERR_IO, "output %s: H5Pset_fapl_mpio failed", o->path);
    o->dxpl = H5Pcreate(H5P_DATASET_XFER);
    if (o->dxpl < 0) return STEM_FAIL(STEM_ERR_IO, "output %s: H5Pcreate(transfer) failed", o->path);
    if (H5Pset_dxpl_mpio(o->dxpl, H5FD_MPIO_COLLECTIVE) < 0)
        return STEM_FAIL(STEM_ERR_IO, "output %s: H5Pset_dxpl_mpio(collective) failed", o->path);
    /* TRUNC: the temporary is the empty file rank 0 created exclusively at
     * the start (and verified just now), never someone else's */
    o->file = H5Fcreate(o->path, H5F_ACC_TRUNC, H5P_DEFAULT, o->fapl);
    char why[128];
    if (o->file < 0)
        return STEM_FAIL(STEM_ERR_IO, "output %s: cannot create the file (H5Fcreate failed: %s; check the "
                         "directory is writable and on a file system MPI-IO supports)", o->path,
                         stem_output_why(o, why, sizeof why));
    return STEM_OK;
}

/* The file is being thrown away: give its space back (rank 0, by name) so
 * HDF5 can flush its metadata and close. A close that fails leaves HDF5 with
 * a half-closed file that it closes again, and crashes on, in MPI_Finalize. */
static void stem_output_release_space(const stem_output *o)
{
    if (o->rank == 0 && truncate(o->path, 0) != 0)
        stem_warn("cannot truncate the unfinished output %s: %s", o->path, strerror(errno));
    if (o->rank == 0) stem_output_target_release(o->target, 0); /* the reserve's margin too */
    MPI_Barrier(o->comm);
}

/* HDF5 could not close the file: it keeps the half-closed file and crashes on it in
 * MPI_Finalize (exit 139), so every rank leaves here, exit 6, once rank 0 removed the
 * temporary and the reserve (the ranks agreed, so none is left waiting). */
static void stem_output_leave_unclosed(const stem_output *o, int discard)
{
    char why[128];
    STEM_FAIL(STEM_ERR_IO, "output %s: closing the %sfile failed (H5Fclose; %s); it is removed and the job ends here "
              "(HDF5 cannot finish a failed close)", o->path, discard ? "discarded " : "", stem_output_why(o, why, sizeof why));
    if (o->rank == 0) stem_output_target_discard(o->target);
    stem_log_release_held(0); /* rank 0 said it */
    fflush(NULL);
    MPI_Barrier(o->comm);
    _exit(STEM_ERR_IO);
}

/* Collective H5Fclose, once: a failed close cannot be retried (HDF5 crashes on
 * the half-closed file), so the space it needs is released first: the whole file
 * when it is discarded, else the reserve's margin (everything was flushed before). */
static int stem_output_close_file(stem_output *o, int discard)
{
    if (discard) stem_output_release_space(o);
    else if (o->rank == 0) stem_output_target_release(o->target, o->target->reserve_later);
    /* a metadata write that failed on some ranks only (the disk filled mid-file) can leave
     * HDF5's ranks out of step in the close, waiting for each other for ever: a discarded
     * file's close gets STEM_OUTPUT_CLOSE_DEADLINE_S, then the rank leaves (exit 6) */
    if (discard) stem_signal_deadline(STEM_OUTPUT_CLOSE_DEADLINE_S, STEM_ERR_IO);
    int rc = H5Fclose(o->file) < 0 ? STEM_ERR_IO : STEM_OK;
    int all = stem_mpi_agree(rc, o->comm);
    if (discard) stem_signal_deadline(0, 0);
    if (all) stem_output_leave_unclosed(o, discard);
    return STEM_OK;
}

/* Closes everything still open; the first failure is reported. discard: the
 * content failed and the file will be removed. */
static int stem_output_close(stem_output *o, int discard)
{
    int rc = STEM_OK;
    if (o->dxpl >= 0 && H5Pclose(o->dxpl) < 0)
        rc = STEM_FAIL(STEM_ERR_IO, "output %s: H5Pclose(transfer) failed", o->path);
    if (o->fapl >= 0 && H5Pclose(o->fapl) < 0 && !rc)
        rc = STEM_FAIL(STEM_ERR_IO, "output %s: H5Pclose(file access) failed", o->path);
    if (o->file >= 0) {
        int frc = stem_output_close_file(o, discard);
        if (!rc) rc = frc;
    }
    o->dxpl = o->fapl = o->file = H5I_INVALID_HID;
    return rc;
}

/* One scalar attribute of the given file and memory types. */
static int stem_output_attr_write(const stem_output *o, hid_t loc, const char *where, const char *name,
                                  hid_t file_type, hid_t mem_type, const void *value)
{
    int rc = STEM_OK;
    hid_t space = H5Screate(H5S_SCALAR), attr = H5I_INVALID_HID;
    if (space < 0) {
        rc = STEM_FAIL(STEM_ERR_IO, "output %s: H5Screate(scalar) failed for attribute %s of %s", o->path,
                       name, where);
        goto done;
    }
    attr = H5Acreate2(loc, name, file_type, space, H5P_DEFAULT, H5P_DEFAULT);
    if (attr < 0) {
        rc = STEM_FAIL(STEM_ERR_IO, "output %s: cannot create attribute %s of %s", o->path, name, where);
        goto done;
    }
    if (H5Awrite(attr, mem_type, value) < 0)
        rc = STEM_FAIL(STEM_ERR_IO, "output %s: cannot write attribute %s of %s", o->path, name, where);
done:
    if (attr >= 0 && H5Aclose(attr) < 0 && !rc)
        rc = STEM_FAIL(STEM_ERR_IO, "output %s: H5Aclose failed for %s of %s", o->path, name, where);
    if (space >= 0 && H5Sclose(space) < 0 && !rc)
        rc = STEM_FAIL(STEM_ERR_IO, "output %s: H5Sclose failed for %s of %s", o->path, name, where);
    /* metadata can fail on one rank only (a full disk): all leave the chain of attributes together */
    return stem_output_agree(o->comm, rc);
}

/* Variable-length UTF-8 strings: h5py reads them back as str. */
static int stem_output_attr_string(const stem_output *o, hid_t loc, const char *where, const char *name,
                                   const char *value)
{
    hid_t type = H5Tcopy(H5T_C_S1);
    if (type < 0) return STEM_FAIL(STEM_ERR_IO, "output %s: H5Tcopy(string) failed", o->path);
    int rc = STEM_OK;
    if (H5Tset_size(type, H5T_VARIABLE) < 0 || H5Tset_cset(type, H5T_CSET_UTF8) < 0)
        rc = STEM_FAIL(STEM_ERR_IO, "output %s: cannot build the string type for %s of %s", o->path, name,
                       where);
    if (!rc) rc = stem_output_attr_write(o, loc, where, name, type, type, &value);
    if (H5Tclose(type) < 0 && !rc)
        rc = STEM_FAIL(STEM_ERR_IO, "output %s: H5Tclose(string) failed", o->path);
    return rc;
}

static int stem_output_attr_double(const stem_output *o, hid_t loc, const char *where, const char *name,
                                   double value)
{
    return stem_output_attr_write(o, loc, where, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value);
}

static int stem_output_attr_int(const stem_output *o, hid_t loc, const char *where, const char *name,
                                int value)
{
    return stem_output_attr_write(o, loc, where, name, H5T_STD_I32LE, H5T_NATIVE_INT, &value);
}

static int stem_output_attrs(const stem_output *o, hid_t loc, const char *where, const stem_output_attr *a,
                             int n)
{
    for (int i = 0; i < n; i++) {
        static const char grid_axes[] = "scan_y, scan_x";
        if (a[i].text && o->plan->positions && !strncmp(a[i].text, grid_axes, strlen(grid_axes))) {
            char probe_axis[256]; /* [scan] positions: the grid's two axes are one probe axis */
            snprintf(probe_axis, sizeof probe_axis, "probe%s", a[i].text + strlen(grid_axes));
            STEM_TRY(stem_output_attr_string(o, loc, where, a[i].name, probe_axis));
        } else if (a[i].text)
            STEM_TRY(stem_output_attr_string(o, loc, where, a[i].name, a[i].text));
        else
            STEM_TRY(stem_output_attr_double(o, loc, where, a[i].name, a[i].value));
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
static int stem_output_lead(const stem_output *o, const stem_output_dataset *d)
{
    return d->fixed ? 0 : o->n_lead;
}

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
    if (o->rank != 0 && (H5Sselect_none(fspace) < 0 || H5Sselect_none(*mspace) < 0)) return STEM_ERR_IO;
    return o->rank == 0 && lead ? stem_output_select_point(o, fspace, d, lead) : STEM_OK;
}

/* The "series_axes" attribute of a per-point dataset of a series. */
static int stem_output_series_attr(const stem_output *o, hid_t dset, const char *name)
{
    char axes[128] = "";
    for (int a = 0, k = 0; a < STEM_OUTPUT_MAX_LEAD && o->series; a++)
        if (o->series->lead_name[a])
            snprintf(axes + strlen(axes), sizeof axes - strlen(axes), "%s%s", k++ ? ", " : "", o->series->lead_name[a]);
    return stem_output_attr_string(o, dset, name, "series_axes", axes);
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
    STEM_TRY(stem_output_attr_string(o, dset, name, "statistic",
                                     "standard error of the mean over the frozen-phonon configurations: the sample "
                                     "standard deviation of the per-configuration values (n - 1) divided by sqrt(n); "
                                     "DPC: of the ratio of sums, to first order; with [probe] source_size blurred "
                                     "like the values (an upper bound)"));
    STEM_TRY(stem_output_attr_string(o, dset, name, "standard_error_of", name + strlen(STEM_OUTPUT_ERRORS)));
    return stem_output_attr_int(o, dset, name, "n_configs", o->plan->n_configs);
}

/* Create a contiguous dataset (at the first series point; open it at the
 * others), write this rank's part collectively, add attributes. */
static int stem_output_write_dataset(const stem_output *o, const stem_output_dataset *given)
{
    stem_output_dataset shaped = stem_output_probe_axis(o, given);
    const stem_output_dataset *d = &shaped;
    int rc = STEM_OK, lead = stem_output_lead(o, d), first = !lead || o->point == 0;
    hid_t fspace = H5I_INVALID_HID, mspace = H5I_INVALID_HID, dset = H5I_INVALID_HID;
    double dummy = 0; /* H5Dwrite wants a buffer even for an empty selection */
    hsize_t dims[STEM_OUTPUT_MAX_LEAD + 6];
    memcpy(dims, o->lead, sizeof(hsize_t) * (size_t)lead);
    memcpy(dims + lead, d->dims, sizeof(hsize_t) * (size_t)d->rank);
    fspace = H5Screate_simple(d->rank + lead, dims, NULL);
    if (fspace < 0) {
        rc = STEM_FAIL(STEM_ERR_IO, "output %s: H5Screate_simple failed for %s", o->path, d->name);
        goto done;
    }
    dset = first ? H5Dcreate2(o->file, d->name, d->file_type, fspace, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)
                 : H5Dopen2(o->file, d->name, H5P_DEFAULT);
    char why[128];
    if (dset < 0)
        rc = STEM_FAIL(STEM_ERR_IO, "output %s: cannot %s dataset %s (%s)", o->path, first ? "create" : "open", d->name,
                       stem_output_why(o, why, sizeof why));
    else if (stem_output_select(o, d, fspace, &mspace) != STEM_OK)
        rc = STEM_FAIL(STEM_ERR_IO, "output %s: cannot select probes [%llu, %llu) of %s", o->path,
                       (unsigned long long)o->begin, (unsigned long long)(o->begin + o->count), d->name);
    /* each collective call is entered by every rank or by none */
    if ((rc = stem_output_agree(o->comm, rc))) goto done;
    if (H5Dwrite(dset, d->mem_type, mspace, fspace, o->dxpl, d->data ? d->data : &dummy) < 0)
        rc = STEM_FAIL(STEM_ERR_IO, "output %s: collective write of %s failed (%s)", o->path, d->name,
                       stem_output_why(o, why, sizeof why));
    if ((rc = stem_output_agree(o->comm, rc))) goto done;
    if (first) rc = stem_output_attrs(o, dset, d->name, d->attrs, d->n_attrs);
    if (first && lead && !rc) rc = stem_output_series_attr(o, dset, d->name);
    if (first && o->errors && !rc) rc = stem_output_error_attrs(o, dset, d->name);
done:
    if (dset >= 0 && H5Dclose(dset) < 0 && !rc)
        rc = STEM_FAIL(STEM_ERR_IO, "output %s: H5Dclose failed for %s", o->path, d->name);
    if (mspace >= 0 && H5Sclose(mspace) < 0 && !rc)
        rc = STEM_FAIL(STEM_ERR_IO, "output %s: H5Sclose failed for %s", o->path, d->name);
    if (fspace >= 0 && H5Sclose(fspace) < 0 && !rc)
        rc = STEM_FAIL(STEM_ERR_IO, "output %s: H5Sclose failed for %s", o->path, d->name);
    return rc;
}

static int stem_output_group(const stem_output *o, const char *name)
{
    hid_t g = H5Gcreate2(o->file, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    int rc = STEM_OK;
    if (g < 0) rc = STEM_FAIL(STEM_ERR_IO, "output %s: cannot create group %s", o->path, name);
    else if (H5Gclose(g) < 0) rc = STEM_FAIL(STEM_ERR_IO, "output %s: H5Gclose failed for %s", o->path, name);
    return stem_output_agree(o->comm, rc);
}

/* ------------------------------------------------------------- content */

static int stem_output_root_attrs(const stem_output *o)
{
    const stem_plan *plan = o->plan;
    const char *alg = stem_algorithm_name(plan->algorithm);
    STEM_TRY(stem_output_attr_string(o, o->file, "/", "program", "stemsim"));
    STEM_TRY(stem_output_attr_string(o, o->file, "/", "version", STEM_VERSION));
    STEM_TRY(stem_output_attr_string(o, o->file, "/", "build", stem_build_info()));
    STEM_TRY(stem_output_attr_string(o, o->file, "/", "config", o->config_text));
    STEM_TRY(stem_output_attr_string(o, o->file, "/", "plan", o->plan_text));
    STEM_TRY(stem_output_attr_string(o, o->file, "/", "environment", o->env_text));
    STEM_TRY(stem_output_attr_string(o, o->file, "/", "advice", o->advice_text));
    STEM_TRY(stem_output_attr_string(o, o->file, "/", "algorithm", alg));
    STEM_TRY(stem_output_attr_double(o, o->file, "/", "energy_kev", plan->energy_kev));
    STEM_TRY(stem_output_attr_double(o, o->file, "/", "wavelength_angstrom", plan->lambda));
    const char *se = o->has_errors ? "under /standard_error: the standard error of the mean over the n_configs "
                                     "frozen-phonon configurations of every image, ring, DPC, segment and total "
                                     "intensity value (none for 4D patterns, PACBED, exit waves and HRTEM images)"
                   : plan->n_configs < 2 ? "none: one frozen-phonon configuration, no error can be estimated "
                                           "([simulation] frozen_phonons >= 2)"
                   : !plan->opt.standard_errors ? "none: [output] standard_errors = false"
                                                : "none (the wave distributed over the ranks)";
    STEM_TRY(stem_output_attr_string(o, o->file, "/", "standard_error", se));
    return stem_output_attr_int(o, o->file, "/", "n_configs", plan->n_configs);
}

static int stem_output_groups(const stem_output *o)
{
    STEM_TRY(stem_output_group(o, "/images"));
    if (o->has_errors) {
        STEM_TRY(stem_output_group(o, STEM_OUTPUT_ERRORS));
        STEM_TRY(stem_output_group(o, STEM_OUTPUT_ERRORS "/images"));
    }
    return stem_output_group(o, "/axes");
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
static int stem_output_write_map(const stem_output *o, const char *name, const stem_output_attr *attrs,
                                 int n_attrs)
{
    stem_output_dataset d = {.name = name, .file_type = H5T_IEEE_F64LE, .mem_type = H5T_NATIVE_DOUBLE,
                             .rank = 2, .dims = {(hsize_t)o->plan->scan_ny, (hsize_t)o->plan->scan_nx},
                             .grid = 1, .data = o->scratch, .attrs = attrs, .n_attrs = n_attrs};
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
    stem_output_attr attrs[] = {
        {"inner_mrad", NULL, im->inner_mrad},
        {"outer_mrad", NULL, im->outer_mrad},
        {"units", STEM_OUTPUT_INTENSITY, 0},
    };
    return stem_output_write_map(o, name, attrs, 3);
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
        {"description", "intensity inside the simulated band limit: 1 minus what the anti-aliasing aperture "
                        "removed (a sanity map: strong scatterers show as dips)", 0},
    };
    return stem_output_write_map(o, stem_output_name(o, "/total_intensity", buf, sizeof buf), attrs, 2);
}

static int stem_output_dpc(const stem_output *o, int axis)
{
    char buf[64];
    if (o->count) stem_output_pack(o, stem_output_values(o, STEM_CH_COM), 2, axis);
    stem_output_attr attrs[] = {
        {"units", "mrad", 0},
        {"description", axis ? "centre of mass of the diffraction pattern along y"
                             : "centre of mass of the diffraction pattern along x", 0},
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
        {"axes", "scan_y, scan_x, ring (equal widths from inner_mrad), segment (from rotation_deg, azimuth from +x "
                 "towards +y)", 0},
    };
    char buf[64];
    stem_output_dataset d = {
        .name = stem_output_name(o, "/segments", buf, sizeof buf), .file_type = H5T_IEEE_F64LE,
        .mem_type = H5T_NATIVE_DOUBLE, .rank = 4,
        .dims = {(hsize_t)plan->scan_ny, (hsize_t)plan->scan_nx, (hsize_t)plan->seg_rings, (hsize_t)plan->seg_n},
        .grid = 1, .data = o->count ? stem_output_values(o, STEM_CH_SEGMENTS) : NULL, .attrs = attrs, .n_attrs = 5};
    STEM_TRY(stem_output_write_dataset(o, &d));
    if (o->errors) return STEM_OK; /* the segments' DPC (a ratio of them) has none */
    for (int axis = 0; axis < 2; axis++) {
        if (o->count) stem_output_segment_dpc(o, axis);
        stem_output_attr dattrs[] = {
            {"units", "1", 0},
            {"description", "DPC from the segmented detector: sum over segments of S_s u_s / sum of S_s, u_s the unit "
                            "vector at the centre azimuth of segment s (all rings together)", 0},
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
    stem_output_dataset d = {
        .name = stem_output_name(o, "/rings", buf, sizeof buf), .file_type = H5T_IEEE_F64LE,
        .mem_type = H5T_NATIVE_DOUBLE, .rank = 3,
        .dims = {(hsize_t)plan->scan_ny, (hsize_t)plan->scan_nx, (hsize_t)plan->n_bins},
        .grid = 1, .data = o->count ? stem_output_values(o, STEM_CH_RINGS) : NULL, .attrs = attrs, .n_attrs = 3};
    return stem_output_write_dataset(o, &d);
}

/* PACBED: rank 0 writes the mean pattern every rank holds after the reduction. */
static int stem_output_pacbed(const stem_output *o)
{
    const stem_plan *plan = o->plan;
    stem_output_attr attrs[] = {
        {"qx_step_mrad", NULL, plan->cbed_bin * plan->out_dqx * plan->lambda * 1e3},
        {"qy_step_mrad", NULL, plan->cbed_bin * plan->out_dqy * plan->lambda * 1e3},
        {"units", STEM_OUTPUT_INTENSITY, 0},
        {"axes", "qy, qx (as /axes/cbed_qy_mrad, /axes/cbed_qx_mrad)", 0},
        {"description", "position-averaged CBED: the diffraction pattern averaged over every probe and "
                        "configuration (a probe's pattern sums to its /total_intensity)", 0},
    };
    stem_output_dataset d = {
        .name = "/pacbed", .file_type = H5T_IEEE_F64LE, .mem_type = H5T_NATIVE_DOUBLE, .rank = 2,
        .dims = {(hsize_t)plan->cbed_ny, (hsize_t)plan->cbed_nx}, .grid = 0,
        .data = o->res ? o->res->pacbed : NULL, .attrs = attrs, .n_attrs = 5};
    return stem_output_write_dataset(o, &d);
}

static int stem_output_cbed(const stem_output *o)
{
    const stem_plan *plan = o->plan;
    if (plan->opt.save_pacbed) STEM_TRY(stem_output_pacbed(o));
    if (!o->has_4d) return STEM_OK;
    stem_output_attr attrs[] = {
        {"qx_step_mrad", NULL, plan->cbed_bin * plan->out_dqx * plan->lambda * 1e3},
        {"qy_step_mrad", NULL, plan->cbed_bin * plan->out_dqy * plan->lambda * 1e3},
        {"units", STEM_OUTPUT_INTENSITY, 0},
        {"axes", "scan_y, scan_x, qy, qx (bin centres in /axes/cbed_qy_mrad, /axes/cbed_qx_mrad)", 0},
        {"cbed_bin", NULL, plan->cbed_bin},
    };
    stem_output_dataset d = {
        .name = plan->algorithm == STEM_ALG_CBED ? "/cbed_pattern" : "/cbed", .file_type = H5T_IEEE_F32LE, .mem_type = H5T_NATIVE_FLOAT, .rank = 4,
        .dims = {(hsize_t)plan->scan_ny, (hsize_t)plan->scan_nx, (hsize_t)plan->cbed_ny, (hsize_t)plan->cbed_nx},
        .grid = 1, .data = o->count ? o->res->cbed : NULL, .attrs = attrs, .n_attrs = 5};
    return stem_output_write_dataset(o, &d);
}

/* hrtem: the exit wave (re, im interleaved) and the image, each [ny][nx] over the cell. */
static int stem_output_exit_wave(const stem_output *o)
{
    const stem_plan *plan = o->plan;
    if (!stem_channel_width(plan, STEM_CH_EXIT)) return STEM_OK;
    stem_output_attr attrs[] = {
        {"units", "amplitude (a unit plane wave in vacuum is 1)", 0},
        {"axes", "scan_y, scan_x, y, x, (real, imaginary) (pixels at /axes/x, /axes/y)", 0},
        {"description", "the exit wave below the last slice, averaged over the configurations", 0},
    };
    stem_output_dataset d = {
        .name = "/exit_wave", .file_type = H5T_IEEE_F32LE, .mem_type = H5T_NATIVE_FLOAT, .rank = 5,
        .dims = {(hsize_t)plan->scan_ny, (hsize_t)plan->scan_nx, (hsize_t)plan->ny, (hsize_t)plan->nx, 2},
        .grid = 1, .data = o->writes ? o->res->data[STEM_CH_EXIT] : NULL, .attrs = attrs, .n_attrs = 3,
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
        {"description", "the HRTEM image: the exit wave through the objective lens ([probe] aberrations, focal "
                        "spread, [hrtem] objective_aperture), the intensities averaged over configurations", 0},
        {"objective_aperture_mrad", NULL, plan->opt.objective_aperture_mrad},
    };
    stem_output_dataset d = {
        .name = "/hrtem", .file_type = H5T_IEEE_F32LE, .mem_type = H5T_NATIVE_FLOAT, .rank = 4,
        .dims = {(hsize_t)plan->scan_ny, (hsize_t)plan->scan_nx, (hsize_t)plan->ny, (hsize_t)plan->nx},
        .grid = 1, .data = o->writes ? o->res->data[STEM_CH_HRTEM] : NULL, .attrs = attrs, .n_attrs = 4,
        .image_rows = 1};
    return stem_output_write_dataset(o, &d);
}

/* A 1D axis from o->axis, written by rank 0. */
static int stem_output_axis(const stem_output *o, const char *name, int n, const char *units)
{
    stem_output_attr attrs[] = {{"units", units, 0}};
    stem_output_dataset d = {.name = name, .file_type = H5T_IEEE_F64LE, .mem_type = H5T_NATIVE_DOUBLE,
                             .rank = 1, .dims = {(hsize_t)n}, .grid = 0, .data = o->axis,
                             .attrs = attrs, .n_attrs = 1, .fixed = 1};
    return stem_output_write_dataset(o, &d);
}

/* Centred detector axis: pixel i is (i - n/2) steps from zero angle. */
/* Angle of the centre of each of `bins` bins of the written pattern, bin i covering the
 * centred detector pixels first + i b .. first + i b + b - 1 (zero angle at pixel n / 2). */
static void stem_output_fill_bins(const stem_output *o, int n, int first, int bins, double step)
{
    int b = o->plan->cbed_bin;
    for (int i = 0; i < bins; i++) o->axis[i] = (first + i * b + (b - 1) / 2.0 - n / 2) * step;
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
    if (o->has_4d || plan->opt.save_pacbed) {
        stem_output_fill_bins(o, plan->out_nx, plan->cbed_x0, plan->cbed_nx, plan->out_dqx * plan->lambda * 1e3);
        STEM_TRY(stem_output_axis(o, "/axes/cbed_qx_mrad", plan->cbed_nx, "mrad"));
        stem_output_fill_bins(o, plan->out_ny, plan->cbed_y0, plan->cbed_ny, plan->out_dqy * plan->lambda * 1e3);
        STEM_TRY(stem_output_axis(o, "/axes/cbed_qy_mrad", plan->cbed_ny, "mrad"));
    }
    return STEM_OK;
}

/* /potential: item i = configuration i / n_slices, slice i % n_slices; in each collective
 * write every rank computes (or reads) one item and writes it, the others of the last
 * round nothing. */
/* A stored stack (/potential, /smatrix): float32 [configuration][item][ny][nx]... written one
 * plane per rank per collective round, each plane produced by `plane` on the rank that writes it. */
typedef struct {
    const char *name;
    int rank;        /* 4, or 5 for complex planes ([..][2]) */
    hsize_t dims[5]; /* [configuration][item][ny][nx] (+ [2]) */
    int (*plane)(const stem_output *o, int c, int k, float *buf);
} stem_output_stack;

static int stem_output_stack_plane(const stem_output *o, const stem_output_stack *st, hid_t dset, long item, float *buf)
{
    long items = (long)(st->dims[0] * st->dims[1]);
    int mine = item < items, rc = STEM_OK;
    int c = (int)(item / (long)st->dims[1]), k = (int)(item % (long)st->dims[1]);
    if (mine) rc = st->plane(o, c, k, buf);
    STEM_TRY(stem_output_agree(o->comm, rc));
    hsize_t start[5] = {(hsize_t)c, (hsize_t)k, 0, 0, 0}, count[5];
    memcpy(count, st->dims, sizeof count);
    count[0] = count[1] = 1;
    hid_t fspace = H5Dget_space(dset), mspace = H5Screate_simple(st->rank, count, NULL);
    if (fspace < 0 || mspace < 0) rc = STEM_ERR_IO;
    else if (mine) rc = H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, count, NULL) < 0 ? STEM_ERR_IO : STEM_OK;
    else rc = H5Sselect_none(fspace) < 0 || H5Sselect_none(mspace) < 0 ? STEM_ERR_IO : STEM_OK;
    if (!rc && H5Dwrite(dset, H5T_NATIVE_FLOAT, mspace, fspace, o->dxpl, buf) < 0) rc = STEM_ERR_IO;
    if (mspace >= 0) H5Sclose(mspace);
    if (fspace >= 0) H5Sclose(fspace);
    char why[128];
    if (rc) rc = STEM_FAIL(STEM_ERR_IO, "output %s: collective write of %s failed (%s)", o->path, st->name,
                           stem_output_why(o, why, sizeof why));
    return stem_output_agree(o->comm, rc);
}

static int stem_output_write_stack(const stem_output *o, const stem_output_stack *st, const stem_output_attr *attrs,
                                   int n_attrs)
{
    int size = 1;
    if (MPI_Comm_size(o->comm, &size) != MPI_SUCCESS)
        return STEM_FAIL(STEM_ERR_MPI, "output %s: MPI_Comm_size failed", o->path);
    size_t plane = 1;
    for (int d = 2; d < st->rank; d++) plane *= st->dims[d];
    float *buf = stem_alloc(sizeof(float) * plane, "one plane of a stored stack");
    int rc = stem_output_agree(o->comm, buf ? STEM_OK : STEM_ERR_MEMORY);
    hid_t space = H5Screate_simple(st->rank, st->dims, NULL), dset = H5I_INVALID_HID;
    if (!rc) {
        dset = space >= 0 ? H5Dcreate2(o->file, st->name, H5T_IEEE_F32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)
                          : H5I_INVALID_HID;
        if (dset < 0) rc = STEM_FAIL(STEM_ERR_IO, "output %s: cannot create %s", o->path, st->name);
        rc = stem_output_agree(o->comm, rc);
    }
    long items = (long)(st->dims[0] * st->dims[1]);
    for (long base = 0; !rc && base < items; base += size) rc = stem_output_stack_plane(o, st, dset, base + o->rank, buf);
    if (!rc) rc = stem_output_agree(o->comm, stem_output_attrs(o, dset, st->name, attrs, n_attrs));
    if (dset >= 0 && H5Dclose(dset) < 0 && !rc) rc = STEM_FAIL(STEM_ERR_IO, "output %s: H5Dclose failed for %s", o->path, st->name);
    if (space >= 0) H5Sclose(space);
    free(buf);
    return rc;
}

static int potential_plane(const stem_output *o, int c, int s, float *V)
{
    return o->stored->potential->slices(o->stored->potential->ctx, c, s, s + 1, V);
}

static int stem_output_potential_slices(const stem_output *o)
{
    if (!o->stored || !o->stored->potential) return STEM_OK;
    const stem_plan *plan = o->plan;
    stem_output_stack st = {STEM_POTENTIAL_DATASET, 4,
                            {(hsize_t)plan->n_configs, (hsize_t)plan->n_slices, (hsize_t)plan->pot_ny, (hsize_t)plan->pot_nx},
                            potential_plane};
    const stem_output_attr attrs[] = {
        {"units", "V Angstrom", 0},
        {"axes", "configuration, slice, y, x", 0},
        {"content", "projected potential of each slice as its transmission function uses it, on a grid "
                    "transmission_oversampling times finer than the run's, band-limited to 2/3 of its Nyquist: "
                    "t = exp(i sigma V), then band-limited to the run's band", 0},
        {"parametrisation", o->stored->potential->parametrisation, 0},
        {"projection", o->stored->potential->projection, 0},
        {"slice_thickness_angstrom", NULL, plan->dz},
        {"transmission_oversampling", NULL, plan->opt.oversampling},
        {"cell_x_angstrom", NULL, plan->cell[0]},
        {"cell_y_angstrom", NULL, plan->cell[1]},
    };
    return stem_output_write_stack(o, &st, attrs, (int)(sizeof attrs / sizeof *attrs));
}

static int smatrix_plane(const stem_output *o, int c, int b, float *S)
{
    return o->stored->smatrix->beam(o->stored->smatrix->ctx, c, b, S);
}

/* /smatrix and the beams it holds, /smatrix_beams [beam][kx, ky] (rank 0 writes it whole). */
static int stem_output_smatrix_stack(const stem_output *o)
{
    if (!o->stored || !o->stored->smatrix) return STEM_OK;
    const stem_plan *plan = o->plan;
    int *k = stem_calloc((size_t)plan->n_beams * 2, sizeof(int), "beam list");
    int rc = stem_output_agree(o->comm, k ? STEM_OK : STEM_ERR_MEMORY);
    for (int b = 0; !rc && b < plan->n_beams; b++) k[2 * b] = plan->beam_kx[b], k[2 * b + 1] = plan->beam_ky[b];
    stem_output_attr beam_attrs[] = {{"units", "Fourier index on the grid_x x grid_y grid (q = k / cell)", 0},
                                     {"axes", "beam, (kx, ky)", 0}};
    stem_output_dataset d = {.name = STEM_SMATRIX_BEAMS_DATASET, .file_type = H5T_STD_I32LE,
                             .mem_type = H5T_NATIVE_INT, .rank = 2, .dims = {(hsize_t)plan->n_beams, 2}, .grid = 0,
                             .data = k, .attrs = beam_attrs, .n_attrs = 2, .fixed = 1};
    if (!rc) rc = stem_output_agree(o->comm, stem_output_write_dataset(o, &d));
    free(k);
    stem_output_stack st = {STEM_SMATRIX_DATASET, 5,
                            {(hsize_t)plan->n_configs, (hsize_t)plan->n_beams, (hsize_t)plan->crop_ny,
                             (hsize_t)plan->crop_nx, 2},
                            smatrix_plane};
    const stem_output_attr attrs[] = {
        {"axes", "configuration, beam, y, x, (real, imaginary)", 0},
        {"content", "PRISM's compact S-matrix: each beam's plane wave (/smatrix_beams) through the sample, cut to "
                    "the band-limited Fourier box of crop_ny x crop_nx and transformed back; a unit plane wave in "
                    "vacuum has modulus 1", 0},
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
    };
    if (!rc) rc = stem_output_write_stack(o, &st, attrs, (int)(sizeof attrs / sizeof *attrs));
    return rc;
}

/* One collective flush, agreed. */
static int stem_output_flush(const stem_output *o)
{
    char why[128];
    int rc = H5Fflush(o->file, H5F_SCOPE_GLOBAL) < 0
                 ? STEM_FAIL(STEM_ERR_IO, "output %s: H5Fflush failed (%s)", o->path, stem_output_why(o, why, sizeof why))
                 : STEM_OK;
    return stem_output_agree(o->comm, rc);
}

/* Data reaches the disk before the marker that says it is all there, and the
 * marker before the close (which then has nothing left that could fail to fit). */
static int stem_output_mark_complete(const stem_output *o)
{
    STEM_TRY(stem_output_flush(o));
    STEM_TRY(stem_output_attr_int(o, o->file, "/", "complete", 1));
    return stem_output_flush(o);
}

/* Test hook (tests/integration/faults.py): STEMSIM_TEST_PAUSE_AT=<stage> makes rank 0
 * announce the stage on stderr and wait STEMSIM_TEST_PAUSE_S seconds (default 5) there,
 * so a test can fill the disk or send a signal at that moment: "write" (the reserve
 * given back, the file not yet created), "emd" (the conversion's file created, its
 * share of the reserve still held; every rank ticking). */
static int stem_output_test_pause(const char *stage, int (*tick)(void *), void *ctx)
{
    const char *at = getenv("STEMSIM_TEST_PAUSE_AT"), *s = getenv("STEMSIM_TEST_PAUSE_S");
    if (!at || strcmp(at, stage)) return STEM_OK;
    double seconds = s ? atof(s) : 5, end = stem_wall_time() + seconds;
    fprintf(stderr, "stemsim: test hook: pausing %.1f s at %s\n", seconds, stage);
    int rc = STEM_OK;
    while (!rc && stem_wall_time() < end) {
        usleep(50000);
        if (tick) rc = tick(ctx);
    }
    return rc;
}

/* The EMD conversion runs on rank 0 while the others wait; between its steps every rank
 * tells whether a signal reached it (MPI_MAX of {rank 0 still converting, signal}), so
 * a signal anywhere stops the conversion within a step and no rank waits for the
 * watchdog. Rank 0 ticks at most every 0.2 s; the others follow until it says done. */
typedef struct {
    MPI_Comm comm;
    const stem_output_target *target;
    double last;
} stem_output_emd_run;

static int stem_output_emd_exchange(MPI_Comm comm, int converting, int *sig)
{
    int mine[2] = {converting, stem_signal_pending()}, all[2];
    if (MPI_Allreduce(mine, all, 2, MPI_INT, MPI_MAX, comm) != MPI_SUCCESS)
        return STEM_FAIL(STEM_ERR_MPI, "MPI_Allreduce during the EMD conversion failed");
    *sig = all[1];
    return all[0];
}

static int stem_output_emd_tick_now(void *ctx)
{
    stem_output_emd_run *r = ctx;
    int sig = 0;
    r->last = stem_wall_time();
    if (stem_output_emd_exchange(r->comm, 1, &sig) == STEM_ERR_MPI) return STEM_ERR_MPI;
    return sig ? stem_signal_status(sig) : STEM_OK;
}

static int stem_output_emd_tick(void *ctx)
{
    stem_output_emd_run *r = ctx;
    return stem_wall_time() - r->last < 0.2 ? STEM_OK : stem_output_emd_tick_now(ctx);
}

/* Before the EMD file is closed: a failed file is emptied and the reserve's margin goes,
 * so the close always finds room. */
static void stem_output_emd_before_close(void *ctx, const char *emd, int failed)
{
    stem_output_emd_run *r = ctx;
    if (failed && truncate(emd, 0) != 0) stem_warn("cannot truncate the unfinished %s: %s", emd, strerror(errno));
    stem_output_target_release(r->target, 0);
}

/* Rank 0's conversion itself: "<file>.XXXXXX.emd.incomplete" created exclusively (the
 * signal handler removes it too), converted, renamed over the native temporary. */
static int stem_output_emd_rank0(stem_output *o, stem_output_emd_run *run)
{
    const char *temp = o->target->temp_path;
    char emd_path[STEM_OUTPUT_NAME_MAX + 16];
    stem_output_target_sibling(o->target, "emd", emd_path, sizeof emd_path);
    int fd = open(emd_path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644), rc = STEM_OK;
    struct stat st;
    double t = stem_wall_time();
    if (fd < 0) return STEM_FAIL(STEM_ERR_IO, "[output] layout = emd: cannot create %s: %s", emd_path, strerror(errno));
    close(fd);
    stem_signal_cleanup_slot(STEM_SIGNAL_SLOT_EMD, emd_path);
    rc = stem_output_test_pause("emd", stem_output_emd_tick_now, run);
    if (rc) {
        unlink(emd_path);
        stem_signal_cleanup_slot(STEM_SIGNAL_SLOT_EMD, NULL);
        return rc;
    }
    stem_output_target_release(o->target, STEM_OUTPUT_RESERVE_MARGIN); /* the copy's share is for the copy */
    stem_emd_hooks hooks = {stem_output_emd_tick, stem_output_emd_before_close, run};
    rc = stem_emd_convert(temp, emd_path, o->plan, &hooks);
    if (!rc && (rename(emd_path, temp) != 0 || stat(temp, &st) != 0))
        rc = STEM_FAIL(STEM_ERR_IO, "[output] layout = emd: cannot rename %s to %s: %s", emd_path, temp, strerror(errno));
    if (rc) unlink(emd_path);
    stem_signal_cleanup_slot(STEM_SIGNAL_SLOT_EMD, NULL);
    if (rc) return rc;
    o->converted = *o->target;
    o->converted.dev = st.st_dev;
    o->converted.ino = st.st_ino;
    o->target = &o->converted;
    stem_info("output written in Prismatic's EMD layout ([output] layout = emd) in %.2f s", stem_wall_time() - t);
    return STEM_OK;
}

/* [output] layout = emd: rank 0 rewrites the closed native temporary as Prismatic's tree
 * and renames it over the native one, which the publication then renames into place as
 * usual; the other ranks follow its ticks. */
static int stem_output_as_emd(stem_output *o)
{
    int rc = STEM_OK, sig = 0;
    stem_output_emd_run run = {o->comm, o->target, stem_wall_time()};
    if (o->rank == 0) {
        rc = stem_output_emd_rank0(o, &run);
        if (stem_output_emd_exchange(o->comm, 0, &sig) == STEM_ERR_MPI && !rc) rc = STEM_ERR_MPI;
    } else {
        int converting;
        do converting = stem_output_emd_exchange(o->comm, 0, &sig);
        while (converting == 1);
        if (converting == STEM_ERR_MPI) rc = STEM_ERR_MPI;
    }
    return stem_output_agree(o->comm, rc);
}

static int stem_output_publish(const stem_output *o)
{
    int rc = STEM_OK;
    if (MPI_Barrier(o->comm) != MPI_SUCCESS)
        return STEM_FAIL(STEM_ERR_MPI, "output %s: MPI_Barrier before the rename failed", o->path);
    if (o->rank == 0) rc = stem_output_target_publish(o->target);
    if (MPI_Bcast(&rc, 1, MPI_INT, 0, o->comm) != MPI_SUCCESS)
        return STEM_FAIL(STEM_ERR_MPI, "output %s: MPI_Bcast after the rename failed", o->path);
    return rc;
}

/* Rank 0: the reserve's share for this file is given back just before it is written
 * (the margin and the EMD copy's share stay). */
static int stem_output_give_space(const stem_output *o)
{
    if (o->rank) return STEM_OK;
    stem_output_target_release(o->target, STEM_OUTPUT_RESERVE_MARGIN + o->target->reserve_later);
    return stem_output_test_pause("write", NULL, NULL);
}

/* Rank 0 checks the temporary is still the file it created; all agree. */
static int stem_output_verify_target(const stem_output *o)
{
    return o->rank == 0 ? stem_output_target_verify(o->target) : STEM_OK;
}

static int stem_output_init(stem_output *o, MPI_Comm comm, const stem_output_target *target, const stem_plan *plan,
                            const stem_result *res, int writes_probes)
{
    memset(o, 0, sizeof *o);
    o->comm = comm;
    o->target = target;
    o->plan = plan;
    o->res = writes_probes ? res : NULL;
    o->writes = writes_probes != 0;
    o->fapl = o->dxpl = o->file = H5I_INVALID_HID;
    snprintf(o->path, sizeof o->path, "%s", target->temp_path);
    if (MPI_Comm_rank(comm, &o->rank) != MPI_SUCCESS)
        return STEM_FAIL(STEM_ERR_MPI, "output %s: MPI_Comm_rank failed", o->path);
    /* Errors are reported here, with the file name; HDF5's stack dump adds noise. */
    if (H5Eset_auto2(H5E_DEFAULT, NULL, NULL) < 0)
        return STEM_FAIL(STEM_ERR_IO, "output %s: H5Eset_auto2 failed", o->path);
    return STEM_OK;
}

static void stem_output_free(stem_output *o)
{
    free(o->scratch);
    free(o->axis);
    free(o->config_text);
    free(o->plan_text);
    free(o->env_text);
    free(o->advice_text);
}

/* The writer of each output channel (channels.h); it decides from the plan
 * whether its datasets are asked for. */
typedef int (*stem_output_channel_writer)(const stem_output *o);
static const stem_output_channel_writer stem_output_writers[STEM_N_CHANNELS] = {
    [STEM_CH_RINGS] = stem_output_rings,
    [STEM_CH_IMAGES] = stem_output_images,
    [STEM_CH_TOTAL] = stem_output_total,
    [STEM_CH_COM] = stem_output_dpc_both,
    [STEM_CH_SEGMENTS] = stem_output_segments,
    [STEM_CH_CBED] = stem_output_cbed,
    [STEM_CH_EXIT] = stem_output_exit_wave,
    [STEM_CH_HRTEM] = stem_output_hrtem,
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

/* All content steps; every one ends with all ranks agreeing on its status. */
static int stem_output_content(stem_output *o)
{
    int rc = STEM_OK, points = o->series ? o->series->n_points : 1;
    STEM_OUTPUT_STEP(rc, o->comm, stem_output_root_attrs(o));
    STEM_OUTPUT_STEP(rc, o->comm, stem_output_groups(o));
    for (int p = 0; p < points && !rc; p++) {
        if (o->series) rc = stem_output_load_point(o, p); /* agreed by the loader */
        for (int ch = 0; ch < STEM_N_CHANNELS; ch++) {
            STEM_OUTPUT_STEP(rc, o->comm, stem_output_writers[ch](o));
            if (!o->has_errors || !stem_channel_table[ch].error) continue;
            o->errors = 1; /* the same writer again, for the channel's standard errors */
            STEM_OUTPUT_STEP(rc, o->comm, stem_output_writers[ch](o));
            o->errors = 0;
        }
    }
    STEM_OUTPUT_STEP(rc, o->comm, stem_output_axes(o));
    if (!rc) rc = stem_output_potential_slices(o); /* agreed inside */
    if (!rc) rc = stem_output_smatrix_stack(o);    /* agreed inside */
    STEM_OUTPUT_STEP(rc, o->comm, stem_output_mark_complete(o));
    return rc;
}

static int stem_output_write_all(MPI_Comm comm, const stem_output_target *target, const stem_plan *plan,
                                 stem_result *res, int writes_probes, const stem_output_texts *texts,
                                 const stem_output_series *series, const stem_output_stored *stored)
{
    stem_output o;
    int rc = stem_output_init(&o, comm, target, plan, res, writes_probes);
    o.series = series;
    o.stored = stored;
    for (int a = 0; series && a < STEM_OUTPUT_MAX_LEAD; a++)
        if (series->lead_name[a]) o.lead[o.n_lead++] = (hsize_t)series->lead_n[a];
    rc = stem_output_agree(comm, rc);
    STEM_OUTPUT_STEP(rc, comm, stem_output_prepare(&o));
    STEM_OUTPUT_STEP(rc, comm, stem_output_check_coverage(&o));
    STEM_OUTPUT_STEP(rc, comm, stem_output_agree_flags(&o));
    STEM_OUTPUT_STEP(rc, comm, stem_output_share_text(&o, texts ? texts->config_ini : NULL, "config", &o.config_text));
    STEM_OUTPUT_STEP(rc, comm, stem_output_share_text(&o, texts ? texts->plan : NULL, "plan", &o.plan_text));
    STEM_OUTPUT_STEP(rc, comm, stem_output_share_text(&o, texts ? texts->environment : NULL, "environment", &o.env_text));
    STEM_OUTPUT_STEP(rc, comm, stem_output_share_text(&o, texts ? texts->advice : NULL, "advice", &o.advice_text));
    STEM_OUTPUT_STEP(rc, comm, stem_output_verify_target(&o));
    STEM_OUTPUT_STEP(rc, comm, stem_output_give_space(&o));
    STEM_OUTPUT_STEP(rc, comm, stem_output_open(&o));
    if (!rc) rc = stem_output_content(&o);
    /* Close on every path (collective H5Fclose), then agree on the outcome. */
    int crc = stem_output_close(&o, rc != STEM_OK);
    if (!rc) rc = stem_output_agree(comm, crc);
    if (!rc && plan->opt.layout_emd) rc = stem_output_as_emd(&o);
    if (!rc) rc = stem_output_publish(&o);
    /* a failure before or during writing: the temporary goes (a failed
     * publish has already kept the complete file and said where) */
    else if (o.rank == 0)
        stem_output_target_discard(target);
    stem_output_free(&o);
    return rc;
}

double stem_output_estimate_bytes(const stem_plan *plan, int n_points)
{
    double per_probe = 0;
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++)
        per_probe += 8.0 * (double)(stem_channel_width(plan, ch) + stem_channel_error_width(plan, ch));
    double bytes = per_probe * (double)plan->n_probes * (n_points > 0 ? n_points : 1);
    if (plan->opt.save_pacbed) bytes += 8.0 * plan->cbed_nx * plan->cbed_ny * (n_points > 0 ? n_points : 1);
    if (plan->opt.save_potential) bytes += 4.0 * plan->n_configs * plan->n_slices * plan->pot_ny * (double)plan->pot_nx;
    if (plan->opt.save_smatrix)
        bytes += 8.0 * plan->n_configs * plan->n_beams * plan->crop_ny * (double)plan->crop_nx + 8.0 * plan->n_beams;
    /* HDF5's headers, attributes (the config and plan texts) and axes */
    return bytes * 1.01 + 256.0 * 1024;
}

int stem_output_write_series(MPI_Comm comm, const stem_output_target *target, const stem_plan *plan, stem_result *res,
                             int writes_probes, const stem_output_texts *texts, const stem_output_series *series)
{
    return stem_output_write_all(comm, target, plan, res, writes_probes, texts, series, NULL);
}

int stem_output_write(MPI_Comm comm, const stem_output_target *target, const stem_plan *plan, const stem_result *res,
                      int writes_probes, const stem_output_texts *texts, const stem_output_stored *stored)
{
    return stem_output_write_all(comm, target, plan, (stem_result *)res, writes_probes, texts, NULL, stored);
}
