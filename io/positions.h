/* Probe positions from a text file ([scan] positions): one "x y" per line in
 * Angstrom, '#' starts a comment, blank lines are skipped. */
#ifndef STEM_POSITIONS_H
#define STEM_POSITIONS_H

#define STEM_MAX_POSITIONS 100000000L

/* Read path into *xy (malloc'd, x0 y0 x1 y1 ...) and *n. Every position must lie
 * in the cell [0, cell_x] x [0, cell_y]; a malformed line, a position outside or
 * an empty file is refused naming file:line (STEM_ERR_INPUT). */
int stem_positions_read(const char *path, double cell_x, double cell_y, double **xy, long *n);

#endif
