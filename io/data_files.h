/* stemsim's data files (the scattering-factor tables) found relative to the running
 * binary, so an installed or relocated stemsim needs no build-tree path: the override
 * variable if set, else the first that exists of
 *   <bin>/../share/stemsim/data/<name>   (cmake --install: <prefix>/bin/stemsim)
 *   <bin>/data/<name>               (a build directory: CMake copies data/ there)
 *   <bin>/../data/<name>            (a build directory inside the source tree)
 * with <bin> the directory of /proc/self/exe. */
#ifndef STEM_DATA_FILES_H
#define STEM_DATA_FILES_H

#include <stddef.h>

/* The path of data file `name` (e.g. "kirkland_params.txt"), `override` the environment
 * variable that replaces the search (e.g. "STEMSIM_KIRKLAND"). When no candidate exists
 * the installed location is returned (opening it then fails naming it). Searched once
 * per name; the string lives for the whole run. */
const char *stem_data_file(const char *name, const char *override);
/* The places searched for `name`, in order, separated by ", " (for messages). */
void stem_data_file_candidates(const char *name, char *out, size_t n);

#endif
