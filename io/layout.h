/* stemsim's own HDF5 layout (docs/output.md), written through the collective writer
 * (h5_collective.h): the state one write shares between io/output.c (the entry: checks,
 * agreed switches, shared texts) and io/layout.c (which datasets, with which attributes).
 * Internal to io/. */
#ifndef STEM_LAYOUT_H
#define STEM_LAYOUT_H

#include "h5_collective.h"
#include "output_types.h"

#define STEM_OUTPUT_ERRORS "/standard_error" /* the standard errors mirror the datasets they belong to */

/* Everything one collective write needs. */
typedef struct {
    stem_h5_file h5; /* the file, its communicator and rank */
    const stem_plan *plan;
    const stem_result *res; /* NULL on ranks that write no probes */
    int writes;
    hsize_t begin, count; /* this rank's flattened probes */
    int has_4d, has_dpc;  /* agreed over comm */
    int cbed_streamed;    /* /cbed written already, block by block (stem_output_stream) */
    int has_errors;       /* standard errors over configurations (agreed over comm) */
    int errors;           /* the channel writers write the standard errors, under /standard_error */
    double *scratch;      /* count values: one image column, one DPC axis */
    double *axis;         /* longest axis */
    char *config_text, *plan_text, *env_text, *advice_text;       /* rank 0's texts, on every rank */
    const stem_output_series *series;                             /* NULL: one point, no leading axes */
    const stem_output_stored *stored;                             /* NULL: no /potential, no /smatrix */
    int n_lead;                                                   /* leading series axes of every per-point dataset */
    hsize_t lead[STEM_OUTPUT_MAX_LEAD], at[STEM_OUTPUT_MAX_LEAD]; /* their lengths; the point being written */
    int point;
} stem_output;

/* Length of the longest 1D axis the layout writes (o->axis holds it). */
int stem_layout_longest_axis(const stem_plan *plan, const stem_output_series *series);

/* Collective, into the open file: every dataset, group and attribute of the layout, the
 * series point by point, and last the root attribute complete = 1 (after a flush, and
 * flushed); every step ends with all ranks agreeing on its status. */
int stem_layout_write(stem_output *o);

/* Chunks of /cbed: whole patterns, about this many bytes (a few along the scan's x). */
#define STEM_OUTPUT_CHUNK_BYTES (4.0 * 1048576)

/* Collective: this rank's probes [begin, begin + count) of the 4D patterns (cbed, probe-major;
 * count 0: none) into /cbed, created by the first block. */
int stem_layout_cbed_block(const stem_output *o, long begin, long count, const float *cbed, int first);

/* Bytes the layout will take for this plan, n_points series points and n_tilts sample tilts
 * (stem_output_estimate_bytes). */
double stem_layout_estimate_bytes(const stem_plan *plan, int n_points, int n_tilts);

#endif
