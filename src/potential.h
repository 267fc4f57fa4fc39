/* Projected potentials: per-species blurred radial profiles, slices, the band-limited
 * potential and the transmission functions t = exp(i sigma V). */
#ifndef STEM_POTENTIAL_H
#define STEM_POTENTIAL_H

#include "dispatcher.h"
#include "physics.h"
#include "plan.h"

/* Every atom's profile is blurred by one Gaussian (blur_sigma) before it is sampled on the
 * grid at the atom's exact position, and the blur is divided out in Fourier space: the
 * Gaussian makes the samples alias-free inside the band limit (potential.c), so a slice's
 * band-limited potential does not depend on where atoms sit within a pixel nor on the grid. */
typedef struct {
    int n_species;
    int species_z[STEM_MAX_Z + 1];
    int species_of_z[STEM_MAX_Z + 1]; /* -1 if absent */
    int finite;                       /* finite projection: a profile per depth node (potential.c) */
    int n_nodes;                      /* depth nodes per species: 1 (infinite projection) or the finite ones */
    double z_nodes[32]; /* finite: the depths (Angstrom, up to the cutoff) the profiles are tabulated at */
    double cutoff;      /* Angstrom */
    double blur_sigma;  /* Angstrom: the Gaussian every profile is blurred with */
    double reach;       /* Angstrom: where a blurred profile ends (cutoff + STEM_BLUR_REACH sigmas) */
    double step;        /* Angstrom between a profile's samples */
    int points;         /* samples per profile (the last two zero) */
    int rx, ry;         /* pixels an atom reaches either side of its own */
    int kx, ky;         /* box of pixels an atom may reach: 2r + 2 */
    long n_profiles;    /* n_species * n_nodes */
    float *profiles;    /* [species][node][points]: blurred profile at r = i step, V Angstrom */
    int borrowed;       /* profiles live in memory the caller owns (a node's shared copy): not freed here */
} stem_potential_table;

/* One term of an atom's share of a slice: weight times the profile of depth node `node`. */
typedef struct {
    int node;
    double weight;
} stem_node_weight;

/* Depth nodes per species the plan's projection needs (1: infinite projection). */
int stem_potential_nodes(const stem_plan *plan);

/* The whole table with plan->threads threads. */
int stem_potential_table_build(const stem_plan *plan, const stem_atoms *atoms, const stem_atom_potential *potentials,
                               stem_potential_table *table);
/* The same in two steps, so that ranks can share the work: species, sizes and the
 * (unfilled) profiles; then profiles [k0, k1) of table->n_profiles. */
int stem_potential_table_init(const stem_plan *plan, const stem_atoms *atoms, stem_potential_table *table);
int stem_potential_table_profiles(const stem_plan *plan, const stem_atom_potential *potentials,
                                  stem_potential_table *table, long k0, long k1);
void stem_potential_table_free(stem_potential_table *table);
/* The slice an atom at depth z belongs to (atoms on a boundary: the slice starting there). */
int stem_potential_slice_of(const stem_plan *plan, double z);
/* The slices [*s0, *s1) an atom at depth z reaches (infinite projection: its own). */
void stem_atom_slice_range(const stem_plan *plan, const stem_potential_table *t, double z, int *s0, int *s1);
/* An atom at depth z's share of slice s as at most 4 weighted depth profiles; returns how
 * many (0: it does not reach the slice). */
int stem_atom_slice_weights(const stem_plan *plan, const stem_potential_table *t, double z, int s,
                            stem_node_weight w[4]);
/* The blurred profile of species `species`, depth node 0 (node k is k * points further). */
const float *stem_atom_profile(const stem_potential_table *t, int species);
/* The blurred projected potential of slices [s0, s1) into V ([slice - s0][ny][nx], V Angstrom):
 * the samples stem_potential_deblur turns into the band-limited potential. */
int stem_potential_slices(const stem_plan *plan, const stem_potential_table *table, const stem_atoms *atoms, int s0,
                          int s1, float *V);
/* Rows [row0, row0 + rows) of slice s's blurred projected potential into V ([rows][nx]): what
 * one rank of a distributed FFT builds (the same sums as stem_potential_slices). */
int stem_potential_slice_rows(const stem_plan *plan, const stem_potential_table *table, const stem_atoms *atoms, int s,
                              long row0, long rows, float *V);
/* The factor that turns the blurred samples' spectrum (divided by the grid size) into the
 * band-limited potential's at |q|^2 = q2: the Gaussian divided out inside the band, zero
 * beyond it (potential.c, on slabs mpi/dist_hrtem.c, on the GPU cuda/gpu_potential.cu). */
double stem_potential_deblur(const stem_plan *plan, const stem_potential_table *t, double q2);
/* All transmission functions ([slice][ny][nx]) with plan->threads threads. */
int stem_transmission_build(const stem_plan *plan, const stem_potential_table *table, const stem_atoms *atoms,
                            stem_complex *trans);
/* Slices [s0, s1) only, into their places in trans (ranks of a group share the slices). */
int stem_transmission_build_slices(const stem_plan *plan, const stem_potential_table *table, const stem_atoms *atoms,
                                   int s0, int s1, stem_complex *trans);
/* Slices [s0, s1)'s potentials as the transmission functions use them (the projected
 * potential on the potential's grid, plan->pot_ny x pot_nx, band-limited to its 2/3 of
 * Nyquist; V Angstrom) into V ([slice - s0][pot_ny][pot_nx]):
 * what [output] save_potential writes. */
int stem_potential_band_slices(const stem_plan *plan, const stem_potential_table *table, const stem_atoms *atoms,
                               int s0, int s1, float *V);
/* Transmission functions of slices [s0, s1) from such potentials (V[slice - s0][pot_ny][pot_nx]),
 * into their places in trans: [simulation] potential_file. */
int stem_transmission_from_potentials(const stem_plan *plan, const float *V, int s0, int s1, stem_complex *trans);

/* The build split below one slice (the ranks of a node together, mpi/phonon_loop.c): first the
 * blurred samples of slices [s0, s1) (what stem_potential_slices gives: the same bits) into V
 * ([slice - s0][pot_ny][pot_nx]), each slice in `bands` bands of rows, taken by this rank's
 * threads from queue (NULL: all of them here); then the transmission functions of those
 * slices from V into their places in trans, a slice per item of queue. */
int stem_potential_splat_bands(const stem_plan *plan, const stem_potential_table *table, const stem_atoms *atoms,
                               int s0, int s1, int bands, float *V, stem_work_queue *queue);
int stem_transmission_from_splats(const stem_plan *plan, const stem_potential_table *table, const float *V, int s0,
                                  int s1, stem_complex *trans, stem_work_queue *queue);

#endif
