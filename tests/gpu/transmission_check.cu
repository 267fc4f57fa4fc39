// The GPU engine's transmission step (cuda/gpu_potential.cu) against the CPU's
// (src/potential.c stem_transmission_build) on a thermally displaced silicon
// model, both timed. Skips (77) without a GPU.
//
//   gpu_transmission_check [cells]   (ctest: gpu_transmission_check, label gpu)
//
// The check can fail: the same comparison against the CPU's functions of the
// model moved by one pixel must exceed the tolerance a hundredfold.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "../../cuda/gpu_internal.cuh"
extern "C" { /* C headers of io/ (gpu_common.cuh wraps src/'s) */
#include "../../io/config.h"
#include "../../io/scattering_tables.h"
#include "../../io/xyz.h"
}

static double max_rel(const stem_complex *a, const stem_complex *b, size_t n)
{
    double d = 0, m = 0;
    for (size_t i = 0; i < n; i++) {
        const float *x = (const float *)&a[i], *y = (const float *)&b[i];
        d = std::fmax(d, std::hypot((double)x[0] - y[0], (double)x[1] - y[1]));
        m = std::fmax(m, std::hypot((double)y[0], (double)y[1]));
    }
    return m > 0 ? d / m : d;
}

int main(int argc, char **argv)
{
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        std::printf("SKIP: no usable GPU\n");
        return 77;
    }
    stem_log_init(0, STEM_LOG_QUIET);
    int cells = argc > 1 ? std::atoi(argv[1]) : 4;
    const char *kirkland_path = std::getenv("STEMSIM_KIRKLAND");
    char ini[1024];
    std::snprintf(ini, sizeof ini,
                  "[sample]\nxyz = inline\ntile_x = %d\ntile_y = %d\ntile_z = %d\n[beam]\nenergy = 200\n"
                  "[simulation]\npixel_size = 0.08\nslice_thickness = 1.3575\nthermal = true\n",
                  cells, cells, cells);
    stem_config cfg;
    stem_atoms atoms{}, displaced{}, moved{};
    stem_plan plan;
    stem_layout L = {1, 0, 1, 0, 1, 0, 1, 0, 1, NULL, 0};
    static stem_atom_potential kirkland[STEM_MAX_Z + 1];
    stem_potential_table table;
    stem_engine engine;
    const char *si =
        "Si unit cell\n5.43 5.43 5.43\n14 0 0 0 1 0.076\n14 2.715 2.715 0 1 0.076\n14 2.715 0 2.715 1 0.076\n"
        "14 0 2.715 2.715 1 0.076\n14 1.3575 1.3575 1.3575 1 0.076\n14 4.0725 4.0725 1.3575 1 0.076\n"
        "14 4.0725 1.3575 4.0725 1 0.076\n14 1.3575 4.0725 4.0725 1 0.076\n-1\n";
    int err = stem_config_load_string(&cfg, "transmission_check.ini", ini);
    if (!err) err = stem_xyz_read_string("transmission_check.xyz", si, &atoms);
    if (!err) err = stem_atoms_prepare(&atoms, &cfg);
    if (!err) err = stem_plan_build(&plan, &cfg, &atoms, NULL, &L);
    if (!err)
        err = stem_atom_potentials_load(STEM_PARAM_KIRKLAND, kirkland_path ? kirkland_path : "data/kirkland_params.txt",
                                        kirkland);
    if (!err) err = stem_potential_table_build(&plan, &atoms, kirkland, &table);
    if (!err) err = stem_atoms_displace(&atoms, 1234, 3, 1, &displaced);
    if (!err) err = stem_atoms_displace(&atoms, 1234, 3, 1, &moved);
    if (!err) err = stem_gpu_engine_provider()->create(&plan, &engine);
    if (err) {
        std::printf("FAIL: set-up error %d\n", err);
        return 1;
    }
    for (long i = 0; i < moved.n; i++) moved.x[i] = std::fmod(moved.x[i] + plan.dx, plan.cell[0]);
    size_t n = (size_t)plan.nx * plan.ny * plan.n_slices;
    std::vector<stem_complex> cpu(n), gpu(n), again(n), shifted(n);
    double t0 = stem_wall_time();
    err = stem_transmission_build(&plan, &table, &displaced, cpu.data());
    double t1 = stem_wall_time();
    if (!err) err = engine.transmission(&engine, &plan, &table, &displaced, gpu.data()); // first call sets up
    double t2 = stem_wall_time();
    if (!err) err = engine.transmission(&engine, &plan, &table, &displaced, gpu.data());
    double t3 = stem_wall_time();
    if (!err) err = engine.transmission(&engine, &plan, &table, &displaced, again.data()); // the same bits again
    if (!err) err = stem_transmission_build(&plan, &table, &moved, shifted.data());
    if (err) {
        std::printf("FAIL: error %d\n", err);
        return 1;
    }
    const double tol = 2e-5;
    double e = max_rel(gpu.data(), cpu.data(), n), e_moved = max_rel(shifted.data(), cpu.data(), n);
    std::printf("%ld atoms, %d x %d pixels x %d slices: CPU %.3f s (%d threads), GPU %.3f s (first call %.3f s)\n",
                displaced.n, plan.nx, plan.ny, plan.n_slices, t1 - t0, plan.threads, t3 - t2, t2 - t1);
    std::printf(
        "| transmission (gpu_transmission) | max |t_gpu - t_cpu| / max |t_cpu| | %.2e | tolerance %.0e | %s |\n", e,
        tol, e <= tol ? "ok" : "FAIL");
    std::printf("| sensitivity: model moved by one pixel | same measure | %.2e | must exceed %.0e | %s |\n", e_moved,
                100 * tol, e_moved > 100 * tol ? "ok" : "FAIL");
    int same = std::memcmp(gpu.data(), again.data(), n * sizeof(stem_complex)) == 0;
    std::printf("| reproducible: the GPU build twice (oversampling %d) | bitwise | %s | %s |\n", plan.opt.oversampling,
                same ? "equal" : "differ", same ? "ok" : "FAIL");
    int fail = !(e <= tol) || !(e_moved > 100 * tol) || !same;
    engine.destroy(&engine);
    std::printf("gpu_transmission_check: %s\n", fail ? "FAIL" : "PASS");
    return fail;
}
