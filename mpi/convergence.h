/* --convergence: a small window of the scan computed as configured and again at half
 * the pixel size and half the slice thickness; each named detector's mean over the
 * window in both, and its change, tell whether the sampling has converged for it. */
#ifndef STEM_CONVERGENCE_H
#define STEM_CONVERGENCE_H

#include <stdio.h>

#include "campaign.h"

#define STEM_CONVERGENCE_PROBES 4    /* the window: at most this many probes along x and y */
#define STEM_CONVERGENCE_MAX_SETS 10 /* overrides one variant adds */
#define STEM_CONVERGENCE_SET_LEN 128

/* Overrides a variant adds to the user's (section.key=value): the window of at most
 * STEM_CONVERGENCE_PROBES^2 probes at the centre of plan's scan and, when refined, half
 * the pixel size (explicit grids doubled) and half the slice thickness. Returns how many;
 * -1 with a message when the plan is not a STEM scan on a grid. */
int stem_convergence_overrides(const stem_plan *plan, const stem_config *cfg, int refined,
                               char sets[STEM_CONVERGENCE_MAX_SETS][STEM_CONVERGENCE_SET_LEN]);
/* Collective over m->world: the campaign on the plan (one point, its result kept in memory), then the mean over the scan of
 * every [images] range (plan->n_images values) into means on every rank. */
int stem_convergence_means(const stem_mpi *m, const stem_config *cfg, const stem_plan *plan, const stem_engine *engine,
                           const stem_atoms *atoms, const stem_atom_potential *potentials, double *means);
/* One line per [images] range: both means and the relative change; base and fine the two plans. */
void stem_convergence_report(FILE *out, const stem_plan *base, const stem_plan *fine, const double *m_base,
                             const double *m_fine);

#endif
