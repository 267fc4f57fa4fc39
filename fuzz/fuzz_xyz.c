/* libFuzzer harness: XYZ text -> stem_xyz_read_string; a model that reads
 * is then tiled/rotated and displaced as a run would do.
 * Built by fuzz/build.sh; also linked with fuzz/replay_main.c for ctest. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "atoms.h"
#include "../io/config.h"
#include "../io/xyz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    stem_atoms atoms;
    if (stem_xyz_read_string("fuzz.xyz", text, &atoms) == STEM_OK) {
        if (atoms.n < 1 || !(atoms.cell[0] > 0) || !(atoms.cell[1] > 0) || !(atoms.cell[2] > 0)) abort();
        for (long i = 0; i < atoms.n; i++)
            if (atoms.Z[i] < 1 || atoms.Z[i] > 103 || !(atoms.x[i] >= 0) || !(atoms.x[i] <= atoms.cell[0])) abort();
        stem_config cfg;
        stem_config_defaults(&cfg);
        cfg.rotation_z = 30;
        cfg.tilt_x = 5;
        if (stem_atoms_prepare(&atoms, &cfg) == STEM_OK) {
            stem_atoms d = {0};
            if (stem_atoms_displace(&atoms, 7, 1, 1, &d) == STEM_OK)
                for (long i = 0; i < d.n; i++)
                    if (!isfinite(d.x[i]) || !isfinite(d.y[i]) || !isfinite(d.z[i])) abort();
            stem_atoms_free(&d);
        }
        stem_atoms_free(&atoms);
    }
    free(text);
    return 0;
}
