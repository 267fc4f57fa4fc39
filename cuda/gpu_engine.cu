/* The GPU engine object: chooses this rank's GPUs once per run (kept in the
 * engine's state for every configuration), prints the memory estimate and
 * the memory mode of each step, refuses plans that cannot fit even when
 * streaming, and hands out the GPU implementations. The per-step functions
 * recompute the same (deterministic) batch and mode decisions quietly from
 * the devices chosen here. */
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_internal.cuh"

static void gpu_describe(const stem_engine *e, const stem_plan *plan, FILE *out)
{
    const gpu_devices *d = gpu_engine_devices(e);
    fprintf(out, "engine: gpu, %d x %s, %d stream(s) per GPU, %.1f GiB usable per GPU for this rank%s (%s)\n",
            d->n_gpus, d->name, d->streams, d->usable_bytes / GPU_GIB,
            d->sharing > 1 ? ", shared with other ranks" : "",
            plan->algorithm == STEM_ALG_PRISM       ? "S-matrix and output step as printed above"
                : plan->algorithm == STEM_ALG_HRTEM ? "hrtem on the first GPU as printed above"
                                                    : "multislice as printed above");
    char slices[160];
    gpu_slices_describe(plan, slices, sizeof slices);
    fprintf(out, "GPU slices: %s\n", slices);
}

static void gpu_destroy(stem_engine *e)
{
    if (e->state) {
        gpu_multislice_cache_free(gpu_engine_state_of(e));
        gpu_smatrix_cache_free(gpu_engine_state_of(e));
        gpu_transmission_cache_free(gpu_engine_state_of(e));
        gpu_output_cache_free(gpu_engine_state_of(e));
        gpu_hrtem_cache_free(gpu_engine_state_of(e));
    }
    if (e->state) pthread_mutex_destroy(&gpu_engine_state_of(e)->kept.lock);
    free(e->state);
    e->state = NULL;
}

/* engine->host_pin: cudaHostRegister, for buffers up to an eighth of the machine's memory (a
 * larger one keeps the driver's staged copies rather than lock most of the node). */
static void gpu_host_pin(const stem_engine *e, void *p, size_t bytes)
{
    (void)e;
    double physical = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    if (!p || !bytes || (physical > 0 && bytes > physical / 8)) return;
    cudaError_t r = cudaHostRegister(p, bytes, cudaHostRegisterPortable);
    if (r != cudaSuccess) {
        cudaGetLastError();
        stem_debug("a host buffer of %.2f GiB could not be page-locked (%s): its copies to and from the GPU run "
                   "through the driver's staging",
                   bytes / GPU_GIB, cudaGetErrorString(r));
    }
}

/* engine->host_unpin: a buffer that was never locked is an error the driver reports and we ignore. */
static void gpu_host_unpin(const stem_engine *e, void *p)
{
    (void)e;
    if (p && cudaHostUnregister(p) != cudaSuccess) cudaGetLastError();
}

static int gpu_engine_create(const stem_plan *plan, stem_engine *engine)
{
    stem_gpu_warm_up(0);
    gpu_engine_state *st = (gpu_engine_state *)stem_calloc(1, sizeof(gpu_engine_state), "GPU engine");
    if (!st) return STEM_ERR_MEMORY;
    pthread_mutex_init(&st->kept.lock, NULL);
    st->kept.device = -1;
    gpu_devices *d = &st->dev;
    int err = gpu_devices_select(plan, d);
    if (err) {
        free(st);
        return err;
    }
    memset(engine, 0, sizeof *engine);
    engine->name = "gpu";
    engine->host_idle = 1;
    engine->state = st;
    engine->describe = gpu_describe;
    engine->transmission = plan->opt.gpu_transmission ? gpu_transmission : NULL;
    engine->multislice = gpu_multislice_run;
    engine->prism_smatrix = gpu_prism_smatrix;
    engine->prism_output = gpu_prism_output;
    engine->prism_resident = gpu_prism_resident;
    engine->hrtem = gpu_hrtem_points;
    engine->host_pin = gpu_host_pin;
    engine->host_unpin = gpu_host_unpin;
    engine->destroy = gpu_destroy;
    char ids[256] = "";
    for (int i = 0, len = 0; i < d->n_gpus && len < (int)sizeof ids - 8; i++)
        len += snprintf(ids + len, sizeof ids - len, "%s%d", i ? "," : "", d->ids[i]);
    stem_info("GPU engine: %d x %s (%d SMs, %.1f of %.1f GiB free), GPU(s) %s on this rank, %d stream(s) per GPU%s%s",
              d->n_gpus, d->name, d->sm_count, d->free_bytes / GPU_GIB, d->total_bytes / GPU_GIB, ids, d->streams,
              d->sharing > 1 ? " (GPU shared with other ranks of the node)" : "",
              d->n_gpus > 1 ? (d->peer ? ", peer-to-peer copies between them"
                                       : ", no peer access: copies between them staged by the driver")
                            : "");
    gpu_prop_plan pp;
    if (plan->algorithm == STEM_ALG_PRISM) {
        gpu_out_plan op;
        err = gpu_prop_plan_build(plan, d, 1, 1, &pp);
        if (!err) err = gpu_out_plan_build(plan, d, 1, &op);
        if (!err) gpu_out_plan_free(&op);
    } else if (plan->algorithm == STEM_ALG_HRTEM) {
        err = gpu_hrtem_estimate(plan, d);
    } else {
        err = gpu_prop_plan_build(plan, d, 0, 1, &pp);
    }
    if (err) gpu_destroy(engine);
    return err;
}

extern "C" const stem_gpu_provider *stem_gpu_engine_provider(void)
{
    static const stem_gpu_provider gpu = {stem_gpu_count, stem_gpu_unavailable_reason, gpu_engine_create,
                                          stem_gpu_warm_up};
    return &gpu;
}
