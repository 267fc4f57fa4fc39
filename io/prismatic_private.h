/* Prismatic's parameters to config.ini (prismatic_params.h), shared by its files:
 * prismatic_params.c reads the parameter file and the command line, resolves what depends on
 * several options once all are read, and writes the config; prismatic_options.c holds
 * Prismatic's option table, each option with its conversion into stemsim keys. Private to
 * io/prismatic_*.c. */
#ifndef STEM_PRISMATIC_PRIVATE_H
#define STEM_PRISMATIC_PRIVATE_H

#include "../src/config.h"

#define MAX_ENTRIES 96
#define MAX_NOTES 64

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

/* One option's conversion: v holds its nargs values. */
typedef int (*handler)(conversion *c, const char *opt, char **v);

typedef struct {
    const char *lng, *shrt;
    int nargs;
    handler h;
} option;

/* Prismatic's option of this long (--energy) or short (-E) name (NULL: none). */
const option *stem_prismatic_option(const char *name);

/* The config's entries: set (a later value replaces), the value of one set (NULL: not set), removed. */
void stem_prismatic_set(conversion *c, const char *section, const char *key, const char *fmt, ...);
const char *stem_prismatic_get(const conversion *c, const char *section, const char *key);
void stem_prismatic_unset(conversion *c, const char *section, const char *key);
/* A note for the config's head and stderr: an option not converted, or what was assumed. */
void stem_prismatic_note(conversion *c, const char *fmt, ...);

/* Shortest text that reads back as the same double ("%g" keeps 6 digits only). */
typedef struct {
    char s[40];
} numtext;
numtext stem_prismatic_text(double v);

#endif
