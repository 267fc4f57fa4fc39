/* Thread-pool dispatcher over pthreads with an atomic batch counter. */
#include "dispatcher.h"

#include "signals.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

typedef struct {
    const stem_work *work;
    long n_items;
    int batch;
    atomic_long next, done;
    atomic_int status;
    int whole; /* every item, signal or not (stem_dispatch_whole) */
    stem_progress progress;
} dispatch_state;

typedef struct {
    dispatch_state *state;
    int worker;
} worker_arg;

static void *worker_main(void *p)
{
    worker_arg *arg = p;
    dispatch_state *s = arg->state;
    const stem_work *w = s->work;
    int err = w->setup ? w->setup(w->ctx, arg->worker) : STEM_OK;
    /* a stop signal ends the stage early; the campaign's next safe point
     * notices it on every rank and discards the partial result */
    while (!err && !atomic_load(&s->status) && (s->whole || !stem_signal_pending())) {
        long b = atomic_fetch_add(&s->next, s->batch);
        if (b >= s->n_items) break;
        long e = b + s->batch < s->n_items ? b + s->batch : s->n_items;
        err = w->work(w->ctx, arg->worker, b, e);
        long done = atomic_fetch_add(&s->done, e - b) + (e - b);
        if (arg->worker == 0) stem_progress_update(&s->progress, done);
    }
    if (err) {
        int zero = 0;
        atomic_compare_exchange_strong(&s->status, &zero, err);
    }
    if (w->teardown) w->teardown(w->ctx, arg->worker);
    return NULL;
}

static int dispatch(const stem_work *work, long n_items, int batch, int n_workers, const char *stage, int quiet,
                    int whole);

int stem_dispatch(const stem_work *work, long n_items, int batch, int n_workers, const char *stage)
{
    return dispatch(work, n_items, batch, n_workers, stage, 0, 0);
}

int stem_dispatch_whole(const stem_work *work, long n_items, int n_workers)
{
    long batch = n_items / (4L * (n_workers > 0 ? n_workers : 1)) + 1; /* four batches a worker: even ends */
    return dispatch(work, n_items, (int)(batch < (1L << 30) ? batch : (1L << 30)), n_workers, "the campaign's sums", 1,
                    1);
}

int stem_dispatch_quiet(const stem_work *work, long n_items, int batch, int n_workers, const char *stage)
{
    return dispatch(work, n_items, batch, n_workers, stage, 1, 0);
}

static int dispatch(const stem_work *work, long n_items, int batch, int n_workers, const char *stage, int quiet,
                    int whole)
{
    if (n_items <= 0) return STEM_OK;
    if (n_workers < 1) n_workers = 1;
    long max_workers = (n_items + batch - 1) / batch;
    if (n_workers > max_workers) n_workers = (int)max_workers;
    dispatch_state s = {.work = work, .n_items = n_items, .batch = batch, .whole = whole};
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
    if (!status) stem_progress_end(&s.progress);
    return status;
}
