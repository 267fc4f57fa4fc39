/* Wavelength, interaction constant, the atomic potentials from the parametrisations'
 * coefficients (the tables are read by io/scattering_tables.c) and their projections. */
#include "physics.h"

#include <math.h>
#include <string.h>

#include "stem.h"

static const double electron_rest_kev = 510.99895;   /* m0 c^2 */
static const double hc_kev_angstrom = 12.398419843;  /* h c */
static const double bohr_angstrom = 0.529177210903;  /* a0 */
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
    double e_star_ev =
        energy_kev * 1e3 * (1 + energy_kev / (2 * electron_rest_kev)) / (1 + energy_kev / electron_rest_kev);
    return cc_angstrom * sigma_ev / e_star_ev;
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
void stem_atom_potential_from_lobato(const double a[5], const double b[5], stem_atom_potential *out)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; i < 5; i++) {
        double m = 2 * M_PI / sqrt(b[i]);
        add_term(out, STEM_TERM_YUKAWA, 2 * M_PI * M_PI * bohr_e() * a[i] / b[i], m);
        add_term(out, STEM_TERM_EXPONENTIAL, 2 * pow(M_PI, 3) * bohr_e() * a[i] / pow(b[i], 1.5), m);
    }
}

double stem_atom_potential_at(const stem_atom_potential *p, double R)
{
    double v = 0;
    for (int i = 0; i < p->n; i++) {
        double m = p->rate[i];
        v += p->amp[i] *
            (p->kind[i] == STEM_TERM_YUKAWA            ? exp(-m * R) / R
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
            t *
            (0.42278420 + t * (0.23069756 + t * (0.03488590 + t * (0.00262698 + t * (0.00010750 + t * 0.0000074)))));
    }
    double t = 2 / x;
    return exp(-x) / sqrt(x) *
        (1.25331414 +
         t *
             (-0.07832358 +
              t * (0.02189568 + t * (-0.01062446 + t * (0.00587872 + t * (-0.00251540 + t * 0.00053208))))));
}

/* I1 and K1 from Abramowitz & Stegun 9.8.3, 9.8.7, 9.8.8. */
static double bessel_i1_small(double x)
{
    double t = (x / 3.75) * (x / 3.75);
    return x *
        (0.5 +
         t * (0.87890594 + t * (0.51498869 + t * (0.15084934 + t * (0.02658733 + t * (0.00301532 + t * 0.00032411))))));
}

double stem_bessel_k1(double x)
{
    if (x <= 2) {
        double t = x * x / 4;
        return (x * log(x / 2) * bessel_i1_small(x) + 1 +
                t *
                    (0.15443144 +
                     t * (-0.67278579 + t * (-0.18156897 + t * (-0.01919402 + t * (-0.00110404 + t * -0.00004686)))))) /
            x;
    }
    double t = 2 / x;
    return exp(-x) / sqrt(x) *
        (1.25331414 +
         t *
             (0.23498619 +
              t * (-0.03655620 + t * (0.01504268 + t * (-0.00780353 + t * (0.00325614 + t * -0.00068245))))));
}

/* Over all z: a Yukawa gives 2 amp K0(m r), an exponential 2 amp r K1(m r) (-> 2 amp / m at
 * r = 0), a Gaussian amp sqrt(pi / m) exp(-m r^2). */
double stem_projected_potential(const stem_atom_potential *p, double r)
{
    double v = 0;
    for (int i = 0; i < p->n; i++) {
        double m = p->rate[i], x = m * r;
        if (p->kind[i] == STEM_TERM_YUKAWA)
            v += 2 * p->amp[i] * stem_bessel_k0(x);
        else if (p->kind[i] == STEM_TERM_EXPONENTIAL)
            v += 2 * p->amp[i] * (x > 0 ? r * stem_bessel_k1(x) : 1 / m);
        else
            v += p->amp[i] * sqrt(M_PI / m) * exp(-m * r * r);
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
