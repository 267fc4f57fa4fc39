/* Relativistic electron optics constants and the atomic potentials (Kirkland, Lobato). */
#ifndef STEM_PHYSICS_H
#define STEM_PHYSICS_H

#define STEM_MAX_Z 103

/* Relativistic wavelength in Angstrom for a beam energy in keV. */
double stem_wavelength(double energy_kev);
/* Interaction constant sigma in rad / (V Angstrom). */
double stem_interaction_constant(double energy_kev);
/* Standard deviation of defocus (Angstrom) from chromatic aberration Cc (Angstrom) and an
 * energy spread of full width at half maximum fwhm_ev: Cc sigma_E / E*, with the
 * relativistic E* = E (1 + E / 2 E0) / (1 + E / E0) (Reimer). */
double stem_chromatic_focal_spread(double cc_angstrom, double fwhm_ev, double energy_kev);

typedef struct {
    double a[3], b[3], c[3], d[3]; /* Kirkland Lorentzian (a,b) and Gaussian (c,d) terms */
} stem_kirkland;

/* Which published scattering factors the potentials come from ([simulation] parametrisation). */
typedef enum { STEM_PARAM_KIRKLAND, STEM_PARAM_LOBATO } stem_parametrisation;

/* One element's electrostatic potential V(R) (volts, R in Angstrom) as a sum of radial
 * terms: Yukawa amp exp(-rate R) / R, exponential amp exp(-rate R), Gaussian
 * amp exp(-rate R^2). Both parametrisations are written this way, so the infinite and
 * the finite projections have one implementation each. */
enum { STEM_TERM_YUKAWA, STEM_TERM_EXPONENTIAL, STEM_TERM_GAUSSIAN };
#define STEM_MAX_TERMS 10
typedef struct {
    int n;
    int kind[STEM_MAX_TERMS];
    double amp[STEM_MAX_TERMS], rate[STEM_MAX_TERMS];
} stem_atom_potential;

/* Kirkland's 3 Lorentzians and 3 Gaussians in f_e(q) as terms of V(R) (Kirkland eq. C.15). */
void stem_atom_potential_from_kirkland(const stem_kirkland *k, stem_atom_potential *out);
/* Lobato's 5 terms a_i (2 + b_i g^2) / (1 + b_i g^2)^2 in f_e(g) as terms of V(R). */
void stem_atom_potential_from_lobato(const double a[5], const double b[5], stem_atom_potential *out);
/* V(R) in volts. */
double stem_atom_potential_at(const stem_atom_potential *p, double R);
/* The projected potential v_z(r) = int V(sqrt(r^2 + z^2)) dz over all z, in V Angstrom
 * (closed forms: K0 for Yukawa terms, r K1 for exponential ones). */
double stem_projected_potential(const stem_atom_potential *p, double r);
/* The half-projection int_0^z V(sqrt(r^2 + z'^2)) dz' at each of n increasing depths
 * z[0..n) >= 0 (V Angstrom): Gaussian terms in closed form, the others by Gauss-Legendre
 * quadrature in t = asinh(z'/r), where the integrand is smooth (finite projection). */
void stem_half_projections(const stem_atom_potential *p, double r, const double *z, int n, double *out);
/* Modified Bessel functions K0 and K1 (Abramowitz & Stegun 9.8.5 to 9.8.8). */
double stem_bessel_k0(double x);
double stem_bessel_k1(double x);

#endif
