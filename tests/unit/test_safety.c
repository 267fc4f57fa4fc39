/* Data-safety pieces that need no MPI (issue: nothing lost, nothing destroyed):
 *  - config syntax: ';' comments anywhere, indentation ignored, hexadecimal
 *    and leading-zero numbers refused, control characters in paths refused,
 *    ';' in --set values refused;
 *  - inputs that would block or poison: a FIFO as config, model or table is
 *    refused at once; a scattering table with NaN, zero widths or a missing
 *    element is an input error naming the line;
 *  - the same atom given twice (also at x = 0 and x = a) is warned about
 *    with both line numbers, distinct atoms are not;
 *  - memory: the plan counts the lookup table exactly as potential.c
 *    allocates it; cgroup v1/v2 limits are read from a fake hierarchy;
 *  - PRISM: an interpolation factor whose window cannot hold the probe is
 *    refused, and the factor the message suggests is accepted. */
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "memlimit.h"
#include "sim.h"

static char tmpdir[256];

static const char *tmp_path(const char *name)
{
    static char path[4][512];
    static int k = 0;
    k = (k + 1) % 4;
    snprintf(path[k], sizeof path[k], "%s/%s", tmpdir, name);
    return path[k];
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    REQUIRE(f);
    fputs(text, f);
    fclose(f);
}

#define SI "[sample]\nxyz = " STEMSIM_TEST_DATA_DIR "/Si100_unitcell.xyz\n"

/* Parse text; returns the status and the captured message (malloc'd). */
static int parse(const char *text, char **msg)
{
    stem_config cfg;
    check_capture c;
    capture_stderr_begin(&c);
    int rc = stem_config_load_string(&cfg, "t.ini", text);
    *msg = capture_stderr_end(&c);
    return rc;
}

static void test_config_syntax(void)
{
    stem_config cfg;
    /* ';' right after a value is a comment (inih alone wants a space before it) */
    REQUIRE(stem_config_load_string(&cfg, "t.ini", SI "[probe]\ndefocus = -12.5;underfocus\n") == STEM_OK);
    CHECK_CLOSE(cfg.defocus, -12.5, 0);
    /* indented keys and sections are ordinary lines, not continuations */
    REQUIRE(stem_config_load_string(&cfg, "t.ini", SI "  [probe]\n\tdefocus = 7\n    semiangle = 21 ; mrad\n") ==
            STEM_OK);
    CHECK_CLOSE(cfg.defocus, 7, 0);
    CHECK_CLOSE(cfg.semiangle_mrad, 21, 0);
    CHECK(stem_config_load_string(&cfg, "t.ini", SI "# a comment\n  ; another\n[beam]\nenergy = 300\n") == STEM_OK);

    const char *bad[][3] = {
        {SI "[probe]\ndefocus = 0x10\n", "plain decimal", "t.ini:4"},
        {SI "[sample]\ntile_x = 010\n", "leading zeros", "t.ini:4"},
        {SI "[probe]\ndefocus = -07.5\n", "plain decimal", "[probe] defocus"},
        {SI "[images]\nX = 0x1 20\n", "not plain decimal", "[images] X"},
        {SI "[output]\nfile = out\tput.h5\n", "control character", "[output] file"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *msg;
        CHECK_INT_EQ(parse(bad[i][0], &msg), STEM_ERR_CONFIG);
        CHECK_CONTAINS(msg, bad[i][1]);
        CHECK_CONTAINS(msg, bad[i][2]);
        free(msg);
    }
    /* plain numbers that look alike stay valid */
    REQUIRE(stem_config_load_string(&cfg, "t.ini", SI "[probe]\ndefocus = 0.5\ncs = -0\n[sample]\ntile_x = 10\n") ==
            STEM_OK);
    CHECK_CLOSE(cfg.defocus, 0.5, 0);
    CHECK_INT_EQ(cfg.tile_x, 10);

    /* --set: no ';' (it could not be written back as config text) */
    const char *path = tmp_path("set.ini");
    write_text(path, SI);
    char *over[] = {"output.file=a;b.h5"};
    check_capture c;
    capture_stderr_begin(&c);
    int rc = stem_config_load(&cfg, path, 1, over);
    char *msg = capture_stderr_end(&c);
    CHECK_INT_EQ(rc, STEM_ERR_CONFIG);
    CHECK_CONTAINS(msg, "';' starts a comment");
    free(msg);
}

/* Opening a FIFO for reading blocks until a writer comes: these must return
 * at once (a regression hangs this test until ctest's timeout). */
static void test_fifo_inputs(void)
{
    const char *fifo = tmp_path("fifo");
    REQUIRE(mkfifo(fifo, 0600) == 0);
    stem_config cfg;
    stem_atoms atoms;
    stem_kirkland table[STEM_MAX_Z + 1];
    check_capture c;
    capture_stderr_begin(&c);
    int rc_cfg = stem_config_load(&cfg, fifo, 0, NULL);
    int rc_xyz = stem_xyz_read(fifo, &atoms);
    int rc_tab = stem_kirkland_load(fifo, table);
    char *msg = capture_stderr_end(&c);
    CHECK_INT_EQ(rc_cfg, STEM_ERR_CONFIG);
    CHECK_INT_EQ(rc_xyz, STEM_ERR_INPUT);
    CHECK_INT_EQ(rc_tab, STEM_ERR_INPUT);
    CHECK_CONTAINS(msg, "reading a pipe is not supported");
    CHECK_CONTAINS(msg, "[sample] xyz");
    CHECK_CONTAINS(msg, "Kirkland");
    free(msg);
    unlink(fifo);
    /* a socket: refused, not waited on */
    const char *sock_path = tmp_path("sock");
    int sock = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    snprintf(addr.sun_path, sizeof addr.sun_path, "%s", sock_path);
    REQUIRE(sock >= 0 && bind(sock, (struct sockaddr *)&addr, sizeof addr) == 0);
    capture_stderr_begin(&c);
    CHECK_INT_EQ(stem_config_load(&cfg, sock_path, 0, NULL), STEM_ERR_CONFIG);
    msg = capture_stderr_end(&c);
    CHECK_CONTAINS(msg, sock_path);
    free(msg);
    close(sock);
    /* a device is refused the same way (nothing to read from /dev/null) */
    capture_stderr_begin(&c);
    CHECK_INT_EQ(stem_xyz_read("/dev/null", &atoms), STEM_ERR_INPUT);
    msg = capture_stderr_end(&c);
    CHECK_CONTAINS(msg, "is a device");
    free(msg);
}

/* The real table with one line replaced (data line `row`, 0-based). */
static const char *table_with(int row, const char *line, int drop_last)
{
    FILE *in = fopen(stem_kirkland_default_path(), "r");
    REQUIRE(in);
    const char *path = tmp_path("kirkland.txt");
    FILE *out = fopen(path, "w");
    REQUIRE(out);
    char buf[1024];
    int data = 0;
    while (fgets(buf, sizeof buf, in)) {
        int is_data = buf[0] != '#';
        if (is_data && drop_last && data == STEM_MAX_Z - 1) break;
        fputs(is_data && data == row ? line : buf, out);
        data += is_data;
    }
    fclose(in);
    fclose(out);
    return path;
}

static void test_kirkland_table(void)
{
    stem_kirkland table[STEM_MAX_Z + 1];
    REQUIRE(stem_kirkland_load(stem_kirkland_default_path(), table) == STEM_OK);
    const char *cases[][3] = {
        {"13", "1 nan 1 1 1 1 1 1 1 1 1 1\n", "not a finite number"},
        {"5", "1 1 1 0 1 1 1 1 1 1 1 1\n", "width b2 = 0 is not positive"},
        {"7", "1 1 1 1 1 1 1 1 1 -1 1 1\n", "width d2 = -1 is not positive"},
        {"0", "0 1 0 1 0 1 0 1 0 1 0 1\n", "element missing"},
        /* finite but absurd: far outside what any published table holds */
        {"13", "1e300 1 1 1 1 1 1 1 1 1 1 1\n", "a1 = 1e+300 is outside the plausible range"},
        {"13", "1 1 1 1e300 1 1 1 1 1 1 1 1\n", "b2 = 1e+300 is outside the plausible range"},
        {"13", "1 1e-300 1 1 1 1 1 1 1 1 1 1\n", "b1 = 1e-300 is outside the plausible range"},
        {"13", "1 1 1 1 1 1 1 1 1e30 1 1 1\n", "c2 = 1e+30 is outside the plausible range"},
        {"13", "-50 1 1 1 1 1 1 1 1 1 1 1\n", "f_e(0) = -45 Angstrom is outside"},
        {"13", "50 0.1 1 1 1 1 1 1 1 1 1 1\n", "f_e(0) = 505 Angstrom is outside"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int row = atoi(cases[i][0]);
        const char *path = table_with(row, cases[i][1], 0);
        check_capture c;
        capture_stderr_begin(&c);
        int rc = stem_kirkland_load(path, table);
        char *msg = capture_stderr_end(&c);
        CHECK_INT_EQ(rc, STEM_ERR_INPUT);
        CHECK_CONTAINS(msg, cases[i][2]);
        char z[32];
        snprintf(z, sizeof z, "Z = %d", row + 1);
        CHECK_CONTAINS(msg, z);
        free(msg);
    }
    check_capture c;
    capture_stderr_begin(&c);
    int rc = stem_kirkland_load(table_with(-1, "", 1), table);
    char *msg = capture_stderr_end(&c);
    CHECK_INT_EQ(rc, STEM_ERR_INPUT);
    CHECK_CONTAINS(msg, "found 102 elements");
    free(msg);
}

static void test_duplicate_atoms(void)
{
    stem_atoms a;
    check_capture c;
    /* x = 0 and x = a are one position in a periodic cell; lines 3 and 5 */
    capture_stderr_begin(&c);
    REQUIRE(stem_xyz_read_string("dup.xyz", "c\n5 5 5\n14 0 1 1 1 0\n14 2 2 2 1 0\n14 5.0 1.004 1 1 0\n", &a) ==
            STEM_OK);
    char *msg = capture_stderr_end(&c);
    CHECK_CONTAINS(msg, "lines 3 and 5 give the same atom (Z = 14)");
    free(msg);
    stem_atoms_free(&a);
    /* 0.02 Angstrom apart, or another element at the same place: no warning */
    capture_stderr_begin(&c);
    REQUIRE(stem_xyz_read_string("ok.xyz", "c\n5 5 5\n14 1 1 1 1 0\n14 1.02 1 1 1 0\n8 1 1 1 1 0\n", &a) == STEM_OK);
    msg = capture_stderr_end(&c);
    CHECK_MSG(!strstr(msg, "same atom"), "unexpected warning: %s", msg);
    free(msg);
    stem_atoms_free(&a);
}

/* The estimate is what stem_potential_table_build allocates at its peak, byte for byte: the
 * profiles and the radial tables they are blurred from. */
static void test_table_estimate(void)
{
    sim_case s;
    REQUIRE(sim_prepare(&s, SI "[simulation]\npixel_size = 0.07\npotential_radius = 2.5\n", NULL) == STEM_OK);
    stem_potential_table t;
    REQUIRE(stem_potential_table_build(&s.plan, &s.atoms, s.kirkland, &t) == STEM_OK);
    double bytes = 4.0 * t.n_profiles * ((double)t.points + STEM_RADIAL_POINTS);
    CHECK_CLOSE(s.plan.mem_table, bytes, 0);
    CHECK(s.plan.mem_table > 0);
    CHECK_LE(s.plan.mem_table, s.plan.mem_total);
    stem_potential_table_free(&t);
    sim_free(&s);
}

static void test_cgroup(void)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "mkdir -p %s/cg2/job/step %s/cg1/memory/slurm/job && echo max > %s/cg2/job/step/memory.max && "
             "echo 4294967296 > %s/cg2/job/memory.max && echo 9223372036854771712 > "
             "%s/cg1/memory/slurm/job/memory.limit_in_bytes && "
             "echo 1073741824 > %s/cg1/memory/slurm/memory.limit_in_bytes",
             tmpdir, tmpdir, tmpdir, tmpdir, tmpdir, tmpdir);
    REQUIRE(system(cmd) == 0);
    char root[512];
    const char *v2 = tmp_path("cgroup_v2");
    write_text(v2, "0::/job/step\n");
    snprintf(root, sizeof root, "%s/cg2", tmpdir);
    /* the step has no limit; its parent (the job: Slurm --mem) has 4 GiB */
    CHECK_CLOSE(stem_cgroup_memory_limit(v2, root), 4294967296.0, 0);
    const char *v1 = tmp_path("cgroup_v1");
    write_text(v1, "12:cpuset:/slurm/job\n5:memory:/slurm/job\n0::/\n");
    snprintf(root, sizeof root, "%s/cg1", tmpdir);
    /* v1 "unlimited" (2^63 - page) below, 1 GiB above */
    CHECK_CLOSE(stem_cgroup_memory_limit(v1, root), 1073741824.0, 0);
    write_text(v1, "0::/nowhere\n");
    CHECK_CLOSE(stem_cgroup_memory_limit(v1, root), 0, 0);
    CHECK_CLOSE(stem_cgroup_memory_limit(tmp_path("absent"), root), 0, 0);
    stem_memory_limit lim;
    stem_memory_limit_choose(2.5, 4, &lim);
    CHECK_CLOSE(lim.bytes, 2.5 * 1073741824.0, 0);
    CHECK_CONTAINS(lim.source, "max_memory");
    stem_memory_limit_choose(0, 2, &lim);
    CHECK(lim.bytes > 0);
}

static void test_prism_window(void)
{
    /* interpolation 11 or 13: no multiple is 7-smooth; this used to loop forever */
    int n13 = stem_fft_good_multiple(55, 13);
    int multiple_of_13 = n13 % 13 == 0;
    CHECK(n13 >= 55 && multiple_of_13 && stem_fft_good_size(n13 / 13) == n13 / 13);
    CHECK_INT_EQ(stem_fft_good_multiple(55, 4), 56);
    const char *ini = SI "[sample]\ntile_x = 2\ntile_y = 2\n[simulation]\nalgorithm = prism\ninterpolation_x = 8\n"
                         "interpolation_y = 2\n";
    sim_case s;
    check_capture c;
    capture_stderr_begin(&c);
    int rc = sim_prepare(&s, ini, NULL);
    char *msg = capture_stderr_end(&c);
    CHECK_INT_EQ(rc, STEM_ERR_CONFIG);
    CHECK_CONTAINS(msg, "interpolation_x = 8 is too coarse");
    const char *hint = msg ? strstr(msg, "use interpolation_x <= ") : NULL;
    REQUIRE(hint);
    int best = atoi(hint + strlen("use interpolation_x <= "));
    free(msg);
    sim_free(&s);
    /* the probe (1.53 Angstrom Airy disc) fits the suggested window */
    CHECK(best >= 2 && best < 8);
    char fixed[512];
    snprintf(fixed, sizeof fixed,
             SI "[sample]\ntile_x = 2\ntile_y = 2\n[simulation]\nalgorithm = prism\n"
                "interpolation_x = %d\ninterpolation_y = 2\n",
             best);
    CHECK_INT_EQ(sim_prepare(&s, fixed, NULL), STEM_OK);
    CHECK(10.86 / best >= stem_plan_probe_diameter(&s.plan));
    sim_free(&s);
}

int main(void)
{
    stem_log_init(0, STEM_LOG_QUIET);
    snprintf(tmpdir, sizeof tmpdir, "/tmp/stemsim_unit_safety_XXXXXX");
    REQUIRE(mkdtemp(tmpdir));
    test_config_syntax();
    test_fifo_inputs();
    test_kirkland_table();
    test_duplicate_atoms();
    test_table_estimate();
    test_cgroup();
    test_prism_window();
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
    return check_exit("unit_safety");
}
