/* The aberration coefficients of the probe (and of any later objective lens), in
 * Krivanek's polar notation as abTEM uses it:
 *   chi(theta, phi) = 2 pi / lambda * sum C_nm theta^(n+1) / (n+1) cos(m (phi - phi_nm)),
 * C_nm in Angstrom, phi_nm in radians in the plan (degrees in config.ini). */
#ifndef STEM_ABERRATIONS_H
#define STEM_ABERRATIONS_H

enum {
    STEM_C10,
    STEM_C12,
    STEM_C21,
    STEM_C23,
    STEM_C30,
    STEM_C32,
    STEM_C34,
    STEM_C41,
    STEM_C43,
    STEM_C45,
    STEM_C50,
    STEM_C52,
    STEM_C54,
    STEM_C56,
    STEM_N_ABERR
};

typedef struct {
    int n, m;
} stem_aberration_order;

/* n and m of each coefficient, in the order of the enum. */
static const stem_aberration_order stem_aberration_orders[STEM_N_ABERR] = {
    {1, 0}, {1, 2}, {2, 1}, {2, 3}, {3, 0}, {3, 2}, {3, 4}, {4, 1}, {4, 3}, {4, 5}, {5, 0}, {5, 2}, {5, 4}, {5, 6}};

#endif
