/* The fused slice's two passes (gpu_fused_slice.cu) with cuFFTDx's compile-time-size FFTs
 * (NVIDIA MathDx, a header-only library found at build time): a 1024-point line is 32 x 32
 * values in registers with one shared-memory exchange per transform, where the run-time
 * Stockham kernels make four round trips through shared memory (FUSED_SLICE.md).
 *
 * Only the sides listed in DX_ROW_KERNELS and DX_COL_KERNELS are compiled (each costs build
 * time); other sides keep the run-time kernels or cuFFT. The row pass holds whole rows in
 * registers (loads along a row are coalesced as they are); the column pass first stages a tile
 * of C adjacent columns through shared memory, so that a warp reads and writes row segments,
 * then runs C transforms, reading its multiply's grid transposed (adjacent down a column). The
 * transforms are unnormalised, as cuFFT's and the run-time kernels' (the propagator carries
 * 1/N). Deterministic: the same bits every run. */
#include "gpu_internal.cuh"

#if STEMSIM_HAVE_MATHDX
#include <cufftdx.hpp>

namespace {
using namespace cufftdx;

/* The kernels compiled: rows X(N, R, EPT) (R lines a block) and columns X(N, C, EPT) (C columns
 * a tile, staged through shared memory); EPT: values a thread (0: cuFFTDx's suggestion). A
 * side needs both. The first entry of a side is its default, the fastest measured on an H200
 * (FUSED_SLICE.md, "cuFFTDx"); the others are the runners-up, which a benchmark picks with
 * STEMSIM_DX_ROWS / STEMSIM_DX_COLS = "R,EPT" / "C,EPT" (benchmarks/gpu/device_fused_slice.sh). */
#define DX_ROW_KERNELS(X)                                                                                              \
    X(256, 8, 0)                                                                                                       \
    X(512, 4, 0)                                                                                                       \
    X(1000, 2, 0)                                                                                                      \
    X(1024, 2, 8)                                                                                                      \
    X(1024, 4, 16)                                                                                                     \
    X(2048, 1, 8)                                                                                                      \
    X(2048, 2, 0)                                                                                                      \
    X(4096, 1, 0)                                                                                                      \
    X(4096, 1, 8)
#define DX_COL_KERNELS(X)                                                                                              \
    X(256, 16, 0)                                                                                                      \
    X(512, 4, 0)                                                                                                       \
    X(512, 8, 0)                                                                                                       \
    X(1000, 4, 0)                                                                                                      \
    X(1000, 2, 0)                                                                                                      \
    X(1024, 4, 8)                                                                                                      \
    X(1024, 2, 16)                                                                                                     \
    X(1024, 8, 16)                                                                                                     \
    X(2048, 2, 8)                                                                                                      \
    X(2048, 4, 8)                                                                                                      \
    X(4096, 4, 0)                                                                                                      \
    X(4096, 2, 8)

/* A forward and an inverse transform of N points, FPB lines a block, with the same register
 * layout: thread t holds points t + i * stride. */
template <int N, int FPB, int EPT> struct dx_pair {
    using base = decltype(Size<N>() + Precision<float>() + Type<fft_type::c2c>() + Direction<fft_direction::forward>() +
                          FFTsPerBlock<FPB>() + SM<900>() + Block());
    static constexpr unsigned ept = EPT ? EPT : base::elements_per_thread;
    using fwd = decltype(base() + ElementsPerThread<ept>());
    using inv = decltype(Size<N>() + Precision<float>() + Type<fft_type::c2c>() + Direction<fft_direction::inverse>() +
                         FFTsPerBlock<FPB>() + SM<900>() + Block() + ElementsPerThread<ept>());
    using value = typename fwd::value_type;
    static constexpr unsigned stride = fwd::stride;
    static constexpr unsigned threads = fwd::block_dim.x * fwd::block_dim.y * fwd::block_dim.z;
    static constexpr size_t smem =
        fwd::shared_memory_size > inv::shared_memory_size ? fwd::shared_memory_size : inv::shared_memory_size;
};

/* What a pass does: the transform first (none or a direction), the multiply by tab, then. */
struct dx_steps {
    int first, then;
    const float2 *tab;
};

template <class P> __device__ __forceinline__ void transform(int dir, typename P::value *r, void *sm)
{
    if (dir == GPU_FFT_FORWARD)
        typename P::fwd().execute(r, sm);
    else if (dir == GPU_FFT_INVERSE)
        typename P::inv().execute(r, sm);
}

__device__ __forceinline__ float2 f2(const cufftdx::complex<float> &v) { return make_float2(v.x, v.y); }

/* Block b holds rows [b R, (b + 1) R) of the batch (threadIdx.y the row): each wave's rows
 * are N (= nx) points; tab is one [ny][nx] grid for every wave. */
template <int N, int R, int EPT>
__global__ void __launch_bounds__(dx_pair<N, R, EPT>::threads)
    k_dx_rows(float2 *__restrict__ waves, long lines, int ny, dx_steps st)
{
    using P = dx_pair<N, R, EPT>;
    extern __shared__ __align__(16) unsigned char sm[];
    typename P::value r[P::fwd::storage_size];
    const long line = (long)blockIdx.x * R + threadIdx.y;
    const bool live = line < lines; /* the last block may hold fewer rows; all meet the barriers */
    float2 *w = waves + (live ? line : 0) * N;
    const float2 *tab = st.tab ? st.tab + (size_t)(line % ny) * N : NULL;
#pragma unroll
    for (unsigned i = 0; i < P::ept; i++) {
        unsigned x = threadIdx.x + i * P::stride;
        float2 v = live && x < N ? w[x] : make_float2(0.0f, 0.0f);
        r[i] = typename P::value{v.x, v.y};
    }
    transform<P>(st.first, r, sm);
    if (tab && live)
#pragma unroll
        for (unsigned i = 0; i < P::ept; i++) {
            unsigned x = threadIdx.x + i * P::stride;
            if (x < N) {
                float2 v = gpu_cmul(f2(r[i]), __ldg(tab + x));
                r[i] = typename P::value{v.x, v.y};
            }
        }
    if (st.first != GPU_FFT_NONE && st.then != GPU_FFT_NONE) __syncthreads(); /* the shared memory again */
    transform<P>(st.then, r, sm);
    if (!live) return;
#pragma unroll
    for (unsigned i = 0; i < P::ept; i++) {
        unsigned x = threadIdx.x + i * P::stride;
        if (x < N) w[x] = f2(r[i]);
    }
}

/* Shared memory of the column pass: a tile of C columns of N (= ny) points, each column
 * padded by one value (the staging writes of adjacent columns fall into different banks),
 * which the transforms reuse. */
template <int N, int C, int EPT> constexpr size_t cols_smem()
{
    size_t tile = (size_t)C * (N + 1) * sizeof(float2);
    return tile > dx_pair<N, C, EPT>::smem ? tile : dx_pair<N, C, EPT>::smem;
}

/* Block (b, wave) holds columns [b C, b C + C) of the wave; threadIdx.y is the column. tab_t:
 * the multiply's grid transposed ([nx][ny]), so that a column's values are adjacent. The
 * staging loops have compile-time trip counts, so that a thread has 8 loads in flight. */
template <int N, int C, int EPT>
__global__ void __launch_bounds__(dx_pair<N, C, EPT>::threads)
    k_dx_cols(float2 *__restrict__ waves, int nx, int first, const float2 *__restrict__ tab_t, int then)
{
    using P = dx_pair<N, C, EPT>;
    constexpr int per = (C * N + P::threads - 1) / P::threads; /* staged values a thread */
    constexpr int chunk = per < 8 ? per : 8;                   /* loads in flight before the stores */
    extern __shared__ __align__(16) unsigned char sm[];
    float2 *tile = reinterpret_cast<float2 *>(sm);
    const int ld = N + 1, col0 = blockIdx.x * C, width = min(C, nx - col0);
    const int tid = threadIdx.y * blockDim.x + threadIdx.x;
    float2 *w = waves + (size_t)blockIdx.y * nx * N;
#pragma unroll
    for (int k0 = 0; k0 < per; k0 += chunk) { /* a warp reads row segments of C values */
        float2 v[chunk];
#pragma unroll
        for (int k = 0; k < chunk; k++) {
            int e = tid + (k0 + k) * (int)P::threads, y = e / C, c = e % C;
            if (k0 + k < per && e < C * N && c < width) v[k] = w[(size_t)y * nx + col0 + c];
        }
#pragma unroll
        for (int k = 0; k < chunk; k++) {
            int e = tid + (k0 + k) * (int)P::threads, y = e / C, c = e % C;
            if (k0 + k < per && e < C * N && c < width) tile[c * ld + y] = v[k];
        }
    }
    __syncthreads();
    const int f = threadIdx.y, col = col0 + f;
    typename P::value r[P::fwd::storage_size];
#pragma unroll
    for (unsigned i = 0; i < P::ept; i++) {
        unsigned y = threadIdx.x + i * P::stride;
        float2 a = y < N && f < width ? tile[f * ld + y] : make_float2(0.0f, 0.0f);
        r[i] = typename P::value{a.x, a.y};
    }
    __syncthreads(); /* the tile becomes the transforms' shared memory */
    transform<P>(first, r, sm);
    if (tab_t && f < width)
#pragma unroll
        for (unsigned i = 0; i < P::ept; i++) {
            unsigned y = threadIdx.x + i * P::stride;
            if (y < N) {
                float2 a = gpu_cmul(f2(r[i]), __ldg(tab_t + (size_t)col * N + y));
                r[i] = typename P::value{a.x, a.y};
            }
        }
    if (first != GPU_FFT_NONE && then != GPU_FFT_NONE) __syncthreads();
    transform<P>(then, r, sm);
    __syncthreads(); /* back to a tile */
#pragma unroll
    for (unsigned i = 0; i < P::ept; i++) {
        unsigned y = threadIdx.x + i * P::stride;
        if (y < N && f < width) tile[f * ld + y] = f2(r[i]);
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < per; k++) {
        int e = tid + k * (int)P::threads, y = e / C, c = e % C;
        if (e < C * N && c < width) w[(size_t)y * nx + col0 + c] = tile[c * ld + y];
    }
}

/* A compiled kernel's shape as a type: side N, L lines a block (rows) or columns a tile, E
 * values a thread (dispatch below passes one to the launches). */
template <int N, int L, int E> struct dx_shape {
};

/* The shared-memory opt-in of a kernel, on the current GPU (gpu_fused_create, per worker). */
template <int N, int R, int EPT> int prepare_rows(dx_shape<N, R, EPT>)
{
    using P = dx_pair<N, R, EPT>;
    CUDA_CALL(cudaFuncSetAttribute(k_dx_rows<N, R, EPT>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)P::smem));
    return STEM_OK;
}

template <int N, int C, int EPT> int prepare_cols(dx_shape<N, C, EPT>)
{
    CUDA_CALL(cudaFuncSetAttribute(k_dx_cols<N, C, EPT>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   (int)cols_smem<N, C, EPT>()));
    return STEM_OK;
}

template <int N, int R, int EPT>
int launch_rows(dx_shape<N, R, EPT>, float2 *waves, int ny, int batch, dx_steps st, cudaStream_t s)
{
    using P = dx_pair<N, R, EPT>;
    long lines = (long)ny * batch;
    k_dx_rows<N, R, EPT><<<(unsigned)((lines + R - 1) / R), P::fwd::block_dim, P::smem, s>>>(waves, lines, ny, st);
    CUDA_LAUNCH();
    return STEM_OK;
}

template <int N, int C, int EPT>
int launch_cols(dx_shape<N, C, EPT>, float2 *waves, int nx, int batch, dx_steps st, cudaStream_t s)
{
    using P = dx_pair<N, C, EPT>;
    dim3 blocks((nx + C - 1) / C, batch);
    k_dx_cols<N, C, EPT>
        <<<blocks, P::fwd::block_dim, cols_smem<N, C, EPT>(), s>>>(waves, nx, st.first, st.tab, st.then);
    CUDA_LAUNCH();
    return STEM_OK;
}

/* A benchmark's choice of shape from the environment ("lines,ept"), read once per process
 * (C++ statics are initialised once, whichever thread comes first); {0, 0}: none. */
struct dx_choice {
    int lines, ept;
};

dx_choice env_choice(const char *name)
{
    const char *env = getenv(name);
    dx_choice c{0, 0};
    if (!env || sscanf(env, "%d,%d", &c.lines, &c.ept) != 2) c = dx_choice{0, 0};
    return c;
}

const dx_choice &rows_choice()
{
    static const dx_choice c = env_choice("STEMSIM_DX_ROWS");
    return c;
}

const dx_choice &cols_choice()
{
    static const dx_choice c = env_choice("STEMSIM_DX_COLS");
    return c;
}

/* Whether the benchmark's choice `want` is compiled for side n (else the side's default runs). */
int choice_compiled(const dx_choice &want, int n, int is_rows)
{
    int found = 0;
#define DX_FIND(N, L, EPT) found |= n == N && want.lines == L && want.ept == EPT;
    if (is_rows) {
        DX_ROW_KERNELS(DX_FIND)
    } else {
        DX_COL_KERNELS(DX_FIND)
    }
#undef DX_FIND
    return found;
}

/* f(dx_shape) of side n's row (column) kernel: the benchmark's choice where it is compiled,
 * else the side's first entry. Launches and shared-memory opt-ins alike come through here. */
template <class F> int with_row_kernel(int n, F &&f)
{
    const dx_choice &want = rows_choice();
    int chosen = choice_compiled(want, n, 1), seen = 0;
#define DX_ROWS(N, R, EPT)                                                                                             \
    if (n == N) {                                                                                                      \
        if (chosen ? want.lines == R && want.ept == EPT : !seen) return f(dx_shape<N, R, EPT>{});                      \
        seen = 1;                                                                                                      \
    }
    DX_ROW_KERNELS(DX_ROWS)
#undef DX_ROWS
    return STEM_FAIL(STEM_ERR_INTERNAL, "internal error (please report): the cuFFTDx row pass has no size %d", n);
}

template <class F> int with_col_kernel(int n, F &&f)
{
    const dx_choice &want = cols_choice();
    int chosen = choice_compiled(want, n, 0), seen = 0;
#define DX_COLS(N, C, EPT)                                                                                             \
    if (n == N) {                                                                                                      \
        if (chosen ? want.lines == C && want.ept == EPT : !seen) return f(dx_shape<N, C, EPT>{});                      \
        seen = 1;                                                                                                      \
    }
    DX_COL_KERNELS(DX_COLS)
#undef DX_COLS
    return STEM_FAIL(STEM_ERR_INTERNAL, "internal error (please report): the cuFFTDx column pass has no size %d", n);
}
} // namespace

int gpu_dx_covers(int n)
{
    int rows = 0, cols = 0;
#define DX_HAS_ROWS(N, R, EPT) rows |= n == N;
#define DX_HAS_COLS(N, C, EPT) cols |= n == N;
    DX_ROW_KERNELS(DX_HAS_ROWS)
    DX_COL_KERNELS(DX_HAS_COLS)
#undef DX_HAS_ROWS
#undef DX_HAS_COLS
    return rows && cols;
}

int gpu_dx_prepare(int nx, int ny)
{
    STEM_TRY(with_row_kernel(nx, [](auto k) { return prepare_rows(k); }));
    return with_col_kernel(ny, [](auto k) { return prepare_cols(k); });
}

int gpu_dx_rows(int nx, int ny, float2 *waves, int batch, int first, const float2 *tab, int then, cudaStream_t s)
{
    dx_steps st{first, then, tab};
    return with_row_kernel(nx, [&](auto k) { return launch_rows(k, waves, ny, batch, st, s); });
}

int gpu_dx_cols(int nx, int ny, float2 *waves, int batch, int first, const float2 *tab_t, int then, cudaStream_t s)
{
    dx_steps st{first, then, tab_t};
    return with_col_kernel(ny, [&](auto k) { return launch_cols(k, waves, nx, batch, st, s); });
}

#else /* built without MathDx: the run-time kernels only */

int gpu_dx_covers(int n)
{
    (void)n;
    return 0;
}

int gpu_dx_prepare(int nx, int ny)
{
    (void)ny;
    return STEM_FAIL(STEM_ERR_INTERNAL, "internal error (please report): built without cuFFTDx, no kernels of size %d",
                     nx);
}

int gpu_dx_rows(int nx, int ny, float2 *waves, int batch, int first, const float2 *tab, int then, cudaStream_t s)
{
    (void)ny, (void)waves, (void)batch, (void)first, (void)tab, (void)then, (void)s;
    return STEM_FAIL(STEM_ERR_INTERNAL, "internal error (please report): built without cuFFTDx, no row pass of size %d",
                     nx);
}

int gpu_dx_cols(int nx, int ny, float2 *waves, int batch, int first, const float2 *tab_t, int then, cudaStream_t s)
{
    (void)nx, (void)waves, (void)batch, (void)first, (void)tab_t, (void)then, (void)s;
    return STEM_FAIL(STEM_ERR_INTERNAL,
                     "internal error (please report): built without cuFFTDx, no column pass of size %d", ny);
}

#endif
