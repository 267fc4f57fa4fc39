/* Output channels: one table of what a run produces, and stem_result, the
 * channels' storage on a rank. The allocation, the MPI reduction, finalisation,
 * the memory estimate, the GPU detector record and the HDF5 writer all iterate
 * over the table, so a new detector is one row here, its binning (detector.c
 * and, when the GPU bins it, gpu_detector.cu) and its writer (io/layout.c).
 * A channel has one of two kinds (scopes): per probe, stored probe-major
 * [local probe][width]; or over the scan (PACBED), one row summed exactly over
 * every probe. Standard errors over configurations: standard_errors.h. */
#ifndef STEM_CHANNELS_H
#define STEM_CHANNELS_H

#include <stdint.h>

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
    STEM_CH_PACBED,    /* the pattern averaged over every probe and configuration, [cbed_ny][cbed_nx] */
    STEM_N_CHANNELS
} stem_channel_id;

typedef enum {
    STEM_FINAL_MEAN,     /* sums over configurations -> mean */
    STEM_FINAL_PER_TOTAL /* intensity-weighted sums -> divided by STEM_CH_TOTAL's sum */
} stem_channel_final;

typedef enum {
    STEM_SCOPE_PROBE, /* a row per probe: [local probe][width], summed over configurations */
    STEM_SCOPE_SCAN   /* one row for the whole scan, summed exactly over every probe (any order, any
                               rank count: 128-bit fixed point) and over configurations */
} stem_channel_scope;

typedef struct {
    const char *name;
    int is_float; /* float32 (large 4D patterns) or float64 */
    stem_channel_final final;
    int gpu_record; /* binned on the GPU into the per-probe double record */
    int error;      /* a standard error over configurations is kept and written (/standard_error/...) */
    stem_channel_scope scope;
} stem_channel;

extern const stem_channel stem_channel_table[STEM_N_CHANNELS];

/* A scan channel's sums: signed 128-bit fixed point in units of 2^-STEM_SCAN_FRAC (8e-25),
 * exact for every float of magnitude 2^-80..2^46 and summed as integers, so that the result
 * does not depend on the order of the adds (worker threads, ranks, rank counts). */
#define STEM_SCAN_FRAC 80
typedef __int128 stem_fixed128;

/* Per-rank accumulated output for the probes [probe_begin, probe_end): one
 * array per output channel, with named views of them. */
typedef struct {
    long n_probes; /* local probes */
    int n_bins, n_images, out_nx, out_ny;
    int has_4d, has_dpc;
    void *data[STEM_N_CHANNELS]; /* [probe][width[ch]] (scan channels: [width[ch]]), double or float */
    long width[STEM_N_CHANNELS];
    double *rings;    /* [probe][bin] */
    double *images;   /* [probe][image] */
    double *com;      /* [probe][2]: centre of mass x, y in mrad (sums until finalised) */
    double *total;    /* [probe]: total detected intensity (used for DPC and checks) */
    double *segments; /* [probe][ring][segment] (NULL: no segmented detector) */
    int n_segments;   /* values per probe in segments */
    float *cbed;      /* [probe][cbed_ny][cbed_nx], centred (fftshifted), cropped and binned */
    double *pacbed;   /* [cbed_ny][cbed_nx]: the mean pattern once reduced (stem_result_scan_mean) */
    /* scan channels: exact sums over this rank's probes (stem_result_scan_values), NULL for the others */
    stem_fixed128 *scan_sum[STEM_N_CHANNELS];
    int scan_bad;     /* an intensity was not finite or beyond 2^46: the sums read NaN */
    void *scan_lock;  /* pthread mutex: every worker thread adds its probes' patterns to scan_sum */
    int pattern_bins; /* cbed_nx * cbed_ny */
    /* Standard errors over configurations (stem_result_alloc_errors; all NULL without):
     * per channel with stem_channel_error_width > 0, per probe, the sum of squared
     * deviations from the mean (M2) of each value, for STEM_FINAL_PER_TOTAL followed by
     * its co-moments with the total (err_width[ch] doubles per probe); stem_result_finalise
     * turns them into the standard errors, [probe][width[ch]] from the start of err[ch]. */
    double *err[STEM_N_CHANNELS];
    long err_width[STEM_N_CHANNELS];
    int n_samples;         /* configurations in the sums (set by stem_acc_to_result) */
    int n_configs;         /* of the run: config_images' rows */
    double *config_images; /* [configuration][image]: each configuration's images summed over this rank's probes */
    double image_se2[STEM_MAX_IMAGES]; /* each named image's squared standard errors summed over the scan
                                          (stem_result_errors_scan, then summed over the ranks) */
    /* stem_result_alloc_rows: the per-probe rows are the node's (memory shared by its ranks, not
     * freed here), this rank's starting queue_row0 rows in; the engine's threads take any of the
     * queue_rows probes from queue (NULL: this rank's own probes only) */
    struct stem_work_queue_s *queue;
    long queue_row0, queue_rows;
} stem_result;

/* Values per row of channel ch under this plan (0: not produced): per probe, or of the
 * scan's one row. */
long stem_channel_width(const stem_plan *plan, int ch);
static inline int stem_channel_per_probe(int ch) { return stem_channel_table[ch].scope == STEM_SCOPE_PROBE; }
/* A distributed FFT's channels of image rows (each rank its slab's); its others are whole sums. */
static inline int stem_channel_image_rows(int ch) { return ch == STEM_CH_HRTEM || ch == STEM_CH_EXIT; }
/* Bytes per probe of every produced per-probe channel (the memory estimate). */
double stem_channel_bytes_per_probe(const stem_plan *plan);
/* Doubles per probe of channel ch's standard-error state (0: none): with two or more
 * configurations, for the channels that have one and are written (rings with save_3d,
 * DPC with save_dpc) unless [output] standard_errors = false; twice the width for STEM_FINAL_PER_TOTAL (the co-moments with
 * the total as well, detector.h). */
long stem_channel_error_width(const stem_plan *plan, int ch);
/* Bytes per probe the standard errors add (their exact sums of squares and co-moments in
 * src/accumulator.h, and the finished point's state). */
double stem_channel_error_bytes_per_probe(const stem_plan *plan);
/* Doubles per probe in the GPU detector record, and where channel ch starts in it. */
int stem_channel_record_stride(const stem_plan *plan);
int stem_channel_record_offset(const stem_plan *plan, int ch);

/* Rows of channel ch on this rank: its local probes, or 1 for a scan channel. */
static inline long stem_result_rows(const stem_result *res, int ch)
{
    return stem_channel_per_probe(ch) ? res->n_probes : 1;
}

int stem_result_alloc(const stem_plan *plan, stem_result *res);
/* Bytes of n_rows rows of every per-probe channel (stem_result_alloc_rows' layout). */
size_t stem_result_rows_bytes(const stem_plan *plan, long n_rows);
/* As stem_result_alloc, but the per-probe channels in rows (stem_result_rows_bytes(plan, n_rows)
 * bytes, zero, owned by the caller): the rows of a node's probes, this rank's row0 rows in, so
 * that its threads may fill any of them, taking probes from queue (stem_dispatch_queued). */
int stem_result_alloc_rows(const stem_plan *plan, void *rows, long row0, long n_rows, struct stem_work_queue_s *queue,
                           stem_result *res);
void stem_result_free(stem_result *res);
/* One probe's pattern (n_pixels intensities; bin[k]: the written pattern's bin of pixel k,
 * -1 cropped away) added to the 4D slot of local probe p and to PACBED, whichever are kept.
 * Thread safe: PACBED, shared by a rank's worker threads, is added under its lock, exactly
 * (scan_sum), so the order in which the workers come does not change a bit. */
void stem_result_add_pattern(stem_result *res, long p, const int *bin, const float *intensity, int n_pixels);
/* Scan channel ch's exact sums as doubles (each rounded once): out[width[ch]]. */
void stem_result_scan_values(const stem_result *res, int ch, double *out);
/* Every scan channel's row set from its exact sums divided by count (probes x configurations:
 * the mean), once the sums hold every rank's probes (the campaign's exact sums: accumulator.h). */
void stem_result_scan_mean(stem_result *res, double count);
/* The per-probe channels' sums of probes [q0, q1) into values: intensity-weighted sums
 * divided by the total, then every sum divided by the number of configurations (standard_errors.h
 * stem_result_finalise takes the standard errors from the sums first). */
void stem_result_means_range(stem_result *res, int n_configs, long q0, long q1);
/* Every channel's sums set to zero. */
void stem_result_zero(stem_result *res);
/* res += weight * part, channel by channel (the same plan's results). */
void stem_result_add_scaled(stem_result *res, const stem_result *part, double weight);

#endif
