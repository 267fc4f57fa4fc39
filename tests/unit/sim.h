/* Shared set-up for the tests that run the engines: config from an INI text,
 * model from the data directory (or built in the test), plan for a single
 * rank, transmission functions, and the CPU engines called directly through
 * the plan and stem_result API (the same sequence the memory sink of mpi/campaign.c runs). */
#ifndef STEM_TEST_SIM_H
#define STEM_TEST_SIM_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atoms.h"
#include "../../io/config.h"
#include "../../io/xyz.h"
#include "check.h"
#include "detector.h"
#include "fft.h"
#include "multislice.h"
#include "physics.h"
#include "../../io/scattering_tables.h"
#include "plan.h"
#include "potential.h"
#include "prism.h"

#ifndef STEMSIM_TEST_DATA_DIR
#error "STEMSIM_TEST_DATA_DIR must name the data directory"
#endif

typedef struct {
    stem_config cfg;
    stem_atoms atoms; /* prepared (tiled) model, not displaced */
    stem_plan plan;
    stem_atom_potential kirkland[STEM_MAX_Z + 1];
    stem_complex *trans;
    stem_detector det;
    stem_result res;
} sim_case;

static const stem_layout sim_single_rank = {
    .world_size = 1, .world_rank = 0, .n_groups = 1, .group = 0, .group_size = 1, .group_rank = 0, .ranks_on_node = 1};

/* Parse `ini` (which must name [sample] xyz), read and prepare the model
 * unless `model` is given (copied, then prepared: tiled as the INI says),
 * build the plan and the detector. */
static inline int sim_prepare(sim_case *s, const char *ini, const stem_atoms *model)
{
    memset(s, 0, sizeof *s);
    STEM_TRY(stem_config_load_string(&s->cfg, "test.ini", ini));
    /* physics against physics at fixed tolerances: estimated FFT plans, no wisdom cache (the
     * default measured plans are tested whole-program: fft_cache, mpi_fft_wisdom_*) */
    if (!stem_config_given(&s->cfg, "compute", "fft_planning")) s->cfg.opt.fft_planning = STEM_FFT_ESTIMATE;
    STEM_TRY(stem_atom_potentials_load(STEM_PARAM_KIRKLAND, stem_kirkland_default_path(), s->kirkland));
    if (model) {
        s->atoms.cell[0] = model->cell[0];
        s->atoms.cell[1] = model->cell[1];
        s->atoms.cell[2] = model->cell[2];
        STEM_TRY(stem_atoms_alloc(&s->atoms, model->n));
        memcpy(s->atoms.Z, model->Z, sizeof(int) * model->n);
        memcpy(s->atoms.x, model->x, sizeof(double) * model->n);
        memcpy(s->atoms.y, model->y, sizeof(double) * model->n);
        memcpy(s->atoms.z, model->z, sizeof(double) * model->n);
        memcpy(s->atoms.occupancy, model->occupancy, sizeof(double) * model->n);
        memcpy(s->atoms.sigma, model->sigma, sizeof(double) * model->n);
    } else {
        STEM_TRY(stem_xyz_read(s->cfg.xyz, &s->atoms));
    }
    STEM_TRY(stem_atoms_prepare(&s->atoms, &s->cfg));
    STEM_TRY(stem_plan_build(&s->plan, &s->cfg, &s->atoms, NULL, &sim_single_rank));
    STEM_TRY(stem_detector_build(&s->plan, &s->det));
    return STEM_OK;
}

/* Transmission functions of frozen-phonon configuration `config`, built as
 * the campaign builds them (displace, lookup table, slices, exp(i sigma V)). */
static inline int sim_transmission(sim_case *s, int config)
{
    stem_atoms displaced = {0};
    stem_potential_table table = {0};
    size_t grid = (size_t)s->plan.nx * s->plan.ny;
    if (!s->trans) s->trans = stem_fft_alloc(grid * s->plan.n_slices, "test transmission");
    if (!s->trans) return STEM_ERR_MEMORY;
    int err = stem_atoms_displace(&s->atoms, s->cfg.opt.seed, config, s->cfg.opt.thermal, &displaced);
    if (!err) err = stem_potential_table_build(&s->plan, &displaced, s->kirkland, &table);
    if (!err) err = stem_transmission_build(&s->plan, &table, &displaced, s->trans);
    stem_potential_table_free(&table);
    stem_atoms_free(&displaced);
    return err;
}

/* sim_prepare, then the transmission of configuration 0. */
static inline int sim_setup(sim_case *s, const char *ini, const stem_atoms *model)
{
    STEM_TRY(sim_prepare(s, ini, model));
    return sim_transmission(s, 0);
}

/* One rank's S-matrix as mpi/smatrix_tiles.c holds it: every beam over the whole box, beam
 * fastest; detection plane k's into *S (the caller frees S->S). Returns the S-matrix by beam
 * (every plane; the caller frees it), NULL on failure. */
static inline stem_complex *sim_prism_smatrix(const stem_plan *plan, const stem_complex *trans, int k,
                                              stem_prism_view *S)
{
    size_t stride = stem_prism_beam_stride(plan);
    stem_complex *by_beam = stem_fft_alloc(stride * plan->n_beams, "test S-matrix");
    stem_complex *tile = stem_fft_alloc((size_t)plan->crop_nx * plan->crop_ny * plan->n_beams, "test S-matrix");
    if (!by_beam || !tile || stem_prism_smatrix_beams(plan, trans, 0, plan->n_beams, by_beam)) {
        stem_fft_free(by_beam);
        stem_fft_free(tile);
        return NULL;
    }
    stem_prism_tile_whole(plan, &S->tile);
    stem_prism_put_beams(plan, by_beam, stride, plan->n_beams, k, &S->tile, 0, S->tile.ny, tile, plan->n_beams);
    S->S = tile;
    return by_beam;
}

/* Run the algorithm the plan names on every probe; leaves s->res finalised. */
static inline int sim_run(sim_case *s)
{
    const stem_plan *plan = &s->plan;
    stem_result_free(&s->res);
    STEM_TRY(stem_result_alloc(plan, &s->res));
    if (plan->algorithm == STEM_ALG_PRISM) {
        stem_prism_view S;
        stem_complex *by_beam = sim_prism_smatrix(plan, s->trans, 0, &S); /* one rank holds every beam */
        if (!by_beam) return STEM_ERR_MEMORY;
        int err = stem_prism_output(plan, &S, &s->det, &s->res);
        stem_fft_free(by_beam);
        stem_fft_free((stem_complex *)S.S);
        STEM_TRY(err);
    } else {
        STEM_TRY(stem_multislice_run(plan, s->trans, &s->det, &s->res));
    }
    STEM_TRY(stem_result_finalise(&s->res, 1, 1));
    return STEM_OK;
}

/* Scan exactly one probe at (x, y) on the next sim_run (plan fields only). */
static inline void sim_single_probe(sim_case *s, double x, double y)
{
    s->plan.scan_x0 = x;
    s->plan.scan_y0 = y;
    s->plan.scan_nx = s->plan.scan_ny = 1;
    s->plan.n_probes = 1;
    s->plan.probe_begin = 0;
    s->plan.probe_end = 1;
}

static inline void sim_free(sim_case *s)
{
    stem_result_free(&s->res);
    stem_detector_free(&s->det);
    stem_fft_free(s->trans);
    stem_plan_free(&s->plan);
    stem_atoms_free(&s->atoms);
}

/* Relative RMS difference ||a - b|| / ||b|| over n values. */
static inline double rel_rms(const double *a, const double *b, long n)
{
    double num = 0, den = 0;
    for (long i = 0; i < n; i++) {
        num += (a[i] - b[i]) * (a[i] - b[i]);
        den += b[i] * b[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

#endif
