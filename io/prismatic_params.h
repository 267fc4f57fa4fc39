/* stemsim --from-prismatic: a Prismatic 2.0 parameter file (its -pf format, one
 * "--option: values" per line, as Prismatic's writeParamFile writes them) and/or a
 * Prismatic command line turned into a stemsim config.ini on stdout. Every Prismatic
 * option stemsim has is mapped (units: Prismatic's keV, mrad, Angstrom are stemsim's;
 * -df = [probe] C10 with the same sign); every other one is listed on stderr with a
 * warning and as a comment at the top of the config. */
#ifndef STEM_PRISMATIC_PARAMS_H
#define STEM_PRISMATIC_PARAMS_H

#include <stdio.h>

/* args: [PARAMS_FILE] [--xyz FILE] [-- PRISMATIC_ARGS...] (the command line's options
 * override the file's). Returns STEM_OK, STEM_ERR_CONFIG (an unknown Prismatic option,
 * a missing or malformed value) or STEM_ERR_INPUT (the parameter file cannot be read). */
int stem_from_prismatic(int argc, char **argv, FILE *out);

#endif
