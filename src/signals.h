/* Stopping on SIGTERM, SIGINT and SIGUSR1 (Slurm's --signal warning).
 *
 * The handler only records the signal, removes the registered unfinished
 * output (unlink is async-signal-safe, and mpirun sends SIGKILL one second
 * after SIGTERM, too soon for anything else), prints one line on rank 0 and
 * arms a watchdog. The job itself stops at the next safe point: worker loops
 * stop taking batches and the campaign agrees over all ranks after each
 * configuration, so every rank leaves through the same collective path. The
 * watchdog ends a rank that cannot reach a safe point (a peer that never got
 * the signal) within STEM_SIGNAL_GRACE_S seconds; a second signal ends the
 * process at once. */
#ifndef STEM_SIGNALS_H
#define STEM_SIGNALS_H

#include "stem.h"

#define STEM_SIGNAL_GRACE_S 10

/* Files the handler removes: the unfinished output, the EMD conversion's temporary
 * and the output's space reserve (io/publish.h). */
enum { STEM_SIGNAL_SLOT_OUTPUT = 0, STEM_SIGNAL_SLOT_EMD, STEM_SIGNAL_SLOT_RESERVE, STEM_SIGNAL_SLOTS };

/* Install the handlers; rank decides who prints the one line. */
int stem_signal_install(int rank);
/* The signal that asked us to stop, 0 if none (any thread, lock-free). */
int stem_signal_pending(void);
/* A checkpointed campaign: the handler's line says finished units are kept. */
void stem_signal_keeps_checkpoint(int on);
/* Exit status for a stop by signal: 128 + signal number, as shells report it. */
int stem_signal_status(int sig);
/* Path removed by the handler if a signal arrives (NULL: none). The string is
 * copied; call with NULL once the file is published or removed. */
void stem_signal_cleanup_path(const char *path);
/* The same for one of the slots above (cleanup_path is the output's slot). */
void stem_signal_cleanup_slot(int slot, const char *path);
/* Signals are held (not lost) while the result is given its final name, so a
 * result never appears after the job announced it was stopping. */
void stem_signal_hold(int on);
/* After the result is published, a late signal no longer stops anything. */
void stem_signal_finished(void);
/* A step that may wait for ever on a failure path (HDF5's close of a discarded file):
 * after seconds the watchdog removes the registered files and exits with status (no
 * effect after a signal, whose grace period runs instead); seconds 0 cancels it. */
void stem_signal_deadline(int seconds, int status);
/* Every rank reached the safe point after a signal and the job is on its orderly way out
 * (a checkpointed campaign storing its sums, which takes as long as its state's size needs):
 * the watchdog's grace period is cancelled. A second signal still ends the process. */
void stem_signal_orderly_stop(void);

#endif
