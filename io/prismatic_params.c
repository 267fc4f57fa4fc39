/* Prismatic parameters to config.ini: see prismatic_params.h. */
#include "prismatic_params.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "../src/config.h"
#include "../src/stem.h"
#include "input_file.h"
#include "../src/aberrations.h"

#define MAX_ENTRIES 96
#define MAX_NOTES 64
#define MAX_TOKENS 64

/* A scan window along one axis as Prismatic keeps it: fractional (-wx) and Angstrom (-wxr)
 * are separate settings, and the Angstrom one wins when its end is not 0. */
typedef struct {
    double frac[2], real[2];
    int frac_given, real_given;
} window;

/* The config being built: entries in the order first set, later values replace. */
typedef struct {
    struct {
        char section[16], key[32], value[2 * STEM_PATH_MAX];
    } e[MAX_ENTRIES];
    int n;
    char notes[MAX_NOTES][1024]; /* options not converted, and what was assumed (whole sentences: a
                                    note cut short lost what it said, the 3D potential's at 320 bytes) */
    int n_notes;
    const char *where;       /* the current source, for messages */
    const char *params_file; /* the parameter file (relative model paths may be relative to it) */
    char overflow[64];       /* a key whose value did not fit (refused at the end) */
    /* options whose meaning depends on others, resolved once all are read (Prismatic's order) */
    double df, dfs, dfr[3];
    int df_set, dfs_set, dfr_set;
    window win[2];                   /* x, y */
    char aberrations[STEM_PATH_MAX]; /* -aber's file, read at the end (it needs the energy) */
    int c30_set, c50_set;            /* -C3, -C5 given (-df: df_set): they win over the file's, as in Prismatic */
} conversion;

static void set(conversion *c, const char *section, const char *key, const char *fmt, ...)
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

static void note(conversion *c, const char *fmt, ...)
{
    if (c->n_notes == MAX_NOTES) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->notes[c->n_notes++], sizeof c->notes[0], fmt, ap);
    va_end(ap);
}

/* Decimal numbers only: strtod also takes hexadecimal ("0x1p3"), "inf" and "nan". */
static int number(const conversion *c, const char *opt, const char *tok, double *v)
{
    char *end;
    errno = 0;
    *v = strtod(tok, &end);
    if (end == tok || *end || errno || !isfinite(*v) || strpbrk(tok, "xX"))
        return STEM_FAIL(STEM_ERR_CONFIG, "%s: %s: '%s' is not a number", c->where, opt, tok);
    return STEM_OK;
}

/* Prismatic writes an unset -df, -C3 or -C5 as "nan" (C++ may print "-nan"). */
static int is_nan_text(const char *tok)
{
    if (*tok == '-' || *tok == '+') tok++;
    return !strncasecmp(tok, "nan", 3) && (!tok[3] || tok[3] == '(');
}

/* An integer option (Prismatic reads it with atoi) within stemsim's bounds for its key:
 * never through a cast of an out-of-range double (-f 1e30) nor rounded (a seed above 2^53). */
static int integer(const conversion *c, const char *opt, const char *tok, long long lo, long long hi, long long *v)
{
    char *end;
    errno = 0;
    long long i = strtoll(tok, &end, 10);
    if (end == tok || *end) { /* "2.0" or "1e3": whole numbers written as decimals */
        double d;
        STEM_TRY(number(c, opt, tok, &d));
        if (d != floor(d))
            return STEM_FAIL(STEM_ERR_CONFIG, "%s: %s: '%s' is not a whole number (Prismatic reads an integer)",
                             c->where, opt, tok);
        if (d < (double)lo || d > (double)hi)
            return STEM_FAIL(STEM_ERR_CONFIG, "%s: %s %s is outside stemsim's range [%lld, %lld]", c->where, opt, tok,
                             lo, hi);
        i = (long long)d;
        errno = 0;
    }
    if (errno == ERANGE || i < lo || i > hi)
        return STEM_FAIL(STEM_ERR_CONFIG, "%s: %s %s is outside stemsim's range [%lld, %lld]", c->where, opt, tok, lo,
                         hi);
    *v = i;
    return STEM_OK;
}

/* Shortest text that reads back as the same double ("%g" keeps 6 digits only). */
typedef struct {
    char s[40];
} numtext;
static numtext g(double v)
{
    numtext t;
    for (int digits = 6; digits <= 17; digits++) {
        snprintf(t.s, sizeof t.s, "%.*g", digits, v);
        if (strtod(t.s, NULL) == v) break;
    }
    if (!strcmp(t.s, "-0")) strcpy(t.s, "0");
    return t;
}

/* Prismatic's booleans: "0" is false, anything else true. */
static int flag(const char *tok) { return strcmp(tok, "0") != 0; }

/* ------------------------------------------------------------ options */

typedef int (*handler)(conversion *c, const char *opt, char **v);

#define NUMBERS(n)                                                                                                     \
    double x[n];                                                                                                       \
    for (int i = 0; i < n; i++) STEM_TRY(number(c, opt, v[i], &x[i]))

static int h_input(conversion *c, const char *opt, char **v)
{
    (void)opt;
    set(c, "sample", "xyz", "%s", v[0]);
    return STEM_OK;
}
/* [output] file is relative to the working directory, as Prismatic's -o: kept as given */
static int h_output(conversion *c, const char *opt, char **v)
{
    (void)opt;
    set(c, "output", "file", "%s", v[0]);
    return STEM_OK;
}

/* -of: Prismatic 2.0 reads it but writes its output to -o alone (the folder only prefixed
 * file names of an output mode it no longer has). */
static int h_output_folder(conversion *c, const char *opt, char **v)
{
    note(c,
         "%s %s: Prismatic 2.0 reads it but writes its output to -o alone, so it is not applied; put a directory "
         "in [output] file if wanted",
         opt, v[0]);
    return STEM_OK;
}

static int h_algorithm(conversion *c, const char *opt, char **v)
{
    const char *a = v[0];
    if (!strcmp(a, "m") || !strcmp(a, "multislice"))
        set(c, "simulation", "algorithm", "multislice");
    else if (!strcmp(a, "p") || !strcmp(a, "prism"))
        set(c, "simulation", "algorithm", "prism");
    else if (!strcmp(a, "t") || !strcmp(a, "hrtem"))
        set(c, "simulation", "algorithm", "hrtem");
    else
        return STEM_FAIL(STEM_ERR_CONFIG, "%s: %s: unknown algorithm '%s' (m, p or t)", c->where, opt, a);
    return STEM_OK;
}

static int h_interp(conversion *c, const char *opt, char **v)
{
    long long f;
    STEM_TRY(integer(c, opt, v[0], 1, 256, &f)); /* stemsim's interpolation_x/_y bounds */
    const char *axes = !strcmp(opt, "-fx") || !strcmp(opt, "--interp-factor-x") ? "x"
        : !strcmp(opt, "-fy") || !strcmp(opt, "--interp-factor-y")              ? "y"
                                                                                : "xy";
    if (strchr(axes, 'x')) set(c, "simulation", "interpolation_x", "%lld", f);
    if (strchr(axes, 'y')) set(c, "simulation", "interpolation_y", "%lld", f);
    return STEM_OK;
}

/* The value of a key already set (NULL: not set). */
static const char *get(const conversion *c, const char *section, const char *key)
{
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->e[i].section, section) && !strcmp(c->e[i].key, key)) return c->e[i].value;
    return NULL;
}

static void unset(conversion *c, const char *section, const char *key)
{
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->e[i].section, section) && !strcmp(c->e[i].key, key)) {
            memmove(&c->e[i], &c->e[i + 1], sizeof c->e[0] * (size_t)(c->n - i - 1));
            c->n--;
            return;
        }
}

/* One stemsim key for Prismatic's separate x and y values: x (or the option for both) sets
 * it; y keeps the value set before and notes a different one. */
static int one_for_both_axes(conversion *c, const char *opt, char **v, int is_y, const char *section, const char *key,
                             const char *hint)
{
    NUMBERS(1);
    const char *kept = is_y ? get(c, section, key) : NULL;
    if (!kept) {
        set(c, section, key, "%s", g(x[0]).s);
    } else if (strtod(kept, NULL) != x[0]) {
        note(c, "%s %s: stemsim has one %s for both axes; kept %s%s", opt, g(x[0]).s, key, kept, hint);
    }
    return STEM_OK;
}

static int h_pixel(conversion *c, const char *opt, char **v)
{
    int is_y = !strcmp(opt, "-py") || !strcmp(opt, "--pixel-size-y");
    return one_for_both_axes(c, opt, v, is_y, "simulation", "pixel_size", " (or set grid_x, grid_y)");
}

static int h_step(conversion *c, const char *opt, char **v)
{
    int is_y = !strcmp(opt, "-ry") || !strcmp(opt, "--probe-step-y");
    return one_for_both_axes(c, opt, v, is_y, "scan", "step", "");
}

/* Kept per axis and unit until the end (window_resolve): Prismatic uses an axis's Angstrom
 * window when its end is not 0 ("-wxr 0 0", which it writes when unset, is no window) and
 * the fractional one otherwise, in whatever order they came. */
static int h_window(conversion *c, const char *opt, char **v)
{
    NUMBERS(2);
    int y = strchr(opt, 'y') != NULL, real = opt[strlen(opt) - 1] == 'r';
    window *w = &c->win[y];
    if (x[1] < x[0])
        return STEM_FAIL(STEM_ERR_CONFIG, "%s: %s %s %s: the end is before the start", c->where, opt, v[0], v[1]);
    if (real && x[1] == 0) return STEM_OK;
    memcpy(real ? w->real : w->frac, x, sizeof x);
    if (real)
        w->real_given = 1;
    else
        w->frac_given = 1;
    return STEM_OK;
}

static int h_tile(conversion *c, const char *opt, char **v)
{
    long long t[3];
    for (int i = 0; i < 3; i++) STEM_TRY(integer(c, opt, v[i], 1, 1000, &t[i])); /* [sample] tile_* bounds */
    set(c, "sample", "tile_x", "%lld", t[0]);
    set(c, "sample", "tile_y", "%lld", t[1]);
    set(c, "sample", "tile_z", "%lld", t[2]);
    return STEM_OK;
}

/* One number to one key, the same unit; integers within the key's bounds (lo < hi). */
typedef struct {
    const char *section, *key;
    long long lo, hi;
} direct_key;

static int h_direct(conversion *c, const char *opt, char **v, const direct_key *k)
{
    if (k->lo < k->hi) {
        long long i;
        STEM_TRY(integer(c, opt, v[0], k->lo, k->hi, &i));
        set(c, k->section, k->key, "%lld", i);
        return STEM_OK;
    }
    NUMBERS(1);
    set(c, k->section, k->key, "%s", g(x[0]).s);
    return STEM_OK;
}

#define DIRECT(name, section, key, lo, hi)                                                                             \
    static int name(conversion *c, const char *opt, char **v)                                                          \
    {                                                                                                                  \
        static const direct_key k = {section, key, lo, hi};                                                            \
        return h_direct(c, opt, v, &k);                                                                                \
    }
DIRECT(h_energy, "beam", "energy", 0, 0)
DIRECT(h_slice, "simulation", "slice_thickness", 0, 0)
DIRECT(h_bound, "simulation", "potential_radius", 0, 0)
DIRECT(h_fp, "simulation", "frozen_phonons", 1, 100000)
DIRECT(h_seed, "simulation", "seed", 0, 9200000000000000000LL) /* [simulation] seed's bound */
DIRECT(h_semiangle, "probe", "semiangle", 0, 0)
DIRECT(h_tx, "probe", "beam_tilt_x", 0, 0)
DIRECT(h_ty, "probe", "beam_tilt_y", 0, 0)
DIRECT(h_ring, "detector", "ring_width", 0, 0)
DIRECT(h_threads, "compute", "threads", 0, 4096)
DIRECT(h_batch, "compute", "batch_size", 1, 4096)
DIRECT(h_streams, "compute", "streams_per_gpu", 1, 32)

/* -C3, -C5 and -df: "nan" is Prismatic's "not set" (it writes that for values never given). */
static int number_or_unset(conversion *c, const char *opt, const char *tok, const char *section, const char *key,
                           double *v, int *given)
{
    if (is_nan_text(tok)) {
        unset(c, section, key);
        *given = 0;
        return STEM_OK;
    }
    STEM_TRY(number(c, opt, tok, v));
    set(c, section, key, "%s", g(*v).s);
    *given = 1;
    return STEM_OK;
}

static int h_c3(conversion *c, const char *opt, char **v)
{
    double x;
    return number_or_unset(c, opt, v[0], "probe", "C30", &x, &c->c30_set);
}

static int h_c5(conversion *c, const char *opt, char **v)
{
    double x;
    return number_or_unset(c, opt, v[0], "probe", "C50", &x, &c->c50_set);
}

/* -aber file: Prismatic's list of aberrations, converted at the end (aberrations_resolve). */
static int h_aberrations(conversion *c, const char *opt, char **v)
{
    if (snprintf(c->aberrations, sizeof c->aberrations, "%s", v[0]) >= (int)sizeof c->aberrations)
        return STEM_FAIL(STEM_ERR_CONFIG, "%s: %s: the path is longer than %d characters", c->where, opt,
                         STEM_PATH_MAX - 1);
    return STEM_OK;
}

/* Prismatic's df enters chi as +pi lambda df q^2, as C10 does. */
static int h_defocus(conversion *c, const char *opt, char **v)
{
    return number_or_unset(c, opt, v[0], "probe", "C10", &c->df, &c->df_set);
}

/* -dfs sigma: resolved at the end (defocus_series_resolve), around the final -df. */
static int h_defocus_sigma(conversion *c, const char *opt, char **v)
{
    NUMBERS(1);
    if (!(x[0] > 0)) /* Prismatic refuses 0 and silently runs no series for a negative sigma */
        return STEM_FAIL(STEM_ERR_CONFIG, "%s: %s %s: the defocus sigma must be positive (Angstrom)", c->where, opt,
                         v[0]);
    c->dfs = x[0];
    c->dfs_set = 1;
    return STEM_OK;
}

static int h_defocus_range(conversion *c, const char *opt, char **v)
{
    NUMBERS(3);
    if (!(x[2] > 0) || x[1] < x[0]) /* Prismatic runs no series (step <= 0) or an empty one (max < min) */
        return STEM_FAIL(STEM_ERR_CONFIG, "%s: %s %s %s %s: need min <= max and a positive step (Angstrom)", c->where,
                         opt, v[0], v[1], v[2]);
    memcpy(c->dfr, x, sizeof x);
    c->dfr_set = 1;
    return STEM_OK;
}

static int h_thermal(conversion *c, const char *opt, char **v)
{
    (void)opt;
    set(c, "simulation", "thermal", flag(v[0]) ? "true" : "false");
    return STEM_OK;
}

static int h_2d(conversion *c, const char *opt, char **v)
{
    NUMBERS(2);
    set(c, "images", "ADF", "%s %s", g(x[0]).s, g(x[1]).s);
    note(c, "%s %s %s became [images] ADF, the run's only image (add BF, ABF, HAADF or any named range as wanted)", opt,
         v[0], v[1]);
    return STEM_OK;
}

static int h_save(conversion *c, const char *opt, char **v)
{
    static const struct {
        const char *opt, *section, *key;
    } keys[] = {{"-3D", "detector", "save_3d"},      {"--save-3D-output", "detector", "save_3d"},
                {"-4D", "detector", "save_4d"},      {"--save-4D-output", "detector", "save_4d"},
                {"-DPC", "detector", "save_dpc"},    {"--save-DPC-CoM", "detector", "save_dpc"},
                {"-ps", "output", "save_potential"}, {"--save-potential-slices", "output", "save_potential"},
                {"-sm", "output", "save_smatrix"},   {"--save-smatrix", "output", "save_smatrix"}};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        if (!strcmp(opt, keys[i].opt)) set(c, keys[i].section, keys[i].key, flag(v[0]) ? "true" : "false");
    return STEM_OK;
}

static int h_crop(conversion *c, const char *opt, char **v)
{
    (void)opt;
    if (!flag(v[0])) set(c, "detector", "cbed_max_angle", "0");
    return STEM_OK;
}

static int h_crop_angle(conversion *c, const char *opt, char **v)
{
    NUMBERS(1);
    set(c, "detector", "cbed_max_angle", "%s", g(x[0]).s);
    return STEM_OK;
}

static int h_potential3d(conversion *c, const char *opt, char **v)
{
    (void)opt;
    set(c, "simulation", "projection", flag(v[0]) ? "finite" : "infinite");
    return STEM_OK;
}

/* Prismatic's 3D potential (its default, -3DP 1) and stemsim's finite projection both cut each
 * atom's potential at the slice boundaries, but they do not give the same numbers: said, with
 * what was measured (tests/reference/prismatic). */
static void potential3d_note(conversion *c)
{
    if (strcmp(get(c, "simulation", "projection"), "finite")) return;
    note(c,
         "Prismatic's 3D potential (its default; -3DP 1) became projection = finite, stemsim's own slice-by-slice "
         "integration; the two differ: on Si, Prismatic's 3D potential gives 0.41x (200 keV) to 0.58x (80 keV) "
         "the HAADF of its projected potential (-3DP 0), stemsim's finite projection stays close to its infinite "
         "one, so expect stemsim's HAADF 1.6-2.6x Prismatic's here, and within a few percent of Prismatic's "
         "-3DP 0 (docs/prismatic.md)");
}

static int h_depth_every(conversion *c, const char *opt, char **v)
{
    long long n = 0;
    STEM_TRY(integer(c, opt, v[0], 0, 100000, &n));
    if (n > 0) set(c, "output", "depth_every", "%lld", n);
    return STEM_OK;
}

static int h_gpus(conversion *c, const char *opt, char **v)
{
    long long n = 0;
    STEM_TRY(integer(c, opt, v[0], 0, 64, &n));
    /* auto, not gpu: Prismatic's GUI (a GPU build) writes its GPUs into every parameter file,
     * and the converted config must also run on a CPU node (device = gpu exits 8 there) */
    set(c, "compute", "device", n > 0 ? "auto" : "cpu");
    if (n > 0) set(c, "compute", "gpus_per_rank", "%lld", n);
    if (n > 0)
        note(c,
             "%s %lld became [compute] device = auto, gpus_per_rank = %lld: the GPUs where the node has them, "
             "else the CPU engine (device = gpu insists on a GPU)",
             opt, n, n);
    return STEM_OK;
}

static int h_streaming(conversion *c, const char *opt, char **v)
{
    (void)opt;
    set(c, "compute", "memory_mode", flag(v[0]) ? "streaming" : "single-transfer");
    return STEM_OK;
}

static int h_positions(conversion *c, const char *opt, char **v)
{
    set(c, "scan", "positions", "%s", v[0]);
    note(c, "%s %s: stemsim reads 'x y' lines in Angstrom ('#' comments); check that the file is in that form", opt,
         v[0]);
    return STEM_OK;
}

/* HRTEM tilts: -xtt min max step (mrad) as a beam tilt series; Prismatic takes every plane wave
 * of the grid inside the range, stemsim these values (each rounded to a plane wave). */
static int h_tem_tilt(conversion *c, const char *opt, char **v)
{
    NUMBERS(3);
    int y = strchr(opt, 'y') != NULL;
    set(c, "series", y ? "beam_tilt_y" : "beam_tilt_x", "%s:%s:%s", g(x[0]).s, g(x[2]).s, g(x[1]).s);
    if (x[0] > 0)
        note(c,
             "%s %s %s %s: Prismatic's range is |tilt| in [min, max] on both sides; stemsim's series runs from "
             "min to max only: give -max:step:max for both sides",
             opt, v[0], v[1], v[2]);
    return STEM_OK;
}

static int h_cell(conversion *c, const char *opt, char **v)
{
    (void)v;
    note(c, "%s: stemsim takes the cell from the XYZ file's second line", opt);
    return STEM_OK;
}

/* Options that change nothing stemsim computes, or that it does not have. */
static int h_unsupported(conversion *c, const char *opt, char **v)
{
    static const struct {
        const char *opt, *why;
    } why[] = {
        {"-A", "the largest angle follows from pixel_size (the 2/3 band limit)"},
        {"--alpha-max", "the largest angle follows from pixel_size (the 2/3 band limit)"},
        {"-C", "stemsim's engine is one of CPU or GPU per run ([compute] device)"},
        {"--also-do-cpu-work", "stemsim's engine is one of CPU or GPU per run ([compute] device)"},
        {"-zs", "slicing always starts at the top of the cell"},
        {"--zstart-slices", "slicing always starts at the top of the cell"},
        {"-oc", "the XYZ occupancy column is always used"},
        {"--occupancy", "the XYZ occupancy column is always used"},
        {"-nqs", "choose pixel_size (or grid_x, grid_y) directly"},
        {"--nyquist-sampling", "choose pixel_size (or grid_x, grid_y) directly"},
        {"-3DPZ", "the finite projection tabulates 24 depths per slice"},
        {"--3Dpotential-zsampling", "the finite projection tabulates 24 depths per slice"},
        {"-mrf", "PRISM always refocuses one S-matrix for a defocus series"},
        {"--matrix-refocus", "PRISM always refocuses one S-matrix for a defocus series"},
        {"-com", "complex 4D output is not written (hrtem: [output] save_exit_wave)"},
        {"--save-complex", "complex 4D output is not written (hrtem: [output] save_exit_wave)"},
        {"-probe", "the probe is not written"},
        {"--save-probe", "the probe is not written"},
        {"-ips", "stemsim reads potentials it wrote itself: [output] save_potential, then [simulation] potential_file"},
        {"--import-potential",
         "stemsim reads potentials it wrote itself: [output] save_potential, then potential_file"},
        {"-ism", "stemsim reads S-matrices it wrote itself: [output] save_smatrix, then [simulation] smatrix_file"},
        {"--import-smatrix", "stemsim reads S-matrices it wrote itself: [output] save_smatrix, then smatrix_file"},
        {"-rtt", "no radial tilt range: give [series] beam_tilt_x and beam_tilt_y"},
        {"--rtilt-tem", "no radial tilt range: give [series] beam_tilt_x and beam_tilt_y"},
        {"-tot", "no tilt offset: shift the [series] beam tilt values instead"},
        {"--tilt-offset-tem", "no tilt offset: shift the [series] beam tilt values instead"},
        {"--max-filesize", "stemsim checks memory and disk itself"},
        {"-b", "set [compute] batch_size (CPU) and memory_mode (GPU)"},
        {"--batch-size", "set [compute] batch_size (CPU) and memory_mode (GPU)"},
        {"-bg", "the GPU engine chooses its batches from its memory"},
        {"--batch-size-gpu", "the GPU engine chooses its batches from its memory"},
    };
    const char *reason = "no stemsim equivalent";
    for (size_t i = 0; i < sizeof why / sizeof *why; i++)
        if (!strcmp(opt, why[i].opt)) reason = why[i].why;
    note(c, "not converted: %s%s%s (%s)", opt, v && v[0] ? " " : "", v && v[0] ? v[0] : "", reason);
    return STEM_OK;
}

typedef struct {
    const char *lng, *shrt;
    int nargs;
    handler h;
} option;

static const option options[] = {
    {"--input-file", "-i", 1, h_input},
    {"--output-file", "-o", 1, h_output},
    {"--algorithm", "-a", 1, h_algorithm},
    {"--interp-factor", "-f", 1, h_interp},
    {"--interp-factor-x", "-fx", 1, h_interp},
    {"--interp-factor-y", "-fy", 1, h_interp},
    {"--num-threads", "-j", 1, h_threads},
    {"--num-streams", "-S", 1, h_streams},
    {"--slice-thickness", "-s", 1, h_slice},
    {"--num-slices", "-ns", 1, h_depth_every},
    {"--zstart-slices", "-zs", 1, h_unsupported},
    {"--num-gpus", "-g", 1, h_gpus},
    {"--batch-size", "-b", 1, h_unsupported},
    {"--batch-size-cpu", "-bc", 1, h_batch},
    {"--batch-size-gpu", "-bg", 1, h_unsupported},
    {"--pixel-size", "-p", 1, h_pixel},
    {"--pixel-size-x", "-px", 1, h_pixel},
    {"--pixel-size-y", "-py", 1, h_pixel},
    {"--detector-angle-step", "-d", 1, h_ring},
    {"--cell-dimension", "-c", 3, h_cell},
    {"--energy", "-E", 1, h_energy},
    {"--alpha-max", "-A", 1, h_unsupported},
    {"--potential-bound", "-P", 1, h_bound},
    {"--also-do-cpu-work", "-C", 1, h_unsupported},
    {"--streaming-mode", NULL, 1, h_streaming},
    {"--probe-step", "-r", 1, h_step},
    {"--probe-step-x", "-rx", 1, h_step},
    {"--probe-step-y", "-ry", 1, h_step},
    {"--random-seed", "-rs", 1, h_seed},
    {"--probe-xtilt", "-tx", 1, h_tx},
    {"--probe-ytilt", "-ty", 1, h_ty},
    {"--probe-defocus", "-df", 1, h_defocus},
    {NULL, "-C3", 1, h_c3},
    {NULL, "-C5", 1, h_c5},
    {"--probe-semiangle", "-sa", 1, h_semiangle},
    {"--scan-window-x", "-wx", 2, h_window},
    {"--scan-window-y", "-wy", 2, h_window},
    {"--scan-window-xr", "-wxr", 2, h_window},
    {"--scan-window-yr", "-wyr", 2, h_window},
    {"--tile-uc", "-t", 3, h_tile},
    {"--num-FP", "-F", 1, h_fp},
    {"--thermal-effects", "-te", 1, h_thermal},
    {"--occupancy", "-oc", 1, h_unsupported},
    {"--3Dpotential", "-3DP", 1, h_potential3d},
    {"--save-2D-output", "-2D", 2, h_2d},
    {"--save-3D-output", "-3D", 1, h_save},
    {"--save-4D-output", "-4D", 1, h_save},
    {"--4D-crop", "-4DC", 1, h_crop},
    {"--4D-amax", "-4DA", 1, h_crop_angle},
    {"--save-DPC-CoM", "-DPC", 1, h_save},
    {"--save-potential-slices", "-ps", 1, h_save},
    {"--nyquist-sampling", "-nqs", 1, h_unsupported},
    {"--xtilt-tem", "-xtt", 3, h_tem_tilt},
    {"--ytilt-tem", "-ytt", 3, h_tem_tilt},
    {"--rtilt-tem", "-rtt", 2, h_unsupported},
    {"--tilt-offset-tem", "-tot", 2, h_unsupported},
    {"--probe-pos", "-pos", 1, h_positions},
    {"--max-filesize", NULL, 1, h_unsupported},
    {"--probe-defocus-sigma", "-dfs", 1, h_defocus_sigma},
    {"--probe-defocus-range", "-dfr", 3, h_defocus_range},
    {"--save-smatrix", "-sm", 1, h_save},
    {"--3Dpotential-zsampling", "-3DPZ", 1, h_unsupported},
    {"--matrix-refocus", "-mrf", 1, h_unsupported},
    {"--aberrations", "-aber", 1, h_aberrations},
    {"--save-complex", "-com", 1, h_unsupported},
    {"--save-probe", "-probe", 1, h_unsupported},
    {"--import-potential", "-ips", 1, h_unsupported},
    {"--import-smatrix", "-ism", 1, h_unsupported},
    {"--output-folder", "-of", 1, h_output_folder},
};

static const option *find(const char *name)
{
    for (size_t i = 0; i < sizeof options / sizeof *options; i++)
        if ((options[i].lng && !strcmp(name, options[i].lng)) || (options[i].shrt && !strcmp(name, options[i].shrt)))
            return &options[i];
    return NULL;
}

/* Options with their values, in order; a value may be negative (-df -50). */
static int apply_tokens(conversion *c, int n, char **tok)
{
    for (int i = 0; i < n;) {
        const char *name = tok[i];
        if (!strcmp(name, "-pf") || !strcmp(name, "--param-file"))
            return STEM_FAIL(STEM_ERR_CONFIG, "%s: give the parameter file as stemsim --from-prismatic FILE, not %s",
                             c->where, name);
        const option *o = find(name);
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
        note(c,
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
        note(c, "%s: %s from the aberration file is replaced by -df/-C3/-C5, as Prismatic does", where, key);
        return STEM_OK;
    }
    set(c, "probe", key, "%s", g(mag * p * lambda / (2 * M_PI)).s);
    if (s) set(c, "probe", phi, "%s", g(angle).s);
    return STEM_OK;
}

static int aberrations_resolve(conversion *c)
{
    if (!c->aberrations[0]) return STEM_OK;
    set(c, "probe", "aberrations_file", "%s", c->aberrations); /* resolved like -i, then read */
    STEM_TRY(absolute_path(c, "probe", "aberrations_file"));
    char path[STEM_PATH_MAX + 8], line[4096], where[STEM_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s", get(c, "probe", "aberrations_file"));
    unset(c, "probe", "aberrations_file");
    double kev = strtod(get(c, "beam", "energy"), NULL), volts = 1e3 * kev;
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
    const char *p = get(c, section, key);
    if (!p || p[0] == '/') return STEM_OK;
    char rel[sizeof c->e[0].value], cwd[PATH_MAX], beside[sizeof rel];
    snprintf(rel, sizeof rel, "%s", p);
    const char *slash = c->params_file ? strrchr(c->params_file, '/') : NULL;
    if (access(rel, F_OK) != 0 && slash &&
        snprintf(beside, sizeof beside, "%.*s/%s", (int)(slash - c->params_file), c->params_file, rel) <
            (int)sizeof beside &&
        access(beside, F_OK) == 0) {
        note(c, "%s '%s' is not in the current directory but beside the parameter file: %s taken", key, rel, beside);
        memcpy(rel, beside, sizeof rel);
        if (rel[0] == '/') {
            set(c, section, key, "%s", rel);
            return STEM_OK;
        }
    }
    if (!getcwd(cwd, sizeof cwd))
        return STEM_FAIL(STEM_ERR_CONFIG,
                         "--from-prismatic: [%s] %s = '%s' is relative and the current directory "
                         "cannot be named (%s): give an absolute path",
                         section, key, rel, strerror(errno));
    set(c, section, key, "%s/%s", cwd, rel);
    return STEM_OK;
}

/* The model's cell (its second line) times the tiles, for a window given in Angstrom
 * along one axis and fractional along the other. */
static int model_extent(conversion *c, int axis, double *extent)
{
    const char *path = get(c, "sample", "xyz"), *tile = get(c, "sample", axis ? "tile_y" : "tile_x");
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
        set(c, "scan", "units", "angstrom");
        for (int a = 0; a < 2; a++) {
            set(c, "scan", start[a], "%s", g(w[a].real[0]).s);
            set(c, "scan", end[a], "%s", g(w[a].real[1]).s);
        }
        return STEM_OK;
    }
    set(c, "scan", "units", "fractional");
    for (int a = 0; a < 2; a++) {
        if (w[a].real_given) { /* as Prismatic: clamped to the tiled cell, then fractional */
            if (!strcmp(get(c, "sample", "xyz"), "MODEL.xyz"))
                return STEM_FAIL(STEM_ERR_CONFIG,
                                 "--from-prismatic: a scan window in Angstrom along %c (-w%cr) and a "
                                 "fractional one along %c (-w%c, or Prismatic's default, the whole cell): stemsim's "
                                 "[scan] has one unit for both axes, and converting needs the model's cell: give the "
                                 "model (-i or --xyz) or both windows in one unit",
                                 "xy"[a], "xy"[a], "yx"[a], "yx"[a]);
            double L;
            STEM_TRY(model_extent(c, a, &L));
            set(c, "scan", start[a], "%s", g(fmin(w[a].real[0], L) / L).s);
            set(c, "scan", end[a], "%s", g(fmin(w[a].real[1], L) / L).s);
            note(c,
                 "-w%cr %s %s (Angstrom) became the fractional %s %s of the %s Angstrom (tiled) cell, as the other "
                 "axis's window is fractional",
                 "xy"[a], g(w[a].real[0]).s, g(w[a].real[1]).s, get(c, "scan", start[a]), get(c, "scan", end[a]),
                 g(L).s);
        } else if (w[a].frac_given) {
            set(c, "scan", start[a], "%s", g(w[a].frac[0]).s);
            set(c, "scan", end[a], "%s", g(w[a].frac[1]).s);
        }
    }
    return STEM_OK;
}

/* Prismatic builds its defocus series after reading every option: -dfr (when given) wins,
 * else -dfs's 9 points df + (-2, -1.5, ..., 2) sigma around the final -df (0 when unset). */
static void defocus_series_resolve(conversion *c)
{
    if (c->dfr_set) {
        set(c, "series", "defocus", "%s:%s:%s", g(c->dfr[0]).s, g(c->dfr[2]).s, g(c->dfr[1]).s);
        if (c->dfs_set) note(c, "-dfs %s not used: -dfr gives the series (as in Prismatic)", g(c->dfs).s);
    } else if (c->dfs_set) {
        double df = c->df_set ? c->df : 0;
        set(c, "series", "defocus", "%s:%s:%s", g(df - 2 * c->dfs).s, g(0.5 * c->dfs).s, g(df + 2 * c->dfs).s);
        note(c,
             "-dfs %s became a [series] defocus of 9 points around -df %s, as Prismatic runs it; for an incoherent "
             "average over the spread use [probe] focal_spread = %s instead",
             g(c->dfs).s, g(df).s, g(c->dfs).s);
    } else {
        return;
    }
    if (c->df_set) { /* stemsim refuses both */
        note(c, "-df %s left out: the defocus series replaces it", g(c->df).s);
        unset(c, "probe", "C10");
    }
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
    if (xyz) set(c, "sample", "xyz", "%s", xyz);
    if (strcmp(get(c, "sample", "xyz"), "MODEL.xyz"))
        STEM_TRY(absolute_path(c, "sample", "xyz"));
    else
        note(c, "no model given (-i or --xyz): set [sample] xyz");
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
    set(&c, "sample", "xyz", "MODEL.xyz");
    set(&c, "beam", "energy", "80");
    set(&c, "probe", "semiangle", "20");
    set(&c, "simulation", "algorithm", "prism");
    set(&c, "simulation", "pixel_size", "0.1");
    set(&c, "simulation", "slice_thickness", "2");
    set(&c, "simulation", "frozen_phonons", "1");
    set(&c, "simulation", "thermal", "true");
    set(&c, "simulation", "projection", "finite"); /* Prismatic's 3D potential (-3DP 1) */
    set(&c, "scan", "step", "0.25");
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
