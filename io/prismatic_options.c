/* Prismatic's option table for --from-prismatic (prismatic_params.h): every Prismatic 2.0
 * option, long and short name, with its number of values and its conversion into stemsim
 * keys (or a note when stemsim has none). Reading the options and writing the config are
 * prismatic_params.c's. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../src/stem.h"
#include "prismatic_private.h"

/* Decimal numbers only: strtod also takes hexadecimal ("0x1p3"), "inf" and "nan". */
static int option_number(const conversion *c, const char *opt, const char *tok, double *v)
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
        STEM_TRY(option_number(c, opt, tok, &d));
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

/* Prismatic's booleans: "0" is false, anything else true. */
static int flag(const char *tok) { return strcmp(tok, "0") != 0; }

#define NUMBERS(n)                                                                                                     \
    double x[n];                                                                                                       \
    for (int i = 0; i < n; i++) STEM_TRY(option_number(c, opt, v[i], &x[i]))

static int h_input(conversion *c, const char *opt, char **v)
{
    (void)opt;
    stem_prismatic_set(c, "sample", "xyz", "%s", v[0]);
    return STEM_OK;
}
/* [output] file is relative to the working directory, as Prismatic's -o: kept as given */
static int h_output(conversion *c, const char *opt, char **v)
{
    (void)opt;
    stem_prismatic_set(c, "output", "file", "%s", v[0]);
    return STEM_OK;
}

/* -of: Prismatic 2.0 reads it but writes its output to -o alone (the folder only prefixed
 * file names of an output mode it no longer has). */
static int h_output_folder(conversion *c, const char *opt, char **v)
{
    stem_prismatic_note(
        c,
        "%s %s: Prismatic 2.0 reads it but writes its output to -o alone, so it is not applied; put a directory "
        "in [output] file if wanted",
        opt, v[0]);
    return STEM_OK;
}

static int h_algorithm(conversion *c, const char *opt, char **v)
{
    const char *a = v[0];
    if (!strcmp(a, "m") || !strcmp(a, "multislice"))
        stem_prismatic_set(c, "simulation", "algorithm", "multislice");
    else if (!strcmp(a, "p") || !strcmp(a, "prism"))
        stem_prismatic_set(c, "simulation", "algorithm", "prism");
    else if (!strcmp(a, "t") || !strcmp(a, "hrtem"))
        stem_prismatic_set(c, "simulation", "algorithm", "hrtem");
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
    if (strchr(axes, 'x')) stem_prismatic_set(c, "simulation", "interpolation_x", "%lld", f);
    if (strchr(axes, 'y')) stem_prismatic_set(c, "simulation", "interpolation_y", "%lld", f);
    return STEM_OK;
}

/* One stemsim key for Prismatic's separate x and y values: x (or the option for both) sets
 * it; y keeps the value set before and notes a different one. */
static int one_for_both_axes(conversion *c, const char *opt, char **v, int is_y, const char *section, const char *key,
                             const char *hint)
{
    NUMBERS(1);
    const char *kept = is_y ? stem_prismatic_get(c, section, key) : NULL;
    if (!kept) {
        stem_prismatic_set(c, section, key, "%s", stem_prismatic_text(x[0]).s);
    } else if (strtod(kept, NULL) != x[0]) {
        stem_prismatic_note(c, "%s %s: stemsim has one %s for both axes; kept %s%s", opt, stem_prismatic_text(x[0]).s,
                            key, kept, hint);
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
    stem_prismatic_set(c, "sample", "tile_x", "%lld", t[0]);
    stem_prismatic_set(c, "sample", "tile_y", "%lld", t[1]);
    stem_prismatic_set(c, "sample", "tile_z", "%lld", t[2]);
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
        stem_prismatic_set(c, k->section, k->key, "%lld", i);
        return STEM_OK;
    }
    NUMBERS(1);
    stem_prismatic_set(c, k->section, k->key, "%s", stem_prismatic_text(x[0]).s);
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
        stem_prismatic_unset(c, section, key);
        *given = 0;
        return STEM_OK;
    }
    STEM_TRY(option_number(c, opt, tok, v));
    stem_prismatic_set(c, section, key, "%s", stem_prismatic_text(*v).s);
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
    stem_prismatic_set(c, "simulation", "thermal", flag(v[0]) ? "true" : "false");
    return STEM_OK;
}

static int h_2d(conversion *c, const char *opt, char **v)
{
    NUMBERS(2);
    stem_prismatic_set(c, "images", "ADF", "%s %s", stem_prismatic_text(x[0]).s, stem_prismatic_text(x[1]).s);
    stem_prismatic_note(
        c, "%s %s %s became [images] ADF, the run's only image (add BF, ABF, HAADF or any named range as wanted)", opt,
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
        if (!strcmp(opt, keys[i].opt))
            stem_prismatic_set(c, keys[i].section, keys[i].key, flag(v[0]) ? "true" : "false");
    return STEM_OK;
}

static int h_crop(conversion *c, const char *opt, char **v)
{
    (void)opt;
    if (!flag(v[0])) stem_prismatic_set(c, "detector", "cbed_max_angle", "0");
    return STEM_OK;
}

static int h_crop_angle(conversion *c, const char *opt, char **v)
{
    NUMBERS(1);
    stem_prismatic_set(c, "detector", "cbed_max_angle", "%s", stem_prismatic_text(x[0]).s);
    return STEM_OK;
}

static int h_potential3d(conversion *c, const char *opt, char **v)
{
    (void)opt;
    stem_prismatic_set(c, "simulation", "projection", flag(v[0]) ? "finite" : "infinite");
    return STEM_OK;
}

static int h_depth_every(conversion *c, const char *opt, char **v)
{
    long long n = 0;
    STEM_TRY(integer(c, opt, v[0], 0, 100000, &n));
    if (n > 0) stem_prismatic_set(c, "output", "depth_every", "%lld", n);
    return STEM_OK;
}

static int h_gpus(conversion *c, const char *opt, char **v)
{
    long long n = 0;
    STEM_TRY(integer(c, opt, v[0], 0, 64, &n));
    /* auto, not gpu: Prismatic's GUI (a GPU build) writes its GPUs into every parameter file,
     * and the converted config must also run on a CPU node (device = gpu exits 8 there) */
    stem_prismatic_set(c, "compute", "device", n > 0 ? "auto" : "cpu");
    if (n > 0) stem_prismatic_set(c, "compute", "gpus_per_rank", "%lld", n);
    if (n > 0)
        stem_prismatic_note(
            c,
            "%s %lld became [compute] device = auto, gpus_per_rank = %lld: the GPUs where the node has them, "
            "else the CPU engine (device = gpu insists on a GPU)",
            opt, n, n);
    return STEM_OK;
}

static int h_streaming(conversion *c, const char *opt, char **v)
{
    (void)opt;
    stem_prismatic_set(c, "compute", "memory_mode", flag(v[0]) ? "streaming" : "single");
    return STEM_OK;
}

static int h_positions(conversion *c, const char *opt, char **v)
{
    stem_prismatic_set(c, "scan", "positions", "%s", v[0]);
    stem_prismatic_note(
        c, "%s %s: stemsim reads 'x y' lines in Angstrom ('#' comments); check that the file is in that form", opt,
        v[0]);
    return STEM_OK;
}

/* HRTEM tilts: -xtt min max step (mrad) as a beam tilt series; Prismatic takes every plane wave
 * of the grid inside the range, stemsim these values (each rounded to a plane wave). */
static int h_tem_tilt(conversion *c, const char *opt, char **v)
{
    NUMBERS(3);
    int y = strchr(opt, 'y') != NULL;
    stem_prismatic_set(c, "series", y ? "beam_tilt_y" : "beam_tilt_x", "%s:%s:%s", stem_prismatic_text(x[0]).s,
                       stem_prismatic_text(x[2]).s, stem_prismatic_text(x[1]).s);
    if (x[0] > 0)
        stem_prismatic_note(
            c,
            "%s %s %s %s: Prismatic's range is |tilt| in [min, max] on both sides; stemsim's series runs from "
            "min to max only: give -max:step:max for both sides",
            opt, v[0], v[1], v[2]);
    return STEM_OK;
}

static int h_cell(conversion *c, const char *opt, char **v)
{
    (void)v;
    stem_prismatic_note(c, "%s: stemsim takes the cell from the XYZ file's second line", opt);
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
    stem_prismatic_note(c, "not converted: %s%s%s (%s)", opt, v && v[0] ? " " : "", v && v[0] ? v[0] : "", reason);
    return STEM_OK;
}

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

const option *stem_prismatic_option(const char *name)
{
    for (size_t i = 0; i < sizeof options / sizeof *options; i++)
        if ((options[i].lng && !strcmp(name, options[i].lng)) || (options[i].shrt && !strcmp(name, options[i].shrt)))
            return &options[i];
    return NULL;
}
