/* config.ini and XYZ parsing: values, defaults, the "did you mean" hint,
 * duplicate keys, --set overrides, and error messages that carry the file
 * and line (captured from stderr). */
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atoms.h"
#include "../../io/config.h"
#include "../../io/xyz.h"
#include "check.h"
#include "config.h"
#include "series.h"

/* Parse `text`; return the status and the captured message (malloc'd). */
static int parse(const char *text, stem_config *cfg, char **msg)
{
    check_capture cap;
    capture_stderr_begin(&cap);
    int err = stem_config_load_string(cfg, "t.ini", text);
    *msg = capture_stderr_end(&cap);
    return err;
}

static void test_values_and_defaults(void)
{
    stem_config c, d0;
    char *msg;
    int err = parse("[sample]\nxyz = model.xyz\ntile_x = 3\n[beam]\nenergy = 300\n[probe]\nsemiangle = 24.5\n"
                    "defocus = -55\n[simulation]\nalgorithm = PRISM\nthermal = yes\ninterpolation_x = 2\n",
                    &c, &msg);
    CHECK_INT_EQ(err, STEM_OK);
    CHECK(!strcmp(c.xyz, "model.xyz"));
    CHECK_INT_EQ(c.tile_x, 3);
    CHECK_INT_EQ(c.tile_y, 1);
    CHECK_CLOSE(c.energy_kev, 300, 0);
    CHECK_CLOSE(c.semiangle_mrad, 24.5, 0);
    CHECK_CLOSE(c.defocus, -55, 0);
    CHECK_INT_EQ(c.algorithm, STEM_ALG_PRISM);
    CHECK_INT_EQ(c.opt.thermal, 1);
    CHECK_INT_EQ(c.interpolation_x, 2);
    CHECK_INT_EQ(c.interpolation_y, 4);
    CHECK_CLOSE(c.pixel_size, 0.1, 0);
    CHECK(stem_config_given(&c, "probe", "semiangle"));
    CHECK(!stem_config_given(&c, "probe", "cs"));
    /* default images follow the semiangle: BF 0..a, ABF a/2..a, ADF a..3a, HAADF 3a.. */
    CHECK_INT_EQ(c.n_images, 4);
    CHECK(!strcmp(c.images[0].name, "BF") && c.images[0].outer_mrad == 24.5);
    CHECK(!strcmp(c.images[1].name, "ABF") && c.images[1].inner_mrad == 12.25);
    CHECK(!strcmp(c.images[2].name, "ADF") && c.images[2].outer_mrad == 73.5);
    CHECK(!strcmp(c.images[3].name, "HAADF") && c.images[3].inner_mrad == 73.5);
    CHECK_INT_EQ(c.opt.gpu_deterministic, 1); /* bitwise reproducible GPU sums unless asked otherwise */
    free(msg);
    err = parse("[sample]\nxyz = m.xyz\n[compute]\ngpu_deterministic = off\n", &d0, &msg);
    CHECK_INT_EQ(err, STEM_OK);
    CHECK_INT_EQ(d0.opt.gpu_deterministic, 0);
    free(msg);
    /* the effective config written to the output parses back to the same values */
    char *ini = stem_config_to_ini(&c);
    REQUIRE(ini);
    stem_config d;
    err = parse(ini, &d, &msg);
    CHECK_INT_EQ(err, STEM_OK);
    CHECK(!strcmp(d.xyz, c.xyz) && d.tile_x == c.tile_x && d.energy_kev == c.energy_kev &&
          d.semiangle_mrad == c.semiangle_mrad && d.algorithm == c.algorithm && d.opt.thermal == c.opt.thermal &&
          d.n_images == c.n_images && d.images[3].inner_mrad == c.images[3].inner_mrad && d.opt.seed == c.opt.seed);
    free(msg);
    free(ini);
    /* explicit images */
    err = parse("[sample]\nxyz = m.xyz\n[images]\nMAADF = 40 80\nmy_bf = 0 10\n", &c, &msg);
    CHECK_INT_EQ(err, STEM_OK);
    CHECK(c.n_images == 2 && !strcmp(c.images[0].name, "MAADF") && c.images[0].inner_mrad == 40 &&
          c.images[1].outer_mrad == 10);
    free(msg);
}

/* An error: status, and message pieces that must appear. */
static void expect_error(const char *text, int code, const char *piece1, const char *piece2)
{
    stem_config c;
    char *msg;
    int err = parse(text, &c, &msg);
    CHECK_MSG(err == code, "status %d, expected %d for:\n%s", err, code, text);
    if (piece1) CHECK_CONTAINS(msg, piece1);
    if (piece2) CHECK_CONTAINS(msg, piece2);
    free(msg);
}

static void test_errors(void)
{
    /* unknown key: nearest key suggested, with the line */
    expect_error("[sample]\nxyz = m.xyz\n[probe]\nsemiangel = 20\n", STEM_ERR_CONFIG, "t.ini:4",
                 "did you mean [probe] semiangle");
    expect_error("[simulation]\npixelsize = 0.1\n[sample]\nxyz = m.xyz\n", STEM_ERR_CONFIG, "t.ini:2",
                 "did you mean [simulation] pixel_size");
    /* right key, wrong section */
    expect_error("[sample]\nxyz = m.xyz\n[beam]\nsemiangle = 20\n", STEM_ERR_CONFIG, "unknown key [beam] semiangle",
                 "did you mean [probe] semiangle");
    expect_error("[sample]\nxyz = m.xyz\n[simulation]\nfrozen_phonon = 3\n", STEM_ERR_CONFIG, "t.ini:4",
                 "[simulation] frozen_phonons");
    /* nothing close: no suggestion */
    {
        stem_config c;
        char *msg;
        CHECK_INT_EQ(parse("[sample]\nxyz = m.xyz\n[probe]\nqqqqqqqqqqqqqqqqqqqq = 1\n", &c, &msg), STEM_ERR_CONFIG);
        CHECK_CONTAINS(msg, "unknown key");
        CHECK_MSG(!strstr(msg, "did you mean"), "suggestion for a key nothing like any: %s", msg);
        free(msg);
    }
    /* duplicate key: an error naming the key and the second line */
    expect_error("[sample]\nxyz = m.xyz\n[probe]\nsemiangle = 20\ndefocus = 0\nsemiangle = 25\n", STEM_ERR_CONFIG,
                 "duplicate key [probe] semiangle", "t.ini:6");
    expect_error("[sample]\nxyz = m.xyz\n[images]\nBF = 0 20\nBF = 0 25\n", STEM_ERR_CONFIG, "duplicate image 'BF'",
                 "t.ini:5");
    /* bad values */
    expect_error("[sample]\nxyz = m.xyz\n[beam]\nenergy = 200kV\n", STEM_ERR_CONFIG, "t.ini:4", "not a finite number");
    expect_error("[sample]\nxyz = m.xyz\n[beam]\nenergy = -5\n", STEM_ERR_CONFIG, "t.ini:4", "out of range");
    expect_error("[sample]\nxyz = m.xyz\n[simulation]\nfrozen_phonons = 2.5\n", STEM_ERR_CONFIG, "t.ini:4", "integer");
    expect_error("[sample]\nxyz = m.xyz\n[simulation]\nalgorithm = prims\n", STEM_ERR_CONFIG, "t.ini:4",
                 "multislice|prism");
    expect_error("[sample]\nxyz = m.xyz\n[simulation]\nthermal = maybe\n", STEM_ERR_CONFIG, "t.ini:4", "true or false");
    expect_error("[sample]\nxyz = m.xyz\n[images]\nX = 50 20\n", STEM_ERR_CONFIG, "t.ini:4", "inner < outer");
    expect_error("[sample]\nxyz = m.xyz\n[scan]\nx_start = 0.6\nx_end = 0.4\n", STEM_ERR_CONFIG, "x_end", NULL);
    expect_error("[probe]\nsemiangle = 20\n", STEM_ERR_CONFIG, "missing required key [sample] xyz", NULL);
    expect_error("[sample]\nxyz = m.xyz\nthis is not ini\n", STEM_ERR_CONFIG, "t.ini:3", NULL);
    /* edit distance used for the hints */
    CHECK_INT_EQ(stem_edit_distance("kitten", "sitting"), 3);
    CHECK_INT_EQ(stem_edit_distance("semiangle", "semiangel"), 2);
    CHECK_INT_EQ(stem_edit_distance("", "abc"), 3);
    CHECK_INT_EQ(stem_edit_distance("Energy", "energy"), 0);
}

/* --set section.key=value overrides (stem_config_load on a file). */
static void test_overrides(void)
{
    char path[] = "/tmp/stemsim_test_cfg_XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    FILE *f = fdopen(fd, "w");
    REQUIRE(f);
    fputs("[sample]\nxyz = m.xyz\n[probe]\nsemiangle = 20\n[output]\nfile = a.h5\n", f);
    fclose(f);
    stem_config c;
    char *set[] = {"probe.semiangle=25.5", "simulation.algorithm=prism", "output.file=run.v2.h5", "probe.semiangle=26"};
    CHECK_INT_EQ(stem_config_load(&c, path, 3, set), STEM_OK);
    CHECK_CLOSE(c.semiangle_mrad, 25.5, 0);
    CHECK_INT_EQ(c.algorithm, STEM_ALG_PRISM);
    CHECK(!strcmp(c.output_file, "run.v2.h5"));
    CHECK(stem_config_given(&c, "simulation", "algorithm"));
    /* images default from the overridden semiangle */
    CHECK_CLOSE(c.images[0].outer_mrad, 25.5, 0);
    /* an override may be repeated: the last wins */
    CHECK_INT_EQ(stem_config_load(&c, path, 4, set), STEM_OK);
    CHECK_CLOSE(c.semiangle_mrad, 26, 0);
    /* bad overrides */
    check_capture cap;
    char *bad1[] = {"probe.semiangel=25"};
    capture_stderr_begin(&cap);
    int err = stem_config_load(&c, path, 1, bad1);
    char *msg = capture_stderr_end(&cap);
    CHECK_INT_EQ(err, STEM_ERR_CONFIG);
    CHECK_CONTAINS(msg, "--set probe.semiangel=25");
    CHECK_CONTAINS(msg, "did you mean [probe] semiangle");
    free(msg);
    char *tiny[] = {"probe.defocus=1e-310"}; /* finite, if subnormal: accepted (it was "not a finite number") */
    CHECK_INT_EQ(stem_config_load(&c, path, 1, tiny), STEM_OK);
    char *no_key[] = {"beam.=300"}; /* named as such, not answered with a key's suggestion */
    capture_stderr_begin(&cap);
    err = stem_config_load(&c, path, 1, no_key);
    msg = capture_stderr_end(&cap);
    CHECK_INT_EQ(err, STEM_ERR_USAGE);
    CHECK_CONTAINS(msg, "no key before the '='");
    free(msg);
    char *bad2[] = {"probesemiangle=25"};
    capture_stderr_begin(&cap);
    err = stem_config_load(&c, path, 1, bad2);
    msg = capture_stderr_end(&cap);
    CHECK_INT_EQ(err, STEM_ERR_USAGE);
    CHECK_CONTAINS(msg, "section.key=value");
    free(msg);
    char *bad3[] = {"beam.energy=0"};
    capture_stderr_begin(&cap);
    err = stem_config_load(&c, path, 1, bad3);
    msg = capture_stderr_end(&cap);
    CHECK_INT_EQ(err, STEM_ERR_CONFIG);
    CHECK_CONTAINS(msg, "out of range");
    free(msg);
    remove(path);
    /* a file that does not exist */
    capture_stderr_begin(&cap);
    err = stem_config_load(&c, "/nonexistent/stemsim.ini", 0, NULL);
    msg = capture_stderr_end(&cap);
    CHECK_INT_EQ(err, STEM_ERR_CONFIG);
    CHECK_CONTAINS(msg, "/nonexistent/stemsim.ini");
    free(msg);
}

static int read_xyz(const char *text, stem_atoms *a, char **msg)
{
    check_capture cap;
    capture_stderr_begin(&cap);
    int err = stem_xyz_read_string("m.xyz", text, a);
    *msg = capture_stderr_end(&cap);
    return err;
}

static void expect_xyz_error(const char *text, const char *where, const char *what)
{
    stem_atoms a;
    char *msg;
    int err = read_xyz(text, &a, &msg);
    CHECK_MSG(err == STEM_ERR_INPUT, "status %d for:\n%s", err, text);
    CHECK_CONTAINS(msg, where);
    if (what) CHECK_CONTAINS(msg, what);
    free(msg);
}

static void test_xyz(void)
{
    stem_atoms a;
    char *msg;
    int err = read_xyz("a model\n 5 6 7\n14 1 2 3 1 0.05\n\n6 0.5 0.5 0.5\n79 5 6 7 0.25\n-1\nanything after the end\n",
                       &a, &msg);
    CHECK_INT_EQ(err, STEM_OK);
    CHECK_INT_EQ(a.n, 3);
    CHECK(a.cell[0] == 5 && a.cell[1] == 6 && a.cell[2] == 7);
    CHECK(a.Z[0] == 14 && a.x[0] == 1 && a.y[0] == 2 && a.z[0] == 3 && a.occupancy[0] == 1 && a.sigma[0] == 0.05);
    CHECK(a.Z[1] == 6 && a.occupancy[1] == 1 && a.sigma[1] == 0); /* optional columns default to 1 and 0 */
    CHECK(a.Z[2] == 79 && a.occupancy[2] == 0.25 && a.sigma[2] == 0);
    free(msg);
    stem_atoms_free(&a);
    /* Windows line endings and no final newline */
    err = read_xyz("crlf\r\n4 4 4\r\n14 1 2 3 0.5 0.1\r\n-1\r\n", &a, &msg);
    CHECK_INT_EQ(err, STEM_OK);
    CHECK(a.n == 1 && a.cell[2] == 4 && a.sigma[0] == 0.1);
    free(msg);
    stem_atoms_free(&a);
    err = read_xyz("c\n4 4 4\n14 1 2 3", &a, &msg);
    CHECK(err == STEM_OK && a.n == 1);
    free(msg);
    stem_atoms_free(&a);
    /* the shipped model */
    REQUIRE(stem_xyz_read(STEMSIM_TEST_DATA_DIR "/Si100_unitcell.xyz", &a) == STEM_OK);
    CHECK_INT_EQ(a.n, 8);
    CHECK_CLOSE(a.cell[0], 5.43, 0);
    CHECK_CLOSE(a.sigma[7], 0.076, 0);
    stem_atoms_free(&a);

    /* every error names the file and the line */
    expect_xyz_error("c\n5 6\n14 1 1 1\n", "m.xyz:2", "cell size");
    expect_xyz_error("c\n5 6 -7\n14 1 1 1\n", "m.xyz:2", "positive");
    expect_xyz_error("c\n5 5 5\n14 1 1 1\n14 1 1\n", "m.xyz:4", "expected 'Z x y z");
    expect_xyz_error("c\n5 5 5\n14 1 1 1\n\n\n0 1 1 1\n", "m.xyz:6", "not an element");
    expect_xyz_error("c\n5 5 5\n104 1 1 1\n", "m.xyz:3", "not an element");
    expect_xyz_error("c\n5 5 5\n14.5 1 1 1\n", "m.xyz:3", "not an element");
    expect_xyz_error("c\n5 5 5\n14 1 1 1\n14 6 1 1\n", "m.xyz:4", "outside the cell");
    expect_xyz_error("c\n5 5 5\n14 1 -0.1 1\n", "m.xyz:3", "y = -0.1");
    expect_xyz_error("c\n5 5 5\n14 1 1 1 1.5\n", "m.xyz:3", "occupancy");
    expect_xyz_error("c\n5 5 5\n14 1 1 1 1 -0.1\n", "m.xyz:3", "rms displacement");
    expect_xyz_error("c\n5 5 5\n14 1 1 1 1 0.1 junk\n", "m.xyz:3", NULL);
    expect_xyz_error("c\n5 5 5\n14 1 nan 1\n", "m.xyz:3", NULL);
    expect_xyz_error("c\n5 5 5\n-1\n", "m.xyz", "no atoms");
    expect_xyz_error("only a comment", "m.xyz", "cell size");
    /* a file: the path is named; a NUL byte is refused */
    char path[] = "/tmp/stemsim_test_xyz_XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    REQUIRE(write(fd, "c\n5 5 5\n14 1 1 1\n14 1 1 9\n", 25) == 25);
    close(fd);
    check_capture cap;
    capture_stderr_begin(&cap);
    err = stem_xyz_read(path, &a);
    msg = capture_stderr_end(&cap);
    CHECK_INT_EQ(err, STEM_ERR_INPUT);
    char where[64];
    snprintf(where, sizeof where, "%s:4", path);
    CHECK_CONTAINS(msg, where);
    free(msg);
    fd = open(path, O_WRONLY | O_TRUNC);
    REQUIRE(fd >= 0 && write(fd, "c\n5 5 5\n14 1\0 1 1\n", 18) == 18);
    close(fd);
    capture_stderr_begin(&cap);
    err = stem_xyz_read(path, &a);
    msg = capture_stderr_end(&cap);
    CHECK_INT_EQ(err, STEM_ERR_INPUT);
    CHECK_CONTAINS(msg, "NUL");
    free(msg);
    remove(path);
}

/* [series] values: lists, inclusive ranges without drift, the point order. */
/* [output] depths and depth_every: rounding to slices, the depth axis fastest, refusals. */
static void test_depths(void)
{
    stem_config cfg;
    stem_series s;
    char *msg = NULL;
    CHECK(parse("[sample]\nxyz = a.xyz\n[series]\ndefocus = -20 20\n[output]\ndepths = 2 4.1 8\n"
                "[simulation]\nslice_thickness = 2\n",
                &cfg, &msg) == STEM_OK);
    free(msg);
    CHECK(stem_series_active(&cfg));
    CHECK(stem_series_build(&cfg, &s) == STEM_OK);
    CHECK(stem_series_resolve_depths(&s, &cfg, 8) == STEM_OK); /* 4.1 -> slice 2 (4 Angstrom), 8 -> 4 */
    CHECK(s.n_points == 6 && s.n[STEM_SERIES_DEPTH] == 3 && stem_series_per_tilt(&s) == 6);
    CHECK(s.depth_slice && s.depth_slice[0] == 1 && s.depth_slice[1] == 2 && s.depth_slice[2] == 4);
    CHECK(s.v[STEM_SERIES_DEPTH][1] == 4 && s.v[STEM_SERIES_DEPTH][2] == 8);
    double tx, ty, df;
    stem_series_values(&s, 4, &tx, &ty, &df); /* depth fastest: point 4 is defocus 20, depth 4 */
    CHECK(df == 20 && stem_series_tilt_of(&s, 4) == 0);
    stem_series_free(&s);
    CHECK(stem_series_build(&cfg, &s) == STEM_OK);
    CHECK(stem_series_resolve_depths(&s, &cfg, 6) == STEM_ERR_CONFIG); /* 8 Angstrom is below 3 slices of 2 */
    stem_series_free(&s);
    CHECK(parse("[sample]\nxyz = a.xyz\n[output]\ndepth_every = 3\n", &cfg, &msg) == STEM_OK);
    free(msg);
    CHECK(stem_series_active(&cfg) && stem_series_build(&cfg, &s) == STEM_OK);
    CHECK(stem_series_resolve_depths(&s, &cfg, 20) == STEM_OK); /* 3, 6, 9 and the exit surface, 10 */
    CHECK(s.n[STEM_SERIES_DEPTH] == 4 && s.depth_slice[2] == 9 && s.depth_slice[3] == 10 && s.n_points == 4);
    stem_series_free(&s);
    CHECK(parse("[sample]\nxyz = a.xyz\n[output]\ndepths = 5 3\n[simulation]\nslice_thickness = 1\n", &cfg, &msg) ==
          STEM_OK);
    free(msg);
    CHECK(stem_series_build(&cfg, &s) == STEM_OK);
    CHECK(stem_series_resolve_depths(&s, &cfg, 10) == STEM_ERR_CONFIG); /* not increasing */
    stem_series_free(&s);
    CHECK(parse("[sample]\nxyz = a.xyz\n[output]\ndepths = 2 2.2\n[simulation]\nslice_thickness = 1\n", &cfg, &msg) ==
          STEM_OK);
    free(msg);
    CHECK(stem_series_build(&cfg, &s) == STEM_OK);
    CHECK(stem_series_resolve_depths(&s, &cfg, 10) == STEM_ERR_CONFIG); /* the same slice twice */
    stem_series_free(&s);
    /* a 9 Angstrom sample in slices of 2: four of 2 and a last one of 1; 8.6 is nearer the exit (9) than 8 */
    CHECK(parse("[sample]\nxyz = a.xyz\n[series]\ndefocus = 0\n[output]\ndepths = 2 8.6\n", &cfg, &msg) == STEM_OK);
    free(msg);
    CHECK(stem_series_build(&cfg, &s) == STEM_OK);
    CHECK(stem_series_resolve_depths(&s, &cfg, 9) == STEM_OK);
    CHECK(s.depth_slice[0] == 1 && s.depth_slice[1] == 5 && s.v[STEM_SERIES_DEPTH][1] == 9);
    stem_series_free(&s);
    CHECK(parse("[sample]\nxyz = a.xyz\n[series]\ndefocus = 0\n[output]\ndepths = 9.6\n", &cfg, &msg) == STEM_OK);
    free(msg);
    CHECK(stem_series_build(&cfg, &s) == STEM_OK);
    CHECK(stem_series_resolve_depths(&s, &cfg, 9) ==
          STEM_ERR_CONFIG); /* more than half the last slice below the exit */
    stem_series_free(&s);
    CHECK(parse("[sample]\nxyz = a.xyz\n[series]\ndefocus = 0\n[output]\ndepth_every = 2\n", &cfg, &msg) == STEM_OK);
    free(msg);
    CHECK(stem_series_build(&cfg, &s) == STEM_OK);
    CHECK(stem_series_resolve_depths(&s, &cfg, 9) == STEM_OK); /* slices 2, 4 and the exit, 5: 4, 8 and 9 Angstrom */
    CHECK(s.n[STEM_SERIES_DEPTH] == 3 && s.depth_slice[2] == 5 && s.v[STEM_SERIES_DEPTH][2] == 9 &&
          s.v[STEM_SERIES_DEPTH][1] == 8);
    stem_series_free(&s);
    CHECK(parse("[sample]\nxyz = a.xyz\n[output]\ndepths = 0 2\n", &cfg, &msg) == STEM_ERR_CONFIG);
    free(msg);
    CHECK(parse("[sample]\nxyz = a.xyz\n[output]\ndepths = 2\ndepth_every = 2\n", &cfg, &msg) == STEM_ERR_CONFIG);
    free(msg);
    /* every algorithm records depths; a stored S-matrix is the exit surface's */
    for (int a = 0; a < 4; a++) {
        static const char *alg[] = {"multislice", "prism", "hrtem", "cbed"};
        char ini[160];
        snprintf(ini, sizeof ini, "[sample]\nxyz = a.xyz\n[simulation]\nalgorithm = %s\n[output]\ndepths = 2\n",
                 alg[a]);
        CHECK_MSG(parse(ini, &cfg, &msg) == STEM_OK, "depths with algorithm = %s: %s", alg[a], msg ? msg : "");
        free(msg);
    }
    CHECK(parse("[sample]\nxyz = a.xyz\n[simulation]\nalgorithm = prism\n[output]\ndepths = 2\nsave_smatrix = true\n",
                &cfg, &msg) == STEM_ERR_CONFIG);
    CHECK(msg && strstr(msg, "exit surface"));
    free(msg);
}

static void test_beam_tilts(void);

static void test_series(void)
{
    double *v;
    int n;
    CHECK(stem_series_parse("-60:3:60", "t", &v, &n) == STEM_OK);
    CHECK(n == 41);
    if (n == 41) { CHECK(v[0] == -60 && v[20] == 0 && v[40] == 60); }
    free(v);
    CHECK(stem_series_parse("0:0.1:1", "t", &v, &n) == STEM_OK); /* 10 steps of an inexact 0.1: still inclusive */
    CHECK(n == 11);
    if (n == 11) CHECK_CLOSE(v[10], 1.0, 1e-12);
    free(v);
    CHECK(stem_series_parse("0:4:10", "t", &v, &n) == STEM_OK); /* stop not on the grid: the last value before it */
    CHECK(n == 3 && v[2] == 8);
    free(v);
    CHECK(stem_series_parse("5:-5:-5", "t", &v, &n) == STEM_OK);
    CHECK(n == 3 && v[0] == 5 && v[2] == -5);
    free(v);
    CHECK(stem_series_parse(" -2 0  2.5 ", "t", &v, &n) == STEM_OK);
    CHECK(n == 3 && v[0] == -2 && v[1] == 0 && v[2] == 2.5);
    free(v);
    CHECK(stem_series_parse("1:0:5", "t", &v, &n) == STEM_ERR_CONFIG);
    CHECK(stem_series_parse("1:1", "t", &v, &n) == STEM_ERR_CONFIG);
    CHECK(stem_series_parse("0x10 2", "t", &v, &n) == STEM_ERR_CONFIG);
    stem_config cfg;
    char *msg = NULL;
    CHECK(parse("[sample]\nxyz = a.xyz\n[series]\ntilt_x = 0 10\ntilt_y = -5:5:5\ndefocus = -20 20\n", &cfg, &msg) ==
          STEM_OK);
    free(msg);
    stem_series s;
    CHECK(stem_series_build(&cfg, &s) == STEM_OK);
    CHECK(s.n_points == 12 && s.n_tilts == 6 && stem_series_active(&cfg));
    double tx, ty, df;
    stem_series_values(&s, 7, &tx, &ty, &df); /* row-major, defocus fastest: (1, 0, 1) */
    CHECK(tx == 10 && ty == -5 && df == 20 && stem_series_tilt_of(&s, 7) == 3);
    stem_series_free(&s);
    CHECK(parse("[sample]\nxyz = a.xyz\ntilt_x = 7\n[probe]\nC10 = -3\n", &cfg, &msg) == STEM_OK);
    free(msg);
    CHECK(stem_series_build(&cfg, &s) == STEM_OK); /* no [series]: one point holding the single-run values */
    CHECK(s.n_points == 1 && !stem_series_active(&cfg));
    stem_series_values(&s, 0, &tx, &ty, &df);
    CHECK(tx == 7 && ty == 0 && df == -3);
    stem_series_free(&s);
    test_depths();
    test_beam_tilts();
}

static int near(double a, double b, double tol) { return fabs(a - b) <= tol; }

/* hrtem's beam tilt axes: between the sample tilts and the defoci, rounded onto the
 * cell's plane waves (lambda / L apart), distinct once rounded, inside the band. */
static void test_beam_tilts(void)
{
    stem_config cfg;
    char *msg = NULL;
    CHECK(parse("[sample]\nxyz = a.xyz\n[simulation]\nalgorithm = hrtem\n[series]\ntilt_x = 0 10\n"
                "beam_tilt_x = -3 0 3.2\nbeam_tilt_y = 0 2\ndefocus = -20 20\n",
                &cfg, &msg) == STEM_OK);
    free(msg);
    stem_series s;
    CHECK(stem_series_build(&cfg, &s) == STEM_OK);
    CHECK(s.n_points == 24 && s.n_tilts == 2 && stem_series_per_tilt(&s) == 12);
    const double cell[2] = {10, 20}, lambda = 0.02; /* plane waves 2 mrad apart in x, 1 mrad in y */
    CHECK(stem_series_resolve_beam_tilts(&s, lambda, cell, 1.0) == STEM_OK);
    CHECK(near(s.v[STEM_SERIES_BEAM_X][0], -4, 1e-12) && s.v[STEM_SERIES_BEAM_X][1] == 0 &&
          near(s.v[STEM_SERIES_BEAM_X][2], 4, 1e-12) && near(s.v[STEM_SERIES_BEAM_Y][1], 2, 1e-12));
    double tx, ty, df, bx, by;
    /* point 19 = tilt 1, beam (x 1, y 1), defocus 1: 12 + (1 * 2 + 1) * 2 + 1 */
    stem_series_values(&s, 19, &tx, &ty, &df);
    stem_series_beam_values(&s, 19, &bx, &by);
    CHECK(tx == 10 && df == 20 && bx == 0 && near(by, 2, 1e-12) && stem_series_tilt_of(&s, 19) == 1);
    stem_series_beam_values(&s, 8, &bx, &by); /* tilt 0, beam (2, 0), defocus 0 */
    CHECK(near(bx, 4, 1e-12) && by == 0);
    CHECK(stem_series_resolve_beam_tilts(&s, lambda, cell, 1.0) == STEM_OK); /* already on the grid: unchanged */
    CHECK(near(s.v[STEM_SERIES_BEAM_X][2], 4, 1e-12));
    stem_series_free(&s);
    CHECK(stem_series_build(&cfg, &s) == STEM_OK);
    CHECK(stem_series_resolve_beam_tilts(&s, lambda, cell, 0.2) == STEM_ERR_CONFIG); /* (4, 2) mrad: q 0.22 */
    stem_series_free(&s);
    CHECK(parse("[sample]\nxyz = a.xyz\n[simulation]\nalgorithm = hrtem\n[series]\nbeam_tilt_x = 0 0.9\n", &cfg,
                &msg) == STEM_OK);
    free(msg);
    CHECK(stem_series_build(&cfg, &s) == STEM_OK);
    CHECK(stem_series_resolve_beam_tilts(&s, lambda, cell, 1.0) == STEM_ERR_CONFIG); /* both on plane wave 0 */
    stem_series_free(&s);
    CHECK(parse("[sample]\nxyz = a.xyz\n[series]\nbeam_tilt_x = 0 4\n", &cfg, &msg) == STEM_ERR_CONFIG); /* STEM */
    free(msg);
}

int main(void)
{
    test_values_and_defaults();
    test_errors();
    test_overrides();
    test_xyz();
    test_series();
    return check_exit("test_config");
}
