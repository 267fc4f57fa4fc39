/* A hostile input refused by the config or XYZ parser, checked in-process (no
 * MPI, no launcher: a fraction of a whole run's time). It reads the case's
 * expectation the way run_bad_inputs.sh does ("; expect: CODE SUBSTRING" on the
 * first line, or NAME.expect beside it), loads the case as stemsim's setup()
 * would, and checks the returned code and that stderr holds the substring.
 *
 *   bad_input_parse CASE.ini DATA SCRATCH   stem_config_load(CASE with @DATA@, @DIR@
 *                                           and @TMP@ replaced, output.file=SCRATCH/out.h5)
 *   bad_input_parse CASE.xyz DATA SCRATCH   stem_xyz_read(CASE), then stem_atoms_prepare
 *
 * Cases marked "; parse-only" (.ini header, or the second line of NAME.expect)
 * are run this way; the others stay whole-program runs (run_bad_inputs.sh).
 * Exit 0: as expected; 1: not as expected (what differed on stdout). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atoms.h"
#include "config.h"
#include "../../io/config.h"
#include "../../io/xyz.h"

typedef struct {
    char code[16]; /* a number, or "*" for any failure */
    char text[1024];
} expectation;

/* the first line of path, without the line end */
static int first_line(const char *path, char *line, size_t size)
{
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    int ok = fgets(line, (int)size, f) != NULL;
    fclose(f);
    if (ok) line[strcspn(line, "\r\n")] = 0;
    return ok;
}

/* "CODE SUBSTRING" from NAME.expect, or "; expect: ..." / "expect: ..." from the case */
static int read_expectation(const char *case_path, expectation *e)
{
    char side[4096], line[1200];
    snprintf(side, sizeof side, "%s", case_path);
    char *dot = strrchr(side, '.');
    if (dot) snprintf(dot, sizeof side - (size_t)(dot - side), ".expect");
    const char *p = line;
    if (!first_line(side, line, sizeof line)) {
        if (!first_line(case_path, line, sizeof line)) return 0;
        p += strspn(p, ";#");
        p += *p == ' ';
        if (strncmp(p, "expect:", 7) != 0) return 0;
        p += 7;
        p += *p == ' ';
    }
    size_t n = strcspn(p, " ");
    if (n == 0 || n >= sizeof e->code) return 0;
    memcpy(e->code, p, n);
    e->code[n] = 0;
    snprintf(e->text, sizeof e->text, "%s", p[n] ? p + n + 1 : "");
    return 1;
}

static int ends_with(const char *s, const char *tail)
{
    size_t a = strlen(s), b = strlen(tail);
    return a >= b && strcmp(s + a - b, tail) == 0;
}

/* the whole file; NULL if unreadable */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0, got;
    char *buf = malloc(cap);
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *b = realloc(buf, cap *= 2);
            if (!b) free(buf);
            buf = b;
        }
    }
    fclose(f);
    *len = n;
    return buf;
}

/* Writes the case to SCRATCH/BASENAME with @DATA@, @DIR@ and @TMP@ replaced, as
 * run_bad_inputs.sh does (the messages then name the same file). */
static int write_substituted(const char *case_path, const char *data_dir, const char *scratch, char *out, size_t size)
{
    size_t len = 0;
    char *text = slurp(case_path, &len), dir[4096];
    if (!text) return 0;
    snprintf(dir, sizeof dir, "%s", case_path);
    char *slash = strrchr(dir, '/');
    const char *base = slash ? slash + 1 : case_path;
    if (slash)
        *slash = 0;
    else
        snprintf(dir, sizeof dir, ".");
    snprintf(out, size, "%s/%s", scratch, base);
    FILE *f = fopen(out, "wb");
    const char *const token[] = {"@DATA@", "@DIR@", "@TMP@"}, *const value[] = {data_dir, dir, scratch};
    for (size_t i = 0; f && i < len;) {
        int k = 0;
        while (k < 3 && (len - i < strlen(token[k]) || memcmp(text + i, token[k], strlen(token[k])) != 0)) k++;
        if (k < 3) {
            fputs(value[k], f);
            i += strlen(token[k]);
        } else
            fputc(text[i++], f);
    }
    free(text);
    return f && fclose(f) == 0;
}

/* the model read and prepared, as rank 0 does in stemsim's load_inputs() */
static int load_model(const char *xyz, const stem_config *cfg)
{
    stem_atoms atoms = {0};
    int err = stem_xyz_read(xyz, &atoms);
    if (!err) err = stem_atoms_prepare(&atoms, cfg);
    stem_atoms_free(&atoms);
    return err;
}

/* [sample] xyz, relative to the config file's directory as stemsim resolves it */
static void model_path(const stem_config *cfg, char *out, size_t size)
{
    const char *slash = strrchr(cfg->config_path, '/');
    if (cfg->xyz[0] == '/' || !slash)
        snprintf(out, size, "%s", cfg->xyz);
    else
        snprintf(out, size, "%.*s/%s", (int)(slash - cfg->config_path), cfg->config_path, cfg->xyz);
}

/* what stemsim's setup() does with the case before any MPI step: the config,
 * then the model (an .xyz case: the model under the default config) */
static int load_case(const char *case_path, const char *data_dir, const char *scratch)
{
    stem_config *cfg = malloc(sizeof *cfg);
    if (!cfg) return STEM_ERR_MEMORY;
    int err;
    if (ends_with(case_path, ".xyz")) {
        stem_config_defaults(cfg);
        err = load_model(case_path, cfg);
    } else {
        char path[4200], set[4200], xyz[2 * STEM_PATH_MAX + 2];
        if (!write_substituted(case_path, data_dir, scratch, path, sizeof path)) {
            printf("FAIL: cannot copy %s into %s\n", case_path, scratch);
            exit(1);
        }
        snprintf(set, sizeof set, "output.file=%s/out.h5", scratch); /* as the whole-program runner adds it */
        char *const overrides[] = {set};
        err = stem_config_load(cfg, path, 1, overrides);
        if (!err && cfg->xyz[0]) {
            model_path(cfg, xyz, sizeof xyz);
            err = load_model(xyz, cfg);
        }
    }
    free(cfg);
    return err;
}

/* runs load_case with stderr going to a temporary file, then echoes it; the text
 * (which may hold NULs: it quotes binary inputs) in *out, its length in *len */
static int load_capturing_stderr(const char *case_path, const char *data_dir, const char *scratch, char **out,
                                 size_t *len)
{
    fflush(stderr);
    int saved = dup(2);
    FILE *log = tmpfile();
    if (saved < 0 || !log) {
        fprintf(stderr, "bad_input_parse: cannot make a temporary file\n");
        exit(1);
    }
    dup2(fileno(log), 2);
    int err = load_case(case_path, data_dir, scratch);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    fseek(log, 0, SEEK_END); /* written through fd 2, not through log */
    long size = ftell(log);
    *out = calloc((size_t)(size > 0 ? size : 0) + 1, 1);
    rewind(log);
    *len = *out && size > 0 ? fread(*out, 1, (size_t)size, log) : 0;
    fclose(log);
    fwrite(*out ? *out : "", 1, *len, stderr);
    return err;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: bad_input_parse CASE.ini|CASE.xyz DATA_DIR SCRATCH_DIR\n");
        return 2;
    }
    const char *case_path = argv[1], *data_dir = argv[2], *scratch = argv[3];
    mkdir(scratch, 0755); /* its parent is made by cmake; it may exist from an earlier run */
    expectation e;
    if (!read_expectation(case_path, &e)) {
        printf("FAIL %s: no '; expect: CODE SUBSTRING' line and no .expect beside it\n", case_path);
        return 1;
    }
    stem_log_init(0, STEM_LOG_INFO);
    char *err_text = NULL;
    size_t err_len = 0;
    int rc = load_capturing_stderr(case_path, data_dir, scratch, &err_text, &err_len);
    int failed = 0;
    if (rc == STEM_OK) {
        printf("FAIL: loaded without error, expected exit %s\n", e.code);
        failed = 1;
    } else if (strcmp(e.code, "*") != 0 && rc != atoi(e.code)) {
        printf("FAIL: code %d, expected %s\n", rc, e.code);
        failed = 1;
    }
    if (e.text[0] && (!err_text || !memmem(err_text, err_len, e.text, strlen(e.text)))) {
        printf("FAIL: stderr lacks '%s'\n", e.text);
        failed = 1;
    }
    if (!failed) printf("ok   %s  code %d  '%s'\n", case_path, rc, e.text);
    free(err_text);
    return failed;
}
