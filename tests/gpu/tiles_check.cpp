// Host-only check of the GPU PRISM output's index arithmetic (cuda/gpu_tiles.cu),
// runnable without a GPU: the tiles, the wrapped pieces of the batched matrix
// products and the streaming units' copies are executed by plain loops and the
// windows compared with the CPU engine's definition (src/prism.c gather_window):
// window_p[j][i] = sum_b coef_p[b] S[(oy_p + j) mod cy][(ox_p + i) mod cx][b].
//
// Built by ctest as gpu_tiles_check (tests/gpu.cmake) when the CUDA engine is on; by hand:
//   g++ -O2 -std=c++17 -I/usr/local/cuda/include tests/gpu/tiles_check.cpp
//       build-gpu/libstemsim_gpu.a build-gpu/libstemsim_core.a -L/usr/local/cuda/lib64 -lcudart -linih -lfftw3f -lm
//       -lpthread -o build-gpu/gpu_tiles_check
//   build-gpu/gpu_tiles_check
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "../cuda/gpu_internal.cuh"

typedef std::complex<double> cd;

static int failures = 0;
#define CHECK(cond, ...)                          \
    do {                                          \
        if (!(cond)) {                            \
            std::printf("FAIL: " __VA_ARGS__);    \
            std::printf("\n");                    \
            failures++;                           \
        }                                         \
    } while (0)

static void check_segments()
{
    gpu_seg s[8];
    int n = gpu_segments(-3, 10, 8, s, 8); // pixels 5,6,7 | 0..6
    CHECK(n == 2 && s[0].src == 5 && s[0].len == 3 && s[0].dst == 0 && s[1].src == 0 && s[1].len == 7 && s[1].dst == 3,
          "segments of [-3, 7) mod 8");
    n = gpu_segments(2, 20, 8, s, 8); // 2..7 | 0..7 | 0..5
    CHECK(n == 3 && s[0].len == 6 && s[1].len == 8 && s[2].len == 6 && s[2].dst == 14, "segments of [2, 22) mod 8");
    n = gpu_segments(16, 4, 8, s, 8);
    CHECK(n == 1 && s[0].src == 0 && s[0].len == 4, "segments of [16, 20) mod 8");
    CHECK(gpu_segments(0, 100, 8, s, 8) == -1, "too many segments must be refused");
}

struct Case {
    const char *name;
    int crop_x, crop_y, f, nb, scan_nx, scan_ny;
    double cell_x, cell_y, step, x0, y0;
    int T, U;
    long begin, end; // local probe range (end < 0: all)
    int whole;       // [compute] gpu_deterministic: tiles cut by the range taken whole
};

static void run_case(const Case &k, std::mt19937 &rng)
{
    stem_plan plan;
    std::memset(&plan, 0, sizeof plan);
    plan.cell[0] = k.cell_x;
    plan.cell[1] = k.cell_y;
    plan.crop_nx = k.crop_x;
    plan.crop_ny = k.crop_y;
    plan.out_nx = k.crop_x / k.f;
    plan.out_ny = k.crop_y / k.f;
    plan.n_beams = k.nb;
    plan.scan_nx = k.scan_nx;
    plan.scan_ny = k.scan_ny;
    plan.n_probes = (long)k.scan_nx * k.scan_ny;
    plan.scan_x0 = k.x0;
    plan.scan_y0 = k.y0;
    plan.scan_step = k.step;
    plan.probe_begin = k.begin;
    plan.probe_end = k.end < 0 ? plan.n_probes : k.end;
    plan.opt.gpu_deterministic = k.whole;
    int T = k.T > 0 ? k.T : gpu_tile_choose(&plan, 64.0 * 1048576.0);
    gpu_tiling t;
    if (gpu_tiling_build(&plan, T, k.U, &t)) {
        CHECK(false, "%s: tiling failed", k.name);
        return;
    }
    int cx = plan.crop_nx, cy = plan.crop_ny, wx = plan.out_nx, wy = plan.out_ny, nb = plan.n_beams;
    long n_local = plan.probe_end - plan.probe_begin;
    std::uniform_real_distribution<double> u(-1, 1);
    std::vector<cd> S((size_t)cx * cy * nb), coef((size_t)plan.n_probes * nb); // by global probe
    for (auto &v : S) v = cd(u(rng), u(rng));
    for (auto &v : coef) v = cd(u(rng), u(rng));
    // every local probe once; others (whole tiles) only in tiles that hold a local one
    std::vector<int> seen(n_local, 0);
    for (long i = 0; i < t.n_probes; i++) {
        CHECK(t.global[i] >= 0 && t.global[i] < plan.n_probes, "%s: global index %ld", k.name, t.global[i]);
        if (t.local[i] >= 0) {
            seen[t.local[i]]++;
            CHECK(t.global[i] == plan.probe_begin + t.local[i], "%s: local and global indices disagree", k.name);
        } else {
            CHECK(k.whole && (t.global[i] < plan.probe_begin || t.global[i] >= plan.probe_end), "%s: probe %ld not local",
                  k.name, t.global[i]);
        }
    }
    for (int ti = 0; ti < t.n_tiles; ti++) {
        int locals = 0;
        for (long i = t.tile[ti].p0; i < t.tile[ti].p1; i++) locals += t.local[i] >= 0;
        CHECK(locals > 0, "%s: tile %d holds none of the rank's probes", k.name, ti);
    }
    CHECK(t.n_local == n_local, "%s: n_local", k.name);
    for (long i = 0; i < n_local; i++) CHECK(seen[i] == 1, "%s: probe %ld appears %d times", k.name, i, seen[i]);
    double worst_single = 0, worst_stream = 0;
    std::vector<cd> out(t.max_out), region(t.max_unit * (size_t)nb), ref((size_t)wx * wy);
    for (int ui = 0; ui < t.n_units; ui++) {
        const gpu_unit &un = t.unit[ui];
        CHECK((size_t)un.w * un.h <= t.max_unit, "%s: unit larger than max_unit", k.name);
        gpu_copy_piece cp[256];
        int ncp = gpu_unit_pieces(&plan, &un, cp, 256);
        CHECK(ncp > 0, "%s: unit pieces", k.name);
        for (int q = 0; q < ncp; q++)
            for (int r = 0; r < cp[q].rows; r++)
                for (long e = 0; e < (long)cp[q].px * nb; e++)
                    region[cp[q].dst_off + (size_t)r * un.w * nb + e] = S[cp[q].src_off + (size_t)r * cx * nb + e];
        for (int ti = un.t0; ti < un.t1; ti++) {
            const gpu_tile &tl = t.tile[ti];
            int P = (int)(tl.p1 - tl.p0);
            CHECK(P <= t.max_p && (size_t)tl.w * tl.h * P <= t.max_out, "%s: tile exceeds the maxima", k.name);
            CHECK(tl.x0 >= un.x0 && tl.y0 >= un.y0 && tl.x0 + tl.w <= un.x0 + un.w && tl.y0 + tl.h <= un.y0 + un.h,
                  "%s: tile outside its unit", k.name);
            for (int mode = 0; mode < 2; mode++) {
                const cd *src = mode ? region.data() : S.data();
                int W = mode ? un.w : cx, H = mode ? un.h : cy;
                int sx = mode ? tl.x0 - un.x0 : tl.x0, sy = mode ? tl.y0 - un.y0 : tl.y0;
                gpu_gemm_piece pc[256];
                int npc = gpu_tile_pieces(W, H, nb, sx, sy, tl.w, tl.h, P, pc, 256);
                CHECK(npc > 0, "%s: tile pieces", k.name);
                if (mode) CHECK(npc == 1, "%s: a streaming tile must not wrap (%d pieces)", k.name, npc);
                std::fill(out.begin(), out.end(), cd(1e30, 0)); // poison
                long sA = (long)W * nb, sC = (long)tl.w * P;
                for (int q = 0; q < npc; q++) // C(m, p) = sum_b A(b, m) B(b, p), batched over rows
                    for (int r = 0; r < pc[q].rows; r++)
                        for (int p = 0; p < P; p++)
                            for (int m = 0; m < pc[q].m; m++) {
                                cd acc = 0;
                                const cd *a = src + pc[q].a_off + r * sA + (long)m * nb;
                                const cd *b = coef.data() + (size_t)t.global[tl.p0 + p] * nb;
                                for (int e = 0; e < nb; e++) acc += a[e] * b[e];
                                out[pc[q].c_off + r * sC + (long)p * tl.w + m] = acc;
                            }
                for (int p = 0; p < P; p++) {
                    const gpu_probe &pr = t.probe[tl.p0 + p];
                    const cd *b = coef.data() + (size_t)t.global[tl.p0 + p] * nb;
                    // the CPU definition
                    for (int j = 0; j < wy; j++)
                        for (int i = 0; i < wx; i++) {
                            int gy = ((pr.oy + j) % cy + cy) % cy, gx = ((pr.ox + i) % cx + cx) % cx;
                            cd acc = 0;
                            for (int e = 0; e < nb; e++) acc += b[e] * S[((size_t)gy * cx + gx) * nb + e];
                            ref[(size_t)j * wx + i] = acc;
                        }
                    for (int j = 0; j < wy; j++)
                        for (int i = 0; i < wx; i++) {
                            int r = pr.oy - tl.y0 + j, c = pr.ox - tl.x0 + i; // k_gather
                            cd v = out[((size_t)r * P + p) * tl.w + c];
                            double d = std::abs(v - ref[(size_t)j * wx + i]);
                            double &worst = mode ? worst_stream : worst_single;
                            if (!(d <= worst)) worst = d; // NaN-safe
                        }
                }
            }
        }
    }
    std::printf("%-28s T=%-2d U=%-2d tiles %-5d units %-4d max_p %-4d: max |window - CPU definition| single %.2e, "
                "streaming %.2e\n",
                k.name, t.T, t.U, t.n_tiles, t.n_units, t.max_p, worst_single, worst_stream);
    CHECK(worst_single < 1e-9 && worst_stream < 1e-9, "%s: windows differ", k.name);
    gpu_tiling_free(&t);
}

// [compute] gpu_deterministic: the batched cuFFT plans of the propagation and of the PRISM
// windows must not depend on the rank's share of the job (1 rank and rank 0 of 3 the same
// batch); without it they follow the share (the old behaviour, kept for gpu_deterministic = off).
static void check_rank_independent_batches()
{
    stem_plan plan;
    std::memset(&plan, 0, sizeof plan);
    plan.nx = plan.ny = 256; // 8 M points / 65 536: up to 128 waves per batch
    plan.n_slices = 4;
    plan.n_probes = 60;
    plan.n_beams = 50;
    plan.cell[0] = plan.cell[1] = 20.0;
    plan.crop_nx = plan.crop_ny = 64;
    plan.out_nx = plan.out_ny = 16;
    plan.scan_nx = 10;
    plan.scan_ny = 6;
    plan.scan_step = 2.0;
    gpu_devices d;
    std::memset(&d, 0, sizeof d);
    d.n_gpus = 1;
    d.streams = d.workers = 2;
    d.free_bytes = d.total_bytes = d.usable_bytes = 1e12;
    for (int det = 0; det <= 1; det++) {
        plan.opt.gpu_deterministic = det;
        int batch[2][2]; // [smatrix][one rank, rank 0 of 3]
        for (int sm = 0; sm <= 1; sm++)
            for (int r = 0; r <= 1; r++) {
                plan.probe_begin = plan.beam_begin = 0;
                plan.probe_end = r ? 20 : 60;
                plan.beam_end = r ? 17 : 50;
                gpu_prop_plan pp;
                CHECK(!gpu_prop_plan_build(&plan, &d, sm, 0, &pp), "gpu_prop_plan_build failed");
                batch[sm][r] = pp.batch;
            }
        gpu_tiling one, part; // tiles of 4 x 4 probes: rank 0 of 3 holds two rows only
        plan.probe_begin = 0;
        plan.probe_end = 60;
        CHECK(!gpu_tiling_build(&plan, 4, 1, &one), "tiling failed");
        int w_one = gpu_out_window_batch(&plan, &one);
        plan.probe_end = 20;
        CHECK(!gpu_tiling_build(&plan, 4, 1, &part), "tiling failed");
        int w_part = gpu_out_window_batch(&plan, &part);
        std::printf("gpu_deterministic = %s: batches 1 rank / rank 0 of 3: probes %d / %d, plane waves %d / %d, "
                    "PRISM windows %d / %d\n", det ? "on" : "off", batch[0][0], batch[0][1], batch[1][0], batch[1][1],
                    w_one, w_part);
        if (det)
            CHECK(batch[0][0] == batch[0][1] && batch[1][0] == batch[1][1] && w_one == w_part && w_one == 16,
                  "gpu_deterministic: the batches depend on the rank's share");
        else
            CHECK(batch[0][0] != batch[0][1] && w_one != w_part, "gpu_deterministic = off: batches follow the share");
        gpu_tiling_free(&one);
        gpu_tiling_free(&part);
    }
}

// Whole tiles ([compute] gpu_deterministic): every tile of a rank's share (1, 2 or 3 ranks)
// is a tile of the one-rank tiling, with the same probes in the same order and the same
// region, so the matrix product of every tile is the same call on every rank count.
static void check_whole_tiles()
{
    stem_plan plan;
    std::memset(&plan, 0, sizeof plan);
    plan.cell[0] = 20.0, plan.cell[1] = 18.0, plan.crop_nx = 48, plan.crop_ny = 40, plan.out_nx = 12, plan.out_ny = 10;
    plan.n_beams = 7, plan.scan_nx = 9, plan.scan_ny = 7, plan.n_probes = 63, plan.scan_step = 2.5, plan.scan_y0 = 0.3;
    plan.opt.gpu_deterministic = 1;
    gpu_tiling all;
    plan.probe_begin = 0, plan.probe_end = 63;
    CHECK(!gpu_tiling_build(&plan, 4, 1, &all), "tiling failed");
    int matched = 0, tiles = 0;
    for (int ranks = 2; ranks <= 3; ranks++)
        for (int r = 0; r < ranks; r++) {
            long b, e;
            stem_split_range(plan.n_probes, ranks, r, &b, &e);
            plan.probe_begin = b, plan.probe_end = e;
            gpu_tiling t;
            CHECK(!gpu_tiling_build(&plan, 4, 1, &t), "tiling failed");
            for (int k = 0; k < t.n_tiles; k++, tiles++) {
                const gpu_tile &a = t.tile[k];
                for (int q = 0; q < all.n_tiles; q++) {
                    const gpu_tile &o = all.tile[q];
                    if (all.global[o.p0] != t.global[a.p0]) continue;
                    int same = o.p1 - o.p0 == a.p1 - a.p0 && o.x0 == a.x0 && o.y0 == a.y0 && o.w == a.w && o.h == a.h;
                    for (long i = 0; same && i < a.p1 - a.p0; i++) same = all.global[o.p0 + i] == t.global[a.p0 + i];
                    matched += same;
                }
            }
            gpu_tiling_free(&t);
        }
    std::printf("whole tiles: %d of %d tiles of 2 and 3 ranks' shares equal a one-rank tile\n", matched, tiles);
    CHECK(matched == tiles && tiles > 0, "whole tiles: a tile differs from the one-rank tiling");
    gpu_tiling_free(&all);
}

// [debug] gpu_gemm = auto (cuda/gpu_output_plan.cu): the split FP16 products from 200 beams on
// where they fit without streaming a job that FP32 CGEMM runs single-transfer, else FP32 CGEMM;
// the kinds asked for by name are kept.
static int planned_kind(stem_plan *plan, const gpu_devices &d, int gemm, int *streaming)
{
    plan->opt.gpu_gemm = gemm;
    gpu_out_plan op;
    if (gpu_out_plan_build(plan, &d, 0, &op)) return -1;
    *streaming = op.streaming;
    int kind = op.gemm;
    gpu_out_plan_free(&op);
    return kind;
}

static void check_auto_product()
{
    stem_log_init(0, STEM_LOG_QUIET); // auto tries kinds quietly; errors still print
    stem_plan plan;
    std::memset(&plan, 0, sizeof plan);
    plan.cell[0] = plan.cell[1] = 40.0, plan.crop_nx = plan.crop_ny = 128, plan.out_nx = plan.out_ny = 32;
    plan.scan_nx = plan.scan_ny = 8, plan.n_probes = 64, plan.scan_step = 5.0, plan.probe_end = 64;
    gpu_devices d;
    std::memset(&d, 0, sizeof d);
    d.n_gpus = 1, d.streams = d.workers = 2;
    d.free_bytes = d.total_bytes = d.usable_bytes = 1e12;
    int st = 0;
    for (int nb : {199, 200, 885}) {
        plan.n_beams = plan.beam_end = nb;
        int want = nb >= 200 ? STEM_GPU_GEMM_FP16X3 : STEM_GPU_GEMM_STANDARD;
        CHECK(planned_kind(&plan, d, STEM_GPU_GEMM_AUTO, &st) == want, "auto at %d beams: not %d", nb, want);
        CHECK(planned_kind(&plan, d, STEM_GPU_GEMM_TF32X3, &st) == STEM_GPU_GEMM_TF32X3, "tf32x3 not kept");
        CHECK(planned_kind(&plan, d, STEM_GPU_GEMM_STANDARD, &st) == STEM_GPU_GEMM_STANDARD, "standard not kept");
    }
    plan.n_beams = plan.beam_end = 885; // memory: what each kind needs single-transfer
    gpu_out_plan a, b;
    plan.opt.gpu_gemm = STEM_GPU_GEMM_STANDARD;
    CHECK(!gpu_out_plan_build(&plan, &d, 0, &a), "standard plan failed");
    plan.opt.gpu_gemm = STEM_GPU_GEMM_FP16X3;
    CHECK(!gpu_out_plan_build(&plan, &d, 0, &b), "fp16x3 plan failed");
    double std_need = a.bytes_total, split_need = b.bytes_total;
    gpu_out_plan_free(&a);
    gpu_out_plan_free(&b);
    CHECK(split_need > std_need * 1.5, "the split S-matrix is not counted (%.0f against %.0f bytes)", split_need,
          std_need);
    d.usable_bytes = std_need * 1.05; // FP32 CGEMM fits whole, the split would stream: FP32 CGEMM
    int kind = planned_kind(&plan, d, STEM_GPU_GEMM_AUTO, &st);
    CHECK(kind == STEM_GPU_GEMM_STANDARD && !st, "auto where only FP32 CGEMM fits whole: kind %d, streaming %d", kind,
          st);
    d.usable_bytes = std_need * 0.8; // both stream: the split products
    kind = planned_kind(&plan, d, STEM_GPU_GEMM_AUTO, &st);
    CHECK(kind == STEM_GPU_GEMM_FP16X3 && st, "auto where both stream: kind %d, streaming %d", kind, st);
    d.usable_bytes = std_need * 0.52; // only FP32 CGEMM fits, streaming: FP32 CGEMM
    kind = planned_kind(&plan, d, STEM_GPU_GEMM_AUTO, &st);
    CHECK(kind == STEM_GPU_GEMM_STANDARD && st, "auto where only FP32 CGEMM fits: kind %d, streaming %d", kind, st);
    std::printf("fp16x3 asked for by name where it does not fit (the refusal below is expected):\n");
    std::fflush(stdout);
    CHECK(planned_kind(&plan, d, STEM_GPU_GEMM_FP16X3, &st) < 0, "fp16x3 asked for by name should not fit here");
    plan.opt.gpu_prism_output = STEM_GPU_OUTPUT_DIRECT;
    d.usable_bytes = 1e12;
    CHECK(planned_kind(&plan, d, STEM_GPU_GEMM_AUTO, &st) == STEM_GPU_GEMM_STANDARD, "direct output: not standard");
    std::printf("gpu_gemm = auto: fp16x3 from 200 beams, FP32 CGEMM where only it fits whole (needs %.1f / %.1f MiB)\n",
                std_need / 1048576.0, split_need / 1048576.0);
}

int main()
{
    check_segments();
    check_rank_independent_batches();
    check_whole_tiles();
    check_auto_product();
    std::mt19937 rng(12345);
    const Case cases[] = {
        // name, crop x/y, f, beams, scan, cell, step, origin, T, U, range
        {"f=4 whole scan, wraps", 48, 40, 4, 7, 9, 7, 20.0, 18.0, 2.5, 0.0, 0.3, 4, 1, 0, -1, 0},
        {"f=4 units of 2x2 tiles", 48, 40, 4, 7, 9, 7, 20.0, 18.0, 2.5, 0.0, 0.3, 3, 2, 0, -1, 0},
        {"f=2 partial rank range", 36, 36, 2, 5, 11, 6, 15.0, 15.0, 1.3, 0.7, 0.0, 4, 3, 13, 50, 0},
        {"f=1 window = crop", 24, 20, 1, 3, 5, 4, 10.0, 9.0, 2.0, 0.5, 0.5, 2, 1, 0, -1, 0},
        {"f=3 one row, cost model T", 30, 30, 3, 6, 17, 1, 12.0, 12.0, 0.7, 0.0, 6.0, 0, 2, 0, -1, 0},
        {"f=8 big step, edge x=cell", 64, 64, 8, 4, 5, 5, 32.0, 32.0, 8.0, 0.0, 0.0, 3, 2, 2, 24, 0},
        {"f=2 partial range, whole", 36, 36, 2, 5, 11, 6, 15.0, 15.0, 1.3, 0.7, 0.0, 4, 3, 13, 50, 1},
        {"f=4 rank 2 of 3, whole", 48, 40, 4, 7, 9, 7, 20.0, 18.0, 2.5, 0.0, 0.3, 3, 2, 42, 63, 1},
    };
    for (const Case &k : cases) run_case(k, rng);
    if (failures) {
        std::printf("%d check(s) failed\n", failures);
        return 1;
    }
    std::printf("all tiling checks passed\n");
    return 0;
}
