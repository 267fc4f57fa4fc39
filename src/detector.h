/* Detectors: annular rings (3D output), 2D images over named angular ranges,
 * optional 4D diffraction patterns and DPC centre of mass. */
#ifndef STEM_DETECTOR_H
#define STEM_DETECTOR_H

#include "channels.h"
#include "plan.h"

/* Per detector pixel (out_nx x out_ny, FFT order) geometry, built once. */
typedef struct {
    int n_pixels;
    int *bin;              /* ring index, -1 beyond the simulated angle */
    uint32_t *image_mask;  /* bit i: pixel belongs to image i */
    int *segment;          /* segmented detector: ring * segments + segment, -1 outside (NULL: none) */
    int *pattern_bin;      /* bin of the written (cropped, binned, centred) pattern, -1 cropped away
                              (NULL without 4D patterns or PACBED) */
    int pattern_bins;      /* cbed_nx * cbed_ny */
    float *theta_x, *theta_y; /* mrad */
} stem_detector;

/* PACBED's sums: signed 128-bit fixed point in units of 2^-STEM_PACBED_FRAC (8e-25), exact
 * for every float of magnitude 2^-80..2^46 and summed as integers, so that the result does
 * not depend on the order of the adds (worker threads, ranks, rank counts). */
#define STEM_PACBED_FRAC 80
typedef __int128 stem_fixed128;

/* Per-rank accumulated output for the probes [probe_begin, probe_end): one
 * array per output channel (channels.h), with named views of them. */
typedef struct {
    long n_probes;         /* local probes */
    int n_bins, n_images, out_nx, out_ny;
    int has_4d, has_dpc;
    void *data[STEM_N_CHANNELS];  /* [probe][width[ch]], double or float (stem_channel_table) */
    long width[STEM_N_CHANNELS];
    double *rings;         /* [probe][bin] */
    double *images;        /* [probe][image] */
    double *com;           /* [probe][2]: centre of mass x, y in mrad (sums until finalised) */
    double *total;         /* [probe]: total detected intensity (used for DPC and checks) */
    double *segments;      /* [probe][ring][segment] (NULL: no segmented detector) */
    int n_segments;        /* values per probe in segments */
    float *cbed;           /* [probe][cbed_ny][cbed_nx], centred (fftshifted), cropped and binned */
    double *pacbed;        /* [cbed_ny][cbed_nx]: the mean pattern once reduced (save_pacbed; not a channel) */
    stem_fixed128 *pacbed_sum; /* [cbed_ny][cbed_nx]: exact sum over this rank's probes (stem_result_pacbed_values) */
    int pacbed_bad;        /* an intensity was not finite or beyond 2^46: the sums read NaN */
    void *pacbed_lock;     /* pthread mutex: every worker thread adds its probes' patterns to pacbed_sum */
    int pattern_bins;      /* cbed_nx * cbed_ny */
} stem_result;

int stem_detector_build(const stem_plan *plan, stem_detector *det);
void stem_detector_free(stem_detector *det);
int stem_result_alloc(const stem_plan *plan, stem_result *res);
void stem_result_free(stem_result *res);
/* Add one probe's intensity (detector grid, FFT order) to the local probe slot. */
void stem_detect(const stem_detector *det, const float *intensity, stem_result *res, long local_probe);
/* One probe's pattern (n_pixels intensities; bin[k]: the written pattern's bin of pixel k,
 * -1 cropped away) added to the 4D slot of local probe p and to PACBED, whichever are kept.
 * Thread safe: PACBED, shared by a rank's worker threads, is added under its lock, exactly
 * (pacbed_sum), so the order in which the workers come does not change a bit. */
void stem_result_add_pattern(stem_result *res, long p, const int *bin, const float *intensity, int n_pixels);
/* The exact PACBED sums as doubles (each rounded once): out[pattern_bins]. */
void stem_result_pacbed_values(const stem_result *res, double *out);
/* The bin of the written pattern for each detector pixel in centred order (the GPU
 * returns centred patterns); malloc'd, -1 where cropped away. */
int *stem_pattern_bins_centred(const stem_plan *plan, const stem_detector *det);
/* Divide the sums by the number of configurations; turn DPC sums into means. */
void stem_result_finalise(stem_result *res, int n_configs);
/* Every channel's sums set to zero. */
void stem_result_zero(stem_result *res);
/* res += weight * part, channel by channel (the same plan's results). */
void stem_result_add_scaled(stem_result *res, const stem_result *part, double weight);

#endif
