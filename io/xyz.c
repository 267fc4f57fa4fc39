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

#include "../src/atoms.h"
#include "../src/physics.h"

int stem_atoms_alloc(stem_atoms *a, long n)
{
    double cell[3] = {a->cell[0], a->cell[1], a->cell[2]};
    memset(a, 0, sizeof *a);
    memcpy(a->cell, cell, sizeof cell);
    a->n = n;
    STEM_ALLOC(a->Z, n, "atom numbers");
    STEM_ALLOC(a->x, n, "atom positions");
    STEM_ALLOC(a->y, n, "atom positions");
    STEM_ALLOC(a->z, n, "atom positions");
    STEM_ALLOC(a->occupancy, n, "atom occupancies");
    STEM_ALLOC(a->sigma, n, "atom displacements");
    return STEM_OK;
}

void stem_atoms_free(stem_atoms *a)
{
    free(a->Z);
    free(a->x);
    free(a->y);
    free(a->z);
    free(a->occupancy);
    free(a->sigma);
    memset(a, 0, sizeof *a);
}

/* Growable reading state over a text buffer. */
typedef struct {
    const char *name;
    long capacity;
    stem_atoms *atoms;
} xyz_reader;

static int grow(xyz_reader *r)
{
    long cap = r->capacity ? 2 * r->capacity : 1024;
    stem_atoms *a = r->atoms;
    void *p[6] = {realloc(a->Z, cap * sizeof(int)), NULL, NULL, NULL, NULL, NULL};
    if (p[0]) a->Z = p[0];
    double **cols[5] = {&a->x, &a->y, &a->z, &a->occupancy, &a->sigma};
    int ok = p[0] != NULL;
    for (int i = 0; i < 5 && ok; i++) {
        void *q = realloc(*cols[i], cap * sizeof(double));
        if (q) *cols[i] = q;
        else ok = 0;
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

/* Parse n numbers; returns how many were read, -1 on trailing junk or non-finite. */
static int parse_numbers(const char *s, double *v, int max)
{
    int n = 0;
    char *end;
    while (n < max) {
        while (isspace((unsigned char)*s)) s++;
        if (!*s) break;
        errno = 0;
        v[n] = strtod(s, &end);
        if (end == s || errno == ERANGE || !isfinite(v[n])) return -1;
        s = end;
        n++;
    }
    while (isspace((unsigned char)*s)) s++;
    return *s ? -1 : n;
}

static int read_cell(xyz_reader *r, const char *line, int lineno)
{
    double v[3];
    if (!line || parse_numbers(line, v, 3) != 3)
        return STEM_FAIL(STEM_ERR_INPUT, "%s:%d: expected the cell size 'a b c' in Angstrom", r->name, lineno);
    for (int i = 0; i < 3; i++)
        if (!(v[i] > 0) || v[i] > 1e6)
            return STEM_FAIL(STEM_ERR_INPUT, "%s:%d: cell size %g must be positive and below 1e6 Angstrom", r->name, lineno, v[i]);
    memcpy(r->atoms->cell, v, sizeof v);
    return STEM_OK;
}

static int read_atom(xyz_reader *r, const char *line, int lineno)
{
    double v[6];
    int n = parse_numbers(line, v, 6);
    if (n < 4)
        return STEM_FAIL(STEM_ERR_INPUT, "%s:%d: expected 'Z x y z [occupancy sigma]', got '%.60s'", r->name, lineno, line);
    if (n == 4) v[4] = 1;
    if (n <= 5) v[5] = 0;
    if (v[0] != floor(v[0]) || v[0] < 1 || v[0] > STEM_MAX_Z)
        return STEM_FAIL(STEM_ERR_INPUT, "%s:%d: atomic number %g is not an element (1..%d)", r->name, lineno, v[0], STEM_MAX_Z);
    const double *cell = r->atoms->cell;
    const char axis[3] = {'x', 'y', 'z'};
    for (int i = 0; i < 3; i++)
        if (v[1 + i] < 0 || v[1 + i] > cell[i])
            return STEM_FAIL(STEM_ERR_INPUT, "%s:%d: atom %c = %g is outside the cell [0, %g]", r->name, lineno, axis[i], v[1 + i], cell[i]);
    if (v[4] < 0 || v[4] > 1)
        return STEM_FAIL(STEM_ERR_INPUT, "%s:%d: occupancy %g must be in [0, 1]", r->name, lineno, v[4]);
    if (v[5] < 0 || v[5] > 10)
        return STEM_FAIL(STEM_ERR_INPUT, "%s:%d: rms displacement %g must be in [0, 10] Angstrom", r->name, lineno, v[5]);
    stem_atoms *a = r->atoms;
    if (a->n == r->capacity) STEM_TRY(grow(r));
    a->Z[a->n] = (int)v[0];
    a->x[a->n] = v[1];
    a->y[a->n] = v[2];
    a->z[a->n] = v[3];
    a->occupancy[a->n] = v[4];
    a->sigma[a->n] = v[5];
    a->n++;
    return STEM_OK;
}

/* Split text into lines in place and parse them. */
static int parse_text(xyz_reader *r, char *text)
{
    int lineno = 0, err = STEM_OK;
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
            if (parse_numbers(line, v, 1) == 1 && v[0] == -1) break;
            err = read_atom(r, line, lineno);
        }
        line = next;
    }
    if (!err && lineno < 2) err = STEM_FAIL(STEM_ERR_INPUT, "%s: too short: expected a comment line and the cell size", r->name);
    if (!err && r->atoms->n == 0) err = STEM_FAIL(STEM_ERR_INPUT, "%s: the model has no atoms", r->name);
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
    FILE *f = fopen(path, "rb");
    if (!f) return STEM_FAIL(STEM_ERR_INPUT, "cannot open XYZ model '%s' ([sample] xyz): %s", path, strerror(errno));
    struct stat st = {0};
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return STEM_FAIL(STEM_ERR_INPUT, "cannot read XYZ model '%s' ([sample] xyz): %s", path,
                         S_ISDIR(st.st_mode) ? "it is a directory" : "not a regular file");
    }
    char *text = NULL;
    long size = -1;
    if (fseek(f, 0, SEEK_END) == 0) size = ftell(f);
    if (size < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return STEM_FAIL(STEM_ERR_INPUT, "cannot read XYZ model '%s': not a regular file", path);
    }
    text = stem_alloc((size_t)size + 1, "XYZ file");
    if (!text) return fclose(f), STEM_ERR_MEMORY;
    size_t got = fread(text, 1, (size_t)size, f);
    int read_err = ferror(f);
    fclose(f);
    if (read_err || got != (size_t)size) {
        free(text);
        return STEM_FAIL(STEM_ERR_INPUT, "cannot read XYZ model '%s'", path);
    }
    text[size] = 0;
    if (memchr(text, 0, (size_t)size)) {
        free(text);
        return STEM_FAIL(STEM_ERR_INPUT, "%s: binary data (NUL byte) in an XYZ text file", path);
    }
    xyz_reader r = {.name = path, .atoms = atoms};
    int err = parse_text(&r, text);
    free(text);
    if (err) stem_atoms_free(atoms);
    return err;
}
