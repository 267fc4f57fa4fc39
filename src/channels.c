/* The output channel table (channels.h). */
#include "channels.h"

const stem_channel stem_channel_table[STEM_N_CHANNELS] = {
    /* no standard error for 4D patterns (it would double the largest output), nor for the
     * plane-wave images (a whole image per configuration, float32) */
    [STEM_CH_RINGS] = {"rings", 0, STEM_FINAL_MEAN, 1, 1},
    [STEM_CH_IMAGES] = {"images", 0, STEM_FINAL_MEAN, 1, 1},
    [STEM_CH_TOTAL] = {"total_intensity", 0, STEM_FINAL_MEAN, 1, 1},
    [STEM_CH_COM] = {"dpc_com", 0, STEM_FINAL_PER_TOTAL, 1, 1},
    [STEM_CH_SEGMENTS] = {"segments", 0, STEM_FINAL_MEAN, 1, 1},
    [STEM_CH_CBED] = {"cbed", 1, STEM_FINAL_MEAN, 0, 0},
    [STEM_CH_EXIT] = {"exit_wave", 1, STEM_FINAL_MEAN, 0, 0},
    [STEM_CH_HRTEM] = {"hrtem", 1, STEM_FINAL_MEAN, 0, 0},
};

long stem_channel_width(const stem_plan *plan, int ch)
{
    if (plan->dist) { /* the wave in slabs: this rank's rows of the images, and the summed total */
        if (ch == STEM_CH_TOTAL) return 1;
        if (ch == STEM_CH_HRTEM) return plan->dist_rows * plan->nx;
        if (ch == STEM_CH_EXIT) return plan->opt.save_exit_wave ? 2 * plan->dist_rows * plan->nx : 0;
        return 0;
    }
    switch ((stem_channel_id)ch) {
    case STEM_CH_RINGS: return plan->n_bins;
    case STEM_CH_IMAGES: return plan->n_images;
    case STEM_CH_TOTAL: return 1;
    case STEM_CH_COM: return 2; /* accumulated always: DPC needs no second pass */
    case STEM_CH_SEGMENTS: return (long)plan->seg_n * plan->seg_rings;
    case STEM_CH_CBED: return plan->opt.save_4d ? (long)plan->cbed_nx * plan->cbed_ny : 0;
    case STEM_CH_EXIT: return plan->algorithm == STEM_ALG_HRTEM && plan->opt.save_exit_wave ? 2L * plan->nx * plan->ny : 0;
    case STEM_CH_HRTEM: return plan->algorithm == STEM_ALG_HRTEM ? (long)plan->nx * plan->ny : 0;
    default: return 0;
    }
}

double stem_channel_bytes_per_probe(const stem_plan *plan)
{
    double bytes = 0;
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++)
        bytes += (double)stem_channel_width(plan, ch) * (stem_channel_table[ch].is_float ? 4 : 8);
    return bytes;
}

long stem_channel_error_width(const stem_plan *plan, int ch)
{
    if (plan->n_configs < 2 || plan->dist || !plan->opt.standard_errors || !stem_channel_table[ch].error) return 0;
    if ((ch == STEM_CH_RINGS && !plan->opt.save_3d) || (ch == STEM_CH_COM && !plan->opt.save_dpc)) return 0;
    long w = stem_channel_width(plan, ch);
    /* the centre of mass is a ratio of sums: its co-moments with the total (and the total's own state) */
    if (stem_channel_table[ch].final == STEM_FINAL_PER_TOTAL) return 2 * w;
    return w;
}

double stem_channel_error_bytes_per_probe(const stem_plan *plan)
{
    double bytes = 0;
    for (int ch = 0; ch < STEM_N_CHANNELS; ch++) {
        long e = stem_channel_error_width(plan, ch);
        if (e) bytes += 8.0 * (e + stem_channel_width(plan, ch)); /* the state, and the sums before a configuration */
    }
    return bytes;
}

int stem_channel_record_offset(const stem_plan *plan, int ch)
{
    int off = 0;
    for (int c = 0; c < ch; c++)
        if (stem_channel_table[c].gpu_record) off += (int)stem_channel_width(plan, c);
    return off;
}

int stem_channel_record_stride(const stem_plan *plan) { return stem_channel_record_offset(plan, STEM_N_CHANNELS); }
