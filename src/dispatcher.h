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
/* The same for a short step that must finish whole (the campaign's sums): every item runs even
 * when a stop signal is pending (stem_dispatch ends its stage early then), quietly, in about
 * four batches a worker. */
int stem_dispatch_whole(const stem_work *work, long n_items, int n_workers);
/* The same for one part of a longer stage whose caller reports the stage's progress (the
 * rounds of PRISM's S-matrix step): printed only if this part alone runs past 2 s. */
int stem_dispatch_quiet(const stem_work *work, long n_items, int batch, int n_workers, const char *stage);

#endif
