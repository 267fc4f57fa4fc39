/* Private to io/layout.c and its pieces (io/layout_stacks.c): the layout's description of
 * a dataset and its attributes, and the writers one piece gives the other. */
#ifndef STEM_LAYOUT_PRIVATE_H
#define STEM_LAYOUT_PRIVATE_H

#include "layout.h"

/* One attribute: a string when text != NULL, else a double. */
typedef struct {
    const char *name;
    const char *text;
    double value;
} stem_output_attr;

/* One dataset. grid != 0: the shape starts with [scan_ny][scan_nx] and each
 * rank writes its own probes from data (probe-major); with [scan] positions
 * those two become one probe axis (grid == 2, see stem_output_probe_axis);
 * grid == 0: a small dataset that rank 0 writes whole. */
typedef struct {
    const char *name;
    hid_t file_type, mem_type;
    int rank;
    hsize_t dims[6];
    int grid;
    const void *data;
    const stem_output_attr *attrs;
    int n_attrs;
    int fixed;      /* the same for every series point (an axis): no leading series axes */
    int image_rows; /* [..][ny][nx]... images whose rows a distributed FFT spreads over a group (grid 3) */
    int patterns;   /* chunked in whole 2D patterns (its last two axes), this many along the probe axis */
    int reopen;     /* written in parts: open the dataset the first part created */
} stem_output_dataset;

/* Attributes a[0..n) on loc (an object named `where`, for messages); layout.c. */
int stem_output_attrs(const stem_output *o, hid_t loc, const char *where, const stem_output_attr *a, int n);
/* Create a contiguous dataset (at the first series point; open it at the others), write
 * this rank's part collectively, add attributes (layout.c). */
int stem_output_write_dataset(const stem_output *o, const stem_output_dataset *given);

/* layout_stacks.c: /potential (a campaign's /potential_tilts) when [output] save_potential
 * asks for it, and /smatrix (/smatrix_tilts) with the beams it holds, /smatrix_beams, when
 * save_smatrix does; collective, every step agreed inside. */
int stem_layout_potential_stack(const stem_output *o);
int stem_layout_smatrix_stack(const stem_output *o);

#endif
