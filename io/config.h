/* The config parser (io/config.c): config.ini and --set overrides into a
 * validated stem_config (src/config.h, plain data the plan reads), the key table
 * behind --help-config and docs/config.md, and the effective config as text. */
#ifndef STEM_IO_CONFIG_H
#define STEM_IO_CONFIG_H

#include <stddef.h>
#include <stdio.h>

#include "../src/config.h"

/* Fill defaults, parse the file, apply "section.key=value" overrides, validate. */
int stem_config_load(stem_config *cfg, const char *path, int n_overrides, char *const *overrides);
/* Parse an in-memory INI text (tests, fuzzing). name labels messages. */
int stem_config_load_string(stem_config *cfg, const char *name, const char *text);
void stem_config_defaults(stem_config *cfg);
/* Was section.key given by the user? */
int stem_config_given(const stem_config *cfg, const char *section, const char *key);
/* Effective configuration as INI text (malloc'd); stored in the output file. */
char *stem_config_to_ini(const stem_config *cfg);
/* One key's value as stem_config_to_ini writes it (-1: no such key). */
int stem_config_value(const stem_config *cfg, const char *section, const char *key, char *out, size_t n);
/* The reference of every key (for --help-config and docs/config.md). */
void stem_config_print_reference(FILE *out);
/* Levenshtein distance, used for "did you mean" suggestions. */
int stem_edit_distance(const char *a, const char *b);

#endif
