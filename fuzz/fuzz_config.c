/* libFuzzer harness: config.ini text -> stem_config_load_string, then the
 * effective-config writer (what goes into the output file) on success.
 * Built by fuzz/build.sh; also linked with fuzz/replay_main.c for ctest. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../io/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0; /* the API takes C strings: an embedded NUL ends the text */
    stem_config cfg;
    if (stem_config_load_string(&cfg, "fuzz.ini", text) == STEM_OK) {
        char *ini = stem_config_to_ini(&cfg);
        /* round trip: the effective config stored in the output file must
         * read back to the same effective config */
        if (ini) {
            stem_config again;
            if (stem_config_load_string(&again, "fuzz-roundtrip.ini", ini) != STEM_OK) abort();
            char *ini2 = stem_config_to_ini(&again);
            if (!ini2 || strcmp(ini, ini2) != 0) abort();
            free(ini2);
        }
        free(ini);
    }
    free(text);
    return 0;
}
