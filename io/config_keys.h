/* The config's key table (io/config_keys.c), shared by the parser (io/config.c): each key's
 * section, name, type, field of stem_config, default, bounds, unit and help text, and the
 * look-ups on it. Private to io/config*.c. */
#ifndef STEM_IO_CONFIG_KEYS_H
#define STEM_IO_CONFIG_KEYS_H

#include <stddef.h>

#include "../src/config.h"

/* K_INT_AUTO: an int that may also be "auto", stored as 0 (its numbers start at 1) */
typedef enum { K_DOUBLE, K_INT, K_LONG, K_BOOL, K_STRING, K_ENUM, K_INT_AUTO } key_type;

typedef struct {
    const char *section, *key;
    key_type type;
    size_t offset;
    const char *def;     /* default, parsed like user input ("" = none) */
    double min, max;     /* inclusive bounds for numbers */
    const char *choices; /* K_ENUM: "a|b|c" -> 0,1,2 */
    const char *unit, *doc;
} key_spec;

#define OFF(field) offsetof(stem_config, field)

/* Every key, in the order of --help-config and of the effective config; a key's index is
 * its slot in stem_config.seen. */
extern const key_spec stem_config_keys[];
extern const int stem_config_n_keys;

/* The row of [section] key, in any case (NULL: none). */
const key_spec *stem_config_find_key(const char *section, const char *key);
/* The section of a key name, if any section has it (NULL: none). */
const char *stem_config_key_section(const char *key);

#endif
