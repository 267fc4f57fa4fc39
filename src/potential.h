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
    int ss;          /* sub-pixel positions per pixel */
    int rx, ry;      /* kernel half-widths in pixels */
    int kx, ky;      /* kernel sizes 2r+1 */
    long n_kernels;  /* n_species * ss * ss */
    float *kernels;  /* [species][sub_y][sub_x][ky][kx], V Angstrom, pixel-averaged */
} stem_potential_table;

/* The whole table with plan->threads threads. */
int stem_potential_table_build(const stem_plan *plan, const stem_atoms *atoms, const stem_kirkland *kirkland,
                               stem_potential_table *table);
/* The same in two steps, so that ranks can share the work: species, sizes and the
 * (unfilled) kernels; then kernels [k0, k1) of table->n_kernels. */
int stem_potential_table_init(const stem_plan *plan, const stem_atoms *atoms, stem_potential_table *table);
int stem_potential_table_kernels(const stem_plan *plan, const stem_kirkland *kirkland, stem_potential_table *table,
                                 long k0, long k1);
void stem_potential_table_free(stem_potential_table *table);
/* The slice an atom at depth z belongs to (atoms on a boundary: the slice starting there). */
int stem_potential_slice_of(const stem_plan *plan, double z);
/* Where an atom's kernel goes: the pixel (px, py) of its kernel centre, before wrapping, and
 * the kernel of its species and nearest sub-pixel position (index into table->kernels). */
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

#endif
