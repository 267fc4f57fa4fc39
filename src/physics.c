/* Wavelength, interaction constant, the scattering-factor tables (Kirkland, Lobato) and
 * the atomic potentials and their projections. */
#include "physics.h"

#include "../io/data_files.h"
#include "../io/input_file.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stem.h"

static const double electron_rest_kev = 510.99895;  /* m0 c^2 */
static const double hc_kev_angstrom = 12.398419843; /* h c */
static const double bohr_angstrom = 0.529177210903; /* a0 */
static const double e_volt_angstrom = 14.3996454784; /* e / (4 pi eps0) */

double stem_wavelength(double energy_kev)
{
    return hc_kev_angstrom / sqrt(energy_kev * (2 * electron_rest_kev + energy_kev));
}

double stem_interaction_constant(double energy_kev)
{
    double volts = energy_kev * 1e3;
    return 2 * M_PI / (stem_wavelength(energy_kev) * volts) * (electron_rest_kev + energy_kev) /
           (2 * electron_rest_kev + energy_kev);
}

double stem_chromatic_focal_spread(double cc_angstrom, double fwhm_ev, double energy_kev)
{
    double sigma_ev = fwhm_ev / (2 * sqrt(2 * log(2)));
    double e_star_ev = energy_kev * 1e3 * (1 + energy_kev / (2 * electron_rest_kev)) / (1 + energy_kev / electron_rest_kev);
    return cc_angstrom * sigma_ev / e_star_ev;
}

const char *stem_kirkland_default_path(void) { return stem_data_file("kirkland_params.txt", "STEMSIM_KIRKLAND"); }

const char *stem_lobato_default_path(void) { return stem_data_file("lobato_params.txt", "STEMSIM_LOBATO"); }

const char *stem_parametrisation_path(stem_parametrisation which)
{
    return which == STEM_PARAM_LOBATO ? stem_lobato_default_path() : stem_kirkland_default_path();
}

/* Plausible ranges of the tables' coefficients: the published tables stay far inside
 * them (Kirkland: amplitudes 5e-7..5.5, widths 0.0076..3.8e4 Angstrom^-2; Lobato:
 * amplitudes -339..323, widths 4e-5..23 Angstrom^2), so a value outside is a typo or a
 * corrupted file, not physics. The resulting f_e(0) (Angstrom) must be positive and at
 * most 100 (the tables give 0.42 for H to 20.6 for the heaviest elements). */
#define KIRKLAND_MAX_AMP 1e2
#define KIRKLAND_MIN_WIDTH 1e-4
#define KIRKLAND_MAX_WIDTH 1e6
#define LOBATO_MAX_AMP 1e4
#define LOBATO_MIN_WIDTH 1e-7
#define LOBATO_MAX_WIDTH 1e4
#define MAX_FE0 100.0

/* why <- the first coefficient outside [lo, hi] (name, index and value), if any. */
static int coefficient_bad(const char *name, int i, double v, double lo, double hi, char *why, size_t n)
{
    if (!isfinite(v)) return snprintf(why, n, "%s%d = %g is not a finite number", name, i + 1, v), 1;
    if (v >= lo && v <= hi) return 0;
    if (lo > 0 && v <= 0) /* a width: the potential divides by it */
        return snprintf(why, n, "width %s%d = %g is not positive", name, i + 1, v), 1;
    return snprintf(why, n, "%s%d = %g is outside the plausible range [%g, %g]", name, i + 1, v, lo, hi), 1;
}

/* f_e(0) in Angstrom, the scattering factor at zero angle, outside (0, MAX_FE0]. */
static int fe0_bad(double fe0, char *why, size_t n)
{
    if (fe0 > 0 && fe0 <= MAX_FE0) return 0;
    if (fe0 == 0) return snprintf(why, n, "all amplitudes are zero (element missing)"), 1;
    return snprintf(why, n, "its scattering factor at zero angle f_e(0) = %g Angstrom is outside (0, %g]", fe0, MAX_FE0), 1;
}

/* A row the potential formula cannot use: NaN or infinite values, widths b, d
 * outside their plausible range (<= 0 divides by zero), amplitudes beyond theirs,
 * or no terms at all (a missing element). */
static int kirkland_row_bad(const stem_kirkland *k, char *why, size_t n)
{
    const double A = KIRKLAND_MAX_AMP, W0 = KIRKLAND_MIN_WIDTH, W1 = KIRKLAND_MAX_WIDTH;
    double fe0 = 0;
    for (int i = 0; i < 3; i++) {
        if (coefficient_bad("a", i, k->a[i], -A, A, why, n) || coefficient_bad("b", i, k->b[i], W0, W1, why, n) ||
            coefficient_bad("c", i, k->c[i], -A, A, why, n) || coefficient_bad("d", i, k->d[i], W0, W1, why, n))
            return 1;
        fe0 += k->a[i] / k->b[i] + k->c[i]; /* f_e(q) = sum a / (q^2 + b) + c exp(-d q^2) */
    }
    return fe0_bad(fe0, why, n);
}

int stem_kirkland_load(const char *path, stem_kirkland table[STEM_MAX_Z + 1])
{
    FILE *f;
    STEM_TRY(stem_input_open(path, "Kirkland parameter table (set STEMSIM_KIRKLAND)", STEM_ERR_INPUT, &f));
    char line[1024];
    int z = 0, lineno = 0;
    memset(table, 0, sizeof(stem_kirkland) * (STEM_MAX_Z + 1));
    while (z < STEM_MAX_Z && fgets(line, sizeof line, f)) {
        lineno++;
        if (line[0] == '#' || line[strspn(line, " \t\r\n")] == 0) continue;
        double v[12];
        char tail[2];
        if (sscanf(line, "%lf %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf %1s", &v[0], &v[1], &v[2], &v[3], &v[4],
                   &v[5], &v[6], &v[7], &v[8], &v[9], &v[10], &v[11], tail) != 12) {
            fclose(f);
            return STEM_FAIL(STEM_ERR_INPUT, "%s:%d: expected 12 numbers", path, lineno);
        }
        z++;
        for (int i = 0; i < 3; i++) {
            table[z].a[i] = v[2 * i];
            table[z].b[i] = v[2 * i + 1];
            table[z].c[i] = v[6 + 2 * i];
            table[z].d[i] = v[6 + 2 * i + 1];
        }
        char why[160];
        if (kirkland_row_bad(&table[z], why, sizeof why)) {
            fclose(f);
            return STEM_FAIL(STEM_ERR_INPUT, "%s:%d: parameters of element Z = %d are unusable: %s", path, lineno, z, why);
        }
    }
    fclose(f);
    if (z != STEM_MAX_Z)
        return STEM_FAIL(STEM_ERR_INPUT, "%s: found %d elements, expected %d (Z = 1..%d, one line each)", path, z,
                         STEM_MAX_Z, STEM_MAX_Z);
    return STEM_OK;
}

/* a0 e: the constant in front of every potential (V Angstrom^2). */
static double bohr_e(void) { return bohr_angstrom * e_volt_angstrom; }

static void add_term(stem_atom_potential *p, int kind, double amp, double rate)
{
    if (amp == 0) return;
    p->kind[p->n] = kind, p->amp[p->n] = amp, p->rate[p->n] = rate;
    p->n++;
}

/* Kirkland eq. C.15: V = 2 pi^2 a0 e sum a_i exp(-2 pi R sqrt(b_i)) / R
 *                      + 2 pi^(5/2) a0 e sum c_i d_i^(-3/2) exp(-pi^2 R^2 / d_i). */
void stem_atom_potential_from_kirkland(const stem_kirkland *k, stem_atom_potential *out)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; i < 3; i++) {
        add_term(out, STEM_TERM_YUKAWA, 2 * M_PI * M_PI * bohr_e() * k->a[i], 2 * M_PI * sqrt(k->b[i]));
        add_term(out, STEM_TERM_GAUSSIAN, 2 * pow(M_PI, 2.5) * bohr_e() * k->c[i] * pow(k->d[i], -1.5),
                 M_PI * M_PI / k->d[i]);
    }
}

/* Lobato: f_e(g) = sum a_i (2 + b_i g^2) / (1 + b_i g^2)^2 = sum a_i [1/(1 + b_i g^2) + 1/(1 + b_i g^2)^2],
 * and V = 2 pi a0 e times f_e's 3D Fourier transform: the first part gives a Yukawa
 * (pi / b) exp(-m R) / R, the second an exponential (pi^2 / b^(3/2)) exp(-m R), m = 2 pi / sqrt(b). */
static void atom_potential_from_lobato(const double a[5], const double b[5], stem_atom_potential *out)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; i < 5; i++) {
        double m = 2 * M_PI / sqrt(b[i]);
        add_term(out, STEM_TERM_YUKAWA, 2 * M_PI * M_PI * bohr_e() * a[i] / b[i], m);
        add_term(out, STEM_TERM_EXPONENTIAL, 2 * pow(M_PI, 3) * bohr_e() * a[i] / pow(b[i], 1.5), m);
    }
}

static int lobato_row(const char *path, int lineno, int z, const char *line, stem_atom_potential *out)
{
    double a[5], b[5], fe0 = 0;
    char tail[2], why[160];
    if (sscanf(line, "%lf %lf %lf %lf %lf %lf %lf %lf %lf %lf %1s", &a[0], &b[0], &a[1], &b[1], &a[2], &b[2], &a[3],
               &b[3], &a[4], &b[4], tail) != 10)
        return STEM_FAIL(STEM_ERR_INPUT, "%s:%d: expected 10 numbers (a1 b1 ... a5 b5)", path, lineno);
    int bad = 0;
    for (int i = 0; i < 5 && !bad; i++) {
        bad = coefficient_bad("a", i, a[i], -LOBATO_MAX_AMP, LOBATO_MAX_AMP, why, sizeof why) ||
              coefficient_bad("b", i, b[i], LOBATO_MIN_WIDTH, LOBATO_MAX_WIDTH, why, sizeof why);
        fe0 += 2 * a[i]; /* f_e(0) = sum a_i (2 + 0) / 1 */
    }
    if (bad || fe0_bad(fe0, why, sizeof why))
        return STEM_FAIL(STEM_ERR_INPUT, "%s:%d: parameters of element Z = %d are unusable: %s", path, lineno, z, why);
    atom_potential_from_lobato(a, b, out);
    return STEM_OK;
}

static int lobato_load(const char *path, stem_atom_potential table[STEM_MAX_Z + 1])
{
    FILE *f;
    STEM_TRY(stem_input_open(path, "Lobato parameter table (set STEMSIM_LOBATO)", STEM_ERR_INPUT, &f));
    char line[1024];
    int z = 0, lineno = 0, err = STEM_OK;
    while (!err && z < STEM_MAX_Z && fgets(line, sizeof line, f)) {
        lineno++;
        char *comment = strchr(line, '#'); /* rows end with the element's symbol as a comment */
        if (comment) *comment = 0;
        if (line[strspn(line, " \t\r\n")] == 0) continue;
        z++;
        err = lobato_row(path, lineno, z, line, &table[z]);
    }
    fclose(f);
    if (!err && z != STEM_MAX_Z)
        return STEM_FAIL(STEM_ERR_INPUT, "%s: found %d elements, expected %d (Z = 1..%d, one line each)", path, z,
                         STEM_MAX_Z, STEM_MAX_Z);
    return err;
}

int stem_atom_potentials_load(stem_parametrisation which, const char *path, stem_atom_potential table[STEM_MAX_Z + 1])
{
    memset(table, 0, sizeof(stem_atom_potential) * (STEM_MAX_Z + 1));
    if (which == STEM_PARAM_LOBATO) return lobato_load(path, table);
    stem_kirkland *k = stem_calloc(STEM_MAX_Z + 1, sizeof *k, "Kirkland table");
    if (!k) return STEM_ERR_MEMORY;
    int err = stem_kirkland_load(path, k);
    for (int z = 1; !err && z <= STEM_MAX_Z; z++) stem_atom_potential_from_kirkland(&k[z], &table[z]);
    free(k);
    return err;
}

double stem_atom_potential_at(const stem_atom_potential *p, double R)
{
    double v = 0;
    for (int i = 0; i < p->n; i++) {
        double m = p->rate[i];
        v += p->amp[i] * (p->kind[i] == STEM_TERM_YUKAWA       ? exp(-m * R) / R
                          : p->kind[i] == STEM_TERM_EXPONENTIAL ? exp(-m * R)
                                                                : exp(-m * R * R));
    }
    return v;
}

/* I0 and K0 from the polynomial fits of Abramowitz & Stegun 9.8.1, 9.8.5, 9.8.6. */
static double bessel_i0_small(double x)
{
    double t = (x / 3.75) * (x / 3.75);
    return 1 + t * (3.5156229 + t * (3.0899424 + t * (1.2067492 + t * (0.2659732 + t * (0.0360768 + t * 0.0045813)))));
}

double stem_bessel_k0(double x)
{
    if (x <= 2) {
        double t = x * x / 4;
        return -log(x / 2) * bessel_i0_small(x) - 0.57721566 +
               t * (0.42278420 + t * (0.23069756 + t * (0.03488590 + t * (0.00262698 + t * (0.00010750 + t * 0.0000074)))));
    }
    double t = 2 / x;
    return exp(-x) / sqrt(x) *
           (1.25331414 + t * (-0.07832358 + t * (0.02189568 + t * (-0.01062446 + t * (0.00587872 + t * (-0.00251540 + t * 0.00053208))))));
}

/* I1 and K1 from Abramowitz & Stegun 9.8.3, 9.8.7, 9.8.8. */
static double bessel_i1_small(double x)
{
    double t = (x / 3.75) * (x / 3.75);
    return x * (0.5 + t * (0.87890594 + t * (0.51498869 + t * (0.15084934 + t * (0.02658733 + t * (0.00301532 + t * 0.00032411))))));
}

double stem_bessel_k1(double x)
{
    if (x <= 2) {
        double t = x * x / 4;
        return (x * log(x / 2) * bessel_i1_small(x) + 1 +
                t * (0.15443144 + t * (-0.67278579 + t * (-0.18156897 + t * (-0.01919402 + t * (-0.00110404 + t * -0.00004686)))))) / x;
    }
    double t = 2 / x;
    return exp(-x) / sqrt(x) *
           (1.25331414 + t * (0.23498619 + t * (-0.03655620 + t * (0.01504268 + t * (-0.00780353 + t * (0.00325614 + t * -0.00068245))))));
}

/* Over all z: a Yukawa gives 2 amp K0(m r), an exponential 2 amp r K1(m r) (-> 2 amp / m at
 * r = 0), a Gaussian amp sqrt(pi / m) exp(-m r^2). */
double stem_projected_potential(const stem_atom_potential *p, double r)
{
    double v = 0;
    for (int i = 0; i < p->n; i++) {
        double m = p->rate[i], x = m * r;
        if (p->kind[i] == STEM_TERM_YUKAWA) v += 2 * p->amp[i] * stem_bessel_k0(x);
        else if (p->kind[i] == STEM_TERM_EXPONENTIAL) v += 2 * p->amp[i] * (x > 0 ? r * stem_bessel_k1(x) : 1 / m);
        else v += p->amp[i] * sqrt(M_PI / m) * exp(-m * r * r);
    }
    return v;
}

/* 16-point Gauss-Legendre on [-1, 1]: the positive nodes and their weights (symmetric). */
static const double gl_x[8] = {0.0950125098376374, 0.2816035507792589, 0.4580167776572274, 0.6178762444026438,
                               0.7554044083550030, 0.8656312023878318, 0.9445750230732326, 0.9894009349916499};
static const double gl_w[8] = {0.1894506104550685, 0.1826034150449236, 0.1691565193950025, 0.1495959888165767,
                               0.1246289712555339, 0.0951585116824928, 0.0622535239386479, 0.0271524594117541};

/* With z' = r sinh t, dz' = r cosh t dt: a Yukawa's integrand becomes amp exp(-m r cosh t)
 * and an exponential's amp r cosh t exp(-m r cosh t), both smooth and bounded in t. */
static double non_gaussian_in_t(const stem_atom_potential *p, double r, double t)
{
    double c = cosh(t), v = 0;
    for (int i = 0; i < p->n; i++) {
        if (p->kind[i] == STEM_TERM_GAUSSIAN) continue;
        double e = exp(-p->rate[i] * r * c);
        v += p->amp[i] * (p->kind[i] == STEM_TERM_YUKAWA ? e : r * c * e);
    }
    return v;
}

static double gauss_legendre(const stem_atom_potential *p, double r, double a, double b)
{
    double h = (b - a) / 2, mid = (a + b) / 2, sum = 0;
    for (int g = 0; g < 8; g++)
        sum += gl_w[g] * (non_gaussian_in_t(p, r, mid - h * gl_x[g]) + non_gaussian_in_t(p, r, mid + h * gl_x[g]));
    return h * sum;
}

void stem_half_projections(const stem_atom_potential *p, double r, const double *z, int n, double *out)
{
    double sum = 0, t0 = 0;
    for (int k = 0; k < n; k++) {
        /* cumulative over the intervals of t between successive depths, each cut into
         * pieces no wider than 0.5 (the integrand varies on a scale of ~1 in t) */
        double t1 = asinh(z[k] / r);
        int pieces = (int)ceil((t1 - t0) / 0.5);
        for (int q = 0; q < pieces; q++)
            sum += gauss_legendre(p, r, t0 + (t1 - t0) * q / pieces, t0 + (t1 - t0) * (q + 1) / pieces);
        t0 = t1;
        double v = sum;
        for (int i = 0; i < p->n; i++)
            if (p->kind[i] == STEM_TERM_GAUSSIAN) {
                double m = p->rate[i];
                v += p->amp[i] * exp(-m * r * r) * 0.5 * sqrt(M_PI / m) * erf(sqrt(m) * z[k]);
            }
        out[k] = v;
    }
}
