/* config.ini parsing (inih) into stem_config through one table of keys (config_keys.c):
 * the table gives each key's type, default, bounds, unit and documentation,
 * so parsing, validation, "did you mean" and the reference never disagree.
 * A key the engines read is parsed straight into stem_config.opt (options.h),
 * which the plan copies whole: its row there and its field there are all it needs. */
#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <limits.h>
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config.h"
#include "config_keys.h"
#include "../src/series.h"
#include "input_file.h"

typedef struct {
    stem_config *cfg;
    const char *source; /* file name for messages */
    int allow_repeat;   /* --set overrides may replace file values */
    int err;            /* first status */
    char msg[1024];     /* first message (printed with its line) */
} parse_ctx;

int stem_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63) return 99;
    int d[64][64];
    for (size_t i = 0; i <= la; i++) d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            int sub = d[i - 1][j - 1] + (tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]));
            int del = d[i - 1][j] + 1, ins = d[i][j - 1] + 1;
            d[i][j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
    return d[la][lb];
}

/* The closest "section.key" to what was typed, for the error message. */
static void suggest_key(const char *section, const char *key, char *out, size_t n)
{
    int best = 1 << 30;
    out[0] = 0;
    for (int i = 0; i < stem_config_n_keys; i++) {
        int d = stem_edit_distance(key, stem_config_keys[i].key) +
            (strcasecmp(section, stem_config_keys[i].section) ? 2 : 0);
        if (d < best) {
            best = d;
            snprintf(out, n, "[%s] %s", stem_config_keys[i].section, stem_config_keys[i].key);
        }
    }
    if (best > 4 + (int)strlen(key) / 2) out[0] = 0;
}

static int set_error(parse_ctx *c, int code, const char *fmt, const char *a, const char *b, const char *d)
{
    if (!c->err) {
        c->err = code;
        snprintf(c->msg, sizeof c->msg, fmt, a, b, d);
    }
    return 0; /* tells inih this line failed */
}

/* strtod also takes hexadecimal ("0x10") and reads "010" as ten where a
 * reader may expect octal eight; neither belongs in a config file. */
static int plain_decimal(const char *s)
{
    while (isspace((unsigned char)*s)) s++;
    if (*s == '+' || *s == '-') s++;
    return !(s[0] == '0' && (s[1] == 'x' || s[1] == 'X' || isdigit((unsigned char)s[1])));
}

static int parse_double(const char *s, double *out)
{
    char *end;
    if (!plain_decimal(s)) return -1;
    errno = 0;
    double v = strtod(s, &end);
    while (isspace((unsigned char)*end)) end++;
    if (errno == ERANGE && fabs(v) < DBL_MIN) errno = 0; /* 1e-310: finite, below DBL_MIN (it underflows to nothing) */
    if (end == s || *end || errno == ERANGE || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

/* What is wrong with a value that is not a number, when it can be told: a unit after the
 * number ("200kV"), a decimal comma ("0,1"). */
static int not_a_number(const key_spec *k, const char *value, char *why, size_t nwhy)
{
    char *end;
    strtod(value, &end);
    const char *rest = end;
    while (isspace((unsigned char)*rest)) rest++;
    if (end != value && *rest == ',' && isdigit((unsigned char)rest[1]))
        return snprintf(why, nwhy, "is not a finite number: the decimal separator is '.', not ','"), -1;
    if (end != value && isalpha((unsigned char)*rest) && strcmp(k->unit, "-"))
        return snprintf(why, nwhy,
                        "is not a finite number: '%.20s' follows it (values carry no unit; this one is in %s)", rest,
                        k->unit),
               -1;
    return snprintf(why, nwhy, "is not a finite number"), -1;
}

/* Why a bound is where it is, where the number alone would not say. */
static const char *range_reason(const key_spec *k, double v)
{
    if (!strcmp(k->key, "energy") && v < k->min)
        return ": below 10 keV multislice's high-energy approximations (forward scattering, paraxial propagation) "
               "fail; at 1 keV a 0.1 Angstrom pixel's band limit lies beyond 1 rad";
    return "";
}

/* A 64-bit integer read as one (seed): through a double, values above 2^53 would be
 * rounded to a neighbour and give other displacements without a word. */
static int parse_long(const key_spec *k, const char *value, long *field, char *why, size_t nwhy)
{
    char *end;
    errno = 0;
    long long i = strtoll(value, &end, 10);
    while (isspace((unsigned char)*end)) end++;
    if (end == value || *end) {
        double v;
        if (parse_double(value, &v) || v != floor(v)) return snprintf(why, nwhy, "must be an integer"), -1;
        if (fabs(v) > 9007199254740992.0) /* 2^53: "1e19" cannot say which integer it means */
            return snprintf(why, nwhy, "must be written as an integer (digits) above 2^53"), -1;
        i = (long long)v;
    } else if (errno == ERANGE || i > LONG_MAX || i < LONG_MIN) {
        return snprintf(why, nwhy, "does not fit a 64-bit integer (at most %ld)", LONG_MAX), -1;
    }
    if ((double)i < k->min || (double)i > k->max)
        return snprintf(why, nwhy, "is out of range [%.0f, %.0f]", k->min, k->max), -1;
    *field = (long)i;
    return 0;
}

static int parse_string(const char *value, char *field, char *why, size_t nwhy)
{
    if (strlen(value) >= STEM_PATH_MAX)
        return snprintf(why, nwhy, "is longer than %d characters", STEM_PATH_MAX - 1), -1;
    if (!value[0]) return snprintf(why, nwhy, "is empty"), -1;
    for (const char *p = value; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return snprintf(why, nwhy, "contains a control character (byte 0x%02x at position %d)", (unsigned char)*p,
                            (int)(p - value) + 1),
                   -1;
    strcpy(field, value);
    return 0;
}

static int parse_bool(const char *value, int *field, char *why, size_t nwhy)
{
    if (!strcasecmp(value, "true") || !strcasecmp(value, "yes") || !strcmp(value, "1") || !strcasecmp(value, "on"))
        *field = 1;
    else if (!strcasecmp(value, "false") || !strcasecmp(value, "no") || !strcmp(value, "0") ||
             !strcasecmp(value, "off"))
        *field = 0;
    else
        return snprintf(why, nwhy, "must be true or false"), -1;
    return 0;
}

/* One of k->choices ("a|b|c", any case): its index. */
static int parse_choice(const key_spec *k, const char *value, int *field, char *why, size_t nwhy)
{
    int idx = 0;
    const char *p = k->choices;
    size_t len = strlen(value);
    while (*p) {
        const char *bar = strchr(p, '|');
        size_t n = bar ? (size_t)(bar - p) : strlen(p);
        if (n == len && !strncasecmp(p, value, n)) return *field = idx, 0;
        idx++;
        p += n + (bar ? 1 : 0);
    }
    return snprintf(why, nwhy, "must be one of %s", k->choices), -1;
}

/* A plain decimal number in [k->min, k->max] (integers whole; K_INT_AUTO: or auto, 0). */
static int parse_number(const key_spec *k, const char *value, void *field, char *why, size_t nwhy)
{
    double v;
    if (k->type == K_INT_AUTO && !strcasecmp(value, "auto")) return *(int *)field = 0, 0;
    if (k->type == K_INT_AUTO && (!plain_decimal(value) || parse_double(value, &v)))
        return snprintf(why, nwhy, "must be auto or an integer in [%g, %g]", k->min, k->max), -1;
    if (!plain_decimal(value))
        return snprintf(why, nwhy, "is not a plain decimal number (hexadecimal and leading zeros are refused)"), -1;
    if (parse_double(value, &v)) return not_a_number(k, value, why, nwhy);
    if (v < k->min || v > k->max)
        return snprintf(why, nwhy, "is out of range [%g, %g]%s%s%s%s", k->min, k->max, strcmp(k->unit, "-") ? " " : "",
                        strcmp(k->unit, "-") ? k->unit : "", k->type == K_INT_AUTO ? " (or auto)" : "",
                        range_reason(k, v)),
               -1;
    if (k->type == K_LONG) return parse_long(k, value, (long *)field, why, nwhy);
    if (k->type == K_DOUBLE) {
        *(double *)field = v;
        return 0;
    }
    if (v != floor(v)) return snprintf(why, nwhy, "must be an integer"), -1;
    *(int *)field = (int)v;
    return 0;
}

static int parse_value(const key_spec *k, const char *value, void *field, char *why, size_t nwhy)
{
    switch (k->type) {
    case K_STRING: return parse_string(value, (char *)field, why, nwhy);
    case K_BOOL: return parse_bool(value, (int *)field, why, nwhy);
    case K_ENUM: return parse_choice(k, value, (int *)field, why, nwhy);
    default: return parse_number(k, value, field, why, nwhy);
    }
}

/* [images] NAME = inner outer   (mrad) */
static int parse_image(parse_ctx *c, const char *name, const char *value)
{
    stem_config *cfg = c->cfg;
    if (strlen(name) >= STEM_IMAGE_NAME_MAX || !name[0])
        return set_error(c, STEM_ERR_CONFIG, "image name '%s' must have 1 to 31 characters%s%s", name, "", "");
    for (const char *p = name; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-')
            return set_error(c, STEM_ERR_CONFIG, "image name '%s' may contain only letters, digits, '_' and '-'%s%s",
                             name, "", "");
    int slot = -1;
    for (int i = 0; i < cfg->n_images; i++)
        if (!strcmp(cfg->images[i].name, name)) slot = i;
    if (slot >= 0 && !c->allow_repeat)
        return set_error(c, STEM_ERR_CONFIG, "duplicate image '%s' in [images]%s%s", name, "", "");
    if (slot < 0) {
        if (cfg->n_images == STEM_MAX_IMAGES)
            return set_error(c, STEM_ERR_CONFIG, "too many images in [images] (at most 16): '%s'%s%s", name, "", "");
        slot = cfg->n_images++;
    }
    char buf[256], *end;
    snprintf(buf, sizeof buf, "%s", value);
    errno = 0;
    double inner = strtod(buf, &end);
    char *rest = end;
    if (!plain_decimal(buf) || !plain_decimal(rest))
        return set_error(c, STEM_ERR_CONFIG,
                         "[images] %s = '%s': not plain decimal numbers (hexadecimal and leading zeros are refused)%s",
                         name, value, "");
    double outer = strtod(rest, &end);
    while (isspace((unsigned char)*end)) end++;
    if (rest == buf || end == rest || *end || errno || !isfinite(inner) || !isfinite(outer)) {
        const char *home = stem_config_key_section(name); /* a key below [images] whose own section header is missing */
        if (home) {
            char msg[400];
            snprintf(msg, sizeof msg,
                     "[images] %.40s = '%.60s': %.40s is a key of [%s], not an image: is the [%s] "
                     "header missing above it?",
                     name, value, name, home, home);
            return set_error(c, STEM_ERR_CONFIG, "%s%s%s", msg, "", "");
        }
        return set_error(c, STEM_ERR_CONFIG, "[images] %s = '%s': expected two angles in mrad, 'inner outer'%s", name,
                         value, "");
    }
    if (inner < 0 || outer <= inner)
        return set_error(c, STEM_ERR_CONFIG, "[images] %s = '%s': need 0 <= inner < outer (mrad)%s", name, value, "");
    snprintf(cfg->images[slot].name, STEM_IMAGE_NAME_MAX, "%s", name);
    cfg->images[slot].inner_mrad = inner;
    cfg->images[slot].outer_mrad = outer;
    return 1;
}

static int config_handler(void *user, const char *section, const char *key, const char *value)
{
    parse_ctx *c = user;
    if (!strcasecmp(section, "images")) return parse_image(c, key, value);
    const key_spec *k = stem_config_find_key(section, key);
    if (!k) {
        char hint[128], sk[300];
        suggest_key(section, key, hint, sizeof hint);
        snprintf(sk, sizeof sk, "%s", hint[0] ? "; did you mean " : "");
        if (!section[0]) return set_error(c, STEM_ERR_CONFIG, "key '%s' outside any [section]%s%s", key, sk, hint);
        char where[200];
        snprintf(where, sizeof where, "%s] %s", section, key);
        return set_error(c, STEM_ERR_CONFIG, "unknown key [%s%s%s", where, sk, hint);
    }
    int idx = (int)(k - stem_config_keys);
    if (c->cfg->seen[idx] && !c->allow_repeat)
        return set_error(c, STEM_ERR_CONFIG, "duplicate key [%s] %s%s", k->section, k->key, "");
    char why[400];
    if (parse_value(k, value, (char *)c->cfg + k->offset, why, sizeof why)) {
        char what[300];
        snprintf(what, sizeof what, "[%s] %s = '%.60s'", k->section, k->key, value);
        return set_error(c, STEM_ERR_CONFIG, "%s %s%s", what, why, "");
    }
    c->cfg->seen[idx] = 1;
    return 1;
}

void stem_config_defaults(stem_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    for (int i = 0; i < stem_config_n_keys; i++) {
        char why[200];
        if (stem_config_keys[i].def[0])
            parse_value(&stem_config_keys[i], stem_config_keys[i].def, (char *)cfg + stem_config_keys[i].offset, why,
                        sizeof why);
    }
}

int stem_config_given(const stem_config *cfg, const char *section, const char *key)
{
    const key_spec *k = stem_config_find_key(section, key);
    return k && cfg->seen[k - stem_config_keys];
}

/* Defaults for the 2D images follow the probe angle when [images] is absent. */
static void default_images(stem_config *cfg)
{
    double a = cfg->semiangle_mrad;
    const struct {
        const char *name;
        double lo, hi;
    } d[] = {{"BF", 0, a}, {"ABF", 0.5 * a, a}, {"ADF", a, 3 * a}, {"HAADF", 3 * a, 1e9}};
    for (int i = 0; i < 4; i++) {
        snprintf(cfg->images[i].name, STEM_IMAGE_NAME_MAX, "%s", d[i].name);
        cfg->images[i].inner_mrad = d[i].lo;
        cfg->images[i].outer_mrad = d[i].hi;
    }
    cfg->n_images = 4;
}

/* Older key names of the aberrations: merged into the Krivanek coefficients. */
typedef struct {
    const char *alias, *key;
    size_t alias_offset, key_offset;
    double scale; /* key = alias * scale */
} key_alias;

static const key_alias aliases[] = {
    {"defocus", "C10", OFF(defocus), OFF(aberr_c[STEM_C10]), 1},
    {"cs", "C30", OFF(cs_mm), OFF(aberr_c[STEM_C30]), 1e7}, /* mm -> Angstrom */
    {"c5", "C50", OFF(c5_mm), OFF(aberr_c[STEM_C50]), 1e7},
    {"astigmatism", "C12", OFF(astigmatism), OFF(aberr_c[STEM_C12]), 1},
    {"astigmatism_angle", "phi12", OFF(astigmatism_angle), OFF(aberr_phi_deg[STEM_C12]), 1},
};
#define N_ALIASES (sizeof aliases / sizeof aliases[0])

static int is_alias(const key_spec *k)
{
    for (size_t i = 0; i < N_ALIASES; i++)
        if (!strcmp(k->section, "probe") && !strcmp(k->key, aliases[i].alias)) return 1;
    return 0;
}

static int merge_aliases(stem_config *cfg, const char *source)
{
    for (size_t i = 0; i < N_ALIASES; i++) {
        const key_alias *a = &aliases[i];
        if (!stem_config_given(cfg, "probe", a->alias)) continue;
        if (stem_config_given(cfg, "probe", a->key))
            return STEM_FAIL(STEM_ERR_CONFIG,
                             "%s: [probe] %s and %s are the same aberration (%s is its older name): give one", source,
                             a->alias, a->key, a->alias);
        double v = *(double *)((char *)cfg + a->alias_offset);
        *(double *)((char *)cfg + a->key_offset) = a->scale == 1 ? v : v * a->scale;
    }
    return STEM_OK;
}

/* [series] values parse, and no point is given twice (a series key and the single-run key it replaces). */
static int validate_series(const stem_config *cfg, const char *source)
{
    const struct {
        const char *text, *section, *key;
        double single;
    } pair[] = {{cfg->series_tilt_x, "sample", "tilt_x", cfg->tilt_x},
                {cfg->series_tilt_y, "sample", "tilt_y", cfg->tilt_y},
                {cfg->series_defocus, "probe", "C10", cfg->aberr_c[STEM_C10]},
                {cfg->series_beam_tilt_x, "probe", "beam_tilt_x", cfg->beam_tilt_mrad[0]},
                {cfg->series_beam_tilt_y, "probe", "beam_tilt_y", cfg->beam_tilt_mrad[1]}};
    const char *series_key[] = {"tilt_x", "tilt_y", "defocus", "beam_tilt_x", "beam_tilt_y"};
    for (int i = 0; i < 5; i++)
        if (pair[i].text[0] && pair[i].single != 0)
            return STEM_FAIL(STEM_ERR_CONFIG, "%s: [series] %s and [%s] %s (or its older name) both set it: give one",
                             source, series_key[i], pair[i].section, pair[i].key);
    if ((cfg->series_beam_tilt_x[0] || cfg->series_beam_tilt_y[0]) && cfg->algorithm != STEM_ALG_HRTEM)
        return STEM_FAIL(STEM_ERR_CONFIG,
                         "%s: [series] beam_tilt_x/_y tilt hrtem's plane wave: they need algorithm = "
                         "hrtem (a STEM probe's tilt is [probe] beam_tilt_x/_y, one per run)",
                         source);
    if (cfg->depths[0] && cfg->depth_every > 0)
        return STEM_FAIL(STEM_ERR_CONFIG, "%s: [output] depths and depth_every both choose the depths: give one",
                         source);
    int depths = cfg->depths[0] || cfg->depth_every > 0;
    if (depths && (cfg->opt.save_smatrix || cfg->opt.smatrix_file[0]))
        return STEM_FAIL(STEM_ERR_CONFIG,
                         "%s: [output] depths and %s: a stored S-matrix is the exit surface's, and a "
                         "thickness series needs the S-matrix at each depth: run without it",
                         source, cfg->opt.save_smatrix ? "[output] save_smatrix" : "[simulation] smatrix_file");
    stem_series s;
    STEM_TRY(stem_series_build(cfg, &s));
    stem_series_free(&s);
    return STEM_OK;
}

/* [scan]'s window: inside the cell in fractional units, and in order (a single wave has none). */
static int validate_scan_window(const stem_config *cfg, const char *source)
{
    if (cfg->scan_units == STEM_SCAN_FRACTIONAL) {
        const double v[4] = {cfg->x_start, cfg->x_end, cfg->y_start, cfg->y_end};
        const char *n[4] = {"x_start", "x_end", "y_start", "y_end"};
        for (int i = 0; i < 4; i++)
            if (v[i] < 0 || v[i] > 1)
                return STEM_FAIL(STEM_ERR_CONFIG, "%s: [scan] %s = %g is outside the cell (fractional units need 0..1)",
                                 source, n[i], v[i]);
    }
    int one_wave = cfg->algorithm == STEM_ALG_HRTEM || cfg->algorithm == STEM_ALG_CBED; /* no scan window */
    if (!one_wave && cfg->x_end < cfg->x_start)
        return STEM_FAIL(STEM_ERR_CONFIG, "%s: [scan] x_end (%g) is before x_start (%g)", source, cfg->x_end,
                         cfg->x_start);
    if (!one_wave && cfg->y_end < cfg->y_start)
        return STEM_FAIL(STEM_ERR_CONFIG, "%s: [scan] y_end (%g) is before y_start (%g)", source, cfg->y_end,
                         cfg->y_start);
    if (cfg->distributed_fft == STEM_DIST_ON && cfg->algorithm != STEM_ALG_HRTEM)
        return STEM_FAIL(STEM_ERR_CONFIG,
                         "%s: [compute] distributed_fft = on: the distributed FFT shares one plane "
                         "wave over a group's ranks, so it serves algorithm = hrtem only; a %s run cannot use it "
                         "(its ranks share probes instead): remove the key or set it to auto or off",
                         source,
                         cfg->algorithm == STEM_ALG_PRISM      ? "prism"
                             : cfg->algorithm == STEM_ALG_CBED ? "cbed"
                                                               : "multislice");
    return STEM_OK;
}

/* The focal spread given once, and a segmented detector that has segments. */
static int validate_spread_and_segments(const stem_config *cfg, const char *source)
{
    /* by value, not by key given: the effective config (written back and read again) holds all three */
    int cc = cfg->cc > 0, de = cfg->energy_spread > 0;
    if ((cc || de) && cfg->opt.focal_spread > 0)
        return STEM_FAIL(STEM_ERR_CONFIG,
                         "%s: [probe] focal_spread and Cc/energy_spread describe the same spread: give one", source);
    if (cc != de)
        return STEM_FAIL(STEM_ERR_CONFIG, "%s: [probe] %s needs %s as well", source, cc ? "Cc" : "energy_spread",
                         cc ? "energy_spread" : "Cc");
    if (cfg->segments == 1)
        return STEM_FAIL(STEM_ERR_CONFIG,
                         "%s: [detector] segments = 1: a segmented detector needs at least 2 segments "
                         "(0: none)",
                         source);
    if (cfg->segments > 1 && cfg->segment_outer <= cfg->segment_inner)
        return STEM_FAIL(STEM_ERR_CONFIG, "%s: [detector] segment_outer (%g mrad) must exceed segment_inner (%g mrad)",
                         source, cfg->segment_outer, cfg->segment_inner);
    return STEM_OK;
}

/* What only some algorithms have: a scan (source size, positions), an S-matrix, an exit wave. */
static int validate_for_algorithm(const stem_config *cfg, const char *source)
{
    int plane = cfg->algorithm == STEM_ALG_HRTEM, single = cfg->algorithm == STEM_ALG_CBED;
    if ((plane || single) && cfg->opt.source_size > 0)
        return STEM_FAIL(STEM_ERR_CONFIG, "%s: [probe] source_size blurs a scan: not with algorithm = %s", source,
                         plane ? "hrtem" : "cbed");
    if ((plane || single) && cfg->positions[0])
        return STEM_FAIL(STEM_ERR_CONFIG, "%s: [scan] positions: algorithm = %s has %s", source,
                         plane ? "hrtem" : "cbed", plane ? "no probe" : "one probe, at [scan] x_start, y_start");
    int prism = cfg->algorithm == STEM_ALG_PRISM;
    if ((cfg->opt.save_smatrix || cfg->opt.smatrix_file[0]) && !prism)
        return STEM_FAIL(STEM_ERR_CONFIG, "%s: %s needs algorithm = prism (only PRISM has an S-matrix)", source,
                         cfg->opt.save_smatrix ? "[output] save_smatrix" : "[simulation] smatrix_file");
    if (cfg->opt.smatrix_file[0] && cfg->opt.potential_file[0])
        return STEM_FAIL(STEM_ERR_CONFIG,
                         "%s: [simulation] smatrix_file and potential_file: a stored S-matrix needs "
                         "no potential: give one",
                         source);
    if (cfg->opt.save_exit_wave && !plane)
        return STEM_FAIL(STEM_ERR_CONFIG, "%s: [output] save_exit_wave needs algorithm = hrtem", source);
    return STEM_OK;
}

/* [scan] positions place the probes alone: no grid keys beside them, no source-size blur. */
static int validate_positions(const stem_config *cfg, const char *source)
{
    if (!cfg->positions[0]) return STEM_OK;
    static const char *grid_keys[] = {"units", "x_start", "x_end", "y_start", "y_end", "step"};
    for (size_t i = 0; i < sizeof grid_keys / sizeof *grid_keys; i++)
        if (stem_config_given(cfg, "scan", grid_keys[i]))
            return STEM_FAIL(STEM_ERR_CONFIG, "%s: [scan] positions and [scan] %s both place the probes: give one",
                             source, grid_keys[i]);
    if (cfg->opt.source_size > 0)
        return STEM_FAIL(STEM_ERR_CONFIG,
                         "%s: [probe] source_size blurs the images over a scan grid: not with "
                         "[scan] positions",
                         source);
    return STEM_OK;
}

/* Keys that do nothing as given, or a name a reader will not recognise: warned, not refused. */
static void warn_without_effect(const stem_config *cfg, const char *source)
{
    if (cfg->opt.thermal == 0 && cfg->frozen_phonons > 1)
        stem_warn("%s: frozen_phonons = %d but [simulation] thermal = false: configurations are identical", source,
                  cfg->frozen_phonons);
    if (stem_config_given(cfg, "simulation", "supersampling"))
        stem_warn("%s: [simulation] supersampling has no effect any more: every atom's potential is placed at its "
                  "exact position (docs/physics.md)",
                  source);
    size_t n = strlen(cfg->output_file);
    if (cfg->opt.layout_emd && (n < 4 || strcasecmp(cfg->output_file + n - 4, ".emd")))
        stem_warn("%s: [output] layout = emd writes %s, which hyperspy's hs.load recognises only by the .emd "
                  "extension (py4DSTEM reads either): name it .emd",
                  source, cfg->output_file);
}

/* Checks that involve several keys, in the order a config is read. */
static int validate(stem_config *cfg, const char *source)
{
    STEM_TRY(merge_aliases(cfg, source));
    cfg->x_end_given = stem_config_given(cfg, "scan", "x_end");
    cfg->y_end_given = stem_config_given(cfg, "scan", "y_end");
    cfg->batch_size_given = stem_config_given(cfg, "compute", "batch_size");
    if (!cfg->xyz[0]) return STEM_FAIL(STEM_ERR_CONFIG, "%s: missing required key [sample] xyz", source);
    STEM_TRY(validate_scan_window(cfg, source));
    /* the default BF/ABF/ADF/HAADF are STEM detectors: an HRTEM run's band limit need not
     * reach 60 mrad, so it gets only the ranges its config names */
    if (cfg->n_images == 0 && cfg->algorithm != STEM_ALG_HRTEM) default_images(cfg);
    STEM_TRY(validate_spread_and_segments(cfg, source));
    STEM_TRY(validate_for_algorithm(cfg, source));
    STEM_TRY(validate_positions(cfg, source));
    STEM_TRY(validate_series(cfg, source));
    warn_without_effect(cfg, source);
    return STEM_OK;
}

static int report(parse_ctx *c, int line)
{
    if (line == -1) return STEM_FAIL(STEM_ERR_CONFIG, "cannot open config file '%s': %s", c->source, strerror(errno));
    if (line == -2) return STEM_FAIL(STEM_ERR_MEMORY, "out of memory while parsing '%s'", c->source);
    if (c->err) return STEM_FAIL(c->err, "%s:%d: %s", c->source, line, c->msg);
    return STEM_FAIL(STEM_ERR_CONFIG, "%s:%d: syntax error (expected '[section]' or 'key = value')", c->source, line);
}

/* inih reads at most INI_MAX_LINE - 1 characters of a line and parses the
 * rest as a line of its own, which would cut a long value (a path) short or
 * report a baffling syntax error. Refuse such lines by number. */
static int line_too_long(const char *source, int line)
{
    return STEM_FAIL(STEM_ERR_CONFIG,
                     "%s:%d: line longer than %d characters (the INI parser's limit); shorten it "
                     "(e.g. a path relative to the config file) or pass the value with --set section.key=value",
                     source, line, INI_MAX_LINE - 1);
}

static int check_line_lengths(const char *source, const char *text)
{
    int line = 1, len = 0;
    for (const char *p = text; *p; p++) {
        if (*p == '\n')
            line++, len = 0;
        else if (++len >= INI_MAX_LINE)
            return line_too_long(source, line);
    }
    return STEM_OK;
}

/* The comment and indentation rules (docs/config.md), applied before inih sees the
 * text (in place, keeping line numbers): ';' starts a comment anywhere on a
 * line (inih would want a space before it), and leading whitespace is
 * ignored (inih would read an indented line as the continuation of the
 * previous value). '#' comments at the start of a line are inih's own. */
static void strip_comments_and_indent(char *text)
{
    char *out = text;
    for (const char *p = text; *p;) {
        while (*p == ' ' || *p == '\t') p++;
        while (*p && *p != '\n' && *p != ';') *out++ = *p++;
        while (*p && *p != '\n') p++; /* the comment */
        if (*p == '\n') *out++ = *p++;
    }
    *out = 0;
}

/* Windows' CR LF ends a line as LF does (inih trims the CR), but a CR alone (classic Mac
 * OS line endings) would make the whole file one line: its first [section] and nothing
 * else, then a baffling "missing key". Refused by line. */
static int check_line_endings(const char *source, const char *text)
{
    int line = 1;
    for (const char *p = text; *p; p++) {
        if (*p == '\n')
            line++;
        else if (*p == '\r' && p[1] != '\n')
            return STEM_FAIL(STEM_ERR_CONFIG,
                             "%s:%d: a carriage return (CR) not followed by a line feed: the file has "
                             "classic Mac (CR-only) line endings, which read as one line; convert them "
                             "(tr '\\r' '\\n' < old.ini > new.ini)",
                             source, line);
    }
    return STEM_OK;
}

/* Parse one in-memory text (not NUL-terminated inside: len bytes). */
static int parse_text(stem_config *cfg, const char *name, const char *text, size_t len, parse_ctx *c)
{
    if (memchr(text, 0, len)) return STEM_FAIL(STEM_ERR_CONFIG, "%s: binary data (NUL byte) in a config file", name);
    STEM_TRY(check_line_endings(name, text));
    STEM_TRY(check_line_lengths(name, text));
    char *copy = stem_alloc(len + 1, "config text");
    if (!copy) return STEM_ERR_MEMORY;
    memcpy(copy, text, len + 1);
    strip_comments_and_indent(copy);
    *c = (parse_ctx){.cfg = cfg, .source = name};
    int line = ini_parse_string(copy, config_handler, c);
    free(copy);
    if (line || c->err) return report(c, line ? line : 0);
    return STEM_OK;
}

int stem_config_load_string(stem_config *cfg, const char *name, const char *text)
{
    stem_config_defaults(cfg);
    parse_ctx c;
    STEM_TRY(parse_text(cfg, name, text, strlen(text), &c));
    return validate(cfg, name);
}

static int apply_override(parse_ctx *c, const char *arg)
{
    char buf[STEM_PATH_MAX + 256];
    snprintf(buf, sizeof buf, "%s", arg);
    char *eq = strchr(buf, '='), *dot = strchr(buf, '.');
    if (!eq || !dot || dot > eq) return STEM_FAIL(STEM_ERR_USAGE, "--set '%s': expected section.key=value", arg);
    if (dot == buf || dot + 1 == eq)
        return STEM_FAIL(STEM_ERR_USAGE, "--set '%s': no %s before the '%s': expected section.key=value", arg,
                         dot == buf ? "section" : "key", dot == buf ? "." : "=");
    *eq = 0;
    *dot = 0;
    if (strchr(eq + 1, ';'))
        return STEM_FAIL(STEM_ERR_CONFIG,
                         "--set '%s': ';' starts a comment in config files, so no value may contain it", arg);
    c->err = 0;
    config_handler(c, buf, dot + 1, eq + 1);
    if (c->err) return STEM_FAIL(c->err, "--set %s: %s", arg, c->msg);
    return STEM_OK;
}

int stem_config_load(stem_config *cfg, const char *path, int n_overrides, char *const *overrides)
{
    stem_config_defaults(cfg);
    snprintf(cfg->config_path, sizeof cfg->config_path, "%s", path);
    char *text;
    size_t len;
    STEM_TRY(stem_input_read_all(path, "config file", STEM_ERR_CONFIG, &text, &len));
    parse_ctx c;
    int rc = parse_text(cfg, path, text, len, &c);
    free(text);
    if (rc) return rc;
    c.allow_repeat = 1;
    for (int i = 0; i < n_overrides; i++) STEM_TRY(apply_override(&c, overrides[i]));
    return validate(cfg, path);
}

static void format_value(const key_spec *k, const stem_config *cfg, char *out, size_t n)
{
    const void *f = (const char *)cfg + k->offset;
    switch (k->type) {
    case K_DOUBLE: snprintf(out, n, "%.17g", *(const double *)f); break;
    case K_INT: snprintf(out, n, "%d", *(const int *)f); break;
    case K_INT_AUTO:
        if (*(const int *)f)
            snprintf(out, n, "%d", *(const int *)f);
        else
            snprintf(out, n, "auto");
        break;
    case K_LONG: snprintf(out, n, "%ld", *(const long *)f); break;
    case K_BOOL: snprintf(out, n, "%s", *(const int *)f ? "true" : "false"); break;
    case K_STRING: snprintf(out, n, "%s", (const char *)f); break;
    case K_ENUM: {
        int idx = *(const int *)f;
        const char *p = k->choices;
        while (idx-- > 0 && strchr(p, '|')) p = strchr(p, '|') + 1;
        size_t len = strchr(p, '|') ? (size_t)(strchr(p, '|') - p) : strlen(p);
        snprintf(out, n, "%.*s", (int)len, p);
        break;
    }
    }
}

char *stem_config_to_ini(const stem_config *cfg)
{
    char *buf = NULL;
    size_t size = 0;
    FILE *m = open_memstream(&buf, &size);
    if (!m) return NULL;
    const char *section = "";
    for (int i = 0; i < stem_config_n_keys; i++) {
        char v[STEM_PATH_MAX + 32];
        if (is_alias(&stem_config_keys[i])) continue; /* merged into the key it names */
        if (strcmp(section, stem_config_keys[i].section)) {
            section = stem_config_keys[i].section;
            fprintf(m, "%s[%s]\n", i ? "\n" : "", section);
        }
        format_value(&stem_config_keys[i], cfg, v, sizeof v);
        if (stem_config_keys[i].type == K_STRING && !v[0]) continue; /* an optional path not given */
        fprintf(m, "%s = %s\n", stem_config_keys[i].key, v);         /* values never hold ';' (a comment) */
    }
    fprintf(m, "\n[images]\n");
    for (int i = 0; i < cfg->n_images; i++)
        fprintf(m, "%s = %.17g %.17g\n", cfg->images[i].name, cfg->images[i].inner_mrad, cfg->images[i].outer_mrad);
    fclose(m);
    return buf;
}

void stem_config_print_reference(FILE *out)
{
    fprintf(out, "| section | key | unit | default | meaning |\n|---|---|---|---|---|\n");
    for (int i = 0; i < stem_config_n_keys; i++) {
        const key_spec *k = &stem_config_keys[i];
        char def[64];
        /* the one string key without a default that must be given: [sample] xyz */
        snprintf(def, sizeof def, "%s", k->def[0] ? k->def : k->offset == OFF(xyz) ? "(required)" : "(none)");
        fprintf(out, "| %s | %s | %s | %s | %s", k->section, k->key, k->unit, def, k->doc);
        if (k->type == K_ENUM) { /* the choices' '|' escaped: the reference is a Markdown table (docs/config.md) */
            fputs(" (", out);
            for (const char *c = k->choices; *c; c++) fputs(*c == '|' ? "\\|" : (char[2]){*c, 0}, out);
            fputs(")", out);
        }
        fputs(" |\n", out);
    }
    fprintf(
        out,
        "| images | NAME | mrad | BF, ABF, ADF, HAADF | `NAME = inner outer`: a 2D image integrating all "
        "intensity between the two angles; defaults BF 0..a, ABF a/2..a, ADF a..3a, HAADF 3a..max (a = semiangle) |\n");
}

int stem_config_value(const stem_config *cfg, const char *section, const char *key, char *out, size_t n)
{
    const key_spec *k = stem_config_find_key(section, key);
    if (!k) return -1;
    format_value(k, cfg, out, n);
    return 0;
}
