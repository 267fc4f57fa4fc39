/* Thread-pool dispatcher over pthreads with an atomic batch counter. */
#include "dispatcher.h"

#include "signals.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct {
    const stem_work *work;
    long n_items;
    int batch;
    _Atomic uint64_t *shared; /* stem_dispatch_queued: the processes' counter (NULL: next) */
    uint64_t generation;      /* its run's tag (24 bits) */
    atomic_long next, done;
    atomic_int status;
    int whole; /* every item, signal or not (stem_dispatch_whole) */
    stem_progress progress;
} dispatch_state;

typedef struct {
    dispatch_state *state;
    int worker;
} worker_arg;

#define GEN_SHIFT 40
#define GEN_MASK ((UINT64_C(1) << 24) - 1)
#define NEXT_MASK ((UINT64_C(1) << GEN_SHIFT) - 1)

/* The next batch's first item from the processes' counter, or n_items when this run's are
 * all taken: a word of an older run (the previous generation) starts this one; a newer run's
 * means every item of this one was taken. */
static long take_shared(dispatch_state *s)
{
    uint64_t old = atomic_load(s->shared), gen = s->generation, prev = (gen - 1) & GEN_MASK;
    for (;;) {
        uint64_t g = old >> GEN_SHIFT, next = old & NEXT_MASK;
        if (g == gen && next >= (uint64_t)s->n_items) return s->n_items;
        if (g != gen && g != prev) return s->n_items; /* a newer run: this one is done */
        uint64_t b = g == gen ? next : 0;
        if (atomic_compare_exchange_weak(s->shared, &old, gen << GEN_SHIFT | (b + (uint64_t)s->batch))) return (long)b;
    }
}

static long take_batch(dispatch_state *s) { return s->shared ? take_shared(s) : atomic_fetch_add(&s->next, s->batch); }

static void *worker_main(void *p)
{
    worker_arg *arg = p;
    dispatch_state *s = arg->state;
    const stem_work *w = s->work;
    int err = w->setup ? w->setup(w->ctx, arg->worker) : STEM_OK;
    /* a stop signal ends the stage early; the campaign's next safe point
     * notices it on every rank and discards the partial result */
    while (!err && !atomic_load(&s->status) && (s->whole || !stem_signal_pending())) {
        long b = take_batch(s);
        if (b >= s->n_items) break;
        long e = b + s->batch < s->n_items ? b + s->batch : s->n_items;
        err = w->work(w->ctx, arg->worker, b, e);
        long done = atomic_fetch_add(&s->done, e - b) + (e - b);
        if (arg->worker == 0) stem_progress_update(&s->progress, s->shared ? e : done); /* shared: the node's */
    }
    if (err) {
        int zero = 0;
        atomic_compare_exchange_strong(&s->status, &zero, err);
    }
    if (w->teardown) w->teardown(w->ctx, arg->worker);
    return NULL;
}

static int dispatch(const stem_work *work, long n_items, int batch, int n_workers, const char *stage, int quiet,
                    int whole, stem_work_queue *queue);

int stem_dispatch(const stem_work *work, long n_items, int batch, int n_workers, const char *stage)
{
    return dispatch(work, n_items, batch, n_workers, stage, 0, 0, NULL);
}

int stem_dispatch_whole(const stem_work *work, long n_items, int n_workers)
{
    long batch = n_items / (4L * (n_workers > 0 ? n_workers : 1)) + 1; /* four batches a worker: even ends */
    return dispatch(work, n_items, (int)(batch < (1L << 30) ? batch : (1L << 30)), n_workers, "the campaign's sums", 1,
                    1, NULL);
}

int stem_dispatch_quiet(const stem_work *work, long n_items, int batch, int n_workers, const char *stage)
{
    return dispatch(work, n_items, batch, n_workers, stage, 1, 0, NULL);
}

static int dispatch(const stem_work *work, long n_items, int batch, int n_workers, const char *stage, int quiet,
                    int whole, stem_work_queue *queue)
{
    if (n_items <= 0) return STEM_OK;
    if (n_workers < 1) n_workers = 1;
    long max_workers = (n_items + batch - 1) / batch;
    if (n_workers > max_workers) n_workers = (int)max_workers;
    dispatch_state s = {.work = work, .n_items = n_items, .batch = batch, .whole = whole};
    if (queue) {
        s.shared = queue->word;
        s.generation = ++queue->generation & GEN_MASK;
    }
    atomic_init(&s.next, 0);
    atomic_init(&s.done, 0);
    atomic_init(&s.status, 0);
    if (!quiet)
        stem_progress_begin(&s.progress, stage, n_items);
    else /* a short step run often: reported only if it takes a while */
        stem_progress_begin_quiet(&s.progress, stage, n_items);
    pthread_t *threads = stem_calloc(n_workers, sizeof *threads, "worker threads");
    worker_arg *args = stem_calloc(n_workers, sizeof *args, "worker threads");
    if (!threads || !args) {
        free(threads);
        free(args);
        return STEM_ERR_MEMORY;
    }
    int started = 0;
    for (int i = 0; i < n_workers; i++) {
        args[i] = (worker_arg){&s, i};
        if (i == 0) continue; /* the calling thread is worker 0 */
        if (pthread_create(&threads[i], NULL, worker_main, &args[i])) {
            atomic_store(&s.status, STEM_FAIL(STEM_ERR_INTERNAL, "cannot start worker thread %d of %d", i, n_workers));
            break;
        }
        started = i;
    }
    worker_main(&args[0]);
    for (int i = 1; i <= started; i++) pthread_join(threads[i], NULL);
    free(threads);
    free(args);
    int status = atomic_load(&s.status);
    if (queue) queue->taken += atomic_load(&s.done);
    if (!status) stem_progress_end(&s.progress);
    return status;
}

int stem_dispatch_queued(const stem_work *work, long n_items, int batch, int n_workers, const char *stage,
                         stem_work_queue *queue)
{
    return dispatch(work, n_items, batch, n_workers, stage, 0, 0, queue);
}
