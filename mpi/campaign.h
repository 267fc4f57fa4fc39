/* Campaign scheduling: frozen-phonon configurations over rank groups, the
 * potential broadcast inside a group, the algorithm, the reduction. */
#ifndef STEM_CAMPAIGN_H
#define STEM_CAMPAIGN_H

#include "comm.h"

#include "../src/engine.h"

/* Runs every configuration of this rank's group through the plan's algorithm
 * on the engine and leaves in res the configuration-averaged result of this
 * rank's probes (same on all groups). */
int stem_campaign_run(const stem_mpi *m, const stem_plan *plan, const stem_engine *engine, const stem_atoms *atoms,
                      const stem_kirkland *kirkland, stem_result *res);

#endif
