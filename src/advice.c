/* Convergence advice (advice.h). */
#include "advice.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "atoms.h"
#include "coherence.h"
#include "fft.h"
#include "probe.h"

static const char *const element_symbols[STEM_MAX_Z + 1] = {
    "?",  "H",  "He", "Li", "Be", "B",  "C",  "N",  "O",  "F",  "Ne", "Na", "Mg", "Al", "Si", "P",  "S",  "Cl",
    "Ar", "K",  "Ca", "Sc", "Ti", "V",  "Cr", "Mn", "Fe", "Co", "Ni", "Cu", "Zn", "Ga", "Ge", "As", "Se", "Br",
    "Kr", "Rb", "Sr", "Y",  "Zr", "Nb", "Mo", "Tc", "Ru", "Rh", "Pd", "Ag", "Cd", "In", "Sn", "Sb", "Te", "I",
    "Xe", "Cs", "Ba", "La", "Ce", "Pr", "Nd", "Pm", "Sm", "Eu", "Gd", "Tb", "Dy", "Ho", "Er", "Tm", "Yb", "Lu",
    "Hf", "Ta", "W",  "Re", "Os", "Ir", "Pt", "Au", "Hg", "Tl", "Pb", "Bi", "Po", "At", "Rn", "Fr", "Ra", "Ac",
    "Th", "Pa", "U",  "Np", "Pu", "Am", "Cm", "Bk", "Cf", "Es", "Fm", "Md", "No", "Lr"};

static void add(stem_advice *a, const char *check, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void add(stem_advice *a, const char *check, const char *fmt, ...)
{
    if (a->n >= STEM_ADVICE_MAX) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->line[a->n], STEM_ADVICE_LEN, fmt, ap);
    va_end(ap);
    snprintf(a->check[a->n], sizeof a->check[a->n], "%s", check);
    a->n++;
}

/* x rounded down to 2 significant digits: a recommendation that is met when followed. */
static double round_down(double x)
{
    if (!(x > 0)) return x;
    double scale = pow(10, floor(log10(x)) - 1);
    return floor(x / scale * (1 + 1e-12)) * scale;
}

static double pixel_size(const stem_plan *plan) { return fmax(plan->dx, plan->dy); }

/* ------------------------------------------------------------ band limit */

/* A detector range to theta_outer needs the transmission function to theta_outer + alpha: a
 * probe ray at alpha scattered by theta_outer reaches it only through the potential's
 * frequencies up to their sum (docs/physics.md, "Sampling"). */
void stem_advice_band_limit(const stem_plan *plan, stem_advice *a)
{
    double band = plan->max_angle_mrad, alpha = plan->semiangle_mrad;
    int heavy = plan->heaviest_z >= STEM_ADVICE_HEAVY_Z;
    double margin = heavy ? STEM_ADVICE_HEAVY_BAND : 1;
    char why[160] = "";
    if (heavy)
        snprintf(why, sizeof why, " times %.2f for Z = %d, whose electrons scatter through several slices to beyond it",
                 margin, plan->heaviest_z);
    for (int i = 0; i < plan->n_images; i++) {
        const stem_image_range *r = &plan->images[i];
        double need = (r->outer_mrad + alpha) * margin;
        if (r->outer_mrad >= 1e8 || need <= band * 1.0001) continue; /* "max": the band is what was asked */
        const char *cut = r->outer_mrad > band ? "is cut at the band limit and misses what scatters beyond"
            : r->outer_mrad + alpha <= band    ? "misses what the heavy atoms scatter beyond the band"
                                               : "misses the probe's rays scattered beyond the band";
        add(a, "band_limit",
            "pixel %.4g A: the band limit %.0f mrad (2/3 of Nyquist) is below the %s range's %g mrad plus the probe's "
            "%g mrad%s: the range %g-%g mrad %s: use pixel_size <= %.3g A (band limit = lambda / (3 pixel) >= "
            "theta_outer + alpha%s)",
            pixel_size(plan), band, r->name, r->outer_mrad, alpha, why, r->inner_mrad, r->outer_mrad, cut,
            round_down(plan->lambda / (3 * need * 1e-3)), heavy ? ", times the margin" : "");
    }
}

/* ------------------------------------------------------------ slices */

/* The slice thickness the waves see (a cell thinner than one slice is one slice of its thickness). */
static double slice_depth(const stem_plan *plan) { return fmin(plan->dz, plan->cell[2]); }

void stem_advice_slice_depth_of_field(const stem_plan *plan, stem_advice *a)
{
    if (plan->algorithm == STEM_ALG_HRTEM) return; /* a plane wave has no focus */
    double dof = plan->lambda / (plan->alpha * plan->alpha), limit = STEM_ADVICE_DOF_FRACTION * dof;
    if (slice_depth(plan) <= limit * 1.0001) return;
    add(a, "slice_focus",
        "slices %.3g A: thicker than 1/8 of the probe's depth of field lambda/alpha^2 = %.3g A (%g mrad, %g keV); "
        "multislice puts each slice's potential on one plane while the probe's focus changes within it: use "
        "slice_thickness <= %.2g A",
        slice_depth(plan), dof, plan->semiangle_mrad, plan->energy_kev, round_down(limit));
}

/* The outermost angle a named detector asks for (the band limit for "max" and without any): as
 * asked, not as the band cuts it, so that a coarse plan hears about its slices on its first run. */
static double outer_angle(const stem_plan *plan, const char **what)
{
    double band = plan->max_angle_mrad, out = 0;
    *what = "the band limit";
    for (int i = 0; i < plan->n_images; i++) {
        double asked = plan->images[i].outer_mrad, o = asked >= 1e8 ? band : asked;
        if (o > out) out = o, *what = plan->images[i].name;
    }
    if (plan->seg_n && plan->seg_outer > out) out = plan->seg_outer, *what = "segmented detector";
    return out > 0 ? out : band;
}

void stem_advice_slice_angle(const stem_plan *plan, stem_advice *a)
{
    if (plan->algorithm == STEM_ALG_HRTEM) return;
    const char *what;
    double theta = outer_angle(plan, &what) * 1e-3, airy = STEM_ADVICE_WALK_AIRY * plan->lambda / plan->alpha;
    double walk = theta * slice_depth(plan);
    if (walk <= airy * 1.0001) return;
    add(a, "slice_angle",
        "slices %.3g A: electrons scattered to %.0f mrad (%s) move %.2g A sideways within one slice, more than the "
        "probe's Airy radius 0.61 lambda/alpha = %.2g A, but multislice moves them only between slices, so "
        "channelling and high-angle scattering are misplaced: use slice_thickness <= %.2g A",
        slice_depth(plan), theta * 1e3, what, walk, airy, round_down(airy / theta));
}

/* ------------------------------------------------------------ pixel size against the potential */

/* The 3D Fourier transform of one element's V(R), up to a constant factor: f_e(q). */
static double fe(const stem_atom_potential *p, double q)
{
    double f = 0, k2 = 4 * M_PI * M_PI * q * q;
    for (int i = 0; i < p->n; i++) {
        double A = p->amp[i], m = p->rate[i];
        if (p->kind[i] == STEM_TERM_YUKAWA)
            f += 4 * M_PI * A / (m * m + k2);
        else if (p->kind[i] == STEM_TERM_EXPONENTIAL)
            f += 8 * M_PI * A * m / ((m * m + k2) * (m * m + k2));
        else
            f += A * pow(M_PI / m, 1.5) * exp(-M_PI * M_PI * q * q / m);
    }
    return f;
}

/* The integral of f_e^2 q dq from 1e-4 to q (Simpson in ln q; f_e^2 q dq = f_e^2 q^2 d ln q). */
static double cross_section_to(const stem_atom_potential *p, double q)
{
    const double lo = log(1e-4);
    const int n = 4000; /* even */
    double hi = log(q), h = (hi - lo) / n, s = 0;
    if (!(hi > lo)) return 0;
    for (int i = 0; i <= n; i++) {
        double x = exp(lo + i * h), f = fe(p, x), v = f * f * x * x;
        s += v * (i == 0 || i == n ? 1 : i % 2 ? 4 : 2);
    }
    return s * h / 3;
}

double stem_advice_cross_section_within(const stem_atom_potential *p, double q)
{
    double total = cross_section_to(p, 1e3); /* beyond: f_e ~ 1/q^2, a share below 1e-6 */
    return total > 0 ? cross_section_to(p, q) / total : 1;
}

double stem_advice_cross_section_q(const stem_atom_potential *p, double fraction)
{
    double lo = log(1e-3), hi = log(1e3), total = cross_section_to(p, 1e3);
    for (int it = 0; it < 60; it++) {
        double mid = 0.5 * (lo + hi);
        if (cross_section_to(p, exp(mid)) < fraction * total)
            lo = mid;
        else
            hi = mid;
    }
    return exp(hi);
}

void stem_advice_pixel_potential(const stem_plan *plan, const int *present, const stem_atom_potential *potentials,
                                 stem_advice *a)
{
    int worst = 0;
    double q_need = 0;
    for (int z = 1; z <= STEM_MAX_Z; z++) {
        if (!present[z] || potentials[z].n == 0) continue;
        double q = stem_advice_cross_section_q(&potentials[z], STEM_ADVICE_CROSS_SECTION);
        if (q > q_need) q_need = q, worst = z;
    }
    if (!worst || plan->q_limit >= q_need) return;
    double held = stem_advice_cross_section_within(&potentials[worst], plan->q_limit);
    add(a, "pixel_potential",
        "pixel %.4g A: the band limit %.2f 1/A (%.0f mrad) holds %.2f%% of %s's elastic cross-section (the integral "
        "of |f_e(q)|^2 2 pi q dq, first Born); the rest, scattered by the atom's sharp core beyond the band, is "
        "lost to every detector (heavy atoms need the finest pixels): use pixel_size <= %.2g A (%.0f%% within the "
        "band)",
        pixel_size(plan), plan->q_limit, plan->max_angle_mrad, 100 * held, element_symbols[worst],
        round_down(1 / (3 * q_need)), 100 * STEM_ADVICE_CROSS_SECTION);
}

/* ------------------------------------------------------------ focal points */

void stem_advice_focal_points(const stem_plan *plan, stem_advice *a)
{
    if (!(plan->opt.focal_spread > 0)) return;
    double k = stem_focal_k_max(plan);
    int n = plan->opt.focal_points;
    double err = stem_focal_quadrature_error(n, k);
    if (err < STEM_FOCAL_TOLERANCE) return;
    char where[96];
    if (plan->algorithm == STEM_ALG_HRTEM)
        snprintf(where, sizeof where, "the image's angles (to the objective aperture or band limit)");
    else
        snprintf(where, sizeof where, "the %g mrad aperture", plan->semiangle_mrad);
    int need = stem_focal_points_needed(k, STEM_FOCAL_TOLERANCE);
    if (plan->focal_auto || need >= STEM_MAX_FOCAL_POINTS)
        add(a, "focal_points",
            "focal_points = %d (the most there are): the Gauss-Hermite average over the focal spread (sigma %.3g A) of "
            "the defocus phase factors across %s at %g keV is still off by up to %.1e: the images carry that error; "
            "a smaller focal_spread or aperture needs fewer points",
            n, plan->opt.focal_spread, where, plan->energy_kev, err);
    else
        add(a, "focal_points",
            "focal_points = %d: the Gauss-Hermite average over the focal spread (sigma %.3g A) of the defocus phase "
            "factors across %s at %g keV is off by up to %.1e (above 1e-3), and so may the images be: use "
            "focal_points = auto (%d points here)",
            n, plan->opt.focal_spread, where, plan->energy_kev, err, need);
}

/* ------------------------------------------------------------ PRISM window */

/* |psi|^2 of the plan's probe (entrance, propagated through `depth` of vacuum) on an
 * m x m grid of side box, centred at box/2; returns the intensities (malloc'd) or NULL. */
static double *probe_image(const stem_plan *plan, double depth, double box, int m)
{
    stem_plan p = *plan; /* the probe's optics on the window's grid (read only) */
    p.nx = p.ny = m;
    p.cell[0] = p.cell[1] = box;
    size_t grid = (size_t)m * m;
    stem_complex *w = stem_fft_alloc(grid, "advice probe");
    double *out = malloc(sizeof(double) * grid);
    stem_fft fft = {0};
    if (!w || !out || stem_fft_create(&fft, m, m, 1, w, 0) != STEM_OK) {
        stem_fft_free(w);
        free(out);
        return NULL;
    }
    for (int j = 0; j < m; j++) {
        double qy = stem_fft_index(j, m) / box;
        for (int i = 0; i < m; i++) {
            double qx = stem_fft_index(i, m) / box, fresnel = -M_PI * plan->lambda * (qx * qx + qy * qy) * depth;
            stem_complex c = stem_probe_coefficient(&p, qx, qy, box / 2, box / 2);
            w[(size_t)j * m + i] = c * (stem_complex)(cos(fresnel) + I * sin(fresnel));
        }
    }
    stem_fft_inverse(&fft, w);
    for (size_t k = 0; k < grid; k++)
        out[k] = (double)crealf(w[k]) * crealf(w[k]) + (double)cimagf(w[k]) * cimagf(w[k]);
    stem_fft_destroy(&fft);
    stem_fft_free(w);
    return out;
}

/* The share of an image's intensity outside the centred wx x wy window. */
static double outside(const double *img, int m, double box, double wx, double wy)
{
    double in = 0, all = 0, d = box / m;
    for (int j = 0; j < m; j++)
        for (int i = 0; i < m; i++) {
            double v = img[(size_t)j * m + i];
            all += v;
            if (fabs(i * d - box / 2) < wx / 2 && fabs(j * d - box / 2) < wy / 2) in += v;
        }
    return all > 0 ? 1 - in / all : 0;
}

/* A box six times the window (the tails beyond wrap into it only weakly; windows up to
 * three times as large can be measured), sampled finely enough for the aperture's
 * farthest direction (at most 2048^2). */
#define WINDOW_SCALES 3.0
static void probe_grid(const stem_plan *plan, double wx, double wy, double *box, int *m)
{
    double q_far = hypot(plan->aperture_q[0], plan->aperture_q[1]) + plan->alpha / plan->lambda;
    *box = 2 * WINDOW_SCALES * fmax(wx, wy);
    if (2.5 * *box * q_far > 2048) *box = 2048 / (2.5 * q_far);
    *m = stem_fft_good_size((int)ceil(2.5 * *box * q_far));
}

double stem_advice_probe_outside(const stem_plan *plan, double extra_defocus, double wx, double wy)
{
    double box;
    int m;
    probe_grid(plan, wx, wy, &box, &m);
    double *img = probe_image(plan, extra_defocus, box, m);
    if (!img) return -1;
    double f = outside(img, m, box, wx, wy);
    free(img);
    return f;
}

void stem_advice_prism_window(const stem_plan *plan, stem_advice *a)
{
    if (plan->algorithm != STEM_ALG_PRISM || (plan->fx == 1 && plan->fy == 1)) return;
    double wx = plan->cell[0] / plan->fx, wy = plan->cell[1] / plan->fy, box;
    int m;
    probe_grid(plan, wx, wy, &box, &m);
    /* the entrance's probe and the exit's (spread over the thickness): the window holds both */
    double *img[2] = {probe_image(plan, 0, box, m), probe_image(plan, plan->cell[2], box, m)};
    if (img[0] && img[1]) {
        double leak[2] = {outside(img[0], m, box, wx, wy), outside(img[1], m, box, wx, wy)};
        int at = leak[1] > leak[0];
        if (leak[at] > STEM_ADVICE_WINDOW_LEAK) {
            double s = 1; /* the smallest enlargement of the window that holds 99% */
            while (s < WINDOW_SCALES && outside(img[at], m, box, s * wx, s * wy) > STEM_ADVICE_WINDOW_LEAK) s += 0.05;
            int gx = (int)floor(plan->fx / s), gy = (int)floor(plan->fy / s);
            char fix[160];
            if (gx <= 1 && gy <= 1)
                snprintf(fix, sizeof fix,
                         "use interpolation 1 (multislice's accuracy) or a larger cell (tile_x, tile_y)");
            else
                snprintf(fix, sizeof fix, "use interpolation_x <= %d, interpolation_y <= %d%s", gx < 1 ? 1 : gx,
                         gy < 1 ? 1 : gy, s >= WINDOW_SCALES ? " or smaller" : "");
            add(a, "prism_window",
                "interpolation %d x %d: %.1f%% of the probe's intensity (in vacuum, at the %s) lies outside its "
                "%.3g x %.3g A PRISM window (cell / f), where PRISM cuts it off, so every detector loses about as "
                "much: "
                "%s",
                plan->fx, plan->fy, 100 * leak[at], at ? "exit surface" : "entrance surface", wx, wy, fix);
        }
    }
    free(img[0]);
    free(img[1]);
}

/* ------------------------------------------------------------ source size on the scan */

/* [probe] source_size blurs the images on the scan's own grid (coherence.c): exact only where
 * that grid samples the image, whose band reaches 2 alpha / lambda (the aperture's
 * autocorrelation): a step up to lambda / (4 alpha). Coarser, the blur is that of an aliased
 * image (in a test: 8% off at 0.45 A, 138% of the contrast at 0.68 A, where lambda / (4 alpha)
 * = 0.25 A). */
void stem_advice_source_scan(const stem_plan *plan, stem_advice *a)
{
    if (!(plan->opt.source_size > 0) || plan->positions || stem_plan_single_wave(plan)) return;
    double limit = STEM_ADVICE_SCAN_NYQUIST * plan->lambda / plan->alpha;
    if (plan->scan_step <= limit * 1.0001) return;
    add(a, "source_scan",
        "source_size %g A on a %.3g A scan: the blur is applied to the images on the scan's grid, which samples "
        "them (band 2 alpha / lambda) only with a step up to lambda / (4 alpha) = %.3g A; on a coarser scan the "
        "blurred image is that of an aliased one: use [scan] step <= %.2g A (and bin the result if a coarser image "
        "is wanted)",
        plan->opt.source_size, plan->scan_step, limit, round_down(limit));
}

/* ------------------------------------------------------------ all */

void stem_advice_plan(const stem_plan *plan, const stem_atoms *atoms, const stem_atom_potential *potentials,
                      stem_advice *a)
{
    a->n = 0;
    stem_advice_band_limit(plan, a);
    stem_advice_slice_depth_of_field(plan, a);
    stem_advice_slice_angle(plan, a);
    if (atoms && potentials) {
        int present[STEM_MAX_Z + 1] = {0};
        for (long i = 0; i < atoms->n; i++)
            if (atoms->Z[i] >= 1 && atoms->Z[i] <= STEM_MAX_Z) present[atoms->Z[i]] = 1;
        stem_advice_pixel_potential(plan, present, potentials, a);
    }
    stem_advice_focal_points(plan, a);
    stem_advice_prism_window(plan, a);
    stem_advice_source_scan(plan, a);
}

void stem_advice_print(const stem_advice *a, FILE *out)
{
    if (a->n == 0) {
        fprintf(out,
                "advice: none (band limit, slices, pixel size, focal points, PRISM window and source size pass the "
                "checks of "
                "docs/accuracy.md, Convergence advice)\n");
        return;
    }
    fprintf(out, "advice (docs/accuracy.md: How accurate is my simulation?):\n");
    for (int i = 0; i < a->n; i++) fprintf(out, "  - %s\n", a->line[i]);
}

char *stem_advice_to_text(const stem_advice *a)
{
    char *buf = NULL;
    size_t size = 0;
    FILE *m = open_memstream(&buf, &size);
    if (!m) return NULL;
    for (int i = 0; i < a->n; i++) fprintf(m, "%s\n", a->line[i]);
    fclose(m);
    return buf;
}

/* ------------------------------------------------------------ error bars */

/* Decimals that show the error with one significant digit (two when it starts with 1). */
static int error_decimals(double se)
{
    int d = -(int)floor(log10(se));
    double lead = se * pow(10, d); /* in [1, 10) */
    if (lead < 1.95) d++;
    return d < 0 ? 0 : d > 15 ? 15 : d;
}

static void format_percent(double pct, char *out, size_t len)
{
    if (pct >= 0.995)
        snprintf(out, len, "%.1f%%", pct); /* 1.2% */
    else
        snprintf(out, len, "%.2g%%", pct); /* 0.6%, 0.15% */
}

int stem_advice_error_line(const char *name, double inner_mrad, double outer_mrad, double mean, double std_error,
                           int n_configs, char *out, size_t len)
{
    char range[64], values[96], pct[32] = "", more[96] = "";
    if (outer_mrad >= 1e8)
        snprintf(range, sizeof range, "%g-max mrad", inner_mrad);
    else
        snprintf(range, sizeof range, "%g-%g mrad", inner_mrad, outer_mrad);
    if (n_configs <= 1)
        return snprintf(out, len,
                        "%s %s: %.4g from 1 configuration: no error can be estimated; run >= 8 for an error bar", name,
                        range, mean);
    if (std_error > 0) {
        int d = error_decimals(std_error);
        snprintf(values, sizeof values, "%.*f +- %.*f", d, mean, d, std_error);
    } else {
        snprintf(values, sizeof values, "%.4g +- 0", mean);
    }
    if (mean != 0) {
        double rel = std_error / fabs(mean), target = fmax(rel / 2, 0.005);
        char p[24];
        format_percent(100 * rel, p, sizeof p);
        snprintf(pct, sizeof pct, " (%s)", p);
        if (rel > 0.005) {
            /* the error falls as 1/sqrt(n): n (rel/target)^2 configurations reach target */
            long need =
                rel / 2 >= 0.005 ? 4L * n_configs : (long)ceil(n_configs * (rel / target) * (rel / target) - 1e-9);
            format_percent(100 * target, p, sizeof p);
            snprintf(more, sizeof more, "; %ld would bring it to %s", need, p);
        }
    }
    return snprintf(out, len, "%s %s: %s%s over %d configurations%s", name, range, values, pct, n_configs, more);
}
