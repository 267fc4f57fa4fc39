/* Generic HDF5 writing: attributes on one rank, and a file every rank writes together
 * (see h5_collective.h). */
#include "h5_collective.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../comm/collectives.h"
#include "../src/signals.h"
#include "../src/stem.h"

#define STEM_H5_CLOSE_DEADLINE_S 30 /* seconds a discarded file's close may take */

/* ------------------------------------------------------ attributes (one rank) */

int stem_h5_attr(hid_t loc, const char *name, hid_t file_type, hid_t mem_type, const void *value, hsize_t n,
                 const char *file, const char *where)
{
    int rc = STEM_OK;
    hid_t space = n ? H5Screate_simple(1, &n, NULL) : H5Screate(H5S_SCALAR), attr = H5I_INVALID_HID;
    if (space < 0) {
        rc = file ? STEM_FAIL(STEM_ERR_IO, "output %s: %s failed for attribute %s of %s", file,
                              n ? "H5Screate_simple" : "H5Screate(scalar)", name, where)
                  : STEM_ERR_IO;
        goto done;
    }
    attr = H5Acreate2(loc, name, file_type, space, H5P_DEFAULT, H5P_DEFAULT);
    if (attr < 0) {
        rc = file ? STEM_FAIL(STEM_ERR_IO, "output %s: cannot create attribute %s of %s", file, name, where)
                  : STEM_ERR_IO;
        goto done;
    }
    if (H5Awrite(attr, mem_type, value) < 0)
        rc = file ? STEM_FAIL(STEM_ERR_IO, "output %s: cannot write attribute %s of %s", file, name, where)
                  : STEM_ERR_IO;
done:
    if (attr >= 0 && H5Aclose(attr) < 0 && !rc)
        rc = file ? STEM_FAIL(STEM_ERR_IO, "output %s: H5Aclose failed for %s of %s", file, name, where) : STEM_ERR_IO;
    if (space >= 0 && H5Sclose(space) < 0 && !rc)
        rc = file ? STEM_FAIL(STEM_ERR_IO, "output %s: H5Sclose failed for %s of %s", file, name, where) : STEM_ERR_IO;
    return rc;
}

int stem_h5_attr_string(hid_t loc, const char *name, const char *text, int fixed, const char *file, const char *where)
{
    hid_t type = H5Tcopy(H5T_C_S1);
    if (type < 0) return file ? STEM_FAIL(STEM_ERR_IO, "output %s: H5Tcopy(string) failed", file) : STEM_ERR_IO;
    int rc = STEM_OK;
    if (H5Tset_size(type, fixed ? strlen(text) + 1 : H5T_VARIABLE) < 0 || H5Tset_cset(type, H5T_CSET_UTF8) < 0)
        rc = file ? STEM_FAIL(STEM_ERR_IO, "output %s: cannot build the string type for %s of %s", file, name, where)
                  : STEM_ERR_IO;
    /* a fixed-length string is its bytes; a variable-length one a pointer to them */
    if (!rc) rc = stem_h5_attr(loc, name, type, type, fixed ? (const void *)text : (const void *)&text, 0, file, where);
    if (H5Tclose(type) < 0 && !rc)
        rc = file ? STEM_FAIL(STEM_ERR_IO, "output %s: H5Tclose(string) failed", file) : STEM_ERR_IO;
    return rc;
}

int stem_h5_attr_int(hid_t loc, const char *name, int value)
{
    return stem_h5_attr(loc, name, H5T_STD_I32LE, H5T_NATIVE_INT, &value, 0, NULL, NULL);
}

int stem_h5_attr_double(hid_t loc, const char *name, double value)
{
    return stem_h5_attr(loc, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value, 0, NULL, NULL);
}

int stem_h5_attr_text(hid_t loc, const char *name, const char *text)
{
    return stem_h5_attr_string(loc, name, text, 1, NULL, NULL);
}

/* ------------------------------------------------------- a collective file */

int stem_h5_agree(MPI_Comm comm, int rc)
{
    int sig = stem_signal_pending();
    if (!rc && sig) rc = stem_signal_status(sig);
    return stem_mpi_agree(rc, comm);
}

const char *stem_h5_why(const stem_h5_file *f, char *buf, size_t n)
{
    stem_output_space_note(f->path, buf, n);
    return buf;
}

int stem_h5_file_init(stem_h5_file *f, MPI_Comm comm, const stem_output_target *target)
{
    f->comm = comm;
    f->target = target;
    f->fapl = f->dxpl = f->file = H5I_INVALID_HID;
    snprintf(f->path, sizeof f->path, "%s", target->temp_path);
    if (MPI_Comm_rank(comm, &f->rank) != MPI_SUCCESS)
        return STEM_FAIL(STEM_ERR_MPI, "output %s: MPI_Comm_rank failed", f->path);
    /* Errors are reported here, with the file name; HDF5's stack dump adds noise. */
    if (H5Eset_auto2(H5E_DEFAULT, NULL, NULL) < 0)
        return STEM_FAIL(STEM_ERR_IO, "output %s: H5Eset_auto2 failed", f->path);
    return STEM_OK;
}

int stem_h5_file_open(stem_h5_file *f)
{
    f->fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (f->fapl < 0) return STEM_FAIL(STEM_ERR_IO, "output %s: H5Pcreate(file access) failed", f->path);
    if (H5Pset_fapl_mpio(f->fapl, f->comm, MPI_INFO_NULL) < 0)
        return STEM_FAIL(STEM_ERR_IO, "output %s: H5Pset_fapl_mpio failed", f->path);
    f->dxpl = H5Pcreate(H5P_DATASET_XFER);
    if (f->dxpl < 0) return STEM_FAIL(STEM_ERR_IO, "output %s: H5Pcreate(transfer) failed", f->path);
    if (H5Pset_dxpl_mpio(f->dxpl, H5FD_MPIO_COLLECTIVE) < 0)
        return STEM_FAIL(STEM_ERR_IO, "output %s: H5Pset_dxpl_mpio(collective) failed", f->path);
    /* TRUNC: the temporary is the empty file rank 0 created exclusively at
     * the start (and verified just now), never someone else's */
    f->file =
        f->reopen ? H5Fopen(f->path, H5F_ACC_RDWR, f->fapl) : H5Fcreate(f->path, H5F_ACC_TRUNC, H5P_DEFAULT, f->fapl);
    char why[128];
    if (f->file < 0 && f->reopen)
        return STEM_FAIL(STEM_ERR_IO,
                         "output %s: cannot open the 4D patterns a stopped run kept (H5Fopen failed: %s); run "
                         "with --restart to compute them again",
                         f->path, stem_h5_why(f, why, sizeof why));
    if (f->file < 0)
        return STEM_FAIL(STEM_ERR_IO,
                         "output %s: cannot create the file (H5Fcreate failed: %s; check the "
                         "directory is writable and on a file system MPI-IO supports)",
                         f->path, stem_h5_why(f, why, sizeof why));
    return STEM_OK;
}

/* The agreement after a collective HDF5 step. A rank whose own part failed (a full disk) may
 * have left HDF5's ranks out of step: the others can wait inside HDF5 for a call it will never
 * make, so it waits at most STEM_H5_CLOSE_DEADLINE_S for them, then leaves (exit 6, files
 * removed) and the launcher ends the rest. A healthy rank is never timed: a slow write of
 * every rank is never cut short. */
static int stem_h5_agree_after(MPI_Comm comm, int rc)
{
    if (rc) stem_signal_deadline(STEM_H5_CLOSE_DEADLINE_S, STEM_ERR_IO);
    int all = stem_h5_agree(comm, rc);
    if (rc) stem_signal_deadline(0, 0);
    return all;
}

int stem_h5_file_flush(const stem_h5_file *f)
{
    char why[128];
    int rc = H5Fflush(f->file, H5F_SCOPE_GLOBAL) < 0
        ? STEM_FAIL(STEM_ERR_IO, "output %s: H5Fflush failed (%s)", f->path, stem_h5_why(f, why, sizeof why))
        : STEM_OK;
    return stem_h5_agree_after(f->comm, rc);
}

/* The file is being thrown away: give its space back (rank 0, by name) so
 * HDF5 can flush its metadata and close. A close that fails leaves HDF5 with
 * a half-closed file that it closes again, and crashes on, in MPI_Finalize. */
static void stem_h5_release_space(const stem_h5_file *f)
{
    if (f->rank == 0 && truncate(f->path, 0) != 0)
        stem_warn("cannot truncate the unfinished output %s: %s", f->path, strerror(errno));
    if (f->rank == 0) stem_output_target_release(f->target, 0); /* the reserve's margin too */
    MPI_Barrier(f->comm);
}

/* HDF5 could not close the file: it keeps the half-closed file and crashes on it in
 * MPI_Finalize (exit 139), so every rank leaves here, exit 6, once rank 0 removed the
 * temporary and the reserve (the ranks agreed, so none is left waiting). */
static void stem_h5_leave_unclosed(const stem_h5_file *f, int discard)
{
    char why[128];
    STEM_FAIL(STEM_ERR_IO,
              "output %s: closing the %sfile failed (H5Fclose; %s); it is removed and the job ends here "
              "(HDF5 cannot finish a failed close)",
              f->path, discard ? "discarded " : "", stem_h5_why(f, why, sizeof why));
    if (f->rank == 0) stem_output_target_discard(f->target);
    stem_log_release_held(0); /* rank 0 said it */
    fflush(NULL);
    MPI_Barrier(f->comm);
    _exit(STEM_ERR_IO);
}

/* Collective H5Fclose, once: a failed close cannot be retried (HDF5 crashes on
 * the half-closed file), so the space it needs is released first: the whole file
 * when it is discarded, else the reserve's margin (everything was flushed before). */
static int stem_h5_close_file(stem_h5_file *f, int discard)
{
    if (discard)
        stem_h5_release_space(f);
    else if (f->rank == 0)
        stem_output_target_release(f->target, f->target->reserve_later);
    /* a metadata write that failed on some ranks only (the disk filled mid-file) can leave
     * HDF5's ranks out of step in the close, waiting for each other for ever: a discarded
     * file's close gets STEM_H5_CLOSE_DEADLINE_S, then the rank leaves (exit 6) */
    if (discard) stem_signal_deadline(STEM_H5_CLOSE_DEADLINE_S, STEM_ERR_IO);
    int rc = H5Fclose(f->file) < 0 ? STEM_ERR_IO : STEM_OK;
    int all = stem_mpi_agree(rc, f->comm);
    if (discard) stem_signal_deadline(0, 0);
    if (all) stem_h5_leave_unclosed(f, discard);
    return STEM_OK;
}

int stem_h5_file_close(stem_h5_file *f, int discard)
{
    int rc = STEM_OK;
    if (f->dxpl >= 0 && H5Pclose(f->dxpl) < 0)
        rc = STEM_FAIL(STEM_ERR_IO, "output %s: H5Pclose(transfer) failed", f->path);
    if (f->fapl >= 0 && H5Pclose(f->fapl) < 0 && !rc)
        rc = STEM_FAIL(STEM_ERR_IO, "output %s: H5Pclose(file access) failed", f->path);
    if (f->file >= 0) {
        int frc = stem_h5_close_file(f, discard);
        if (!rc) rc = frc;
    }
    f->dxpl = f->fapl = f->file = H5I_INVALID_HID;
    return rc;
}

/* Metadata can fail on one rank only (a full disk): all leave a chain of attributes together. */
int stem_h5_put_string(const stem_h5_file *f, hid_t loc, const char *where, const char *name, const char *value)
{
    return stem_h5_agree(f->comm, stem_h5_attr_string(loc, name, value, 0, f->path, where));
}

int stem_h5_put_double(const stem_h5_file *f, hid_t loc, const char *where, const char *name, double value)
{
    return stem_h5_agree(f->comm,
                         stem_h5_attr(loc, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value, 0, f->path, where));
}

int stem_h5_put_int(const stem_h5_file *f, hid_t loc, const char *where, const char *name, int value)
{
    return stem_h5_agree(f->comm, stem_h5_attr(loc, name, H5T_STD_I32LE, H5T_NATIVE_INT, &value, 0, f->path, where));
}

int stem_h5_group(const stem_h5_file *f, const char *name)
{
    hid_t g = H5Gcreate2(f->file, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    int rc = STEM_OK;
    if (g < 0)
        rc = STEM_FAIL(STEM_ERR_IO, "output %s: cannot create group %s", f->path, name);
    else if (H5Gclose(g) < 0)
        rc = STEM_FAIL(STEM_ERR_IO, "output %s: H5Gclose failed for %s", f->path, name);
    return stem_h5_agree(f->comm, rc);
}

/* A new dataset's creation properties: contiguous (the default), or chunked with its space
 * allocated at once (parallel HDF5 asks it) and never filled (every value is written). */
static hid_t create_properties(const stem_h5_dataset *d)
{
    if (!d->chunk[0]) return H5P_DEFAULT;
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if (dcpl < 0) return dcpl;
    if (H5Pset_chunk(dcpl, d->rank, d->chunk) < 0 || H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY) < 0 ||
        H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER) < 0) {
        H5Pclose(dcpl);
        return H5I_INVALID_HID;
    }
    return dcpl;
}

int stem_h5_write_dataset(const stem_h5_file *f, const stem_h5_dataset *d)
{
    int rc = STEM_OK;
    hid_t fspace = H5I_INVALID_HID, mspace = H5I_INVALID_HID, dset = H5I_INVALID_HID;
    double dummy = 0; /* H5Dwrite wants a buffer even for an empty selection */
    fspace = H5Screate_simple(d->rank, d->dims, NULL);
    if (fspace < 0) {
        rc = STEM_FAIL(STEM_ERR_IO, "output %s: H5Screate_simple failed for %s", f->path, d->name);
        goto done;
    }
    hid_t dcpl = d->open ? H5P_DEFAULT : create_properties(d);
    dset = d->open ? H5Dopen2(f->file, d->name, H5P_DEFAULT)
        : dcpl < 0 ? H5I_INVALID_HID
                   : H5Dcreate2(f->file, d->name, d->file_type, fspace, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (dcpl != H5P_DEFAULT && dcpl >= 0) H5Pclose(dcpl);
    char why[128];
    if (dset < 0)
        rc = STEM_FAIL(STEM_ERR_IO, "output %s: cannot %s dataset %s (%s)", f->path, d->open ? "open" : "create",
                       d->name, stem_h5_why(f, why, sizeof why));
    else
        rc = d->select(d->ctx, fspace, &mspace);
    /* each collective call is entered by every rank or by none */
    if ((rc = stem_h5_agree(f->comm, rc))) goto done;
    if (H5Dwrite(dset, d->mem_type, mspace, fspace, f->dxpl, d->data ? d->data : &dummy) < 0)
        rc = STEM_FAIL(STEM_ERR_IO, "output %s: collective write of %s failed (%s)", f->path, d->name,
                       stem_h5_why(f, why, sizeof why));
    if ((rc = stem_h5_agree_after(f->comm, rc))) goto done;
    if (!d->open && d->attrs) rc = d->attrs(d->ctx, dset);
done:
    if (dset >= 0 && H5Dclose(dset) < 0 && !rc)
        rc = STEM_FAIL(STEM_ERR_IO, "output %s: H5Dclose failed for %s", f->path, d->name);
    if (mspace >= 0 && H5Sclose(mspace) < 0 && !rc)
        rc = STEM_FAIL(STEM_ERR_IO, "output %s: H5Sclose failed for %s", f->path, d->name);
    if (fspace >= 0 && H5Sclose(fspace) < 0 && !rc)
        rc = STEM_FAIL(STEM_ERR_IO, "output %s: H5Sclose failed for %s", f->path, d->name);
    return rc;
}

/* Item `item` of the stack (configuration item / dims[1], plane item % dims[1]) on this
 * rank; past the last item the rank joins the collective write with nothing. */
static int stem_h5_stack_plane(const stem_h5_file *f, const stem_h5_stack *st, hid_t dset, long item, float *buf)
{
    long items = (long)(st->dims[0] * st->dims[1]);
    int mine = item < items, rc = STEM_OK;
    int c = (int)(item / (long)st->dims[1]), k = (int)(item % (long)st->dims[1]);
    if (mine) rc = st->plane(st->ctx, c, k, buf);
    STEM_TRY(stem_h5_agree(f->comm, rc));
    hsize_t start[5] = {(hsize_t)c, (hsize_t)k, 0, 0, 0}, count[5];
    memcpy(count, st->dims, sizeof count);
    count[0] = count[1] = 1;
    hid_t fspace = H5Dget_space(dset), mspace = H5Screate_simple(st->rank, count, NULL);
    if (fspace < 0 || mspace < 0)
        rc = STEM_ERR_IO;
    else if (mine)
        rc = H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, count, NULL) < 0 ? STEM_ERR_IO : STEM_OK;
    else
        rc = H5Sselect_none(fspace) < 0 || H5Sselect_none(mspace) < 0 ? STEM_ERR_IO : STEM_OK;
    if (!rc && H5Dwrite(dset, H5T_NATIVE_FLOAT, mspace, fspace, f->dxpl, buf) < 0) rc = STEM_ERR_IO;
    if (mspace >= 0) H5Sclose(mspace);
    if (fspace >= 0) H5Sclose(fspace);
    char why[128];
    if (rc)
        rc = STEM_FAIL(STEM_ERR_IO, "output %s: collective write of %s failed (%s)", f->path, st->name,
                       stem_h5_why(f, why, sizeof why));
    return stem_h5_agree(f->comm, rc);
}

int stem_h5_write_stack(const stem_h5_file *f, const stem_h5_stack *st)
{
    int size = 1;
    if (MPI_Comm_size(f->comm, &size) != MPI_SUCCESS)
        return STEM_FAIL(STEM_ERR_MPI, "output %s: MPI_Comm_size failed", f->path);
    size_t plane = 1;
    for (int d = 2; d < st->rank; d++) plane *= st->dims[d];
    float *buf = stem_alloc(sizeof(float) * plane, "one plane of a stored stack");
    int rc = stem_h5_agree(f->comm, buf ? STEM_OK : STEM_ERR_MEMORY);
    hid_t space = H5Screate_simple(st->rank, st->dims, NULL), dset = H5I_INVALID_HID;
    if (!rc) {
        dset = space >= 0 ? H5Dcreate2(f->file, st->name, H5T_IEEE_F32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)
                          : H5I_INVALID_HID;
        if (dset < 0) rc = STEM_FAIL(STEM_ERR_IO, "output %s: cannot create %s", f->path, st->name);
        rc = stem_h5_agree(f->comm, rc);
    }
    long items = (long)(st->dims[0] * st->dims[1]);
    for (long base = 0; !rc && base < items; base += size) rc = stem_h5_stack_plane(f, st, dset, base + f->rank, buf);
    if (!rc) rc = stem_h5_agree(f->comm, st->attrs(st->ctx, dset));
    if (dset >= 0 && H5Dclose(dset) < 0 && !rc)
        rc = STEM_FAIL(STEM_ERR_IO, "output %s: H5Dclose failed for %s", f->path, st->name);
    if (space >= 0) H5Sclose(space);
    free(buf);
    return rc;
}

char *stem_h5_attr_read_text(hid_t loc, const char *name)
{
    if (loc < 0 || H5Aexists(loc, name) <= 0) return NULL;
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT), t = a >= 0 ? H5Aget_type(a) : H5I_INVALID_HID;
    char *text = NULL;
    if (t >= 0 && H5Tget_class(t) == H5T_STRING && H5Tis_variable_str(t) > 0) {
        hid_t mem = H5Tcopy(H5T_C_S1); /* the file's character set: HDF5 does not convert between them */
        H5Tset_size(mem, H5T_VARIABLE);
        H5Tset_cset(mem, H5Tget_cset(t));
        char *v = NULL;
        if (H5Aread(a, mem, &v) >= 0 && v) text = strdup(v);
        if (v) H5free_memory(v);
        H5Tclose(mem);
    } else if (t >= 0 && H5Tget_class(t) == H5T_STRING) {
        size_t n = H5Tget_size(t);
        if ((text = calloc(n + 1, 1)) && H5Aread(a, t, text) < 0) {
            free(text);
            text = NULL;
        }
    }
    if (t >= 0) H5Tclose(t);
    if (a >= 0) H5Aclose(a);
    return text;
}
