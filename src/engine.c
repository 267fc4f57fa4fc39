/* Chooses and creates the engine for [compute] device. */
#include "engine.h"

#include <stdlib.h>
#include <string.h>

#include "fft.h"

static void cpu_describe(const stem_engine *e, const stem_plan *plan, FILE *out)
{
    (void)e;
    fprintf(out, "engine: cpu (FFTW), %d worker thread(s) per rank, batch %d\n", plan->threads, plan->batch_size);
}

static int cpu_multislice(const stem_engine *e, const stem_plan *plan, const stem_complex *trans,
                          const stem_detector *det, stem_result *res)
{
    (void)e;
    return stem_multislice_run(plan, trans, det, res);
}

static int cpu_prism_smatrix(const stem_engine *e, const stem_plan *plan, const stem_complex *trans, stem_complex *S_local)
{
    (void)e;
    return stem_prism_smatrix_local(plan, trans, S_local);
}

/* What the CPU engine keeps between configurations: the beam-fastest S-matrix
 * (first-touch page faults once per run, not once per configuration). */
typedef struct {
    stem_complex *by_pixel;
    size_t count;
} cpu_state;

/* The output step reads each pixel's beams together: arrange them beam-fastest first. */
static int cpu_prism_output(const stem_engine *e, const stem_plan *plan, const stem_complex *S_by_beam,
                            const stem_detector *det, stem_result *res)
{
    cpu_state *st = e->state;
    size_t count = (size_t)plan->crop_nx * plan->crop_ny * plan->n_beams;
    if (st->count != count) {
        stem_fft_free(st->by_pixel);
        st->count = 0;
        if (!(st->by_pixel = stem_fft_alloc(count, "S-matrix (beam fastest)"))) return STEM_ERR_MEMORY;
        st->count = count;
    }
    stem_prism_arrange(plan, S_by_beam, st->by_pixel);
    return stem_prism_output(plan, st->by_pixel, det, res);
}

static void cpu_destroy(stem_engine *e)
{
    cpu_state *st = e->state;
    if (st) stem_fft_free(st->by_pixel);
    free(st);
    memset(e, 0, sizeof *e);
}

static int cpu_engine(stem_engine *engine)
{
    memset(engine, 0, sizeof *engine);
    if (!(engine->state = stem_calloc(1, sizeof(cpu_state), "CPU engine"))) return STEM_ERR_MEMORY;
    engine->name = "cpu";
    engine->describe = cpu_describe;
    engine->multislice = cpu_multislice;
    engine->prism_smatrix = cpu_prism_smatrix;
    engine->prism_output = cpu_prism_output;
    engine->destroy = cpu_destroy;
    return STEM_OK;
}

int stem_engine_create(const stem_plan *plan, const stem_gpu_provider *gpu, stem_engine *engine)
{
    int device = plan->opt.device;
    memset(engine, 0, sizeof *engine);
    if (device == STEM_DEVICE_CPU) return cpu_engine(engine);
    int gpus = gpu ? gpu->count() : 0;
    if (gpus <= 0) {
        if (device == STEM_DEVICE_GPU)
            return STEM_FAIL(STEM_ERR_GPU, "[compute] device = gpu but %s",
                             gpu ? gpu->unavailable_reason() : "this program has no GPU engine");
        return cpu_engine(engine);
    }
    return gpu->create(plan, engine);
}

void stem_engine_destroy(stem_engine *engine)
{
    if (engine->destroy) engine->destroy(engine);
    memset(engine, 0, sizeof *engine);
}
