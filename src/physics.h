/* Relativistic electron optics constants and the Kirkland parameterisation. */
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

/* Reads shared/data/kirkland_params.txt (or the file named by STEMSIM_KIRKLAND). */
int stem_kirkland_load(const char *path, stem_kirkland table[STEM_MAX_Z + 1]);
/* Default location of the table: $STEMSIM_KIRKLAND, else the installed data dir. */
const char *stem_kirkland_default_path(void);
/* Kirkland's projected potential v_z(r) in V Angstrom (eq. C.19). */
double stem_projected_potential(const stem_kirkland *p, double r);
/* Modified Bessel function K0 (Abramowitz & Stegun 9.8.5/9.8.6). */
double stem_bessel_k0(double x);

#endif
