// Kernel checks in the style of llm.c's dev/cuda: each CUDA kernel of the GPU
// engine runs on small random inputs, is compared with the plain-C reference
// that the CPU engine uses, and is timed. Skips (77) without a GPU.
//
//   gpu_kernel_check [reps]     (ctest: gpu_kernel_check, label gpu)
//
// | kernel (launcher)            | reference (CPU engine)                         |
// | k_detect (gpu_det_run)       | stem_detect: rings, images, total, DPC, 4D     |
// | k_crop (gpu_crop_box)        | prism.c crop_to_box: box = wave(box bins) prop |
// The other kernels (probes, plane waves, transmission multiply, PRISM
// coefficients and windows) are checked end to end by gpu_vs_cpu.sh.
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "../../cuda/gpu_internal.cuh"

static int failures = 0;

// A plan from config text and a one-atom model (the kernels need only its sizes).
static int make_plan(const char *ini, stem_config *cfg, stem_atoms *atoms, stem_plan *plan)
{
    stem_layout L = {1, 0, 1, 0, 1, 0, 1, 0};
    STEM_TRY(stem_config_load_string(cfg, "kernel_check.ini", ini));
    STEM_TRY(stem_xyz_read_string("kernel_check.xyz", "one Si atom\n10.86 10.86 5.43\n14 5.43 5.43 2.7 1 0\n", atoms));
    STEM_TRY(stem_atoms_prepare(atoms, cfg));
    return stem_plan_build(plan, cfg, atoms, &L);
}

struct timer {
    cudaEvent_t a, b;
    timer() { cudaEventCreate(&a), cudaEventCreate(&b); }
    ~timer() { cudaEventDestroy(a), cudaEventDestroy(b); }
    void start(cudaStream_t s) { cudaEventRecord(a, s); }
    float stop_us(cudaStream_t s, int reps)
    {
        cudaEventRecord(b, s);
        cudaEventSynchronize(b);
        float ms = 0;
        cudaEventElapsedTime(&ms, a, b);
        return 1e3f * ms / reps;
    }
};

static void report(const char *kernel, const char *size, double err, double tol, float us)
{
    int ok = err <= tol;
    failures += !ok;
    std::printf("| %-12s | %-34s | %9.2e | %8.1e | %10.1f | %s |\n", kernel, size, err, tol, us, ok ? "ok" : "FAIL");
}

// Largest |a - b| over the largest |b|: one number per output, robust to zeros.
template <class A, class B> static double rel_err(const A *a, const B *b, size_t n)
{
    double d = 0, m = 0;
    for (size_t i = 0; i < n; i++) {
        d = std::fmax(d, std::fabs((double)a[i] - (double)b[i]));
        m = std::fmax(m, std::fabs((double)b[i]));
    }
    return m > 0 ? d / m : d;
}

static int check_detect(const stem_plan *plan, int n, int reps, cudaStream_t s, int sm_count)
{
    stem_detector det;
    STEM_TRY(stem_detector_build(plan, &det));
    gpu_det g;
    STEM_TRY(gpu_det_create(plan, &det, 0, &g));
    size_t npix = (size_t)det.n_pixels;
    std::mt19937 rng(7);
    std::normal_distribution<float> gauss(0.0f, 1.0f);
    std::vector<float2> w(npix * n);
    for (auto &v : w) v = make_float2(gauss(rng), gauss(rng));
    const float scale = 1.0f / (float)npix;
    float2 *dw;
    double *dres;
    float *dcbed;
    GPU_ALLOC(dw, sizeof(float2) * w.size(), "waves");
    GPU_ALLOC(dres, sizeof(double) * g.stride * n, "record");
    GPU_ALLOC(dcbed, sizeof(float) * npix * n, "patterns");
    CUDA_CALL(cudaMemcpy(dw, w.data(), sizeof(float2) * w.size(), cudaMemcpyHostToDevice));
    STEM_TRY(gpu_det_run(&g, dw, npix, NULL, scale, n, dres, dcbed, sm_count, s));
    std::vector<double> rec((size_t)g.stride * n);
    std::vector<float> cbed(npix * n);
    CUDA_CALL(cudaMemcpy(rec.data(), dres, sizeof(double) * rec.size(), cudaMemcpyDeviceToHost));
    CUDA_CALL(cudaMemcpy(cbed.data(), dcbed, sizeof(float) * cbed.size(), cudaMemcpyDeviceToHost));
    // reference: the CPU engine's detector on the same intensities
    stem_plan p = *plan;
    p.probe_begin = 0;
    p.probe_end = n;
    stem_result res;
    STEM_TRY(stem_result_alloc(&p, &res));
    std::vector<float> I(npix);
    for (int q = 0; q < n; q++) {
        for (size_t k = 0; k < npix; k++) {
            float2 v = w[q * npix + k];
            I[k] = (v.x * v.x + v.y * v.y) * scale;
        }
        stem_detect(&det, I.data(), &res, q);
    }
    std::vector<double> ref((size_t)g.stride * n);
    for (int q = 0; q < n; q++) {
        double *r = &ref[(size_t)q * g.stride];
        for (int ch = 0; ch < STEM_N_CHANNELS; ch++) {
            if (!stem_channel_table[ch].gpu_record) continue;
            const double *src = (const double *)res.data[ch] + (size_t)q * res.width[ch];
            std::memcpy(r + stem_channel_record_offset(plan, ch), src, sizeof(double) * res.width[ch]);
        }
    }
    timer t;
    t.start(s);
    for (int r = 0; r < reps; r++) STEM_TRY(gpu_det_run(&g, dw, npix, NULL, scale, n, dres, dcbed, sm_count, s));
    float us = t.stop_us(s, reps);
    char size[64];
    std::snprintf(size, sizeof size, "%d probes x %dx%d px, %d rings", n, plan->out_nx, plan->out_ny, plan->n_bins);
    report("k_detect", size, rel_err(rec.data(), ref.data(), ref.size()), 1e-5, us);
    report("k_detect 4D", size, rel_err(cbed.data(), res.cbed, cbed.size()), 1e-6, us);
    stem_result_free(&res);
    gpu_free(dw);
    gpu_free(dres);
    gpu_free(dcbed);
    gpu_det_free(&g);
    stem_detector_free(&det);
    return STEM_OK;
}

static int check_crop(const stem_plan *plan, int n, int reps, cudaStream_t s)
{
    size_t grid = (size_t)plan->nx * plan->ny, cbox = (size_t)plan->crop_nx * plan->crop_ny;
    std::mt19937 rng(11);
    std::normal_distribution<float> gauss(0.0f, 1.0f);
    std::vector<float2> w(grid * n), prop(grid), box(cbox * n), ref(cbox * n);
    for (auto &v : w) v = make_float2(gauss(rng), gauss(rng));
    for (auto &v : prop) v = make_float2(gauss(rng), gauss(rng));
    gpu_prop_shared sh;
    std::memset(&sh, 0, sizeof sh);
    float2 *dw, *dbox;
    GPU_ALLOC(dw, sizeof(float2) * w.size(), "waves");
    GPU_ALLOC(dbox, sizeof(float2) * box.size(), "boxes");
    GPU_ALLOC(sh.prop, sizeof(float2) * grid, "propagator");
    CUDA_CALL(cudaMemcpy(dw, w.data(), sizeof(float2) * w.size(), cudaMemcpyHostToDevice));
    CUDA_CALL(cudaMemcpy(sh.prop, prop.data(), sizeof(float2) * grid, cudaMemcpyHostToDevice));
    STEM_TRY(gpu_crop_box(plan, &sh, dw, dbox, n, s));
    CUDA_CALL(cudaMemcpy(box.data(), dbox, sizeof(float2) * box.size(), cudaMemcpyDeviceToHost));
    for (int b = 0; b < n; b++) // reference: the CPU crop (src/prism.c) with the last propagator applied
        for (int j = 0; j < plan->crop_ny; j++)
            for (int i = 0; i < plan->crop_nx; i++) {
                size_t gk = (size_t)stem_box_to_grid(j, plan->crop_ny, plan->ny) * plan->nx +
                            stem_box_to_grid(i, plan->crop_nx, plan->nx);
                std::complex<float> a(w[b * grid + gk].x, w[b * grid + gk].y), c(prop[gk].x, prop[gk].y), r = a * c;
                ref[b * cbox + (size_t)j * plan->crop_nx + i] = make_float2(r.real(), r.imag());
            }
    timer t;
    t.start(s);
    for (int r = 0; r < reps; r++) STEM_TRY(gpu_crop_box(plan, &sh, dw, dbox, n, s));
    float us = t.stop_us(s, reps);
    char size[64];
    std::snprintf(size, sizeof size, "%d waves, %dx%d -> %dx%d", n, plan->nx, plan->ny, plan->crop_nx, plan->crop_ny);
    report("k_crop", size, rel_err((const float *)box.data(), (const float *)ref.data(), 2 * box.size()), 1e-6, us);
    gpu_free(dw);
    gpu_free(dbox);
    gpu_free(sh.prop);
    return STEM_OK;
}

int main(int argc, char **argv)
{
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        std::printf("SKIP: no usable GPU\n");
        return 77;
    }
    stem_log_init(0, STEM_LOG_QUIET);
    int reps = argc > 1 ? std::atoi(argv[1]) : 20;
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    cudaStream_t s;
    cudaStreamCreate(&s);
    std::printf("%s, %d reps per timing\n\n", prop.name, reps);
    std::printf("| kernel       | size                               | max error | tolerance | us per call | |\n");
    std::printf("|---|---|---|---|---|---|\n");
    const char *ini = "[sample]\nxyz = inline\n[simulation]\npixel_size = 0.05\nalgorithm = prism\n"
                      "interpolation_x = 2\ninterpolation_y = 2\n[detector]\nring_width = 1\nsave_4d = true\n";
    stem_config cfg;
    stem_atoms atoms;
    stem_plan plan;
    int err = make_plan(ini, &cfg, &atoms, &plan);
    if (!err) err = check_detect(&plan, 64, reps, s, prop.multiProcessorCount);
    if (!err) err = check_crop(&plan, 16, reps, s);
    if (err) {
        std::printf("FAIL: set-up error %d\n", err);
        return 1;
    }
    std::printf("\n%s\n", failures ? "gpu_kernel_check: FAIL" : "gpu_kernel_check: PASS");
    return failures ? 1 : 0;
}
