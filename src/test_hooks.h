/* The test hooks: STEMSIM_TEST_* environment variables that let the test suite reach a
 * failure, a pause or a kill at a chosen moment. Read once, here, into one struct; every
 * other file asks stem_test_hooks() instead of the environment (docs/developers.md, "Test
 * hooks", lists them). Unset, each hook is off and stemsim behaves as without it. */
#ifndef STEM_TEST_HOOKS_H
#define STEM_TEST_HOOKS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    const char *poison_result; /* STEMSIM_TEST_POISON_RESULT: nan | zero | gain (src/result_check.c) */
    const char *pause_at;      /* STEMSIM_TEST_PAUSE_AT: a stage to pause at (io/finish.c) */
    double pause_s;            /* STEMSIM_TEST_PAUSE_S: for this long (default 5 s) */
    int kill_after_units;      /* STEMSIM_TEST_KILL_AFTER_UNITS: SIGKILL as a store begins with this many done */
    int kill_in_checkpoint;    /* STEMSIM_TEST_KILL_IN_CHECKPOINT: SIGKILL halfway through a store of this many */
    int fail_rank;             /* STEMSIM_TEST_FAIL_RANK: this rank fails as the units start (mpi/phonon_loop.c) */
    const char *fault;         /* STEMSIM_TEST_FAULT: SITE:rank, an allocation failure there */
    int background_take;       /* STEMSIM_TEST_BACKGROUND_TAKE: the sums taken in the background on any engine */
    int build_ahead;           /* STEMSIM_TEST_BUILD_AHEAD: the next unit's transmission built ahead on any engine */
    double unit_delay_s;       /* STEMSIM_TEST_UNIT_DELAY: a wait after each unit (time to signal a job) */
    double gpu_free_gib;       /* STEMSIM_TEST_GPU_FREE_GIB: the free memory each GPU pretends to have */
} stem_test_hooks_t;

/* The hooks, read from the environment on the first call (any thread); -1 or 0 / NULL: off. */
const stem_test_hooks_t *stem_test_hooks(void);

#ifdef __cplusplus
}
#endif
#endif
