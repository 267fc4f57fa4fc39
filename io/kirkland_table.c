/* Kirkland's parametrisation (Kirkland 2010, appendix C): data/kirkland_params.txt,
 * one row of 12 numbers a1 b1 a2 b2 a3 b3 c1 d1 c2 d2 c3 d3 per element. */
#include "scattering_tables.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/stem.h"
#include "input_file.h"

/* Plausible ranges of the coefficients: the published table stays far inside them
 * (amplitudes 5e-7..5.5, widths 0.0076..3.8e4 Angstrom^-2), so a value outside is a
 * typo or a corrupted file, not physics. */
#define KIRKLAND_MAX_AMP 1e2
#define KIRKLAND_MIN_WIDTH 1e-4
#define KIRKLAND_MAX_WIDTH 1e6

/* A row the potential formula cannot use: NaN or infinite values, widths b, d
 * outside their plausible range (<= 0 divides by zero), amplitudes beyond theirs,
 * or no terms at all (a missing element). */
static int kirkland_row_bad(const stem_kirkland *k, char *why, size_t n)
{
    const double A = KIRKLAND_MAX_AMP, W0 = KIRKLAND_MIN_WIDTH, W1 = KIRKLAND_MAX_WIDTH;
    double fe0 = 0;
    for (int i = 0; i < 3; i++) {
        if (stem_coefficient_bad("a", i, k->a[i], -A, A, why, n) ||
            stem_coefficient_bad("b", i, k->b[i], W0, W1, why, n) ||
            stem_coefficient_bad("c", i, k->c[i], -A, A, why, n) ||
            stem_coefficient_bad("d", i, k->d[i], W0, W1, why, n))
            return 1;
        fe0 += k->a[i] / k->b[i] + k->c[i]; /* f_e(q) = sum a / (q^2 + b) + c exp(-d q^2) */
    }
    return stem_fe0_bad(fe0, why, n);
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
            return stem_table_row_refused(path, lineno, z, why);
        }
    }
    fclose(f);
    return z != STEM_MAX_Z ? stem_table_short(path, z) : STEM_OK;
}

static int kirkland_read(const char *path, stem_atom_potential table[STEM_MAX_Z + 1])
{
    stem_kirkland *k = stem_calloc(STEM_MAX_Z + 1, sizeof *k, "Kirkland table");
    if (!k) return STEM_ERR_MEMORY;
    int err = stem_kirkland_load(path, k);
    for (int z = 1; !err && z <= STEM_MAX_Z; z++) stem_atom_potential_from_kirkland(&k[z], &table[z]);
    free(k);
    return err;
}

const stem_table_reader stem_kirkland_reader = {STEM_PARAM_KIRKLAND, "kirkland", "kirkland_params.txt",
                                                "STEMSIM_KIRKLAND", kirkland_read};
