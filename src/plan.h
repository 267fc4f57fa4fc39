/* The plan's builder: stem_plan (plan_types.h) derived from the config and the
 * model, its memory estimate and checks, and its text. */
#ifndef STEM_PLAN_H
#define STEM_PLAN_H

#include <stdio.h>

#include "plan_types.h"
#include "prism_tiles.h"

/* The slices that cover cell_z (at least 1) and the last one's thickness. */
int stem_slice_count(double cell_z, double dz, double *dz_last);

/* An FFT-friendly size >= n (factors 2, 3, 5, 7 only). */
int stem_fft_good_size(int n);
/* Smallest multiple of m that is FFT-friendly and >= n (m with a prime factor
 * above 7, e.g. 11 or 13: m times the smallest FFT-friendly k >= n/m). */
int stem_fft_good_multiple(int n, int m);
/* Count and split [0, n) into `parts` contiguous pieces; piece i is [*b, *e). */
void stem_split_range(long n, int parts, int i, long *b, long *e);
/* PRISM: the tile of the S-matrix's box that the windows of the probes of group ranks
 * [first, first + n) cover (prism_tiles.h), from the plan's split of the probes; what the
 * S-matrix step gives such a unit of ranks (mpi/smatrix_tiles.c) when no streamed block moves them. */
void stem_plan_unit_tile(const stem_plan *plan, int first, int n, stem_prism_tile *tile);

/* Depth nodes of the finite projection's profiles (potential.c). */
#define STEM_FINITE_NODES 24
/* Samples of each species' unblurred radial table, the profiles' source (potential.c). */
#define STEM_RADIAL_POINTS 16384
/* The blurred atom profiles (potential.c): the Gaussian's spectrum at the nearest alias of
 * the band edge is STEM_BLUR_ALIAS of its value at the edge; a profile is tabulated every
 * sigma / STEM_BLUR_STEPS out to the cutoff plus STEM_BLUR_REACH sigmas. */
#define STEM_BLUR_ALIAS 1e-5
#define STEM_BLUR_STEPS 128
#define STEM_BLUR_REACH 6
typedef struct {
    double sigma; /* Angstrom */
    double reach; /* Angstrom from the atom */
    double step;  /* Angstrom between samples */
    int points;   /* samples per profile */
    int rx, ry;   /* pixels reached either side of the atom's own */
} stem_blur_geometry;
stem_blur_geometry stem_plan_blur_geometry(const stem_plan *plan);
/* Probe diameter (Angstrom) that a PRISM window must hold: the Airy disc
 * 1.22 lambda/alpha plus twice the largest geometric ray displacement of
 * the aberrations inside the aperture. */
double stem_plan_probe_diameter(const stem_plan *plan);
/* The sample's thickness (cell z, Angstrom) and the slices that cover it (dz set; stem_slice_count). */
void stem_plan_set_thickness(stem_plan *plan, double cell_z);
/* [scan] positions as rank 0 read them (io/positions.h) and every rank received them:
 * n probes, xy = x0 y0 x1 y1 ... (Angstrom, inside the model's cell). */
typedef struct {
    double *xy;
    long n;
} stem_positions;
/* Build the plan (no file read, nothing collective: it can be rebuilt freely); layout gives
 * this rank's place in the decomposition; positions: the probes when [scan] positions is
 * set (NULL otherwise; HRTEM and CBED ignore them). */
int stem_plan_build(stem_plan *plan, const stem_config *cfg, const stem_atoms *atoms, const stem_positions *positions,
                    const stem_layout *layout);
/* stem_plan_build in two steps, for a caller that checks inputs against the geometry first:
 * the geometry (grids, slices, optics, detector, scan, beams: what a stored potential or
 * S-matrix must match), then the rest (the PRISM window, the work split, the memory, the
 * distributed FFT). */
int stem_plan_geometry(stem_plan *plan, const stem_config *cfg, const stem_atoms *atoms,
                       const stem_positions *positions, const stem_layout *layout);
int stem_plan_finish(stem_plan *plan, const stem_config *cfg, const stem_atoms *atoms);
/* plan_memory.c: the memory per rank. Bytes of the potential's profile table for n_species
 * species, with the radial tables its build reads (potential.c builds it). */
double stem_plan_table_bytes(const stem_plan *plan, int n_species);
/* Every large buffer of a run, per rank (mpi/campaign.c, detector.c, engines), the process
 * itself, and the limit (the config's max_memory_gib, else the node's memory): the mem_ fields. */
void stem_plan_estimate_memory(stem_plan *plan, int n_species, double max_memory_gib);
/* The estimate again for hrtem's distributed FFT: this rank's slabs of the one wave. */
void stem_plan_estimate_slabs(stem_plan *plan);
/* A campaign unit holds points_per_unit results (its defoci x depths) on each rank, the
 * campaign's sums hold all n_points (src/accumulator.h), rank 0 a piece of a store, a group
 * leader save_smatrix's S-matrix: counted in mem_results. */
void stem_plan_count_campaign(stem_plan *plan, int points_per_unit, int n_points);
/* A PRISM thickness series (mpi/campaign.c sets the depths on its points' plans) keeps the
 * S-matrix of each of its `planes` detection planes: counted in mem_smatrix (and the node-shared
 * windows) before the memory is checked. Nothing for other algorithms. */
void stem_plan_count_depths(stem_plan *plan, int planes);
/* Refuse plans that exceed the memory allowed, naming the figure needed,
 * what set the limit and advice for the largest part. */
int stem_plan_check_memory(const stem_plan *plan);
/* Whether the node-shared windows fit where MPI puts them (/dev/shm); 1 without sharing. */
int stem_plan_shared_fits(const stem_plan *plan);
/* The printed plan's lines of the S-matrix this rank holds (PRISM) and of the memory. */
void stem_plan_print_smatrix_holding(const stem_plan *plan, FILE *out);
void stem_plan_print_memory(const stem_plan *plan, FILE *out);
void stem_plan_print(const stem_plan *plan, FILE *out);
/* plan_blocks.c: the 4D blocks ([detector] probe_block) from the memory limit, the estimate
 * made for them (after the rest of the estimate); and their line of the printed plan. */
void stem_plan_choose_blocks(stem_plan *plan, const stem_config *cfg);
void stem_plan_print_blocks(const stem_plan *plan, FILE *out);
char *stem_plan_to_text(const stem_plan *plan);
void stem_plan_free(stem_plan *plan);
/* "multislice", "prism", "hrtem", "cbed" (the config's words). */
const char *stem_algorithm_name(int algorithm);

#endif
