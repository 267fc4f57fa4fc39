/* Prismatic parameters to config.ini: see prismatic_params.h. */
#include "prismatic_params.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "../src/config.h"
#include "../src/stem.h"
#include "input_file.h"

#define MAX_ENTRIES 96
#define MAX_NOTES 64
#define MAX_TOKENS 64

/* The config being built: entries in the order first set, later values replace. */
typedef struct {
    struct { char section[16], key[32], value[512]; } e[MAX_ENTRIES];
    int n;
    char notes[MAX_NOTES][256]; /* options not converted, and what was assumed */
    int n_notes;
    const char *where;          /* the current source, for messages */
    double df;                  /* -df, for -dfs's series around it */
} conversion;

static void set(conversion *c, const char *section, const char *key, const char *fmt, ...)
{
    char value[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(value, sizeof value, fmt, ap);
    va_end(ap);
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->e[i].section, section) && !strcmp(c->e[i].key, key)) {
            snprintf(c->e[i].value, sizeof c->e[i].value, "%s", value);
            return;
        }
    if (c->n == MAX_ENTRIES) return;
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

static int number(const conversion *c, const char *opt, const char *tok, double *v)
{
    char *end;
    errno = 0;
    *v = strtod(tok, &end);
    if (end == tok || *end || errno || !isfinite(*v))
        return STEM_FAIL(STEM_ERR_CONFIG, "%s: %s: '%s' is not a number", c->where, opt, tok);
    return STEM_OK;
}

static int flag(const char *tok) { return strcmp(tok, "0") != 0; }

/* ------------------------------------------------------------ options */

typedef int (*handler)(conversion *c, const char *opt, char **v);

#define NUMBERS(n)                                                                                                     \
    double x[n];                                                                                                       \
    for (int i = 0; i < n; i++) STEM_TRY(number(c, opt, v[i], &x[i]))

static int h_input(conversion *c, const char *opt, char **v) { (void)opt; set(c, "sample", "xyz", "%s", v[0]); return STEM_OK; }
static int h_output(conversion *c, const char *opt, char **v) { (void)opt; set(c, "output", "file", "%s", v[0]); return STEM_OK; }

static int h_algorithm(conversion *c, const char *opt, char **v)
{
    const char *a = v[0];
    if (!strcmp(a, "m") || !strcmp(a, "multislice")) set(c, "simulation", "algorithm", "multislice");
    else if (!strcmp(a, "p") || !strcmp(a, "prism")) set(c, "simulation", "algorithm", "prism");
    else if (!strcmp(a, "t") || !strcmp(a, "hrtem")) set(c, "simulation", "algorithm", "hrtem");
    else return STEM_FAIL(STEM_ERR_CONFIG, "%s: %s: unknown algorithm '%s' (m, p or t)", c->where, opt, a);
    return STEM_OK;
}

static int h_interp(conversion *c, const char *opt, char **v)
{
    NUMBERS(1);
    const char *axes = !strcmp(opt, "-fx") || !strcmp(opt, "--interp-factor-x") ? "x"
                       : !strcmp(opt, "-fy") || !strcmp(opt, "--interp-factor-y") ? "y" : "xy";
    if (strchr(axes, 'x')) set(c, "simulation", "interpolation_x", "%d", (int)x[0]);
    if (strchr(axes, 'y')) set(c, "simulation", "interpolation_y", "%d", (int)x[0]);
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
        set(c, section, key, "%g", x[0]);
    } else if (atof(kept) != x[0]) {
        note(c, "%s %g: stemsim has one %s for both axes; kept %s%s", opt, x[0], key, kept, hint);
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

static int h_window(conversion *c, const char *opt, char **v)
{
    NUMBERS(2);
    int y = strchr(opt, 'y') != NULL, real = opt[strlen(opt) - 1] == 'r';
    set(c, "scan", "units", real ? "angstrom" : "fractional");
    set(c, "scan", y ? "y_start" : "x_start", "%g", x[0]);
    set(c, "scan", y ? "y_end" : "x_end", "%g", x[1]);
    return STEM_OK;
}

static int h_tile(conversion *c, const char *opt, char **v)
{
    NUMBERS(3);
    set(c, "sample", "tile_x", "%d", (int)x[0]);
    set(c, "sample", "tile_y", "%d", (int)x[1]);
    set(c, "sample", "tile_z", "%d", (int)x[2]);
    return STEM_OK;
}

/* One number to one key, the same unit. */
typedef struct { const char *section, *key, *fmt; } direct_key;

static int h_direct(conversion *c, const char *opt, char **v, const direct_key *k)
{
    NUMBERS(1);
    set(c, k->section, k->key, k->fmt, !strcmp(k->fmt, "%d") ? (double)(int)x[0] : x[0]);
    return STEM_OK;
}

#define DIRECT(name, section, key, fmt)                                                                                \
    static int name(conversion *c, const char *opt, char **v)                                                          \
    {                                                                                                                  \
        static const direct_key k = {section, key, fmt};                                                              \
        return h_direct(c, opt, v, &k);                                                                                \
    }
DIRECT(h_energy, "beam", "energy", "%g")
DIRECT(h_slice, "simulation", "slice_thickness", "%g")
DIRECT(h_bound, "simulation", "potential_radius", "%g")
DIRECT(h_fp, "simulation", "frozen_phonons", "%.0f")
DIRECT(h_seed, "simulation", "seed", "%.0f")
DIRECT(h_semiangle, "probe", "semiangle", "%g")
DIRECT(h_c3, "probe", "C30", "%g")
DIRECT(h_c5, "probe", "C50", "%g")
DIRECT(h_tx, "probe", "beam_tilt_x", "%g")
DIRECT(h_ty, "probe", "beam_tilt_y", "%g")
DIRECT(h_ring, "detector", "ring_width", "%g")
DIRECT(h_threads, "compute", "threads", "%.0f")
DIRECT(h_batch, "compute", "batch_size", "%.0f")
DIRECT(h_streams, "compute", "streams_per_gpu", "%.0f")

static int h_defocus(conversion *c, const char *opt, char **v)
{
    NUMBERS(1);
    c->df = x[0];
    set(c, "probe", "C10", "%g", x[0]); /* Prismatic's df enters chi as +pi lambda df q^2, as C10 does */
    return STEM_OK;
}

/* -dfs sigma: Prismatic runs 9 defoci, df - 2 sigma .. df + 2 sigma in steps of sigma / 2. */
static int h_defocus_sigma(conversion *c, const char *opt, char **v)
{
    NUMBERS(1);
    set(c, "series", "defocus", "%g:%g:%g", c->df - 2 * x[0], 0.5 * x[0], c->df + 2 * x[0]);
    note(c, "%s %g became a [series] defocus of 9 points, as Prismatic runs it; for an incoherent average over "
         "the spread use [probe] focal_spread = %g instead", opt, x[0], x[0]);
    return STEM_OK;
}

static int h_defocus_range(conversion *c, const char *opt, char **v)
{
    NUMBERS(3);
    set(c, "series", "defocus", "%g:%g:%g", x[0], x[2], x[1]);
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
    set(c, "images", "ADF", "%g %g", x[0], x[1]);
    note(c, "%s %g %g became [images] ADF, the run's only image (add BF, ABF, HAADF or any named range as wanted)",
         opt, x[0], x[1]);
    return STEM_OK;
}

static int h_save(conversion *c, const char *opt, char **v)
{
    static const struct { const char *opt, *section, *key; } keys[] = {
        {"-3D", "detector", "save_3d"}, {"--save-3D-output", "detector", "save_3d"},
        {"-4D", "detector", "save_4d"}, {"--save-4D-output", "detector", "save_4d"},
        {"-DPC", "detector", "save_dpc"}, {"--save-DPC-CoM", "detector", "save_dpc"},
        {"-ps", "output", "save_potential"}, {"--save-potential-slices", "output", "save_potential"},
        {"-sm", "output", "save_smatrix"}, {"--save-smatrix", "output", "save_smatrix"}};
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
    set(c, "detector", "cbed_max_angle", "%g", x[0]);
    return STEM_OK;
}

static int h_potential3d(conversion *c, const char *opt, char **v)
{
    (void)opt;
    set(c, "simulation", "projection", flag(v[0]) ? "finite" : "infinite");
    return STEM_OK;
}

static int h_depth_every(conversion *c, const char *opt, char **v)
{
    NUMBERS(1);
    if (x[0] > 0) set(c, "output", "depth_every", "%d", (int)x[0]);
    return STEM_OK;
}

static int h_gpus(conversion *c, const char *opt, char **v)
{
    NUMBERS(1);
    set(c, "compute", "device", x[0] > 0 ? "gpu" : "cpu");
    if (x[0] > 0) set(c, "compute", "gpus_per_rank", "%d", (int)x[0]);
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
    note(c, "%s %s: stemsim reads 'x y' lines in Angstrom ('#' comments); check that the file is in that form", opt, v[0]);
    return STEM_OK;
}

/* HRTEM tilts: -xtt min max step (mrad) as a beam tilt series; Prismatic takes every plane wave
 * of the grid inside the range, stemsim these values (each rounded to a plane wave). */
static int h_tem_tilt(conversion *c, const char *opt, char **v)
{
    NUMBERS(3);
    int y = strchr(opt, 'y') != NULL;
    set(c, "series", y ? "beam_tilt_y" : "beam_tilt_x", "%g:%g:%g", x[0], x[2], x[1]);
    if (x[0] > 0)
        note(c, "%s %g %g %g: Prismatic's range is |tilt| in [min, max] on both sides; stemsim's series runs from "
             "min to max only: give -max:step:max for both sides", opt, x[0], x[1], x[2]);
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
    static const struct { const char *opt, *why; } why[] = {
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
        {"-aber", "give each coefficient as [probe] Cnm and phinm (stemsim's angles in degrees)"},
        {"--aberrations", "give each coefficient as [probe] Cnm and phinm (stemsim's angles in degrees)"},
        {"-com", "complex 4D output is not written (hrtem: [output] save_exit_wave)"},
        {"--save-complex", "complex 4D output is not written (hrtem: [output] save_exit_wave)"},
        {"-probe", "the probe is not written"},
        {"--save-probe", "the probe is not written"},
        {"-ips", "stemsim reads potentials it wrote itself: [output] save_potential, then [simulation] potential_file"},
        {"--import-potential", "stemsim reads potentials it wrote itself: [output] save_potential, then potential_file"},
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
        {"-of", "give the directory in [output] file"},
        {"--output-folder", "give the directory in [output] file"}};
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
    {"--input-file", "-i", 1, h_input},           {"--output-file", "-o", 1, h_output},
    {"--algorithm", "-a", 1, h_algorithm},        {"--interp-factor", "-f", 1, h_interp},
    {"--interp-factor-x", "-fx", 1, h_interp},    {"--interp-factor-y", "-fy", 1, h_interp},
    {"--num-threads", "-j", 1, h_threads},        {"--num-streams", "-S", 1, h_streams},
    {"--slice-thickness", "-s", 1, h_slice},      {"--num-slices", "-ns", 1, h_depth_every},
    {"--zstart-slices", "-zs", 1, h_unsupported}, {"--num-gpus", "-g", 1, h_gpus},
    {"--batch-size", "-b", 1, h_unsupported},     {"--batch-size-cpu", "-bc", 1, h_batch},
    {"--batch-size-gpu", "-bg", 1, h_unsupported}, {"--pixel-size", "-p", 1, h_pixel},
    {"--pixel-size-x", "-px", 1, h_pixel},        {"--pixel-size-y", "-py", 1, h_pixel},
    {"--detector-angle-step", "-d", 1, h_ring},   {"--cell-dimension", "-c", 3, h_cell},
    {"--energy", "-E", 1, h_energy},              {"--alpha-max", "-A", 1, h_unsupported},
    {"--potential-bound", "-P", 1, h_bound},      {"--also-do-cpu-work", "-C", 1, h_unsupported},
    {"--streaming-mode", NULL, 1, h_streaming},   {"--probe-step", "-r", 1, h_step},
    {"--probe-step-x", "-rx", 1, h_step},         {"--probe-step-y", "-ry", 1, h_step},
    {"--random-seed", "-rs", 1, h_seed},          {"--probe-xtilt", "-tx", 1, h_tx},
    {"--probe-ytilt", "-ty", 1, h_ty},            {"--probe-defocus", "-df", 1, h_defocus},
    {NULL, "-C3", 1, h_c3},                       {NULL, "-C5", 1, h_c5},
    {"--probe-semiangle", "-sa", 1, h_semiangle}, {"--scan-window-x", "-wx", 2, h_window},
    {"--scan-window-y", "-wy", 2, h_window},      {"--scan-window-xr", "-wxr", 2, h_window},
    {"--scan-window-yr", "-wyr", 2, h_window},    {"--tile-uc", "-t", 3, h_tile},
    {"--num-FP", "-F", 1, h_fp},                  {"--thermal-effects", "-te", 1, h_thermal},
    {"--occupancy", "-oc", 1, h_unsupported},     {"--3Dpotential", "-3DP", 1, h_potential3d},
    {"--save-2D-output", "-2D", 2, h_2d},         {"--save-3D-output", "-3D", 1, h_save},
    {"--save-4D-output", "-4D", 1, h_save},       {"--4D-crop", "-4DC", 1, h_crop},
    {"--4D-amax", "-4DA", 1, h_crop_angle},       {"--save-DPC-CoM", "-DPC", 1, h_save},
    {"--save-potential-slices", "-ps", 1, h_save}, {"--nyquist-sampling", "-nqs", 1, h_unsupported},
    {"--xtilt-tem", "-xtt", 3, h_tem_tilt},       {"--ytilt-tem", "-ytt", 3, h_tem_tilt},
    {"--rtilt-tem", "-rtt", 2, h_unsupported},    {"--tilt-offset-tem", "-tot", 2, h_unsupported},
    {"--probe-pos", "-pos", 1, h_positions},      {"--max-filesize", NULL, 1, h_unsupported},
    {"--probe-defocus-sigma", "-dfs", 1, h_defocus_sigma}, {"--probe-defocus-range", "-dfr", 3, h_defocus_range},
    {"--save-smatrix", "-sm", 1, h_save},         {"--3Dpotential-zsampling", "-3DPZ", 1, h_unsupported},
    {"--matrix-refocus", "-mrf", 1, h_unsupported}, {"--aberrations", "-aber", 1, h_unsupported},
    {"--save-complex", "-com", 1, h_unsupported}, {"--save-probe", "-probe", 1, h_unsupported},
    {"--import-potential", "-ips", 1, h_unsupported}, {"--import-smatrix", "-ism", 1, h_unsupported},
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
            return STEM_FAIL(STEM_ERR_CONFIG, "%s: %s needs %d value%s", c->where, name, o->nargs, o->nargs == 1 ? "" : "s");
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
    for (char *t = strtok_r(line, " \t\r\n,", &save); t && n < MAX_TOKENS; t = strtok_r(NULL, " \t\r\n,", &save)) tok[n++] = t;
    return apply_tokens(c, n, tok);
}

static int apply_file(conversion *c, const char *path)
{
    FILE *f; /* without blocking: a FIFO, device (/dev/zero) or directory is refused by name */
    STEM_TRY(stem_input_open(path, "--from-prismatic parameter file", STEM_ERR_INPUT, &f));
    char line[4096], where[STEM_PATH_MAX + 32];
    int err = STEM_OK;
    for (int no = 1; !err && fgets(line, sizeof line, f); no++) {
        snprintf(where, sizeof where, "%s:%d", path, no);
        c->where = where;
        err = apply_line(c, line);
    }
    fclose(f);
    return err;
}

/* ------------------------------------------------------------- output */

static void write_config(const conversion *c, const char *source, FILE *out)
{
    static const char *const order[] = {"sample", "beam", "probe", "simulation", "scan", "detector", "images",
                                        "output", "series", "compute"};
    fprintf(out, "; stemsim %s config converted from Prismatic parameters (%s)\n", STEM_VERSION, source);
    fprintf(out, "; conventions: keV, mrad and Angstrom as in Prismatic; [probe] C10 = Prismatic's -df (same sign);\n"
                 "; C30/C50 in Angstrom like -C3/-C5; aberration azimuths in degrees; [detector] ring_width = -d.\n");
    for (int i = 0; i < c->n_notes; i++) fprintf(out, "; NOTE %s\n", c->notes[i]);
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
        if (!strcmp(argv[i], "--xyz") && i + 1 < argc) xyz = argv[++i];
        else if (!file && argv[i][0] != '-') file = argv[i];
        else return STEM_FAIL(STEM_ERR_CONFIG, "--from-prismatic: unexpected '%s' (usage: stemsim --from-prismatic "
                              "[PARAMS] [--xyz FILE] [-- PRISMATIC OPTIONS])", argv[i]);
    }
    if (!file && i >= argc)
        return STEM_FAIL(STEM_ERR_CONFIG, "--from-prismatic: give a Prismatic parameter file and/or, after --, a "
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
    set(&c, "scan", "step", "0.25");
    if (file) err = apply_file(&c, file);
    c.where = "the Prismatic command line";
    if (!err && i < argc) err = apply_tokens(&c, argc - i, argv + i);
    if (err) return err;
    if (xyz) set(&c, "sample", "xyz", "%s", xyz);
    if (get(&c, "series", "defocus") && get(&c, "probe", "C10")) { /* stemsim refuses both */
        note(&c, "-df %s left out: the defocus series replaces it", get(&c, "probe", "C10"));
        unset(&c, "probe", "C10");
    }
    if (!strcmp(get(&c, "sample", "xyz"), "MODEL.xyz")) note(&c, "no model given (-i or --xyz): set [sample] xyz");
    for (int k = 0; k < c.n_notes; k++) fprintf(stderr, "stemsim: warning: --from-prismatic: %s\n", c.notes[k]);
    write_config(&c, file ? file : "command line", out);
    return STEM_OK;
}
