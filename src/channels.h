/* Output channels: one table of what each probe produces. stem_result's
 * storage, its allocation, the MPI reduction, finalisation, the memory
 * estimate, the GPU detector record and the HDF5 writer all iterate over it,
 * so a new detector is one row here, its binning (detector.c and, when the
 * GPU bins it, gpu_detector.cu) and its writer (io/layout.c). Values are
 * stored probe-major: [local probe][width]. */
#ifndef STEM_CHANNELS_H
#define STEM_CHANNELS_H

#include "plan_types.h"

/* In table order; the GPU detector record holds the gpu_record channels in
 * this order ([rings][images][total][com x, y][segments] per probe). */
typedef enum {
    STEM_CH_RINGS = 0, /* intensity in annular rings of ring_width */
    STEM_CH_IMAGES,    /* intensity between each [images] pair of angles */
    STEM_CH_TOTAL,     /* intensity inside the band limit */
    STEM_CH_COM,       /* centre of mass of the pattern (mrad), x and y */
    STEM_CH_SEGMENTS,  /* intensity on each segment of the segmented detector, [ring][segment] */
    STEM_CH_CBED,      /* the whole diffraction pattern (4D) */
    STEM_CH_EXIT,      /* hrtem: the exit wave, [ny][nx][re, im] */
    STEM_CH_HRTEM,     /* hrtem: the image through the objective lens, [ny][nx] */
    STEM_N_CHANNELS
} stem_channel_id;

typedef enum {
    STEM_FINAL_MEAN,        /* sums over configurations -> mean */
    STEM_FINAL_PER_TOTAL    /* intensity-weighted sums -> divided by STEM_CH_TOTAL's sum */
} stem_channel_final;

typedef struct {
    const char *name;
    int is_float;           /* float32 (large 4D patterns) or float64 */
    stem_channel_final final;
    int gpu_record;         /* binned on the GPU into the per-probe double record */
    int error;              /* a standard error over configurations is kept and written (/standard_error/...) */
} stem_channel;

extern const stem_channel stem_channel_table[STEM_N_CHANNELS];

/* Values per probe of channel ch under this plan (0: not produced). */
long stem_channel_width(const stem_plan *plan, int ch);
/* Bytes per probe of every produced channel (the memory estimate). */
double stem_channel_bytes_per_probe(const stem_plan *plan);
/* Doubles per probe of channel ch's standard-error state (0: none): with two or more
 * configurations, for the channels that have one and are written (rings with save_3d,
 * DPC with save_dpc) unless [output] standard_errors = false; twice the width for STEM_FINAL_PER_TOTAL (the co-moments with
 * the total as well, detector.h). */
long stem_channel_error_width(const stem_plan *plan, int ch);
/* Bytes per probe the standard errors add (their state and the sums before each
 * configuration; the memory estimate). */
double stem_channel_error_bytes_per_probe(const stem_plan *plan);
/* Doubles per probe in the GPU detector record, and where channel ch starts in it. */
int stem_channel_record_stride(const stem_plan *plan);
int stem_channel_record_offset(const stem_plan *plan, int ch);

#endif
