/* Exact running sums of a campaign's points: what a finished unit (one configuration of a
 * tilt's points) adds to, and what the output and the checkpoint are made from.
 *
 * Every value a unit produces is rounded once to a fixed-point integer (int64, frac[ch]
 * fraction bits chosen so that n_configs values of magnitude < 2^bound[ch] cannot overflow)
 * and added as an integer; the channels with a standard error also add the square of that
 * integer (128 bits, exact), and the centre of mass its product with the total's. Integer
 * sums do not depend on order: an uninterrupted run, a run stopped and resumed anywhere,
 * any rank count, fp_groups or GPU stream order give the same bits. The variance comes from
 * the same exact sums, n S2 - S1^2 computed in 128-bit integers (no cancellation), so the
 * standard errors cost one multiply-add per value where the sums are formed.
 *
 * The sums are kept in arrays, each of which is one of two kinds:
 *   part: a per-probe channel's values, this rank's elements [first, first + count) of the
 *         point's global array of `global` elements (the rank's probes, or a distributed
 *         FFT's image rows; `whole`: a distributed FFT's whole sums, the same on every rank
 *         of a group and owned, for storing, by its first rank); summed over the groups
 *   scan: a whole-scan row (PACBED, each configuration's images summed over the scan),
 *         this rank's share; summed over every rank
 * stem_acc_array enumerates them in one fixed order, the order of the checkpoint's payload. */
#ifndef STEM_ACCUMULATOR_H
#define STEM_ACCUMULATOR_H

#include <stdint.h>

#include "channels.h"
#include "plan_types.h"

typedef enum { STEM_ACC_PART, STEM_ACC_SCAN } stem_acc_kind;

typedef enum { STEM_ACC_SUM, STEM_ACC_SQUARES, STEM_ACC_CROSS } stem_acc_role;

/* One array of every point's sums, as the checkpoint and the reductions see it. */
typedef struct {
    stem_acc_kind kind;
    int channel;        /* stem_channel_id (STEM_CH_IMAGES for each configuration's images) */
    stem_acc_role role; /* the values, their squares, or their products with the total */
    size_t elt;         /* bytes per element: 8 (int64) or 16 (stem_fixed128) */
    long count;         /* elements per point on this rank */
    long first, global; /* part: this rank's first element, and the point's elements in all */
    int whole;          /* part: the same elements on every rank of a group (a distributed FFT's sums) */
    char *base;         /* point p's elements at base + p * count * elt */
} stem_acc_array;

typedef struct {
    int n_points, n_configs;
    long n_probes; /* this rank's rows of the per-probe channels (stem_result's) */
    long width[STEM_N_CHANNELS];
    int frac[STEM_N_CHANNELS]; /* fixed-point fraction bits of each channel's values */
    int image_frac;            /* ... of one configuration's images summed over the scan */
    int64_t *sum[STEM_N_CHANNELS];
    stem_fixed128 *squares[STEM_N_CHANNELS]; /* NULL: no standard error */
    stem_fixed128 *cross[STEM_N_CHANNELS];   /* ratio channels with an error: sum of value x total */
    stem_fixed128 *pacbed;                   /* [point][pattern_bins] */
    int64_t *config_images;                  /* [point][config][image] */
    int pattern_bins, n_images;
    long first[STEM_N_CHANNELS], global[STEM_N_CHANNELS];
    int whole[STEM_N_CHANNELS];
    uint8_t *bad; /* [point]: a value not finite or beyond its channel's range was added */
    int n_arrays;
} stem_accumulator;

/* Bytes of every point's sums on this rank under plan (the memory estimate). */
double stem_acc_bytes(const stem_plan *plan, int n_points);
/* Bytes of the whole campaign's sums (the checkpoint's payload), every rank's parts once, of
 * the channels `which` keeps (stem_acc_alloc_channels). */
typedef enum { STEM_ACC_ALL, STEM_ACC_NO_4D, STEM_ACC_ONLY_4D } stem_acc_channels;
double stem_acc_global_bytes(const stem_plan *plan, int n_points, stem_acc_channels which);
int stem_acc_alloc(const stem_plan *plan, int n_points, stem_accumulator *acc);
/* Some of the channels: the streamed 4D patterns' (mpi/campaign_blocks.c) block sums hold only
 * the patterns (no scan rows), the run's sums every other channel and the scan rows. */
int stem_acc_alloc_channels(const stem_plan *plan, int n_points, stem_acc_channels which, stem_accumulator *acc);
void stem_acc_free(stem_accumulator *acc);
/* Array i (0 <= i < acc->n_arrays) in the fixed order. */
stem_acc_array stem_acc_array_at(const stem_accumulator *acc, int i);
/* One configuration's values of point p (a unit's result for that point, this rank's
 * probes, not finalised) added to the sums and set to zero, ready for the next unit, over
 * `threads` worker threads (integer sums: the same bits on any count); config: its number
 * (each configuration's images). */
int stem_acc_take(stem_accumulator *acc, int p, int config, stem_result *res, int threads);
/* The same for a result of fewer probes: its first `rows` probes into the sums' rows
 * [row0, row0 + rows) (a block of the rank's probes). */
int stem_acc_take_rows(stem_accumulator *acc, int p, int config, stem_result *res, long row0, long rows, int threads);
/* Every array of every point set to zero (the other ranks' share once moved to the owners). */
void stem_acc_zero(stem_accumulator *acc, stem_acc_kind kind);
/* Point p's sums into res (allocated for the plan, with stem_result_alloc_errors when
 * standard errors are kept), as the configurations' sums and their M2 state, ready for
 * stem_result_finalise: values as doubles (or floats), M2 and the co-moments exact until
 * the one rounding to double. The scan rows (PACBED's sums, each configuration's images)
 * from this rank's scan arrays. A point with a bad value reads NaN. Over `threads` workers. */
int stem_acc_to_result(const stem_accumulator *acc, int p, stem_result *res, int threads);

#endif
