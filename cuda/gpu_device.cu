/* Device discovery, GPU assignment per rank, checked-call error messages,
 * checked allocations and host-memory pinning. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_internal.cuh"
#include "../src/test_hooks.h"

/* ---- error messages ------------------------------------------------------ */

static int free_memory_line(char *buf, size_t size)
{
    size_t free_b = 0, total_b = 0;
    int dev = -1;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
        cudaGetLastError();
        return snprintf(buf, size, "GPU memory state unknown");
    }
    return snprintf(buf, size, "GPU %d has %.2f of %.2f GiB free", dev, free_b / GPU_GIB, total_b / GPU_GIB);
}

static const char *oom_advice =
    "use [compute] memory_mode = streaming (or auto), fewer streams_per_gpu, a smaller batch_size, or more ranks/GPUs";

int gpu_fail_cuda(cudaError_t e, const char *call, const char *file, int line, const char *func)
{
    cudaGetLastError(); /* clear a non-sticky error so cleanup can proceed */
    if (e == cudaErrorMemoryAllocation) {
        char mem[128];
        free_memory_line(mem, sizeof mem);
        return stem_fail(STEM_ERR_MEMORY, file, line, func, "GPU out of memory in %s (%s); %s", call, mem, oom_advice);
    }
    return stem_fail(STEM_ERR_GPU, file, line, func, "CUDA call %s failed: %s (%s)", call, cudaGetErrorName(e),
                     cudaGetErrorString(e));
}

static const char *cufft_name(cufftResult r)
{
    switch (r) {
    case CUFFT_INVALID_PLAN: return "CUFFT_INVALID_PLAN";
    case CUFFT_ALLOC_FAILED: return "CUFFT_ALLOC_FAILED (out of GPU memory)";
    case CUFFT_INVALID_TYPE: return "CUFFT_INVALID_TYPE";
    case CUFFT_INVALID_VALUE: return "CUFFT_INVALID_VALUE";
    case CUFFT_INTERNAL_ERROR: return "CUFFT_INTERNAL_ERROR";
    case CUFFT_EXEC_FAILED: return "CUFFT_EXEC_FAILED";
    case CUFFT_SETUP_FAILED: return "CUFFT_SETUP_FAILED";
    case CUFFT_INVALID_SIZE: return "CUFFT_INVALID_SIZE";
    case CUFFT_NOT_SUPPORTED: return "CUFFT_NOT_SUPPORTED";
    default: return "cuFFT error";
    }
}

int gpu_fail_cufft(cufftResult r, const char *call, const char *file, int line, const char *func)
{
    cudaGetLastError();
    if (r == CUFFT_ALLOC_FAILED) {
        char mem[128];
        free_memory_line(mem, sizeof mem);
        return stem_fail(STEM_ERR_MEMORY, file, line, func, "GPU out of memory in %s: %s (%s); %s", call, cufft_name(r),
                         mem, oom_advice);
    }
    return stem_fail(STEM_ERR_GPU, file, line, func, "cuFFT call %s failed: %s (%d)", call, cufft_name(r), (int)r);
}

int gpu_fail_cublas(cublasStatus_t s, const char *call, const char *file, int line, const char *func)
{
    cudaGetLastError();
    if (s == CUBLAS_STATUS_ALLOC_FAILED) {
        char mem[128];
        free_memory_line(mem, sizeof mem);
        return stem_fail(STEM_ERR_MEMORY, file, line, func, "GPU out of memory in %s (%s); %s", call, mem, oom_advice);
    }
    return stem_fail(STEM_ERR_GPU, file, line, func, "cuBLAS call %s failed: %s (%s)", call, cublasGetStatusName(s),
                     cublasGetStatusString(s));
}

/* ---- allocations ----------------------------------------------------------- */

int gpu_alloc_(void **ptr, size_t bytes, const char *what, const char *file, int line, const char *func)
{
    *ptr = NULL;
    cudaError_t e = cudaMalloc(ptr, bytes ? bytes : 1);
    if (e == cudaSuccess) return STEM_OK;
    *ptr = NULL;
    cudaGetLastError();
    if (e == cudaErrorMemoryAllocation) {
        char mem[128];
        free_memory_line(mem, sizeof mem);
        return stem_fail(STEM_ERR_MEMORY, file, line, func,
                         "GPU out of memory: cannot allocate %.1f MiB for %s (%s); %s", bytes / 1048576.0, what, mem,
                         oom_advice);
    }
    return stem_fail(STEM_ERR_GPU, file, line, func, "cudaMalloc of %.1f MiB for %s failed: %s (%s)", bytes / 1048576.0,
                     what, cudaGetErrorName(e), cudaGetErrorString(e));
}

int gpu_alloc_host_(void **ptr, size_t bytes, const char *what, const char *file, int line, const char *func)
{
    *ptr = NULL;
    cudaError_t e = cudaMallocHost(ptr, bytes ? bytes : 1);
    if (e == cudaSuccess) return STEM_OK;
    *ptr = NULL;
    cudaGetLastError();
    return stem_fail(e == cudaErrorMemoryAllocation ? STEM_ERR_MEMORY : STEM_ERR_GPU, file, line, func,
                     "cannot allocate %.1f MiB of pinned host memory for %s: %s", bytes / 1048576.0, what,
                     cudaGetErrorString(e));
}

void gpu_free(void *p)
{
    if (p && cudaFree(p) != cudaSuccess) cudaGetLastError();
}

void gpu_free_host(void *p)
{
    if (p && cudaFreeHost(p) != cudaSuccess) cudaGetLastError();
}

void gpu_pin(const void *p, size_t bytes, int *pinned, const char *what)
{
    *pinned = 0;
    if (!p || !bytes) return;
    cudaError_t e = cudaHostRegister((void *)p, bytes, cudaHostRegisterPortable);
    if (e == cudaSuccess) {
        *pinned = 1;
        return;
    }
    cudaGetLastError();
    stem_warn("cannot page-lock %.2f GiB of %s (%s): host-to-GPU copies will be slower", bytes / GPU_GIB, what,
              cudaGetErrorString(e));
}

void gpu_unpin(const void *p, int pinned)
{
    if (pinned && cudaHostUnregister((void *)p) != cudaSuccess) cudaGetLastError();
}

/* ---- discovery ------------------------------------------------------------- */

/* The CUDA runtime's start and GPU 0's primary context (about 0.3 s) on a thread of
 * their own; the engine's later calls on GPU 0 find the context made. */
static pthread_t warm_thread;
static int warm_running;

static void *warm_up_main(void *arg)
{
    (void)arg;
    int n = 0;
    if (cudaGetDeviceCount(&n) == cudaSuccess && n > 0 && cudaSetDevice(0) == cudaSuccess) cudaFree(0);
    cudaGetLastError();
    return NULL;
}

extern "C" void stem_gpu_warm_up(int start)
{
    if (start && !warm_running) warm_running = pthread_create(&warm_thread, NULL, warm_up_main, NULL) == 0;
    if (!start && warm_running) {
        pthread_join(warm_thread, NULL);
        warm_running = 0;
    }
}

extern "C" int stem_gpu_count(void)
{
    stem_gpu_warm_up(0);
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return n;
}

extern "C" const char *stem_gpu_unavailable_reason(void)
{
    stem_gpu_warm_up(0);
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    cudaGetLastError();
    switch (e) {
    case cudaSuccess: return n > 0 ? "a GPU is available" : "no CUDA GPU is visible (check CUDA_VISIBLE_DEVICES)";
    case cudaErrorNoDevice: return "no CUDA GPU is visible (cudaErrorNoDevice; check CUDA_VISIBLE_DEVICES)";
    case cudaErrorInsufficientDriver:
        return "the NVIDIA driver is missing or older than the CUDA runtime stemsim was built with "
               "(cudaErrorInsufficientDriver)";
    default: return "the CUDA runtime could not enumerate GPUs (see the driver's installation)";
    }
}

int gpu_use_device(const gpu_devices *d, int g)
{
    CUDA_CALL(cudaSetDevice(d->ids[g]));
    return STEM_OK;
}

void gpu_use_device_quietly(const gpu_devices *d, int g)
{
    if (cudaSetDevice(d->ids[g]) != cudaSuccess) cudaGetLastError();
}

int gpu_use_worker_device(const gpu_devices *d, int w) { return gpu_use_device(d, gpu_worker_slot(d, w)); }

int gpu_workers_create(const gpu_devices *d, size_t size, void **workers, int (*create)(void *ctx, void *worker),
                       void *ctx)
{
    char *w = (char *)stem_calloc(d->workers, size, "GPU workers");
    *workers = w;
    if (!w) return STEM_ERR_MEMORY;
    int err = STEM_OK;
    for (int i = 0; !err && i < d->workers; i++) {
        err = gpu_use_worker_device(d, i);
        if (!err) err = create(ctx, w + i * size);
    }
    return err;
}

void gpu_workers_free(const gpu_devices *d, size_t size, void *workers, void (*destroy)(void *worker))
{
    if (workers)
        for (int i = 0; i < d->workers; i++) {
            gpu_use_device_quietly(d, gpu_worker_slot(d, i));
            destroy((char *)workers + i * size);
        }
    free(workers);
}

/* Direct copies between the rank's GPUs (NVLink or PCIe peer to peer) where every
 * pair allows them; without, copies between them are staged by the driver. */
static void enable_peer_access(gpu_devices *d)
{
    d->peer = d->n_gpus > 1;
    for (int i = 0; i < d->n_gpus; i++)
        for (int j = 0; j < d->n_gpus; j++) {
            int can = 0;
            if (i == j || d->ids[i] == d->ids[j]) continue;
            if (cudaDeviceCanAccessPeer(&can, d->ids[i], d->ids[j]) != cudaSuccess || !can) {
                cudaGetLastError();
                d->peer = 0;
                continue;
            }
            cudaError_t e = cudaSetDevice(d->ids[i]);
            if (e == cudaSuccess) e = cudaDeviceEnablePeerAccess(d->ids[j], 0);
            if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) d->peer = 0;
            cudaGetLastError(); /* clear "already enabled" */
        }
}

int gpu_devices_select(const stem_plan *plan, gpu_devices *d)
{
    const stem_options *opt = &plan->opt;
    memset(d, 0, sizeof *d);
    int count = 0;
    CUDA_CALL(cudaGetDeviceCount(&count));
    if (count <= 0) return STEM_FAIL(STEM_ERR_GPU, "%s", stem_gpu_unavailable_reason());
    int rpn = plan->layout.ranks_on_node > 0 ? plan->layout.ranks_on_node : 1;
    int lr = plan->layout.local_rank >= 0 ? plan->layout.local_rank % rpn : 0;
    int want = opt->gpus_per_rank;
    if (want > GPU_MAX_DEVICES) want = GPU_MAX_DEVICES;
    if (want == 0) {
        if (rpn <= count) { /* a contiguous share of the node's GPUs */
            int b = (int)((long)lr * count / rpn), e = (int)((long)(lr + 1) * count / rpn);
            for (int g = b; g < e && d->n_gpus < GPU_MAX_DEVICES; g++) d->ids[d->n_gpus++] = g;
            d->sharing = 1;
        } else { /* more ranks than GPUs: ranks share */
            d->ids[d->n_gpus++] = lr % count;
            d->sharing = (rpn + count - 1) / count;
        }
    } else {
        if (want > count) {
            stem_warn("[compute] gpus_per_rank = %d but only %d GPU(s) are visible: using %d", want, count, count);
            want = count;
        }
        for (int i = 0; i < want; i++) d->ids[d->n_gpus++] = (lr * want + i) % count;
        long users = (long)rpn * want;
        d->sharing = (int)((users + count - 1) / count);
    }
    if (d->sharing < 1) d->sharing = 1;
    d->streams = opt->streams_per_gpu > 0 ? opt->streams_per_gpu : 1;
    d->workers = d->n_gpus * d->streams;
    d->free_bytes = 1e300;
    for (int i = 0; i < d->n_gpus; i++) {
        cudaDeviceProp prop;
        size_t free_b = 0, total_b = 0;
        CUDA_CALL(cudaSetDevice(d->ids[i]));
        CUDA_CALL(cudaGetDeviceProperties(&prop, d->ids[i]));
        CUDA_CALL(cudaMemGetInfo(&free_b, &total_b));
        if (i == 0) {
            snprintf(d->name, sizeof d->name, "%s", prop.name);
            d->sm_count = prop.multiProcessorCount;
        }
        if ((double)free_b < d->free_bytes) {
            d->free_bytes = (double)free_b;
            d->total_bytes = (double)total_b;
        }
        if (prop.multiProcessorCount < d->sm_count) d->sm_count = prop.multiProcessorCount;
    }
    enable_peer_access(d);
    /* Test hook: pretend each GPU has this much free memory (exercise the memory modes and OOM paths). */
    double fake = stem_test_hooks()->gpu_free_gib;
    if (fake > 0) d->free_bytes = fake * GPU_GIB;
    /* Context, cuFFT/cuBLAS libraries and fragmentation: keep 10% and 512 MiB back. */
    double usable = d->free_bytes / d->sharing * 0.9 - 512.0 * 1048576.0;
    d->usable_bytes = usable > 0 ? usable : 0;
    CUDA_CALL(cudaSetDevice(d->ids[0]));
    return STEM_OK;
}
