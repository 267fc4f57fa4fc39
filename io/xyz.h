/* Prismatic's XYZ format (io/xyz.c): errors name the file and line. */
#ifndef STEM_XYZ_H
#define STEM_XYZ_H

#include "../src/atoms.h"

int stem_xyz_read(const char *path, stem_atoms *atoms);
/* The same from text in memory; name stands for the file in messages. */
int stem_xyz_read_string(const char *name, const char *text, stem_atoms *atoms);

#endif
