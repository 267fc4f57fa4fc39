/* The transmission build split below one slice (transmission_split.h). */
#include "transmission_split.h"

#include <string.h>

static size_t slice_samples(const stem_plan *plan) { return (size_t)plan->pot_nx * plan->pot_ny; }

/* The node's threads: its ranks' each. */
static long node_workers(const stem_mpi *m, const stem_plan *plan)
{
    return (long)m->share.node_size * (plan->threads > 0 ? plan->threads : 1);
}

int stem_transmission_split_alloc(const stem_mpi *m, const stem_plan *plan, int enable, stem_transmission_split *s)
{
    memset(s, 0, sizeof *s);
    s->buf.win = MPI_WIN_NULL;
    const stem_node_share *share = &m->share;
    if (!enable || !share->active || share->node_size < 2) return STEM_OK;
    stem_node_block_range(share, plan->n_slices, m->layout.group_rank, m->layout.group_size, &s->first, &s->end);
    long workers = node_workers(m, plan), n = s->end - s->first;
    int round = (int)(n < workers ? n : workers);
    size_t bytes = STEM_WORK_QUEUE_BYTES + sizeof(float) * slice_samples(plan) * (size_t)round;
    int fit = 0;
    if (round > 0) STEM_TRY(stem_shared_fits(share, (double)bytes, &fit, NULL, 0)); /* the same round on the node */
    if (!fit) return STEM_OK;
    STEM_TRY(stem_shared_alloc(share, bytes, "the transmission build's samples (split below a slice)", &s->buf));
    if (share->node_rank == 0) memset(s->buf.base, 0, STEM_WORK_QUEUE_BYTES);
    STEM_TRY(stem_shared_sync(share, &s->buf));
    s->queue = (stem_work_queue){s->buf.base, 0, 0};
    s->round = round;
    return STEM_OK;
}

void stem_transmission_split_free(stem_transmission_split *s)
{
    stem_shared_free(&s->buf);
    s->round = 0;
}

/* Bands of rows per slice: about four items per worker of the node in each round. */
static int bands_of(const stem_mpi *m, const stem_plan *plan, long slices)
{
    long b = (4 * node_workers(m, plan) + slices - 1) / slices;
    return (int)(b < 1 ? 1 : (b > plan->pot_ny ? plan->pot_ny : b));
}

int stem_transmission_split_build(const stem_mpi *m, const stem_plan *plan, const stem_potential_table *table,
                                  const stem_atoms *displaced, stem_transmission_split *s, stem_complex *trans, int err)
{
    float *samples = (float *)(void *)((char *)s->buf.base + STEM_WORK_QUEUE_BYTES);
    for (long r0 = s->first; r0 < s->end; r0 += s->round) {
        long r1 = r0 + s->round < s->end ? r0 + s->round : s->end;
        if (!err)
            err = stem_potential_splat_bands(plan, table, displaced, (int)r0, (int)r1, bands_of(m, plan, r1 - r0),
                                             samples, &s->queue);
        STEM_TRY(stem_shared_sync(&m->share, &s->buf)); /* every band of the round is in */
        if (!err) err = stem_transmission_from_splats(plan, table, samples, (int)r0, (int)r1, trans, &s->queue);
        STEM_TRY(stem_shared_sync(&m->share, &s->buf)); /* the round's samples are read: the next may write */
    }
    return err;
}
