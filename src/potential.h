/* Projected potentials: per-species lookup kernels on a supersampled grid,
 * slices, and the band-limited transmission functions t = exp(i sigma V). */
#ifndef STEM_POTENTIAL_H
#define STEM_POTENTIAL_H

#include "physics.h"
#include "plan.h"

typedef struct {
    int n_species;
    int species_z[STEM_MAX_Z + 1];
    int species_of_z[STEM_MAX_Z + 1]; /* -1 if absent */
    int finite;      /* finite projection: kernels of each depth node (potential.c) */
    int n_nodes;     /* depth nodes per species: 1 (infinite projection) or the finite ones */
    double z_nodes[32]; /* finite: the depths (Angstrom, up to the cutoff) the kernels are tabulated at */
    double cutoff;   /* Angstrom */
    int ss;          /* sub-pixel positions per pixel */
    int rx, ry;      /* kernel half-widths in pixels */
    int kx, ky;      /* kernel sizes 2r+1 */
    long n_kernels;  /* n_species * n_nodes * ss * ss */
    float *kernels;  /* [species][node][sub_y][sub_x][ky][kx], V Angstrom, pixel-averaged */
} stem_potential_table;

/* One term of an atom's share of a slice: weight times the kernel of depth node `node`. */
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
 * (unfilled) kernels; then kernels [k0, k1) of table->n_kernels. */
int stem_potential_table_init(const stem_plan *plan, const stem_atoms *atoms, stem_potential_table *table);
int stem_potential_table_kernels(const stem_plan *plan, const stem_atom_potential *potentials, stem_potential_table *table,
                                 long k0, long k1);
void stem_potential_table_free(stem_potential_table *table);
/* The slice an atom at depth z belongs to (atoms on a boundary: the slice starting there). */
int stem_potential_slice_of(const stem_plan *plan, double z);
/* The slices [*s0, *s1) an atom at depth z reaches (infinite projection: its own). */
void stem_atom_slice_range(const stem_plan *plan, const stem_potential_table *t, double z, int *s0, int *s1);
/* An atom at depth z's share of slice s as at most 4 weighted depth kernels; returns how
 * many (0: it does not reach the slice). */
int stem_atom_slice_weights(const stem_plan *plan, const stem_potential_table *t, double z, int s,
                            stem_node_weight w[4]);
/* Where an atom's kernel goes: the pixel (px, py) of its kernel centre, before wrapping, and
 * the kernel of its species, depth node 0 and nearest sub-pixel position (index into
 * table->kernels; node k is k * ss * ss further). */
void stem_atom_placement(const stem_plan *plan, const stem_potential_table *t, int species, double x, double y,
                         long *px, long *py, size_t *kernel);
/* Projected potential of slices [s0, s1) into V ([slice - s0][ny][nx], V Angstrom). */
int stem_potential_slices(const stem_plan *plan, const stem_potential_table *table, const stem_atoms *atoms,
                          int s0, int s1, float *V);
/* Rows [row0, row0 + rows) of slice s's projected potential into V ([rows][nx]): what
 * one rank of a distributed FFT builds (the same sums as stem_potential_slices). */
int stem_potential_slice_rows(const stem_plan *plan, const stem_potential_table *table, const stem_atoms *atoms, int s,
                              long row0, long rows, float *V);
/* The pixel average's transfer along one axis at FFT index k of n: sinc(k / n), which
 * the transmission build divides out (potential.c, and on slabs mpi/dist_hrtem.c). */
double stem_pixel_average_sinc(int k, int n);
/* All transmission functions ([slice][ny][nx]) with plan->threads threads. */
int stem_transmission_build(const stem_plan *plan, const stem_potential_table *table, const stem_atoms *atoms,
                            stem_complex *trans);
/* Slices [s0, s1) only, into their places in trans (ranks of a group share the slices). */
int stem_transmission_build_slices(const stem_plan *plan, const stem_potential_table *table, const stem_atoms *atoms,
                                   int s0, int s1, stem_complex *trans);
/* Slices [s0, s1)'s potentials as the transmission functions use them (projected
 * potential, pixel averaging undone; V Angstrom) into V ([slice - s0][ny][nx]):
 * what [output] save_potential writes. */
int stem_potential_band_slices(const stem_plan *plan, const stem_potential_table *table, const stem_atoms *atoms,
                               int s0, int s1, float *V);
/* Transmission functions of slices [s0, s1) from such potentials (V[slice - s0][ny][nx]),
 * into their places in trans: [simulation] potential_file. */
int stem_transmission_from_potentials(const stem_plan *plan, const float *V, int s0, int s1, stem_complex *trans);

#endif
