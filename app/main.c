/* stemsim: command line, the collective setup (config, model, plan), the
 * campaign and the output. Exit codes are the stem_status values. */
#include <math.h>
#include <getopt.h>
#include <libgen.h>
#include <mpi.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "../cuda/gpu_engine.h"
#include "../io/config.h"
#include "../io/output.h"
#include "../src/advice.h"
#include "../src/build_info.h"
#include "../mpi/consistency.h"
#include "../mpi/convergence.h"
#include "../mpi/fft_wisdom.h"
#include "../mpi/campaign.h"
#include "../io/positions.h"
#include "../io/potential_file.h"
#include "../io/prismatic_params.h"
#include "../io/scattering_tables.h"
#include "../io/smatrix_file.h"
#include "../io/xyz.h"
#include "../src/config.h"
#include "../src/engine.h"
#include "../src/phases.h"
#include "../src/plan.h"
#include "../src/result_check.h"
#include "../src/series.h"
#include "../src/signals.h"

typedef struct {
    const char *config_path;
    char **overrides;
    int n_overrides;
    int dry_run, quiet, verbose, help, version, help_config, restart;
    int convergence; /* --convergence: a scan window as configured and refined, no output file */
    int variant;     /* inside --convergence: setup quietly, as a dry run */
} cli_options;

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: stemsim [options] config.ini\n"
        "       mpirun -np N stemsim [options] config.ini\n\n"
        "Simulates STEM images (multislice or PRISM) and writes one HDF5 file.\n\n"
        "options:\n"
        "  -s, --set SECTION.KEY=VALUE  override a config key (repeatable)\n"
        "  -n, --dry-run                print the derived plan and the work split, then exit\n"
        "  -q, --quiet                  no progress output\n"
        "  -v, --verbose                more output\n"
        "      --restart                a checkpointed campaign starts over (its checkpoint is emptied)\n"
        "      --convergence            compute a window of at most 4 x 4 probes at the scan's centre as configured\n"
        "                               and at half the pixel size and half the slice thickness, print each\n"
        "                               [images] range's mean in both and its change; writes no output file\n"
        "      --help-config            print every config key with unit and default\n"
        "  -h, --help                   this help\n"
        "  -V, --version                print the version and what it was built with (GPU engine, MPI, HDF5, FFTW)\n"
        "      --from-prismatic [PARAMS] [--xyz FILE] [-- PRISMATIC OPTIONS]\n"
        "                               print a config.ini converted from a Prismatic parameter file\n"
        "                               and/or command line (unconverted options: warnings), then exit\n\n"
        "exit codes: 0 ok, 2 usage, 3 config, 4 input model, 5 memory, 6 output I/O,\n"
        "            7 MPI, 8 GPU, 9 internal error, 75 a checkpointed campaign stopped by a\n"
        "            signal (run the same command again to continue), 128+N stopped by signal N\n"
        "            (130 SIGINT, 138 SIGUSR1, 143 SIGTERM)\n");
}

/* Parsed identically on every rank; only rank 0 prints about it. */
static int parse_cli(int argc, char **argv, cli_options *o, int rank)
{
    static const struct option longopts[] = {
        {"set", required_argument, NULL, 's'},   {"dry-run", no_argument, NULL, 'n'},
        {"quiet", no_argument, NULL, 'q'},       {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},        {"version", no_argument, NULL, 'V'},
        {"help-config", no_argument, NULL, 'C'}, {"restart", no_argument, NULL, 'R'},
        {"convergence", no_argument, NULL, 'K'}, {NULL, 0, NULL, 0}};
    memset(o, 0, sizeof *o);
    o->overrides = calloc(argc, sizeof(char *));
    if (!o->overrides) return STEM_ERR_MEMORY;
    opterr = rank == 0;
    int c;
    while ((c = getopt_long(argc, argv, "s:nqvhV", longopts, NULL)) != -1) {
        switch (c) {
        case 's': o->overrides[o->n_overrides++] = optarg; break;
        case 'n': o->dry_run = 1; break;
        case 'q': o->quiet = 1; break;
        case 'v': o->verbose = 1; break;
        case 'h': o->help = 1; break;
        case 'V': o->version = 1; break;
        case 'C': o->help_config = 1; break;
        case 'R': o->restart = 1; break;
        case 'K': o->convergence = 1; break;
        default:
            if (rank == 0) usage(stderr);
            return STEM_ERR_USAGE;
        }
    }
    if (o->help || o->version || o->help_config) return STEM_OK;
    if (optind != argc - 1) {
        if (rank == 0) {
            fprintf(stderr, "stemsim: error: expected exactly one config file, got %d arguments\n", argc - optind);
            usage(stderr);
        }
        return STEM_ERR_USAGE;
    }
    o->config_path = argv[optind];
    return STEM_OK;
}

/* An input path (the model, a stored file) relative to the config file's directory. */
static void resolve_input_path(const stem_config *cfg, char path[STEM_PATH_MAX])
{
    if (!path[0] || path[0] == '/') return;
    char dir[STEM_PATH_MAX], joined[2 * STEM_PATH_MAX + 2];
    snprintf(dir, sizeof dir, "%s", cfg->config_path);
    snprintf(joined, sizeof joined, "%s/%s", dirname(dir), path);
    if (strlen(joined) < STEM_PATH_MAX) strcpy(path, joined);
}

static void resolve_model_path(stem_config *cfg)
{
    resolve_input_path(cfg, cfg->xyz);
    resolve_input_path(cfg, cfg->positions);
    resolve_input_path(cfg, cfg->opt.potential_file);
    resolve_input_path(cfg, cfg->opt.smatrix_file);
}

/* Rank 0: a model no microscope could image is refused before anything is built from it
 * (exit 4): atoms closer than [sample] min_distance (a model written in nm, atoms written twice). */
static int check_model_spacing(const stem_config *cfg, const stem_atoms *atoms)
{
    long a, b;
    STEM_TRY(stem_atoms_closest_check(atoms, cfg->min_distance, cfg->tile_z > 1, &a, &b));
    if (a < 0) return STEM_OK;
    double d[3] = {atoms->x[a] - atoms->x[b], atoms->y[a] - atoms->y[b], atoms->z[a] - atoms->z[b]};
    for (int k = 0; k < 3; k++) /* the minimum image, as the check measured it */
        if (k < 2 || cfg->tile_z > 1) d[k] -= atoms->cell[k] * round(d[k] / atoms->cell[k]);
    return STEM_FAIL(STEM_ERR_INPUT,
                     "[sample] xyz = %s: atoms %ld (Z = %d) and %ld (Z = %d) are %.4g Angstrom apart, closer than "
                     "[sample] min_distance = %g Angstrom (the cell is %.4g x %.4g x %.4g Angstrom): is the model "
                     "in nm, or an atom written twice? (min_distance = 0 accepts any)",
                     cfg->xyz, a + 1, atoms->Z[a], b + 1, atoms->Z[b], sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]),
                     cfg->min_distance, atoms->cell[0], atoms->cell[1], atoms->cell[2]);
}

/* Rank 0, the model as tiled: a cell so narrow that each atom's potential would wrap onto it
 * more than a hundred times is no sample (exit 4; a 1e-6 A cell hung in the transmission
 * build, a 0.001 A one ran on a 1 x 1 grid). A coarse grid of a real cell is the plan's to
 * refuse, naming the pixel size. */
static int check_model_cell(const stem_config *cfg, const stem_atoms *atoms)
{
    double radius = cfg->opt.potential_radius;
    for (int k = 0; k < 2; k++) {
        double cell = atoms->cell[k];
        if (radius <= 100 * cell) continue;
        return STEM_FAIL(STEM_ERR_INPUT,
                         "[sample] xyz = %s: the cell (tiled) is %.4g Angstrom along %c: each atom's potential "
                         "([simulation] potential_radius = %g Angstrom) would wrap onto it more than a hundred "
                         "times, no sample to image. Is the model in nm? Else tile it ([sample] tile_%c)",
                         cfg->xyz, cell, "xy"[k], radius, "xy"[k]);
    }
    return STEM_OK;
}

/* Rank 0 reads the table and the model; everyone receives them and checks
 * it holds what rank 0 holds. A campaign rotates the model per tilt itself:
 * it is only tiled here. */
static int load_inputs(const stem_config *cfg, stem_atom_potential *potentials, stem_atoms *atoms, MPI_Comm world,
                       int rank)
{
    int err = STEM_OK;
    if (rank == 0) {
        int param = cfg->opt.parametrisation;
        err = stem_atom_potentials_load(param, stem_parametrisation_path(param), potentials);
        if (!err) err = stem_xyz_read(cfg->xyz, atoms);
        if (!err) err = check_model_spacing(cfg, atoms);
        if (!err) err = stem_campaign_checkpointed(cfg) ? stem_atoms_tile(atoms, cfg) : stem_atoms_prepare(atoms, cfg);
        if (!err) err = check_model_cell(cfg, atoms);
    }
    err = stem_mpi_agree(err, world);
    if (!err)
        err =
            stem_mpi_agree(stem_mpi_bcast(potentials, sizeof(stem_atom_potential) * (STEM_MAX_Z + 1), 0, world), world);
    if (!err) err = stem_mpi_agree(stem_mpi_bcast_atoms(atoms, 0, world), world);
    if (!err) err = stem_mpi_agree(stem_check_same_inputs(atoms, potentials, world), world);
    return err;
}

/* [scan] positions (not for HRTEM's plane wave or CBED's one probe): rank 0 reads them,
 * checked against the model's cell, and every rank receives them, like the model. */
static int load_positions(const stem_config *cfg, const stem_atoms *model, MPI_Comm world, int rank, stem_positions *p)
{
    if (!cfg->positions[0] || cfg->algorithm == STEM_ALG_HRTEM || cfg->algorithm == STEM_ALG_CBED) return STEM_OK;
    int err = rank == 0 ? stem_positions_read(cfg->positions, model->cell[0], model->cell[1], &p->xy, &p->n) : STEM_OK;
    err = stem_mpi_agree(err, world);
    if (!err) err = stem_mpi_agree(stem_mpi_bcast(&p->n, sizeof p->n, 0, world), world);
    if (!err && rank != 0 && !(p->xy = stem_alloc(sizeof(double) * 2 * (size_t)p->n, "probe positions")))
        err = STEM_ERR_MEMORY;
    err = stem_mpi_agree(err, world);
    if (!err) err = stem_mpi_agree(stem_mpi_bcast(p->xy, sizeof(double) * 2 * (size_t)p->n, 0, world), world);
    return err;
}

/* A stored potential or S-matrix to read back must fit the plan's geometry
 * (io/potential_file.h, io/smatrix_file.h): checked on every rank, as the plan's first
 * refusals, before its memory is planned. */
static int check_stored_inputs(const stem_plan *plan, const stem_config *cfg)
{
    if (stem_campaign_checkpointed(cfg)) return STEM_OK; /* each tilt's, by the campaign (campaign.h) */
    if (cfg->opt.potential_file[0]) STEM_TRY(stem_potential_file_check(plan, cfg, NULL));
    if (cfg->opt.smatrix_file[0]) STEM_TRY(stem_smatrix_file_check(plan, cfg, NULL));
    return STEM_OK;
}

static void print_decomposition(const stem_plan *plan)
{
    const stem_layout *L = &plan->layout;
    double trans = 8.0 * plan->nx * plan->ny * plan->n_slices;
    double smat = plan->algorithm == STEM_ALG_PRISM ? 8.0 * plan->n_beams * plan->crop_nx * plan->crop_ny : 0;
    int per_group = (plan->n_configs + L->n_groups - 1) / L->n_groups;
    printf("decomposition:\n");
    for (int r = 0; r < L->world_size; r++) {
        int g = r / L->group_size, gr = r % L->group_size;
        long pb, pe, bb, be;
        stem_split_range(plan->n_probes, L->group_size, gr, &pb, &pe);
        stem_split_range(plan->n_beams, L->group_size, gr, &bb, &be);
        printf("  rank %4d  group %3d  probes [%ld, %ld) (%ld)  beams [%ld, %ld) (%ld)\n", r, g, pb, pe, pe - pb, bb,
               be, be - bb);
    }
    /* node-shared windows: each node receives the other nodes' shares once (rank 0's node
     * size taken for all); otherwise every rank receives all but its own */
    int copies = L->group_size - 1;
    if (L->shared_ranks > 1) copies = (L->group_size + L->shared_ranks - 1) / L->shared_ranks - 1;
    int trans_copies = L->shared_ranks > 1 && plan->opt.device != STEM_DEVICE_CPU ? L->group_size - 1 : copies;
    /* the S-matrix: each rank (node) receives the others' beams over its tile (mpi/smatrix_tiles.h),
     * group rank 0's taken for all; the whole box on the GPU */
    if (smat > 0 && plan->opt.device == STEM_DEVICE_CPU) {
        stem_prism_tile tile;
        stem_plan_unit_tile(plan, 0, L->shared_ranks > 1 ? L->shared_ranks : 1, &tile);
        smat *= (double)stem_prism_tile_pixels(&tile) / ((double)plan->crop_nx * plan->crop_ny);
    }
    printf("  bytes moved per group%s: transmission functions %.3f GiB, S-matrix %.3f GiB, result reduction %.3f GiB\n",
           L->shared_ranks > 1 ? " (between nodes: memory is shared inside one)" : "",
           per_group * trans * trans_copies / 1073741824.0, per_group * smat * copies / 1073741824.0,
           (L->n_groups > 1 ? plan->mem_results : 0) / 1073741824.0);
}

static int compare_strings(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Everything stemsim reads: the output may be none of them. */
static int list_inputs(const stem_config *cfg, stem_input_ref inputs[7])
{
    int n = 0;
    inputs[n++] = (stem_input_ref){"config file", cfg->config_path};
    inputs[n++] = (stem_input_ref){"XYZ model ([sample] xyz)", cfg->xyz};
    inputs[n++] =
        (stem_input_ref){cfg->opt.parametrisation == STEM_PARAM_LOBATO ? "scattering-factor table (STEMSIM_LOBATO)"
                                                                       : "scattering-factor table (STEMSIM_KIRKLAND)",
                         stem_parametrisation_path(cfg->opt.parametrisation)};
    if (cfg->fft_wisdom[0]) inputs[n++] = (stem_input_ref){"FFTW wisdom file ([compute] fft_wisdom)", cfg->fft_wisdom};
    if (cfg->positions[0]) inputs[n++] = (stem_input_ref){"probe positions file ([scan] positions)", cfg->positions};
    if (cfg->opt.potential_file[0])
        inputs[n++] = (stem_input_ref){"potential slices ([simulation] potential_file)", cfg->opt.potential_file};
    if (cfg->opt.smatrix_file[0])
        inputs[n++] = (stem_input_ref){"S-matrices ([simulation] smatrix_file)", cfg->opt.smatrix_file};
    return n;
}

/* Node-shared memory is the default; where /dev/shm is too small for it on any node (a
 * container's 64 MiB) the run keeps one copy per rank instead, with a warning, unless the
 * user asked for sharing ([compute] node_shared given): then the plan check refuses. */
static int shared_memory_or_private(const stem_config *cfg, const stem_atoms *atoms, const stem_positions *positions,
                                    stem_mpi *m, stem_plan *plan, MPI_Comm world)
{
    int fits = stem_plan_shared_fits(plan);
    STEM_MPI_CALL(MPI_Allreduce(MPI_IN_PLACE, &fits, 1, MPI_INT, MPI_MIN, world));
    if (fits || stem_config_given(cfg, "compute", "node_shared")) return STEM_OK;
    if (m->layout.world_rank == 0)
        stem_warn("node-shared memory does not fit /dev/shm on some node: one copy per rank instead "
                  "(give it room, e.g. docker --shm-size, to share; [compute] node_shared = false silences this)");
    stem_node_share_free(&m->share);
    m->layout.shared_ranks = 1;
    m->layout.not_shared = "too little room in /dev/shm";
    stem_plan_free(plan);
    return stem_plan_build(plan, cfg, atoms, positions, &m->layout);
}

/* distributed_fft = auto decides from each rank's memory limit (its node's): where the
 * ranks differ, every rank distributes. */
static int agree_distribution(stem_config *cfg, const stem_atoms *atoms, const stem_positions *positions, stem_mpi *m,
                              stem_plan *plan, MPI_Comm world)
{
    int mine = plan->dist, any = mine, all = mine;
    STEM_MPI_CALL(MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, world));
    STEM_MPI_CALL(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, world));
    if (any == all) return STEM_OK;
    cfg->distributed_fft = STEM_DIST_ON;
    stem_plan_free(plan);
    return stem_plan_build(plan, cfg, atoms, positions, &m->layout);
}

/* Parsing, inputs, layout, plan and the checks a dry run reports: collective,
 * every step agreed, so a failure on any rank ends every rank here with one
 * message (see stem_log_release_held). */
/* A campaign's series, and the model at its thickest tilt for the plan (whose
 * memory then covers every tilt); other runs: the model as loaded. */
static int campaign_inputs(const stem_config *cfg, const stem_atoms *atoms, stem_series *series, stem_atoms *thickest)
{
    if (!stem_campaign_checkpointed(cfg)) {
        if (stem_series_active(cfg))
            return STEM_FAIL(STEM_ERR_CONFIG,
                             "%s: a [series] or depths campaign keeps its finished units in its "
                             "checkpoint: [output] checkpoint = false is for single runs only",
                             cfg->config_path);
        return STEM_OK;
    }
    STEM_TRY(stem_series_build(cfg, series));
    return stem_series_thickest(atoms, cfg, series, thickest);
}

static void print_campaign(const stem_config *cfg, const stem_series *s, const stem_plan *plan)
{
    char dir[STEM_PATH_MAX];
    stem_series_checkpoint_dir(cfg, dir, sizeof dir);
    printf("campaign (checkpointed):\n");
    for (int a = 0; a < STEM_SERIES_N_AXES; a++)
        if (s->given[a])
            printf("  %-11s %d values from %g to %g %s\n", stem_series_axis_name[a], s->n[a], s->v[a][0],
                   s->v[a][s->n[a] - 1], stem_series_axis_units[a]);
    if (s->depth_slice) {
        printf("  depth slices");
        for (int k = 0; k < s->n[STEM_SERIES_DEPTH]; k++) printf(" %d", s->depth_slice[k]);
        printf(" (of %.6g Angstrom", plan->dz);
        if (stem_plan_thin_last(plan))
            printf(", the last %.6g: the exit surface at %.6g", plan->dz_last, stem_plan_depth(plan, plan->n_slices));
        printf(")\n");
    }
    printf("  units    %d tilts x %d configurations = %d (each computes its tilt's %d point%s: beam tilts x defoci x "
           "depths)\n",
           s->n_tilts, plan->n_configs, s->n_tilts * plan->n_configs, stem_series_per_tilt(s),
           stem_series_per_tilt(s) == 1 ? "" : "s");
    printf("  checkpoint directory %s (the plan above is the thickest tilt's)\n", dir);
}

/* Rank 0: the plan's convergence advice (src/advice.h) to stdout, and as text for
 * the output file (text may be NULL; *text "" when there is none, NULL without memory). */
static void print_advice(const stem_plan *plan, const stem_atoms *atoms, const stem_atom_potential *potentials,
                         int show, char **text)
{
    stem_advice *a = stem_alloc(sizeof *a, "convergence advice");
    if (!a) return;
    stem_advice_plan(plan, atoms, potentials, a);
    if (show) stem_advice_print(a, stdout);
    if (text) *text = stem_advice_to_text(a);
    free(a);
}

static double mpi_start_seconds; /* MPI_Init_thread's time, for the set-up's log line */

/* What setup's phases work on: the command line, the world and everything they fill. */
typedef struct {
    const cli_options *o;
    MPI_Comm world;
    int rank;
    stem_config *cfg;
    stem_atom_potential *potentials;
    stem_atoms *atoms, thickest; /* thickest: a depth series' deepest model (none: .n = 0) */
    stem_positions *positions;
    stem_series *series;
    stem_mpi *m;
    stem_plan *plan;
    stem_engine *engine;
    stem_output_target *target;
} setup_state;

/* The plan is built from the deepest model of a thickness series, else from the model. */
static const stem_atoms *plan_model(const setup_state *s) { return s->thickest.n ? &s->thickest : s->atoms; }

static int dry_run_prints(const setup_state *s) { return s->o->dry_run && !s->o->variant && s->rank == 0; }

/* 1. The config, the model, the tables and the series, the same on every rank. */
static int setup_inputs(setup_state *s)
{
    stem_config *cfg = s->cfg;
    int err = stem_config_load(cfg, s->o->config_path, s->o->n_overrides, s->o->overrides);
    if (!err) resolve_model_path(cfg);
    int world_size = 1;
    MPI_Comm_size(s->world, &world_size);
    /* one rank: its first GPU is GPU 0, so its context can be made while the model is read (not for
     * hrtem on a distributed FFT, which runs on the CPU) */
    int dist_hrtem = cfg->algorithm == STEM_ALG_HRTEM && cfg->distributed_fft == STEM_DIST_ON;
    if (!err && world_size == 1 && cfg->opt.device != STEM_DEVICE_CPU && !dist_hrtem)
        stem_gpu_engine_provider()->warm_up(1);
    err = stem_mpi_agree(err, s->world);
    if (!err) err = stem_mpi_agree(stem_check_same_config(cfg, s->world), s->world);
    if (!err) err = load_inputs(cfg, s->potentials, s->atoms, s->world, s->rank);
    if (!err) err = stem_mpi_agree(campaign_inputs(cfg, s->atoms, s->series, &s->thickest), s->world);
    return err;
}

/* 2. The ranks' layout and the plan, checked against the stored inputs before anything is allocated. */
static int setup_plan(setup_state *s)
{
    stem_config *cfg = s->cfg;
    stem_plan *plan = s->plan;
    const stem_atoms *model = plan_model(s);
    MPI_Comm world = s->world;
    /* what groups share out: configurations, or a campaign's units (tilts x configurations) */
    int work_items = s->series->n_points ? s->series->n_tilts * cfg->frozen_phonons : cfg->frozen_phonons;
    int err = stem_mpi_agree(
        stem_mpi_setup(s->m, world, work_items, cfg->fp_groups, cfg->node_shared, cfg->ranks_per_node), world);
    s->m->cross_share.piece_bytes = (size_t)cfg->sum_piece_bytes;
    if (!err) err = load_positions(cfg, model, world, s->rank, s->positions);
    if (!err) err = stem_mpi_agree(stem_plan_geometry(plan, cfg, model, s->positions, &s->m->layout), world);
    if (!err) err = stem_mpi_agree(check_stored_inputs(plan, cfg), world);  /* before anything is allocated */
    if (!err) stem_engine_resolve_device(plan, stem_gpu_engine_provider()); /* its memory differs */
    if (!err) err = stem_mpi_agree(stem_plan_finish(plan, cfg, model), world);
    if (!err) err = stem_mpi_agree(shared_memory_or_private(cfg, model, s->positions, s->m, plan, world), world);
    if (!err) err = stem_mpi_agree(agree_distribution(cfg, model, s->positions, s->m, plan, world), world);
    stem_series *series = s->series;
    if (!err && series->n_points) /* hrtem's plane waves on this plan's grid */
        err = stem_mpi_agree(stem_series_resolve_beam_tilts(series, plan->lambda, plan->cell, plan->q_limit), world);
    if (!err && series->n_points) stem_plan_count_campaign(plan, stem_series_per_tilt(series), series->n_points);
    if (!err && series->depth_slice)
        stem_plan_count_depths(plan, series->n[STEM_SERIES_DEPTH]); /* PRISM: an S-matrix each */
    return err;
}

/* 3. The memory the plan needs, and the engine (the GPU engine chooses its devices and checks
 * its memory here, once per run). A dry run prints the plan first: it checks all a run checks. */
static int setup_engine(setup_state *s)
{
    if (dry_run_prints(s)) {
        stem_plan_print(s->plan, stdout);
        print_decomposition(s->plan);
        if (s->series->n_points) print_campaign(s->cfg, s->series, s->plan);
        print_advice(s->plan, s->atoms, s->potentials, 1, NULL);
    }
    int err = stem_mpi_agree(stem_plan_check_memory(s->plan), s->world);
    if (!err) err = stem_mpi_agree(stem_engine_create(s->plan, stem_gpu_engine_provider(), s->engine), s->world);
    if (!err && dry_run_prints(s)) s->engine->describe(s->engine, s->plan, stdout);
    return err;
}

/* 4. The output's target, and its disk space held from now on (a full disk is refused before
 * computing; a dry run looks). */
static int setup_output(setup_state *s)
{
    const stem_plan *plan = s->plan;
    stem_input_ref inputs[7];
    int n_inputs = list_inputs(s->cfg, inputs);
    STEM_TRY(stem_output_target_prepare(s->world, s->cfg, inputs, n_inputs, !s->o->dry_run, s->target));
    int points = s->series->n_points ? s->series->n_points : 1;
    double bytes = stem_output_estimate_bytes(plan, points, s->series->n_tilts);
    double emd = plan->opt.layout_emd ? stem_output_estimate_emd_bytes(plan, points, s->series->n_tilts) : 0;
    if (dry_run_prints(s)) {
        printf("output: about %.2f MiB\n", (emd > 0 ? emd : bytes) / 1048576.0);
        printf("memory: a peak of about %.3f GiB per rank (the plan's estimate%s; limit %.2f GiB)\n",
               plan->mem_total / 1073741824.0, plan->probe_block ? ", the 4D patterns streamed in blocks" : "",
               plan->mem_limit / 1073741824.0);
        if (emd > 0)
            printf("output: and %.2f MiB for the native file while the EMD conversion runs\n", bytes / 1048576.0);
    }
    return s->o->dry_run ? stem_output_target_room(s->world, s->target, bytes, emd)
                         : stem_output_target_reserve(s->world, s->target, bytes, emd);
}

/* 5. Measured FFTW plans, the same on every rank (after the output checks: it may write the
 * wisdom file); a dry run's survey of what the real run would find in its checkpoint. */
static int setup_last(setup_state *s)
{
    int err = STEM_OK;
    if (!s->o->dry_run && s->engine->uses_fftw) {
        err = stem_fft_wisdom_share(s->m, s->cfg->fft_wisdom, s->cfg->fft_cache, s->plan); /* every rank or none */
        if (err) stem_output_target_discard(s->target); /* the temporary file exists by now */
    }
    if (!err && s->o->dry_run && !s->o->variant && s->series->n_points) {
        stem_campaign_job job = {s->m,          s->cfg,    s->series, s->plan,       s->engine, s->atoms,
                                 s->potentials, s->target, NULL,      s->o->restart, NULL};
        err = stem_campaign_survey(&job);
    }
    if (!err && s->o->dry_run && !s->o->variant) stem_info("dry run: every check passed; a real run would start now");
    return err;
}

static int setup(const cli_options *o, MPI_Comm world, int rank, stem_config *cfg, stem_atom_potential *potentials,
                 stem_atoms *atoms, stem_positions *positions, stem_series *series, stem_mpi *m, stem_plan *plan,
                 stem_engine *engine, stem_output_target *target)
{
    setup_state s = {o, world, rank, cfg, potentials, atoms, {0}, positions, series, m, plan, engine, target};
    double t[6] = {stem_wall_time()};
    int err = setup_inputs(&s);
    t[1] = stem_wall_time();
    if (!err) err = setup_plan(&s);
    stem_atoms_free(&s.thickest);
    t[2] = stem_wall_time();
    if (!err) err = setup_engine(&s);
    t[3] = stem_wall_time();
    if (!err) err = setup_output(&s);
    t[4] = stem_wall_time();
    if (!err) err = setup_last(&s);
    t[5] = stem_wall_time(); /* where a multi-rank or multi-GPU job's start goes (-v) */
    stem_debug(
        "set-up on rank 0, seconds: MPI start %.3f, inputs %.3f, plan %.3f, engine %.3f, output %.3f, plans %.3f",
        mpi_start_seconds, t[1] - t[0], t[2] - t[1], t[3] - t[2], t[4] - t[3], t[5] - t[4]);
    return err;
}

/* STEMSIM_* variables (data table, GPU kernel variants, test hooks) change
 * what runs: recorded in the output file, sorted, one NAME=VALUE per line. */
static char *environment_text(void)
{
    extern char **environ;
    char *buf = NULL;
    size_t size = 0;
    FILE *m = open_memstream(&buf, &size);
    if (!m) return NULL;
    int n = 0;
    for (char **e = environ; *e; e++) n += !strncmp(*e, "STEMSIM_", 8);
    const char **vars = calloc((size_t)n + 1, sizeof *vars);
    if (vars) {
        int k = 0;
        for (char **e = environ; *e; e++)
            if (!strncmp(*e, "STEMSIM_", 8)) vars[k++] = *e;
        qsort(vars, (size_t)n, sizeof *vars, compare_strings);
        for (int i = 0; i < n; i++) fprintf(m, "%s\n", vars[i]);
    }
    fclose(m);
    if (!vars) {
        free(buf);
        return NULL;
    }
    free(vars);
    return buf;
}

/* Every run: the campaign (mpi/campaign.h; a plain run is a campaign of one point) and its output. */
static int campaign_and_write(const cli_options *o, const stem_config *cfg, const stem_atom_potential *potentials,
                              const stem_atoms *atoms, const stem_series *series, const stem_mpi *m,
                              const stem_plan *plan, const stem_engine *engine, stem_output_target *target,
                              const char *advice)
{
    double t0 = stem_wall_time();
    char *ini = stem_config_to_ini(cfg), *text = stem_plan_to_text(plan), *env = environment_text();
    stem_output_texts texts = {ini, text, env, advice};
    int err = ini && text && env ? STEM_OK : STEM_FAIL(STEM_ERR_MEMORY, "cannot format the config for the output file");
    err = stem_mpi_agree(err, m->world); /* the campaign and the write are collective */
    stem_campaign_job job = {m, cfg, series, plan, engine, atoms, potentials, target, &texts, o->restart, NULL};
    if (!err) err = stem_campaign_run(&job);
    /* every rank agreed on the failure or the stop (the campaign agrees before each
     * collective step): leave together, the output never published */
    if (err) stem_output_target_discard(target);
    double took = stem_wall_time() - t0, points = series->n_points ? series->n_points : 1;
    stem_phases_log_summary(m->world, took);
    stem_log_peak_memory(m->world);
    if (!err)
        stem_info("wrote %s in %.2f s (%.3g s of wall time per probe, configuration and point)", cfg->output_file, took,
                  took / ((double)plan->n_probes * plan->n_configs * points));
    char
        published[PATH_MAX]; /* for programs that run stemsim (python/stemsim/runner.py): one line, the absolute path */
    if (!err && !o->convergence && m->layout.world_rank == 0 && realpath(cfg->output_file, published)) {
        printf("published: %s\n", published);
        fflush(stdout);
    }
    free(ini);
    free(text);
    free(env);
    return err;
}

/* Everything one run holds, set up by setup() and released by teardown(). */
typedef struct {
    stem_config cfg;
    stem_atom_potential potentials[STEM_MAX_Z + 1];
    stem_atoms atoms;
    stem_positions positions;
    stem_series series;
    stem_mpi m;
    stem_plan plan;
    stem_engine engine;
    stem_output_target target;
} run_state;

static void teardown(run_state *s)
{
    stem_series_free(&s->series);
    stem_engine_destroy(&s->engine);
    stem_plan_free(&s->plan);
    free(s->positions.xy); /* after the plan, which borrows them */
    stem_mpi_free(&s->m);
    stem_atoms_free(&s->atoms);
}

/* --convergence, one variant: the user's overrides plus the window's (and the
 * refinement's), set up as a dry run; the [images] means into means. */
static int convergence_variant(const cli_options *o, MPI_Comm world, int rank, char sets[][STEM_CONVERGENCE_SET_LEN],
                               int n_sets, run_state *s, double *means)
{
    cli_options v = *o;
    v.dry_run = v.variant = 1;
    v.n_overrides = 0;
    v.overrides = calloc((size_t)o->n_overrides + n_sets + 1, sizeof(char *));
    if (!v.overrides) return STEM_FAIL(STEM_ERR_MEMORY, "out of memory");
    for (int i = 0; i < o->n_overrides; i++) v.overrides[v.n_overrides++] = o->overrides[i];
    for (int i = 0; i < n_sets; i++) v.overrides[v.n_overrides++] = sets[i];
    memset(s, 0, sizeof *s);
    int err = setup(&v, world, rank, &s->cfg, s->potentials, &s->atoms, &s->positions, &s->series, &s->m, &s->plan,
                    &s->engine, &s->target);
    free(v.overrides);
    if (!err && s->series.n_points)
        err =
            stem_mpi_agree(STEM_FAIL(STEM_ERR_CONFIG, "--convergence: not with a [series] or depths campaign"), world);
    if (!err && means)
        err = stem_convergence_means(&s->m, &s->cfg, &s->plan, &s->engine, &s->atoms, s->potentials, means);
    return err;
}

/* --convergence: the window as configured, then refined; the report on rank 0. */
static int run_convergence(const cli_options *o, MPI_Comm world, int rank)
{
    run_state *s = calloc(2, sizeof *s);
    double *means = calloc(2 * STEM_MAX_IMAGES, sizeof *means);
    char sets[2][STEM_CONVERGENCE_MAX_SETS + 1][STEM_CONVERGENCE_SET_LEN];
    int n[2] = {0, 0};
    if (!s || !means) {
        free(s);
        free(means);
        return STEM_FAIL(STEM_ERR_MEMORY, "out of memory");
    }
    int err = convergence_variant(o, world, rank, sets[0], 0, &s[0], NULL); /* the whole scan: where the window goes */
    for (int refined = 0; refined < 2 && !err; refined++) {
        n[refined] = stem_convergence_overrides(&s[0].plan, &s[0].cfg, refined, sets[refined]);
        if (n[refined] < 0)
            err = STEM_ERR_CONFIG;
        else
            snprintf(sets[refined][n[refined]++], STEM_CONVERGENCE_SET_LEN, "output.overwrite=true"); /* none written */
    }
    err = stem_mpi_agree(err, world);
    teardown(&s[0]);
    memset(&s[0], 0, sizeof s[0]);
    for (int refined = 0; refined < 2 && !err; refined++) {
        if (rank == 0)
            stem_info("--convergence: %s",
                      refined ? "refined (half the pixel size and slice thickness)" : "as configured");
        err = convergence_variant(o, world, rank, sets[refined], n[refined], &s[refined],
                                  means + refined * STEM_MAX_IMAGES);
    }
    if (!err && rank == 0) stem_convergence_report(stdout, &s[0].plan, &s[1].plan, means, means + STEM_MAX_IMAGES);
    teardown(&s[0]);
    teardown(&s[1]);
    free(s);
    free(means);
    return err;
}

/* Everything after the command line; returns the exit status on this rank. */
static int run(const cli_options *o, MPI_Comm world, int rank)
{
    if (o->convergence) return run_convergence(o, world, rank);
    run_state s = {0};
    int err = setup(o, world, rank, &s.cfg, s.potentials, &s.atoms, &s.positions, &s.series, &s.m, &s.plan, &s.engine,
                    &s.target);
    if (!err && !o->dry_run) {
        if (stem_log_enabled(STEM_LOG_INFO)) stem_plan_print(&s.plan, stdout);
        char *env = environment_text(), *advice = NULL;
        if (env && env[0]) stem_info("environment (recorded in the output file):\n%.*s", (int)strlen(env) - 1, env);
        free(env);
        /* the output takes rank 0's texts */
        if (rank == 0) print_advice(&s.plan, &s.atoms, s.potentials, stem_log_enabled(STEM_LOG_INFO), &advice);
        err = campaign_and_write(o, &s.cfg, s.potentials, &s.atoms, &s.series, &s.m, &s.plan, &s.engine, &s.target,
                                 advice);
        free(advice);
    }
    teardown(&s);
    return err;
}

/* --version, --help, --help-config and --from-prismatic are local actions of one
 * process: they start no MPI, and every task prints (as any command under srun or mpirun
 * does; a lone task of rank 3 of a Slurm step printed nothing, exit 0). Returns their exit
 * status, or -1 for a run. A command line in error is left to the run, which reports it once. */
static int local_action(int argc, char **argv)
{
    int rank = stem_mpi_launch_rank();
    stem_log_init(rank, STEM_LOG_INFO);
    if (argc > 1 && !strcmp(argv[1], "--from-prismatic")) /* its own arguments: Prismatic's options */
        return stem_from_prismatic(argc - 2, argv + 2, stdout);
    cli_options o;
    int err = parse_cli(argc, argv, &o, 1); /* quietly */
    int local = !err && (o.help || o.version || o.help_config);
    if (local) {
        if (o.help) usage(stdout);
        if (o.version) fputs(stem_build_info(), stdout);
        if (o.help_config) stem_config_print_reference(stdout);
    }
    free(o.overrides);
    optind = 0; /* getopt starts afresh for the run */
    return local ? STEM_OK : -1;
}

/* parse_cli on every rank, agreed: a rank whose command line is wrong, or that was given
 * another mode (MPMD: --dry-run on some ranks only) would leave the others in a collective. */
static int agree_cli(int argc, char **argv, cli_options *o, int rank)
{
    int err = parse_cli(argc, argv, o, rank);
    if (err && rank != 0)
        err = STEM_FAIL(err,
                        "the command line of rank %d is not valid (an unknown option, a "
                        "missing value, or not exactly one config file)",
                        rank);
    err = stem_mpi_agree(err, MPI_COMM_WORLD);
    const int flags[] = {o->dry_run, o->restart, o->convergence};
    const char *const names[] = {"--dry-run", "--restart", "--convergence"};
    if (!err) err = stem_mpi_agree(stem_check_same_flags(flags, names, 3, MPI_COMM_WORLD), MPI_COMM_WORLD);
    return err;
}

/* MPI_Init_thread, after the one-process defaults. An error it returns is exit 7; an
 * error inside it that Open MPI treats as fatal (MPI_ERRORS_ARE_FATAL is the only
 * handler before MPI_Init) ends the process in Open MPI with its own messages and
 * status, which stemsim cannot change. */
static int start_mpi(int *argc, char ***argv, stem_mpi_session *session)
{
    int provided;
    STEM_TRY(stem_mpi_singleton_defaults(session));
    double t = stem_wall_time();
    int rc = MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
    mpi_start_seconds = stem_wall_time() - t;
    if (rc != MPI_SUCCESS) {
        stem_mpi_session_remove(session);
        return STEM_FAIL(STEM_ERR_MPI,
                         "MPI_Init_thread failed (MPI error %d): MPI could not start (see its "
                         "messages above)",
                         rc);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    return STEM_OK;
}

int main(int argc, char **argv)
{
    int rank = 0;
    int local = local_action(argc, argv);
    if (local >= 0) return local;
    stem_mpi_session session;
    if (start_mpi(&argc, &argv, &session)) return STEM_ERR_MPI;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    stem_log_init(rank, STEM_LOG_INFO);
    cli_options o;
    int err = agree_cli(argc, argv, &o, rank);
    stem_log_init(rank, o.quiet ? STEM_LOG_QUIET : (o.verbose ? STEM_LOG_DEBUG : STEM_LOG_INFO));
    if (!err) err = stem_signal_install(rank);
    if (!err) err = run(&o, MPI_COMM_WORLD, rank);
    free(o.overrides);
    stem_gpu_engine_provider()->warm_up(0); /* a run that stopped before its engine was made */
    /* an error no agreement printed (this rank left on its own) */
    stem_log_release_held(err != STEM_OK);
    MPI_Finalize();
    stem_mpi_session_remove(&session);
    return err;
}
