/* algorithm = hrtem on a distributed FFT (plan->dist): the ranks of each group share
 * one wave in slabs of rows (comm/dist_fft.h). No rank ever holds a whole slice: each
 * builds its own rows of every slice's potential from the atoms (the kernels' reach is
 * the halo), and the pixel-average correction, exp(i sigma V), the band limit, the
 * propagation and the objective lens all run on the slabs. Groups take the frozen-phonon
 * configurations as in a scan; the results (this rank's rows of /exit_wave and /hrtem,
 * and the total intensity) are summed over groups. */
#ifndef STEM_DIST_HRTEM_H
#define STEM_DIST_HRTEM_H

#include "../src/detector.h"
#include "../src/physics.h"
#include "../comm/comm.h"

/* A campaign's units on the distributed FFT (mpi/campaign.c), collective over m->group:
 * the state (plans, slabs, lookup table) made once from the plan (a series': the thickest
 * tilt's, with the tiled model); then configuration c of a tilt's model through its n point
 * plans (beam tilts and lenses sharing its slices), plans[i]'s rows added into res[i]. */
typedef struct stem_dist_unit stem_dist_unit;
int stem_dist_unit_create(const stem_mpi *m, const stem_plan *plan, const stem_atoms *atoms,
                          const stem_atom_potential *potentials, stem_dist_unit **out);
int stem_dist_unit_run(stem_dist_unit *u, const stem_mpi *m, const stem_plan *plans, int n, const stem_atoms *tilted,
                       int c, stem_result *res);
void stem_dist_unit_free(stem_dist_unit *u);
/* Rank 0 logs the distributed transforms' count and the slowest rank's time (collective over m->world). */
void stem_dist_fft_report(const stem_mpi *m, const stem_plan *plan);

#endif
