/* Model geometry: tiling and the tilt-series rotations (src/atoms.c), checked
 * against rotation matrices written out here by hand. */
#include <math.h>

#include "atoms.h"
#include "check.h"
#include "config.h"
#include "../../io/config.h"

/* One atom at (x, y, z) in a cell; returns the prepared model. */
static void one_atom(stem_atoms *a, double cx, double cy, double cz, double x, double y, double z)
{
    a->cell[0] = cx;
    a->cell[1] = cy;
    a->cell[2] = cz;
    REQUIRE(stem_atoms_alloc(a, 1) == STEM_OK);
    a->Z[0] = 6;
    a->x[0] = x;
    a->y[0] = y;
    a->z[0] = z;
    a->occupancy[0] = 1;
    a->sigma[0] = 0.1;
}

static void test_tiling(void)
{
    stem_config cfg;
    stem_config_defaults(&cfg);
    cfg.tile_x = 3;
    cfg.tile_y = 2;
    cfg.tile_z = 4;
    stem_atoms a = {0};
    one_atom(&a, 2, 3, 5, 0.5, 1, 2);
    REQUIRE(stem_atoms_prepare(&a, &cfg) == STEM_OK);
    CHECK(a.n == 24);
    CHECK_CLOSE(a.cell[0], 6, 1e-12);
    CHECK_CLOSE(a.cell[1], 6, 1e-12);
    CHECK_CLOSE(a.cell[2], 20, 1e-12);
    double sx = 0, sy = 0, sz = 0;
    for (long i = 0; i < a.n; i++) sx += a.x[i], sy += a.y[i], sz += a.z[i];
    /* mean of 0.5 + {0,2,4}, 1 + {0,3}, 2 + {0,5,10,15} */
    CHECK_CLOSE(sx / a.n, 2.5, 1e-12);
    CHECK_CLOSE(sy / a.n, 2.5, 1e-12);
    CHECK_CLOSE(sz / a.n, 9.5, 1e-12);
    stem_atoms_free(&a);
}

/* Rotating about the cell centre (5, 5, 5) of a 10 A cube. */
static void rotated(double rz, double tx, double ty, double x, double y, double z, double *out)
{
    stem_config cfg;
    stem_config_defaults(&cfg);
    cfg.rotation_z = rz;
    cfg.tilt_x = tx;
    cfg.tilt_y = ty;
    stem_atoms a = {0};
    one_atom(&a, 10, 10, 10, x, y, z);
    REQUIRE(stem_atoms_prepare(&a, &cfg) == STEM_OK);
    out[0] = a.x[0];
    out[1] = a.y[0];
    out[2] = a.z[0];
    out[3] = a.cell[2];
    stem_atoms_free(&a);
}

static void test_rotations(void)
{
    double r[4];
    /* +90 about z (counter-clockwise seen from +z): (7, 5) -> (5, 7) */
    rotated(90, 0, 0, 7, 5, 5, r);
    CHECK_CLOSE(r[0], 5, 1e-9);
    CHECK_CLOSE(r[1], 7, 1e-9);
    CHECK_CLOSE(r[2], 5, 1e-9);
    /* +90 about x: y -> z, so (5, 7, 5) -> (5, 5, 7) */
    rotated(0, 90, 0, 5, 7, 5, r);
    CHECK_CLOSE(r[0], 5, 1e-9);
    CHECK_CLOSE(r[1], 5, 1e-9);
    CHECK_CLOSE(r[2], 7, 1e-9);
    /* +90 about y: z -> x, so (5, 5, 7) -> (7, 5, 5) */
    rotated(0, 0, 90, 5, 5, 7, r);
    CHECK_CLOSE(r[0], 7, 1e-9);
    CHECK_CLOSE(r[1], 5, 1e-9);
    CHECK_CLOSE(r[2], 5, 1e-9);
    /* 30 degrees about x keeps the distance from the axis through the centre */
    rotated(0, 30, 0, 5, 8, 6, r);
    CHECK_CLOSE(r[0], 5, 1e-9);
    CHECK_CLOSE(hypot(r[1] - 5, r[2] - 5), hypot(3, 1), 1e-9);
    CHECK_CLOSE(atan2(r[2] - 5, r[1] - 5) - atan2(1, 3), 30 * M_PI / 180, 1e-9);
    /* lateral positions leaving the cell wrap periodically: (9, 5) by 180 -> (1, 5) */
    rotated(180, 0, 0, 9, 5, 5, r);
    CHECK_CLOSE(r[0], 1, 1e-9);
    CHECK_CLOSE(r[1], 5, 1e-9);
    /* a two-atom column tilted by 90 about y lies flat: the thinner z extent
     * never shrinks the cell, and no z is negative */
    stem_config cfg;
    stem_config_defaults(&cfg);
    cfg.tilt_y = 90;
    stem_atoms a = {0};
    one_atom(&a, 10, 10, 10, 5, 5, 0);
    REQUIRE(stem_atoms_prepare(&a, &cfg) == STEM_OK);
    CHECK(a.z[0] >= 0);
    CHECK(a.cell[2] >= 10);
    stem_atoms_free(&a);
}

int main(void)
{
    test_tiling();
    test_rotations();
    return check_exit("test_geometry");
}
