/* The scattering-factor tables of the parametrisations ([simulation] parametrisation):
 * each has one reader file in io/ (io/kirkland_table.c, io/lobato_table.c) that checks
 * every row and turns it into the element's potential terms with src/physics.c, and
 * one line in the registry of io/scattering_tables.c. */
#ifndef STEM_SCATTERING_TABLES_H
#define STEM_SCATTERING_TABLES_H

#include <stddef.h>

#include "../src/physics.h"

/* One parametrisation's table: its name, the data file beside the binary (data_files.h),
 * the environment variable that overrides it, and its reader (table: Z = 1..103,
 * zeroed by the caller). */
typedef struct {
    stem_parametrisation which;
    const char *name, *file, *env;
    int (*read)(const char *path, stem_atom_potential table[STEM_MAX_Z + 1]);
} stem_table_reader;

extern const stem_table_reader stem_kirkland_reader, stem_lobato_reader;

/* The table file a parametrisation reads: $STEMSIM_<NAME>, else the installed data dir. */
const char *stem_parametrisation_path(stem_parametrisation which);
const char *stem_kirkland_default_path(void);
const char *stem_lobato_default_path(void);
/* The potentials of Z = 1..103 from the table of the chosen parametrisation at path. */
int stem_atom_potentials_load(stem_parametrisation which, const char *path, stem_atom_potential table[STEM_MAX_Z + 1]);
/* Reads Kirkland's table (data/kirkland_params.txt or $STEMSIM_KIRKLAND) as it is printed. */
int stem_kirkland_load(const char *path, stem_kirkland table[STEM_MAX_Z + 1]);

/* For the readers: why <- the first coefficient outside [lo, hi] (name, index and value),
 * or an f_e(0) (Angstrom) outside (0, STEM_MAX_FE0]; 1 when so. */
#define STEM_MAX_FE0 100.0
int stem_coefficient_bad(const char *name, int i, double v, double lo, double hi, char *why, size_t n);
int stem_fe0_bad(double fe0, char *why, size_t n);
/* The message of a row a reader refuses (STEM_ERR_INPUT). */
int stem_table_row_refused(const char *path, int lineno, int z, const char *why);
/* The message of a table with the wrong number of rows (STEM_ERR_INPUT). */
int stem_table_short(const char *path, int z);

#endif
