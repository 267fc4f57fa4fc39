/* Local dispatcher: hands batches of work items [begin, end) to worker
 * threads; each worker owns its workspace (set up once, torn down at the end). */
#ifndef STEM_DISPATCHER_H
#define STEM_DISPATCHER_H

#include "stem.h"

typedef struct {
    void *ctx;
    int (*setup)(void *ctx, int worker); /* optional */
    int (*work)(void *ctx, int worker, long begin, long end);
    void (*teardown)(void *ctx, int worker); /* optional */
} stem_work;

/* Runs n_items in batches over n_workers threads; stops early on the first error or a stop
 * signal. stage: the progress line's name. */
int stem_dispatch(const stem_work *work, long n_items, int batch, int n_workers, const char *stage);

/* A batch counter shared by several processes (memory shared by the ranks of a node): their
 * threads take batches of one run of items from it, whichever is free first. word: one 64-bit
 * word in the shared memory, zero before the first run; generation: this process's count of
 * runs, the same sequence of runs on every process (the word holds the run's generation in
 * its top 24 bits, so no one resets it between runs and no barrier is needed before one: a
 * process moves to the next run only once every item of this one is taken). */
typedef struct stem_work_queue_s {
    void *word; /* _Atomic uint64_t in the shared memory */
    unsigned generation;
    long taken; /* items this process computed in its runs so far */
} stem_work_queue;
/* The bytes a queue's word takes at the start of a shared buffer: a cache line of its own. */
#define STEM_WORK_QUEUE_BYTES 64

/* stem_dispatch of the n_items of one run of queue over this process's n_workers threads:
 * work sees the items it takes (any of [0, n_items)); the others are the other processes'.
 * queue NULL: stem_dispatch, every item here. */
int stem_dispatch_queued(const stem_work *work, long n_items, int batch, int n_workers, const char *stage,
                         stem_work_queue *queue);
/* The same for a short step that must finish whole (the campaign's sums): every item runs even
 * when a stop signal is pending (stem_dispatch ends its stage early then), quietly, in about
 * four batches a worker. */
int stem_dispatch_whole(const stem_work *work, long n_items, int n_workers);
/* The same for one part of a longer stage whose caller reports the stage's progress (the
 * rounds of PRISM's S-matrix step): printed only if this part alone runs past 2 s. */
int stem_dispatch_quiet(const stem_work *work, long n_items, int batch, int n_workers, const char *stage);

#endif
