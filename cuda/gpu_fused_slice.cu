/* A slice of the propagation as two passes of stemsim's own FFT kernels with the
 * multiplies inside ([compute] gpu_slices = fused): the row pass takes each row of
 * a wave into shared memory, runs the inverse row FFT of the previous slice, the
 * transmission multiply and the forward row FFT, and writes it back; the column
 * pass takes a tile of columns, runs the forward column FFT, the propagator
 * multiply and the inverse column FFT. A slice thus reads and writes each wave
 * twice, where cuFFT with separate multiplies does so six times.
 *
 * The 1D FFTs are mixed-radix Stockham transforms (radices 16, 8, 7, 5, 4, 3, 2) of
 * any 7-smooth length up to GPU_FUSED_MAX_N, planned at run time, each stage from
 * one shared-memory buffer to the other (holding a stage's values in registers
 * across the barrier instead needed ~120 registers a thread); the inverse
 * is the forward of the conjugate, conjugated; both unnormalised as cuFFT's
 * (the propagator carries the 1/N). Twiddles come from a table of exp(-2 pi i m / N)
 * computed in double. */
#include <string.h>

#include "gpu_internal.cuh"

/* exp(-2 pi i m / R) of the odd radices (forward sign): constant-bank operands once unrolled */
__constant__ float2 c_root3[3] = {{1.0f, 0.0f}, {-0.5f, -0.8660254037844386f}, {-0.5f, 0.8660254037844386f}};
__constant__ float2 c_root5[5] = {{1.0f, 0.0f},
                                  {0.30901699437494745f, -0.9510565162951535f},
                                  {-0.8090169943749475f, -0.5877852522924731f},
                                  {-0.8090169943749475f, 0.5877852522924731f},
                                  {0.30901699437494745f, 0.9510565162951535f}};
__constant__ float2 c_root7[7] = {{1.0f, 0.0f},
                                  {0.6234898018587336f, -0.7818314824680298f},
                                  {-0.22252093395631434f, -0.9749279121818236f},
                                  {-0.9009688679024191f, -0.4338837391175582f},
                                  {-0.9009688679024191f, 0.4338837391175582f},
                                  {-0.22252093395631434f, 0.9749279121818236f},
                                  {0.6234898018587336f, 0.7818314824680298f}};

/* exp(-2 pi i m / 16), m < 10: the twiddles inside a radix-16 butterfly */
__constant__ float2 c_root16[10] = {{1.0f, 0.0f},
                                    {0.92387953251128674f, -0.38268343236508977f},
                                    {0.70710678118654752f, -0.70710678118654752f},
                                    {0.38268343236508977f, -0.92387953251128674f},
                                    {0.0f, -1.0f},
                                    {-0.38268343236508977f, -0.92387953251128674f},
                                    {-0.70710678118654752f, -0.70710678118654752f},
                                    {-0.92387953251128674f, -0.38268343236508977f},
                                    {-1.0f, 0.0f},
                                    {-0.92387953251128674f, 0.38268343236508977f}};

static __device__ __forceinline__ float2 cadd(float2 a, float2 b) { return make_float2(a.x + b.x, a.y + b.y); }
static __device__ __forceinline__ float2 csub(float2 a, float2 b) { return make_float2(a.x - b.x, a.y - b.y); }
static __device__ __forceinline__ float2 conj_(float2 a) { return make_float2(a.x, -a.y); }
static __device__ __forceinline__ float2 mul_minus_i(float2 a) { return make_float2(a.y, -a.x); }

template <int R> static __device__ __forceinline__ float2 odd_root(int m)
{
    if (R == 3) return c_root3[m];
    if (R == 5) return c_root5[m];
    return c_root7[m];
}

static __device__ __forceinline__ void dft4(float2 &v0, float2 &v1, float2 &v2, float2 &v3)
{
    float2 a0 = cadd(v0, v2), a1 = csub(v0, v2), a2 = cadd(v1, v3), a3 = mul_minus_i(csub(v1, v3));
    v0 = cadd(a0, a2);
    v2 = csub(a0, a2);
    v1 = cadd(a1, a3);
    v3 = csub(a1, a3);
}

/* In-place forward DFT of R values (X[q] = sum_k v[k] exp(-2 pi i k q / R)). */
template <int R> static __device__ __forceinline__ void dft(float2 *v)
{
    if (R == 2) {
        float2 a = v[0];
        v[0] = cadd(a, v[1]);
        v[1] = csub(a, v[1]);
    } else if (R == 4) {
        dft4(v[0], v[1], v[2], v[3]);
    } else if (R == 16) { /* 4 x 4: DFTs of 4 down the columns n2, twiddles, DFTs of 4 along */
        float2 y[16];
#pragma unroll
        for (int n2 = 0; n2 < 4; n2++) {
            float2 a = v[n2], b = v[4 + n2], c = v[8 + n2], d = v[12 + n2];
            dft4(a, b, c, d); /* y[n2][k1] */
            y[4 * n2] = a;
            y[4 * n2 + 1] = n2 ? gpu_cmul(b, c_root16[n2]) : b;
            y[4 * n2 + 2] = n2 ? gpu_cmul(c, c_root16[2 * n2]) : c;
            y[4 * n2 + 3] = n2 ? gpu_cmul(d, c_root16[3 * n2]) : d;
        }
#pragma unroll
        for (int k1 = 0; k1 < 4; k1++) {
            float2 a = y[k1], b = y[4 + k1], c = y[8 + k1], d = y[12 + k1];
            dft4(a, b, c, d); /* X[k1 + 4 k2] */
            v[k1] = a;
            v[k1 + 4] = b;
            v[k1 + 8] = c;
            v[k1 + 12] = d;
        }
    } else if (R == 8) { /* two DFTs of 4 (even, odd) and a radix-2 step */
        const float h = 0.70710678118654752f;
        float2 e0 = v[0], e1 = v[2], e2 = v[4], e3 = v[6], o0 = v[1], o1 = v[3], o2 = v[5], o3 = v[7];
        dft4(e0, e1, e2, e3);
        dft4(o0, o1, o2, o3);
        o1 = make_float2(h * (o1.x + o1.y), h * (o1.y - o1.x)); /* exp(-i pi / 4) */
        o2 = mul_minus_i(o2);
        o3 = make_float2(h * (o3.y - o3.x), -h * (o3.x + o3.y)); /* exp(-3 i pi / 4) */
        v[0] = cadd(e0, o0);
        v[4] = csub(e0, o0);
        v[1] = cadd(e1, o1);
        v[5] = csub(e1, o1);
        v[2] = cadd(e2, o2);
        v[6] = csub(e2, o2);
        v[3] = cadd(e3, o3);
        v[7] = csub(e3, o3);
    } else { /* 3, 5, 7: pairs k and R - k share the cosine, the sine changes sign */
        float2 x[R];
#pragma unroll
        for (int k = 0; k < R; k++) x[k] = v[k];
        float2 sum = x[0];
#pragma unroll
        for (int k = 1; k < R; k++) sum = cadd(sum, x[k]);
        v[0] = sum;
#pragma unroll
        for (int q = 1; q <= R / 2; q++) {
            float2 a = x[0], b = make_float2(0.0f, 0.0f);
#pragma unroll
            for (int k = 1; k <= R / 2; k++) {
                float2 w = odd_root<R>((k * q) % R); /* (cos, -sin) */
                float2 p = cadd(x[k], x[R - k]), m = csub(x[k], x[R - k]);
                a.x += w.x * p.x;
                a.y += w.x * p.y;
                b.x -= w.y * m.x; /* b = sum sin * (x_k - x_{R-k}) */
                b.y -= w.y * m.y;
            }
            v[q] = make_float2(a.x + b.y, a.y - b.x);     /* a - i b */
            v[R - q] = make_float2(a.x - b.y, a.y + b.x); /* a + i b */
        }
    }
}

/* Shared-memory slot of value a: one spare slot every 16, so that the strided writes of
 * the first stages (stride 2, 4 or 8 values) fall into different banks. */
static __device__ __forceinline__ int pad(int a) { return a + (a >> 4); }

/* The shared-memory slot of element i of line f of the block: rows consecutive
 * (f * n + i), columns interleaved (i * lines + f, as they are loaded). */
template <bool COLS> static __device__ __forceinline__ int slot(int i, int f, int n, int lines)
{
    return pad(COLS ? i * lines + f : f * n + i);
}

/* One Stockham stage of radix R of line f from shared buffer in to out: this thread's
 * butterflies j = pos, pos + npos, ...; sg: the product ns of the radices before, its
 * divisor, stride = n / (ns R). Twiddles exp(-2 pi i k m / n) as powers of the table's m-th.
 */
template <int R, bool COLS>
static __device__ void fft_stage(const float2 *in, float2 *out, int n, int lines, int f, int pos, int npos,
                                 const gpu_fft_stage &sg, const float2 *__restrict__ tw)
{
    const int nbf = n / R;
    for (int j = pos; j < nbf; j += npos) {
        float2 v[R];
#pragma unroll
        for (int k = 0; k < R; k++) v[k] = in[slot<COLS>(j + k * nbf, f, n, lines)];
        int q = (int)gpu_fft_divide((unsigned)j, sg.magic, sg.shift), jm = j - q * sg.ns, m = jm * sg.stride;
        if (m) {
            float2 w1 = __ldg(tw + m), wk = w1;
#pragma unroll
            for (int k = 1; k < R; k++) {
                v[k] = gpu_cmul(v[k], wk);
                if (k + 1 < R) wk = gpu_cmul(wk, w1);
            }
        }
        dft<R>(v);
        int i0 = q * sg.ns * R + jm;
#pragma unroll
        for (int k = 0; k < R; k++) out[slot<COLS>(i0 + k * sg.ns, f, n, lines)] = v[k];
    }
    __syncthreads();
}

/* The transform of line f from buf0 (buf1 the other buffer); returns the buffer holding it.
 * R16: whether the plan has radix-16 stages (a kernel without them needs fewer registers). */
template <bool COLS, bool R16>
static __device__ float2 *fft_lines(float2 *buf0, float2 *buf1, const gpu_fft_factors &fac, const float2 *tw, int lines,
                                    int f, int pos, int npos)
{
    float2 *in = buf0, *out = buf1;
    for (int s = 0; s < fac.n_radix; s++) {
        const gpu_fft_stage &sg = fac.stage[s];
        switch (fac.radix[s]) {
        case 2: fft_stage<2, COLS>(in, out, fac.n, lines, f, pos, npos, sg, tw); break;
        case 3: fft_stage<3, COLS>(in, out, fac.n, lines, f, pos, npos, sg, tw); break;
        case 4: fft_stage<4, COLS>(in, out, fac.n, lines, f, pos, npos, sg, tw); break;
        case 5: fft_stage<5, COLS>(in, out, fac.n, lines, f, pos, npos, sg, tw); break;
        case 7: fft_stage<7, COLS>(in, out, fac.n, lines, f, pos, npos, sg, tw); break;
        case 16:
            if (R16) fft_stage<16, COLS>(in, out, fac.n, lines, f, pos, npos, sg, tw);
            break;
        default: fft_stage<8, COLS>(in, out, fac.n, lines, f, pos, npos, sg, tw); break;
        }
        float2 *t = in;
        in = out;
        out = t;
    }
    return in;
}

/* What a pass does: first (none or a transform), the multiply by tab (or none), then. */
typedef struct {
    int first, then;   /* GPU_FFT_NONE, GPU_FFT_FORWARD or GPU_FFT_INVERSE */
    const float2 *tab; /* one grid, the same for every wave of the batch */
} fused_steps;

/* The element-wise step between the transforms: undo the first's conjugation, multiply,
 * conjugate for an inverse second. */
static __device__ __forceinline__ float2 between(float2 v, const fused_steps &st, size_t g)
{
    if (st.first == GPU_FFT_INVERSE) v = conj_(v);
    if (st.tab) v = gpu_cmul(v, __ldg(st.tab + g));
    if (st.then == GPU_FFT_INVERSE) v = conj_(v);
    return v;
}

/* Block (x, wave) holds lines [x * lines, (x + 1) * lines) of the wave in shared memory
 * (two buffers). Rows: threadIdx.y is the row, threadIdx.x walks along it; columns:
 * threadIdx.x is the column (adjacent columns: coalesced row segments), threadIdx.y walks
 * down it. */
template <bool COLS, bool R16>
static __global__ void k_fused_pass(float2 *__restrict__ waves, int nx, int ny, fused_steps st, gpu_fft_factors fac,
                                    const float2 *__restrict__ tw, int lines)
{
    extern __shared__ float2 sm[];
    const int n = fac.n, count = lines * n, f = COLS ? threadIdx.x : threadIdx.y;
    const int pos = COLS ? threadIdx.y : threadIdx.x, npos = COLS ? blockDim.y : blockDim.x;
    const int line = blockIdx.x * lines + f;
    const bool live = line < (COLS ? nx : ny); /* the last tile may be narrower */
    float2 *w = waves + (size_t)blockIdx.y * nx * ny;
    float2 *cur = sm, *spare = sm + pad(count) + 1;
    if (live)
        for (int i = pos; i < n; i += npos) {
            size_t g = COLS ? (size_t)i * nx + line : (size_t)line * nx + i;
            float2 v = w[g];
            if (st.first == GPU_FFT_NONE)
                v = between(v, st, g);
            else if (st.first == GPU_FFT_INVERSE)
                v = conj_(v);
            cur[slot<COLS>(i, f, n, lines)] = v;
        }
    __syncthreads();
    if (st.first != GPU_FFT_NONE) {
        float2 *res = fft_lines<COLS, R16>(cur, spare, fac, tw, lines, f, pos, npos);
        spare = res == cur ? spare : cur;
        cur = res;
        if (st.then != GPU_FFT_NONE && live) /* each thread its own elements: the next barrier suffices */
            for (int i = pos; i < n; i += npos) {
                int a = slot<COLS>(i, f, n, lines);
                cur[a] = between(cur[a], st, COLS ? (size_t)i * nx + line : (size_t)line * nx + i);
            }
    }
    if (st.then != GPU_FFT_NONE) {
        __syncthreads();
        cur = fft_lines<COLS, R16>(cur, spare, fac, tw, lines, f, pos, npos);
    }
    if (!live) return;
    for (int i = pos; i < n; i += npos) {
        size_t g = COLS ? (size_t)i * nx + line : (size_t)line * nx + i;
        float2 v = cur[slot<COLS>(i, f, n, lines)];
        if (st.then == GPU_FFT_INVERSE)
            v = conj_(v);
        else if (st.then == GPU_FFT_NONE && st.first != GPU_FFT_NONE)
            v = between(v, st, g);
        w[g] = v;
    }
}

/* Whether a plan has radix-16 stages. */
static int has_radix16(const gpu_fft_factors *f)
{
    for (int s = 0; s < f->n_radix; s++)
        if (f->radix[s] == 16) return 1;
    return 0;
}

/* tw[m] = exp(-2 pi i m / n), in double */
static __global__ void k_twiddles(float2 *tw, int n)
{
    int m = blockIdx.x * blockDim.x + threadIdx.x;
    if (m >= n) return;
    double s, c;
    sincospi(-2.0 * m / n, &s, &c);
    tw[m] = make_float2((float)c, (float)s);
}

/* ---- planning ---------------------------------------------------------------- */

/* The largest power-of-two radix: 8, or 16 with STEMSIM_FUSED_RADIX=16 in the environment
 * (a benchmark's override). Radix 16 takes 1024 in 3 stages instead of 4 but needs ~70
 * registers a thread against 48, and measured slower on an H200 (FUSED_SLICE.md). */
static int max_pow2_radix(void)
{
    const char *env = getenv("STEMSIM_FUSED_RADIX");
    return env && atoi(env) == 16 ? 16 : 8;
}

/* n as radices 7, 5, 3, then the power of two in the fewest stages of at most
 * max_pow2_radix(), their sizes as even as can be (1024: 8 8 4 4, or 16 8 8), and each stage's ns
 * (the product of the radices before, with its divisor) and stride; 0: not 7-smooth. */
static int factor(int n, gpu_fft_factors *f)
{
    memset(f, 0, sizeof *f);
    f->n = n;
    static const int odd[3] = {7, 5, 3};
    for (int p = 0; p < 3; p++)
        while (n % odd[p] == 0 && f->n_radix < GPU_FFT_MAX_RADICES) {
            f->radix[f->n_radix++] = odd[p];
            n /= odd[p];
        }
    int k = 0, max_bits = max_pow2_radix() == 16 ? 4 : 3;
    while (n % 2 == 0) {
        k++;
        n /= 2;
    }
    if (n != 1) return 0;
    int stages = (k + max_bits - 1) / max_bits;
    for (int s = 0; s < stages; s++) {
        int bits = k / stages + (s < k % stages);
        if (f->n_radix >= GPU_FFT_MAX_RADICES) return 0;
        f->radix[f->n_radix++] = 1 << bits;
    }
    for (int s = 0, ns = 1; s < f->n_radix; ns *= f->radix[s], s++) {
        gpu_fft_stage *sg = &f->stage[s];
        sg->ns = ns;
        sg->stride = f->n / (ns * f->radix[s]);
        gpu_fft_divisor((unsigned)ns, &sg->magic, &sg->shift);
    }
    return 1;
}

/* Values per thread along a line: STEMSIM_FUSED_PER_THREAD in the environment (a
 * benchmark's override), else the largest radix of the line's plan. */
static int values_per_thread(const gpu_fft_factors *f)
{
    const char *env = getenv("STEMSIM_FUSED_PER_THREAD");
    int v = env ? atoi(env) : 0, most = 2;
    if (v >= 1 && v <= 64) return v;
    for (int s = 0; s < f->n_radix; s++) most = f->radix[s] > most ? f->radix[s] : most;
    return most;
}

/* Threads along a line: one per values_per_thread values, at most `most`. */
static int threads_along(const gpu_fft_factors *f, int most)
{
    int per = values_per_thread(f), t = (f->n + per - 1) / per;
    return t < 1 ? 1 : t > most ? most : t;
}

/* Bytes of shared memory of a block of `values` values: two padded buffers. */
static size_t smem_bytes(int values) { return 2 * (size_t)(values + values / 16 + 1) * sizeof(float2); }

/* Rows per block: about 1024 values a block (at least one row). */
static int rows_per_block(int nx) { return nx >= 1024 ? 1 : 1024 / nx; }

/* Columns per tile: STEMSIM_FUSED_COLS in the environment (a benchmark's override), else
 * the most (up to 16) whose buffers fit 72 KiB, three blocks a multiprocessor (measured on
 * an H200 at 1024^2 and 4096^2: wider tiles of fewer blocks were slower). */
static int cols_per_tile(int ny)
{
    const char *env = getenv("STEMSIM_FUSED_COLS");
    int c = env ? atoi(env) : 0;
    if (c >= 1 && c <= 64) return c;
    for (c = 16; c > 1 && smem_bytes(c * ny) > 72 * 1024;) c /= 2;
    return c;
}

/* Whether the cuFFTDx kernels take both sides: unless STEMSIM_FUSED_DX=0 in the environment
 * (a benchmark's override, to time the run-time kernels at those sizes). */
int gpu_fused_uses_dx(int nx, int ny)
{
    const char *env = getenv("STEMSIM_FUSED_DX");
    return !(env && atoi(env) == 0) && gpu_dx_covers(nx) && gpu_dx_covers(ny);
}

int gpu_fused_plan(int nx, int ny, int dx_only, gpu_fused_slice *fs, char *why, size_t why_len)
{
    memset(fs, 0, sizeof *fs);
    fs->nx = nx;
    fs->ny = ny;
    if (gpu_fused_uses_dx(nx, ny)) {
        fs->dx = 1;
        snprintf(why, why_len, "fused slice kernels (cuFFTDx, %dx%d compiled)", nx, ny);
        return 1;
    }
    if (dx_only) {
        snprintf(why, why_len, "cuFFT, multiplies as separate kernels (no cuFFTDx kernels for %dx%d)", nx, ny);
        return 0;
    }
    if (nx < 2 || ny < 2 || nx > GPU_FUSED_MAX_N || ny > GPU_FUSED_MAX_N || !factor(nx, &fs->fx) ||
        !factor(ny, &fs->fy)) {
        snprintf(why, why_len, "cuFFT: %dx%d is not covered by the fused kernels (7-smooth sides of 2 to %d)", nx, ny,
                 GPU_FUSED_MAX_N);
        return 0;
    }
    fs->rows = rows_per_block(nx);
    fs->cols = cols_per_tile(ny);
    fs->row_threads = threads_along(&fs->fx, 1024 / fs->rows);
    fs->col_threads = threads_along(&fs->fy, 512 / fs->cols);
    fs->row_smem = smem_bytes(fs->rows * nx);
    fs->col_smem = smem_bytes(fs->cols * ny);
    if (fs->row_smem > GPU_FUSED_MAX_SMEM || fs->col_smem > GPU_FUSED_MAX_SMEM || fs->col_threads < 1) {
        snprintf(why, why_len, "cuFFT: %dx%d needs more shared memory than a block has", nx, ny);
        return 0;
    }
    snprintf(why, why_len, "fused slice kernels (blocks of %d rows x %d threads, %d columns x %d threads)", fs->rows,
             fs->row_threads, fs->cols, fs->col_threads);
    return 1;
}

int gpu_fused_create(gpu_fused_slice *fs)
{
    if (fs->dx) return gpu_dx_prepare(fs->nx, fs->ny); /* no tables: the twiddles are compiled in */
    GPU_ALLOC(fs->tw_x, sizeof(float2) * fs->nx, "FFT twiddles");
    GPU_ALLOC(fs->tw_y, sizeof(float2) * fs->ny, "FFT twiddles");
    k_twiddles<<<gpu_blocks(fs->nx, 256), 256>>>(fs->tw_x, fs->nx);
    CUDA_LAUNCH();
    k_twiddles<<<gpu_blocks(fs->ny, 256), 256>>>(fs->tw_y, fs->ny);
    CUDA_LAUNCH();
    const int smem = (int)GPU_FUSED_MAX_SMEM;
    CUDA_CALL(cudaFuncSetAttribute(k_fused_pass<false, false>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    CUDA_CALL(cudaFuncSetAttribute(k_fused_pass<false, true>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    CUDA_CALL(cudaFuncSetAttribute(k_fused_pass<true, false>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    CUDA_CALL(cudaFuncSetAttribute(k_fused_pass<true, true>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    CUDA_CALL(cudaDeviceSynchronize());
    return STEM_OK;
}

void gpu_fused_free(gpu_fused_slice *fs)
{
    gpu_free(fs->tw_x);
    gpu_free(fs->tw_y);
    fs->tw_x = fs->tw_y = NULL;
}

/* One pass over the rows (COLS false) or the tiles of columns: the kernel built with or
 * without radix-16 stages, as the transform's factors need. */
template <bool COLS>
static int fused_pass(const gpu_fused_slice *fs, float2 *waves, int batch, fused_steps st, cudaStream_t s)
{
    const gpu_fft_factors *f = COLS ? &fs->fy : &fs->fx;
    const float2 *tw = COLS ? fs->tw_y : fs->tw_x;
    int lines = COLS ? fs->cols : fs->rows, across = COLS ? fs->nx : fs->ny;
    dim3 blocks((across + lines - 1) / lines, batch);
    dim3 threads = COLS ? dim3(fs->cols, fs->col_threads) : dim3(fs->row_threads, fs->rows);
    size_t smem = COLS ? fs->col_smem : fs->row_smem;
    if (has_radix16(f))
        k_fused_pass<COLS, true><<<blocks, threads, smem, s>>>(waves, fs->nx, fs->ny, st, *f, tw, lines);
    else
        k_fused_pass<COLS, false><<<blocks, threads, smem, s>>>(waves, fs->nx, fs->ny, st, *f, tw, lines);
    CUDA_LAUNCH();
    return STEM_OK;
}

int gpu_fused_rows(const gpu_fused_slice *fs, float2 *waves, int batch, int first, const float2 *tab, int then,
                   cudaStream_t s)
{
    if (fs->dx) return gpu_dx_rows(fs->nx, fs->ny, waves, batch, first, tab, then, s);
    return fused_pass<false>(fs, waves, batch, fused_steps{first, then, tab}, s);
}

int gpu_fused_cols(const gpu_fused_slice *fs, float2 *waves, int batch, int first, const float2 *tab,
                   const float2 *tab_t, int then, cudaStream_t s)
{
    if (fs->dx) {
        STEM_ASSERT(!tab || tab_t, "the cuFFTDx column pass needs its grid transposed");
        return gpu_dx_cols(fs->nx, fs->ny, waves, batch, first, tab ? tab_t : NULL, then, s);
    }
    return fused_pass<true>(fs, waves, batch, fused_steps{first, then, tab}, s);
}
