/* PRISM's S-matrix held over a tile of its box only (Ophus 2017: a probe reads the window of
 * 1/f of the cell around it): the rectangle of the box that the windows of some probes cover,
 * beam fastest. Ranks that tile the probes so hold 1/ranks of the S-matrix plus the window's
 * halo (mpi/smatrix_tiles.c); one rank's tile of every probe is the whole box. */
#ifndef STEM_PRISM_TILES_H
#define STEM_PRISM_TILES_H

#include "plan_types.h"

/* Box pixels (x0 + i, y0 + j) mod (crop_nx, crop_ny), 0 <= i < nx, 0 <= j < ny; nx = crop_nx
 * with x0 = 0 (and the same for y) when the windows reach round the whole box. */
typedef struct {
    int x0, y0, nx, ny;
} stem_prism_tile;

/* One detection plane's S-matrix over a tile: S[(j * tile.nx + i) * n_beams + beam]. */
typedef struct {
    const stem_complex *S;
    stem_prism_tile tile;
} stem_prism_view;

/* First pixel (coarse grid, before wrapping) of the window around position x. */
int stem_prism_window_origin(double x, double cell, int crop, int window);

static inline size_t stem_prism_tile_pixels(const stem_prism_tile *t) { return (size_t)t->nx * t->ny; }

/* The whole box. */
void stem_prism_tile_whole(const stem_plan *plan, stem_prism_tile *t);
/* The smallest tile holding the windows of probes [begin, end) of the plan's scan; empty
 * (0 x 0) for no probe. Several ranges: call with *t from the last call and grow = 1. */
void stem_prism_tile_of_probes(const stem_plan *plan, long begin, long end, int grow, stem_prism_tile *t);
/* Rows [row_begin, row_end) of a tile, as a tile. */
stem_prism_tile stem_prism_tile_rows(const stem_prism_tile *t, int row_begin, int row_end);

/* Plane `plane` of n beams stored by beam (beam b's box at by_beam + b * beam_stride, plane k
 * k * crop_nx * crop_ny after it) copied beam fastest over rows [row_begin, row_end) of
 * region: dst[(j * region.nx + i) * pixel_stride + b] (j from row_begin). */
void stem_prism_put_beams(const stem_plan *plan, const stem_complex *by_beam, size_t beam_stride, int n, int plane,
                          const stem_prism_tile *region, int row_begin, int row_end, stem_complex *dst,
                          size_t pixel_stride);

/* Beams per round of the distributed S-matrix step (mpi/smatrix_tiles.h) for a rank whose
 * round buffers take per_beam bytes a beam: about a tenth of its tile share (tile_bytes), yet
 * at least one batch per worker (the threads' work) and at most the most beams of a rank;
 * [debug] smatrix_round_beams when set. */
int stem_prism_round_beams(const stem_plan *plan, double tile_bytes, double per_beam, int most_beams);

#endif
