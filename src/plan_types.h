/* stem_plan, the type: everything derived from the config and the model that
 * the engines need: grids, slices, beams, scan, detector geometry, the work
 * decomposition and the memory estimate, and the options (options.h) copied
 * whole from the config and resolved. Engines read only the plan: it holds no
 * pointer to the config. The type and its inline accessors sit apart from the
 * builder (plan.h) so that the modules the builder calls (channels, coherence,
 * probe) can read a plan without including the builder. */
#ifndef STEM_PLAN_TYPES_H
#define STEM_PLAN_TYPES_H

#include <stdio.h>

#include "atoms.h"
#include "config.h"
#include "index_maps.h" /* stem_fft_index and the maps shared with the GPU kernels */

typedef struct {
    int world_size, world_rank;
    int n_groups, group, group_size, group_rank; /* frozen-phonon rank groups */
    int ranks_on_node;                           /* for default threads / memory */
    int local_rank;                              /* rank within the node (GPU assignment) */
    int shared_ranks;                            /* ranks of this group sharing node memory (1: none) */
    const char *not_shared;                      /* why node sharing is off (NULL: on) */
    int launched;                                /* started by a launcher (mpirun, srun); 0: a singleton */
} stem_layout;

/* Probe aberrations as chi (probe.c) uses them. */
typedef struct {
    double c[STEM_N_ABERR];   /* C_nm, Angstrom (aberrations.h); C10 < 0 = underfocus */
    double phi[STEM_N_ABERR]; /* phi_nm, rad */
} stem_aberrations;

typedef struct {
    stem_layout layout;
    int algorithm;
    stem_options opt; /* the config's, resolved: focal spread from Cc, focal_points and oversampling auto,
                          * save_4d for cbed (resolve_options, choose_focal_points, choose_oversampling) */
    int focal_auto;   /* [probe] focal_points = auto chose opt.focal_points (coherence.h) */
    int batch_given;  /* [compute] batch_size was set (the GPU engine sizes batches itself otherwise) */
    /* optics */
    double energy_kev;
    double lambda;        /* Angstrom */
    double sigma;         /* rad / (V Angstrom) */
    double alpha;         /* probe semi-angle, rad */
    double tilt_q[2];     /* beam tilt as a wave vector, 1/Angstrom: chi and aperture centred here (STEM) */
    int plane_k[2];       /* hrtem: the plane wave's Fourier indices (the beam tilt on the grid) */
    double aperture_q[2]; /* the aperture's centre, 1/Angstrom (tilt plus aperture shift) */
    double semiangle_mrad;
    stem_aberrations aberr;
    /* simulation grid (full resolution) */
    int nx, ny;
    double dx, dy; /* Angstrom */
    double cell[3];
    int n_slices;
    int heaviest_z;     /* the model's heaviest element (choose_oversampling) */
    int pot_nx, pot_ny; /* the potential's grid: opt.oversampling times the run's (potential.c) */
    double dz;          /* every slice's thickness but the last's */
    double dz_last;     /* the last slice's (Angstrom): dz, or thinner where the cell is no whole number of slices */
    /* hrtem on a distributed FFT (comm/dist_fft.h): this rank's real-space rows and
     * transposed Fourier-space columns of the group's one wave; dist 0: serial */
    int dist;
    long dist_rows, dist_row0, dist_cols, dist_col0;
    /* detection planes (thickness series): results after slices depth_slice[0..n_depths), ascending;
     * n_depths 0: at the exit surface only. The waves stop at the deepest plane. */
    int n_depths;
    int depth_slice[STEM_MAX_DEPTHS];
    /* a campaign's point plans: 1 + their sample tilt's index, which names the tilt's stored
     * potential and S-matrix in potential_file and smatrix_file (0: a run's /potential, /smatrix) */
    int campaign_tilt;
    double q_limit; /* anti-aliasing band limit, 1/Angstrom (2/3 of Nyquist) */
    /* PRISM interpolation factors (1 for multislice) */
    int fx, fy;
    /* Fourier box that holds the band-limited wave: the S-matrix grid (PRISM)
     * and the region the detector sees (both algorithms) */
    int crop_nx, crop_ny;
    /* detector grid = crop / f; one diffraction pattern is out_nx x out_ny */
    int out_nx, out_ny;
    double out_dqx, out_dqy; /* 1/Angstrom per detector pixel */
    /* detector */
    int n_bins;
    double ring_width;    /* mrad */
    int seg_n, seg_rings; /* segmented detector: azimuthal segments (0: none), rings */
    /* 4D patterns and PACBED as written: cbed_nx x cbed_ny bins of cbed_bin^2 detector pixels,
     * the first at centred detector pixel (cbed_x0, cbed_y0) (centre: out_nx/2, out_ny/2) */
    int cbed_nx, cbed_ny, cbed_bin, cbed_x0, cbed_y0;
    /* [detector] cbed_square_q: bins of equal steps, zero angle at bin (cbed_nx / 2, cbed_ny / 2), each
     * detector pixel in the bin nearest its angle (detector.c); cbed_dq_mrad: each axis's step as written */
    int cbed_square;
    double cbed_dq_mrad[2];
    double cbed_max_mrad;                      /* [detector] cbed_max_angle: the crop's half-width (0: none) */
    double seg_inner, seg_outer, seg_rotation; /* mrad, mrad, rad */
    double max_angle_mrad;                     /* largest angle that is simulated */
    int n_images;
    stem_image_range images[STEM_MAX_IMAGES];
    /* scan */
    int scan_nx, scan_ny;
    long n_probes;
    double scan_x0, scan_y0, scan_step; /* Angstrom */
    /* [scan] positions: n_probes positions (x0 y0 x1 y1 ..., Angstrom), scan_nx = n_probes,
     * scan_ny = 1 and the outputs have one probe axis; NULL: the grid above. The caller's
     * stem_positions, borrowed: it outlives the plan. */
    const double *positions;
    /* plane waves of the S-matrix (PRISM): Fourier indices on the full grid */
    int n_beams;
    int *beam_kx, *beam_ky;
    /* frozen phonons */
    int n_configs;
    /* this rank's share: probes [probe_begin, probe_end), beams [beam_begin, beam_end) */
    long probe_begin, probe_end;
    int beam_begin, beam_end;
    /* 4D patterns streamed in blocks (plan_blocks.c): probes per block of a rank's share (0: not
     * streamed, the whole share at once), blocks (the same on every rank: the largest share's),
     * and whether every configuration's transmission functions are kept (else built per block) */
    long probe_block;
    int n_blocks, keep_configs;
    int threads, batch_size;
    /* memory (bytes, per rank) */
    double mem_limit, mem_potential, mem_table, mem_smatrix, mem_results, mem_detector, mem_workspace, mem_total;
    double mem_runtime;     /* the process before its buffers: libraries, MPI, HDF5, FFTW, the model (in mem_total) */
    char fft_wisdom[64];    /* measured FFTW plans: the shared wisdom's hash (mpi/fft_wisdom.c); "" otherwise */
    double mem_node_shared; /* bytes of this group's node-shared windows on this node (0: none) */
    char mem_limit_source[256]; /* what set mem_limit (config, cgroup, rlimit, RAM) */
    int mem_limit_from_config;
    long n_atoms;
} stem_plan;

/* hrtem and cbed: one wave and no scan; the outputs have a probe axis of length 1. */
static inline int stem_plan_single_wave(const stem_plan *plan)
{
    return plan->algorithm == STEM_ALG_HRTEM || plan->algorithm == STEM_ALG_CBED;
}

/* Probe index p -> scan position in Angstrom ([scan] positions, or the grid row-major, x fastest). */
static inline void stem_plan_probe_position(const stem_plan *plan, long p, double *x, double *y)
{
    if (plan->positions) {
        *x = plan->positions[2 * p];
        *y = plan->positions[2 * p + 1];
        return;
    }
    *x = plan->scan_x0 + (p % plan->scan_nx) * plan->scan_step;
    *y = plan->scan_y0 + (p / plan->scan_nx) * plan->scan_step;
}

/* Results one probe step makes: one per detection plane (at least the exit). */
static inline int stem_plan_n_planes(const stem_plan *plan) { return plan->n_depths > 0 ? plan->n_depths : 1; }
/* Slices the waves pass before detection plane k. */
static inline int stem_plan_plane_slices(const stem_plan *plan, int k)
{
    return plan->n_depths > 0 ? plan->depth_slice[k] : plan->n_slices;
}

/* A cell within STEM_SLICE_FIT of a slice of a whole number of slices is cut into that
 * number, all dz thick (the remainder, at most 1e-4 of a slice, is dropped: 6-decimal model
 * files); otherwise the last slice is thinner: cell_z - (n - 1) dz. */
#define STEM_SLICE_FIT 1e-4
/* Slice s's thickness (Angstrom). */
static inline double stem_plan_slice_dz(const stem_plan *plan, int s)
{
    return s == plan->n_slices - 1 ? plan->dz_last : plan->dz;
}
/* Whether the last slice is thinner than the others (it then has its own propagator). */
static inline int stem_plan_thin_last(const stem_plan *plan) { return plan->dz_last != plan->dz; }
/* Depth below the entrance surface of the plane under the first `slices` slices (Angstrom). */
static inline double stem_plan_depth(const stem_plan *plan, int slices)
{
    return slices >= plan->n_slices ? (plan->n_slices - 1) * plan->dz + plan->dz_last : slices * plan->dz;
}

#endif
