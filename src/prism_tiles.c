/* Tiles of PRISM's S-matrix box: see prism_tiles.h. */
#include "prism_tiles.h"

#include <limits.h>
#include <math.h>

int stem_prism_window_origin(double x, double cell, int crop, int window)
{
    int centre = (int)floor(x / cell * crop + 0.5);
    return centre - window / 2;
}

void stem_prism_tile_whole(const stem_plan *plan, stem_prism_tile *t)
{
    *t = (stem_prism_tile){0, 0, plan->crop_nx, plan->crop_ny};
}

/* One axis: window origins lo..hi (unwrapped) of width w on a periodic box of n pixels. */
static void axis_span(int lo, int hi, int w, int n, int *x0, int *count)
{
    long extent = (long)hi - lo + w;
    if (extent >= n) {
        *x0 = 0, *count = n;
        return;
    }
    *x0 = ((lo % n) + n) % n;
    *count = (int)extent;
}

/* Window origins of probes [begin, end) grown into [lo, hi) per axis (unwrapped). */
static void origin_bounds(const stem_plan *plan, long begin, long end, int lo[2], int hi[2])
{
    for (long p = begin; p < end; p++) {
        double x, y;
        stem_plan_probe_position(plan, p, &x, &y);
        int o[2] = {stem_prism_window_origin(x, plan->cell[0], plan->crop_nx, plan->out_nx),
                    stem_prism_window_origin(y, plan->cell[1], plan->crop_ny, plan->out_ny)};
        for (int a = 0; a < 2; a++) {
            if (o[a] < lo[a]) lo[a] = o[a];
            if (o[a] > hi[a]) hi[a] = o[a];
        }
    }
}

void stem_prism_tile_of_probes(const stem_plan *plan, long begin, long end, int grow, stem_prism_tile *t)
{
    /* kept unwrapped between calls in the tile's own terms: a grown tile starts from its corners */
    int lo[2] = {INT_MAX, INT_MAX}, hi[2] = {INT_MIN, INT_MIN};
    if (grow && t->nx > 0) {
        lo[0] = t->x0, hi[0] = t->x0 + t->nx - plan->out_nx;
        lo[1] = t->y0, hi[1] = t->y0 + t->ny - plan->out_ny;
    }
    origin_bounds(plan, begin, end, lo, hi);
    if (lo[0] > hi[0]) {
        *t = (stem_prism_tile){0, 0, 0, 0};
        return;
    }
    axis_span(lo[0], hi[0], plan->out_nx, plan->crop_nx, &t->x0, &t->nx);
    axis_span(lo[1], hi[1], plan->out_ny, plan->crop_ny, &t->y0, &t->ny);
}

stem_prism_tile stem_prism_tile_rows(const stem_prism_tile *t, int row_begin, int row_end)
{
    return (stem_prism_tile){t->x0, t->y0 + row_begin, t->nx, row_end - row_begin};
}

void stem_prism_put_beams(const stem_plan *plan, const stem_complex *by_beam, size_t beam_stride, int n, int plane,
                          const stem_prism_tile *region, int row_begin, int row_end, stem_complex *dst,
                          size_t pixel_stride)
{
    int cx = plan->crop_nx, cy = plan->crop_ny;
    const stem_complex *src = by_beam + (size_t)plane * cx * cy;
    enum { COLUMNS = 64 }; /* a block of destination pixels stays in cache while every beam visits it */
    for (int j = row_begin; j < row_end; j++) {
        int gy = (region->y0 + j) % cy;
        stem_complex *row = dst + (size_t)(j - row_begin) * region->nx * pixel_stride;
        for (int i0 = 0; i0 < region->nx; i0 += COLUMNS) {
            int i1 = i0 + COLUMNS < region->nx ? i0 + COLUMNS : region->nx;
            for (int b = 0; b < n; b++) {
                const stem_complex *s = src + b * beam_stride + (size_t)gy * cx;
                for (int i = i0; i < i1; i++) row[(size_t)i * pixel_stride + b] = s[(region->x0 + i) % cx];
            }
        }
    }
}

int stem_prism_round_beams(const stem_plan *plan, double tile_bytes, double per_beam, int most_beams)
{
    if (plan->opt.smatrix_round_beams > 0) return plan->opt.smatrix_round_beams; /* [debug] */
    double budget = tile_bytes / 10 > 8.0 * 1048576 ? tile_bytes / 10 : 8.0 * 1048576;
    double n = per_beam > 0 ? floor(budget / per_beam) : most_beams;
    double least = (double)plan->threads * plan->batch_size;
    if (n < least) n = least;
    if (n > most_beams) n = most_beams;
    return n < 1 ? 1 : (int)n;
}
