/* PRISM's S-matrix distributed by space over a rank group (Ophus 2017: a probe reads only the
 * window of 1/f of the cell around it). The probes are already split over the group's ranks;
 * each "unit" (a rank, or the ranks of a node when they share memory, comm/node_shared.h) keeps
 * every beam over the tile of the box that its probes' windows cover (src/prism_tiles.h),
 * beam fastest, as the output step reads it: no whole S-matrix and no second arranged copy.
 *
 * The beams are computed as before (split over the ranks) in rounds of a few beams: each rank
 * puts its round into its own unit's tile, and sends every other unit's ranks their band of
 * rows of that unit's tile (one all-to-all per round over the group). A round holds about a
 * tenth of the tile, so the S-matrix memory per rank is about 1.1 x (whole S-matrix / units)
 * plus the window's halo. A group that is one unit (one rank, or ranks of one node) exchanges
 * nothing: its ranks take rounds from a counter they share instead, so that a rank slowed by
 * its neighbours leaves beams to the others. An engine that reads only the whole box (the GPU) gets the whole
 * box as its tile: the same exchange, one copy on the host. Every value is a copy of the one
 * its beam's rank computed, so results equal a single rank's bit for bit. */
#ifndef STEM_SMATRIX_TILES_H
#define STEM_SMATRIX_TILES_H

#include "../comm/comm.h"
#include "../comm/node_shared.h"
#include "../src/engine.h"

/* PRISM's S-matrix stored or read back ([output] save_smatrix, [simulation] smatrix_file),
 * round by round: load fills beams [b0, b1) of configuration c (this rank's) instead of
 * computing them; store receives each rank's round, beams [b0, b1) by beam ([beam][crop_ny]
 * [crop_nx], the exit surface), collectively over the group (m: where the store may gather).
 * Either may be NULL. */
typedef struct {
    int (*load)(void *ctx, const stem_plan *plan, int c, int b0, int b1, stem_complex *S);
    int (*store)(void *ctx, const stem_plan *plan, const stem_mpi *m, int c, int b0, int b1, const stem_complex *S);
    void *ctx;
} stem_smatrix_io;

/* Kept from one configuration to the next (first-touch page faults and node-shared windows
 * once per run). Zero-initialise. */
typedef struct {
    stem_complex *tile; /* [plane][tile.ny][tile.nx][n_beams]; node-shared when the node shares */
    stem_shared_buffer tile_node;
    size_t tile_count;        /* complex numbers allocated */
    stem_prism_tile geometry; /* this rank's unit's tile for the plan's probes */
    stem_complex *round, *send, *recv;
    size_t round_count, send_count, recv_count;
    stem_shared_buffer queue_node; /* node-shared: the counter a lone node's ranks take beams from */
} stem_smatrix_tiles;

/* Collective over m->group: every detection plane's S-matrix of this configuration over this
 * rank's tile (config: the configuration's index, for io). */
int stem_smatrix_tiles_build(const stem_engine *engine, const stem_plan *plan, const stem_mpi *m,
                             const stem_complex *trans, const stem_smatrix_io *io, int config, stem_smatrix_tiles *t);
/* Detection plane k's S-matrix over the tile, as the output step reads it. */
stem_prism_view stem_smatrix_tiles_view(const stem_plan *plan, const stem_smatrix_tiles *t, int k);
/* Collective over the node when the tile is node-shared. */
void stem_smatrix_tiles_free(stem_smatrix_tiles *t);

#endif
