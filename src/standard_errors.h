/* Standard errors over frozen-phonon configurations (docs/accuracy.md) of the
 * channels that keep one (channels.h): the sums of squared deviations (M2, formed
 * exactly from the campaign's integer sums: src/accumulator.h) turned into standard
 * errors when the result is finalised; the named images' means over the scan with
 * their errors, and the log line that reports them. */
#ifndef STEM_STANDARD_ERRORS_H
#define STEM_STANDARD_ERRORS_H

#include "channels.h"

/* One named image's mean over the scan and its standard error over configurations. */
typedef struct {
    const char *name;
    double inner_mrad, outer_mrad;
    double mean;     /* the image averaged over the scan and the configurations */
    double se;       /* standard error of mean over configurations; NaN with one configuration */
    double pixel_se; /* root mean square over the scan of the image's per-probe standard error (NaN: none) */
    int n_configs;
} stem_image_error;

/* The per-probe channels finished over `threads` workers (the same bits on any count): with
 * error state, the standard errors from the sums
 * first, then the means (channels.h stem_result_means_range: DPC sums over the total, every sum
 * over the number of configurations). */
int stem_result_finalise(stem_result *res, int n_configs, int threads);
/* Standard errors (docs/accuracy.md): the state of every channel stem_channel_error_width
 * gives (none with one configuration) and each configuration's images summed over the scan;
 * stem_result_free frees them. */
int stem_result_alloc_errors(const stem_plan *plan, stem_result *res);
/* After stem_result_finalise (and any blur): image_se2 from this rank's probes. */
void stem_result_errors_scan(stem_result *res);
/* Per named image (out: plan->n_images entries): mean and standard error over the scan
 * from config_images (summed over every rank holding probes, and every configuration's
 * row filled), and the per-probe standard errors' rms from image_se2 (likewise summed);
 * returns the number of images. With one configuration se and pixel_se are NaN. */
int stem_result_image_errors(const stem_plan *plan, const stem_result *res, stem_image_error *out);
/* Rank 0 logs each named image's mean with its standard error ("HAADF 70-200 mrad:
 * 0.0335 +- 0.0004 (1.2%) over 8 configurations"), prefixed by `where` (may be ""). */
void stem_result_log_errors(const stem_plan *plan, const stem_result *res, const char *where);

#endif
