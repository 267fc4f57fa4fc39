/* Series campaigns ([series] in config.ini): tilt_x, tilt_y (the sample),
 * beam_tilt_x, beam_tilt_y (the illumination, hrtem) and defocus, each a list
 * of values or an inclusive range, and the depths of [output] depths /
 * depth_every, forming their outer product. A series point is one (tilt_x,
 * tilt_y, beam_tilt_x, beam_tilt_y, defocus, depth); points are numbered
 * row-major over the six axes, depth fastest, which is also the order of the
 * output's leading axes (only the axes given appear there). A unit of work is
 * one sample tilt: everything after it shares the tilt's transmission functions. */
#ifndef STEM_SERIES_H
#define STEM_SERIES_H

#include "config.h"

#define STEM_SERIES_MAX_VALUES 10000 /* per axis */

typedef enum {
    STEM_SERIES_TILT_X = 0,
    STEM_SERIES_TILT_Y,
    STEM_SERIES_BEAM_X,
    STEM_SERIES_BEAM_Y,
    STEM_SERIES_DEFOCUS,
    STEM_SERIES_DEPTH,
    STEM_SERIES_N_AXES
} stem_series_axis;

typedef struct {
    int given[STEM_SERIES_N_AXES]; /* the key was in [series] */
    int n[STEM_SERIES_N_AXES];     /* values per axis (1 when not given: the single run's value) */
    double *v[STEM_SERIES_N_AXES]; /* deg, deg, mrad, mrad, Angstrom, Angstrom (depths: once resolved, k * dz;
                                      beam tilts: once resolved, on the grid) */
    int *depth_slice;      /* depths resolved: slices above each detection plane (ascending); NULL: the exit only */
    int n_points, n_tilts; /* all points; distinct (tilt_x, tilt_y) pairs */
} stem_series;

extern const char *const stem_series_axis_name[STEM_SERIES_N_AXES];  /* "tilt_x", ..., "beam_tilt_x", ..., "depth" */
extern const char *const stem_series_axis_units[STEM_SERIES_N_AXES]; /* "deg", "deg", "mrad", "mrad", "Angstrom", ... */

/* "a b c" (a list) or "start:step:stop" (inclusive: stop is the last value when
 * (stop - start) / step is a whole number to 1e-9, else the last value before it).
 * *values is malloc'd. what names the key in messages. */
int stem_series_parse(const char *text, const char *what, double **values, int *n);
/* The series the config asks for; a config without [series] gives one point
 * holding [sample] tilt_x, tilt_y and [probe] C10. Depths are as given until
 * stem_series_resolve_depths has placed them on slices. */
int stem_series_build(const stem_config *cfg, stem_series *s);
/* Depths onto slice boundaries: each given depth to the nearest slice boundary
 * (multiples of the slice thickness dz, the exit surface where the last slice is
 * thinner: stem_slice_count; at least one slice), or every depth_every slices; all
 * must lie within `thickness` (the thinnest tilt's cell z, Angstrom), ascending and
 * distinct once rounded. Logs each rounding. Nothing to do without depths. */
int stem_series_resolve_depths(stem_series *s, const stem_config *cfg, double thickness);
/* hrtem's beam tilts onto the grid: each value to the nearest Fourier pixel of the cell
 * (lambda in Angstrom, cell[2] the plan's x and y lengths), logged when it moves; every
 * (beam_tilt_x, beam_tilt_y) must lie inside the band q_limit (1/Angstrom) and the values
 * of an axis must stay distinct once rounded. Nothing to do without beam tilts. */
int stem_series_resolve_beam_tilts(stem_series *s, double lambda, const double cell[2], double q_limit);
/* [series] keys or depths are given: the run is a campaign. */
int stem_series_active(const stem_config *cfg);
void stem_series_free(stem_series *s);
/* Points per tilt (beam tilts x defoci x depths), and point p's tilt index and values. */
int stem_series_per_tilt(const stem_series *s);
int stem_series_tilt_of(const stem_series *s, int p);
void stem_series_tilt_values(const stem_series *s, int t, double *tilt_x, double *tilt_y);
void stem_series_values(const stem_series *s, int p, double *tilt_x, double *tilt_y, double *defocus);
/* Point p's beam tilt (mrad; [probe] beam_tilt_x/_y when not a series axis). */
void stem_series_beam_values(const stem_series *s, int p, double *beam_x, double *beam_y);

#endif
