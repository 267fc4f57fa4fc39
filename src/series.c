/* [series] values and the points they form (series.h). */
#include "series.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"

const char *const stem_series_axis_name[STEM_SERIES_N_AXES] = {"tilt_x",      "tilt_y",  "beam_tilt_x",
                                                               "beam_tilt_y", "defocus", "depth"};
const char *const stem_series_axis_units[STEM_SERIES_N_AXES] = {"deg", "deg", "mrad", "mrad", "Angstrom", "Angstrom"};

/* One finite decimal number filling the whole token. */
static int series_number(const char *tok, double *v)
{
    char *end;
    errno = 0;
    *v = strtod(tok, &end);
    return end != tok && !*end && !errno && isfinite(*v) && !strchr(tok, 'x') && !strchr(tok, 'X') ? 0 : -1;
}

static int parse_range(const char *text, const char *what, double **values, int *n)
{
    char buf[256], *a = buf, *b, *c;
    if (strlen(text) >= sizeof buf) return STEM_FAIL(STEM_ERR_CONFIG, "%s: range too long", what);
    strcpy(buf, text);
    b = strchr(a, ':');
    c = b ? strchr(b + 1, ':') : NULL;
    if (!b || !c || strchr(c + 1, ':'))
        return STEM_FAIL(STEM_ERR_CONFIG, "%s = '%s': a range is start:step:stop", what, text);
    *b++ = 0;
    *c++ = 0;
    double start, step, stop;
    if (series_number(a, &start) || series_number(b, &step) || series_number(c, &stop))
        return STEM_FAIL(STEM_ERR_CONFIG, "%s = '%s': start, step and stop must be plain numbers", what, text);
    if (step == 0 || (stop - start) / step < -1e-9)
        return STEM_FAIL(STEM_ERR_CONFIG, "%s = '%s': the step must be non-zero and lead from start to stop", what,
                         text);
    double count = floor((stop - start) / step + 1e-9) + 1;
    if (count > STEM_SERIES_MAX_VALUES)
        return STEM_FAIL(STEM_ERR_CONFIG, "%s = '%s': %.0f values, at most %d", what, text, count,
                         STEM_SERIES_MAX_VALUES);
    *n = (int)count;
    if (!(*values = stem_calloc((size_t)*n, sizeof(double), "series values"))) return STEM_ERR_MEMORY;
    for (int i = 0; i < *n; i++) (*values)[i] = start + i * step; /* not accumulated: no drift */
    return STEM_OK;
}

int stem_series_parse(const char *text, const char *what, double **values, int *n)
{
    *values = NULL;
    *n = 0;
    while (isspace((unsigned char)*text)) text++;
    if (strchr(text, ':')) {
        size_t len = strlen(text);
        while (len && isspace((unsigned char)text[len - 1])) len--;
        char tok[256];
        snprintf(tok, sizeof tok, "%.*s", (int)len, text);
        if (strpbrk(tok, " \t"))
            return STEM_FAIL(STEM_ERR_CONFIG, "%s = '%s': a range is one token start:step:stop", what, text);
        return parse_range(tok, what, values, n);
    }
    char *copy = strdup(text);
    if (!copy) return STEM_FAIL(STEM_ERR_MEMORY, "out of memory parsing %s", what);
    double *v = stem_calloc(STEM_SERIES_MAX_VALUES, sizeof(double), "series values");
    int err = v ? STEM_OK : STEM_ERR_MEMORY, count = 0;
    for (char *save = NULL, *tok = strtok_r(copy, " \t,", &save); tok && !err; tok = strtok_r(NULL, " \t,", &save)) {
        if (count == STEM_SERIES_MAX_VALUES)
            err = STEM_FAIL(STEM_ERR_CONFIG, "%s: more than %d values", what, STEM_SERIES_MAX_VALUES);
        else if (series_number(tok, &v[count++]))
            err = STEM_FAIL(STEM_ERR_CONFIG, "%s: '%s' is not a number (a list is 'a b c', a range start:step:stop)",
                            what, tok);
    }
    if (!err && count == 0) err = STEM_FAIL(STEM_ERR_CONFIG, "%s: no values", what);
    for (int i = 0; !err && i < count; i++)
        for (int j = 0; j < i; j++)
            if (v[i] == v[j]) {
                err = STEM_FAIL(STEM_ERR_CONFIG, "%s: the value %g is given twice", what, v[i]);
                break;
            }
    free(copy);
    if (err) {
        free(v);
        return err;
    }
    *values = v;
    *n = count;
    return STEM_OK;
}

static const char *series_text(const stem_config *cfg, int axis)
{
    const char *t[STEM_SERIES_N_AXES] = {cfg->series_tilt_x,      cfg->series_tilt_y,  cfg->series_beam_tilt_x,
                                         cfg->series_beam_tilt_y, cfg->series_defocus, cfg->depths};
    return t[axis];
}

static const char *series_section(int axis) { return axis == STEM_SERIES_DEPTH ? "output" : "series"; }
static const char *series_key(int axis) { return axis == STEM_SERIES_DEPTH ? "depths" : stem_series_axis_name[axis]; }

int stem_series_active(const stem_config *cfg)
{
    for (int a = 0; a < STEM_SERIES_N_AXES; a++)
        if (series_text(cfg, a)[0]) return 1;
    return cfg->depth_every > 0;
}

void stem_series_free(stem_series *s)
{
    for (int a = 0; a < STEM_SERIES_N_AXES; a++) free(s->v[a]);
    free(s->depth_slice);
    memset(s, 0, sizeof *s);
}

static int count_points(stem_series *s)
{
    double points = 1;
    for (int a = 0; a < STEM_SERIES_N_AXES; a++) points *= s->n[a];
    if (points > 1e7) return STEM_FAIL(STEM_ERR_CONFIG, "[series] and depths: %.0f points, at most 10^7", points);
    s->n_points = (int)points;
    s->n_tilts = s->n[STEM_SERIES_TILT_X] * s->n[STEM_SERIES_TILT_Y];
    return STEM_OK;
}

int stem_series_build(const stem_config *cfg, stem_series *s)
{
    memset(s, 0, sizeof *s);
    /* the exit surface stands for "no depth axis" until depths are resolved */
    const double single[STEM_SERIES_N_AXES] = {
        cfg->tilt_x, cfg->tilt_y, cfg->beam_tilt_mrad[0], cfg->beam_tilt_mrad[1], cfg->aberr_c[STEM_C10], 0};
    for (int a = 0; a < STEM_SERIES_N_AXES; a++) {
        char what[64];
        snprintf(what, sizeof what, "[%s] %s", series_section(a), series_key(a));
        int err = STEM_OK;
        if (series_text(cfg, a)[0]) {
            s->given[a] = 1;
            err = stem_series_parse(series_text(cfg, a), what, &s->v[a], &s->n[a]);
        } else if ((s->v[a] = stem_calloc(1, sizeof(double), "series values"))) {
            s->n[a] = 1;
            s->v[a][0] = single[a];
        } else {
            err = STEM_ERR_MEMORY;
        }
        for (int i = 0; !err && a <= STEM_SERIES_TILT_Y && i < s->n[a]; i++)
            if (fabs(s->v[a][i]) > 180)
                err = STEM_FAIL(STEM_ERR_CONFIG, "%s: %g degrees is outside [-180, 180]", what, s->v[a][i]);
        for (int i = 0; !err && a == STEM_SERIES_DEPTH && s->given[a] && i < s->n[a]; i++)
            if (s->v[a][i] <= 0)
                err = STEM_FAIL(STEM_ERR_CONFIG, "%s: %g Angstrom: a depth must lie below the entrance surface (> 0)",
                                what, s->v[a][i]);
        if (err) {
            stem_series_free(s);
            return err;
        }
    }
    s->given[STEM_SERIES_DEPTH] |= cfg->depth_every > 0; /* values once the slices are known */
    int err = count_points(s);
    if (err) stem_series_free(s);
    return err;
}

/* depth_every = N: slices N, 2N, ... and the last slice. */
static int depths_every(stem_series *s, int every, int slices)
{
    int n = (slices + every - 1) / every;
    if (n > STEM_MAX_DEPTHS)
        return STEM_FAIL(STEM_ERR_CONFIG, "[output] depth_every = %d: %d depths, at most %d", every, n,
                         STEM_MAX_DEPTHS);
    free(s->v[STEM_SERIES_DEPTH]);
    STEM_ALLOC(s->v[STEM_SERIES_DEPTH], n, "depths");
    STEM_ALLOC(s->depth_slice, n, "depths");
    for (int k = 0; k < n; k++) s->depth_slice[k] = k + 1 < n ? (k + 1) * every : slices;
    s->n[STEM_SERIES_DEPTH] = n;
    return STEM_OK;
}

/* Depth of the boundary under slice k of `slices` (the last dz_last thick). */
static double boundary_depth(int k, int slices, double dz, double dz_last)
{
    return k >= slices ? (slices - 1) * dz + dz_last : k * dz;
}

/* The slice boundary nearest to depth d (at least one slice). */
static int nearest_boundary(double d, int slices, double dz, double dz_last)
{
    long k = lround(d / dz);
    if (k < 1) k = 1;
    if (k >= slices - 1) /* near the exit: the thinner last slice moves the last boundary up */
        k = fabs(d - boundary_depth(slices - 1, slices, dz, dz_last)) <
                fabs(d - boundary_depth(slices, slices, dz, dz_last))
            ? slices - 1
            : slices;
    return k < 1 ? 1 : (int)k;
}

/* Given depths: the nearest slice boundary each (at least one slice). */
static int depths_rounded(stem_series *s, double dz, int slices, double dz_last)
{
    int n = s->n[STEM_SERIES_DEPTH];
    double thickness = boundary_depth(slices, slices, dz, dz_last);
    if (n > STEM_MAX_DEPTHS)
        return STEM_FAIL(STEM_ERR_CONFIG, "[output] depths: %d depths, at most %d", n, STEM_MAX_DEPTHS);
    STEM_ALLOC(s->depth_slice, n, "depths");
    for (int k = 0; k < n; k++) {
        double d = s->v[STEM_SERIES_DEPTH][k];
        if (d - thickness >= 0.5 * dz_last)
            return STEM_FAIL(STEM_ERR_CONFIG,
                             "[output] depths: %g Angstrom is below the exit surface: the sample%s has %d "
                             "slices of %g Angstrom (%g Angstrom)",
                             d, s->n_tilts > 1 ? " at its thinnest tilt" : "", slices, dz, thickness);
        int slice = nearest_boundary(d, slices, dz, dz_last);
        if (k > 0 && slice <= s->depth_slice[k - 1])
            return STEM_FAIL(STEM_ERR_CONFIG,
                             "[output] depths: %g Angstrom %s %g Angstrom (slices of %g Angstrom): give "
                             "depths in increasing order, at least one slice apart",
                             d, slice == s->depth_slice[k - 1] ? "falls on the same slice as" : "comes after",
                             s->v[STEM_SERIES_DEPTH][k - 1], dz);
        s->depth_slice[k] = slice;
    }
    return STEM_OK;
}

int stem_series_resolve_depths(stem_series *s, const stem_config *cfg, double thickness)
{
    if (!s->given[STEM_SERIES_DEPTH] || s->depth_slice) return STEM_OK;
    double dz = cfg->slice_thickness, dz_last;
    int slices = stem_slice_count(thickness, dz, &dz_last);
    STEM_TRY(cfg->depth_every > 0 ? depths_every(s, cfg->depth_every, slices) : depths_rounded(s, dz, slices, dz_last));
    for (int k = 0; k < s->n[STEM_SERIES_DEPTH]; k++) {
        double was = s->v[STEM_SERIES_DEPTH][k], now = boundary_depth(s->depth_slice[k], slices, dz, dz_last);
        if (cfg->depth_every == 0 && fabs(was - now) > 1e-9 * dz)
            stem_info("depth %g Angstrom rounded to %g Angstrom (slice %d of %g Angstrom%s)", was, now,
                      s->depth_slice[k], dz,
                      s->depth_slice[k] == slices && dz_last != dz ? ": the exit surface, the last slice thinner" : "");
        s->v[STEM_SERIES_DEPTH][k] = now;
    }
    return count_points(s);
}

/* One axis's beam tilts onto its Fourier pixels (k / L in 1/Angstrom, theta = lambda q). */
static int beam_axis_on_grid(stem_series *s, int a, double lambda, double length)
{
    for (int i = 0; i < s->n[a]; i++) {
        double was = s->v[a][i], now = lround(was * 1e-3 / lambda * length) / length * lambda * 1e3;
        if (fabs(was - now) > 1e-9 * (fabs(was) + 1))
            stem_info("[series] %s %g mrad rounded to %g mrad (the nearest plane wave of the %g Angstrom cell)",
                      stem_series_axis_name[a], was, now, length);
        for (int j = 0; j < i; j++)
            if (fabs(s->v[a][j] - now) <= 1e-9 * (fabs(now) + 1))
                return STEM_FAIL(STEM_ERR_CONFIG,
                                 "[series] %s: %g mrad falls on the same plane wave (%g mrad) as an "
                                 "earlier value: on the %g Angstrom cell the plane waves are %.3g mrad apart",
                                 stem_series_axis_name[a], was, now, length, lambda / length * 1e3);
        s->v[a][i] = now;
    }
    return STEM_OK;
}

int stem_series_resolve_beam_tilts(stem_series *s, double lambda, const double cell[2], double q_limit)
{
    if (!s->given[STEM_SERIES_BEAM_X] && !s->given[STEM_SERIES_BEAM_Y]) return STEM_OK;
    for (int a = STEM_SERIES_BEAM_X; a <= STEM_SERIES_BEAM_Y; a++)
        STEM_TRY(beam_axis_on_grid(s, a, lambda, cell[a - STEM_SERIES_BEAM_X]));
    double reach = 0; /* the farthest (x, y) pair from the axis */
    for (int i = 0; i < s->n[STEM_SERIES_BEAM_X]; i++)
        for (int j = 0; j < s->n[STEM_SERIES_BEAM_Y]; j++) {
            double r = hypot(s->v[STEM_SERIES_BEAM_X][i], s->v[STEM_SERIES_BEAM_Y][j]);
            if (r > reach) reach = r;
        }
    if (reach * 1e-3 / lambda >= q_limit)
        return STEM_FAIL(STEM_ERR_CONFIG,
                         "[series] beam tilts reach %.1f mrad, beyond the anti-aliased band (%.1f mrad): "
                         "use smaller tilts or a smaller pixel_size",
                         reach, q_limit * lambda * 1e3);
    return STEM_OK;
}

int stem_series_per_tilt(const stem_series *s)
{
    return s->n[STEM_SERIES_BEAM_X] * s->n[STEM_SERIES_BEAM_Y] * s->n[STEM_SERIES_DEFOCUS] * s->n[STEM_SERIES_DEPTH];
}

int stem_series_tilt_of(const stem_series *s, int p) { return p / stem_series_per_tilt(s); }

void stem_series_tilt_values(const stem_series *s, int t, double *tilt_x, double *tilt_y)
{
    int ny = s->n[STEM_SERIES_TILT_Y];
    *tilt_y = s->v[STEM_SERIES_TILT_Y][t % ny];
    *tilt_x = s->v[STEM_SERIES_TILT_X][t / ny];
}

void stem_series_values(const stem_series *s, int p, double *tilt_x, double *tilt_y, double *defocus)
{
    int per = stem_series_per_tilt(s), nz = s->n[STEM_SERIES_DEPTH];
    stem_series_tilt_values(s, p / per, tilt_x, tilt_y);
    *defocus = s->v[STEM_SERIES_DEFOCUS][p % per / nz % s->n[STEM_SERIES_DEFOCUS]];
}

void stem_series_beam_values(const stem_series *s, int p, double *beam_x, double *beam_y)
{
    int per = stem_series_per_tilt(s), beam = p % per / (s->n[STEM_SERIES_DEFOCUS] * s->n[STEM_SERIES_DEPTH]);
    int ny = s->n[STEM_SERIES_BEAM_Y];
    *beam_y = s->v[STEM_SERIES_BEAM_Y][beam % ny];
    *beam_x = s->v[STEM_SERIES_BEAM_X][beam / ny];
}
