/* The types io/output.h's callers and io/layout.c share (header only, below both): the texts
 * stored as root attributes, a series' leading axes, and what a run stores for later runs. */
#ifndef STEM_OUTPUT_TYPES_H
#define STEM_OUTPUT_TYPES_H

#include "../src/detector.h"

/* What produced the numbers, stored as root attributes (rank 0's copies). */
typedef struct {
    const char *config_ini;  /* effective configuration */
    const char *plan;        /* the derived plan */
    const char *environment; /* STEMSIM_* variables that were set ("" if none) */
    const char *advice;      /* convergence advice from the plan, one line each ("" if none; src/advice.h) */
} stem_output_texts;

/* A series campaign's output: every per-point dataset gains leading axes (those with a
 * name, in order; lengths multiply to n_points, points numbered row-major over them),
 * their values written to /axes/<name>; load fills res (this rank's probes, and on
 * rank 0 res->pacbed) with point p's finished result before its datasets are written,
 * on every rank (ranks that write no probes get res == NULL); it returns an agreed-on
 * status, collective over comm. */
#define STEM_OUTPUT_MAX_LEAD 6 /* the series axes (series.h) */
typedef struct {
    int n_points;
    const char *lead_name[STEM_OUTPUT_MAX_LEAD]; /* NULL: no such axis */
    const char *lead_units[STEM_OUTPUT_MAX_LEAD];
    int lead_n[STEM_OUTPUT_MAX_LEAD];
    const double *lead_values[STEM_OUTPUT_MAX_LEAD];
    int (*load)(void *ctx, int point, stem_result *res);
    void *ctx;
} stem_output_series;

/* [output] save_potential: slices fills V ([s1 - s0][ny][nx], V Angstrom) with configuration
 * c's slices [s0, s1) (of tilt t in a campaign, else t = 0) on any rank; the strings become
 * attributes of /potential. */
typedef struct {
    int (*slices)(void *ctx, int t, int c, int s0, int s1, float *V);
    void *ctx;
    const char *parametrisation, *projection;
} stem_output_potential;

/* [output] save_smatrix: beam fills S ([crop_ny][crop_nx][2] floats) with beam b of
 * configuration c's S-matrix (of tilt t in a campaign, else t = 0), on any rank;
 * /smatrix_beams lists the plan's beams. */
typedef struct {
    int (*beam)(void *ctx, int t, int c, int b, float *S);
    void *ctx;
} stem_output_smatrix;

/* What a run stores for later runs to read back; each NULL when not asked for, else the
 * same source on every rank. */
typedef struct {
    const stem_output_potential *potential; /* /potential */
    const stem_output_smatrix *smatrix;     /* /smatrix, /smatrix_beams */
    /* a campaign's: one dataset per sample tilt t under /potential_tilts and /smatrix_tilts
     * (docs/output.md), with the tilt's plan (its slices) and angles (degrees); 0: a run's */
    int n_tilts;
    const stem_plan *const *tilt_plans; /* [n_tilts] */
    const double *tilt_deg;             /* [n_tilts][2]: tilt_x, tilt_y */
} stem_output_stored;

#endif
