/* Derive the plan (grids, slices, beams, scan, detector, work split; the memory per rank
 * in plan_memory.c) from the validated config and the prepared model. */
#include "plan.h"

#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "channels.h"
#include "coherence.h"
#include "prism_tiles.h"
#include "probe.h"
#include "slabs.h"
#include "physics.h"

int stem_fft_good_size(int n)
{
    for (int m = n > 1 ? n : 1;; m++) {
        int r = m;
        const int f[4] = {2, 3, 5, 7};
        for (int i = 0; i < 4; i++)
            while (r % f[i] == 0) r /= f[i];
        if (r == 1) return m;
    }
}

int stem_fft_good_multiple(int n, int m)
{
    int k = (n + m - 1) / m;
    if (k < 1) k = 1;
    /* m = 11, 13, ...: no multiple is 7-smooth (this loop would never end);
     * make the other factor FFT-friendly instead */
    if (stem_fft_good_size(m) != m) return m * stem_fft_good_size(k);
    for (;; k++)
        if (stem_fft_good_size(k * m) == k * m) return k * m;
}

void stem_split_range(long n, int parts, int i, long *b, long *e)
{
    long base = n / parts, extra = n % parts;
    *b = i * base + (i < extra ? i : extra);
    *e = *b + base + (i < extra ? 1 : 0);
}

void stem_plan_unit_tile(const stem_plan *plan, int first, int n, stem_prism_tile *tile)
{
    int P = plan->layout.group_size, last = first + n - 1 < P ? first + n - 1 : P - 1;
    long b, e, b1, e1;
    stem_split_range(plan->n_probes, P, first, &b, &e);
    stem_split_range(plan->n_probes, P, last, &b1, &e1);
    stem_prism_tile_of_probes(plan, b, e1, 0, tile);
}

/* Grid along one axis: explicit, or from the pixel size; PRISM needs a multiple of f. */
static int choose_grid(int explicit_n, double length, double pixel, int f)
{
    int n = explicit_n > 0 ? explicit_n : (int)ceil(length / pixel - 1e-9);
    return stem_fft_good_multiple(n, f);
}

/* Fourier box holding the band-limited wave, and the detector grid crop/f. */
static void choose_crop(int n, double length, double q_limit, int f, int *crop, int *out)
{
    int kmax = (int)floor(q_limit * length);
    int w = stem_fft_good_size((2 * kmax + 1 + f - 1) / f);
    if (w * f > n) w = n / f;
    *crop = w * f;
    *out = w;
}

static int check_optics(stem_plan *plan)
{
    if (plan->algorithm == STEM_ALG_HRTEM) { /* no probe: only the tilted plane wave must lie in the band */
        double qx = plan->plane_k[0] / plan->cell[0], qy = plan->plane_k[1] / plan->cell[1];
        if (hypot(qx, qy) >= plan->q_limit)
            return STEM_FAIL(STEM_ERR_CONFIG,
                             "[probe] beam tilt %.1f mrad lies beyond the anti-aliased band (%.1f mrad)",
                             hypot(qx, qy) * plan->lambda * 1e3, plan->q_limit * plan->lambda * 1e3);
        /* an objective aperture inside one Fourier pixel passes the unscattered beam alone: a flat image */
        double aperture = plan->opt.objective_aperture_mrad, /* mrad, as the Fourier pixel below */
            pixel = plan->lambda * 1e3 / fmax(plan->cell[0], plan->cell[1]);
        if (aperture > 0 && aperture < pixel && plan->layout.world_rank == 0)
            stem_warn("[hrtem] objective_aperture = %g mrad is inside one Fourier pixel (%.3g mrad, lambda / cell): it "
                      "passes the unscattered beam alone, and the image is flat; a larger cell or aperture resolves it",
                      aperture, pixel);
        return STEM_OK;
    }
    double q_probe = plan->alpha / plan->lambda;
    if (q_probe >= plan->q_limit) {
        double need = plan->lambda / (3 * plan->alpha);
        return STEM_FAIL(STEM_ERR_CONFIG,
                         "[simulation] pixel_size %.4g x %.4g Angstrom is too large for [probe] semiangle = %g mrad: "
                         "the anti-aliased band reaches only %.1f mrad; use pixel_size <= %.4f Angstrom",
                         plan->dx, plan->dy, plan->semiangle_mrad, plan->q_limit * plan->lambda * 1e3, need);
    }
    double off = hypot(plan->aperture_q[0], plan->aperture_q[1]);
    if (off > 0 && off + q_probe >= plan->q_limit)
        return STEM_FAIL(
            STEM_ERR_CONFIG,
            "[probe] beam tilt and aperture shift (%.1f mrad off axis) put the %g mrad aperture beyond the "
            "anti-aliased band (%.1f mrad): use a smaller tilt or pixel_size <= %.4f Angstrom",
            off * plan->lambda * 1e3, plan->semiangle_mrad, plan->q_limit * plan->lambda * 1e3,
            plan->lambda / (3 * (plan->alpha + off * plan->lambda)));
    return STEM_OK;
}

/* Scan positions along one axis: start, start+step, ... < end (one position if start == end). */
static int scan_axis(const stem_config *cfg, double start, double end, double cell, const char *key_end, int end_given,
                     double *x0, int *count)
{
    if (cfg->scan_units == STEM_SCAN_FRACTIONAL) {
        start *= cell;
        end *= cell;
    } else if (!end_given) {
        end = cell;
    }
    if (start < 0 || start > cell || end > cell + 1e-9)
        return STEM_FAIL(STEM_ERR_CONFIG, "[scan] window %g..%g Angstrom (%s) lies outside the cell 0..%g Angstrom",
                         start, end, key_end, cell);
    if (end < start)
        return STEM_FAIL(STEM_ERR_CONFIG, "[scan] %s (%g Angstrom) is before the start (%g Angstrom)", key_end, end,
                         start);
    *x0 = start;
    long n = end > start ? (long)ceil((end - start) / cfg->step - 1e-9) : 1;
    if (n < 1) n = 1;
    if (n > 1000000)
        return STEM_FAIL(STEM_ERR_CONFIG, "[scan] step %g Angstrom gives %ld positions along one axis (limit 1e6)",
                         cfg->step, n);
    *count = (int)n;
    return STEM_OK;
}

/* The probes: the [scan] grid, or the positions of the positions file (read by the caller). */
static int choose_scan(stem_plan *plan, const stem_config *cfg, const stem_positions *positions)
{
    if (stem_plan_single_wave(plan)) { /* hrtem: the plane wave; cbed: the probe at the scan's start */
        int frac = cfg->scan_units == STEM_SCAN_FRACTIONAL;
        plan->scan_x0 = plan->algorithm == STEM_ALG_CBED ? cfg->x_start * (frac ? plan->cell[0] : 1) : 0;
        plan->scan_y0 = plan->algorithm == STEM_ALG_CBED ? cfg->y_start * (frac ? plan->cell[1] : 1) : 0;
        if (plan->scan_x0 < 0 || plan->scan_x0 > plan->cell[0] || plan->scan_y0 < 0 || plan->scan_y0 > plan->cell[1])
            return STEM_FAIL(STEM_ERR_CONFIG,
                             "[scan] x_start, y_start: the CBED probe (%g, %g) Angstrom lies outside "
                             "the cell",
                             plan->scan_x0, plan->scan_y0);
        plan->scan_nx = plan->scan_ny = 1;
        plan->n_probes = 1;
        plan->scan_step = 1;
        return STEM_OK;
    }
    if (cfg->positions[0]) {
        STEM_ASSERT(positions && positions->xy, "[scan] positions not read before the plan");
        plan->positions = positions->xy;
        plan->n_probes = positions->n;
        plan->scan_nx = (int)plan->n_probes;
        plan->scan_ny = 1;
        return STEM_OK;
    }
    STEM_TRY(scan_axis(cfg, cfg->x_start, cfg->x_end, plan->cell[0], "x_end", cfg->x_end_given, &plan->scan_x0,
                       &plan->scan_nx));
    STEM_TRY(scan_axis(cfg, cfg->y_start, cfg->y_end, plan->cell[1], "y_end", cfg->y_end_given, &plan->scan_y0,
                       &plan->scan_ny));
    plan->scan_step = cfg->step;
    plan->n_probes = (long)plan->scan_nx * plan->scan_ny;
    return STEM_OK;
}

double stem_plan_probe_diameter(const stem_plan *plan)
{
    const double *c = plan->aberr.c;
    double a = plan->alpha, c1 = c[STEM_C10], c3 = c[STEM_C30], c5 = c[STEM_C50], blur = 0;
    /* geometric ray displacement d(chi)/d(theta) / k = C1 t + C3 t^3 + C5 t^5 (probe.c's chi),
     * largest over the aperture; round aberrations may partly cancel */
    for (int i = 1; i <= 256; i++) {
        double t = a * i / 256.0, r = fabs(c1 * t + c3 * t * t * t + c5 * t * t * t * t * t);
        if (r > blur) blur = r;
    }
    /* the others, at most |C_nm| a^n each (their azimuthal part cannot cancel the round ones everywhere) */
    for (int k = 0; k < STEM_N_ABERR; k++)
        if (stem_aberration_orders[k].m != 0) blur += fabs(c[k]) * pow(a, stem_aberration_orders[k].n);
    /* a tilted beam drifts sideways by its tilt times the depth: by the exit at most */
    double drift = plan->lambda * hypot(plan->tilt_q[0], plan->tilt_q[1]) * plan->cell[2];
    return 1.22 * plan->lambda / a + 2 * blur + 2 * drift;
}

#define STEM_MIN_DETECTOR_PIXELS 4

/* Does interpolation f along an axis of this length keep the probe inside
 * its window and give the detector a few pixels? */
static int prism_f_fits(const stem_config *cfg, int explicit_n, double length, int f, double diameter)
{
    int n = choose_grid(explicit_n, length, cfg->pixel_size, f), crop, out;
    double q_limit = (2.0 / 3.0) * 0.5 / (length / n);
    choose_crop(n, length, q_limit, f, &crop, &out);
    return length / f >= diameter && out >= STEM_MIN_DETECTOR_PIXELS;
}

/* PRISM crops every plane wave to a window of cell/f around the probe: a
 * window narrower than the probe cuts it off (and a detector of one or two
 * pixels measures nothing), so refuse and name the largest sensible f. */
static int check_prism_window(const stem_plan *plan, const stem_config *cfg)
{
    if (plan->algorithm != STEM_ALG_PRISM) return STEM_OK;
    double d = stem_plan_probe_diameter(plan);
    const int f[2] = {plan->fx, plan->fy}, given[2] = {cfg->grid_x, cfg->grid_y}, out[2] = {plan->out_nx, plan->out_ny};
    const char *key[2] = {"interpolation_x", "interpolation_y"};
    for (int k = 0; k < 2; k++) {
        /* f = 1 is multislice's accuracy: the window is the whole (periodic) cell */
        if (f[k] == 1 || (plan->cell[k] / f[k] >= d && out[k] >= STEM_MIN_DETECTOR_PIXELS)) continue;
        int best = f[k] - 1;
        while (best > 1 && !prism_f_fits(cfg, given[k], plan->cell[k], best, d)) best--;
        return STEM_FAIL(
            STEM_ERR_CONFIG,
            "[simulation] %s = %d is too coarse for this %.3f Angstrom cell: the PRISM window (%.3f Angstrom) "
            "must hold the probe (diameter %.3f Angstrom: 1.22 lambda/alpha plus the aberrations' geometric blur) and "
            "the "
            "detector needs at least %d pixels; use %s <= %d%s",
            key[k], f[k], plan->cell[k], plan->cell[k] / f[k], d, STEM_MIN_DETECTOR_PIXELS, key[k], best < 1 ? 1 : best,
            best <= 1 ? " (1 is multislice's accuracy) or a larger cell (tile_x/tile_y)" : "");
    }
    return STEM_OK;
}

static int choose_beams(stem_plan *plan)
{
    /* a soft edge reaches half a pixel (of the finer axis' step, at most) beyond alpha */
    double soft = plan->opt.soft_aperture ? 0.5 / fmin(plan->cell[0], plan->cell[1]) : 0;
    double q_probe = plan->alpha / plan->lambda + soft;
    /* the multiples of f inside the (shifted) aperture's bounding box */
    int kx0 = (int)ceil((plan->aperture_q[0] - q_probe) * plan->cell[0] / plan->fx) * plan->fx;
    int kx1 = (int)floor((plan->aperture_q[0] + q_probe) * plan->cell[0]);
    int ky0 = (int)ceil((plan->aperture_q[1] - q_probe) * plan->cell[1] / plan->fy) * plan->fy;
    int ky1 = (int)floor((plan->aperture_q[1] + q_probe) * plan->cell[1]);
    long cap = (long)((kx1 - kx0) / plan->fx + 2) * ((ky1 - ky0) / plan->fy + 2);
    STEM_ALLOC(plan->beam_kx, cap, "beam list");
    STEM_ALLOC(plan->beam_ky, cap, "beam list");
    int n = 0;
    for (int ky = ky0; ky <= ky1; ky += plan->fy)
        for (int kx = kx0; kx <= kx1; kx += plan->fx) {
            double qx = kx / plan->cell[0], qy = ky / plan->cell[1];
            if (stem_probe_aperture(plan, qx, qy) > 0) {
                plan->beam_kx[n] = kx;
                plan->beam_ky[n] = ky;
                n++;
            }
        }
    plan->n_beams = n;
    if (n == 0)
        return STEM_FAIL(STEM_ERR_CONFIG,
                         "[probe] semiangle %g mrad holds no plane wave of the %g x %g Angstrom cell "
                         "(with interpolation %d x %d); enlarge the aperture or the cell",
                         plan->semiangle_mrad, plan->cell[0], plan->cell[1], plan->fx, plan->fy);
    return STEM_OK;
}

/* The Gaussian's spectrum exp(-2 pi^2 sigma^2 q^2) falls by STEM_BLUR_ALIAS from the band
 * edge q_limit to its nearest alias, 1/pixel - q_limit (the coarser axis): the samples'
 * aliases stay 1e-5 below the band, and dividing the Gaussian out amplifies rounding only
 * exp(2 pi^2 sigma^2 q_limit^2), about 50x, at the edge. */
stem_blur_geometry stem_plan_blur_geometry(const stem_plan *plan)
{
    stem_blur_geometry g;
    int m = plan->opt.oversampling > 0 ? plan->opt.oversampling : 1; /* the potential's grid: m times finer */
    double dx = plan->dx / m, dy = plan->dy / m, ql = m * plan->q_limit, qa = 1 / fmax(dx, dy) - ql;
    g.sigma = sqrt(log(1 / STEM_BLUR_ALIAS) / (qa * qa - ql * ql)) / (M_PI * sqrt(2.0));
    g.reach = plan->opt.potential_radius + STEM_BLUR_REACH * g.sigma;
    g.step = g.sigma / STEM_BLUR_STEPS;
    g.points = (int)ceil(g.reach / g.step) + 2;
    g.rx = (int)ceil(g.reach / dx) + 1;
    g.ry = (int)ceil(g.reach / dy) + 1;
    return g;
}

/* Transmission pixel (Angstrom) the heaviest element needs: with the potential band-limited
 * at 2/3 of that grid's Nyquist, one atom's high-angle signal at 300 keV was measured within
 * ~1% of its converged value (70-130 mrad, probe on the atom: Ti +1.6%, Sr +4.5%, Au +15%,
 * U +17% at 0.025 A, 0.4-1.8% at 0.0125 A, C 0.1% at 0.025 A; Au 70-200 mrad plane wave
 * against the exact thin phase object: +3.3% at 0.0125 A, +1.1% at 0.01, +0.2% at 0.0083,
 * benchmarks/results/POTENTIAL_ACCURACY.md). */
static double transmission_pixel_needed(int heaviest)
{
    return heaviest <= 10 ? 0.05 : (heaviest <= 20 ? 0.025 : (heaviest <= 50 ? 0.0125 : 0.008));
}

static void set_potential_grid(stem_plan *plan)
{
    plan->pot_nx = plan->opt.oversampling * plan->nx;
    plan->pot_ny = plan->opt.oversampling * plan->ny;
}

/* [simulation] transmission_oversampling: auto takes the smallest factor that reaches the
 * heaviest element's transmission pixel, at most 4 (16x the transmission build). */
static void choose_oversampling(stem_plan *plan, const stem_atoms *atoms)
{
    int heaviest = 0;
    for (long i = 0; i < atoms->n; i++) heaviest = atoms->Z[i] > heaviest ? atoms->Z[i] : heaviest;
    plan->heaviest_z = heaviest;
    if (plan->opt.oversampling > 0) {
        set_potential_grid(plan);
        return;
    }
    double need = transmission_pixel_needed(heaviest), pixel = fmax(plan->dx, plan->dy);
    int m = (int)ceil(pixel / need - 1e-6);
    plan->opt.oversampling = m < 1 ? 1 : (m > 4 ? 4 : m);
    if (m > 4 && plan->layout.world_rank == 0)
        stem_info("transmission functions formed on %.4f A pixels (transmission_oversampling auto, at most 4); Z = %d "
                  "needs %.4f A for high-angle signals within ~1%% (set transmission_oversampling = %d to get there)",
                  pixel / 4, heaviest, need, m);
    set_potential_grid(plan);
}

static int count_species(const stem_atoms *atoms)
{
    unsigned char seen[STEM_MAX_Z + 1] = {0};
    int n = 0;
    for (long i = 0; i < atoms->n; i++)
        if (atoms->Z[i] >= 0 && atoms->Z[i] <= STEM_MAX_Z && !seen[atoms->Z[i]]++) n++;
    return n;
}

/* One axis of the written patterns: crop to |angle| <= max_mrad around the centre pixel
 * n / 2 (0: none), then bins of b pixels, a remainder of fewer than b pixels dropped
 * from both ends alike; *first: the first kept centred pixel. */
static int pattern_axis(int n, double step_mrad, double max_mrad, int b, const char *axis, int *first, int *bins)
{
    int c = n / 2, lo = 0, hi = n - 1;
    if (max_mrad > 0) {
        int k = (int)floor(max_mrad / step_mrad + 1e-9);
        lo = c - k > 0 ? c - k : 0;
        hi = c + k < n - 1 ? c + k : n - 1;
    }
    *bins = (hi - lo + 1) / b;
    *first = lo + (hi - lo + 1 - *bins * b) / 2; /* the remainder dropped from both ends alike */
    if (*bins < 1)
        return STEM_FAIL(STEM_ERR_CONFIG,
                         "[detector] cbed_bin = %d exceeds the %d pixels of the cropped pattern along %s "
                         "(a larger cbed_max_angle or a smaller cbed_bin)",
                         b, hi - lo + 1, axis);
    return STEM_OK;
}

/* One axis of square-q patterns: bins of step dq (mrad) centred on zero angle, as many as hold
 * every detector pixel of the axis within max_mrad (0: all): 2 k + 1 bins, the pixel at angle q
 * in bin k + round(q / dq) (detector.c). */
static int square_axis(int n, double step_mrad, double max_mrad, double dq)
{
    double extent = (n / 2) * step_mrad; /* the largest |angle| of a centred pixel, n / 2 below the centre */
    if (max_mrad > 0 && max_mrad < extent) extent = max_mrad;
    return 2 * (int)floor(extent / dq + 0.5 + 1e-9) + 1;
}

static int choose_pattern_window(stem_plan *plan, const stem_config *cfg)
{
    if (cfg->cbed_max_angle > plan->max_angle_mrad * 1.0001)
        return STEM_FAIL(STEM_ERR_CONFIG,
                         "[detector] cbed_max_angle = %g mrad is beyond the largest simulated angle %.1f mrad",
                         cfg->cbed_max_angle, plan->max_angle_mrad);
    plan->cbed_bin = cfg->cbed_bin;
    plan->cbed_square = cfg->cbed_square_q > 0;
    plan->cbed_max_mrad = cfg->cbed_max_angle;
    double mrad = plan->lambda * 1e3, sx = plan->out_dqx * mrad, sy = plan->out_dqy * mrad;
    if (plan->cbed_square) { /* the finer step divided, binned */
        double dq = cfg->cbed_bin * fmin(sx, sy) / cfg->cbed_square_q;
        plan->cbed_dq_mrad[0] = plan->cbed_dq_mrad[1] = dq;
        plan->cbed_x0 = plan->cbed_y0 = 0;
        plan->cbed_nx = square_axis(plan->out_nx, sx, cfg->cbed_max_angle, dq);
        plan->cbed_ny = square_axis(plan->out_ny, sy, cfg->cbed_max_angle, dq);
        return STEM_OK;
    }
    plan->cbed_dq_mrad[0] = cfg->cbed_bin * sx;
    plan->cbed_dq_mrad[1] = cfg->cbed_bin * sy;
    STEM_TRY(pattern_axis(plan->out_nx, sx, cfg->cbed_max_angle, cfg->cbed_bin, "x", &plan->cbed_x0, &plan->cbed_nx));
    return pattern_axis(plan->out_ny, sy, cfg->cbed_max_angle, cfg->cbed_bin, "y", &plan->cbed_y0, &plan->cbed_ny);
}

/* Cores this process may run on (its affinity mask), 0 if unknown. */
static int bound_cores(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
    return CPU_COUNT(&set);
}

static void choose_decomposition(stem_plan *plan, const stem_config *cfg)
{
    const stem_layout *L = &plan->layout;
    stem_split_range(plan->n_probes, L->group_size, L->group_rank, &plan->probe_begin, &plan->probe_end);
    long b, e;
    stem_split_range(plan->n_beams, L->group_size, L->group_rank, &b, &e);
    plan->beam_begin = (int)b;
    plan->beam_end = (int)e;
    int cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
    int per_rank = cores / (L->ranks_on_node > 0 ? L->ranks_on_node : 1);
    /* mpirun binds each rank to the cores it maps it to (one core by default):
     * more threads than those cores only take turns on them */
    int bound = bound_cores();
    if (bound > 0 && bound < per_rank) per_rank = bound;
    plan->threads = cfg->threads > 0 ? cfg->threads : (per_rank > 0 ? per_rank : 1);
    if (bound > 0 && plan->threads > bound && L->world_rank == 0) {
        if (!L->launched) /* a singleton: its affinity is the shell's (taskset, a cgroup, a batch job's cores) */
            stem_warn("[compute] threads = %d but this process may run on %d core(s) only (its CPU affinity: "
                      "taskset, a container or the batch job's cores): its threads take turns; use threads <= %d",
                      plan->threads, bound, bound);
        else if (
            getenv("SLURM_STEP_ID")) /* launched by srun: Slurm >= 22.05 no longer passes sbatch's --cpus-per-task on */
            stem_warn("[compute] threads = %d but this rank may run on %d core(s) only (srun's binding): its threads "
                      "take turns. Use srun --cpus-per-task=%d (or export SRUN_CPUS_PER_TASK=$SLURM_CPUS_PER_TASK "
                      "before srun: Slurm 22.05 and later do not pass sbatch's --cpus-per-task on to srun)",
                      plan->threads, bound, plan->threads);
        else
            stem_warn("[compute] threads = %d but this rank may run on %d core(s) only (MPI binding?): "
                      "use mpirun --bind-to none or --map-by slot:PE=%d",
                      plan->threads, bound, plan->threads);
    }
    plan->batch_size = cfg->batch_size;
}

/* The config's options, copied whole, and what the plan resolves of them without the
 * model (focal_points and oversampling auto wait for the grid and the model: choose_focal_points,
 * choose_oversampling). */
static void resolve_options(stem_plan *plan, const stem_config *cfg)
{
    plan->opt = cfg->opt;
    if (cfg->algorithm == STEM_ALG_CBED) plan->opt.save_4d = 1; /* the pattern is the output */
    if (cfg->cc > 0 && cfg->energy_spread > 0)                  /* config.c refuses them together with focal_spread */
        plan->opt.focal_spread = stem_chromatic_focal_spread(cfg->cc, cfg->energy_spread, cfg->energy_kev);
    plan->batch_given = cfg->batch_size_given;
}

/* The probe's optics and the images as the plan keeps them (phi in rad). */
static void copy_optics(stem_plan *plan, const stem_config *cfg)
{
    plan->energy_kev = cfg->energy_kev;
    plan->semiangle_mrad = cfg->semiangle_mrad;
    for (int i = 0; i < STEM_N_ABERR; i++) {
        plan->aberr.c[i] = cfg->aberr_c[i];
        plan->aberr.phi[i] = cfg->aberr_phi_deg[i] * M_PI / 180;
    }
    memcpy(plan->images, cfg->images, sizeof plan->images);
}

int stem_slice_count(double cell_z, double dz, double *dz_last)
{
    double x = cell_z / dz;
    long whole = lround(x);
    if (whole >= 1 && fabs(x - whole) <= STEM_SLICE_FIT) { /* fits: the remainder is rounding in the model file */
        *dz_last = dz;
        return (int)whole;
    }
    long n = (long)ceil(x);
    if (n < 1) { /* thinner than one slice: one slice of the cell's thickness */
        *dz_last = cell_z > 0 ? cell_z : dz;
        return 1;
    }
    *dz_last = cell_z - (n - 1) * dz;
    return (int)n;
}

/* [probe] focal_points: as given, or (auto) the fewest that keep the defocus average's
 * quadrature error below STEM_FOCAL_TOLERANCE for this spread, aperture and energy. */
static void choose_focal_points(stem_plan *plan)
{
    plan->focal_auto = plan->opt.focal_points == 0;
    if (!plan->focal_auto) return;
    plan->opt.focal_points = stem_focal_points_needed(stem_focal_k_max(plan), STEM_FOCAL_TOLERANCE);
}

void stem_plan_set_thickness(stem_plan *plan, double cell_z)
{
    plan->cell[2] = cell_z;
    plan->n_slices = stem_slice_count(cell_z, plan->dz, &plan->dz_last);
}

/* Say how the cell was sliced where it is no exact multiple of the slice thickness. */
static void log_slicing(const stem_plan *plan)
{
    double rest = plan->cell[2] - plan->n_slices * plan->dz;
    if (stem_plan_thin_last(plan))
        stem_info(
            "slices: the %.6f Angstrom cell is %.6g slices of %.9g Angstrom: %d slices, the last %.9g Angstrom thick",
            plan->cell[2], plan->cell[2] / plan->dz, plan->dz, plan->n_slices, plan->dz_last);
    else if (fabs(rest) > 1e-9 * plan->dz)
        stem_info(
            "slices: the %.6f Angstrom cell is %d slices of %.9g Angstrom to within %.2g Angstrom (at most %g of a "
            "slice is taken as rounding in the model): %d slices",
            plan->cell[2], plan->n_slices, plan->dz, fabs(rest), STEM_SLICE_FIT, plan->n_slices);
}

/* hrtem on a distributed FFT: whether (on: always; auto: a group of several ranks, and only when
 * the serial plan exceeds the limit), this rank's slabs, and the memory per rank. */
static void choose_distribution(stem_plan *plan, const stem_config *cfg)
{
    const stem_layout *L = &plan->layout;
    if (plan->algorithm != STEM_ALG_HRTEM || cfg->distributed_fft == STEM_DIST_OFF) return;
    if (L->group_size < 2 && cfg->distributed_fft != STEM_DIST_ON) return; /* on: even one rank (a baseline) */
    /* the serial plan of the rank that holds the wave (the same on every rank of a node) */
    double serial = plan->mem_total + (plan->probe_end > plan->probe_begin ? 0 : stem_channel_bytes_per_probe(plan));
    if (cfg->distributed_fft == STEM_DIST_AUTO && serial <= plan->mem_limit) return;
    plan->dist = 1;
    if (plan->opt.oversampling > 1 && L->world_rank == 0)
        stem_warn(
            "the distributed FFT forms the transmission functions on the run's grid: transmission_oversampling "
            "%d is not applied (heavy atoms' high-angle scattering is then less accurate: docs/physics.md, Potentials)",
            plan->opt.oversampling);
    plan->opt.oversampling = 1; /* a slab's potential is built on the run's grid (dist_hrtem.c) */
    /* auto: the slabs' FFTs (FFTW-MPI) are estimated, their plans not cached; so are the few serial
     * ones ([output] save_potential's slices), whose cached wisdom FFTW-MPI's solvers invalidate */
    if (plan->opt.fft_planning == STEM_FFT_AUTO) plan->opt.fft_planning = STEM_FFT_ESTIMATE;
    set_potential_grid(plan);
    stem_dist_fft_slabs(plan->nx, plan->ny, L->group_size, L->group_rank, &plan->dist_rows, &plan->dist_row0,
                        &plan->dist_cols, &plan->dist_col0);
    plan->probe_begin = 0; /* every rank of the group works on the one wave */
    plan->probe_end = 1;
    /* PACBED's exact scan sums are not built on the slabs yet (the exit wave's other diffraction
     * outputs are: each rank's detector pixels summed over the group) */
    if (plan->opt.save_pacbed && L->world_rank == 0)
        stem_warn("the distributed FFT does not write PACBED yet: the exit wave's 4D pattern (save_4d) holds the same "
                  "pattern");
    plan->opt.save_pacbed = 0;
    stem_plan_estimate_slabs(plan);
}

/* The beam tilt and aperture shift in the plan's units (hrtem: the plane wave's Fourier pixel). */
static void set_tilts(stem_plan *plan, const stem_config *cfg)
{
    for (int a = 0; a < 2; a++) {               /* small angles: theta = lambda q */
        if (cfg->algorithm == STEM_ALG_HRTEM) { /* the illumination on the grid; the lens centred on the axis */
            plan->plane_k[a] = (int)lround(cfg->beam_tilt_mrad[a] * 1e-3 / plan->lambda * plan->cell[a]);
            continue;
        }
        plan->tilt_q[a] = cfg->beam_tilt_mrad[a] * 1e-3 / plan->lambda;
        plan->aperture_q[a] = (cfg->beam_tilt_mrad[a] + cfg->aperture_shift_mrad[a]) * 1e-3 / plan->lambda;
    }
}

/* The detector: rings, images, the written patterns' window, segments; refused where they
 * start beyond the largest simulated angle. */
static int choose_detector(stem_plan *plan, const stem_config *cfg)
{
    plan->ring_width = cfg->ring_width;
    plan->n_bins = (int)ceil(plan->max_angle_mrad / cfg->ring_width);
    plan->n_images = cfg->n_images;
    STEM_TRY(choose_pattern_window(plan, cfg));
    plan->seg_n = cfg->segments;
    plan->seg_rings = cfg->segments ? cfg->segment_rings : 0;
    plan->seg_inner = cfg->segment_inner;
    plan->seg_outer = cfg->segment_outer;
    plan->seg_rotation = cfg->segment_rotation * M_PI / 180;
    if (plan->seg_n && cfg->segment_outer > plan->max_angle_mrad * 1.0001)
        return STEM_FAIL(STEM_ERR_CONFIG,
                         "[detector] segment_outer = %g mrad is beyond the largest simulated angle %.1f mrad "
                         "(reduce [simulation] pixel_size to reach it)",
                         cfg->segment_outer, plan->max_angle_mrad);
    for (int i = 0; i < cfg->n_images; i++)
        if (cfg->images[i].inner_mrad >= plan->max_angle_mrad)
            return STEM_FAIL(STEM_ERR_CONFIG,
                             "[images] %s starts at %g mrad, beyond the largest simulated angle %.1f mrad "
                             "(reduce [simulation] pixel_size to reach it)",
                             cfg->images[i].name, cfg->images[i].inner_mrad, plan->max_angle_mrad);
    for (int i = 0; i < cfg->n_images; i++)
        if (cfg->images[i].outer_mrad > plan->max_angle_mrad * 1.0001 && cfg->images[i].outer_mrad < 1e9 &&
            plan->layout.world_rank == 0)
            stem_warn("[images] %s extends to %g mrad but the simulation reaches only %.1f mrad: it integrates up to "
                      "%.1f mrad",
                      cfg->images[i].name, cfg->images[i].outer_mrad, plan->max_angle_mrad, plan->max_angle_mrad);
    return STEM_OK;
}

int stem_plan_geometry(stem_plan *plan, const stem_config *cfg, const stem_atoms *atoms,
                       const stem_positions *positions, const stem_layout *layout)
{
    memset(plan, 0, sizeof *plan);
    plan->layout = *layout;
    plan->algorithm = cfg->algorithm;
    resolve_options(plan, cfg);
    copy_optics(plan, cfg);
    plan->n_atoms = atoms->n;
    plan->lambda = stem_wavelength(cfg->energy_kev);
    plan->sigma = stem_interaction_constant(cfg->energy_kev);
    plan->alpha = cfg->semiangle_mrad * 1e-3;
    memcpy(plan->cell, atoms->cell, sizeof plan->cell);
    set_tilts(plan, cfg);
    int prism = cfg->algorithm == STEM_ALG_PRISM;
    plan->fx = prism ? cfg->interpolation_x : 1;
    plan->fy = prism ? cfg->interpolation_y : 1;
    plan->nx = choose_grid(cfg->grid_x, plan->cell[0], cfg->pixel_size, plan->fx);
    plan->ny = choose_grid(cfg->grid_y, plan->cell[1], cfg->pixel_size, plan->fy);
    if ((double)plan->nx * plan->ny > 1.0e9)
        return STEM_FAIL(STEM_ERR_CONFIG, "[simulation] pixel_size %g gives a %d x %d grid: too large", cfg->pixel_size,
                         plan->nx, plan->ny);
    plan->dx = plan->cell[0] / plan->nx;
    plan->dy = plan->cell[1] / plan->ny;
    choose_oversampling(plan, atoms);
    plan->q_limit = (2.0 / 3.0) * fmin(0.5 / plan->dx, 0.5 / plan->dy);
    STEM_TRY(check_optics(plan));
    choose_focal_points(plan);
    plan->dz = cfg->slice_thickness;
    stem_plan_set_thickness(plan, plan->cell[2]);
    log_slicing(plan);
    choose_crop(plan->nx, plan->cell[0], plan->q_limit, plan->fx, &plan->crop_nx, &plan->out_nx);
    choose_crop(plan->ny, plan->cell[1], plan->q_limit, plan->fy, &plan->crop_ny, &plan->out_ny);
    plan->out_dqx = plan->fx / plan->cell[0];
    plan->out_dqy = plan->fy / plan->cell[1];
    plan->max_angle_mrad = plan->q_limit * plan->lambda * 1e3;
    STEM_TRY(choose_detector(plan, cfg));
    STEM_TRY(choose_scan(plan, cfg, positions));
    stem_source_blur_warn(plan); /* mirrored edges: say so */
    STEM_TRY(choose_beams(plan));
    plan->n_configs = cfg->frozen_phonons;
    return STEM_OK;
}

int stem_plan_finish(stem_plan *plan, const stem_config *cfg, const stem_atoms *atoms)
{
    STEM_TRY(check_prism_window(plan, cfg));
    choose_decomposition(plan, cfg);
    stem_plan_estimate_memory(plan, count_species(atoms), cfg->max_memory_gib);
    choose_distribution(plan, cfg);
    stem_plan_choose_blocks(plan, cfg);
    if (plan->dist)
        STEM_TRY(stem_dist_fft_check(plan->nx, plan->ny, plan->layout.group_size)); /* before any collective */
    return STEM_OK;
}

int stem_plan_build(stem_plan *plan, const stem_config *cfg, const stem_atoms *atoms, const stem_positions *positions,
                    const stem_layout *layout)
{
    STEM_TRY(stem_plan_geometry(plan, cfg, atoms, positions, layout));
    return stem_plan_finish(plan, cfg, atoms);
}

/* The printed plan (--dry-run, the log): one line printer per entry of plan_lines, each
 * printing its line or nothing. */
static void print_algorithm(const stem_plan *plan, FILE *out)
{
    fprintf(out, "  algorithm          %s", stem_algorithm_name(plan->algorithm));
    if (plan->algorithm == STEM_ALG_PRISM) fprintf(out, " (interpolation %d x %d)", plan->fx, plan->fy);
    fprintf(out, "\n");
}

static void print_model(const stem_plan *plan, FILE *out)
{
    fprintf(out, "  atoms              %ld in a %.3f x %.3f x %.3f Angstrom cell\n", plan->n_atoms, plan->cell[0],
            plan->cell[1], plan->cell[2]);
    fprintf(out, "  wavelength         %.6f Angstrom, sigma %.6e rad/(V Angstrom)\n", plan->lambda, plan->sigma);
    fprintf(out, "  grid               %d x %d pixels of %.4f x %.4f Angstrom\n", plan->nx, plan->ny, plan->dx,
            plan->dy);
}

static void print_slices(const stem_plan *plan, FILE *out)
{
    fprintf(out, "  slices             %d of %.9g Angstrom", plan->n_slices, plan->dz);
    if (stem_plan_thin_last(plan))
        fprintf(out, ", the last %.9g Angstrom (the cell is %.6g slices)", plan->dz_last, plan->cell[2] / plan->dz);
    fprintf(out, "\n");
}

static void print_band(const stem_plan *plan, FILE *out)
{
    fprintf(out, "  band limit         %.1f mrad (2/3 of Nyquist)\n", plan->max_angle_mrad);
    fprintf(out, "  transmission       formed on a %dx finer grid (%.4f A pixels; heaviest element Z = %d)\n",
            plan->opt.oversampling, fmax(plan->dx, plan->dy) / plan->opt.oversampling, plan->heaviest_z);
    fprintf(out, "  beams              %d plane waves inside %.2f mrad\n", plan->n_beams, plan->alpha * 1e3);
}

static void print_smatrix(const stem_plan *plan, FILE *out)
{
    if (plan->algorithm != STEM_ALG_PRISM) return;
    fprintf(out, "  S-matrix           %d beams x %d x %d pixels (%.3f GiB)\n", plan->n_beams, plan->crop_nx,
            plan->crop_ny, 8.0 * plan->n_beams * plan->crop_nx * plan->crop_ny / 1073741824.0);
    stem_plan_print_smatrix_holding(plan, out);
}

static void print_detector(const stem_plan *plan, FILE *out)
{
    fprintf(out, "  detector           %d x %d pixels, %d rings of %g mrad, %d images\n", plan->out_nx, plan->out_ny,
            plan->n_bins, plan->ring_width, plan->n_images);
    if (plan->algorithm == STEM_ALG_HRTEM)
        fprintf(out, "  illumination       a plane wave on Fourier pixel (%d, %d) (tilt %.3f, %.3f mrad)\n",
                plan->plane_k[0], plan->plane_k[1], plan->plane_k[0] / plan->cell[0] * plan->lambda * 1e3,
                plan->plane_k[1] / plan->cell[1] * plan->lambda * 1e3);
}

/* The wave's split (a distributed FFT) or the probes. */
static void print_scan(const stem_plan *plan, FILE *out)
{
    if (plan->dist) {
        int P = plan->layout.group_size;
        double moved = 48.0 * plan->nx * plan->ny * (P - 1) / ((double)P * P); /* 6 transforms per slice */
        fprintf(out,
                "  distributed FFT    FFTW-MPI over the %d ranks of each group: this rank's rows [%ld, %ld) and "
                "Fourier columns [%ld, %ld); %.1f MiB moved per rank and slice\n",
                P, plan->dist_row0, plan->dist_row0 + plan->dist_rows, plan->dist_col0,
                plan->dist_col0 + plan->dist_cols, moved / 1048576.0);
    } else if (plan->algorithm == STEM_ALG_CBED)
        fprintf(out, "  probe              one, at (%.3f, %.3f) Angstrom\n", plan->scan_x0, plan->scan_y0);
    else if (plan->positions)
        fprintf(out, "  scan               %ld probes at the positions of [scan] positions\n", plan->n_probes);
    else
        fprintf(out, "  scan               %d x %d probes (%ld) from (%.3f, %.3f) step %.4f Angstrom\n", plan->scan_nx,
                plan->scan_ny, plan->n_probes, plan->scan_x0, plan->scan_y0, plan->scan_step);
}

static void print_configurations(const stem_plan *plan, FILE *out)
{
    fprintf(out, "  frozen phonons     %d configurations over %d rank group(s) of %d\n", plan->n_configs,
            plan->layout.n_groups, plan->layout.group_size);
    double se_bytes = stem_channel_error_bytes_per_probe(plan) * (double)(plan->probe_end - plan->probe_begin);
    if (se_bytes > 0)
        fprintf(out, "  standard errors    over the configurations (/standard_error), %.1f MiB on this rank\n",
                se_bytes / 1048576.0);
    else
        fprintf(out, "  standard errors    none (%s)\n",
                plan->n_configs < 2              ? "one configuration"
                    : !plan->opt.standard_errors ? "[output] standard_errors = false"
                                                 : "the wave in slabs");
}

static void print_ranks(const stem_plan *plan, FILE *out)
{
    const stem_layout *L = &plan->layout;
    fprintf(
        out,
        "  ranks              %d; this rank (%d): group %d, probes [%ld, %ld), beams [%d, %d), %d threads, batch %d\n",
        L->world_size, L->world_rank, L->group, plan->probe_begin, plan->probe_end, plan->beam_begin, plan->beam_end,
        plan->threads, plan->batch_size);
}

static void print_focal_spread(const stem_plan *plan, FILE *out)
{
    if (plan->opt.focal_spread > 0)
        fprintf(out, "  focal spread       sigma %.3f Angstrom over %d defoci (Gauss-Hermite%s)\n",
                plan->opt.focal_spread, plan->opt.focal_points,
                plan->focal_auto ? ", chosen by focal_points = auto" : "");
}

static void print_fft_planning(const stem_plan *plan, FILE *out)
{
    static const char *const planning[] = {"estimate", "measure", "auto (measured, wisdom cache)"};
    fprintf(out, "  FFT planning       %s%s%s\n", planning[plan->opt.fft_planning], plan->fft_wisdom[0] ? ", " : "",
            plan->fft_wisdom);
}

static void print_node_shared(const stem_plan *plan, FILE *out)
{
    const stem_layout *L = &plan->layout;
    if (L->shared_ranks > 1)
        fprintf(out,
                "  node-shared        %stransmission functions (CPU engine) and the lookup table: one copy for the %d "
                "ranks of group %d on this node\n",
                plan->algorithm == STEM_ALG_PRISM ? "S-matrix and " : "", L->shared_ranks, L->group);
    else if (L->group_size > 1 && L->not_shared)
        fprintf(out, "  node-shared        off: %s\n", L->not_shared);
}

typedef void (*plan_line)(const stem_plan *plan, FILE *out);
static const plan_line plan_lines[] = {print_algorithm,    print_model,
                                       print_slices,       print_band,
                                       print_smatrix,      print_detector,
                                       print_scan,         print_configurations,
                                       print_ranks,        stem_plan_print_blocks,
                                       print_focal_spread, print_fft_planning,
                                       print_node_shared,  stem_plan_print_memory};

void stem_plan_print(const stem_plan *plan, FILE *out)
{
    fprintf(out, "plan:\n");
    for (size_t i = 0; i < sizeof plan_lines / sizeof plan_lines[0]; i++) plan_lines[i](plan, out);
}

char *stem_plan_to_text(const stem_plan *plan)
{
    char *buf = NULL;
    size_t size = 0;
    FILE *m = open_memstream(&buf, &size);
    if (!m) return NULL;
    stem_plan_print(plan, m);
    fclose(m);
    return buf;
}

const char *stem_algorithm_name(int algorithm)
{
    static const char *names[] = {"multislice", "prism", "hrtem", "cbed"};
    return algorithm >= 0 && algorithm < 4 ? names[algorithm] : "unknown";
}

void stem_plan_free(stem_plan *plan)
{
    free(plan->beam_kx);
    free(plan->beam_ky);
    plan->beam_kx = plan->beam_ky = NULL;
    plan->positions = NULL;
}
