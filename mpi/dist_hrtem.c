/* Plane-wave imaging on a distributed FFT (dist_hrtem.h). Fourier-space arrays are
 * in the transposed layout of dist_fft.h: element (kx, ky) of this rank's columns at
 * [(kx - col0) * ny + ky]. */
#include "dist_hrtem.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../src/channels.h"
#include "../src/coherence.h"
#include "../src/detector.h"
#include "../src/hrtem.h"
#include "../src/index_maps.h"
#include "../src/multislice.h"
#include "../src/phases.h"
#include "../src/potential.h"
#include "../io/potential_file.h"
#include "phonon_steps.h"
#include "../comm/dist_fft.h"

/* The detector's pixels on this rank's Fourier columns (detector.h's tables, compacted), with
 * each pixel's element of the wave; built for one plan's detector geometry (key). */
typedef struct {
    stem_detector det;
    size_t *at;    /* the pixel's element of this rank's Fourier columns */
    float *values; /* scratch: the pixels' intensity */
    double key[5]; /* lambda, out_dqx, out_dqy, q_limit, out grid: what the tables depend on */
    int built;
} dist_detector;

typedef struct {
    stem_dist_fft fft;
    stem_complex *trans;                     /* [slice][rows][nx] */
    stem_complex *wave, *work, *prop, *lens; /* FFT buffers (d->alloc each) */
    stem_complex *prop_last;                 /* the thinner last slice's propagator (NULL: prop) */
    float *V;                                /* one slice's potential rows */
    stem_potential_table table;
    dist_detector detector; /* the diffraction channels' pixels (built at the first record) */
} dist_state;

/* The body once per element of this rank's Fourier columns, with qx, qy (1/Angstrom),
 * ix, j_ (the kx and ky indices) and at (the element's offset) in scope. */
#define FOR_FOURIER(plan, d, ...)                                                                                      \
    for (long c_ = 0; c_ < (d)->cols; c_++) {                                                                          \
        double qx = stem_fft_index((int)((d)->col0 + c_), (plan)->nx) / (plan)->cell[0];                               \
        int ix = (int)((d)->col0 + c_);                                                                                \
        for (int j_ = 0; j_ < (plan)->ny; j_++) {                                                                      \
            double qy = stem_fft_index(j_, (plan)->ny) / (plan)->cell[1];                                              \
            size_t at = (size_t)c_ * (plan)->ny + j_;                                                                  \
            (void)ix, (void)qx, (void)qy;                                                                              \
            __VA_ARGS__                                                                                                \
        }                                                                                                              \
    }

/* multislice.c's Fresnel propagator over dz on this rank's Fourier columns. */
static void build_propagator(const stem_plan *plan, const stem_dist_fft *d, double dz, stem_complex *prop)
{
    FOR_FOURIER(plan, d, { prop[at] = stem_propagator_at(plan, dz, qx, qy); })
}

/* Slice s's potential rows as the transmission uses them, into w: configuration c's stored rows
 * ([simulation] potential_file: stored deblurred), else the atoms' blurred potential with the
 * blur divided out (band-limited). */
static int potential_rows(const stem_plan *plan, dist_state *st, const stem_atoms *atoms, int c, int s, stem_complex *w)
{
    const stem_dist_fft *d = &st->fft;
    size_t slab = (size_t)d->rows * plan->nx;
    int stored = plan->opt.potential_file[0] != 0;
    STEM_TRY(stored ? stem_potential_file_read_rows(plan, c, s, d->row0, d->rows, st->V)
                    : stem_potential_slice_rows(plan, &st->table, atoms, s, d->row0, d->rows, st->V));
    for (size_t i = 0; i < slab; i++) w[i] = st->V[i];
    if (stored) return STEM_OK;
    stem_dist_fft_forward(d, w);
    FOR_FOURIER(plan, d, { w[at] *= (float)stem_potential_deblur(plan, &st->table, qx * qx + qy * qy); })
    stem_dist_fft_inverse(d, w);
    return STEM_OK;
}

/* Slice s's transmission rows, as potential.c builds a whole slice: the potential rows, exp(i
 * sigma V), the band limit. */
static int build_slice(const stem_plan *plan, dist_state *st, const stem_atoms *atoms, int c, int s)
{
    const stem_dist_fft *d = &st->fft;
    size_t slab = (size_t)d->rows * plan->nx;
    double grid = (double)plan->nx * plan->ny, q2max = plan->q_limit * plan->q_limit;
    stem_complex *w = st->work;
    STEM_TRY(potential_rows(plan, st, atoms, c, s, w));
    for (size_t i = 0; i < slab; i++) w[i] = cexpf(I * (float)plan->sigma * crealf(w[i]));
    stem_dist_fft_forward(d, w);
    FOR_FOURIER(plan, d, { w[at] = qx * qx + qy * qy <= q2max ? w[at] / (float)grid : 0; })
    stem_dist_fft_inverse(d, w);
    memcpy(st->trans + (size_t)s * slab, w, slab * sizeof *w);
    return STEM_OK;
}

/* The plane wave through slices [above, below): from its rows (above = 0), else from where the
 * last detection plane left it in Fourier space; the wave ends in Fourier space. One call over
 * every slice is the whole propagation, the same operations as the planes' calls together. */
static void propagate(const stem_plan *plan, dist_state *st, int above, int below)
{
    const stem_dist_fft *d = &st->fft;
    size_t slab = (size_t)d->rows * plan->nx;
    if (above == 0)
        stem_hrtem_plane_wave_rows(plan, d->row0, d->rows, st->wave);
    else
        stem_dist_fft_inverse(d, st->wave);
    for (int s = above; s < below; s++) {
        const stem_complex *t = st->trans + (size_t)s * slab;
        stem_multiply_grid(st->wave, t, slab);
        stem_dist_fft_forward(d, st->wave);
        /* the last slice is thinner (plan.h); a campaign's state may hold another tilt's propagator */
        int thin = s == plan->n_slices - 1 && st->prop_last && stem_plan_thin_last(plan);
        stem_multiply_grid(st->wave, thin ? st->prop_last : st->prop, (size_t)d->cols * plan->ny);
        if (s + 1 < below) stem_dist_fft_inverse(d, st->wave);
    }
}

/* ------------------------------------------------------------ the diffraction channels */

static void detector_free(dist_detector *dd)
{
    stem_detector_free(&dd->det);
    free(dd->at);
    free(dd->values);
    memset(dd, 0, sizeof *dd);
}

/* Keeps detector pixel k of full as pixel n of dd (the tables full has). */
static void detector_keep(const stem_detector *full, int k, int n, dist_detector *dd)
{
    stem_detector *det = &dd->det;
    det->bin[n] = full->bin[k];
    det->image_mask[n] = full->image_mask[k];
    det->theta_x[n] = full->theta_x[k];
    det->theta_y[n] = full->theta_y[k];
    if (det->segment) det->segment[n] = full->segment[k];
    if (det->pattern_bin) det->pattern_bin[n] = full->pattern_bin[k];
}

/* detector.c's tables of the detector grid (out_nx x out_ny, FFT order), kept for the pixels
 * on this rank's Fourier columns, in the serial pixel order. */
static int detector_columns(const stem_plan *plan, const stem_dist_fft *d, dist_detector *dd)
{
    stem_detector full;
    STEM_TRY(stem_detector_build(plan, &full));
    int ox = plan->out_nx, oy = plan->out_ny, n = 0;
    for (int i = 0; i < ox; i++) {
        long c = stem_box_to_grid(i, ox, plan->nx) - d->col0;
        if (c >= 0 && c < d->cols) n += oy;
    }
    stem_detector *det = &dd->det;
    det->n_pixels = n;
    det->pattern_bins = full.pattern_bins;
    size_t count = (size_t)n + 1;
    int err = STEM_OK;
    det->bin = stem_calloc(count, sizeof *det->bin, "detector bins");
    det->image_mask = stem_calloc(count, sizeof *det->image_mask, "detector masks");
    det->theta_x = stem_calloc(count, sizeof *det->theta_x, "detector angles");
    det->theta_y = stem_calloc(count, sizeof *det->theta_y, "detector angles");
    if (full.segment) det->segment = stem_calloc(count, sizeof *det->segment, "detector segments");
    if (full.pattern_bin) det->pattern_bin = stem_calloc(count, sizeof *det->pattern_bin, "pattern bins");
    dd->at = stem_calloc(count, sizeof *dd->at, "detector pixels' elements");
    dd->values = stem_calloc(count, sizeof *dd->values, "detector pixels' intensity");
    if (!det->bin || !det->image_mask || !det->theta_x || !det->theta_y || (full.segment && !det->segment) ||
        (full.pattern_bin && !det->pattern_bin) || !dd->at || !dd->values)
        err = STEM_ERR_MEMORY;
    for (int j = 0, m = 0; j < oy && !err; j++)
        for (int i = 0; i < ox; i++) {
            long c = stem_box_to_grid(i, ox, plan->nx) - d->col0;
            if (c < 0 || c >= d->cols) continue;
            dd->at[m] = (size_t)c * plan->ny + (size_t)stem_box_to_grid(j, oy, plan->ny);
            detector_keep(&full, j * ox + i, m++, dd);
        }
    stem_detector_free(&full);
    return err;
}

/* This plan's detector on this rank's columns, (re)built when its geometry changed; agreed
 * over the group (the sums that follow are collective). */
static int detector_for(const stem_plan *plan, dist_state *st, MPI_Comm group)
{
    dist_detector *dd = &st->detector;
    double key[5] = {plan->lambda, plan->out_dqx, plan->out_dqy, plan->q_limit, (double)plan->out_nx * plan->out_ny};
    if (dd->built && !memcmp(key, dd->key, sizeof key)) return STEM_OK;
    detector_free(dd);
    int err = detector_columns(plan, &st->fft, dd);
    memcpy(dd->key, key, sizeof key);
    dd->built = !err;
    return stem_mpi_agree(err, group);
}

/* The values of the diffraction channels in one buffer: rings, images, centre of mass,
 * segments, 4D pattern (their widths; 0: not recorded). */
static long diffraction_width(const stem_plan *plan, long *width)
{
    static const int ch[] = {STEM_CH_RINGS, STEM_CH_IMAGES, STEM_CH_COM, STEM_CH_SEGMENTS, STEM_CH_CBED};
    long all = 0;
    for (int k = 0; k < 5; k++) all += width[k] = stem_channel_width(plan, ch[k]);
    return all;
}

/* stem_detect's sums over this rank's pixels of the detector (the total aside: record's). */
static void detect_columns(const dist_detector *dd, const long *width, double *sums)
{
    const stem_detector *det = &dd->det;
    double *rings = sums, *images = rings + width[0], *com = images + width[1], *segments = com + width[2],
           *pattern = segments + width[3];
    double cx = 0, cy = 0;
    for (int k = 0; k < det->n_pixels; k++) {
        float v = dd->values[k];
        if (width[4] && det->pattern_bin[k] >= 0) pattern[det->pattern_bin[k]] += v;
        if (det->bin[k] < 0) continue;
        if (width[0]) rings[det->bin[k]] += v;
        cx += v * det->theta_x[k];
        cy += v * det->theta_y[k];
        for (uint32_t m = det->image_mask[k]; m; m &= m - 1) images[__builtin_ctz(m)] += v;
        if (width[3] && det->segment[k] >= 0) segments[det->segment[k]] += v;
    }
    if (width[2]) com[0] = cx, com[1] = cy;
}

/* The exit wave's rings, images, centre of mass, segments and 4D pattern: each rank's pixels
 * of the detector, summed over the group; every rank of the group holds the sums. */
static int record_diffraction(const stem_plan *plan, dist_state *st, MPI_Comm group, stem_result *res)
{
    static const int ch[] = {STEM_CH_RINGS, STEM_CH_IMAGES, STEM_CH_COM, STEM_CH_SEGMENTS, STEM_CH_CBED};
    long width[5], all = diffraction_width(plan, width);
    if (all == 0) return STEM_OK;
    STEM_TRY(detector_for(plan, st, group));
    const dist_detector *dd = &st->detector;
    for (int k = 0; k < dd->det.n_pixels; k++) {
        stem_complex v = st->wave[dd->at[k]];
        dd->values[k] = crealf(v) * crealf(v) + cimagf(v) * cimagf(v);
    }
    double *sums = stem_calloc((size_t)all, sizeof *sums, "diffraction sums");
    int err = sums ? STEM_OK : STEM_ERR_MEMORY;
    if (!err) detect_columns(dd, width, sums);
    err = stem_mpi_agree(err, group);
    if (!err && MPI_Allreduce(MPI_IN_PLACE, sums, (int)all, MPI_DOUBLE, MPI_SUM, group) != MPI_SUCCESS)
        err = STEM_FAIL(STEM_ERR_MPI, "MPI_Allreduce of the exit wave's diffraction sums failed");
    for (long c = 0, at = 0; c < 5 && !err; at += width[c++]) {
        if (!width[c]) continue;
        if (stem_channel_table[ch[c]].is_float)
            for (long i = 0; i < width[c]; i++) ((float *)res->data[ch[c]])[i] += (float)sums[at + i];
        else
            for (long i = 0; i < width[c]; i++) ((double *)res->data[ch[c]])[i] += sums[at + i];
    }
    free(sums);
    return err;
}

/* hrtem.c's record on the slabs: the total (summed over the group), this rank's rows of
 * the exit wave and of the image through the lens over the focal spread's defoci. */
static int record_slab(const stem_plan *plan, dist_state *st, MPI_Comm group, stem_result *res)
{
    const stem_dist_fft *d = &st->fft;
    size_t slab = (size_t)d->rows * plan->nx, fourier = (size_t)d->cols * plan->ny;
    double total = 0;
    for (size_t i = 0; i < fourier; i++)
        total += crealf(st->wave[i]) * crealf(st->wave[i]) + cimagf(st->wave[i]) * cimagf(st->wave[i]);
    STEM_MPI_CALL(MPI_Allreduce(MPI_IN_PLACE, &total, 1, MPI_DOUBLE, MPI_SUM, group));
    ((double *)res->data[STEM_CH_TOTAL])[0] += total;
    STEM_TRY(record_diffraction(plan, st, group, res));
    if (res->data[STEM_CH_EXIT]) {
        float *out = res->data[STEM_CH_EXIT];
        memcpy(st->work, st->wave, fourier * sizeof *st->work);
        stem_dist_fft_inverse(d, st->work);
        for (size_t p = 0; p < slab; p++) out[2 * p] += crealf(st->work[p]), out[2 * p + 1] += cimagf(st->work[p]);
    }
    double offset[STEM_MAX_FOCAL_POINTS], weight[STEM_MAX_FOCAL_POINTS];
    int n = stem_focal_points(plan, offset, weight);
    float *image = res->data[STEM_CH_HRTEM];
    for (int k = 0; k < n; k++) {
        stem_plan lens = *plan; /* read only: the aberrations with this defocus */
        lens.aberr.c[STEM_C10] += offset[k];
        stem_complex *w = st->work;
        FOR_FOURIER(plan, d, { w[at] = st->wave[at] * stem_hrtem_lens_at(&lens, qx, qy); })
        stem_dist_fft_inverse(d, w);
        for (size_t p = 0; p < slab; p++)
            image[p] += (float)(weight[k] * (crealf(w[p]) * crealf(w[p]) + cimagf(w[p]) * cimagf(w[p])));
    }
    return STEM_OK;
}

static int state_create(const stem_mpi *m, const stem_plan *plan, dist_state *st)
{
    int err = stem_dist_fft_create(&st->fft, m->group, plan->nx, plan->ny, stem_options_dist_fft_measure(&plan->opt));
    size_t slab = (size_t)plan->dist_rows * plan->nx;
    if (!err && !(st->trans = stem_fft_alloc(slab * plan->n_slices + 1, "transmission rows"))) err = STEM_ERR_MEMORY;
    if (!err && !(st->V = stem_alloc(sizeof(float) * (slab + 1), "potential rows"))) err = STEM_ERR_MEMORY;
    if (!err && !(st->wave = stem_dist_fft_alloc(&st->fft, "wave slab"))) err = STEM_ERR_MEMORY;
    if (!err && !(st->work = stem_dist_fft_alloc(&st->fft, "work slab"))) err = STEM_ERR_MEMORY;
    if (!err && !(st->prop = stem_dist_fft_alloc(&st->fft, "propagator slab"))) err = STEM_ERR_MEMORY;
    if (!err) build_propagator(plan, &st->fft, plan->dz, st->prop);
    if (!err && stem_plan_thin_last(plan) &&
        !(st->prop_last = stem_dist_fft_alloc(&st->fft, "last slice's propagator")))
        err = STEM_ERR_MEMORY;
    if (!err && st->prop_last) build_propagator(plan, &st->fft, plan->dz_last, st->prop_last);
    return err;
}

static void state_free(dist_state *st)
{
    stem_dist_fft_destroy(&st->fft);
    stem_fft_free(st->trans);
    stem_fft_free(st->wave);
    stem_fft_free(st->work);
    stem_fft_free(st->prop);
    stem_fft_free(st->prop_last);
    free(st->V);
    stem_potential_table_free(&st->table);
    detector_free(&st->detector);
}

void stem_dist_fft_report(const stem_mpi *m, const stem_plan *plan)
{
    const stem_layout *L = &m->layout;
    long count = 0;
    double fft = stem_dist_fft_seconds(&count), slowest = fft;
    if (MPI_Reduce(&fft, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, m->world) != MPI_SUCCESS) return;
    stem_info("distributed FFTs: %ld transforms of %d x %d on rank 0, %.3f s on the slowest rank (transposes included; "
              "%.1f MiB moved per rank and transform)",
              count, plan->nx, plan->ny, slowest,
              8.0 * plan->nx * plan->ny * (L->group_size - 1) / L->group_size / L->group_size / 1048576.0);
}

/* ------------------------------------------------------------ a campaign's units */

struct stem_dist_unit {
    dist_state st;
    double last_dz; /* the thickness prop_last was built for (0: none) */
};

int stem_dist_unit_create(const stem_mpi *m, const stem_plan *plan, const stem_atoms *atoms,
                          const stem_atom_potential *potentials, stem_dist_unit **out)
{
    stem_dist_unit *u = stem_calloc(1, sizeof *u, "distributed FFT state");
    int err = u ? state_create(m, plan, &u->st) : STEM_ERR_MEMORY;
    if (u && u->st.prop_last) u->last_dz = plan->dz_last;
    err = stem_mpi_agree(err, m->group);
    double t = stem_wall_time();
    if (u) err = stem_phonon_lookup_table(m, plan, atoms, potentials, err, &u->st.table, NULL);
    stem_phase_add(STEM_PHASE_TABLE, t);
    if (!err && m->layout.world_rank == 0)
        stem_info("distributed FFT: %d x %d grid in slabs of %ld rows over the %d ranks of each group", plan->nx,
                  plan->ny, plan->dist_rows, m->layout.group_size);
    *out = u;
    return err;
}

/* The tilt's thinner last slice's propagator, rebuilt when another tilt left another one. */
static int last_propagator(stem_dist_unit *u, const stem_plan *plan)
{
    if (!stem_plan_thin_last(plan) || (u->st.prop_last && u->last_dz == plan->dz_last)) return STEM_OK;
    if (!u->st.prop_last && !(u->st.prop_last = stem_dist_fft_alloc(&u->st.fft, "last slice's propagator")))
        return STEM_ERR_MEMORY;
    build_propagator(plan, &u->st.fft, plan->dz_last, u->st.prop_last);
    u->last_dz = plan->dz_last;
    return STEM_OK;
}

int stem_dist_unit_run(stem_dist_unit *u, const stem_mpi *m, const stem_plan *plans, int n, const stem_atoms *tilted,
                       int c, stem_result *res)
{
    dist_state *st = &u->st;
    const stem_plan *plan = &plans[0];
    stem_atoms displaced = {0};
    double t = stem_wall_time();
    int err = last_propagator(u, plan);
    if (!err && !plan->opt.potential_file[0]) /* stored slices: no atoms placed */
        err = stem_atoms_displace(tilted, plan->opt.seed, c, plan->opt.thermal, &displaced);
    for (int s = 0; s < plan->n_slices && !err; s++) err = build_slice(plan, st, &displaced, c, s);
    stem_atoms_free(&displaced);
    t = stem_phase_add(STEM_PHASE_TRANSMISSION, t);
    STEM_TRY(stem_mpi_agree(err, m->group)); /* the transforms are collective */
    /* each beam tilt's wave once, plane by plane; res in series order, the depth fastest (hrtem.c) */
    int planes = stem_plan_n_planes(plan);
    for (int i = 0, j; i < n && !err; i = j) {
        j = stem_hrtem_same_tilt_end(plans, i, n);
        for (int k = 0, above = 0; k < planes && !err; k++) {
            int below = stem_plan_plane_slices(plan, k);
            propagate(&plans[i], st, above, below);
            for (int q = i; q < j && !err; q++)
                err = record_slab(&plans[q], st, m->group, &res[(size_t)q * planes + k]);
            above = below;
        }
    }
    stem_phase_add(STEM_PHASE_PROBES, t);
    return stem_mpi_agree(err, m->group);
}

void stem_dist_unit_free(stem_dist_unit *u)
{
    if (!u) return;
    state_free(&u->st);
    free(u);
}
