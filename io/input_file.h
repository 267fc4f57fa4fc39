/* Opening the files stemsim reads (config, XYZ model, data tables) without
 * ever blocking: a FIFO, socket or device given as an input is refused by
 * name instead of waiting forever for a writer. */
#ifndef STEM_INPUT_FILE_H
#define STEM_INPUT_FILE_H

#include <stdio.h>

/* Open path for reading if it is a regular file. what names the input in
 * messages ("config file", "XYZ model '[sample] xyz'"); code is the status
 * returned (and printed) on failure. */
int stem_input_open(const char *path, const char *what, int code, FILE **out);
/* Read the whole regular file into a NUL-terminated buffer (malloc'd). */
int stem_input_read_all(const char *path, const char *what, int code, char **text, size_t *len);

#endif
