// Kernel checks in the style of llm.c's dev/cuda: each CUDA kernel of the GPU
// engine runs on small random inputs, is compared with the plain-C reference
// that the CPU engine uses, and is timed. Skips (77) without a GPU.
//
//   gpu_kernel_check [reps [--bench]]   (ctest: gpu_kernel_check, label gpu; --bench adds
//                                        the propagation at the benchmarks' grid sizes)
//   gpu_kernel_check reps --fused N     (the fused slices alone at N^2, the engine's batch)
//
// | kernel (launcher)                 | reference (CPU engine)                                  |
// | k_detect (gpu_det_run)            | stem_detect: rings, images, total, DPC, 4D; fixed order |
// |                                   |   (gpu_deterministic) and atomics; the fixed order's    |
// |                                   |   record the same bits over repeats, launches, batches  |
// | k_crop (gpu_crop_box)             | prism.c crop_to_box: box = wave(box bins) prop          |
// | k_probes (gpu_probe_coefficients) | stem_probe_fourier: each probe on the full grid         |
// | k_plane_waves (gpu_plane_waves_build) | prism.c plane_wave, idle slots zero                 |
// | k_mul_bcast (gpu_mul_bcast)       | w[b][k] t[k] in double                                  |
// | k_coef (gpu_beam_coefficients)    | stem_probe_beam_coefficients                            |
// | k_gather (gpu_gather_windows)     | prism.c gather_window, from the tile product's layout   |
// | k_direct (gpu_direct_windows)     | prism.c gather_window: sum over beams in double         |
// | k_put_beams (gpu_prism_put_beams) | stem_prism_put_beams over the whole box                 |
// | k_lens (gpu_hrtem_lens)           | hrtem.c lens_image: wave stem_hrtem_lens_at, a defocus |
// | k_add_intensity (gpu_hrtem_add_intensity) | hrtem.c lens_image: image += weight |w|^2     |
// | gpu_propagate with fft_callbacks  | gpu_propagate with separate k_mul_bcast kernels (above), |
// |   (multiplies in cuFFT's loads)   |   whole, split at a slice, streaming; timed per slice   |
// |                                   |   against a bare forward + inverse cuFFT pair           |
// | gpu_propagate in the fused slice  | gpu_propagate with cuFFT and separate multiplies        |
// |   kernels (k_fused_pass,          |   ([compute] gpu_slices = cufft): whole, split,         |
// |   gpu_fused_rows/cols)            |   streaming; a size they do not cover falls back; timed |
// |                                   |   per probe-slice against a cuFFT pair and the floor    |
// The transmission kernels (gpu_potential.cu) are checked by gpu_transmission_check,
// and everything together by gpu_vs_cpu.sh. Every output buffer starts as NaN
// (bytes 0xff) where the kernel should write all of it, so a number left out fails,
// and every comparison is repeated with the output one element out of place, which
// must fail by far: else the check could not see a wrong index.
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "../../cuda/gpu_internal.cuh"
extern "C" { /* C headers of io/ and src/hrtem.h (gpu_common.cuh wraps the others of src/) */
#include "../../io/config.h"
#include "../../io/xyz.h"
#include "../../src/hrtem.h"
}

static int failures = 0;

// A plan from config text and a one-atom model (the kernels need only its sizes).
static int make_plan(const char *ini, stem_config *cfg, stem_atoms *atoms, stem_plan *plan)
{
    stem_layout L = {1, 0, 1, 0, 1, 0, 1, 0, 1, NULL, 0};
    STEM_TRY(stem_config_load_string(cfg, "kernel_check.ini", ini));
    STEM_TRY(stem_xyz_read_string("kernel_check.xyz", "one Si atom\n10.86 10.86 5.43\n14 5.43 5.43 2.7 1 0\n", atoms));
    STEM_TRY(stem_atoms_prepare(atoms, cfg));
    return stem_plan_build(plan, cfg, atoms, NULL, &L);
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

// Largest |a - b| over the largest |b|: one number per output, robust to zeros;
// NaN (a number the kernel did not write, or broke) stays NaN and fails.
template <class A, class B> static double rel_err(const A *a, const B *b, size_t n)
{
    double d = 0, m = 0;
    for (size_t i = 0; i < n; i++) {
        double e = std::fabs((double)a[i] - (double)b[i]);
        if (std::isnan(e) || e > d) d = e;
        m = std::fmax(m, std::fabs((double)b[i]));
    }
    return m > 0 ? d / m : d;
}

// report() of a against b, then the same with a one element (shift numbers) out of
// place: that must exceed the tolerance a hundredfold (and 1e-3), or the check is blind.
template <class A, class B>
static void compare(const char *kernel, const char *size, const A *a, const B *b, size_t n, size_t shift, double tol,
                    float us)
{
    report(kernel, size, rel_err(a, b, n), tol, us);
    double moved = rel_err(a + shift, b, n - shift);
    if (!(moved <= std::fmax(100 * tol, 1e-3))) return; // NaN: the NaN check already sees it
    failures++;
    std::printf("| %-12s | output one element out of place: %9.2e, the check cannot fail | FAIL |\n", kernel, moved);
}

// The detector kernel against stem_detect, in the fixed order ([compute] gpu_deterministic = on)
// or with float atomics (off); then, for the fixed order, what it promises: a probe's record
// is the same bits run after run, alone or at any place in a batch, whatever the launch
// (the atomic kernel's chunks follow the multiprocessor count; it is only reported).
static int check_detect(const stem_plan *base, int n, int reps, cudaStream_t s, int sm_count, int fixed)
{
    stem_plan pl = *base;
    pl.opt.gpu_deterministic = fixed;
    const stem_plan *plan = &pl;
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
    float *dcbed, *dwork = NULL;
    size_t work = gpu_det_work_bytes(plan, n);
    GPU_ALLOC(dw, sizeof(float2) * w.size(), "waves");
    GPU_ALLOC(dres, sizeof(double) * g.stride * n, "record");
    GPU_ALLOC(dcbed, sizeof(float) * npix * n, "patterns");
    if (work) GPU_ALLOC(dwork, work, "detector partial sums");
    CUDA_CALL(cudaMemcpy(dw, w.data(), sizeof(float2) * w.size(), cudaMemcpyHostToDevice));
    CUDA_CALL(cudaMemset(dres, 0xff, sizeof(double) * g.stride * n));
    CUDA_CALL(cudaMemset(dcbed, 0xff, sizeof(float) * npix * n));
    STEM_TRY(gpu_det_run(&g, dw, npix, NULL, scale, n, dres, dcbed, dwork, sm_count, s));
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
    for (int r = 0; r < reps; r++) STEM_TRY(gpu_det_run(&g, dw, npix, NULL, scale, n, dres, dcbed, dwork, sm_count, s));
    float us = t.stop_us(s, reps);
    char size[96], name[32];
    std::snprintf(size, sizeof size, "%d probes x %dx%d px, %d rings, %d tiles", n, plan->out_nx, plan->out_ny,
                  plan->n_bins, g.tiles);
    std::snprintf(name, sizeof name, "k_detect %s", fixed ? "fixed" : "atomic");
    compare(name, size, rec.data(), ref.data(), ref.size(), 1, 1e-5, us);
    std::snprintf(name, sizeof name, "k_detect 4D %s", fixed ? "fixed" : "atomic");
    if (res.cbed) compare(name, size, cbed.data(), res.cbed, cbed.size(), 1, 1e-6, us); // a plan without 4D has none
    // the same bits: five repeats, other multiprocessor counts, the last probe alone and each probe
    // in a batch of 3 whose first wave is another probe's
    int same = 1;
    std::vector<double> again((size_t)g.stride * n);
    for (int r = 0; r < 5; r++) {
        int sms[5] = {sm_count, 1, 7, 1000, sm_count};
        STEM_TRY(gpu_det_run(&g, dw, npix, NULL, scale, n, dres, dcbed, dwork, sms[r], s));
        CUDA_CALL(cudaMemcpy(again.data(), dres, sizeof(double) * again.size(), cudaMemcpyDeviceToHost));
        same &= !std::memcmp(again.data(), rec.data(), sizeof(double) * rec.size());
    }
    for (int q = 1; q < n; q += n / 5 + 1) {
        int m = q + 2 <= n ? 3 : 1, first = m == 3 ? q - 1 : q; // probes first .. first + m - 1
        STEM_TRY(gpu_det_run(&g, dw + (size_t)first * npix, npix, NULL, scale, m, dres, dcbed, dwork, sm_count, s));
        CUDA_CALL(cudaMemcpy(again.data(), dres, sizeof(double) * g.stride * m, cudaMemcpyDeviceToHost));
        same &= !std::memcmp(again.data(), &rec[(size_t)first * g.stride], sizeof(double) * g.stride * m);
    }
    if (fixed) failures += !same;
    std::printf("| %-12s | %-34s | same bits after 5 repeats, 4 launch sizes, 1-3 probe batches: %s |\n", name, size,
                same        ? "yes"
                    : fixed ? "NO (FAIL)"
                            : "no (atomics: expected)");
    stem_result_free(&res);
    gpu_free(dw);
    gpu_free(dres);
    gpu_free(dcbed);
    gpu_free(dwork);
    gpu_det_free(&g);
    stem_detector_free(&det);
    return STEM_OK;
}

// Does one wave's batched 2D transform depend on the batch it runs in (1, 7 or 64 waves,
// at place 0 or 5)? Reported only: gpu_deterministic plans the same batch on every rank
// count, so its results do not rest on the answer.
static int report_fft_batches(int nx, int ny)
{
    size_t grid = (size_t)nx * ny;
    std::mt19937 rng(11);
    std::normal_distribution<float> gauss(0.0f, 1.0f);
    std::vector<float2> w(grid * 65), out(grid), first(grid); // the wave under test and 64 others
    for (auto &v : w) v = make_float2(gauss(rng), gauss(rng));
    float2 *d;
    GPU_ALLOC(d, sizeof(float2) * w.size(), "FFT batch");
    int batches[3] = {1, 7, 64}, places[3] = {0, 5, 5}, same = 1, n[2] = {ny, nx};
    for (int k = 0; k < 3; k++) {
        cufftHandle h;
        CUFFT_CALL(cufftPlanMany(&h, 2, n, NULL, 1, (int)grid, NULL, 1, (int)grid, CUFFT_C2C, batches[k]));
        for (int b = 0; b < batches[k]; b++) // the wave under test at its place, the others random
            CUDA_CALL(cudaMemcpy(d + (size_t)b * grid, w.data() + (size_t)(b == places[k] ? 0 : b + 1) * grid,
                                 sizeof(float2) * grid, cudaMemcpyHostToDevice));
        CUFFT_CALL(cufftExecC2C(h, d, d, CUFFT_FORWARD));
        CUDA_CALL(cudaMemcpy(out.data(), d + (size_t)places[k] * grid, sizeof(float2) * grid, cudaMemcpyDeviceToHost));
        cufftDestroy(h);
        if (k == 0)
            first = out;
        else
            same &= !std::memcmp(out.data(), first.data(), sizeof(float2) * grid);
    }
    gpu_free(d);
    std::printf("| cuFFT batch  | %dx%d C2C in batches of 1, 7 and 64   | same bits: %s (reported only) |\n", nx, ny,
                same ? "yes" : "no");
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
    CUDA_CALL(cudaMemset(dbox, 0xff, sizeof(float2) * box.size()));
    STEM_TRY(gpu_crop_box(plan, &sh, dw, dbox, n, plan->n_slices, s));
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
    for (int r = 0; r < reps; r++) STEM_TRY(gpu_crop_box(plan, &sh, dw, dbox, n, plan->n_slices, s));
    float us = t.stop_us(s, reps);
    char size[64];
    std::snprintf(size, sizeof size, "%d waves, %dx%d -> %dx%d", n, plan->nx, plan->ny, plan->crop_nx, plan->crop_ny);
    compare("k_crop", size, (const float *)box.data(), (const float *)ref.data(), 2 * box.size(), 2, 1e-6, us);
    gpu_free(dw);
    gpu_free(dbox);
    gpu_free(sh.prop);
    return STEM_OK;
}

// The HRTEM lens at a defocus offset from the plan's (a focal point) and the intensity sum.
static int check_hrtem_lens(const stem_plan *plan, int reps, cudaStream_t s)
{
    size_t grid = (size_t)plan->nx * plan->ny;
    std::mt19937 rng(17);
    std::normal_distribution<float> gauss(0.0f, 1.0f);
    std::vector<float2> w(grid), out(grid), ref(grid);
    std::vector<float> image(grid), image_ref(grid);
    std::vector<double> chi(grid);
    for (auto &v : w) v = make_float2(gauss(rng), gauss(rng));
    for (auto &v : image) v = std::fabs(gauss(rng));
    stem_hrtem_chi_without_defocus(plan, chi.data());
    double c10 = plan->aberr.c[STEM_C10] + 7.5, weight = 0.3;
    stem_plan lens = *plan;
    lens.aberr.c[STEM_C10] = c10;
    size_t stopped = 0;
    for (int j = 0; j < plan->ny; j++) // reference: src/hrtem.c's transfer times the wave, then its intensity sum
        for (int i = 0; i < plan->nx; i++) {
            size_t k = (size_t)j * plan->nx + i;
            stem_complex h = stem_hrtem_lens_at(&lens, stem_fft_index(i, plan->nx) / plan->cell[0],
                                                stem_fft_index(j, plan->ny) / plan->cell[1]);
            std::complex<float> r = std::complex<float>(w[k].x, w[k].y) * std::complex<float>(h.re, h.im);
            ref[k] = make_float2(r.real(), r.imag());
            stopped += h.re == 0 && h.im == 0;
            image_ref[k] = image[k] + (float)(weight * (r.real() * r.real() + r.imag() * r.imag()));
        }
    float2 *dw, *dout;
    float *dimage;
    double *dchi;
    GPU_ALLOC(dw, sizeof(float2) * grid, "wave");
    GPU_ALLOC(dout, sizeof(float2) * grid, "lens wave");
    GPU_ALLOC(dimage, sizeof(float) * grid, "image");
    GPU_ALLOC(dchi, sizeof(double) * grid, "lens phase");
    CUDA_CALL(cudaMemcpy(dw, w.data(), sizeof(float2) * grid, cudaMemcpyHostToDevice));
    CUDA_CALL(cudaMemcpy(dchi, chi.data(), sizeof(double) * grid, cudaMemcpyHostToDevice));
    CUDA_CALL(cudaMemcpy(dimage, image.data(), sizeof(float) * grid, cudaMemcpyHostToDevice));
    CUDA_CALL(cudaMemset(dout, 0xff, sizeof(float2) * grid));
    STEM_TRY(gpu_hrtem_lens(plan, dw, dchi, c10, dout, s));
    CUDA_CALL(cudaMemcpy(out.data(), dout, sizeof(float2) * grid, cudaMemcpyDeviceToHost));
    timer t;
    t.start(s);
    for (int r = 0; r < reps; r++) STEM_TRY(gpu_hrtem_lens(plan, dw, dchi, c10, dout, s));
    float us = t.stop_us(s, reps);
    char size[64];
    std::snprintf(size, sizeof size, "%dx%d, %zu stopped by the aperture", plan->nx, plan->ny, stopped);
    compare("k_lens", size, (const float *)out.data(), (const float *)ref.data(), 2 * grid, 2, 1e-6, us);
    CUDA_CALL(cudaMemcpy(dout, ref.data(), sizeof(float2) * grid, cudaMemcpyHostToDevice));
    STEM_TRY(gpu_hrtem_add_intensity(dimage, dout, weight, grid, s));
    CUDA_CALL(cudaMemcpy(image.data(), dimage, sizeof(float) * grid, cudaMemcpyDeviceToHost));
    t.start(s);
    for (int r = 0; r < reps; r++) STEM_TRY(gpu_hrtem_add_intensity(dimage, dout, 0.0, grid, s));
    us = t.stop_us(s, reps);
    std::snprintf(size, sizeof size, "%dx%d", plan->nx, plan->ny);
    compare("k_add_int", size, image.data(), image_ref.data(), grid, 1, 1e-6, us);
    if (stopped == 0 || stopped == grid) {
        failures++;
        std::printf(
            "| k_lens       | the objective aperture stops %zu of %zu pixels: the check cannot see it | FAIL |\n",
            stopped, grid);
    }
    gpu_free(dw);
    gpu_free(dout);
    gpu_free(dimage);
    gpu_free(dchi);
    return STEM_OK;
}

// Probe coefficients of n consecutive scan positions (the batch crosses a scan row).
static int check_probes(const stem_plan *plan, int n, int reps, cudaStream_t s)
{
    size_t grid = (size_t)plan->nx * plan->ny;
    gpu_prop_plan pp;
    std::memset(&pp, 0, sizeof pp);
    pp.streaming = 1; // no transmission functions: only the aperture table (pixels, q, chi)
    gpu_prop_shared sh;
    STEM_TRY(gpu_prop_shared_create(plan, &pp, NULL, &sh));
    long g0 = (long)(plan->scan_ny / 2) * plan->scan_nx - n / 2;
    if (g0 < 0) g0 = 0;
    if (g0 + n > plan->n_probes) n = (int)(plan->n_probes - g0);
    std::vector<float2> w(grid * n);
    std::vector<stem_complex> ref(grid * n);
    float2 *dw;
    GPU_ALLOC(dw, sizeof(float2) * w.size(), "probes");
    CUDA_CALL(cudaMemset(dw, 0, sizeof(float2) * w.size())); // the caller zeroes outside the aperture
    STEM_TRY(gpu_probe_coefficients(plan, &sh, dw, g0, n, s));
    CUDA_CALL(cudaMemcpy(w.data(), dw, sizeof(float2) * w.size(), cudaMemcpyDeviceToHost));
    for (int b = 0; b < n; b++) { // reference: the CPU multislice's probe (src/probe.c), normalised the same
        double x, y;
        stem_plan_probe_position(plan, g0 + b, &x, &y);
        stem_probe_fourier(plan, x, y, ref.data() + (size_t)b * grid);
    }
    timer t;
    t.start(s);
    for (int r = 0; r < reps; r++) STEM_TRY(gpu_probe_coefficients(plan, &sh, dw, g0, n, s));
    float us = t.stop_us(s, reps);
    char size[64];
    std::snprintf(size, sizeof size, "%d probes x %dx%d, aperture %d", n, plan->nx, plan->ny, sh.n_ap);
    // phases in double on both sides, one float rounding of cos, sin and the scale: a few
    // 1e-8 of the largest coefficient (1/sqrt(n_ap)); any misplaced pixel or phase is O(1)
    compare("k_probes", size, (const float *)w.data(), (const float *)ref.data(), 2 * w.size(), 2, 1e-6, us);
    gpu_free(dw);
    gpu_prop_shared_free(&sh);
    return STEM_OK;
}

// Plane waves of beams [b0, b0 + n) into a batch of n + 2 (two idle slots, zeroed).
static int check_plane_waves(const stem_plan *plan, int reps, cudaStream_t s)
{
    size_t grid = (size_t)plan->nx * plan->ny;
    int nx = plan->nx, ny = plan->ny, b0 = plan->n_beams > 1 ? 1 : 0, n = std::min(plan->n_beams - b0, 64);
    gpu_prop_plan pp;
    std::memset(&pp, 0, sizeof pp);
    pp.smatrix = 1;
    pp.streaming = 1; // no transmission functions: only the beam table
    pp.batch = n + 2;
    gpu_prop_shared sh;
    STEM_TRY(gpu_prop_shared_create(plan, &pp, NULL, &sh));
    gpu_prop_worker wk; // only the batch and the stream are used
    std::memset(&wk, 0, sizeof wk);
    wk.stream = s;
    GPU_ALLOC(wk.waves, sizeof(float2) * grid * pp.batch, "plane waves");
    CUDA_CALL(cudaMemset(wk.waves, 0xff, sizeof(float2) * grid * pp.batch));
    STEM_TRY(gpu_plane_waves_build(plan, &pp, &sh, &wk, b0, n));
    std::vector<float2> w(grid * pp.batch), ref(grid * pp.batch, make_float2(0.0f, 0.0f));
    CUDA_CALL(cudaMemcpy(w.data(), wk.waves, sizeof(float2) * w.size(), cudaMemcpyDeviceToHost));
    for (int b = 0; b < n; b++) { // reference: src/prism.c plane_wave, the phase in double
        int kx = plan->beam_kx[b0 + b], ky = plan->beam_ky[b0 + b];
        for (int j = 0; j < ny; j++)
            for (int i = 0; i < nx; i++) {
                double phase = 2 * M_PI * ((double)kx * i / nx + (double)ky * j / ny);
                ref[b * grid + (size_t)j * nx + i] = make_float2((float)std::cos(phase), (float)std::sin(phase));
            }
    }
    timer t;
    t.start(s);
    for (int r = 0; r < reps; r++) STEM_TRY(gpu_plane_waves_build(plan, &pp, &sh, &wk, b0, n));
    float us = t.stop_us(s, reps);
    char size[64];
    std::snprintf(size, sizeof size, "%d beams + 2 idle, %dx%d", n, nx, ny);
    // unit amplitude, the phase exact (integers on the GPU) or within 1e-13 rad (double here):
    // one float rounding each, about 6e-8; a wrong pixel or beam is O(1)
    compare("k_plane_waves", size, (const float *)w.data(), (const float *)ref.data(), 2 * w.size(), 2, 1e-6, us);
    gpu_free(wk.waves);
    gpu_prop_shared_free(&sh);
    return STEM_OK;
}

// A batch of n waves times one transmission function of unit modulus, in place.
static int check_mul_bcast(const stem_plan *plan, int n, int reps, cudaStream_t s)
{
    size_t grid = (size_t)plan->nx * plan->ny;
    std::mt19937 rng(13);
    std::normal_distribution<float> gauss(0.0f, 1.0f);
    std::uniform_real_distribution<float> angle(-3.14159f, 3.14159f);
    std::vector<float2> w(grid * n), t(grid), out(grid * n);
    std::vector<double> ref(2 * grid * n);
    for (auto &v : w) v = make_float2(gauss(rng), gauss(rng));
    for (auto &v : t) {
        float a = angle(rng);
        v = make_float2(std::cos(a), std::sin(a));
    }
    float2 *dw, *dt;
    GPU_ALLOC(dw, sizeof(float2) * w.size(), "waves");
    GPU_ALLOC(dt, sizeof(float2) * grid, "transmission function");
    CUDA_CALL(cudaMemcpy(dw, w.data(), sizeof(float2) * w.size(), cudaMemcpyHostToDevice));
    CUDA_CALL(cudaMemcpy(dt, t.data(), sizeof(float2) * grid, cudaMemcpyHostToDevice));
    STEM_TRY(gpu_mul_bcast(dw, dt, grid, n, s));
    CUDA_CALL(cudaMemcpy(out.data(), dw, sizeof(float2) * out.size(), cudaMemcpyDeviceToHost));
    for (int b = 0; b < n; b++) // reference: the complex product in double
        for (size_t k = 0; k < grid; k++) {
            float2 a = w[b * grid + k], c = t[k];
            ref[2 * (b * grid + k)] = (double)a.x * c.x - (double)a.y * c.y;
            ref[2 * (b * grid + k) + 1] = (double)a.x * c.y + (double)a.y * c.x;
        }
    timer tm;
    tm.start(s);
    for (int r = 0; r < reps; r++) STEM_TRY(gpu_mul_bcast(dw, dt, grid, n, s)); // |t| = 1: the waves stay finite
    float us = tm.stop_us(s, reps);
    char size[64];
    std::snprintf(size, sizeof size, "%d waves x %dx%d", n, plan->nx, plan->ny);
    // one complex product in FP32 (two roundings, or one with FMA): below 3e-7 of the largest |w|
    compare("k_mul_bcast", size, (const float *)out.data(), ref.data(), ref.size(), 2, 1e-6, us);
    gpu_free(dw);
    gpu_free(dt);
    return STEM_OK;
}

// The tile's product by each [debug] gpu_gemm kind (gpu_tile_product, then gpu_gather_windows),
// against the windows summed in double: max |window - reference| / max |reference| over all
// windows. FP32 CGEMM: FP32 sums of nb products, ~5e-7 here; 1xTF32 (10-bit mantissas) ~3e-4;
// 3xTF32 and 3xFP16 ~2e-6 at this short K (the tensor cores' sums round toward zero, an error
// that grows with K: 1e-5 to 2e-5 at the paper case's, --split-gemm), so 1e-5 here: a wrong
// index or part is O(1).
static int check_tile_products(const stem_plan *plan, const gpu_tile &tl, const float2 *dS, const float2 *dcoef,
                               const gpu_probe *dpr, int P, const std::vector<double> &wref, float2 *dprod,
                               float2 *dwin, int reps, cudaStream_t s)
{
    int nb = plan->n_beams, cx = plan->crop_nx, cy = plan->crop_ny, wx = plan->out_nx, wy = plan->out_ny;
    size_t pixels = (size_t)cx * cy;
    cublasHandle_t h;
    CUBLAS_CALL(cublasCreate(&h));
    CUBLAS_CALL(cublasSetStream(h, s));
    const int kinds[] = {STEM_GPU_GEMM_STANDARD, STEM_GPU_GEMM_TF32, STEM_GPU_GEMM_TF32X3, STEM_GPU_GEMM_FP16X3,
                         STEM_GPU_GEMM_FP64};
    const char *names[] = {"FP32 CGEMM", "1xTF32", "3xTF32", "3xFP16", "FP64 ZGEMM"};
    const double tols[] = {1e-5, 5e-3, 1e-5, 1e-5, 2e-7}; // fp64: the last rounding to FP32 only
    std::vector<float2> win(wref.size() / 2);
    for (int k = 0; k < 5; k++) {
        gpu_split_form f;
        void *ssrc = NULL, *csplit = NULL;
        int split = gpu_gemm_is_split(kinds[k]);
        if (split) {
            gpu_split_form_init(&f, kinds[k], nb, plan->opt.gpu_gemm_steps);
            GPU_ALLOC(ssrc, gpu_split_smatrix_bytes(&f, pixels), "S-matrix split");
            GPU_ALLOC(csplit, gpu_split_coef_bytes(&f, P), "coefficients split");
            STEM_TRY(gpu_split_scale_device(&f, dS, pixels, s));
            STEM_TRY(gpu_split_smatrix(&f, ssrc, dS, pixels, s));
        }
        CUDA_CALL(cudaMemset(dwin, 0xff, sizeof(float2) * win.size()));
        double flops = 0;
        timer t;
        for (int r = -1; r < reps; r++) { // the first call unmeasured; each call splits the tile's coefficients
            if (r == 0) t.start(s);
            if (split) STEM_TRY(gpu_split_coefficients(&f, csplit, dcoef, P, s));
            STEM_TRY(gpu_tile_product(h, kinds[k], &f, dS, ssrc, cx, cy, nb, tl.x0, tl.y0, &tl, P, dcoef, csplit, dprod,
                                      &flops));
        }
        float us = t.stop_us(s, reps);
        STEM_TRY(gpu_gather_windows(dwin, dprod, dpr, P, &tl, wx, wy, split, s));
        CUDA_CALL(cudaMemcpy(win.data(), dwin, sizeof(float2) * win.size(), cudaMemcpyDeviceToHost));
        char size[96];
        std::snprintf(size, sizeof size, "tile %dx%d px, %d probes, %d beams", tl.w, tl.h, P, nb);
        compare(names[k], size, (const float *)win.data(), wref.data(), wref.size(), 2, tols[k], us);
        gpu_free(ssrc);
        gpu_free(csplit);
    }
    cublasDestroy(h);
    return STEM_OK;
}

// The PRISM output step's kernels on the first tile of T x T probes (its windows wrap
// around the S-matrix's edge): beam coefficients, windows cut from the tile's product,
// and the direct reduction over beams.
static int check_output(const stem_plan *plan, int T, int reps, cudaStream_t s)
{
    int nb = plan->n_beams, cx = plan->crop_nx, cy = plan->crop_ny, wx = plan->out_nx, wy = plan->out_ny;
    size_t win = (size_t)wx * wy;
    gpu_tiling tiling;
    STEM_TRY(gpu_tiling_build(plan, T, 1, &tiling));
    const gpu_tile tl = tiling.tile[0];
    const gpu_probe *pr = tiling.probe + tl.p0;
    int P = (int)(tl.p1 - tl.p0);
    // inputs: the engine's beam table (q, chi as gpu_output.cu builds it), a random S-matrix beam fastest
    std::vector<double> bq(4 * nb);
    gpu_beam_table(plan, bq.data());
    std::mt19937 rng(17);
    std::normal_distribution<float> gauss(0.0f, 1.0f);
    std::vector<float2> S((size_t)cx * cy * nb);
    for (auto &v : S) v = make_float2(gauss(rng), gauss(rng));
    // reference coefficients: the CPU's (src/probe.c), also the input of k_gather's and k_direct's references
    std::vector<stem_complex> cref((size_t)P * nb);
    for (int p = 0; p < P; p++) stem_probe_beam_coefficients(plan, pr[p].x, pr[p].y, cref.data() + (size_t)p * nb);
    std::vector<float2> coef((size_t)P * nb);
    std::memcpy(coef.data(), cref.data(), sizeof(float2) * coef.size());
    // sum over beams of coef * S at a pixel (unwrapped) in double: src/prism.c gather_window
    auto pixel = [&](int p, int y, int x, double *re, double *im) {
        const float2 *sp = &S[((size_t)(((y % cy) + cy) % cy) * cx + (((x % cx) + cx) % cx)) * nb];
        const float2 *cp = &coef[(size_t)p * nb];
        double sr = 0, si = 0;
        for (int b = 0; b < nb; b++) {
            sr += (double)cp[b].x * sp[b].x - (double)cp[b].y * sp[b].y;
            si += (double)cp[b].x * sp[b].y + (double)cp[b].y * sp[b].x;
        }
        *re = sr;
        *im = si;
    };
    std::vector<double> wref(2 * win * P);
    for (int p = 0; p < P; p++)
        for (int j = 0; j < wy; j++)
            for (int i = 0; i < wx; i++) {
                size_t k = 2 * ((size_t)p * win + (size_t)j * wx + i);
                pixel(p, pr[p].oy + j, pr[p].ox + i, &wref[k], &wref[k + 1]);
            }
    // the tile product as tile_gemm lays it out: out[row][p][col] at pixel (y0 + row, x0 + col)
    std::vector<float2> prod((size_t)tl.h * P * tl.w);
    for (int r = 0; r < tl.h; r++)
        for (int p = 0; p < P; p++)
            for (int c = 0; c < tl.w; c++) {
                double re, im;
                pixel(p, tl.y0 + r, tl.x0 + c, &re, &im);
                prod[((size_t)r * P + p) * tl.w + c] = make_float2((float)re, (float)im);
            }
    std::vector<float> wref32(wref.size()); // what k_gather must copy: the same sums, rounded once
    for (size_t k = 0; k < wref.size(); k++) wref32[k] = (float)wref[k];
    gpu_probe *dpr;
    double *dbq;
    float2 *dcoef, *dS, *dprod, *dwin;
    GPU_ALLOC(dpr, sizeof(gpu_probe) * P, "probe positions");
    GPU_ALLOC(dbq, sizeof(double) * bq.size(), "beam table");
    GPU_ALLOC(dcoef, sizeof(float2) * coef.size(), "beam coefficients");
    GPU_ALLOC(dS, sizeof(float2) * S.size(), "S-matrix");
    GPU_ALLOC(dprod, sizeof(float2) * prod.size(), "tile product");
    GPU_ALLOC(dwin, sizeof(float2) * win * P, "probe windows");
    CUDA_CALL(cudaMemcpy(dpr, pr, sizeof(gpu_probe) * P, cudaMemcpyHostToDevice));
    CUDA_CALL(cudaMemcpy(dbq, bq.data(), sizeof(double) * bq.size(), cudaMemcpyHostToDevice));
    CUDA_CALL(cudaMemcpy(dS, S.data(), sizeof(float2) * S.size(), cudaMemcpyHostToDevice));
    CUDA_CALL(cudaMemcpy(dprod, prod.data(), sizeof(float2) * prod.size(), cudaMemcpyHostToDevice));
    char size[64];
    std::vector<float2> out((size_t)P * nb);
    timer t;
    // k_coef
    CUDA_CALL(cudaMemset(dcoef, 0xff, sizeof(float2) * coef.size()));
    STEM_TRY(gpu_beam_coefficients(dcoef, dpr, dbq, nb, P, s));
    CUDA_CALL(cudaMemcpy(out.data(), dcoef, sizeof(float2) * out.size(), cudaMemcpyDeviceToHost));
    t.start(s);
    for (int r = 0; r < reps; r++) STEM_TRY(gpu_beam_coefficients(dcoef, dpr, dbq, nb, P, s));
    float us = t.stop_us(s, reps);
    std::snprintf(size, sizeof size, "%d probes x %d beams", P, nb);
    // as k_probes: phases in double, a few 1e-8 of 1/sqrt(nb); a wrong beam or probe is O(1)
    compare("k_coef", size, (const float *)out.data(), (const float *)cref.data(), 2 * out.size(), 2, 1e-6, us);
    // k_gather: a pure copy
    out.resize(win * P);
    CUDA_CALL(cudaMemset(dwin, 0xff, sizeof(float2) * win * P));
    STEM_TRY(gpu_gather_windows(dwin, dprod, dpr, P, &tl, wx, wy, 0, s));
    CUDA_CALL(cudaMemcpy(out.data(), dwin, sizeof(float2) * out.size(), cudaMemcpyDeviceToHost));
    t.start(s);
    for (int r = 0; r < reps; r++) STEM_TRY(gpu_gather_windows(dwin, dprod, dpr, P, &tl, wx, wy, 0, s));
    us = t.stop_us(s, reps);
    std::snprintf(size, sizeof size, "%d windows %dx%d of %dx%d", P, wx, wy, tl.w, tl.h);
    compare("k_gather", size, (const float *)out.data(), wref32.data(), wref32.size(), 2, 0.0, us);
    // k_direct: FP32 sums over the beams
    CUDA_CALL(cudaMemcpy(dcoef, coef.data(), sizeof(float2) * coef.size(), cudaMemcpyHostToDevice));
    CUDA_CALL(cudaMemset(dwin, 0xff, sizeof(float2) * win * P));
    STEM_TRY(gpu_direct_windows(dwin, dS, cx, cy, nb, tl.x0, tl.y0, dpr, &tl, dcoef, P, wx, wy, s));
    CUDA_CALL(cudaMemcpy(out.data(), dwin, sizeof(float2) * out.size(), cudaMemcpyDeviceToHost));
    t.start(s);
    for (int r = 0; r < reps; r++)
        STEM_TRY(gpu_direct_windows(dwin, dS, cx, cy, nb, tl.x0, tl.y0, dpr, &tl, dcoef, P, wx, wy, s));
    us = t.stop_us(s, reps);
    std::snprintf(size, sizeof size, "%d windows %dx%d, %d beams", P, wx, wy, nb);
    // FP32 sums of nb products (32 lanes, then a 5-step tree): worst case about
    // (nb/32 + 6) eps sum|terms| ~ 1e-6 of the largest window value here, typically 1e-7
    compare("k_direct", size, (const float *)out.data(), wref.data(), wref.size(), 2, 1e-5, us);
    STEM_TRY(check_tile_products(plan, tl, dS, dcoef, dpr, P, wref, dprod, dwin, reps, s));
    gpu_free(dpr);
    gpu_free(dbq);
    gpu_free(dcoef);
    gpu_free(dS);
    gpu_free(dprod);
    gpu_free(dwin);
    gpu_tiling_free(&tiling);
    return STEM_OK;
}

// The S-matrix [beam][box] -> [box][beam] (beam fastest) on the device, in two batches of beams.
static int check_arrange(const stem_plan *plan, int reps)
{
    size_t box = (size_t)plan->crop_nx * plan->crop_ny, nb = (size_t)plan->n_beams;
    std::mt19937 rng(19);
    std::normal_distribution<float> gauss(0.0f, 1.0f);
    std::vector<float2> by_beam(box * nb), by_pixel(box * nb);
    std::vector<stem_complex> ref(box * nb);
    for (auto &v : by_beam) v = make_float2(gauss(rng), gauss(rng));
    float2 *dbeam, *dpixel;
    GPU_ALLOC(dbeam, sizeof(float2) * by_beam.size(), "S-matrix by beam");
    GPU_ALLOC(dpixel, sizeof(float2) * by_pixel.size(), "S-matrix beam fastest");
    CUDA_CALL(cudaMemcpy(dbeam, by_beam.data(), sizeof(float2) * by_beam.size(), cudaMemcpyHostToDevice));
    CUDA_CALL(cudaMemset(dpixel, 0xff, sizeof(float2) * by_pixel.size()));
    int half = (int)nb / 2; // two batches: the second at a beam offset
    STEM_TRY(gpu_prism_put_beams(dpixel, dbeam, box, (int)nb, 0, half, 0));
    STEM_TRY(gpu_prism_put_beams(dpixel, dbeam + box * half, box, (int)nb, half, (int)nb - half, 0));
    CUDA_CALL(cudaDeviceSynchronize());
    CUDA_CALL(cudaMemcpy(by_pixel.data(), dpixel, sizeof(float2) * by_pixel.size(), cudaMemcpyDeviceToHost));
    stem_prism_tile whole;
    stem_prism_tile_whole(plan, &whole); // the CPU engine's (src/prism_tiles.c)
    stem_prism_put_beams(plan, (const stem_complex *)by_beam.data(), box, (int)nb, 0, &whole, 0, whole.ny, ref.data(),
                         nb);
    timer t;
    t.start(0);
    for (int r = 0; r < reps; r++) STEM_TRY(gpu_prism_put_beams(dpixel, dbeam, box, (int)nb, 0, (int)nb, 0));
    float us = t.stop_us(0, reps);
    char size[64];
    std::snprintf(size, sizeof size, "%zu beams x %dx%d px", nb, plan->crop_nx, plan->crop_ny);
    // a permutation: bit for bit
    compare("k_put_beams", size, (const float *)by_pixel.data(), (const float *)ref.data(), 2 * ref.size(), 2, 0.0, us);
    gpu_free(dbeam);
    gpu_free(dpixel);
    return STEM_OK;
}

// Random unit-modulus grids (transmission functions), scaled by s.
static std::vector<float2> random_phases(size_t n, float s, unsigned seed)
{
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> angle(-3.14159f, 3.14159f);
    std::vector<float2> v(n);
    for (auto &x : v) {
        float a = angle(rng);
        x = make_float2(s * std::cos(a), s * std::sin(a));
    }
    return v;
}

// One worker of gpu_propagate (fused or not) on n_slices random slices, with the same start.
struct prop_case {
    stem_plan plan;
    gpu_prop_plan pp;
    gpu_prop_shared sh;
    gpu_prop_worker w;
    std::vector<float2> start;
    const stem_complex *host_trans;
};

static int prop_case_create(prop_case &c, const stem_plan *base, int nx, int ny, int batch, int n_slices, int callbacks,
                            int streaming, const stem_complex *host_trans, const float2 *dev_trans,
                            const float2 *dev_prop, int slices = STEM_GPU_SLICES_CUFFT)
{
    c.plan = *base;
    c.plan.nx = nx;
    c.plan.ny = ny;
    c.plan.n_slices = n_slices;
    c.plan.opt.fft_callbacks = callbacks;
    c.plan.opt.gpu_slices = slices;
    std::memset(&c.pp, 0, sizeof c.pp);
    c.pp.batch = batch;
    c.pp.streaming = streaming;
    c.pp.n_items = batch;
    std::memset(&c.sh, 0, sizeof c.sh);
    c.sh.trans = (float2 *)dev_trans;
    c.sh.prop = (float2 *)dev_prop;
    c.host_trans = host_trans;
    c.start = random_phases((size_t)nx * ny * batch, 1.0f, 5);
    return gpu_prop_worker_create(&c.plan, &c.pp, &c.w);
}

// The batch after slices [0, split) and [split, n_slices) (split 0: one call), in Fourier space.
static int prop_case_run(prop_case &c, int split, std::vector<float2> &out)
{
    size_t bytes = sizeof(float2) * c.start.size();
    // on the worker's stream: a pageable cudaMemcpy may return before its data reach the
    // device, and the worker's non-blocking stream would not wait for them
    CUDA_CALL(cudaMemcpyAsync(c.w.waves, c.start.data(), bytes, cudaMemcpyHostToDevice, c.w.stream));
    if (split > 0) STEM_TRY(gpu_propagate(&c.plan, &c.pp, &c.sh, c.host_trans, &c.w, 0, split));
    STEM_TRY(gpu_propagate(&c.plan, &c.pp, &c.sh, c.host_trans, &c.w, split, c.plan.n_slices));
    out.resize(c.start.size());
    CUDA_CALL(cudaStreamSynchronize(c.w.stream));
    CUDA_CALL(cudaMemcpy(out.data(), c.w.waves, bytes, cudaMemcpyDeviceToHost));
    return STEM_OK;
}

static float prop_case_time_us(prop_case &c, int reps)
{
    timer t;
    t.start(c.w.stream);
    for (int r = 0; r < reps; r++)
        if (gpu_propagate(&c.plan, &c.pp, &c.sh, c.host_trans, &c.w, 0, c.plan.n_slices)) return NAN;
    return t.stop_us(c.w.stream, reps) / c.plan.n_slices;
}

// A bare forward + inverse pair of the case's batched plan, no multiplies: us per pair (n pairs).
static int time_fft_pair_us(prop_case &c, int n, float *us)
{
    timer t;
    t.start(c.w.stream);
    for (int r = 0; r < n; r++) {
        CUFFT_CALL(cufftExecC2C(c.w.fft, c.w.waves, c.w.waves, CUFFT_FORWARD));
        CUFFT_CALL(cufftExecC2C(c.w.fft, c.w.waves, c.w.waves, CUFFT_INVERSE));
    }
    *us = t.stop_us(c.w.stream, n);
    return STEM_OK;
}

// Slices with the transmission and propagator multiplies inside cuFFT's loads ([compute]
// fft_callbacks) against the separate kernels, whole, split and streaming; then the time
// per slice of both against a bare forward + inverse pair of the same batched plan.
static int check_fft_callbacks(const stem_plan *base, int nx, int ny, int batch, int n_slices, int reps)
{
    size_t grid = (size_t)nx * ny;
    std::vector<float2> trans = random_phases(grid * n_slices, 1.0f, 21), prop = random_phases(grid, 1.0f / grid, 22);
    float2 *dt, *dp;
    GPU_ALLOC(dt, sizeof(float2) * trans.size(), "transmission functions");
    GPU_ALLOC(dp, sizeof(float2) * grid, "propagator");
    CUDA_CALL(cudaMemcpy(dt, trans.data(), sizeof(float2) * trans.size(), cudaMemcpyHostToDevice));
    CUDA_CALL(cudaMemcpy(dp, prop.data(), sizeof(float2) * grid, cudaMemcpyHostToDevice));
    const stem_complex *ht = (const stem_complex *)trans.data();
    prop_case sep, fused, fused_stream;
    int err = prop_case_create(sep, base, nx, ny, batch, n_slices, STEM_FFT_CALLBACKS_OFF, 0, ht, dt, dp);
    if (!err) err = prop_case_create(fused, base, nx, ny, batch, n_slices, STEM_FFT_CALLBACKS_ON, 0, ht, dt, dp);
    if (!err) err = prop_case_create(fused_stream, base, nx, ny, batch, n_slices, STEM_FFT_CALLBACKS_ON, 1, ht, dt, dp);
    if (err) {
        std::printf("| fft callbacks | cannot be used here: %s |\n", fused.w.fft_note);
        failures++;
        return STEM_OK;
    }
    std::printf("| %s |\n", fused.w.fft_note);
    std::vector<float2> ref, a, b, c;
    STEM_TRY(prop_case_run(sep, 0, ref));
    STEM_TRY(prop_case_run(fused, 0, a));
    STEM_TRY(prop_case_run(fused, n_slices / 2, b));
    STEM_TRY(prop_case_run(fused_stream, 0, c));
    char size[64];
    std::snprintf(size, sizeof size, "%d waves x %dx%d, %d slices", batch, nx, ny, n_slices);
    // float FFTs of unit-modulus waves: ~1e-7 per slice, the kernels differing only in FMA contraction
    float us_sep = prop_case_time_us(sep, reps), us_fused = prop_case_time_us(fused, reps);
    compare("fused", size, (const float *)a.data(), (const float *)ref.data(), 2 * ref.size(), 2, 1e-5, us_fused);
    compare("fused split", size, (const float *)b.data(), (const float *)ref.data(), 2 * ref.size(), 2, 1e-5, us_fused);
    compare("fused stream", size, (const float *)c.data(), (const float *)ref.data(), 2 * ref.size(), 2, 1e-5,
            prop_case_time_us(fused_stream, reps));
    float us_pair; // a bare forward + inverse pair of the same plan on the same batch, no multiplies
    STEM_TRY(time_fft_pair_us(sep, reps * n_slices, &us_pair));
    std::printf(
        "| per slice   | %-34s | pair %.1f us | separate kernels %.1f us (%.2fx) | callbacks %.1f us (%.2fx) |\n", size,
        us_pair, us_sep, us_sep / us_pair, us_fused, us_fused / us_pair);
    gpu_prop_worker_free(&sep.w);
    gpu_prop_worker_free(&fused.w);
    gpu_prop_worker_free(&fused_stream.w);
    gpu_free(dt);
    gpu_free(dp);
    return STEM_OK;
}

// Device-to-device copy bandwidth (bytes read + written per second) over `bytes`: the floor's unit.
static double copy_bandwidth(size_t bytes, int reps)
{
    void *a, *b;
    if (gpu_alloc_(&a, bytes, "copy test", __FILE__, __LINE__, __func__)) return NAN;
    if (gpu_alloc_(&b, bytes, "copy test", __FILE__, __LINE__, __func__)) {
        gpu_free(a);
        return NAN;
    }
    timer t;
    cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice);
    t.start(0);
    for (int r = 0; r < reps; r++) cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, 0);
    float us = t.stop_us(0, reps);
    gpu_free(a);
    gpu_free(b);
    return 2.0 * bytes / (us * 1e-6);
}

// gpu_propagate in the fused slice kernels ([compute] gpu_slices = fused) against cuFFT with
// separate multiplies (gpu_slices = cufft), whole, split at a slice and streaming; then per
// probe-slice against a bare cuFFT forward + inverse pair, each pass alone with its achieved
// bandwidth, and the floor: the fused slice's bytes (each wave read and written twice, the
// transmission function and propagator read once per batch) at the device's copy bandwidth.
// expect_fused: whether the size is covered (else the fallback must be cuFFT's path).
static int check_fused_slices(const stem_plan *base, int nx, int ny, int batch, int n_slices, int reps,
                              int expect_fused)
{
    size_t grid = (size_t)nx * ny;
    std::vector<float2> trans = random_phases(grid * n_slices, 1.0f, 31), prop = random_phases(grid, 1.0f / grid, 32);
    float2 *dt, *dp;
    GPU_ALLOC(dt, sizeof(float2) * trans.size(), "transmission functions");
    GPU_ALLOC(dp, sizeof(float2) * grid, "propagator");
    CUDA_CALL(cudaMemcpy(dt, trans.data(), sizeof(float2) * trans.size(), cudaMemcpyHostToDevice));
    CUDA_CALL(cudaMemcpy(dp, prop.data(), sizeof(float2) * grid, cudaMemcpyHostToDevice));
    const stem_complex *ht = (const stem_complex *)trans.data();
    // the propagator transposed too, as gpu_prop_upload_propagators gives the cuFFTDx column pass
    std::vector<float2> prop_t(grid);
    for (int j = 0; j < ny; j++)
        for (int i = 0; i < nx; i++) prop_t[(size_t)i * ny + j] = prop[(size_t)j * nx + i];
    float2 *dpt;
    GPU_ALLOC(dpt, sizeof(float2) * grid, "propagator (transposed)");
    CUDA_CALL(cudaMemcpy(dpt, prop_t.data(), sizeof(float2) * grid, cudaMemcpyHostToDevice));
    prop_case ref, fused, fused_stream;
    int err = prop_case_create(ref, base, nx, ny, batch, n_slices, STEM_FFT_CALLBACKS_OFF, 0, ht, dt, dp);
    if (!err)
        err = prop_case_create(fused, base, nx, ny, batch, n_slices, STEM_FFT_CALLBACKS_OFF, 0, ht, dt, dp,
                               STEM_GPU_SLICES_FUSED);
    if (!err)
        err = prop_case_create(fused_stream, base, nx, ny, batch, n_slices, STEM_FFT_CALLBACKS_OFF, 1, ht, dt, dp,
                               STEM_GPU_SLICES_FUSED);
    STEM_TRY(err);
    if (gpu_fused_uses_dx(nx, ny)) fused.sh.prop_cols = fused_stream.sh.prop_cols = dpt;
    char size[64];
    std::snprintf(size, sizeof size, "%d waves x %dx%d, %d slices", batch, nx, ny, n_slices);
    std::printf("| %s: %s |\n", size, fused.w.fft_note);
    if (fused.w.slices_fused != expect_fused) {
        std::printf("| fused slices | %s: expected %s | FAIL |\n", size, expect_fused ? "fused" : "the cuFFT fallback");
        failures++;
    }
    std::vector<float2> r, a, b, c;
    STEM_TRY(prop_case_run(ref, 0, r));
    STEM_TRY(prop_case_run(fused, 0, a));
    STEM_TRY(prop_case_run(fused, n_slices / 2, b));
    STEM_TRY(prop_case_run(fused_stream, 0, c));
    float us_ref = prop_case_time_us(ref, reps), us_fused = prop_case_time_us(fused, reps);
    // float FFTs of unit-modulus waves: ~1e-7 per slice; other transforms, other rounding
    compare("fused slices", size, (const float *)a.data(), (const float *)r.data(), 2 * r.size(), 2, 1e-5, us_fused);
    compare("fused split", size, (const float *)b.data(), (const float *)r.data(), 2 * r.size(), 2, 1e-5, us_fused);
    compare("fused stream", size, (const float *)c.data(), (const float *)r.data(), 2 * r.size(), 2, 1e-5,
            prop_case_time_us(fused_stream, reps));
    float us_pair;
    STEM_TRY(time_fft_pair_us(ref, reps * n_slices, &us_pair));
    double wave_bytes = 8.0 * grid * batch, pass_bytes = 2 * wave_bytes + 8.0 * grid;
    double bw = copy_bandwidth((size_t)wave_bytes, reps), floor_us = 2 * pass_bytes / bw * 1e6;
    float us_rows = NAN, us_cols = NAN;
    if (fused.w.slices_fused) {
        const gpu_fused_slice *fs = &fused.w.fs;
        timer t;
        t.start(fused.w.stream);
        for (int k = 0; k < reps * n_slices; k++)
            STEM_TRY(gpu_fused_rows(fs, fused.w.waves, batch, GPU_FFT_INVERSE, dt, GPU_FFT_FORWARD, fused.w.stream));
        us_rows = t.stop_us(fused.w.stream, reps * n_slices);
        t.start(fused.w.stream);
        for (int k = 0; k < reps * n_slices; k++)
            STEM_TRY(
                gpu_fused_cols(fs, fused.w.waves, batch, GPU_FFT_FORWARD, dp, dpt, GPU_FFT_INVERSE, fused.w.stream));
        us_cols = t.stop_us(fused.w.stream, reps * n_slices);
    }
    std::printf("| per probe-slice | %s | cuFFT pair %.2f us | cuFFT + separate multiplies %.2f us | fused %.2f us "
                "(%.2fx the pair) | row pass %.2f us (%.0f GB/s), column pass %.2f us (%.0f GB/s) | floor %.2f us "
                "(copy %.0f GB/s) |\n",
                size, us_pair / batch, us_ref / batch, us_fused / batch, us_fused / us_pair, us_rows / batch,
                pass_bytes / us_rows * 1e-3, us_cols / batch, pass_bytes / us_cols * 1e-3, floor_us / batch, bw * 1e-9);
    gpu_prop_worker_free(&ref.w);
    gpu_prop_worker_free(&fused.w);
    gpu_prop_worker_free(&fused_stream.w);
    gpu_free(dt);
    gpu_free(dp);
    gpu_free(dpt);
    return STEM_OK;
}

// The PRISM output step's batched CGEMM (one product per region row: C[p][col] over m
// region pixels, P probes, nb beams) timed alone at the paper case's f = 4 shape, with the
// region width m as the engine has it (the window plus the tile's span) and rounded to
// multiples of 64, and transposed (probes as rows): which shapes cuBLAS runs fastest.
static int time_output_gemm(int reps)
{
    const int nb = 885, P = 256, rows = 134, widths[] = {134, 128, 192};
    size_t a_n = (size_t)192 * rows * nb, c_n = (size_t)192 * P * rows;
    float2 *A, *B, *C;
    GPU_ALLOC(A, sizeof(float2) * a_n, "S-matrix rows");
    GPU_ALLOC(B, sizeof(float2) * nb * P, "coefficients");
    GPU_ALLOC(C, sizeof(float2) * c_n, "product");
    CUDA_CALL(cudaMemset(A, 0, sizeof(float2) * a_n));
    CUDA_CALL(cudaMemset(B, 0, sizeof(float2) * nb * P));
    cublasHandle_t h;
    CUBLAS_CALL(cublasCreate(&h));
    const cuComplex one = make_cuComplex(1, 0), zero = make_cuComplex(0, 0);
    for (int layout = 0; layout < 2; layout++)
        for (int m : widths) {
            long long sA = (long long)m * nb, sC = (long long)m * P;
            timer t;
            for (int r = -1; r < reps; r++) {
                if (r == 0) t.start(0);
                if (layout == 0) // as the engine: C[p][col] = A^T(col, b) B(b, p)
                    CUBLAS_CALL(cublasCgemmStridedBatched(h, CUBLAS_OP_T, CUBLAS_OP_N, m, P, nb, &one, A, nb, sA, B, nb,
                                                          0, &zero, C, m, sC, rows));
                else // transposed: C[col][p] = B^T(p, b) A(b, col)
                    CUBLAS_CALL(cublasCgemmStridedBatched(h, CUBLAS_OP_T, CUBLAS_OP_N, P, m, nb, &one, B, nb, 0, A, nb,
                                                          sA, &zero, C, P, sC, rows));
            }
            float us = t.stop_us(0, reps);
            double flops = 8.0 * m * P * nb * rows;
            std::printf("| output CGEMM | %s m %d x P %d x nb %d, %d rows | %.1f us | %.1f TFLOP/s |\n",
                        layout ? "probes as rows:" : "as the engine: ", m, P, nb, rows, us, flops / us / 1e6);
        }
    { // the engine's cut: 134 columns as 128 + 6
        timer t;
        for (int r = -1; r < reps; r++) {
            if (r == 0) t.start(0);
            CUBLAS_CALL(cublasCgemmStridedBatched(h, CUBLAS_OP_T, CUBLAS_OP_N, 128, P, nb, &one, A, nb, 134LL * nb, B,
                                                  nb, 0, &zero, C, 134, 134LL * P, rows));
            CUBLAS_CALL(cublasCgemmStridedBatched(h, CUBLAS_OP_T, CUBLAS_OP_N, 6, P, nb, &one, A + 128 * nb, nb,
                                                  134LL * nb, B, nb, 0, &zero, C + 128, 134, 134LL * P, rows));
        }
        float us = t.stop_us(0, reps);
        std::printf("| output CGEMM | as the engine, 134 = 128 + 6 columns | %.1f us | %.1f TFLOP/s |\n", us,
                    8.0 * 134 * P * nb * rows / us / 1e6);
    }
    cublasDestroy(h);
    gpu_free(A);
    gpu_free(B);
    gpu_free(C);
    return STEM_OK;
}

// ---- an experiment, not used by the engine: a fused 3xTF32 product on mma.sync ----------------
// C[col][j] = sum_k A[j][k] B[col][k] (A: 2P x K real coefficients, B: the S-matrix region's
// rows as they lie, K = 2 nb floats per pixel), the FP32 operands split into TF32 high and low
// parts in registers, and each k-step's three tensor-core products (lo*hi + hi*lo + hi*hi, from
// zero) added to FP32 accumulators with round-to-nearest adds: the tensor cores' own sums are
// then short (3 x 8 products), unlike cuBLAS's K-long chains whose rounding toward zero shrinks
// long sums (the 2e-5 of the split GEMMs above). Tiles: 128 rows j x 48 columns, 4 warps of 32 x 48.
#define FX_BM 128
#define FX_BN 48
#define FX_BK 32
#define FX_LD (FX_BK + 4)
static __device__ unsigned fx_tf32(float x) { return (__float_as_uint(x) + 0x1000u) & 0xffffe000u; }

static __device__ void fx_mma(float *d, const unsigned *a, const unsigned *b)
{
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// One tile of A (FX_BM x FX_BK) and B (FX_BN x FX_BK) from k0, zeros past the edges, into
// registers, then shared memory. (Loading the next tile while this one is used was slower:
// 1459 against 1177 us on an H200, benchmarks/results/TF32X3.md.)
struct fx_stage {
    float a[FX_BM * FX_BK / 128], b[FX_BN * FX_BK / 128];
};

static __device__ void fx_load(fx_stage &st, const float *A, const float *B, int j0, int n0, int k0, int M, int N,
                               int K, int tid)
{
    for (int q = 0; q < FX_BM * FX_BK / 128; q++) {
        int i = tid + q * 128, r = i / FX_BK, kk = i % FX_BK;
        st.a[q] = (j0 + r < M && k0 + kk < K) ? A[(size_t)(j0 + r) * K + k0 + kk] : 0.0f;
    }
    for (int q = 0; q < FX_BN * FX_BK / 128; q++) {
        int i = tid + q * 128, r = i / FX_BK, kk = i % FX_BK;
        st.b[q] = (n0 + r < N && k0 + kk < K) ? B[(size_t)(n0 + r) * K + k0 + kk] : 0.0f;
    }
}

static __global__ void __launch_bounds__(128)
    k_fused_3xtf32(float *__restrict__ C, const float *__restrict__ A, const float *__restrict__ B, int M, int N, int K,
                   long long sB, long long sC)
{
    __shared__ float As[FX_BM][FX_LD], Bs[FX_BN][FX_LD];
    int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
    int j0 = blockIdx.x * FX_BM, n0 = blockIdx.y * FX_BN;
    B += blockIdx.z * sB;
    C += blockIdx.z * sC;
    float acc[2][6][4] = {};
    fx_stage st;
    for (int k0 = 0; k0 < K; k0 += FX_BK) {
        fx_load(st, A, B, j0, n0, k0, M, N, K, tid);
        for (int q = 0; q < FX_BM * FX_BK / 128; q++) As[(tid + q * 128) / FX_BK][(tid + q * 128) % FX_BK] = st.a[q];
        for (int q = 0; q < FX_BN * FX_BK / 128; q++) Bs[(tid + q * 128) / FX_BK][(tid + q * 128) % FX_BK] = st.b[q];
        __syncthreads();
        for (int ks = 0; ks < FX_BK; ks += 8) {
            unsigned ah[2][4], al[2][4], bh[6][2], bl[6][2];
            for (int mt = 0; mt < 2; mt++)
                for (int q = 0; q < 4; q++) {
                    float x = As[warp * 32 + mt * 16 + g + (q & 1) * 8][ks + t4 + (q >> 1) * 4];
                    ah[mt][q] = fx_tf32(x);
                    al[mt][q] = fx_tf32(x - __uint_as_float(ah[mt][q]));
                }
            for (int nt = 0; nt < 6; nt++)
                for (int q = 0; q < 2; q++) {
                    float x = Bs[nt * 8 + g][ks + t4 + q * 4];
                    bh[nt][q] = fx_tf32(x);
                    bl[nt][q] = fx_tf32(x - __uint_as_float(bh[nt][q]));
                }
            for (int mt = 0; mt < 2; mt++)
                for (int nt = 0; nt < 6; nt++) {
                    float d[4] = {0, 0, 0, 0};
                    fx_mma(d, al[mt], bh[nt]);
                    fx_mma(d, ah[mt], bl[nt]);
                    fx_mma(d, ah[mt], bh[nt]);
                    for (int q = 0; q < 4; q++) acc[mt][nt][q] += d[q];
                }
        }
        __syncthreads();
    }
    for (int mt = 0; mt < 2; mt++)
        for (int nt = 0; nt < 6; nt++)
            for (int q = 0; q < 4; q++) {
                int j = j0 + warp * 32 + mt * 16 + g + (q >> 1) * 8, n = n0 + nt * 8 + 2 * t4 + (q & 1);
                if (j < M && n < N) C[(size_t)n * M + j] = acc[mt][nt][q];
            }
}

// The output step's product at the paper case's f = 4 shape (134 x 134 region pixels, 256 probes,
// 885 beams) on random inputs, by each [debug] gpu_gemm kind through gpu_tile_product (time per
// call for the whole tile; rate in FP32-equivalent flops, 8 m P nb per row; error: max |C - ref|
// / max |ref| over region row 0, ref summed in double), then variants the engine does not use:
// 3xTF32 with the pixels as rows (one call, or two), 1xTF32 on the split's high parts (the raw
// tensor-core rate) in both orientations, and cuBLAS's FP32 emulation by BF16x9
// (CUBLAS_COMPUTE_32F_EMULATED_16BFX9).
// Smaller shapes (extras false: the engine's kinds only) show where FP32 CGEMM is the faster.
static int time_split_gemm(int reps, int nb, int m, bool extras)
{
    const int P = 256, rows = m;
    std::printf("| output GEMM  | shape: %d x %d region pixels, %d probes, %d beams |\n", m, rows, P, nb);
    const size_t pixels = (size_t)m * rows, n_out = (size_t)m * P * rows;
    std::mt19937 rng(23);
    std::normal_distribution<float> gauss(0.0f, 1.0f);
    std::vector<float2> S(pixels * nb), coef((size_t)P * nb), out(n_out);
    for (auto &v : S) v = make_float2(gauss(rng), gauss(rng));
    std::uniform_real_distribution<float> angle(-3.14159f, 3.14159f);
    for (auto &v : coef) { // |c| = 1 / sqrt(nb), random phases: as gpu_beam_table's hard aperture
        float a = angle(rng);
        v = make_float2(std::cos(a) / std::sqrt((float)nb), std::sin(a) / std::sqrt((float)nb));
    }
    std::vector<double> ref(2 * (size_t)P * m); // region row 0: ref[p][col][re, im]
    for (int p = 0; p < P; p++)
        for (int c = 0; c < m; c++) {
            double re = 0, im = 0;
            for (int b = 0; b < nb; b++) {
                float2 a = S[(size_t)c * nb + b], k = coef[(size_t)p * nb + b];
                re += (double)a.x * k.x - (double)a.y * k.y;
                im += (double)a.x * k.y + (double)a.y * k.x;
            }
            ref[2 * ((size_t)p * m + c)] = re, ref[2 * ((size_t)p * m + c) + 1] = im;
        }
    float2 *dS, *dcoef, *dout;
    GPU_ALLOC(dS, sizeof(float2) * S.size(), "S-matrix rows");
    GPU_ALLOC(dcoef, sizeof(float2) * coef.size(), "coefficients");
    GPU_ALLOC(dout, sizeof(float2) * n_out, "product");
    CUDA_CALL(cudaMemcpy(dS, S.data(), sizeof(float2) * S.size(), cudaMemcpyHostToDevice));
    CUDA_CALL(cudaMemcpy(dcoef, coef.data(), sizeof(float2) * coef.size(), cudaMemcpyHostToDevice));
    cublasHandle_t h;
    CUBLAS_CALL(cublasCreate(&h));
    gpu_tile tl = {0, P, 0, 0, m, rows};
    const double flops = 8.0 * m * P * nb * rows;
    auto row0_error = [&](int planes, int transposed) -> double { // row 0 of the product against ref
        CUDA_CALL(cudaMemcpy(out.data(), dout, sizeof(float2) * n_out, cudaMemcpyDeviceToHost));
        const float *f = (const float *)out.data();
        std::vector<float> got(ref.size());
        for (int p = 0; p < P; p++)
            for (int c = 0; c < m; c++)
                for (int i = 0; i < 2; i++)
                    got[2 * ((size_t)p * m + c) + i] = transposed ? f[(size_t)c * 2 * P + 2 * p + i]
                        : planes                                  ? f[((size_t)2 * p + i) * m + c]
                                                                  : f[2 * ((size_t)p * m + c) + i];
        return rel_err(got.data(), ref.data(), ref.size());
    };
    auto line = [&](const char *what, float us, double err) {
        std::printf("| output GEMM  | %-44s | %8.1f us | %6.1f TFLOP/s (FP32-equivalent) | max error %.2e |\n", what,
                    us, flops / us / 1e6, err);
    };
    // each kind as the engine runs it; the split kinds at several [debug] gpu_gemm_steps (0: one sum over K)
    struct variant {
        int kind, steps;
        const char *name;
    } vs[] = {{STEM_GPU_GEMM_STANDARD, 0, "FP32 CGEMM (engine: standard)"},
              {STEM_GPU_GEMM_TF32, 0, "1xTF32 CGEMM (engine: tf32)"},
              {STEM_GPU_GEMM_TF32X3, 0, "3xTF32, the whole K in one sum, probes as rows"},
              {STEM_GPU_GEMM_TF32X3, 24, "3xTF32, hi*hi in sums of 24 steps (K 192)"},
              {STEM_GPU_GEMM_FP16X3, 0, "3xFP16, the whole K in one sum, probes as rows"},
              {STEM_GPU_GEMM_FP16X3, 64, "3xFP16, hi*hi in sums of 64 steps (K 1024)"},
              {STEM_GPU_GEMM_FP16X3, 48, "3xFP16, hi*hi in sums of 48 steps (K 768)"},
              {STEM_GPU_GEMM_FP16X3, 32, "3xFP16, hi*hi in sums of 32 steps (K 512)"},
              {STEM_GPU_GEMM_FP16X3, 24, "3xFP16, hi*hi in sums of 24 steps (K 384)"},
              {STEM_GPU_GEMM_FP16X3, 16, "3xFP16, hi*hi in sums of 16 steps (K 256)"},
              {STEM_GPU_GEMM_FP16X3, 12, "3xFP16, hi*hi in sums of 12 steps (K 192)"},
              {STEM_GPU_GEMM_FP64, 0, "FP64 ZGEMM on widened copies (engine: fp64)"}};
    gpu_split_form f;
    void *ssrc = NULL, *csplit = NULL;
    for (const variant &v : vs) {
        if (!extras && v.kind != STEM_GPU_GEMM_STANDARD && v.kind != STEM_GPU_GEMM_FP16X3 &&
            v.kind != STEM_GPU_GEMM_FP64)
            continue;
        int split = gpu_gemm_is_split(v.kind);
        if (split) {
            gpu_free(ssrc);
            gpu_free(csplit);
            gpu_split_form_init(&f, v.kind, nb, v.steps);
            GPU_ALLOC(ssrc, gpu_split_smatrix_bytes(&f, pixels), "S-matrix split");
            GPU_ALLOC(csplit, gpu_split_coef_bytes(&f, P), "coefficients split");
            timer ts;
            ts.start(0);
            STEM_TRY(gpu_split_scale_device(&f, dS, pixels, 0));
            STEM_TRY(gpu_split_smatrix(&f, ssrc, dS, pixels, 0));
            float us_s = ts.stop_us(0, 1);
            ts.start(0);
            STEM_TRY(gpu_split_coefficients(&f, csplit, dcoef, P, 0));
            std::printf(
                "| split        | %s: S-matrix region (%zu pixels) %.1f us once, coefficients %.1f us per tile |\n",
                f.fp16 ? "FP16" : (f.fp64 ? "FP64" : "TF32"), pixels, us_s, ts.stop_us(0, 1));
        }
        CUDA_CALL(cudaMemset(dout, 0xff, sizeof(float2) * n_out));
        double fl = 0;
        timer t;
        for (int r = -1; r < reps; r++) {
            if (r == 0) t.start(0);
            STEM_TRY(gpu_tile_product(h, v.kind, &f, dS, ssrc, m, rows, nb, 0, 0, &tl, P, dcoef, csplit, dout, &fl));
        }
        float us = t.stop_us(0, reps);
        line(v.name, us, row0_error(0, split));
    }
    auto release = [&]() {
        cublasDestroy(h);
        gpu_free(ssrc);
        gpu_free(csplit);
        gpu_free(dS);
        gpu_free(dcoef);
        gpu_free(dout);
        return STEM_OK;
    };
    if (!extras) return release();
    // the variants the engine does not use, on TF32 split arrays
    gpu_free(ssrc);
    gpu_free(csplit);
    gpu_split_form_init(&f, STEM_GPU_GEMM_TF32X3, nb, 0);
    GPU_ALLOC(ssrc, gpu_split_smatrix_bytes(&f, pixels), "S-matrix split");
    GPU_ALLOC(csplit, gpu_split_coef_bytes(&f, P), "coefficients split");
    STEM_TRY(gpu_split_smatrix(&f, ssrc, dS, pixels, 0));
    STEM_TRY(gpu_split_coefficients(&f, csplit, dcoef, P, 0));
    const float one = 1, zero = 0;
    const int kb = f.kb, ld = 3 * kb;
    const float *A = (const float *)ssrc, *B = (const float *)csplit;
    float *C = (float *)dout;
    const long long sA = (long long)m * ld, sC = 2LL * P * m;
    // one real TF32 product over K = k parts from part offset o: pixels as rows (C[j][col], planes
    // of m floats) or probes as rows (C[col][j], the engine's), adding to C with beta
    auto part_gemm = [&](int probes_rows, int o, int k, const float *beta) -> int {
        if (probes_rows)
            CUBLAS_CALL(cublasGemmStridedBatchedEx(h, CUBLAS_OP_T, CUBLAS_OP_N, 2 * P, m, k * kb, &one, B + o * kb,
                                                   CUDA_R_32F, ld, 0, A + o * kb, CUDA_R_32F, ld, sA, beta, C,
                                                   CUDA_R_32F, 2 * P, sC, rows, CUBLAS_COMPUTE_32F_FAST_TF32,
                                                   CUBLAS_GEMM_DEFAULT));
        else
            CUBLAS_CALL(cublasGemmStridedBatchedEx(h, CUBLAS_OP_T, CUBLAS_OP_N, m, 2 * P, k * kb, &one, A + o * kb,
                                                   CUDA_R_32F, ld, sA, B + o * kb, CUDA_R_32F, ld, 0, beta, C,
                                                   CUDA_R_32F, m, sC, rows, CUBLAS_COMPUTE_32F_FAST_TF32,
                                                   CUBLAS_GEMM_DEFAULT));
        return STEM_OK;
    };
    const char *what[] = {"3xTF32, one call, pixels as rows", "3xTF32, two calls (2 parts + 1), pixels as rows",
                          "1xTF32 real, high parts only, pixels as rows",
                          "1xTF32 real, high parts only, probes as rows"};
    for (int v = 0; v < 4; v++) {
        CUDA_CALL(cudaMemset(dout, 0xff, sizeof(float2) * n_out));
        timer t;
        for (int r = -1; r < reps; r++) {
            if (r == 0) t.start(0);
            if (v == 0) STEM_TRY(part_gemm(0, 0, 3, &zero));
            if (v == 1) STEM_TRY(part_gemm(0, 0, 2, &zero)); // [hi | lo] x [hi ; hi], then hi x lo added
            if (v == 1) STEM_TRY(part_gemm(0, 2, 1, &one));
            if (v >= 2) STEM_TRY(part_gemm(v == 3, 0, 1, &zero));
        }
        float us = t.stop_us(0, reps);
        line(what[v], us, row0_error(v < 3, v == 3));
    }
    { // the fused experiment on the unsplit operands: the coefficients as 2P real rows of K = 2 nb
        const int K = 2 * nb;
        std::vector<float> ar((size_t)2 * P * K);
        for (int p = 0; p < P; p++)
            for (int b = 0; b < nb; b++) {
                float2 c = coef[(size_t)p * nb + b];
                float *re = &ar[(size_t)2 * p * K + 2 * b], *im = re + K;
                re[0] = c.x, re[1] = -c.y, im[0] = c.y, im[1] = c.x;
            }
        float *dA;
        GPU_ALLOC(dA, sizeof(float) * ar.size(), "coefficients as real rows");
        CUDA_CALL(cudaMemcpy(dA, ar.data(), sizeof(float) * ar.size(), cudaMemcpyHostToDevice));
        dim3 grid((2 * P + FX_BM - 1) / FX_BM, (m + FX_BN - 1) / FX_BN, rows);
        CUDA_CALL(cudaMemset(dout, 0xff, sizeof(float2) * n_out));
        timer t;
        for (int r = -1; r < reps; r++) {
            if (r == 0) t.start(0);
            k_fused_3xtf32<<<grid, 128>>>((float *)dout, dA, (const float *)dS, 2 * P, m, K, (long long)m * K,
                                          2LL * P * m);
        }
        CUDA_LAUNCH();
        float us = t.stop_us(0, reps);
        line("fused 3xTF32, mma.sync, RN adds (experiment)", us, row0_error(0, 1));
        gpu_free(dA);
    }
    { // cuBLAS's BF16x9 FP32 emulation on the complex product (Blackwell's; on Hopper maybe refused)
        const cuComplex c1 = make_cuComplex(1, 0), c0 = make_cuComplex(0, 0);
        CUDA_CALL(cudaMemset(dout, 0xff, sizeof(float2) * n_out));
        cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
        timer t;
        for (int r = -1; r < reps && st == CUBLAS_STATUS_SUCCESS; r++) {
            if (r == 0) t.start(0);
            st = cublasGemmStridedBatchedEx(h, CUBLAS_OP_T, CUBLAS_OP_N, m, P, nb, &c1, dS, CUDA_C_32F, nb,
                                            (long long)m * nb, dcoef, CUDA_C_32F, nb, 0, &c0, dout, CUDA_C_32F, m,
                                            (long long)m * P, rows, CUBLAS_COMPUTE_32F_EMULATED_16BFX9,
                                            CUBLAS_GEMM_DEFAULT);
        }
        float us = t.stop_us(0, reps);
        if (st == CUBLAS_STATUS_SUCCESS)
            line("CGEMM, CUBLAS_COMPUTE_32F_EMULATED_16BFX9", us, row0_error(0, 0));
        else
            std::printf("| output GEMM  | CUBLAS_COMPUTE_32F_EMULATED_16BFX9: cuBLAS status %d (not offered here) |\n",
                        (int)st);
    }
    return release();
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
    int bench = argc > 2 && !std::strcmp(argv[2], "--bench");           // also the benchmark sizes
    int split_only = argc > 2 && !std::strcmp(argv[2], "--split-gemm"); // the checks and the split products' timing
    // --fused N: only the fused slices at N^2 with the engine's batch (a benchmark's sweep)
    int only_fused = argc > 3 && !std::strcmp(argv[2], "--fused") ? std::atoi(argv[3]) : 0;
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    cudaStream_t s;
    cudaStreamCreate(&s);
    std::printf("%s, %d reps per timing\n\n", prop.name, reps);
    std::printf("| kernel       | size                               | max error | tolerance | us per call | |\n");
    std::printf("|---|---|---|---|---|---|\n");
    // aberrations so that chi (up to about 2 rad) enters the probe and beam coefficients; the probe
    // (3.5 Angstrom across) still fits the PRISM window of half the cell
    const char *ini =
        "[sample]\nxyz = inline\n[probe]\nsoft_aperture = true\nC10 = 20\nC12 = 10\nphi12 = 30\nC30 = 5e4\n"
        "[simulation]\npixel_size = 0.05\nalgorithm = prism\n"
        "interpolation_x = 2\ninterpolation_y = 2\n[detector]\nring_width = 1\nsave_4d = true\n"
        "segments = 4\nsegment_inner = 5\nsegment_outer = 40\nsegment_rings = 2\nsegment_rotation = 10\n";
    const char *ini_ms =
        "[sample]\nxyz = inline\n[probe]\nsoft_aperture = true\nC10 = 20\nC12 = 10\nphi12 = 30\nC30 = 5e4\n"
        "[simulation]\npixel_size = 0.05\nalgorithm = multislice\n";
    // a window of at most 2048 pixels: the fixed-order detector's one-tile path
    const char *ini_one = "[sample]\nxyz = inline\n[simulation]\npixel_size = 0.15\nalgorithm = prism\n"
                          "interpolation_x = 2\ninterpolation_y = 2\n[detector]\nring_width = 2\n";
    // the HRTEM lens: aberrations and a 30 mrad objective aperture inside the band limit
    const char *ini_hr = "[sample]\nxyz = inline\n[probe]\nC10 = 20\nC12 = 10\nphi12 = 30\nC30 = 5e4\n"
                         "[simulation]\npixel_size = 0.05\nalgorithm = hrtem\n[hrtem]\nobjective_aperture = 30\n";
    stem_config cfg, cfg_ms, cfg_one, cfg_hr;
    stem_atoms atoms, atoms_ms, atoms_one, atoms_hr;
    stem_plan plan, plan_ms, plan_one, plan_hr;
    int err = make_plan(ini, &cfg, &atoms, &plan);
    if (only_fused > 0) {
        int batch = std::max(1, std::min(128, (int)(8.0 * 1048576.0 / ((double)only_fused * only_fused))));
        if (!err) err = make_plan(ini_ms, &cfg_ms, &atoms_ms, &plan_ms);
        if (!err)
            err = check_fused_slices(&plan_ms, only_fused, only_fused, batch, only_fused > 2048 ? 4 : 12, reps, 1);
        std::printf("\n%s\n", err || failures ? "gpu_kernel_check: FAIL" : "gpu_kernel_check: PASS");
        return err || failures ? 1 : 0;
    }
    if (!err) err = make_plan(ini_ms, &cfg_ms, &atoms_ms, &plan_ms);
    if (!err) err = make_plan(ini_one, &cfg_one, &atoms_one, &plan_one);
    if (!err) err = make_plan(ini_hr, &cfg_hr, &atoms_hr, &plan_hr);
    if (!err) err = check_detect(&plan, 64, reps, s, prop.multiProcessorCount, 1);
    if (!err) err = check_detect(&plan, 64, reps, s, prop.multiProcessorCount, 0);
    if (!err) err = check_detect(&plan_one, 16, reps, s, prop.multiProcessorCount, 1); // one tile per probe
    if (!err) err = report_fft_batches(256, 192);
    if (!err) err = check_crop(&plan, 16, reps, s);
    if (!err) err = check_probes(&plan_ms, 64, reps, s);
    if (!err) err = check_plane_waves(&plan, reps, s);
    if (!err) err = check_mul_bcast(&plan_ms, 16, reps, s);
    if (!err) err = check_output(&plan, 8, reps, s);
    if (!err) err = check_arrange(&plan, reps);
    if (!err) err = check_hrtem_lens(&plan_hr, reps, s);
    if (!err) err = check_fft_callbacks(&plan_ms, 256, 192, 4, 6, reps);
    // the benchmarks' sizes: amorphous carbon's 1000^2 (the GPU engine's batch of 8) and SrTiO3's 1024^2
    if (!err && bench) err = check_fft_callbacks(&plan_ms, 1000, 1000, 8, 20, reps);
    if (!err && bench) err = check_fft_callbacks(&plan_ms, 1024, 1024, 8, 20, reps);
    // fused slices: radices 8, 4 and 2; 3, 5, 7 on a non-square grid; a size they do not cover (2 x 127)
    if (!err) err = check_fused_slices(&plan_ms, 256, 192, 4, 6, reps, 1);
    if (!err) err = check_fused_slices(&plan_ms, 210, 350, 3, 5, reps, 1);
    if (!err) err = check_fused_slices(&plan_ms, 254, 128, 2, 3, reps, 0);
    // cuFFTDx's compiled sides where the build has them (else the run-time kernels): non-square,
    // both ways round, a last column tile that is partly outside the grid (1000 = 62.5 x 16)
    if (!err) err = check_fused_slices(&plan_ms, 1000, 256, 3, 5, reps, 1);
    if (!err) err = check_fused_slices(&plan_ms, 256, 1000, 2, 5, reps, 1);
    if (!err) err = check_fused_slices(&plan_ms, 512, 1024, 2, 4, reps, 1);
    // the sizes users run, each with the engine's batch (about 8 M points)
    static const int fused_sizes[][3] = {{512, 32, 20}, {768, 14, 20}, {1000, 8, 20}, {1024, 8, 20},
                                         {1536, 3, 12}, {2048, 2, 8},  {3000, 1, 4},  {4096, 1, 4}};
    for (const auto &z : fused_sizes)
        if (!err && bench) err = check_fused_slices(&plan_ms, z[0], z[0], z[1], z[2], reps, 1);
    if (!err && bench) err = time_output_gemm(reps);
    // the paper case's f = 4 tile (the extras too), then f = 8 and f = 16's
    if (!err && (bench || split_only)) err = time_split_gemm(reps, 885, 134, true);
    if (!err && (bench || split_only)) err = time_split_gemm(reps, 221, 70, false);
    if (!err && (bench || split_only)) err = time_split_gemm(reps, 55, 38, false);
    // the amorphous-carbon cube's f = 8 (about 113 beams; issue 41's abTEM case)
    if (!err && (bench || split_only)) err = time_split_gemm(reps, 113, 96, false);
    if (err) {
        std::printf("FAIL: set-up error %d\n", err);
        return 1;
    }
    std::printf("\n%s\n", failures ? "gpu_kernel_check: FAIL" : "gpu_kernel_check: PASS");
    return failures ? 1 : 0;
}
