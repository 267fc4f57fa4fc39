/* Stored datasets read back: see stored_file.h. */
#include "config.h"
#include "stored_file.h"

#include <ini.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/stem.h"
#include "h5_collective.h"
#include "input_file.h"

int stem_stored_open_file(const stem_stored *s, hid_t *file)
{
    *file = H5I_INVALID_HID;
    FILE *probe; /* HDF5 would open a FIFO blocking, and wait for a writer forever */
    STEM_TRY(stem_input_open(s->path, s->key, STEM_ERR_INPUT, &probe));
    fclose(probe);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    *file = H5Fopen(s->path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (*file < 0) return STEM_FAIL(STEM_ERR_INPUT, "%s %s: cannot open it as an HDF5 file", s->key, s->path);
    return STEM_OK;
}

int stem_stored_open_dataset(const stem_stored *s, hid_t file, hid_t *dset)
{
    *dset = H5Dopen2(file, s->dataset, H5P_DEFAULT);
    if (*dset < 0)
        return STEM_FAIL(STEM_ERR_INPUT, "%s %s: no dataset %s (write it with %s = true%s)", s->key, s->path,
                         s->dataset, s->writer,
                         strstr(s->dataset, "_tilts/") ? " in a campaign over the same tilts: a campaign "
                                                         "reads one dataset per tilt, not a single run's"
                                                       : "");
    return STEM_OK;
}

int stem_stored_open(const stem_stored *s, hid_t *file, hid_t *dset)
{
    *dset = H5I_INVALID_HID;
    STEM_TRY(stem_stored_open_file(s, file));
    return stem_stored_open_dataset(s, *file, dset);
}

void stem_stored_close(hid_t file, hid_t dset)
{
    if (dset >= 0) H5Dclose(dset);
    if (file >= 0) H5Fclose(file);
}

int stem_stored_dims(const stem_stored *s, hid_t dset, int rank, const char *axes, hsize_t *dims)
{
    hid_t space = H5Dget_space(dset);
    int got = space >= 0 ? H5Sget_simple_extent_ndims(space) : -1;
    if (got == rank) H5Sget_simple_extent_dims(space, dims, NULL);
    if (space >= 0) H5Sclose(space);
    if (got != rank)
        return STEM_FAIL(STEM_ERR_INPUT, "%s %s: %s has %d dimensions, expected %d (%s)", s->key, s->path, s->dataset,
                         got, rank, axes);
    return STEM_OK;
}

int stem_stored_attr(const stem_stored *s, hid_t dset, const char *name, double *value)
{
    hid_t a = H5Aopen(dset, name, H5P_DEFAULT);
    int ok = a >= 0 && H5Aread(a, H5T_NATIVE_DOUBLE, value) >= 0;
    if (a >= 0) H5Aclose(a);
    return ok ? STEM_OK : STEM_FAIL(STEM_ERR_INPUT, "%s %s: %s has no attribute %s", s->key, s->path, s->dataset, name);
}

int stem_stored_match(const stem_stored *s, hid_t dset, const char *attr, double want, const char *what)
{
    double got;
    STEM_TRY(stem_stored_attr(s, dset, attr, &got));
    if (fabs(got - want) <= 1e-9 * fmax(fabs(got), fabs(want))) return STEM_OK;
    return STEM_FAIL(STEM_ERR_INPUT, "%s %s: %s %.6g, this run's is %.6g", s->key, s->path, what, got, want);
}

/* The first value of n floats that is not finite (-1: none). */
static long first_not_finite(const float *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i])) return (long)i;
    return -1;
}

int stem_stored_read(const stem_stored *s, int rank, const hsize_t *start, const hsize_t *count, hid_t mem_type,
                     void *buf)
{
    hid_t file, dset, fspace = H5I_INVALID_HID, mspace = H5I_INVALID_HID;
    int err = stem_stored_open(s, &file, &dset);
    if (!err) {
        fspace = H5Dget_space(dset);
        mspace = H5Screate_simple(rank, count, NULL);
        if (fspace < 0 || mspace < 0 || H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, count, NULL) < 0 ||
            H5Dread(dset, mem_type, mspace, fspace, H5P_DEFAULT, buf) < 0)
            err = STEM_FAIL(STEM_ERR_INPUT, "%s %s: cannot read %s (item %llu, %llu)", s->key, s->path, s->dataset,
                            (unsigned long long)start[0], (unsigned long long)start[1]);
    }
    if (mspace >= 0) H5Sclose(mspace);
    if (fspace >= 0) H5Sclose(fspace);
    stem_stored_close(file, dset);
    size_t n = 1;
    for (int d = 0; d < rank; d++) n *= count[d];
    long bad = !err && H5Tequal(mem_type, H5T_NATIVE_FLOAT) > 0 ? first_not_finite(buf, n) : -1;
    if (bad >= 0)
        err = STEM_FAIL(STEM_ERR_INPUT,
                        "%s %s: %s holds %g (not a finite number) in item (%llu, %llu): the file is "
                        "damaged; write it again",
                        s->key, s->path, s->dataset, ((const float *)buf)[bad], (unsigned long long)start[0],
                        (unsigned long long)(start[1] + (size_t)bad / (n / count[1])));
    return err;
}

/* The stored values as stemsim wrote them: float32, whatever filters they passed through
 * available here (an int8 or float16 copy would be read, converted, 35% off). */
static int stored_type(const stem_stored *s, hid_t dset)
{
    hid_t type = H5Dget_type(dset);
    int float32 = type >= 0 && H5Tget_class(type) == H5T_FLOAT && H5Tget_size(type) == 4;
    size_t bits = type >= 0 ? 8 * H5Tget_size(type) : 0;
    H5T_class_t cls = type >= 0 ? H5Tget_class(type) : H5T_NO_CLASS;
    if (type >= 0) H5Tclose(type);
    if (!float32)
        return STEM_FAIL(STEM_ERR_INPUT,
                         "%s %s: %s is stored as %zu-bit %s, not the float32 stemsim writes: a converted copy "
                         "loses the potential's precision; write it again with %s",
                         s->key, s->path, s->dataset, bits, cls == H5T_INTEGER ? "integers" : "values", s->writer);
    hid_t dcpl = H5Dget_create_plist(dset);
    int n = dcpl >= 0 ? H5Pget_nfilters(dcpl) : 0, err = STEM_OK;
    for (int i = 0; i < n && !err; i++) {
        unsigned flags, conf;
        size_t nv = 0;
        char name[64] = "";
        H5Z_filter_t id = H5Pget_filter2(dcpl, (unsigned)i, &flags, &nv, NULL, sizeof name, name, &conf);
        if (id >= 0 && H5Zfilter_avail(id) <= 0)
            err = STEM_FAIL(STEM_ERR_INPUT,
                            "%s %s: %s is compressed with HDF5 filter %d (%s), which this HDF5 library lacks: "
                            "install its plugin (HDF5_PLUGIN_PATH) or store it uncompressed (h5repack -f NONE)",
                            s->key, s->path, s->dataset, (int)id, name[0] ? name : "unnamed");
    }
    if (dcpl >= 0) H5Pclose(dcpl);
    return err;
}

/* Whether every value of dset was written: contiguous, its space allocated; chunked (compressed
 * chunks take less space than their values), every chunk present. */
static int fully_written(hid_t dset, int *partly)
{
    hid_t dcpl = H5Dget_create_plist(dset), space = H5Dget_space(dset);
    int chunked = dcpl >= 0 && H5Pget_layout(dcpl) == H5D_CHUNKED, ok = 0;
    *partly = 0;
    if (chunked && space >= 0) {
        hsize_t dims[8], chunk[8], want = 1, have = 0;
        int rank = H5Sget_simple_extent_dims(space, dims, NULL);
        if (rank > 0 && rank <= 8 && H5Pget_chunk(dcpl, rank, chunk) == rank &&
            H5Dget_num_chunks(dset, space, &have) >= 0) {
            for (int d = 0; d < rank; d++) want *= (dims[d] + chunk[d] - 1) / chunk[d];
            ok = have == want;
            *partly = have > 0 && !ok;
        }
    } else {
        H5D_space_status_t status = H5D_SPACE_STATUS_ERROR;
        ok = H5Dget_space_status(dset, &status) >= 0 && status == H5D_SPACE_STATUS_ALLOCATED;
        *partly = status == H5D_SPACE_STATUS_PART_ALLOCATED;
    }
    if (space >= 0) H5Sclose(space);
    if (dcpl >= 0) H5Pclose(dcpl);
    return ok;
}

int stem_stored_verify(const stem_stored *s, hid_t file, hid_t dset)
{
    int complete = 0;
    hid_t a = H5Aexists(file, "complete") > 0 ? H5Aopen(file, "complete", H5P_DEFAULT) : H5I_INVALID_HID;
    if (a >= 0 && H5Aread(a, H5T_NATIVE_INT, &complete) < 0) complete = 0;
    if (a >= 0) H5Aclose(a);
    if (complete != 1)
        return STEM_FAIL(STEM_ERR_INPUT,
                         "%s %s: the file has no complete mark (root attribute complete = 1, which "
                         "stemsim writes last): the run that wrote it did not finish, or it is not a stemsim output",
                         s->key, s->path);
    STEM_TRY(stored_type(s, dset));
    int partly;
    if (!fully_written(dset, &partly))
        return STEM_FAIL(STEM_ERR_INPUT,
                         "%s %s: %s was declared but %s written (it would read as zeros): the file "
                         "is damaged; write it again with %s",
                         s->key, s->path, s->dataset, partly ? "only partly" : "never", s->writer);
    return STEM_OK;
}

char *stem_stored_record(hid_t file, const char *name)
{
    char *text = stem_h5_attr_read_text(file, name), emd_name[64];
    if (text || H5Lexists(file, "/4DSTEM_simulation", H5P_DEFAULT) <= 0 ||
        H5Lexists(file, "/4DSTEM_simulation/log", H5P_DEFAULT) <= 0)
        return text;
    hid_t log = H5Gopen2(file, "/4DSTEM_simulation/log", H5P_DEFAULT);
    snprintf(emd_name, sizeof emd_name, "stemsim_%s", name);
    text = stem_h5_attr_read_text(log, emd_name);
    if (log >= 0) H5Gclose(log);
    return text;
}

/* One key looked up in an INI text (inih: whitespace trimmed). */
typedef struct {
    const char *section, *key;
    char value[256];
    int found;
} key_lookup;

static int lookup_handler(void *user, const char *section, const char *name, const char *value)
{
    key_lookup *k = user;
    if (!strcmp(section, k->section) && !strcmp(name, k->key)) {
        snprintf(k->value, sizeof k->value, "%s", value);
        k->found = 1;
    }
    return 1;
}

/* Numbers compare as numbers (to 1e-9 relative: the texts are %.17g), anything else as text. */
static int same_value(const char *a, const char *b)
{
    char *ea, *eb;
    double x = strtod(a, &ea), y = strtod(b, &eb);
    if (ea != a && !*ea && eb != b && !*eb) return fabs(x - y) <= 1e-9 * fmax(fabs(x), fabs(y));
    return !strcmp(a, b);
}

static int check_key(const stem_stored *s, const char *text, const stem_config *cfg, const stem_config *defaults,
                     const stem_stored_key *k, const char *why)
{
    key_lookup stored = {k->section, k->key, "", 0};
    char mine[256];
    if (ini_parse_string(text, lookup_handler, &stored) < 0 ||
        stem_config_value(cfg, k->section, k->key, mine, sizeof mine))
        return STEM_FAIL(STEM_ERR_INTERNAL, "internal error (please report): [%s] %s cannot be compared", k->section,
                         k->key);
    if (!stored.found && stem_config_value(defaults, k->section, k->key, stored.value, sizeof stored.value))
        return STEM_FAIL(STEM_ERR_INTERNAL, "internal error (please report): [%s] %s has no default", k->section,
                         k->key);
    if (same_value(mine, stored.value)) return STEM_OK;
    return STEM_FAIL(STEM_ERR_CONFIG,
                     "%s: [%s] %s = %s, but %s %s was written with %s = %s: %s; set %s = %s as when "
                     "it was written, or run without %s",
                     cfg->config_path, k->section, k->key, mine, s->key, s->path, k->key, stored.value, why, k->key,
                     stored.value, s->key);
}

int stem_stored_check_keys(const stem_stored *s, hid_t file, const stem_config *cfg, const stem_stored_key *keys,
                           int n_keys, const char *why)
{
    char *text = stem_stored_record(file, "config");
    if (!text)
        return STEM_FAIL(STEM_ERR_INPUT,
                         "%s %s: the file does not record the config that wrote it (root attribute "
                         "config): not a stemsim output, so what it was made with cannot be checked",
                         s->key, s->path);
    stem_config *defaults = stem_alloc(sizeof *defaults, "default config");
    int err = defaults ? STEM_OK : STEM_ERR_MEMORY;
    if (defaults) stem_config_defaults(defaults);
    for (int i = 0; !err && i < n_keys; i++)
        if (!keys[i].thermal_only || cfg->opt.thermal) err = check_key(s, text, cfg, defaults, &keys[i], why);
    free(defaults);
    free(text);
    return err;
}

void stem_stored_tilt_dataset(const char *group, int index, char *out, size_t n)
{
    snprintf(out, n, "%s/tilt_%d", group, index);
}

int stem_stored_check_tilt(const stem_stored *s, hid_t file, hid_t dset, const char *group,
                           const stem_stored_tilt *tilt)
{
    int count = -1;
    hid_t g = H5Oopen(file, group, H5P_DEFAULT);
    hid_t a = g >= 0 && H5Aexists(g, "tilts") > 0 ? H5Aopen(g, "tilts", H5P_DEFAULT) : H5I_INVALID_HID;
    if (a >= 0 && H5Aread(a, H5T_NATIVE_INT, &count) < 0) count = -1;
    if (a >= 0) H5Aclose(a);
    if (g >= 0) H5Oclose(g);
    if (count != tilt->count)
        return STEM_FAIL(STEM_ERR_INPUT,
                         "%s %s: %s stores %d sample tilts, this campaign has %d (its [series] "
                         "tilts must be the ones it was written with)",
                         s->key, s->path, group, count, tilt->count);
    static const char *axis[2] = {"tilt_x_deg", "tilt_y_deg"};
    for (int k = 0; k < 2; k++) {
        double got;
        STEM_TRY(stem_stored_attr(s, dset, axis[k], &got));
        if (fabs(got - tilt->deg[k]) > 1e-9 * fmax(fabs(got), fabs(tilt->deg[k])))
            return STEM_FAIL(STEM_ERR_INPUT,
                             "%s %s: tilt %d of the campaign has %s %.9g, the file's %s %.9g (its "
                             "[series] tilts must be the ones it was written with)",
                             s->key, s->path, tilt->index, axis[k], tilt->deg[k], s->dataset, got);
    }
    return STEM_OK;
}
