/* Detectors: the geometry of annular rings (3D output), 2D images over named
 * angular ranges, segments, 4D patterns and PACBED, and the binning of each
 * probe's pattern into the output channels (channels.h). */
#ifndef STEM_DETECTOR_H
#define STEM_DETECTOR_H

#include "channels.h"
#include "plan.h"
#include "standard_errors.h"

/* Per detector pixel (out_nx x out_ny, FFT order) geometry, built once. */
typedef struct {
    int n_pixels;
    int *bin;                 /* ring index, -1 beyond the simulated angle */
    uint32_t *image_mask;     /* bit i: pixel belongs to image i */
    int *segment;             /* segmented detector: ring * segments + segment, -1 outside (NULL: none) */
    int *pattern_bin;         /* bin of the written (cropped, binned, centred) pattern, -1 cropped away
                              (NULL without 4D patterns or PACBED) */
    int pattern_bins;         /* cbed_nx * cbed_ny */
    float *theta_x, *theta_y; /* mrad */
} stem_detector;

int stem_detector_build(const stem_plan *plan, stem_detector *det);
void stem_detector_free(stem_detector *det);
/* Add one probe's intensity (detector grid, FFT order) to the local probe slot. */
void stem_detect(const stem_detector *det, const float *intensity, stem_result *res, long local_probe);
/* The bin of the written pattern for each detector pixel in centred order (the GPU
 * returns centred patterns); malloc'd, -1 where cropped away. */
int *stem_pattern_bins_centred(const stem_plan *plan, const stem_detector *det);

#endif
