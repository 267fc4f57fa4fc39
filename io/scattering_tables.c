/* The registry of the scattering-factor tables and the row checks their readers share. */
#include "scattering_tables.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../src/stem.h"
#include "data_files.h"

/* Every parametrisation's reader; a new one is a reader file and a line here. */
static const stem_table_reader *const readers[] = {&stem_kirkland_reader, &stem_lobato_reader};

static const stem_table_reader *reader_of(stem_parametrisation which)
{
    for (size_t i = 0; i < sizeof readers / sizeof readers[0]; i++)
        if (readers[i]->which == which) return readers[i];
    return readers[0];
}

const char *stem_parametrisation_path(stem_parametrisation which)
{
    const stem_table_reader *r = reader_of(which);
    return stem_data_file(r->file, r->env);
}

const char *stem_kirkland_default_path(void) { return stem_parametrisation_path(STEM_PARAM_KIRKLAND); }

const char *stem_lobato_default_path(void) { return stem_parametrisation_path(STEM_PARAM_LOBATO); }

int stem_atom_potentials_load(stem_parametrisation which, const char *path, stem_atom_potential table[STEM_MAX_Z + 1])
{
    memset(table, 0, sizeof(stem_atom_potential) * (STEM_MAX_Z + 1));
    return reader_of(which)->read(path, table);
}

int stem_coefficient_bad(const char *name, int i, double v, double lo, double hi, char *why, size_t n)
{
    if (!isfinite(v)) return snprintf(why, n, "%s%d = %g is not a finite number", name, i + 1, v), 1;
    if (v >= lo && v <= hi) return 0;
    if (lo > 0 && v <= 0) /* a width: the potential divides by it */
        return snprintf(why, n, "width %s%d = %g is not positive", name, i + 1, v), 1;
    return snprintf(why, n, "%s%d = %g is outside the plausible range [%g, %g]", name, i + 1, v, lo, hi), 1;
}

/* The tables give f_e(0) = 0.42 Angstrom for H to 20.6 for the heaviest elements. */
int stem_fe0_bad(double fe0, char *why, size_t n)
{
    if (fe0 > 0 && fe0 <= STEM_MAX_FE0) return 0;
    if (fe0 == 0) return snprintf(why, n, "all amplitudes are zero (element missing)"), 1;
    return snprintf(why, n, "its scattering factor at zero angle f_e(0) = %g Angstrom is outside (0, %g]", fe0,
                    STEM_MAX_FE0),
           1;
}

int stem_table_row_refused(const char *path, int lineno, int z, const char *why)
{
    return STEM_FAIL(STEM_ERR_INPUT, "%s:%d: parameters of element Z = %d are unusable: %s", path, lineno, z, why);
}

int stem_table_short(const char *path, int z)
{
    return STEM_FAIL(STEM_ERR_INPUT, "%s: found %d elements, expected %d (Z = 1..%d, one line each)", path, z,
                     STEM_MAX_Z, STEM_MAX_Z);
}
