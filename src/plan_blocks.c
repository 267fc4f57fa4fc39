/* The 4D patterns streamed to the output in blocks of probes (plan.h: probe_block): the
 * block size from the memory the plan has, and what it costs. A block holds every
 * configuration's patterns of its probes until it is written, so the 4D part of the results
 * is bounded by one block whatever the scan; the transmission functions of every
 * configuration are kept where they fit (else built again for each block). */
#include "plan.h"

#include <math.h>

#include "accumulator.h"
#include "series.h"

#define STEM_BLOCK_MARGIN 0.97 /* of the memory limit, for the blocks' choice */
/* What a block's collective write holds beyond the patterns (HDF5's and MPI-IO's buffers):
 * streamed runs on the GPU machine peaked 9 MiB above an estimate without it */
#define STEM_BLOCK_WRITE_BYTES (32.0 * 1048576)

/* Why this run cannot stream its 4D patterns (NULL: it can): a plain run (no series: one
 * point, finished as it goes; checkpointed or not) of scanned probes whose patterns are kept. */
static const char *not_streamable(const stem_plan *plan, const stem_config *cfg)
{
    if (!plan->opt.save_4d) return "no 4D patterns";
    if (plan->algorithm != STEM_ALG_MULTISLICE && plan->algorithm != STEM_ALG_PRISM) return "one wave (hrtem, cbed)";
    if (plan->dist) return "the wave in slabs";
    if (stem_series_active(cfg)) return "a [series] or [output] depths campaign keeps its points' patterns whole";
    return NULL;
}

/* Bytes of this rank's whole-share 4D results in the plan's estimate (stem_plan_estimate_memory in
 * plan_memory.c): each unit's patterns (a focal spread's part, the GPU's last unit beside them), the
 * exact sums (int64) and the finished point's. */
static double whole_4d_bytes(const stem_plan *plan, double w, long local)
{
    double units =
        1 + (plan->opt.focal_spread > 0 && plan->opt.focal_points > 1) + (plan->opt.device != STEM_DEVICE_CPU);
    return (double)local * w * (4.0 * units + 8.0 + 4.0);
}

/* Bytes per probe of a block: its unit result of every channel (twice with a focal spread)
 * and the 4D sums; the block's probes are finished in place. */
static double block_bytes_per_probe(const stem_plan *plan, double w)
{
    double focal = plan->opt.focal_spread > 0 && plan->opt.focal_points > 1 ? 2 : 1;
    return focal * stem_channel_bytes_per_probe(plan) + 8.0 * w;
}

void stem_plan_choose_blocks(stem_plan *plan, const stem_config *cfg)
{
    plan->probe_block = 0;
    plan->n_blocks = 1;
    plan->keep_configs = 1;
    long share = (plan->n_probes + plan->layout.group_size - 1) / plan->layout.group_size; /* the largest */
    long local = plan->probe_end - plan->probe_begin;
    if (not_streamable(plan, cfg) || share < 2) return;
    double w = (double)stem_channel_width(plan, STEM_CH_CBED);
    double fixed = plan->mem_total - whole_4d_bytes(plan, w, local) + STEM_BLOCK_WRITE_BYTES;
    double per = block_bytes_per_probe(plan, w);
    double shared =
        plan->layout.shared_ranks > 1 && plan->opt.device == STEM_DEVICE_CPU ? plan->layout.shared_ranks : 1;
    double keep = (plan->n_configs - 1) * 8.0 * plan->nx * (double)plan->ny * plan->n_slices / shared;
    long block = cfg->opt.probe_block;
    if (block == 0) { /* auto: stream only what does not fit */
        if (plan->mem_total <= plan->mem_limit) return;
        /* a margin for what the estimate does not see (the allocator, HDF5 and MPI-IO's own
         * buffers): 32 GiB filled to the byte peaked 9 MiB above it on the GPU machine */
        double room = plan->mem_limit * STEM_BLOCK_MARGIN;
        double with_keep = floor((room - fixed - keep) / per);
        long enough = share < 256 ? share : 256; /* a block that keeps a GPU's batches full */
        block = (long)fmin(with_keep, (double)share);
        if (plan->n_configs > 1 && with_keep < (double)enough)
            block = (long)fmin(floor((room - fixed) / per), (double)share);
        if (block < 1) return; /* not even one probe: the memory check refuses, naming the results */
    }
    if (block >= share) return; /* one block: the whole share, as an unstreamed run */
    plan->probe_block = block;
    plan->n_blocks = (int)((share + block - 1) / block);
    plan->keep_configs = plan->n_configs == 1 || fixed + keep + per * (double)block <= plan->mem_limit;
    double before = plan->mem_results;
    plan->mem_results += per * (double)block + STEM_BLOCK_WRITE_BYTES - whole_4d_bytes(plan, w, local);
    if (plan->n_configs > 1 && plan->keep_configs) plan->mem_potential += keep;
    plan->mem_total += plan->mem_results - before + (plan->n_configs > 1 && plan->keep_configs ? keep : 0);
}

void stem_plan_print_blocks(const stem_plan *plan, FILE *out)
{
    if (!plan->opt.save_4d || plan->algorithm == STEM_ALG_HRTEM || plan->algorithm == STEM_ALG_CBED) return;
    double w = (double)stem_channel_width(plan, STEM_CH_CBED), GiB = 1073741824.0;
    double disk = 4.0 * w * (double)plan->n_probes;
    if (!plan->probe_block) {
        fprintf(out,
                "  4D patterns        %.3f GiB on disk, held whole in memory (%.3f GiB on this rank) and "
                "written at the end\n",
                disk / GiB, whole_4d_bytes(plan, w, plan->probe_end - plan->probe_begin) / GiB);
        return;
    }
    fprintf(out,
            "  4D patterns        %.3f GiB on disk, streamed in %d blocks of %ld probes per rank (%.3f GiB of "
            "results in memory, not %.3f); every configuration of a block computed before it is written; ",
            disk / GiB, plan->n_blocks, plan->probe_block, block_bytes_per_probe(plan, w) * plan->probe_block / GiB,
            whole_4d_bytes(plan, w, plan->probe_end - plan->probe_begin) / GiB);
    if (plan->n_configs == 1)
        fprintf(out, "one configuration");
    else if (plan->keep_configs)
        fprintf(out, "the %d configurations' transmission functions kept (%.3f GiB)", plan->n_configs,
                8.0 * plan->nx * (double)plan->ny * plan->n_slices * plan->n_configs / GiB);
    else
        fprintf(out, "the transmission functions built again for each block (%d x that step: they do not fit)",
                plan->n_blocks);
    if (plan->algorithm == STEM_ALG_PRISM && plan->n_configs * plan->n_blocks > plan->n_configs)
        fprintf(out, "; PRISM's S-matrix computed again for each block (%d x that step)", plan->n_blocks);
    fprintf(out, "\n");
}
