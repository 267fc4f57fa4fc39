/* [scan] positions: arbitrary probe positions (positions.h). */
#include "positions.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../src/stem.h"
#include "input_file.h"

/* One finite decimal number at *s (advanced past it); -1 if none. */
static int position_number(char **s, double *v)
{
    char *end;
    errno = 0;
    *v = strtod(*s, &end);
    if (end == *s || errno || !isfinite(*v) || memchr(*s, 'x', (size_t)(end - *s)) ||
        memchr(*s, 'X', (size_t)(end - *s)))
        return -1;
    *s = end;
    return 0;
}

static int parse_line(const char *path, long line, char *text, double cell_x, double cell_y, double *x, double *y)
{
    char *hash = strchr(text, '#'), *s = text;
    if (hash) *hash = 0;
    if (position_number(&s, x) || position_number(&s, y))
        return STEM_FAIL(STEM_ERR_INPUT, "%s:%ld: expected 'x y' (Angstrom), got '%s'", path, line, text);
    s += strspn(s, " \t\r");
    if (*s) return STEM_FAIL(STEM_ERR_INPUT, "%s:%ld: expected 'x y' (Angstrom), got '%s'", path, line, text);
    if (*x < 0 || *x > cell_x || *y < 0 || *y > cell_y)
        return STEM_FAIL(STEM_ERR_INPUT, "%s:%ld: position (%g, %g) Angstrom lies outside the cell [0, %g] x [0, %g]",
                         path, line, *x, *y, cell_x, cell_y);
    return STEM_OK;
}

static int blank(const char *s)
{
    s += strspn(s, " \t\r");
    return *s == 0 || *s == '#';
}

int stem_positions_read(const char *path, double cell_x, double cell_y, double **xy, long *n)
{
    char *text = NULL;
    size_t len = 0;
    *xy = NULL;
    *n = 0;
    STEM_TRY(stem_input_read_all(path, "probe positions file ([scan] positions)", STEM_ERR_INPUT, &text, &len));
    if (memchr(text, 0, len)) {
        free(text);
        return STEM_FAIL(STEM_ERR_INPUT, "%s: binary data (NUL byte) in a positions text file", path);
    }
    long count = 0, cap = 0, line = 0;
    double *v = NULL;
    int err = STEM_OK;
    for (char *l = text, *next; l && *l && !err; l = next) {
        char *nl = strchr(l, '\n');
        next = nl ? nl + 1 : NULL;
        if (nl) *nl = 0;
        line++;
        if (blank(l)) continue;
        if (count == STEM_MAX_POSITIONS) {
            err = STEM_FAIL(STEM_ERR_INPUT, "%s: more than %ld positions", path, STEM_MAX_POSITIONS);
            break;
        }
        if (count == cap) {
            cap = cap ? 2 * cap : 1024;
            double *more = realloc(v, sizeof(double) * 2 * (size_t)cap);
            if (!more) {
                err = STEM_FAIL(STEM_ERR_MEMORY, "out of memory reading %s", path);
                break;
            }
            v = more;
        }
        err = parse_line(path, line, l, cell_x, cell_y, &v[2 * count], &v[2 * count + 1]);
        count++;
    }
    free(text);
    if (!err && count == 0) err = STEM_FAIL(STEM_ERR_INPUT, "%s: no positions (one 'x y' per line, Angstrom)", path);
    if (err) {
        free(v);
        return err;
    }
    *xy = v;
    *n = count;
    return STEM_OK;
}
