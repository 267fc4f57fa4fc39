/* The output file's life around its writing, beside io/publish.c: before HDF5 opens the
 * reserved temporary (still ours, the reserve's share given back), and after the content
 * (the collective close, [output] layout = emd's conversion on rank 0 while the others
 * follow, the publication under the final name, or the temporary removed). */
#include "finish.h"

#include "emd.h"

#include "../src/signals.h"
#include "../src/test_hooks.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

/* Test hook (tests/integration/faults.py): STEMSIM_TEST_PAUSE_AT=<stage> makes rank 0
 * announce the stage on stderr and wait STEMSIM_TEST_PAUSE_S seconds (default 5) there,
 * so a test can fill the disk or send a signal at that moment: "write" (the reserve
 * given back, the file not yet created), "emd" (the conversion's file created, its
 * share of the reserve still held; every rank ticking), "checkpoint" (a campaign's, before
 * its checkpoint is opened: mpi/campaign.c). */
int stem_output_test_pause(const char *stage, int (*tick)(void *), void *ctx)
{
    const char *at = stem_test_hooks()->pause_at;
    if (!at || strcmp(at, stage)) return STEM_OK;
    double seconds = stem_test_hooks()->pause_s, end = stem_wall_time() + seconds;
    fprintf(stderr, "stemsim: test hook: pausing %.1f s at %s\n", seconds, stage);
    int rc = STEM_OK;
    while (!rc && stem_wall_time() < end) {
        usleep(50000);
        if (tick) rc = tick(ctx);
    }
    return rc;
}

/* The EMD conversion runs on rank 0 while the others wait; between its steps every rank
 * tells whether a signal reached it (MPI_MAX of {rank 0 still converting, signal}), so
 * a signal anywhere stops the conversion within a step and no rank waits for the
 * watchdog. Rank 0 ticks at most every 0.2 s; the others follow until it says done. */
typedef struct {
    MPI_Comm comm;
    const stem_output_target *target;
    double last;
} stem_output_emd_run;

static int stem_output_emd_exchange(MPI_Comm comm, int converting, int *sig)
{
    int mine[2] = {converting, stem_signal_pending()}, all[2];
    if (MPI_Allreduce(mine, all, 2, MPI_INT, MPI_MAX, comm) != MPI_SUCCESS)
        return STEM_FAIL(STEM_ERR_MPI, "MPI_Allreduce during the EMD conversion failed");
    *sig = all[1];
    return all[0];
}

static int stem_output_emd_tick_now(void *ctx)
{
    stem_output_emd_run *r = ctx;
    int sig = 0;
    r->last = stem_wall_time();
    if (stem_output_emd_exchange(r->comm, 1, &sig) == STEM_ERR_MPI) return STEM_ERR_MPI;
    return sig ? stem_signal_status(sig) : STEM_OK;
}

static int stem_output_emd_tick(void *ctx)
{
    stem_output_emd_run *r = ctx;
    return stem_wall_time() - r->last < 0.2 ? STEM_OK : stem_output_emd_tick_now(ctx);
}

/* Before the EMD file is closed: a failed file is emptied and the reserve's margin goes,
 * so the close always finds room. */
static void stem_output_emd_before_close(void *ctx, const char *emd, int failed)
{
    stem_output_emd_run *r = ctx;
    if (failed && truncate(emd, 0) != 0) stem_warn("cannot truncate the unfinished %s: %s", emd, strerror(errno));
    stem_output_target_release(r->target, 0);
}

/* Rank 0's conversion itself: "<file>.XXXXXX.emd.incomplete" created exclusively (the
 * signal handler removes it too), converted, renamed over the native temporary. */
static int stem_output_emd_rank0(stem_h5_file *f, const stem_plan *plan, stem_output_emd_run *run,
                                 stem_output_target *converted)
{
    const char *temp = f->target->temp_path;
    char emd_path[STEM_OUTPUT_NAME_MAX + 16];
    stem_output_target_sibling(f->target, "emd", emd_path, sizeof emd_path);
    int fd = open(emd_path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644), rc = STEM_OK;
    struct stat st;
    double t = stem_wall_time();
    if (fd < 0) return STEM_FAIL(STEM_ERR_IO, "[output] layout = emd: cannot create %s: %s", emd_path, strerror(errno));
    close(fd);
    stem_signal_cleanup_slot(STEM_SIGNAL_SLOT_EMD, emd_path);
    rc = stem_output_test_pause("emd", stem_output_emd_tick_now, run);
    if (rc) {
        unlink(emd_path);
        stem_signal_cleanup_slot(STEM_SIGNAL_SLOT_EMD, NULL);
        return rc;
    }
    stem_output_target_release(f->target, STEM_OUTPUT_RESERVE_MARGIN); /* the copy's share is for the copy */
    stem_emd_hooks hooks = {stem_output_emd_tick, stem_output_emd_before_close, run};
    rc = stem_emd_convert(temp, emd_path, plan, &hooks);
    if (!rc && (rename(emd_path, temp) != 0 || stat(temp, &st) != 0))
        /* a signal's handler removed both temporaries: the stop, not a failure of the disk */
        rc = stem_signal_pending() ? stem_signal_status(stem_signal_pending())
                                   : STEM_FAIL(STEM_ERR_IO, "[output] layout = emd: cannot rename %s to %s: %s",
                                               emd_path, temp, strerror(errno));
    if (rc && rc != STEM_ERR_MPI && stem_signal_pending()) rc = stem_signal_status(stem_signal_pending());
    if (rc) unlink(emd_path);
    stem_signal_cleanup_slot(STEM_SIGNAL_SLOT_EMD, NULL);
    if (rc) return rc;
    *converted = *f->target;
    converted->dev = st.st_dev;
    converted->ino = st.st_ino;
    f->target = converted;
    stem_info("output written in Prismatic's EMD layout ([output] layout = emd) in %.2f s", stem_wall_time() - t);
    return STEM_OK;
}

/* [output] layout = emd: rank 0 rewrites the closed native temporary as Prismatic's tree
 * and renames it over the native one, which the publication then renames into place as
 * usual (f->target becomes *converted, the same names on the converted file); the other
 * ranks follow its ticks. */
static int stem_output_as_emd(stem_h5_file *f, const stem_plan *plan, stem_output_target *converted)
{
    int rc = STEM_OK, sig = 0;
    stem_output_emd_run run = {f->comm, f->target, stem_wall_time()};
    if (f->rank == 0) {
        rc = stem_output_emd_rank0(f, plan, &run, converted);
        if (stem_output_emd_exchange(f->comm, 0, &sig) == STEM_ERR_MPI && !rc) rc = STEM_ERR_MPI;
    } else {
        int converting;
        do converting = stem_output_emd_exchange(f->comm, 0, &sig);
        while (converting == 1);
        if (converting == STEM_ERR_MPI) rc = STEM_ERR_MPI;
    }
    return stem_h5_agree(f->comm, rc);
}

static int stem_output_publish(const stem_h5_file *f)
{
    int rc = STEM_OK;
    if (MPI_Barrier(f->comm) != MPI_SUCCESS)
        return STEM_FAIL(STEM_ERR_MPI, "output %s: MPI_Barrier before the rename failed", f->path);
    if (f->rank == 0) rc = stem_output_target_publish(f->target);
    if (MPI_Bcast(&rc, 1, MPI_INT, 0, f->comm) != MPI_SUCCESS)
        return STEM_FAIL(STEM_ERR_MPI, "output %s: MPI_Bcast after the rename failed", f->path);
    return rc;
}

int stem_finish_give_space(const stem_h5_file *f)
{
    if (f->rank) return STEM_OK;
    stem_output_target_release(f->target, STEM_OUTPUT_RESERVE_MARGIN + f->target->reserve_later);
    return stem_output_test_pause("write", NULL, NULL);
}

int stem_finish_verify(const stem_h5_file *f) { return f->rank == 0 ? stem_output_target_verify(f->target) : STEM_OK; }

int stem_finish(stem_h5_file *f, const stem_plan *plan, int rc)
{
    const stem_output_target *target = f->target;
    stem_output_target converted;
    /* Close on every path (collective H5Fclose), then agree on the outcome. */
    int crc = stem_h5_file_close(f, rc != STEM_OK);
    if (!rc) rc = stem_h5_agree(f->comm, crc);
    if (!rc && plan->opt.layout_emd) rc = stem_output_as_emd(f, plan, &converted);
    if (!rc) rc = stem_output_publish(f);
    /* a failure before or during writing: the temporary goes (a failed
     * publish has already kept the complete file and said where) */
    else if (f->rank == 0)
        stem_output_target_discard(target);
    f->target = target; /* not the local copy beyond this call */
    return rc;
}
