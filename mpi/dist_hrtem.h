/* algorithm = hrtem on a distributed FFT (plan->dist): the ranks of each group share
 * one wave in slabs of rows (mpi/dist_fft.h). No rank ever holds a whole slice: each
 * builds its own rows of every slice's potential from the atoms (the kernels' reach is
 * the halo), and the pixel-average correction, exp(i sigma V), the band limit, the
 * propagation and the objective lens all run on the slabs. Groups take the frozen-phonon
 * configurations as in a scan; the results (this rank's rows of /exit_wave and /hrtem,
 * and the total intensity) are summed over groups. */
#ifndef STEM_DIST_HRTEM_H
#define STEM_DIST_HRTEM_H

#include "../src/detector.h"
#include "../src/physics.h"
#include "comm.h"

/* Collective over m->world: every configuration, then res summed and finalised. */
int stem_dist_hrtem_run(const stem_mpi *m, const stem_plan *plan, const stem_atoms *atoms, const stem_atom_potential *potentials,
                        stem_result *res);

#endif
