/* PRISM's S-matrix distributed by space over a rank group: see smatrix_tiles.h. */
#include "smatrix_tiles.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "../src/dispatcher.h"
#include "../src/phases.h"
#include "../src/plan.h"

/* Who holds what: the same on every rank of the group, from the ranks' probe ranges. */
typedef struct {
    int P, me, others;     /* group size, this rank, ranks outside this rank's unit */
    int *unit, *unit_size; /* [P]: the group rank of the first rank of each rank's unit, its ranks */
    int *beam_b, *beam_e;  /* [P]: each rank's beams */
    int *band_row0;        /* [P]: the first row of its band in its unit's tile */
    stem_prism_tile *tile; /* [P]: each rank's unit's tile */
    stem_prism_tile *band; /* [P]: the rows of that tile the rank receives from other units */
    int round_beams, n_rounds;
} holders;

static void holders_free(holders *h)
{
    free(h->unit);
    free(h->tile);
    memset(h, 0, sizeof *h);
}

static int outside(const holders *h, int r) { return h->unit[r] != h->unit[h->me]; }

/* Each unit's tile: the windows of its ranks' probes (the whole box on an engine without tiles). */
static void unit_tiles(const stem_engine *engine, const stem_plan *plan, const long *probes, holders *h)
{
    for (int u = 0; u < h->P; u++) {
        if (h->unit[u] != u) continue; /* u is not a unit's first rank */
        stem_prism_tile t = {0, 0, 0, 0};
        if (!engine->prism_tiles)
            stem_prism_tile_whole(plan, &t);
        else
            for (int r = u; r < u + h->unit_size[u]; r++)
                stem_prism_tile_of_probes(plan, probes[2 * r], probes[2 * r + 1], 1, &t);
        for (int r = u; r < u + h->unit_size[u]; r++) {
            long b, e;
            stem_split_range(t.ny, h->unit_size[u], r - u, &b, &e);
            h->tile[r] = t;
            h->band_row0[r] = (int)b;
            h->band[r] = stem_prism_tile_rows(&t, (int)b, (int)e);
        }
    }
}

/* Beams per round, agreed: a tenth of the tile share, within MPI's int counts. */
static int choose_rounds(const stem_plan *plan, const stem_mpi *m, holders *h)
{
    double planes = stem_plan_n_planes(plan), box = (double)plan->crop_nx * plan->crop_ny;
    double send = 0, recv = (double)h->others * stem_prism_tile_pixels(&h->band[h->me]);
    int most = 0;
    for (int r = 0; r < h->P; r++) {
        if (outside(h, r)) send += (double)stem_prism_tile_pixels(&h->band[r]);
        if (h->beam_e[r] - h->beam_b[r] > most) most = h->beam_e[r] - h->beam_b[r];
    }
    double share =
        8.0 * planes * stem_prism_tile_pixels(&h->tile[h->me]) * plan->n_beams / h->unit_size[h->unit[h->me]];
    int R = stem_prism_round_beams(plan, share, 8.0 * planes * (box + send + recv), most > 0 ? most : 1);
    double largest = planes * (send > recv ? send : recv);
    if (largest > 0 && R > (INT_MAX - 1) / largest) R = (int)((INT_MAX - 1) / largest);
    if (R < 1)
        return STEM_FAIL(STEM_ERR_MEMORY, "PRISM: one beam's share of the S-matrix exchange is over 2^31 values");
    STEM_MPI_CALL(MPI_Allreduce(MPI_IN_PLACE, &R, 1, MPI_INT, MPI_MIN, m->group));
    h->round_beams = R;
    h->n_rounds = most > 0 ? (most + R - 1) / R : 0;
    return STEM_OK;
}

static int holders_make(const stem_engine *engine, const stem_plan *plan, const stem_mpi *m, holders *h)
{
    memset(h, 0, sizeof *h);
    h->P = plan->layout.group_size;
    h->me = plan->layout.group_rank;
    int P = h->P;
    h->unit = stem_calloc((size_t)6 * P, sizeof(int), "S-matrix holders");
    h->tile = stem_calloc((size_t)2 * P, sizeof(stem_prism_tile), "S-matrix tiles");
    long *probes = stem_calloc((size_t)2 * P, sizeof(long), "probe ranges");
    if (!h->unit || !h->tile || !probes) {
        free(probes);
        return STEM_ERR_MEMORY;
    }
    h->unit_size = h->unit + P, h->beam_b = h->unit + 2 * P, h->beam_e = h->unit + 3 * P;
    h->band_row0 = h->unit + 4 * P, h->band = h->tile + P;
    long mine[2] = {plan->probe_begin, plan->probe_end};
    int first = m->share.active ? h->me - m->share.node_rank : h->me; /* a node's ranks are consecutive */
    int err = MPI_Allgather(mine, 2, MPI_LONG, probes, 2, MPI_LONG, m->group) == MPI_SUCCESS &&
            MPI_Allgather(&first, 1, MPI_INT, h->unit, 1, MPI_INT, m->group) == MPI_SUCCESS
        ? STEM_OK
        : STEM_FAIL(STEM_ERR_MPI, "PRISM: exchanging the ranks' probe ranges failed");
    for (int r = 0; !err && r < P; r++) {
        long b, e;
        stem_split_range(plan->n_beams, P, r, &b, &e);
        h->beam_b[r] = (int)b, h->beam_e[r] = (int)e;
        h->unit_size[h->unit[r]]++;
    }
    for (int r = 0; !err && r < P; r++) {
        h->unit_size[r] = h->unit_size[h->unit[r]];
        h->others += outside(h, r);
    }
    if (!err) unit_tiles(engine, plan, probes, h);
    free(probes);
    return err ? err : choose_rounds(plan, m, h);
}

/* A buffer of at least count complex numbers (kept when large enough). */
static int reserve(stem_complex **p, size_t *have, size_t count, const char *what)
{
    if (count <= *have && *p) return STEM_OK;
    stem_fft_free(*p);
    *have = 0;
    if (!(*p = stem_fft_alloc(count ? count : 1, what))) return STEM_ERR_MEMORY;
    *have = count;
    return STEM_OK;
}

/* The tile (node-shared: collective over the node, whose ranks share one unit and so decide
 * alike) and the round's buffers. */
static int buffers(const stem_plan *plan, const stem_mpi *m, const holders *h, stem_smatrix_tiles *t)
{
    size_t planes = (size_t)stem_plan_n_planes(plan), R = (size_t)h->round_beams;
    size_t need = planes * stem_prism_tile_pixels(&h->tile[h->me]) * plan->n_beams, send = 0;
    for (int r = 0; r < h->P; r++)
        if (outside(h, r)) send += stem_prism_tile_pixels(&h->band[r]);
    int err = STEM_OK;
    if (need > t->tile_count || !t->tile) {
        stem_node_buffer_free(&t->tile_node, t->tile);
        t->tile = NULL;
        t->tile_count = 0;
        err = stem_node_buffer_alloc(&m->share, m->share.active, need ? need : 1, "S-matrix tile", &t->tile_node,
                                     &t->tile);
        if (!err) t->tile_count = need;
    }
    if (!err) err = reserve(&t->round, &t->round_count, R * stem_prism_beam_stride(plan), "S-matrix round");
    if (!err && h->others) err = reserve(&t->send, &t->send_count, R * planes * send, "S-matrix exchange");
    if (!err && h->others)
        err = reserve(&t->recv, &t->recv_count, R * planes * h->others * stem_prism_tile_pixels(&h->band[h->me]),
                      "S-matrix exchange");
    t->geometry = h->tile[h->me];
    return err;
}

/* ---- copies beam fastest, threaded ---- */

typedef struct {
    stem_prism_tile region;
    int plane;
    stem_complex *dst; /* row 0 of the region */
    size_t pixel_stride;
} segment;

typedef struct {
    const stem_plan *plan;
    const stem_complex *src; /* n beams by beam */
    int n;
    const segment *seg;
    int n_seg;
} put_job;

static int put_work(void *ctx, int worker, long begin, long end)
{
    (void)worker;
    const put_job *job = ctx;
    size_t stride = stem_prism_beam_stride(job->plan);
    long before = 0; /* rows of the segments before s */
    for (int s = 0; s < job->n_seg && begin < end; before += job->seg[s].region.ny, s++) {
        const segment *g = &job->seg[s];
        long b = begin - before, e = end - before;
        if (e <= 0 || b >= g->region.ny) continue;
        if (b < 0) b = 0;
        if (e > g->region.ny) e = g->region.ny;
        stem_prism_put_beams(job->plan, job->src, stride, job->n, g->plane, &g->region, (int)b, (int)e,
                             g->dst + (size_t)b * g->region.nx * g->pixel_stride, g->pixel_stride);
    }
    return STEM_OK;
}

static int put_segments(const stem_plan *plan, const stem_complex *src, int n, const segment *seg, int n_seg)
{
    long rows = 0;
    for (int s = 0; s < n_seg; s++) rows += seg[s].region.ny;
    put_job job = {plan, src, n, seg, n_seg};
    stem_work work = {&job, NULL, put_work, NULL};
    return rows > 0 && n > 0 ? stem_dispatch_whole(&work, rows, plan->threads) : STEM_OK;
}

/* This rank's round (beams [first, first + n)) into its own unit's tile, every plane. */
static int put_own(const stem_plan *plan, stem_smatrix_tiles *t, int first, int n)
{
    int planes = stem_plan_n_planes(plan);
    size_t plane_count = stem_prism_tile_pixels(&t->geometry) * plan->n_beams;
    segment seg[STEM_MAX_DEPTHS];
    for (int k = 0; k < planes; k++)
        seg[k] = (segment){t->geometry, k, t->tile + k * plane_count + first, (size_t)plan->n_beams};
    return put_segments(plan, t->round, n, seg, planes);
}

/* ---- the exchange ---- */

static int round_count(const holders *h, int r, int round)
{
    int first = h->beam_b[r] + round * h->round_beams, n = h->beam_e[r] - first;
    return n < 0 ? 0 : n > h->round_beams ? h->round_beams : n;
}

/* Every other unit's ranks their bands of this round's beams: [plane][band pixel][beam]. */
static int pack(const stem_plan *plan, const holders *h, stem_smatrix_tiles *t, int n, int *count, int *displ)
{
    int planes = stem_plan_n_planes(plan), n_seg = 0;
    segment *seg = stem_calloc((size_t)h->P * planes, sizeof(segment), "S-matrix exchange");
    if (!seg) return STEM_ERR_MEMORY;
    size_t at = 0;
    for (int d = 0; d < h->P; d++) {
        size_t px = outside(h, d) ? stem_prism_tile_pixels(&h->band[d]) : 0;
        displ[d] = (int)at;
        count[d] = (int)(px * planes * (size_t)n);
        for (int k = 0; px && n && k < planes; k++)
            seg[n_seg++] = (segment){h->band[d], k, t->send + at + k * px * (size_t)n, (size_t)n};
        at += (size_t)count[d];
    }
    int err = put_segments(plan, t->round, n, seg, n_seg);
    free(seg);
    return err;
}

/* The other units' rounds into this rank's band of its tile. */
static void unpack(const stem_plan *plan, const holders *h, stem_smatrix_tiles *t, int round, const int *displ)
{
    int planes = stem_plan_n_planes(plan);
    size_t nb = (size_t)plan->n_beams, plane_count = stem_prism_tile_pixels(&t->geometry) * nb;
    size_t px = stem_prism_tile_pixels(&h->band[h->me]), row0 = (size_t)h->band_row0[h->me] * t->geometry.nx;
    for (int s = 0; s < h->P; s++) {
        int n = outside(h, s) ? round_count(h, s, round) : 0;
        if (!n) continue;
        int first = h->beam_b[s] + round * h->round_beams;
        const stem_complex *from = t->recv + displ[s];
        for (int k = 0; k < planes; k++)
            for (size_t p = 0; p < px; p++)
                memcpy(t->tile + k * plane_count + (row0 + p) * nb + first, from + (k * px + p) * (size_t)n,
                       sizeof(stem_complex) * (size_t)n);
    }
}

static int exchange(const stem_plan *plan, const stem_mpi *m, const holders *h, stem_smatrix_tiles *t, int round)
{
    int P = h->P, planes = stem_plan_n_planes(plan);
    int *sc = stem_calloc((size_t)4 * P, sizeof(int), "S-matrix exchange counts");
    if (!sc) return STEM_ERR_MEMORY;
    int *sd = sc + P, *rc = sc + 2 * P, *rd = sc + 3 * P;
    double t0 = stem_wall_time();
    int err = pack(plan, h, t, round_count(h, h->me, round), sc, sd);
    size_t px = stem_prism_tile_pixels(&h->band[h->me]), at = 0;
    for (int s = 0; s < P; s++) {
        rd[s] = (int)at;
        rc[s] = outside(h, s) ? (int)(px * planes * (size_t)round_count(h, s, round)) : 0;
        at += (size_t)rc[s];
    }
    t0 = stem_phase_add(STEM_PHASE_ARRANGE, t0); /* the packing */
    err = stem_mpi_agree(err, m->group);
    if (!err &&
        MPI_Alltoallv(t->send, sc, sd, MPI_C_FLOAT_COMPLEX, t->recv, rc, rd, MPI_C_FLOAT_COMPLEX, m->group) !=
            MPI_SUCCESS)
        err = STEM_FAIL(STEM_ERR_MPI, "PRISM: the S-matrix exchange over the rank group failed");
    t0 = stem_phase_add(STEM_PHASE_GATHER, t0);
    if (!err) unpack(plan, h, t, round, rd);
    stem_phase_add(STEM_PHASE_ARRANGE, t0);
    free(sc);
    return err;
}

/* ---- the step ---- */

/* Beams [first, first + n) into the round buffer: computed, or read back ([simulation] smatrix_file). */
typedef struct {
    const stem_engine *engine;
    const stem_plan *plan;
    const stem_complex *trans;
    const stem_smatrix_io *io;
    int config, opening; /* opening: no beam computed yet for this configuration on this rank */
} beam_source;

static int fill_round(beam_source *src, int first, int n, stem_complex *round)
{
    if (n <= 0) return STEM_OK;
    const stem_smatrix_io *io = src->io;
    if (io && io->load) return io->load(io->ctx, src->plan, src->config, first, first + n, round);
    int err = src->engine->prism_smatrix(src->engine, src->plan, src->trans, first, n, src->opening, round);
    src->opening = 0;
    return err;
}

static int one_round(beam_source *src, const stem_mpi *m, const holders *h, stem_smatrix_tiles *t, int round)
{
    const stem_plan *plan = src->plan;
    const stem_smatrix_io *io = src->io;
    int n = round_count(h, h->me, round), first = h->beam_b[h->me] + round * h->round_beams, err = STEM_OK;
    double t0 = stem_wall_time();
    err = fill_round(src, first, n, t->round);
    t0 = stem_phase_add(STEM_PHASE_SMATRIX, t0);
    err = stem_mpi_agree(err, m->group); /* no rank goes on to the exchange alone */
    t0 = stem_phase_add(STEM_PHASE_WAIT, t0);
    if (!err) err = put_own(plan, t, first, n);
    t0 = stem_phase_add(STEM_PHASE_ARRANGE, t0);
    if (!err && io && io->store) {
        err = stem_mpi_agree(io->store(io->ctx, plan, m, src->config, first, first + n, t->round), m->group);
        t0 = stem_phase_add(STEM_PHASE_WRITE, t0);
    }
    if (!err && h->others) err = exchange(plan, m, h, t, round);
    return err;
}

/* A group that is one unit: every beam goes into the one tile; its ranks take rounds of beams from
 * a counter (node-shared when they share the node's tile), each as it is free. */
static int queued_rounds(beam_source *src, const stem_mpi *m, const holders *h, stem_smatrix_tiles *t,
                         stem_progress *progress)
{
    const stem_plan *plan = src->plan;
    long own = 0, *next = &own, R = h->round_beams, nb = plan->n_beams;
    int err = STEM_OK;
    if (m->share.active) {
        if (!t->queue_node.base)
            err = stem_shared_alloc(&m->share, sizeof(long), "S-matrix beam counter", &t->queue_node);
        if ((err = stem_mpi_agree(err, m->share.node))) return err;
        next = t->queue_node.base;
        if (m->share.node_rank == 0) __atomic_store_n(next, 0L, __ATOMIC_RELAXED);
        STEM_TRY(stem_shared_sync(&m->share, &t->queue_node)); /* reset before anyone takes */
    }
    while (!err) {
        long first = __atomic_fetch_add(next, R, __ATOMIC_RELAXED);
        if (first >= nb) break;
        int n = (int)(nb - first < R ? nb - first : R);
        double t0 = stem_wall_time();
        err = fill_round(src, (int)first, n, t->round);
        t0 = stem_phase_add(STEM_PHASE_SMATRIX, t0);
        if (!err) err = put_own(plan, t, (int)first, n);
        stem_phase_add(STEM_PHASE_ARRANGE, t0);
        stem_progress_update(progress, first + n); /* the node's progress, as this rank sees it */
    }
    if (err) __atomic_store_n(next, nb, __ATOMIC_RELAXED); /* the others take no more: the configuration failed */
    return err;
}

int stem_smatrix_tiles_build(const stem_engine *engine, const stem_plan *plan, const stem_mpi *m,
                             const stem_complex *trans, const stem_smatrix_io *io, int config, stem_smatrix_tiles *t)
{
    holders h;
    double t0 = stem_wall_time();
    int err = holders_make(engine, plan, m, &h);
    err = stem_mpi_agree(err, m->group);
    if (!err) err = stem_mpi_agree(buffers(plan, m, &h, t), m->group);
    stem_phase_add(STEM_PHASE_SETUP, t0); /* the tiles' buffers (the node's shared one made by its ranks together) */
    beam_source src = {engine, plan, trans, io, config, 1};
    int queued = !h.others && !(io && io->store); /* storing gathers round by round: in step */
    long mine = err ? 0 : queued ? plan->n_beams : h.beam_e[h.me] - h.beam_b[h.me];
    stem_progress progress; /* the step's, over its rounds */
    stem_progress_begin(&progress, io && io->load ? "S-matrix read back" : "S-matrix plane waves", mine);
    if (!err && queued) err = queued_rounds(&src, m, &h, t, &progress);
    for (int r = 0; !err && !queued && r < h.n_rounds; r++) {
        err = one_round(&src, m, &h, t, r);
        long done = (long)(r + 1) * h.round_beams;
        stem_progress_update(&progress, done < mine ? done : mine);
    }
    if (!err) stem_progress_end(&progress);
    t0 = stem_wall_time();
    if (m->share.active) { /* the node's ranks wrote their beams into the one tile */
        int e = stem_shared_sync(&m->share, &t->tile_node);
        if (!err) err = e;
    }
    holders_free(&h);
    err = stem_mpi_agree(err, m->group);
    stem_phase_add(STEM_PHASE_WAIT, t0); /* for the ranks still on their last round */
    return err;
}

stem_prism_view stem_smatrix_tiles_view(const stem_plan *plan, const stem_smatrix_tiles *t, int k)
{
    size_t plane_count = stem_prism_tile_pixels(&t->geometry) * plan->n_beams;
    return (stem_prism_view){t->tile + k * plane_count, t->geometry};
}

void stem_smatrix_tiles_free(stem_smatrix_tiles *t)
{
    stem_shared_free(&t->queue_node);
    stem_node_buffer_free(&t->tile_node, t->tile);
    stem_fft_free(t->round);
    stem_fft_free(t->send);
    stem_fft_free(t->recv);
    memset(t, 0, sizeof *t);
}
