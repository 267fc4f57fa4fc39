/* Kirkland's projected potential (eq. C.19) evaluated independently of
 * src/physics.c, for the tests: constants written out here (CODATA 2018) and
 * K0 by numerical quadrature instead of stem_bessel_k0. */
#ifndef STEM_TEST_KIRKLAND_REF_H
#define STEM_TEST_KIRKLAND_REF_H

#include <math.h>

#include "physics.h"

static const double ref_a0 = 0.529177210903;  /* Bohr radius, Angstrom */
static const double ref_e_va = 14.3996454784; /* e^2/(4 pi eps0) in eV Angstrom -> e in V Angstrom */

/* K0(x) = int_0^inf exp(-x cosh t) dt (Abramowitz & Stegun 9.6.24) by the
 * trapezoid rule with step h, cut where x cosh t > 60. The integrand decays
 * double-exponentially, so the rule converges geometrically: h = 1e-3 gives
 * ~1e-14 relative accuracy, h = 0.01 ~1e-12. */
static inline double ref_k0_quadrature(double x, double h)
{
    double tmax = acosh(60.0 / x + 1.0), sum = 0.5 * exp(-x);
    int n = (int)ceil(tmax / h);
    for (int i = 1; i <= n; i++) sum += exp(-x * cosh(i * h));
    return sum * h;
}

/* v_z(r) in V Angstrom with K0 from ref_k0_quadrature(., h). */
static inline double ref_projected_potential(const stem_kirkland *p, double r, double h)
{
    double v = 0;
    for (int i = 0; i < 3; i++) {
        v += 4 * M_PI * M_PI * ref_a0 * ref_e_va * p->a[i] * ref_k0_quadrature(2 * M_PI * r * sqrt(p->b[i]), h);
        v += 2 * M_PI * M_PI * ref_a0 * ref_e_va * p->c[i] / p->d[i] * exp(-M_PI * M_PI * r * r / p->d[i]);
    }
    return v;
}

#endif
