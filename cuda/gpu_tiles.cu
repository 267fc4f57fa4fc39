/* PRISM output on the GPU, host side: group the rank's probes into square
 * tiles of T x T scan positions (one batched complex matrix product each) and
 * the tiles into units of U x U tiles (one S-matrix upload each in streaming
 * mode); the tile size comes from a cost model of the product. Host code only,
 * so it can be checked without a GPU (tests/gpu/tiles_check.cpp). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_internal.cuh"

int gpu_segments(long start, long len, long period, gpu_seg *seg, int max_seg)
{
    if (period <= 0 || len < 0) return -1;
    long pos = start % period, dst = 0;
    if (pos < 0) pos += period;
    int n = 0;
    while (len > 0) {
        if (n == max_seg) return -1;
        long take = period - pos < len ? period - pos : len;
        seg[n].src = pos;
        seg[n].dst = dst;
        seg[n].len = take;
        n++;
        dst += take;
        len -= take;
        pos = 0;
    }
    return n;
}

/* Probes per tile edge and the region (pixels) their windows cover for a tile edge of T positions. */
static void tile_dims(const stem_plan *plan, int T, int *tx, int *ty, double *w, double *h)
{
    double sx = plan->scan_step / plan->cell[0] * plan->crop_nx, sy = plan->scan_step / plan->cell[1] * plan->crop_ny;
    *tx = T < plan->scan_nx ? T : plan->scan_nx;
    *ty = T < plan->scan_ny ? T : plan->scan_ny;
    *w = plan->out_nx + ceil((*tx - 1) * sx) + 1;
    *h = plan->out_ny + ceil((*ty - 1) * sy) + 1;
}

double gpu_tile_out_bytes(const stem_plan *plan, int T)
{
    int tx, ty;
    double w, h;
    tile_dims(plan, T, &tx, &ty, &w, &h);
    return w * h * tx * ty * 8.0;
}

int gpu_tile_probes(const stem_plan *plan, int T)
{
    int tx, ty;
    double w, h;
    tile_dims(plan, T, &tx, &ty, &w, &h);
    return tx * ty;
}

double gpu_unit_pixels(const stem_plan *plan, int T, int U)
{
    int tx, ty;
    double w, h;
    tile_dims(plan, T * U, &tx, &ty, &w, &h);
    return w * h;
}

int gpu_tile_choose(const stem_plan *plan, double out_cap_bytes)
{
    /* Per probe: the larger of arithmetic (the product over the union of the tile's windows)
     * and memory traffic (the S-matrix region once, the product's output twice, the window's
     * FFT and detector passes), plus a fixed cost per tile for launches. The CGEMM rate grows
     * with the probes per tile (the product's N): measured on an H100 (carbon, f = 4, 437 beams)
     * 16, 25, 26 and 34 TFLOP/s for 36, 64, 144 and 256 probes; 40 P / (P + 40) TFLOP/s fits. */
    const double byte_rate = 2.5e12, per_tile = 30e-6;
    double nb = plan->n_beams, win = (double)plan->out_nx * plan->out_ny;
    int best = 1;
    double best_cost = 1e300;
    static const int edges[] = {1, 2, 3, 4, 6, 8, 10, 12, 16, 20, 24, 32};
    for (size_t e = 0; e < sizeof edges / sizeof edges[0]; e++) {
        int T = edges[e];
        int tx, ty;
        double w, h;
        tile_dims(plan, T, &tx, &ty, &w, &h);
        if (T > 1 && w * h * tx * ty * 8.0 > out_cap_bytes) break;
        double P = (double)tx * ty, region = w * h, flop_rate = 40e12 * P / (P + 40);
        double flops = 8.0 * region * P * nb, bytes = 8.0 * region * nb + 16.0 * region * P + 48.0 * P * win;
        double cost = (fmax(flops / flop_rate, bytes / byte_rate) + per_tile) / P;
        if (cost < best_cost * 0.98) {
            best_cost = cost;
            best = T;
        }
        if (tx == plan->scan_nx && ty == plan->scan_ny) break; /* one tile holds the whole scan */
    }
    return best;
}

typedef struct {
    int uy, ux, ty, tx;
    long g;
} probe_key;

static int key_cmp(const void *a, const void *b)
{
    const probe_key *p = (const probe_key *)a, *q = (const probe_key *)b;
    if (p->uy != q->uy) return p->uy < q->uy ? -1 : 1;
    if (p->ux != q->ux) return p->ux < q->ux ? -1 : 1;
    if (p->ty != q->ty) return p->ty < q->ty ? -1 : 1;
    if (p->tx != q->tx) return p->tx < q->tx ? -1 : 1;
    return p->g < q->g ? -1 : (p->g > q->g);
}

void gpu_tiling_free(gpu_tiling *t)
{
    free(t->probe);
    free(t->local);
    free(t->global);
    free(t->tile);
    free(t->unit);
    memset(t, 0, sizeof *t);
}

static void key_set(const gpu_tiling *t, long g, int scan_nx, probe_key *k)
{
    int px = (int)(g % scan_nx), py = (int)(g / scan_nx);
    k->tx = px / t->T;
    k->ty = py / t->T;
    k->ux = k->tx / t->U;
    k->uy = k->ty / t->U;
    k->g = g;
}

/* Whether tile (tx, ty) of edge T holds one of the probes [b, e) (row-major on a scan nx wide). */
static int tile_holds(long tx, long ty, int T, int nx, int ny, long b, long e)
{
    for (long qy = ty * T; qy < (ty + 1) * T && qy < ny; qy++) {
        long lo = qy * nx + tx * T, hi = qy * nx + ((tx + 1) * T < nx ? (tx + 1) * T : nx);
        if (lo < e && hi > b) return 1;
    }
    return 0;
}

/* Whole tiles: every probe of the scan whose tile holds one of the rank's probes [b, e);
 * returns their count, and with key their keys. */
static long whole_tile_keys(const stem_plan *plan, const gpu_tiling *t, probe_key *key)
{
    long b = plan->probe_begin, e = plan->probe_end, n = 0;
    int nx = plan->scan_nx, ny = plan->scan_ny, T = t->T;
    for (long ty = b / nx / T; ty <= (e - 1) / nx / T; ty++)
        for (long tx = 0; tx * T < nx; tx++) {
            if (!tile_holds(tx, ty, T, nx, ny, b, e)) continue;
            for (long py = ty * T; py < (ty + 1) * T && py < ny; py++)
                for (long px = tx * T; px < (tx + 1) * T && px < nx; px++) {
                    if (key) key_set(t, py * nx + px, nx, &key[n]);
                    n++;
                }
        }
    return n;
}

int gpu_tiling_build(const stem_plan *plan, int T, int U, gpu_tiling *t)
{
    memset(t, 0, sizeof *t);
    t->T = T > 0 ? T : 1;
    t->U = U > 0 ? U : 1;
    t->n_local = plan->probe_end - plan->probe_begin;
    if (t->n_local <= 0) return STEM_OK;
    int whole = plan->opt.gpu_deterministic && t->T > 1 && !plan->positions &&
        (plan->probe_begin > 0 || plan->probe_end < plan->n_probes);
    long n = whole ? whole_tile_keys(plan, t, NULL) : t->n_local;
    t->n_probes = n;
    probe_key *key = (probe_key *)stem_calloc(n, sizeof *key, "probe tiling");
    t->probe = (gpu_probe *)stem_calloc(n, sizeof *t->probe, "probe tiling");
    t->local = (long *)stem_calloc(n, sizeof *t->local, "probe tiling");
    t->global = (long *)stem_calloc(n, sizeof *t->global, "probe tiling");
    t->tile = (gpu_tile *)stem_calloc(n, sizeof *t->tile, "probe tiling");
    t->unit = (gpu_unit *)stem_calloc(n, sizeof *t->unit, "probe tiling");
    if (!key || !t->probe || !t->local || !t->global || !t->tile || !t->unit) {
        free(key);
        gpu_tiling_free(t);
        return STEM_ERR_MEMORY;
    }
    if (whole)
        whole_tile_keys(plan, t, key);
    else
        for (long i = 0; i < n; i++) key_set(t, plan->probe_begin + i, plan->scan_nx, &key[i]);
    qsort(key, n, sizeof *key, key_cmp);
    int wx = plan->out_nx, wy = plan->out_ny;
    for (long i = 0; i < n; i++) {
        gpu_probe *p = &t->probe[i];
        stem_plan_probe_position(plan, key[i].g, &p->x, &p->y);
        p->ox = stem_prism_window_origin(p->x, plan->cell[0], plan->crop_nx, wx);
        p->oy = stem_prism_window_origin(p->y, plan->cell[1], plan->crop_ny, wy);
        t->global[i] = key[i].g;
        t->local[i] = key[i].g >= plan->probe_begin && key[i].g < plan->probe_end ? key[i].g - plan->probe_begin : -1;
        int new_unit = i == 0 || key[i].ux != key[i - 1].ux || key[i].uy != key[i - 1].uy;
        int new_tile = new_unit || key[i].tx != key[i - 1].tx || key[i].ty != key[i - 1].ty;
        if (new_tile) {
            gpu_tile *tl = &t->tile[t->n_tiles++];
            tl->p0 = i;
            tl->x0 = p->ox;
            tl->y0 = p->oy;
            tl->w = p->ox; /* max origin until finished */
            tl->h = p->oy;
        }
        if (new_unit) t->unit[t->n_units++].t0 = t->n_tiles - 1;
        gpu_tile *tl = &t->tile[t->n_tiles - 1];
        tl->p1 = i + 1;
        if (p->ox < tl->x0) tl->x0 = p->ox;
        if (p->oy < tl->y0) tl->y0 = p->oy;
        if (p->ox > tl->w) tl->w = p->ox;
        if (p->oy > tl->h) tl->h = p->oy;
        t->unit[t->n_units - 1].t1 = t->n_tiles;
    }
    free(key);
    for (int k = 0; k < t->n_tiles; k++) {
        gpu_tile *tl = &t->tile[k];
        tl->w = tl->w - tl->x0 + wx;
        tl->h = tl->h - tl->y0 + wy;
        int P = (int)(tl->p1 - tl->p0);
        if (P > t->max_p) t->max_p = P;
        size_t out = (size_t)tl->w * tl->h * P;
        if (out > t->max_out) t->max_out = out;
    }
    for (int u = 0; u < t->n_units; u++) {
        gpu_unit *un = &t->unit[u];
        int x1 = 0, y1 = 0;
        for (int k = un->t0; k < un->t1; k++) {
            const gpu_tile *tl = &t->tile[k];
            if (k == un->t0 || tl->x0 < un->x0) un->x0 = tl->x0;
            if (k == un->t0 || tl->y0 < un->y0) un->y0 = tl->y0;
            if (k == un->t0 || tl->x0 + tl->w > x1) x1 = tl->x0 + tl->w;
            if (k == un->t0 || tl->y0 + tl->h > y1) y1 = tl->y0 + tl->h;
        }
        un->w = x1 - un->x0;
        un->h = y1 - un->y0;
        if ((size_t)un->w * un->h > t->max_unit) t->max_unit = (size_t)un->w * un->h;
    }
    return STEM_OK;
}

int gpu_tile_pieces(int W, int H, int nb, int sx, int sy, int tw, int th, int P, gpu_gemm_piece *pc, int max_pc)
{
    gpu_seg ys[64], xs[64];
    int ny = gpu_segments(sy, th, H, ys, 64), nx = gpu_segments(sx, tw, W, xs, 64);
    if (ny < 0 || nx < 0 || (long)ny * nx > max_pc) return -1;
    int n = 0;
    for (int a = 0; a < ny; a++)
        for (int b = 0; b < nx; b++) {
            pc[n].a_off = (ys[a].src * W + xs[b].src) * nb;
            pc[n].c_off = ys[a].dst * P * tw + xs[b].dst;
            pc[n].m = (int)xs[b].len;
            pc[n].rows = (int)ys[a].len;
            n++;
        }
    return n;
}

int gpu_unit_pieces(const stem_plan *plan, const gpu_unit *un, gpu_copy_piece *pc, int max_pc)
{
    gpu_seg ys[64], xs[64];
    long nb = plan->n_beams;
    int ny = gpu_segments(un->y0, un->h, plan->crop_ny, ys, 64),
        nx = gpu_segments(un->x0, un->w, plan->crop_nx, xs, 64);
    if (ny < 0 || nx < 0 || (long)ny * nx > max_pc) return -1;
    int n = 0;
    for (int a = 0; a < ny; a++)
        for (int b = 0; b < nx; b++) {
            pc[n].dst_off = (ys[a].dst * un->w + xs[b].dst) * nb;
            pc[n].src_off = (ys[a].src * plan->crop_nx + xs[b].src) * nb;
            pc[n].px = (int)xs[b].len;
            pc[n].rows = (int)ys[a].len;
            n++;
        }
    return n;
}
