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
    /* Standard errors over configurations (stem_result_alloc_errors; all NULL without):
     * per channel with stem_channel_error_width > 0, per probe, Welford's sum of squared
     * deviations from the mean (M2) of each value, for STEM_FINAL_PER_TOTAL followed by
     * its co-moments with the total (err_width[ch] doubles per probe); stem_result_finalise
     * turns them into the standard errors, [probe][width[ch]] from the start of err[ch]. */
    double *err[STEM_N_CHANNELS];
    long err_width[STEM_N_CHANNELS];
    double *before[STEM_N_CHANNELS]; /* the sums before the current configuration (then: group means) */
    int n_samples;         /* configurations in the sums (set by stem_result_errors_add) */
    int n_configs;         /* of the run: config_images' rows */
    double *config_images; /* [configuration][image]: each configuration's images summed over this rank's probes */
    double image_se2[STEM_MAX_IMAGES]; /* each named image's squared standard errors summed over the scan
                                          (stem_result_errors_scan, then summed over the ranks) */
} stem_result;

/* One named image's mean over the scan and its standard error over configurations. */
typedef struct {
    const char *name;
    double inner_mrad, outer_mrad;
    double mean;           /* the image averaged over the scan and the configurations */
    double se;             /* standard error of mean over configurations; NaN with one configuration */
    double pixel_se;       /* root mean square over the scan of the image's per-probe standard error (NaN: none) */
    int n_configs;
} stem_image_error;

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
/* Divide the sums by the number of configurations; turn DPC sums into means; with
 * error state, turn it into standard errors (before the sums become means). */
void stem_result_finalise(stem_result *res, int n_configs);
/* Standard errors (docs/accuracy.md): the state of every channel
 * stem_channel_error_width gives (none with one configuration); stem_result_free frees it. */
int stem_result_alloc_errors(const stem_plan *plan, stem_result *res);
/* Around adding configuration `config` to the sums (in any order; one rank's probes):
 * begin keeps the sums, add updates M2 and the co-moments from the difference
 * (Welford) and config_images[config]. No-ops without error state. */
void stem_result_errors_begin(stem_result *res);
void stem_result_errors_add(stem_result *res, int config);
/* Groups of configurations combined (Chan et al.): before the sums are added over the
 * groups, merge_begin keeps this group's means; after, merge_end adds its between-group
 * term n_g (mean_g - mean)^2 (and co-moment terms) to M2, and sets n_samples to n_total;
 * the state (res->err) is then summed over the groups. Every term is a sum, so the result
 * does not depend on how unequal the groups are. */
void stem_result_errors_merge_begin(stem_result *res);
void stem_result_errors_merge_end(stem_result *res, int n_total);
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
/* Every channel's sums set to zero. */
void stem_result_zero(stem_result *res);
/* res += weight * part, channel by channel (the same plan's results). */
void stem_result_add_scaled(stem_result *res, const stem_result *part, double weight);

#endif
