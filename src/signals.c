/* Signal handling: see signals.h for the protocol. */
#include "signals.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "config.h"

static volatile sig_atomic_t stem_signal_caught = 0;
static volatile sig_atomic_t stem_signal_done = 0;
static volatile sig_atomic_t stem_signal_checkpoint = 0;      /* a campaign keeps its finished units */
static volatile sig_atomic_t stem_signal_deadline_status = 0; /* the exit status of a missed deadline (0: none) */
static int stem_signal_rank = 0;
/* Written only with the signals held, read by the handler: the unfinished output and
 * its companions (the EMD conversion's temporary, the space reserve). */
static char stem_signal_path[STEM_SIGNAL_SLOTS][STEM_PATH_MAX + 64];

static void stem_signal_unlink_all(void)
{
    for (int i = 0; i < STEM_SIGNAL_SLOTS; i++)
        if (stem_signal_path[i][0]) unlink(stem_signal_path[i]);
}

static const char *stem_signal_name(int sig)
{
    switch (sig) {
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGUSR1: return "SIGUSR1";
    default: return "a signal";
    }
}

static void stem_signal_say(const char *a, const char *b, const char *c)
{
    const char *parts[3] = {a, b, c};
    for (int i = 0; i < 3; i++)
        if (parts[i] && write(STDERR_FILENO, parts[i], strlen(parts[i])) < 0) return;
}

/* The watchdog: a rank that did not reach a safe point in time leaves now. */
static void stem_signal_watchdog(int sig)
{
    (void)sig;
    stem_signal_unlink_all();
    if (!stem_signal_caught && stem_signal_deadline_status) {
        stem_signal_say("stemsim: error: gave up waiting for the other ranks after a failed write of the output (a "
                        "full disk can leave HDF5's ranks out of step); its files are removed\n",
                        NULL, NULL);
        _exit(stem_signal_deadline_status);
    }
    _exit(stem_signal_status(stem_signal_caught ? stem_signal_caught : SIGTERM));
}

static void stem_signal_handler(int sig)
{
    if (stem_signal_done) {
        if (stem_signal_rank == 0)
            stem_signal_say("stemsim: received ", stem_signal_name(sig),
                            " after the result was published; it is complete\n");
        return;
    }
    if (stem_signal_caught) {
        /* a second signal (Ctrl-C twice): the user does not want to wait for a safe point */
        stem_signal_unlink_all();
        _exit(stem_signal_status(stem_signal_caught));
    }
    stem_signal_caught = sig;
    stem_signal_unlink_all();
    /* "received", not "stopped by the user": MPI_Abort of a failed rank also arrives as SIGTERM */
    if (stem_signal_rank == 0)
        stem_signal_say("stemsim: received ", stem_signal_name(sig),
                        stem_signal_checkpoint ? ": stopping at the next safe point; finished units stay in the "
                                                 "checkpoint\n"
                                               : ": stopping at the next safe point; no result will be written\n");
    alarm(STEM_SIGNAL_GRACE_S);
}

static void stem_signal_set(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGUSR1);
}

int stem_signal_install(int rank)
{
    stem_signal_rank = rank;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = stem_signal_handler;
    sa.sa_flags = SA_RESTART; /* MPI and file I/O continue; we stop at safe points */
    stem_signal_set(&sa.sa_mask);
    const int sigs[3] = {SIGTERM, SIGINT, SIGUSR1};
    for (int i = 0; i < 3; i++)
        if (sigaction(sigs[i], &sa, NULL) != 0)
            return STEM_FAIL(STEM_ERR_INTERNAL, "cannot install the %s handler", stem_signal_name(sigs[i]));
    struct sigaction wd;
    memset(&wd, 0, sizeof wd);
    wd.sa_handler = stem_signal_watchdog;
    sigemptyset(&wd.sa_mask);
    if (sigaction(SIGALRM, &wd, NULL) != 0) return STEM_FAIL(STEM_ERR_INTERNAL, "cannot install the watchdog");
    return STEM_OK;
}

int stem_signal_pending(void) { return stem_signal_caught; }

void stem_signal_keeps_checkpoint(int on) { stem_signal_checkpoint = on; }

int stem_signal_status(int sig) { return 128 + sig; }

void stem_signal_hold(int on)
{
    sigset_t set;
    stem_signal_set(&set);
    pthread_sigmask(on ? SIG_BLOCK : SIG_UNBLOCK, &set, NULL);
}

void stem_signal_cleanup_slot(int slot, const char *path)
{
    if (slot < 0 || slot >= STEM_SIGNAL_SLOTS) return;
    sigset_t set, old;
    stem_signal_set(&set);
    pthread_sigmask(SIG_BLOCK, &set, &old); /* the handler never sees half a path */
    char *dst = stem_signal_path[slot];
    if (path) {
        size_t n = strlen(path);
        if (n >= sizeof stem_signal_path[slot]) n = sizeof stem_signal_path[slot] - 1;
        memcpy(dst, path, n);
        dst[n] = 0;
    } else {
        dst[0] = 0;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void stem_signal_cleanup_path(const char *path) { stem_signal_cleanup_slot(STEM_SIGNAL_SLOT_OUTPUT, path); }

void stem_signal_finished(void) { stem_signal_done = 1; }

void stem_signal_deadline(int seconds, int status)
{
    if (stem_signal_caught) return; /* the grace period after the signal runs instead */
    stem_signal_deadline_status = seconds > 0 ? status : 0;
    alarm(seconds > 0 ? (unsigned)seconds : 0);
}

void stem_signal_orderly_stop(void)
{
    if (stem_signal_caught) alarm(0);
}
