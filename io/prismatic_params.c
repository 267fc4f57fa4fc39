/* Prismatic parameters to config.ini (see prismatic_params.h): the conversion's entries, reading
 * the parameter file and the command line through the option table (prismatic_options.c), what
 * depends on several options, and the config written. */
#include "prismatic_params.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../src/config.h"
#include "../src/stem.h"
#include "input_file.h"
#include "../src/aberrations.h"
#include "prismatic_private.h"

#define MAX_TOKENS 64

void stem_prismatic_set(conversion *c, const char *section, const char *key, const char *fmt, ...)
{
    char value[sizeof c->e[0].value];
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(value, sizeof value, fmt, ap);
    va_end(ap);
    if (len < 0 || (size_t)len >= sizeof value) {
        snprintf(c->overflow, sizeof c->overflow, "[%s] %s", section, key);
        return;
    }
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->e[i].section, section) && !strcmp(c->e[i].key, key)) {
            snprintf(c->e[i].value, sizeof c->e[i].value, "%s", value);
            return;
        }
    if (c->n == MAX_ENTRIES) {
        snprintf(c->overflow, sizeof c->overflow, "[%s] %s", section, key);
        return;
    }
    snprintf(c->e[c->n].section, sizeof c->e[c->n].section, "%s", section);
    snprintf(c->e[c->n].key, sizeof c->e[c->n].key, "%s", key);
    snprintf(c->e[c->n].value, sizeof c->e[c->n].value, "%s", value);
    c->n++;
}

void stem_prismatic_note(conversion *c, const char *fmt, ...)
{
    if (c->n_notes == MAX_NOTES) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->notes[c->n_notes++], sizeof c->notes[0], fmt, ap);
    va_end(ap);
}

/* The value of a key already set (NULL: not set). */
const char *stem_prismatic_get(const conversion *c, const char *section, const char *key)
{
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->e[i].section, section) && !strcmp(c->e[i].key, key)) return c->e[i].value;
    return NULL;
}

void stem_prismatic_unset(conversion *c, const char *section, const char *key)
{
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->e[i].section, section) && !strcmp(c->e[i].key, key)) {
            memmove(&c->e[i], &c->e[i + 1], sizeof c->e[0] * (size_t)(c->n - i - 1));
            c->n--;
            return;
        }
}

/* Shortest text that reads back as the same double ("%g" keeps 6 digits only). */
numtext stem_prismatic_text(double v)
{
    numtext t;
    for (int digits = 6; digits <= 17; digits++) {
        snprintf(t.s, sizeof t.s, "%.*g", digits, v);
        if (strtod(t.s, NULL) == v) break;
    }
    if (!strcmp(t.s, "-0")) strcpy(t.s, "0");
    return t;
}

/* ------------------------------------- reading (prismatic_options.c: each option) */

/* Options with their values, in order; a value may be negative (-df -50). */
static int apply_tokens(conversion *c, int n, char **tok)
{
    for (int i = 0; i < n;) {
        const char *name = tok[i];
        if (!strcmp(name, "-pf") || !strcmp(name, "--param-file"))
            return STEM_FAIL(STEM_ERR_CONFIG, "%s: give the parameter file as stemsim --from-prismatic FILE, not %s",
                             c->where, name);
        const option *o = stem_prismatic_option(name);
        if (!o)
            return STEM_FAIL(STEM_ERR_CONFIG, "%s: '%s' is not a Prismatic 2.0 option (see prismatic --help)", c->where,
                             name);
        if (i + o->nargs >= n + (o->nargs == 0))
            return STEM_FAIL(STEM_ERR_CONFIG, "%s: %s needs %d value%s", c->where, name, o->nargs,
                             o->nargs == 1 ? "" : "s");
        STEM_TRY(o->h(c, name, &tok[i + 1]));
        i += 1 + o->nargs;
    }
    return STEM_OK;
}

/* One line "--option: values" (Prismatic's writeParamFile); blank lines and '#' comments skipped. */
static int apply_line(conversion *c, char *line)
{
    while (isspace((unsigned char)*line)) line++;
    if (!*line || *line == '#') return STEM_OK;
    char *colon = strchr(line, ':');
    if (!colon) return STEM_FAIL(STEM_ERR_CONFIG, "%s: expected '--option: values'", c->where);
    *colon = ' ';
    char *tok[MAX_TOKENS], *save = NULL;
    int n = 0;
    for (char *t = strtok_r(line, " \t\r\n,", &save); t && n < MAX_TOKENS; t = strtok_r(NULL, " \t\r\n,", &save))
        tok[n++] = t;
    return apply_tokens(c, n, tok);
}

/* One line into buf (without its '\n'): 1 a line, 0 the end, -1 longer than the buffer,
 * -2 a NUL byte (not a text file), -3 a read error (a directory, an I/O error). */
static int read_line(FILE *f, char *buf, size_t cap)
{
    size_t n = 0;
    int ch, nul = 0;
    while ((ch = getc(f)) != EOF && ch != '\n') {
        if (n + 1 == cap) return -1;
        if (ch == 0) nul = 1;
        buf[n++] = (char)ch;
    }
    buf[n] = 0;
    if (ch == EOF && ferror(f)) return -3;
    if (nul) return -2;
    return ch == EOF && n == 0 ? 0 : 1;
}

static int apply_file(conversion *c, const char *path)
{
    FILE *f; /* without blocking: a FIFO, device (/dev/zero) or directory is refused by name */
    STEM_TRY(stem_input_open(path, "--from-prismatic parameter file", STEM_ERR_INPUT, &f));
    char line[4096], where[PATH_MAX + 32];
    int err = STEM_OK, got;
    c->params_file = path;
    for (int no = 1; !err && (got = read_line(f, line, sizeof line)) != 0; no++) {
        snprintf(where, sizeof where, "%s:%d", path, no);
        c->where = where;
        if (got == -3)
            err = STEM_FAIL(STEM_ERR_INPUT, "--from-prismatic: cannot read %s: %s", path, strerror(errno));
        else if (got == -2)
            err = STEM_FAIL(STEM_ERR_INPUT, "%s: a NUL byte: not a Prismatic parameter file (text)", where);
        else if (got == -1)
            err = STEM_FAIL(STEM_ERR_INPUT, "%s: line longer than %zu characters: not a Prismatic parameter file",
                            where, sizeof line - 1);
        else
            err = apply_line(c, line);
    }
    fclose(f);
    return err;
}

/* ------------------------------------------------- resolved at the end */

static int absolute_path(conversion *c, const char *section, const char *key);

/* Prismatic's aberration file: a comment line, then "p s mag angle" per line (commas allowed;
 * a line of 3 characters or fewer ends it): chi += mag (lambda q)^p cos(s (phi - angle)), mag
 * in radians, angle in degrees (Prismatic's aberration.cpp). stemsim's C_nm with n = p - 1,
 * m = s gives chi += 2 pi / lambda C_nm alpha^(n+1) / (n+1) cos(m (phi - phi_nm)), so
 * C_nm = mag p lambda / (2 pi) Angstrom and phi_nm = angle. */
static int aberration_line(conversion *c, const char *where, char *line, double lambda)
{
    for (char *k = line; *k; k++) *k = *k == ',' ? ' ' : *k;
    int p, s, used;
    double mag, angle;
    if (sscanf(line, "%d %d %lf %lf %n", &p, &s, &mag, &angle, &used) != 4 || line[used] || !isfinite(mag) ||
        !isfinite(angle))
        return STEM_FAIL(STEM_ERR_CONFIG, "%s: '%s': expected 'm n magnitude angle' (Prismatic's aberration line)",
                         where, line);
    if (p < s || (p + s) % 2) { /* Prismatic drops these silently (not in its basis): said here */
        stem_prismatic_note(
            c,
            "%s: aberration m = %d, n = %d is not in Prismatic's basis (m >= n, m + n even): Prismatic ignores it, "
            "so does this config",
            where, p, s);
        return STEM_OK;
    }
    int k = -1;
    for (int i = 0; i < STEM_N_ABERR; i++)
        if (stem_aberration_orders[i].n == p - 1 && stem_aberration_orders[i].m == s) k = i;
    if (k < 0)
        return STEM_FAIL(STEM_ERR_CONFIG,
                         "%s: aberration m = %d, n = %d (C%d%d) has no stemsim coefficient (C10, C12, "
                         "C21, C23, C30 ... C56)%s",
                         where, p, s, p - 1, s, p == 1 ? ": it is a shift of the probe; move the scan instead" : "");
    char key[32], phi[32];
    snprintf(key, sizeof key, "C%d%d", p - 1, s);
    snprintf(phi, sizeof phi, "phi%d%d", p - 1, s);
    if ((k == STEM_C10 && c->df_set) || (k == STEM_C30 && c->c30_set) || (k == STEM_C50 && c->c50_set)) {
        stem_prismatic_note(c, "%s: %s from the aberration file is replaced by -df/-C3/-C5, as Prismatic does", where,
                            key);
        return STEM_OK;
    }
    stem_prismatic_set(c, "probe", key, "%s", stem_prismatic_text(mag * p * lambda / (2 * M_PI)).s);
    if (s) stem_prismatic_set(c, "probe", phi, "%s", stem_prismatic_text(angle).s);
    return STEM_OK;
}

static int aberrations_resolve(conversion *c)
{
    if (!c->aberrations[0]) return STEM_OK;
    stem_prismatic_set(c, "probe", "aberrations_file", "%s", c->aberrations); /* resolved like -i, then read */
    STEM_TRY(absolute_path(c, "probe", "aberrations_file"));
    char path[STEM_PATH_MAX + 8], line[4096], where[STEM_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s", stem_prismatic_get(c, "probe", "aberrations_file"));
    stem_prismatic_unset(c, "probe", "aberrations_file");
    double kev = strtod(stem_prismatic_get(c, "beam", "energy"), NULL), volts = 1e3 * kev;
    double lambda = 12.2642598 / sqrt(volts * (1 + 0.97847538e-6 * volts)); /* Angstrom, relativistic */
    FILE *f;
    STEM_TRY(stem_input_open(path, "--from-prismatic aberration file (-aber)", STEM_ERR_INPUT, &f));
    int err = read_line(f, line, sizeof line) == 1
        ? STEM_OK /* the comment line */
        : STEM_FAIL(STEM_ERR_INPUT, "%s: no comment line: not a Prismatic aberration file", path);
    for (int no = 2, got; !err && (got = read_line(f, line, sizeof line)) == 1; no++) {
        char *t = line + strspn(line, " \t\r");
        size_t n = strlen(t);
        while (n && strchr(" \t\r", t[n - 1])) t[--n] = 0;
        if (n <= 3) break; /* Prismatic stops at a short line */
        snprintf(where, sizeof where, "%s:%d", path, no);
        err = aberration_line(c, where, t, lambda);
    }
    fclose(f);
    return err;
}

/* A relative model path as Prismatic resolves it (from the directory it runs in, which
 * --from-prismatic takes to be the current one), written absolute because stemsim reads
 * [sample] xyz relative to the config file. If it is not there but beside the parameter
 * file, that one is taken, and said. */
static int absolute_path(conversion *c, const char *section, const char *key)
{
    const char *p = stem_prismatic_get(c, section, key);
    if (!p || p[0] == '/') return STEM_OK;
    char rel[sizeof c->e[0].value], cwd[PATH_MAX], beside[sizeof rel];
    snprintf(rel, sizeof rel, "%s", p);
    const char *slash = c->params_file ? strrchr(c->params_file, '/') : NULL;
    if (access(rel, F_OK) != 0 && slash &&
        snprintf(beside, sizeof beside, "%.*s/%s", (int)(slash - c->params_file), c->params_file, rel) <
            (int)sizeof beside &&
        access(beside, F_OK) == 0) {
        stem_prismatic_note(c, "%s '%s' is not in the current directory but beside the parameter file: %s taken", key,
                            rel, beside);
        memcpy(rel, beside, sizeof rel);
        if (rel[0] == '/') {
            stem_prismatic_set(c, section, key, "%s", rel);
            return STEM_OK;
        }
    }
    if (!getcwd(cwd, sizeof cwd))
        return STEM_FAIL(STEM_ERR_CONFIG,
                         "--from-prismatic: [%s] %s = '%s' is relative and the current directory "
                         "cannot be named (%s): give an absolute path",
                         section, key, rel, strerror(errno));
    stem_prismatic_set(c, section, key, "%s/%s", cwd, rel);
    return STEM_OK;
}

/* The model's cell (its second line) times the tiles, for a window given in Angstrom
 * along one axis and fractional along the other. */
static int model_extent(conversion *c, int axis, double *extent)
{
    const char *path = stem_prismatic_get(c, "sample", "xyz"),
               *tile = stem_prismatic_get(c, "sample", axis ? "tile_y" : "tile_x");
    FILE *f;
    STEM_TRY(stem_input_open(path, "model (for the scan window's cell)", STEM_ERR_CONFIG, &f));
    char line[4096];
    double cell[3];
    int ok = read_line(f, line, sizeof line) == 1 && read_line(f, line, sizeof line) == 1 &&
        sscanf(line, "%lf %lf %lf", &cell[0], &cell[1], &cell[2]) == 3 && cell[axis] > 0 && isfinite(cell[axis]);
    fclose(f);
    if (!ok)
        return STEM_FAIL(STEM_ERR_CONFIG,
                         "--from-prismatic: %s: no cell 'a b c' on the second line, which the scan "
                         "window needs",
                         path);
    *extent = cell[axis] * (tile ? strtod(tile, NULL) : 1);
    return STEM_OK;
}

/* stemsim's [scan] has one unit for both axes; Prismatic's each axis its own. */
static int window_resolve(conversion *c)
{
    window *w = c->win;
    int real_x = w[0].real_given, real_y = w[1].real_given;
    if (!real_x && !real_y && !w[0].frac_given && !w[1].frac_given) return STEM_OK;
    static const char *const start[2] = {"x_start", "y_start"}, *const end[2] = {"x_end", "y_end"};
    if (real_x && real_y) {
        stem_prismatic_set(c, "scan", "units", "angstrom");
        for (int a = 0; a < 2; a++) {
            stem_prismatic_set(c, "scan", start[a], "%s", stem_prismatic_text(w[a].real[0]).s);
            stem_prismatic_set(c, "scan", end[a], "%s", stem_prismatic_text(w[a].real[1]).s);
        }
        return STEM_OK;
    }
    stem_prismatic_set(c, "scan", "units", "fractional");
    for (int a = 0; a < 2; a++) {
        if (w[a].real_given) { /* as Prismatic: clamped to the tiled cell, then fractional */
            if (!strcmp(stem_prismatic_get(c, "sample", "xyz"), "MODEL.xyz"))
                return STEM_FAIL(STEM_ERR_CONFIG,
                                 "--from-prismatic: a scan window in Angstrom along %c (-w%cr) and a "
                                 "fractional one along %c (-w%c, or Prismatic's default, the whole cell): stemsim's "
                                 "[scan] has one unit for both axes, and converting needs the model's cell: give the "
                                 "model (-i or --xyz) or both windows in one unit",
                                 "xy"[a], "xy"[a], "yx"[a], "yx"[a]);
            double L;
            STEM_TRY(model_extent(c, a, &L));
            stem_prismatic_set(c, "scan", start[a], "%s", stem_prismatic_text(fmin(w[a].real[0], L) / L).s);
            stem_prismatic_set(c, "scan", end[a], "%s", stem_prismatic_text(fmin(w[a].real[1], L) / L).s);
            stem_prismatic_note(
                c,
                "-w%cr %s %s (Angstrom) became the fractional %s %s of the %s Angstrom (tiled) cell, as the other "
                "axis's window is fractional",
                "xy"[a], stem_prismatic_text(w[a].real[0]).s, stem_prismatic_text(w[a].real[1]).s,
                stem_prismatic_get(c, "scan", start[a]), stem_prismatic_get(c, "scan", end[a]),
                stem_prismatic_text(L).s);
        } else if (w[a].frac_given) {
            stem_prismatic_set(c, "scan", start[a], "%s", stem_prismatic_text(w[a].frac[0]).s);
            stem_prismatic_set(c, "scan", end[a], "%s", stem_prismatic_text(w[a].frac[1]).s);
        }
    }
    return STEM_OK;
}

/* Prismatic builds its defocus series after reading every option: -dfr (when given) wins,
 * else -dfs's 9 points df + (-2, -1.5, ..., 2) sigma around the final -df (0 when unset). */
static void defocus_series_resolve(conversion *c)
{
    if (c->dfr_set) {
        stem_prismatic_set(c, "series", "defocus", "%s:%s:%s", stem_prismatic_text(c->dfr[0]).s,
                           stem_prismatic_text(c->dfr[2]).s, stem_prismatic_text(c->dfr[1]).s);
        if (c->dfs_set)
            stem_prismatic_note(c, "-dfs %s not used: -dfr gives the series (as in Prismatic)",
                                stem_prismatic_text(c->dfs).s);
    } else if (c->dfs_set) {
        double df = c->df_set ? c->df : 0;
        stem_prismatic_set(c, "series", "defocus", "%s:%s:%s", stem_prismatic_text(df - 2 * c->dfs).s,
                           stem_prismatic_text(0.5 * c->dfs).s, stem_prismatic_text(df + 2 * c->dfs).s);
        stem_prismatic_note(
            c,
            "-dfs %s became a [series] defocus of 9 points around -df %s, as Prismatic runs it; for an incoherent "
            "average over the spread use [probe] focal_spread = %s instead",
            stem_prismatic_text(c->dfs).s, stem_prismatic_text(df).s, stem_prismatic_text(c->dfs).s);
    } else {
        return;
    }
    if (c->df_set) { /* stemsim refuses both */
        stem_prismatic_note(c, "-df %s left out: the defocus series replaces it", stem_prismatic_text(c->df).s);
        stem_prismatic_unset(c, "probe", "C10");
    }
}

/* Prismatic's 3D potential (its default, -3DP 1) and stemsim's finite projection both cut each
 * atom's potential at the slice boundaries, but they do not give the same numbers: said, with
 * what was measured (tests/reference/prismatic). */
static void potential3d_note(conversion *c)
{
    if (strcmp(stem_prismatic_get(c, "simulation", "projection"), "finite")) return;
    stem_prismatic_note(
        c,
        "Prismatic's 3D potential (its default; -3DP 1) became projection = finite, stemsim's own slice-by-slice "
        "integration; the two differ: on Si, Prismatic's 3D potential gives 0.41x (200 keV) to 0.58x (80 keV) "
        "the HAADF of its projected potential (-3DP 0), stemsim's finite projection stays close to its infinite "
        "one, so expect stemsim's HAADF 1.6-2.6x Prismatic's here, and within a few percent of Prismatic's "
        "-3DP 0 (docs/prismatic.md)");
}

/* What a config.ini line can hold: ';' starts a comment anywhere, inih trims spaces and
 * reads lines of at most INI_MAX_LINE - 1 characters, control characters end or corrupt
 * the line. Refused by name rather than written into a config that means something else. */
static int values_check(const conversion *c)
{
    if (c->overflow[0])
        return STEM_FAIL(STEM_ERR_CONFIG, "--from-prismatic: the value of %s is too long for a config file",
                         c->overflow);
    for (int i = 0; i < c->n; i++) {
        const char *k = c->e[i].key, *v = c->e[i].value;
        size_t len = strlen(k) + 3 + strlen(v);
        if (!v[0] || isspace((unsigned char)v[0]) || isspace((unsigned char)v[strlen(v) - 1]))
            return STEM_FAIL(STEM_ERR_CONFIG,
                             "--from-prismatic: [%s] %s = '%s': an empty value or one that starts or "
                             "ends with a space cannot be written in a config file",
                             c->e[i].section, k, v);
        for (const char *p = v; *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7f || *p == ';')
                return STEM_FAIL(STEM_ERR_CONFIG,
                                 "--from-prismatic: [%s] %s = '%s': %s cannot be written in a config "
                                 "file; rename it",
                                 c->e[i].section, k, v,
                                 *p == ';' ? "';' (it starts a comment)" : "a control character");
        if (len > INI_MAX_LINE - 1)
            return STEM_FAIL(STEM_ERR_CONFIG,
                             "--from-prismatic: [%s] %s: the value (%zu characters) does not fit a "
                             "config line (at most %d characters); use a shorter path, or run the config with "
                             "--set %s.%s=VALUE",
                             c->e[i].section, k, strlen(v), INI_MAX_LINE - 1, c->e[i].section, k);
    }
    return STEM_OK;
}

/* ------------------------------------------------------------- output */

/* A comment of any length as lines that fit the config's line limit; control characters
 * (a newline in a file name) cannot end the comment early. */
static void comment(FILE *out, const char *prefix, const char *text)
{
    const int width = 100;
    size_t n = strlen(text);
    const char *p = text;
    do {
        size_t take = n - (size_t)(p - text);
        if (take > (size_t)width) { /* break at the last space within the width, if any */
            take = (size_t)width;
            for (size_t k = take; k > (size_t)width / 2; k--)
                if (p[k] == ' ') {
                    take = k;
                    break;
                }
        }
        fputs(p == text ? prefix : ";   ", out);
        for (size_t k = 0; k < take; k++) fputc((unsigned char)p[k] < 0x20 || p[k] == 0x7f ? '?' : p[k], out);
        fputc('\n', out);
        p += take;
        while (*p == ' ') p++;
    } while (*p);
}

static void write_config(const conversion *c, const char *source, FILE *out)
{
    static const char *const order[] = {"sample",   "beam",   "probe",  "simulation", "scan",
                                        "detector", "images", "output", "series",     "compute"};
    char head[PATH_MAX + 128];
    snprintf(head, sizeof head, "stemsim %s config converted from Prismatic parameters (%s)", STEM_VERSION, source);
    comment(out, "; ", head);
    fprintf(out,
            "; conventions: keV, mrad and Angstrom as in Prismatic; [probe] C10 = Prismatic's -df (same sign);\n"
            "; C30/C50 in Angstrom like -C3/-C5; aberration azimuths in degrees; [detector] ring_width = -d.\n");
    for (int i = 0; i < c->n_notes; i++) comment(out, "; NOTE ", c->notes[i]);
    for (size_t s = 0; s < sizeof order / sizeof *order; s++) {
        int first = 1;
        for (int i = 0; i < c->n; i++) {
            if (strcmp(c->e[i].section, order[s])) continue;
            if (first) fprintf(out, "\n[%s]\n", order[s]);
            first = 0;
            fprintf(out, "%s = %s\n", c->e[i].key, c->e[i].value);
        }
    }
}

/* Everything that depends on more than one option, and the checks, once all are read. */
static int finish(conversion *c, const char *xyz)
{
    if (xyz) stem_prismatic_set(c, "sample", "xyz", "%s", xyz);
    if (strcmp(stem_prismatic_get(c, "sample", "xyz"), "MODEL.xyz"))
        STEM_TRY(absolute_path(c, "sample", "xyz"));
    else
        stem_prismatic_note(c, "no model given (-i or --xyz): set [sample] xyz");
    STEM_TRY(absolute_path(c, "scan", "positions")); /* [scan] positions is relative to the config file too */
    STEM_TRY(window_resolve(c));
    STEM_TRY(aberrations_resolve(c));
    defocus_series_resolve(c);
    potential3d_note(c);
    return values_check(c);
}

int stem_from_prismatic(int argc, char **argv, FILE *out)
{
    static conversion c; /* large: not on the stack */
    memset(&c, 0, sizeof c);
    const char *file = NULL, *xyz = NULL;
    int i = 0, err = STEM_OK;
    for (; i < argc; i++) {
        if (!strcmp(argv[i], "--")) {
            i++;
            break;
        }
        if (!strcmp(argv[i], "--xyz") && i + 1 < argc)
            xyz = argv[++i];
        else if (!file && argv[i][0] != '-')
            file = argv[i];
        else
            return STEM_FAIL(STEM_ERR_CONFIG,
                             "--from-prismatic: unexpected '%s' (usage: stemsim --from-prismatic "
                             "[PARAMS] [--xyz FILE] [-- PRISMATIC OPTIONS])",
                             argv[i]);
    }
    if (!file && i >= argc)
        return STEM_FAIL(STEM_ERR_CONFIG,
                         "--from-prismatic: give a Prismatic parameter file and/or, after --, a "
                         "Prismatic command line");
    /* Prismatic's defaults where they differ from stemsim's, so the converted run matches */
    stem_prismatic_set(&c, "sample", "xyz", "MODEL.xyz");
    stem_prismatic_set(&c, "beam", "energy", "80");
    stem_prismatic_set(&c, "probe", "semiangle", "20");
    stem_prismatic_set(&c, "simulation", "algorithm", "prism");
    stem_prismatic_set(&c, "simulation", "pixel_size", "0.1");
    stem_prismatic_set(&c, "simulation", "slice_thickness", "2");
    stem_prismatic_set(&c, "simulation", "frozen_phonons", "1");
    stem_prismatic_set(&c, "simulation", "thermal", "true");
    stem_prismatic_set(&c, "simulation", "projection", "finite"); /* Prismatic's 3D potential (-3DP 1) */
    stem_prismatic_set(&c, "scan", "step", "0.25");
    if (file) err = apply_file(&c, file);
    c.where = "the Prismatic command line";
    if (!err && i < argc) err = apply_tokens(&c, argc - i, argv + i);
    if (!err) err = finish(&c, xyz);
    if (err) return err;
    for (int k = 0; k < c.n_notes; k++) fprintf(stderr, "stemsim: warning: --from-prismatic: %s\n", c.notes[k]);
    write_config(&c, file ? file : "command line", out);
    /* the config goes to stdout: a full disk or a closed pipe must not end with exit 0 */
    if (fflush(out) != 0 || ferror(out))
        return STEM_FAIL(STEM_ERR_IO, "--from-prismatic: writing the config failed: %s",
                         errno ? strerror(errno) : "write error");
    return STEM_OK;
}
