/* The output file's life around its writing, beside io/publish.c (which reserves the
 * temporary and renames it into place): the steps before HDF5 opens the file and the
 * sequence after its content. Collective over the file's communicator; every call
 * returns the same status on every rank. */
#ifndef STEM_FINISH_H
#define STEM_FINISH_H

#include "../src/plan.h"
#include "h5_collective.h"

/* Test hook (finish.c): STEMSIM_TEST_PAUSE_AT=stage waits there on rank 0 (tick: NULL, or
 * called every 50 ms; its non-zero status ends the wait and is returned). */
int stem_output_test_pause(const char *stage, int (*tick)(void *), void *ctx);
/* Rank 0 checks the temporary is still the file it created (agree after it). */
int stem_finish_verify(const stem_h5_file *f);
/* Rank 0: the reserve's share for this file is given back just before it is written
 * (the margin and the EMD copy's share stay); the test hook "write" pauses here. */
int stem_finish_give_space(const stem_h5_file *f);
/* After the content, whatever its status rc: the file closed (discarded when rc failed),
 * [output] layout = emd converted on rank 0, then published under its final name; on any
 * failure before publishing the temporary is removed. Returns the agreed status. */
int stem_finish(stem_h5_file *f, const stem_plan *plan, int rc);

#endif
