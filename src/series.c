/* [series] values and the points they form (series.h). */
#include "series.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const stem_series_axis_name[STEM_SERIES_N_AXES] = {"tilt_x", "tilt_y", "defocus"};
const char *const stem_series_axis_units[STEM_SERIES_N_AXES] = {"deg", "deg", "Angstrom"};

/* One finite decimal number filling the whole token. */
static int number(const char *tok, double *v)
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
    if (number(a, &start) || number(b, &step) || number(c, &stop))
        return STEM_FAIL(STEM_ERR_CONFIG, "%s = '%s': start, step and stop must be plain numbers", what, text);
    if (step == 0 || (stop - start) / step < -1e-9)
        return STEM_FAIL(STEM_ERR_CONFIG, "%s = '%s': the step must be non-zero and lead from start to stop", what, text);
    double count = floor((stop - start) / step + 1e-9) + 1;
    if (count > STEM_SERIES_MAX_VALUES)
        return STEM_FAIL(STEM_ERR_CONFIG, "%s = '%s': %.0f values, at most %d", what, text, count, STEM_SERIES_MAX_VALUES);
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
        if (strpbrk(tok, " \t")) return STEM_FAIL(STEM_ERR_CONFIG, "%s = '%s': a range is one token start:step:stop", what, text);
        return parse_range(tok, what, values, n);
    }
    char *copy = strdup(text);
    if (!copy) return STEM_FAIL(STEM_ERR_MEMORY, "out of memory parsing %s", what);
    double *v = stem_calloc(STEM_SERIES_MAX_VALUES, sizeof(double), "series values");
    int err = v ? STEM_OK : STEM_ERR_MEMORY, count = 0;
    for (char *save = NULL, *tok = strtok_r(copy, " \t,", &save); tok && !err; tok = strtok_r(NULL, " \t,", &save)) {
        if (count == STEM_SERIES_MAX_VALUES)
            err = STEM_FAIL(STEM_ERR_CONFIG, "%s: more than %d values", what, STEM_SERIES_MAX_VALUES);
        else if (number(tok, &v[count++]))
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
    const char *t[STEM_SERIES_N_AXES] = {cfg->series_tilt_x, cfg->series_tilt_y, cfg->series_defocus};
    return t[axis];
}

int stem_series_active(const stem_config *cfg)
{
    for (int a = 0; a < STEM_SERIES_N_AXES; a++)
        if (series_text(cfg, a)[0]) return 1;
    return 0;
}

void stem_series_free(stem_series *s)
{
    for (int a = 0; a < STEM_SERIES_N_AXES; a++) free(s->v[a]);
    memset(s, 0, sizeof *s);
}

int stem_series_build(const stem_config *cfg, stem_series *s)
{
    memset(s, 0, sizeof *s);
    const double single[STEM_SERIES_N_AXES] = {cfg->tilt_x, cfg->tilt_y, cfg->aberr_c[STEM_C10]};
    double points = 1;
    for (int a = 0; a < STEM_SERIES_N_AXES; a++) {
        char what[64];
        snprintf(what, sizeof what, "[series] %s", stem_series_axis_name[a]);
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
        for (int i = 0; !err && a < STEM_SERIES_DEFOCUS && i < s->n[a]; i++)
            if (fabs(s->v[a][i]) > 180)
                err = STEM_FAIL(STEM_ERR_CONFIG, "%s: %g degrees is outside [-180, 180]", what, s->v[a][i]);
        if (err) {
            stem_series_free(s);
            return err;
        }
        points *= s->n[a];
    }
    if (points > 1e7) {
        stem_series_free(s);
        return STEM_FAIL(STEM_ERR_CONFIG, "[series]: %.0f points, at most 10^7", points);
    }
    s->n_points = (int)points;
    s->n_tilts = s->n[STEM_SERIES_TILT_X] * s->n[STEM_SERIES_TILT_Y];
    return STEM_OK;
}

int stem_series_tilt_of(const stem_series *s, int p) { return p / s->n[STEM_SERIES_DEFOCUS]; }

void stem_series_values(const stem_series *s, int p, double *tilt_x, double *tilt_y, double *defocus)
{
    int nd = s->n[STEM_SERIES_DEFOCUS], ny = s->n[STEM_SERIES_TILT_Y];
    int t = p / nd;
    *defocus = s->v[STEM_SERIES_DEFOCUS][p % nd];
    *tilt_y = s->v[STEM_SERIES_TILT_Y][t % ny];
    *tilt_x = s->v[STEM_SERIES_TILT_X][t / ny];
}
