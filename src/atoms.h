/* The atomic model (read by io/xyz.h): tiled, rotated, and displaced per
 * frozen-phonon configuration. */
#ifndef STEM_ATOMS_H
#define STEM_ATOMS_H

#include "config.h"

typedef struct {
    long n;
    int *Z;
    double *x, *y, *z; /* Angstrom, inside [0, cell) */
    double *occupancy; /* weight of the atom's potential */
    double *sigma;     /* rms displacement per axis, Angstrom */
    double cell[3];    /* a b c, Angstrom */
} stem_atoms;

/* n atoms, zeroed, in the cell atoms already has; freed by stem_atoms_free. */
int stem_atoms_alloc(stem_atoms *atoms, long n);
void stem_atoms_free(stem_atoms *atoms);
/* The first pair of atoms (*first < *second) closer than limit Angstrom whose occupancies sum
 * above 1, periodic in x and y (and z when periodic_z); -1, -1 when none. Cell lists: O(n). */
int stem_atoms_closest_check(const stem_atoms *atoms, double limit, int periodic_z, long *first, long *second);
/* Tile and rotate as the config says (src/atoms.c). */
int stem_atoms_prepare(stem_atoms *atoms, const stem_config *cfg);
/* The two halves of stem_atoms_prepare, for a tilt series: tiling in place, then a
 * rotated copy (rotation about z, then the tilts, about the cell centre) per tilt. */
int stem_atoms_tile(stem_atoms *atoms, const stem_config *cfg);
int stem_atoms_rotated(const stem_atoms *in, double rotation_z, double tilt_x, double tilt_y, stem_atoms *out);
/* Copy of the model displaced for configuration `config_index`; random
 * numbers depend only on (seed, config_index, atom index). */
int stem_atoms_displace(const stem_atoms *in, long seed, int config_index, int thermal, stem_atoms *out);
/* Deterministic standard normal number for (seed, stream, index). */
double stem_gaussian(uint64_t seed, uint64_t stream, uint64_t index);

#endif
