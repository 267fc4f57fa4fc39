/* The plan's memory accounting: what every large buffer of a run takes per rank (the
 * transmission functions, the lookup table, PRISM's S-matrix, the results, the detector, the
 * workspace and the process itself), against the limit it must fit, the refusals that name
 * the largest part, and the lines of the printed plan that show it. A piece of the plan
 * (plan.h), as plan_blocks.c, which streams the 4D patterns from what is estimated here. */
#include "plan.h"

#include <math.h>
#include <string.h>

#include "accumulator.h"
#include "channels.h"
#include "memlimit.h"
#include "prism_tiles.h"

#define GIB 1073741824.0

/* The parts of the estimate, summed in one order. */
static double parts_total(const stem_plan *plan)
{
    return plan->mem_runtime + plan->mem_potential + plan->mem_table + plan->mem_smatrix + plan->mem_results +
        plan->mem_detector + plan->mem_workspace;
}

double stem_plan_table_bytes(const stem_plan *plan, int n_species)
{
    int nodes = plan->opt.finite_projection ? STEM_FINITE_NODES : 1;
    return 4.0 * n_species * nodes * (stem_plan_blur_geometry(plan).points + STEM_RADIAL_POINTS);
}

/* What writing the output adds to a process (measured: 58 MiB on a 0.19 GiB process at the
 * write, Open MPI's MPI-IO collective buffer, io_ompio_bytes_per_agg = 32 MiB by default,
 * with HDF5's caches and the I/O components it loads). */
#define STEM_WRITE_BUFFER_BYTES (64.0 * 1048576)

/* A one-rank GPU group without a focal spread, stored S-matrix, thickness series or streaming keeps
 * its one copy of the S-matrix on the GPU (cuda/gpu_prism.cu, gpu_prism_resident): none on the host.
 * (When the GPU turns out too small for it, the run takes the host path and says so.) */
static int smatrix_on_gpu(const stem_plan *plan, int planes)
{
    return plan->opt.device == STEM_DEVICE_GPU && plan->layout.group_size == 1 && planes == 1 &&
        plan->opt.gpu_prism_resident && plan->opt.memory_mode != STEM_MEMMODE_STREAMING &&
        !(plan->opt.focal_spread > 0 && plan->opt.focal_points > 1) && !plan->opt.save_smatrix &&
        !plan->opt.smatrix_file[0];
}

/* PRISM's host S-matrix per rank (mpi/smatrix_tiles.h): every beam over its unit's tile (the
 * windows of the unit's probes; the whole box on the GPU) at each of the `planes` detection
 * planes, beam fastest, and a round's buffers (the round's beams by beam, and the bands sent to
 * and received from other units). The unit is the rank, or its node's ranks when they share
 * memory (shared), each counting its share of the node's tile. */
typedef struct {
    stem_prism_tile tile; /* the unit's (rank's or node's) tile of the box */
    int round;            /* beams per rank and round */
} smatrix_holding;

static double smatrix_held(const stem_plan *plan, int planes, double shared, smatrix_holding *h)
{
    memset(h, 0, sizeof *h);
    if (smatrix_on_gpu(plan, planes)) return 0;
    int P = plan->layout.group_size, node_rank = plan->layout.local_rank % (int)shared;
    stem_prism_tile tile;
    if (plan->opt.device == STEM_DEVICE_CPU) /* the node's probes: its ranks are consecutive in the group */
        stem_plan_unit_tile(plan, plan->layout.group_rank - node_rank, (int)shared, &tile);
    else
        stem_prism_tile_whole(plan, &tile);
    double area = (double)stem_prism_tile_pixels(&tile), box = (double)plan->crop_nx * plan->crop_ny;
    double share = 8.0 * planes * area * plan->n_beams / shared, units = P / shared;
    double send = (units - 1) * area, recv = (P - shared) * area / shared; /* pixels per beam of a round */
    double per_beam = 8.0 * planes * (box + send + recv);
    int round = stem_prism_round_beams(plan, share, per_beam, (plan->n_beams + P - 1) / P);
    h->tile = tile;
    h->round = round;
    return share + round * per_beam;
}

static double smatrix_bytes(const stem_plan *plan, int planes, double shared)
{
    smatrix_holding h;
    return smatrix_held(plan, planes, shared, &h);
}

/* Every large buffer of a run, per rank (mpi/campaign.c, detector.c, engines), and the process
 * itself: its libraries and MPI's start-up peak (measured when planning) and the write's buffers. */
void stem_plan_estimate_memory(stem_plan *plan, int n_species, double max_memory_gib)
{
    double grid = (double)plan->nx * plan->ny;
    long local_probes = plan->probe_end - plan->probe_begin;
    double per_probe = stem_channel_bytes_per_probe(plan);
    /* node-shared buffers count as their share (node_shared.h): the node's memory is what they fill */
    double shared = plan->layout.shared_ranks > 1 ? plan->layout.shared_ranks : 1;
    /* transmission functions of every slice (node-shared with the CPU engine, which
     * leaves building them to the campaign), the model and one displaced copy */
    plan->mem_potential =
        8.0 * grid * plan->n_slices / (plan->opt.device == STEM_DEVICE_CPU ? shared : 1) + 48.0 * plan->n_atoms * 2;
    /* the transmission build's workers: a potential and a wave on the oversampled grid each */
    double m = plan->opt.oversampling;
    int gpu = plan->opt.device == STEM_DEVICE_GPU; /* the GPU builds them in its own memory (gpu_transmission) */
    if (!(gpu && plan->opt.gpu_transmission)) plan->mem_potential += 12.0 * m * m * grid * (gpu ? 1 : plan->threads);
    /* a GPU run's group leaders build the next configuration while the GPU works (mpi/phonon_loop.c) */
    if (plan->opt.device != STEM_DEVICE_CPU && plan->layout.group_rank == 0 && plan->n_configs > plan->layout.n_groups)
        plan->mem_potential += 8.0 * grid * plan->n_slices;
    /* the lookup table: every rank's own, or one copy per node (mpi/phonon_steps.c) counted as its share */
    double table = stem_plan_table_bytes(plan, n_species);
    plan->mem_table = table / shared;
    plan->mem_smatrix = plan->algorithm == STEM_ALG_PRISM ? smatrix_bytes(plan, stem_plan_n_planes(plan), shared) : 0;
    /* what the group's node-shared windows take on this node: every engine but the
     * GPU may leave the transmission functions to the campaign (counted for the room check) */
    plan->mem_node_shared = 0;
    if (shared > 1)
        plan->mem_node_shared = (plan->opt.device == STEM_DEVICE_GPU ? 0 : 8.0 * grid * plan->n_slices) +
            plan->mem_smatrix * shared + table;
    /* one unit's values (a focal spread's: one defocus's beside them), the campaign's exact sums of
     * one point (accumulator.h; mpi/campaign.c adds a series' other points) and the finished point
     * with its standard-error state */
    plan->mem_results = per_probe * local_probes;
    if (plan->opt.focal_spread > 0 && plan->opt.focal_points > 1) plan->mem_results *= 2;
    if (plan->opt.device != STEM_DEVICE_CPU) /* the last unit's, added to the sums while the next computes */
        plan->mem_results += per_probe * local_probes;
    plan->mem_results += stem_acc_bytes(plan, 1) + per_probe * local_probes;
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++)
        plan->mem_results += 8.0 * stem_channel_error_width(plan, ch) * local_probes;
    if (plan->opt.source_size > 0) /* the blur needs each real-space channel over the whole scan (coherence.c) */
        for (int ch = 0; ch < STEM_N_CHANNELS; ch++)
            if (ch != STEM_CH_CBED && !stem_channel_table[ch].is_float && stem_channel_per_probe(ch))
                plan->mem_results += 8.0 * stem_channel_width(plan, ch) * plan->n_probes;
    plan->mem_detector = 16.0 * plan->out_nx * plan->out_ny; /* bin, mask, two angles per pixel */
    /* the propagators (multislice.c); on the CPU each worker's waves (twice: FFTW's scratch) and pattern */
    plan->mem_workspace = 8.0 * grid * (1 + stem_plan_thin_last(plan));
    if (!gpu ||
        plan->algorithm == STEM_ALG_HRTEM) /* the GPU's waves are in its memory (hrtem: the CPU's if too large) */
        plan->mem_workspace += (double)plan->threads * plan->batch_size * grid * 8.0 * 2 + 4.0 * grid * plan->threads;
    plan->mem_runtime = stem_process_resident_bytes() + STEM_WRITE_BUFFER_BYTES;
    plan->mem_total = parts_total(plan);
    stem_memory_limit limit;
    stem_memory_limit_choose(max_memory_gib, plan->layout.ranks_on_node, &limit);
    plan->mem_limit = limit.bytes;
    plan->mem_limit_from_config = max_memory_gib > 0;
    snprintf(plan->mem_limit_source, sizeof plan->mem_limit_source, "%s", limit.source);
}

/* hrtem on a distributed FFT (plan.c, choose_distribution): the estimate again for this rank's
 * slabs of the one wave. */
void stem_plan_estimate_slabs(stem_plan *plan)
{
    double slab = (double)plan->dist_rows * plan->nx, fourier = (double)plan->dist_cols * plan->ny;
    double buffer = 8.0 * (slab > fourier ? slab : fourier);
    plan->mem_potential = 8.0 * slab * plan->n_slices + 48.0 * plan->n_atoms * 2;
    plan->mem_node_shared = 0;
    plan->mem_results = 2 * stem_channel_bytes_per_probe(plan) + stem_acc_bytes(plan, 1); /* unit, sums, finished */
    /* the detector's tables, built whole before each rank keeps its columns' pixels (dist_hrtem.c) */
    int detects = plan->opt.save_3d || plan->n_images || plan->seg_n || plan->opt.save_dpc || plan->opt.save_4d;
    plan->mem_detector = detects ? 16.0 * plan->out_nx * plan->out_ny : 0;
    /* wave, work, propagator (two with a thinner last slice), lens; one slice's potential rows */
    plan->mem_workspace = (4 + stem_plan_thin_last(plan)) * buffer + 4.0 * slab;
    plan->mem_total = parts_total(plan);
}

void stem_plan_count_campaign(stem_plan *plan, int points_per_unit, int n_points)
{
    double per_probe = stem_channel_bytes_per_probe(plan), local = (double)(plan->probe_end - plan->probe_begin);
    double units = plan->opt.device != STEM_DEVICE_CPU ? 2 : 1;      /* the GPU: the last unit's taken meanwhile */
    double more = units * (points_per_unit - 1) * per_probe * local; /* the unit's other points beside this one */
    more += stem_acc_bytes(plan, n_points - 1);                      /* the other points' sums */
    if (plan->layout.world_rank == 0) more += 64.0 * 1048576;        /* a store's piece (mpi/campaign_sums.c) */
    if (plan->layout.group_rank == 0 && plan->opt.save_smatrix)      /* the S-matrix kept for the unit's file */
        more += 8.0 * plan->n_beams * plan->crop_ny * (double)plan->crop_nx;
    plan->mem_results += more;
    plan->mem_total += more;
}

void stem_plan_count_depths(stem_plan *plan, int planes)
{
    if (plan->algorithm != STEM_ALG_PRISM || planes <= stem_plan_n_planes(plan)) return;
    double shared = plan->layout.shared_ranks > 1 ? plan->layout.shared_ranks : 1;
    double more = smatrix_bytes(plan, planes, shared) - plan->mem_smatrix;
    plan->mem_smatrix += more;
    plan->mem_total += more;
    if (shared > 1) plan->mem_node_shared += more * shared;
}

/* What helps when one part of the estimate is too large. */
static const char *memory_advice(const stem_plan *plan)
{
    const double part[6] = {plan->mem_potential, plan->mem_table,    plan->mem_smatrix,
                            plan->mem_results,   plan->mem_detector, plan->mem_workspace};
    static const char *advice[6] = {
        "every rank holds the transmission functions of all slices, and each thread building them a slice on the "
        "grid [simulation] transmission_oversampling times finer, so more ranks do not help: use thicker slices, a "
        "coarser pixel_size, a lower transmission_oversampling, fewer [compute] threads or a smaller cell",
        "the potential's profile table is large: lower [simulation] potential_radius (more ranks do not help)",
        "each rank holds the S-matrix over the windows of its probes (one per depth of a thickness series; the whole "
        "box on the GPU), about 1/ranks of it plus the window: use more ranks in a group (fewer [compute] groups, "
        "more nodes), raise [simulation] interpolation_x/y, use a coarser pixel_size or fewer [output] depths",
        "results are split over the ranks of a group: use more ranks (or nodes), fewer scan positions, or save_4d = "
        "false (a plain run streams its 4D patterns in blocks: [detector] probe_block)",
        "the detector is large: use a coarser [simulation] pixel_size",
        "each worker thread has its own workspace: use fewer [compute] threads or a smaller batch_size"};
    int big = 0;
    for (int i = 1; i < 6; i++)
        if (part[i] > part[big]) big = i;
    return advice[big];
}

/* "1.25 GiB", "12.0 MiB", "3 KiB": refusals of tiny limits stay readable. */
static const char *format_bytes(double b, char *out, size_t n)
{
    if (b >= 1073741824.0)
        snprintf(out, n, "%.2f GiB", b / 1073741824.0);
    else if (b >= 1048576.0)
        snprintf(out, n, "%.1f MiB", b / 1048576.0);
    else
        snprintf(out, n, "%.0f KiB", b / 1024.0);
    return out;
}

/* Node-shared windows live in a file system in memory (/dev/shm), often smaller than
 * memory (containers: 64 MiB): refused here, before anything is allocated. The bytes they
 * need on this node and the room they have (-1: unknown). */
static double shared_need(const stem_plan *plan, double *room, char *dir, int dir_len, int *groups)
{
    const stem_layout *L = &plan->layout;
    *room = stem_shared_memory_room(dir, dir_len);
    *groups = (L->ranks_on_node + L->shared_ranks - 1) / L->shared_ranks; /* groups with ranks on this node */
    return plan->mem_node_shared * (*groups > 0 ? *groups : 1);
}

int stem_plan_shared_fits(const stem_plan *plan)
{
    if (plan->layout.shared_ranks <= 1 || plan->mem_node_shared <= 0) return 1;
    char dir[512];
    double room;
    int groups;
    double need = shared_need(plan, &room, dir, sizeof dir, &groups);
    return room < 0 || need <= room;
}

static int check_shared_room(const stem_plan *plan)
{
    if (stem_plan_shared_fits(plan)) return STEM_OK;
    char dir[512], f[2][32];
    double room;
    int groups;
    double need = shared_need(plan, &room, dir, sizeof dir, &groups);
    return STEM_FAIL(
        STEM_ERR_MEMORY,
        "node-shared memory (transmission functions and S-matrix of %d group(s) on this node) needs %s in %s, "
        "which has %s free: give it room (containers: --shm-size; Open MPI: --mca osc_sm_backing_directory "
        "DIR) or set [compute] node_shared = false (one copy per rank)",
        groups, format_bytes(need, f[0], 32), dir, format_bytes(room, f[1], 32));
}

int stem_plan_check_memory(const stem_plan *plan)
{
    STEM_TRY(check_shared_room(plan));
    if (plan->mem_total <= plan->mem_limit) return STEM_OK;
    char f[9][32];
    return STEM_FAIL(
        STEM_ERR_MEMORY,
        "the plan needs %s per rank (runtime %s, transmission %s, lookup table %s, S-matrix %s, results %s, "
        "detector %s, workspace %s) but only %s is allowed (%s%s); %s",
        format_bytes(plan->mem_total, f[0], 32), format_bytes(plan->mem_runtime, f[8], 32),
        format_bytes(plan->mem_potential, f[1], 32), format_bytes(plan->mem_table, f[2], 32),
        format_bytes(plan->mem_smatrix, f[3], 32), format_bytes(plan->mem_results, f[4], 32),
        format_bytes(plan->mem_detector, f[5], 32), format_bytes(plan->mem_workspace, f[6], 32),
        format_bytes(plan->mem_limit, f[7], 32), plan->mem_limit_source,
        plan->mem_limit_from_config ? "" : "; [compute] max_memory sets another", memory_advice(plan));
}

void stem_plan_print_smatrix_holding(const stem_plan *plan, FILE *out)
{
    double shared = plan->layout.shared_ranks > 1 ? plan->layout.shared_ranks : 1;
    smatrix_holding h;
    double bytes = smatrix_held(plan, stem_plan_n_planes(plan), shared, &h);
    if (!(bytes > 0)) {
        fprintf(out, "  S-matrix per rank  none on the host: its one copy is kept on the GPU (one-rank group)\n");
        return;
    }
    double part = (double)stem_prism_tile_pixels(&h.tile) / ((double)plan->crop_nx * plan->crop_ny);
    fprintf(out,
            "  S-matrix per rank  %.3f GiB: every beam over a %d x %d tile (%.0f%% of the box: %s)%s, and rounds of %d "
            "beam%s\n",
            bytes / GIB, h.tile.nx, h.tile.ny, 100 * part,
            plan->opt.device == STEM_DEVICE_CPU ? "the windows of its probes" : "the GPU reads the whole box",
            shared > 1 ? ", one copy for the node's ranks" : "", h.round, h.round == 1 ? "" : "s");
}

void stem_plan_print_memory(const stem_plan *plan, FILE *out)
{
    fprintf(out,
            "  memory per rank    %.3f GiB (runtime %.3f, transmission %.3f, lookup table %.3f, S-matrix %.3f, "
            "results %.3f, detector %.3f, workspace %.3f)\n",
            plan->mem_total / GIB, plan->mem_runtime / GIB, plan->mem_potential / GIB, plan->mem_table / GIB,
            plan->mem_smatrix / GIB, plan->mem_results / GIB, plan->mem_detector / GIB, plan->mem_workspace / GIB);
    fprintf(out, "  memory limit       %.2f GiB per rank (%s)\n", plan->mem_limit / GIB, plan->mem_limit_source);
}
