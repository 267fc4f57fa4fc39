/* Prismatic-style XYZ reader:
 *   line 1: comment
 *   line 2: cell a b c (Angstrom)
 *   then:   Z x y z occupancy sigma     (until a line "-1" or end of file)
 * Every error names the file and the line. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "xyz.h"

#include "../src/atoms.h"
#include "../src/physics.h"
#include "input_file.h"

/* Growable reading state over a text buffer. */
typedef struct {
    const char *name;
    long capacity;
    stem_atoms *atoms;
    int *line_of; /* file line of each atom, for messages */
} xyz_reader;

static int grow(xyz_reader *r)
{
    long cap = r->capacity ? 2 * r->capacity : 1024;
    stem_atoms *a = r->atoms;
    void *p[6] = {realloc(a->Z, cap * sizeof(int)), NULL, NULL, NULL, NULL, NULL};
    if (p[0]) a->Z = p[0];
    double **cols[5] = {&a->x, &a->y, &a->z, &a->occupancy, &a->sigma};
    int ok = p[0] != NULL;
    int *lines = ok ? realloc(r->line_of, cap * sizeof(int)) : NULL;
    if (lines)
        r->line_of = lines;
    else
        ok = 0;
    for (int i = 0; i < 5 && ok; i++) {
        void *q = realloc(*cols[i], cap * sizeof(double));
        if (q)
            *cols[i] = q;
        else
            ok = 0;
    }
    if (!ok) return STEM_FAIL(STEM_ERR_MEMORY, "%s: out of memory after %ld atoms", r->name, a->n);
    r->capacity = cap;
    return STEM_OK;
}

static int blank(const char *s)
{
    while (*s && isspace((unsigned char)*s)) s++;
    return *s == 0;
}

/* A token strtod read that is not a finite decimal: hexadecimal ("0x1p3", which
 * strtod takes), inf, nan. */
static int xyz_not_decimal(const char *s, const char *end, double v)
{
    if (!isfinite(v)) return 1;
    for (const char *p = s; p < end; p++)
        if (*p == 'x' || *p == 'X') return 1;
    return 0;
}

/* Parse n numbers; returns how many were read, -1 on trailing junk, -2 on a number that
 * is not a finite decimal (*bad: its text, up to the next space). */
static int parse_numbers(const char *s, double *v, int max, char *bad, size_t nbad)
{
    int n = 0;
    char *end;
    while (n < max) {
        while (isspace((unsigned char)*s)) s++;
        if (!*s) break;
        errno = 0;
        v[n] = strtod(s, &end);
        if (end == s) return -1;
        if (errno == ERANGE || xyz_not_decimal(s, end, v[n])) {
            size_t len = strcspn(s, " \t\r\n");
            if (bad) snprintf(bad, nbad, "%.*s", (int)(len < 40 ? len : 40), s);
            return -2;
        }
        s = end;
        n++;
    }
    while (isspace((unsigned char)*s)) s++;
    return *s ? -1 : n;
}

static int not_decimal(const xyz_reader *r, int lineno, const char *bad)
{
    return STEM_FAIL(STEM_ERR_INPUT,
                     "%s:%d: '%s' is not a finite decimal number (hexadecimal, inf, nan and "
                     "overflowing values are refused)",
                     r->name, lineno, bad);
}

static int read_cell(xyz_reader *r, const char *line, int lineno)
{
    double v[3];
    char bad[48];
    int n = line ? parse_numbers(line, v, 3, bad, sizeof bad) : 0;
    if (n == -2) return not_decimal(r, lineno, bad);
    if (n != 3) return STEM_FAIL(STEM_ERR_INPUT, "%s:%d: expected the cell size 'a b c' in Angstrom", r->name, lineno);
    for (int i = 0; i < 3; i++)
        if (!(v[i] > 0) || v[i] > 1e6)
            return STEM_FAIL(STEM_ERR_INPUT, "%s:%d: cell size %g must be positive and below 1e6 Angstrom", r->name,
                             lineno, v[i]);
    memcpy(r->atoms->cell, v, sizeof v);
    return STEM_OK;
}

static int read_atom(xyz_reader *r, const char *line, int lineno)
{
    double v[6];
    char bad[48];
    int n = parse_numbers(line, v, 6, bad, sizeof bad);
    if (n == -2) return not_decimal(r, lineno, bad);
    if (n < 4)
        return STEM_FAIL(STEM_ERR_INPUT, "%s:%d: expected 'Z x y z [occupancy sigma]', got '%.60s'", r->name, lineno,
                         line);
    if (n == 4) v[4] = 1;
    if (n <= 5) v[5] = 0;
    if (v[0] != floor(v[0]) || v[0] < 1 || v[0] > STEM_MAX_Z)
        return STEM_FAIL(STEM_ERR_INPUT, "%s:%d: atomic number %g is not an element (1..%d)", r->name, lineno, v[0],
                         STEM_MAX_Z);
    const double *cell = r->atoms->cell;
    const char axis[3] = {'x', 'y', 'z'};
    for (int i = 0; i < 3; i++)
        if (v[1 + i] < 0 || v[1 + i] > cell[i])
            return STEM_FAIL(STEM_ERR_INPUT, "%s:%d: atom %c = %g is outside the cell [0, %g]", r->name, lineno,
                             axis[i], v[1 + i], cell[i]);
    if (v[4] < 0 || v[4] > 1)
        return STEM_FAIL(STEM_ERR_INPUT, "%s:%d: occupancy %g must be in [0, 1]", r->name, lineno, v[4]);
    if (v[5] < 0 || v[5] > 10)
        return STEM_FAIL(STEM_ERR_INPUT, "%s:%d: rms displacement %g must be in [0, 10] Angstrom", r->name, lineno,
                         v[5]);
    stem_atoms *a = r->atoms;
    if (a->n == r->capacity) STEM_TRY(grow(r));
    a->Z[a->n] = (int)v[0];
    a->x[a->n] = v[1];
    a->y[a->n] = v[2];
    a->z[a->n] = v[3];
    a->occupancy[a->n] = v[4];
    a->sigma[a->n] = v[5];
    r->line_of[a->n] = lineno;
    a->n++;
    return STEM_OK;
}

/* ------------------------------------------- atoms given twice (warning) */

#define XYZ_SAME_ATOM 0.01 /* Angstrom */
#define XYZ_BIN 0.5        /* Angstrom: cell-list bin, >= XYZ_SAME_ATOM */

typedef struct {
    uint64_t key; /* packed bin (bx, by, bz) */
    long atom;
} xyz_binned;

static int xyz_cmp_binned(const void *a, const void *b)
{
    uint64_t x = ((const xyz_binned *)a)->key, y = ((const xyz_binned *)b)->key;
    return (x > y) - (x < y);
}

static uint64_t xyz_pack(long bx, long by, long bz)
{
    return ((uint64_t)bx << 42) | ((uint64_t)by << 21) | (uint64_t)bz;
}

/* Periodic distance along one axis. */
static double xyz_wrap_delta(double d, double cell)
{
    d = fmod(fabs(d), cell);
    return d > 0.5 * cell ? cell - d : d;
}

/* First entry with this key in the sorted list, -1 if none. */
static long xyz_find(const xyz_binned *b, long n, uint64_t key)
{
    long lo = 0, hi = n;
    while (lo < hi) {
        long mid = lo + (hi - lo) / 2;
        if (b[mid].key < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && b[lo].key == key ? lo : -1;
}

/* The same atom listed twice (also at x = 0 and x = a, which the periodic
 * cell makes one position) doubles its potential; it is almost always a
 * mistake in building the model, so warn with the line numbers. A cell list
 * keeps this O(n log n) for millions of atoms. */
static void xyz_warn_duplicates(const xyz_reader *r)
{
    const stem_atoms *a = r->atoms;
    long nb[3];
    for (int k = 0; k < 3; k++) {
        nb[k] = (long)floor(a->cell[k] / XYZ_BIN);
        if (nb[k] < 1) nb[k] = 1;
        if (nb[k] > (1L << 20)) nb[k] = 1L << 20;
    }
    xyz_binned *b = malloc((size_t)a->n * sizeof *b);
    if (!b) return; /* a warning only: skip it rather than fail the run */
    const double *pos[3] = {a->x, a->y, a->z};
    for (long i = 0; i < a->n; i++) {
        long bin[3];
        for (int k = 0; k < 3; k++) {
            bin[k] = (long)floor(pos[k][i] / a->cell[k] * nb[k]);
            bin[k] = ((bin[k] % nb[k]) + nb[k]) % nb[k];
        }
        b[i] = (xyz_binned){xyz_pack(bin[0], bin[1], bin[2]), i};
    }
    qsort(b, (size_t)a->n, sizeof *b, xyz_cmp_binned);
    long found = 0;
    for (long s = 0; s < a->n; s++) {
        long i = b[s].atom;
        long bx = (long)(b[s].key >> 42), by = (long)((b[s].key >> 21) & 0x1fffff), bz = (long)(b[s].key & 0x1fffff);
        uint64_t keys[27];
        int n_keys = 0;
        for (int dz = -1; dz <= 1; dz++)
            for (int dy = -1; dy <= 1; dy++)
                for (int dx = -1; dx <= 1; dx++) {
                    uint64_t key =
                        xyz_pack((bx + dx + nb[0]) % nb[0], (by + dy + nb[1]) % nb[1], (bz + dz + nb[2]) % nb[2]);
                    int seen = 0; /* small cells: neighbours wrap onto one bin */
                    for (int k = 0; k < n_keys; k++) seen |= keys[k] == key;
                    if (!seen) keys[n_keys++] = key;
                }
        for (int k = 0; k < n_keys; k++)
            for (long t = xyz_find(b, a->n, keys[k]); t >= 0 && t < a->n && b[t].key == keys[k]; t++) {
                long j = b[t].atom;
                if (j <= i || a->Z[j] != a->Z[i]) continue;
                double d2 = 0;
                for (int c = 0; c < 3; c++) {
                    double d = xyz_wrap_delta(pos[c][i] - pos[c][j], a->cell[c]);
                    d2 += d * d;
                }
                if (d2 > XYZ_SAME_ATOM * XYZ_SAME_ATOM) continue;
                if (++found <= 5)
                    stem_warn("%s: lines %d and %d give the same atom (Z = %d) at positions within %.2f Angstrom "
                              "of each other (periodic cell): its potential counts twice",
                              r->name, r->line_of[i], r->line_of[j], a->Z[i], XYZ_SAME_ATOM);
            }
    }
    if (found > 5) stem_warn("%s: %ld more atoms given twice", r->name, found - 5);
    free(b);
}

/* CR LF ends a line like LF (the CR is a space to strtod); a CR alone (classic Mac OS)
 * would make the file one comment line. */
static int xyz_check_line_endings(const xyz_reader *r, const char *text)
{
    int line = 1;
    for (const char *p = text; *p; p++) {
        if (*p == '\n')
            line++;
        else if (*p == '\r' && p[1] != '\n')
            return STEM_FAIL(STEM_ERR_INPUT,
                             "%s:%d: a carriage return (CR) not followed by a line feed: the file has "
                             "classic Mac (CR-only) line endings; convert them (tr '\\r' '\\n')",
                             r->name, line);
    }
    return STEM_OK;
}

/* Split text into lines in place and parse them. */
static int parse_text(xyz_reader *r, char *text)
{
    int lineno = 0, err = xyz_check_line_endings(r, text);
    char *save = NULL, *line = text;
    (void)save;
    while (line && !err) {
        char *next = strchr(line, '\n');
        if (next) *next++ = 0;
        lineno++;
        if (lineno == 1) {
            /* comment line */
        } else if (lineno == 2) {
            err = read_cell(r, line, lineno);
        } else if (blank(line)) {
            /* tolerate blank lines */
        } else {
            double v[1];
            if (parse_numbers(line, v, 1, NULL, 0) == 1 && v[0] == -1) break;
            err = read_atom(r, line, lineno);
        }
        line = next;
    }
    if (!err && lineno < 2)
        err = STEM_FAIL(STEM_ERR_INPUT, "%s: too short: expected a comment line and the cell size", r->name);
    if (!err && r->atoms->n == 0) err = STEM_FAIL(STEM_ERR_INPUT, "%s: the model has no atoms", r->name);
    if (!err) xyz_warn_duplicates(r);
    free(r->line_of);
    return err;
}

int stem_xyz_read_string(const char *name, const char *text, stem_atoms *atoms)
{
    memset(atoms, 0, sizeof *atoms);
    size_t len = strlen(text);
    char *copy = stem_alloc(len + 1, "XYZ text");
    if (!copy) return STEM_ERR_MEMORY;
    memcpy(copy, text, len + 1);
    xyz_reader r = {.name = name, .atoms = atoms};
    int err = parse_text(&r, copy);
    free(copy);
    if (err) stem_atoms_free(atoms);
    return err;
}

int stem_xyz_read(const char *path, stem_atoms *atoms)
{
    memset(atoms, 0, sizeof *atoms);
    char *text;
    size_t size;
    STEM_TRY(stem_input_read_all(path, "XYZ model ([sample] xyz)", STEM_ERR_INPUT, &text, &size));
    if (memchr(text, 0, size)) {
        free(text);
        return STEM_FAIL(STEM_ERR_INPUT, "%s: binary data (NUL byte) in an XYZ text file", path);
    }
    xyz_reader r = {.name = path, .atoms = atoms};
    int err = parse_text(&r, text);
    free(text);
    if (err) stem_atoms_free(atoms);
    return err;
}
