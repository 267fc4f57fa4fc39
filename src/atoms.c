/* Model preparation: tiling, rotation, frozen-phonon displacements. */
#include "atoms.h"
#include "memlimit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int stem_atoms_alloc(stem_atoms *a, long n)
{
    double cell[3] = {a->cell[0], a->cell[1], a->cell[2]};
    memset(a, 0, sizeof *a);
    memcpy(a->cell, cell, sizeof cell);
    a->n = n;
    STEM_ALLOC(a->Z, n, "atom numbers");
    STEM_ALLOC(a->x, n, "atom positions");
    STEM_ALLOC(a->y, n, "atom positions");
    STEM_ALLOC(a->z, n, "atom positions");
    STEM_ALLOC(a->occupancy, n, "atom occupancies");
    STEM_ALLOC(a->sigma, n, "atom displacements");
    return STEM_OK;
}

void stem_atoms_free(stem_atoms *a)
{
    free(a->Z);
    free(a->x);
    free(a->y);
    free(a->z);
    free(a->occupancy);
    free(a->sigma);
    memset(a, 0, sizeof *a);
}

static uint64_t splitmix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* Counter-based: the number depends on (seed, stream, index) only, so results
 * never depend on how configurations or atoms are spread over ranks. */
double stem_gaussian(uint64_t seed, uint64_t stream, uint64_t index)
{
    uint64_t h = splitmix64(splitmix64(splitmix64(seed) ^ stream) ^ index);
    uint64_t h2 = splitmix64(h);
    double u1 = ((h >> 11) + 0.5) * (1.0 / 9007199254740992.0);
    double u2 = (h2 >> 11) * (1.0 / 9007199254740992.0);
    return sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
}

/* Bytes of one atom in memory (Z, x, y, z, occupancy, sigma). */
#define STEM_ATOM_BYTES (sizeof(int) + 5 * sizeof(double))

static int tile(stem_atoms *a, int tx, int ty, int tz, double max_memory_gib)
{
    long reps = (long)tx * ty * tz;
    if (reps == 1) return STEM_OK;
    stem_memory_limit limit; /* refused by how much, before a failed allocation names an array */
    stem_memory_limit_choose(max_memory_gib, 1, &limit);
    double bytes = (double)a->n * (double)reps * STEM_ATOM_BYTES;
    if (bytes > limit.bytes)
        return STEM_FAIL(STEM_ERR_MEMORY,
                         "[sample] tile %d x %d x %d of %ld atoms makes %.4g atoms: %.1f GiB for the model alone, %.0f "
                         "times the %.2f GiB allowed (%s); tile less, or tile the cell into the model file once",
                         tx, ty, tz, a->n, (double)a->n * reps, bytes / 1073741824.0, bytes / limit.bytes,
                         limit.bytes / 1073741824.0, limit.source);
    stem_atoms t = {.cell = {a->cell[0] * tx, a->cell[1] * ty, a->cell[2] * tz}};
    STEM_TRY(stem_atoms_alloc(&t, a->n * reps));
    long k = 0;
    for (int iz = 0; iz < tz; iz++)
        for (int iy = 0; iy < ty; iy++)
            for (int ix = 0; ix < tx; ix++)
                for (long i = 0; i < a->n; i++, k++) {
                    t.Z[k] = a->Z[i];
                    t.x[k] = a->x[i] + ix * a->cell[0];
                    t.y[k] = a->y[i] + iy * a->cell[1];
                    t.z[k] = a->z[i] + iz * a->cell[2];
                    t.occupancy[k] = a->occupancy[i];
                    t.sigma[k] = a->sigma[i];
                }
    stem_atoms_free(a);
    *a = t;
    return STEM_OK;
}

static double wrap(double v, double period)
{
    v = fmod(v, period);
    return v < 0 ? v + period : v;
}

/* Rotate about the cell centre: z first (in-plane), then x, then y. Atoms that
 * leave the cell sideways wrap periodically; the cell grows along z to hold them. */
static void rotate(stem_atoms *a, double rz_deg, double tx_deg, double ty_deg)
{
    if (rz_deg == 0 && tx_deg == 0 && ty_deg == 0) return;
    double cz = cos(rz_deg * M_PI / 180), sz = sin(rz_deg * M_PI / 180);
    double cx = cos(tx_deg * M_PI / 180), sx = sin(tx_deg * M_PI / 180);
    double cy = cos(ty_deg * M_PI / 180), sy = sin(ty_deg * M_PI / 180);
    double c0 = a->cell[0] / 2, c1 = a->cell[1] / 2, c2 = a->cell[2] / 2;
    double zmin = 1e300, zmax = -1e300;
    for (long i = 0; i < a->n; i++) {
        double x = a->x[i] - c0, y = a->y[i] - c1, z = a->z[i] - c2;
        double x1 = cz * x - sz * y, y1 = sz * x + cz * y, z1 = z;
        double y2 = cx * y1 - sx * z1, z2 = sx * y1 + cx * z1, x2 = x1;
        double x3 = cy * x2 + sy * z2, z3 = -sy * x2 + cy * z2, y3 = y2;
        a->x[i] = wrap(x3 + c0, a->cell[0]);
        a->y[i] = wrap(y3 + c1, a->cell[1]);
        a->z[i] = z3 + c2;
        zmin = fmin(zmin, a->z[i]);
        zmax = fmax(zmax, a->z[i]);
    }
    double shift = zmin < 0 ? -zmin : 0;
    for (long i = 0; i < a->n; i++) a->z[i] += shift;
    a->cell[2] = fmax(a->cell[2], zmax + shift);
}

int stem_atoms_prepare(stem_atoms *atoms, const stem_config *cfg)
{
    STEM_TRY(tile(atoms, cfg->tile_x, cfg->tile_y, cfg->tile_z, cfg->max_memory_gib));
    rotate(atoms, cfg->rotation_z, cfg->tilt_x, cfg->tilt_y);
    return STEM_OK;
}

int stem_atoms_tile(stem_atoms *atoms, const stem_config *cfg)
{
    return tile(atoms, cfg->tile_x, cfg->tile_y, cfg->tile_z, cfg->max_memory_gib);
}

int stem_atoms_rotated(const stem_atoms *in, double rotation_z, double tilt_x, double tilt_y, stem_atoms *out)
{
    STEM_TRY(stem_atoms_alloc(out, in->n));
    memcpy(out->cell, in->cell, sizeof out->cell);
    memcpy(out->Z, in->Z, in->n * sizeof(int));
    memcpy(out->x, in->x, in->n * sizeof(double));
    memcpy(out->y, in->y, in->n * sizeof(double));
    memcpy(out->z, in->z, in->n * sizeof(double));
    memcpy(out->occupancy, in->occupancy, in->n * sizeof(double));
    memcpy(out->sigma, in->sigma, in->n * sizeof(double));
    rotate(out, rotation_z, tilt_x, tilt_y);
    return STEM_OK;
}

int stem_atoms_displace(const stem_atoms *in, long seed, int config_index, int thermal, stem_atoms *out)
{
    out->cell[0] = in->cell[0];
    out->cell[1] = in->cell[1];
    out->cell[2] = in->cell[2];
    STEM_TRY(stem_atoms_alloc(out, in->n));
    memcpy(out->Z, in->Z, in->n * sizeof(int));
    memcpy(out->occupancy, in->occupancy, in->n * sizeof(double));
    memcpy(out->sigma, in->sigma, in->n * sizeof(double));
    for (long i = 0; i < in->n; i++) {
        double s = thermal ? in->sigma[i] : 0;
        double d[3] = {0, 0, 0};
        if (s > 0)
            for (int k = 0; k < 3; k++)
                d[k] = s * stem_gaussian((uint64_t)seed, (uint64_t)config_index, 3 * (uint64_t)i + k);
        out->x[i] = wrap(in->x[i] + d[0], in->cell[0]);
        out->y[i] = wrap(in->y[i] + d[1], in->cell[1]);
        out->z[i] = fmin(fmax(in->z[i] + d[2], 0), in->cell[2]);
    }
    return STEM_OK;
}

/* The minimum image of d along a periodic axis of length L (periodic != 0). */
static double image(double d, double L, int periodic)
{
    if (!periodic) return d;
    return d - L * round(d / L);
}

/* Atoms a and b closer than limit (both occupying: their occupancies sum above 1). */
static int too_close(const stem_atoms *m, long a, long b, double limit, const int periodic[3])
{
    if (m->occupancy[a] + m->occupancy[b] <= 1.0 + 1e-6) return 0; /* one site shared by partial occupancies */
    double dx = image(m->x[a] - m->x[b], m->cell[0], periodic[0]);
    double dy = image(m->y[a] - m->y[b], m->cell[1], periodic[1]);
    double dz = image(m->z[a] - m->z[b], m->cell[2], periodic[2]);
    return dx * dx + dy * dy + dz * dz < limit * limit;
}

/* Bins of at least limit along each axis, at most about 4 per atom in all (larger bins then). */
static void bin_counts(const stem_atoms *m, double limit, int nb[3])
{
    for (int k = 0; k < 3; k++) {
        double n = floor(m->cell[k] / limit);
        nb[k] = n < 1 ? 1 : n > 4096 ? 4096 : (int)n;
    }
    while ((double)nb[0] * nb[1] * nb[2] > 4.0 * (double)m->n + 64) {
        int k = nb[0] >= nb[1] && nb[0] >= nb[2] ? 0 : nb[1] >= nb[2] ? 1 : 2;
        nb[k] = (nb[k] + 1) / 2;
    }
}

int stem_atoms_closest_check(const stem_atoms *m, double limit, int periodic_z, long *first, long *second)
{
    *first = *second = -1;
    if (limit <= 0 || m->n < 2) return STEM_OK;
    int nb[3], periodic[3] = {1, 1, periodic_z};
    bin_counts(m, limit, nb);
    long bins = (long)nb[0] * nb[1] * nb[2];
    long *head = stem_alloc(sizeof(long) * (size_t)bins, "the model's neighbour bins");
    long *next = stem_alloc(sizeof(long) * (size_t)m->n, "the model's neighbour lists");
    int *at = stem_alloc(sizeof(int) * 3 * (size_t)m->n, "the atoms' bins");
    if (!head || !next || !at) {
        free(head), free(next), free(at);
        return STEM_ERR_MEMORY;
    }
    for (long b = 0; b < bins; b++) head[b] = -1;
    const double *pos[3] = {m->x, m->y, m->z};
    for (long i = 0; i < m->n; i++) {
        long b = 0;
        for (int k = 0; k < 3; k++) {
            int c = (int)floor(pos[k][i] / m->cell[k] * nb[k]);
            at[3 * i + k] = c < 0 ? 0 : c >= nb[k] ? nb[k] - 1 : c;
            b = b * nb[k] + at[3 * i + k];
        }
        next[i] = head[b];
        head[b] = i;
    }
    for (long i = 0; i < m->n && *first < 0; i++)
        for (int d = 0; d < 27 && *first < 0; d++) { /* the 27 bins around i's (wrapped where periodic) */
            int c[3] = {at[3 * i] + d % 3 - 1, at[3 * i + 1] + d / 3 % 3 - 1, at[3 * i + 2] + d / 9 - 1}, skip = 0;
            long b = 0;
            for (int k = 0; k < 3; k++) {
                if (c[k] < 0 || c[k] >= nb[k]) {
                    skip |= !periodic[k];
                    c[k] = (c[k] + nb[k]) % nb[k];
                }
                b = b * nb[k] + c[k];
            }
            if (skip) continue;
            for (long j = head[b]; j >= 0 && *first < 0; j = next[j])
                if (j > i && too_close(m, i, j, limit, periodic)) *first = i, *second = j;
        }
    free(head), free(next), free(at);
    return STEM_OK;
}
