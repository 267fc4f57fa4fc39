/* Wavelength, interaction constant, Kirkland scattering-factor table. */
#include "physics.h"

#include "../io/input_file.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stem.h"

#ifndef STEMSIM_DATA_DIR
#define STEMSIM_DATA_DIR "data"
#endif

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

const char *stem_kirkland_default_path(void)
{
    const char *env = getenv("STEMSIM_KIRKLAND");
    return env && env[0] ? env : STEMSIM_DATA_DIR "/kirkland_params.txt";
}

/* A row the potential formula cannot use: NaN or infinite values, widths
 * b, d <= 0 (division by zero), or no terms at all (a missing element). */
static int kirkland_row_bad(const stem_kirkland *k, char *why, size_t n)
{
    double any = 0;
    for (int i = 0; i < 3; i++) {
        const double v[4] = {k->a[i], k->b[i], k->c[i], k->d[i]};
        for (int j = 0; j < 4; j++)
            if (!isfinite(v[j])) return snprintf(why, n, "a value is not a finite number"), 1;
        if (!(k->b[i] > 0) || !(k->d[i] > 0))
            return snprintf(why, n, "width b%d or d%d is not positive", i + 1, i + 1), 1;
        any += fabs(k->a[i]) + fabs(k->c[i]);
    }
    if (any == 0) return snprintf(why, n, "all amplitudes are zero (element missing)"), 1;
    return 0;
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
        char why[96];
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

double stem_projected_potential(const stem_kirkland *p, double r)
{
    double ae = bohr_angstrom * e_volt_angstrom, v = 0;
    for (int i = 0; i < 3; i++) {
        v += 4 * M_PI * M_PI * ae * p->a[i] * stem_bessel_k0(2 * M_PI * r * sqrt(p->b[i]));
        v += 2 * M_PI * M_PI * ae * p->c[i] / p->d[i] * exp(-M_PI * M_PI * r * r / p->d[i]);
    }
    return v;
}
