/* Lobato & Van Dyck's parametrisation (2014; abTEM's and MULTEM's default):
 * data/lobato_params.txt, one row a1 b1 ... a5 b5 per element, its symbol as a comment. */
#include "scattering_tables.h"

#include <stdio.h>
#include <string.h>

#include "../src/stem.h"
#include "input_file.h"

/* Plausible ranges of the coefficients: the published table stays far inside them
 * (amplitudes -339..323, widths 4e-5..23 Angstrom^2), so a value outside is a typo or
 * a corrupted file, not physics. */
#define LOBATO_MAX_AMP 1e4
#define LOBATO_MIN_WIDTH 1e-7
#define LOBATO_MAX_WIDTH 1e4

static int lobato_row(const char *path, int lineno, int z, const char *line, stem_atom_potential *out)
{
    double a[5], b[5], fe0 = 0;
    char tail[2], why[160];
    if (sscanf(line, "%lf %lf %lf %lf %lf %lf %lf %lf %lf %lf %1s", &a[0], &b[0], &a[1], &b[1], &a[2], &b[2], &a[3],
               &b[3], &a[4], &b[4], tail) != 10)
        return STEM_FAIL(STEM_ERR_INPUT, "%s:%d: expected 10 numbers (a1 b1 ... a5 b5)", path, lineno);
    int bad = 0;
    for (int i = 0; i < 5 && !bad; i++) {
        bad = stem_coefficient_bad("a", i, a[i], -LOBATO_MAX_AMP, LOBATO_MAX_AMP, why, sizeof why) ||
            stem_coefficient_bad("b", i, b[i], LOBATO_MIN_WIDTH, LOBATO_MAX_WIDTH, why, sizeof why);
        fe0 += 2 * a[i]; /* f_e(0) = sum a_i (2 + 0) / 1 */
    }
    if (bad || stem_fe0_bad(fe0, why, sizeof why)) return stem_table_row_refused(path, lineno, z, why);
    stem_atom_potential_from_lobato(a, b, out);
    return STEM_OK;
}

static int lobato_read(const char *path, stem_atom_potential table[STEM_MAX_Z + 1])
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
    return !err && z != STEM_MAX_Z ? stem_table_short(path, z) : err;
}

const stem_table_reader stem_lobato_reader = {STEM_PARAM_LOBATO, "lobato", "lobato_params.txt", "STEMSIM_LOBATO",
                                              lobato_read};
