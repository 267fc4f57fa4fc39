/* The test hooks read once (test_hooks.h). */
#include "test_hooks.h"

#include <pthread.h>
#include <stdlib.h>

static stem_test_hooks_t hooks;
static pthread_once_t hooks_once = PTHREAD_ONCE_INIT;

static int env_int(const char *name, int unset)
{
    const char *v = getenv(name);
    return v ? atoi(v) : unset;
}

static double env_double(const char *name, double unset)
{
    const char *v = getenv(name);
    return v ? atof(v) : unset;
}

static void read_hooks(void)
{
    hooks.poison_result = getenv("STEMSIM_TEST_POISON_RESULT");
    hooks.pause_at = getenv("STEMSIM_TEST_PAUSE_AT");
    hooks.pause_s = env_double("STEMSIM_TEST_PAUSE_S", 5);
    hooks.kill_after_units = env_int("STEMSIM_TEST_KILL_AFTER_UNITS", -1);
    hooks.kill_in_checkpoint = env_int("STEMSIM_TEST_KILL_IN_CHECKPOINT", -1);
    hooks.fail_rank = env_int("STEMSIM_TEST_FAIL_RANK", -1);
    hooks.fault = getenv("STEMSIM_TEST_FAULT");
    hooks.background_take = getenv("STEMSIM_TEST_BACKGROUND_TAKE") != NULL;
    hooks.build_ahead = getenv("STEMSIM_TEST_BUILD_AHEAD") != NULL;
    hooks.unit_delay_s = env_double("STEMSIM_TEST_UNIT_DELAY", 0);
    hooks.gpu_free_gib = env_double("STEMSIM_TEST_GPU_FREE_GIB", 0);
}

const stem_test_hooks_t *stem_test_hooks(void)
{
    pthread_once(&hooks_once, read_hooks);
    return &hooks;
}
