/* stem_options: the keys the engines read, declared once. The key table
 * (io/config.c) parses each straight into the config's copy (stem_config.opt);
 * the plan copies the struct whole (stem_plan.opt) and resolves what the model
 * or the algorithm decides (stem_plan_build, resolve_options). Plain data, no
 * pointers: rank 0 broadcasts the config as bytes. */
#ifndef STEM_OPTIONS_H
#define STEM_OPTIONS_H

#define STEM_PATH_MAX 1024

typedef enum { STEM_DEVICE_AUTO = 0, STEM_DEVICE_CPU = 1, STEM_DEVICE_GPU = 2 } stem_device;
typedef enum { STEM_FFT_ESTIMATE = 0, STEM_FFT_MEASURE = 1, STEM_FFT_AUTO = 2 } stem_fft_planning;
typedef enum { STEM_MEMMODE_AUTO = 0, STEM_MEMMODE_SINGLE = 1, STEM_MEMMODE_STREAMING = 2 } stem_memory_mode;
typedef enum { STEM_FFT_CALLBACKS_OFF = 0, STEM_FFT_CALLBACKS_ON = 1 } stem_fft_callbacks;
typedef enum { STEM_GPU_SLICES_CUFFT = 0, STEM_GPU_SLICES_FUSED = 1, STEM_GPU_SLICES_AUTO = 2 } stem_gpu_slices;
typedef enum { STEM_GPU_OUTPUT_GEMM = 0, STEM_GPU_OUTPUT_DIRECT = 1 } stem_gpu_output_variant;
/* [debug] gpu_gemm: the PRISM output's product; TF32X3 and FP16X3 split each FP32 operand in a high and
 * a low part and sum three tensor-core products in short sums (FP32 accuracy, cuda/gpu_split_gemm.cu);
 * AUTO takes FP16X3 where it is faster and fits, else STANDARD (cuda/gpu_output_plan.cu) */
typedef enum {
    STEM_GPU_GEMM_STANDARD = 0,
    STEM_GPU_GEMM_3M = 1,
    STEM_GPU_GEMM_TF32 = 2,
    STEM_GPU_GEMM_TF32X3 = 3,
    STEM_GPU_GEMM_FP16X3 = 4,
    STEM_GPU_GEMM_AUTO = 5,
    STEM_GPU_GEMM_FP64 = 6 /* the reference: ZGEMM on FP64 copies of the operands (gpu_split_gemm.cu) */
} stem_gpu_gemm;

typedef struct {
    /* [probe] */
    double source_size;  /* FWHM of the Gaussian effective source, Angstrom (coherence.h; 0: none) */
    double focal_spread; /* standard deviation of defocus, Angstrom (coherence.h; 0: coherent); the plan's:
                              * the one [probe] Cc and energy_spread give, when they are set */
    int soft_aperture;   /* the aperture's edge softened over one grid pixel (probe.c) */
    int focal_points;    /* Gauss-Hermite points over the focal spread; config 0: auto, the plan's resolved (>= 1) */
    /* [simulation] */
    double potential_radius; /* Angstrom */
    int oversampling;        /* [simulation] transmission_oversampling: transmission functions formed on a grid this
                              * many times finer (potential.c); config 0: auto, the plan's resolved with the model */
    int parametrisation;     /* stem_parametrisation */
    int finite_projection;   /* [simulation] projection: atoms' potentials split over the slices they reach */
    char potential_file[STEM_PATH_MAX]; /* slices read from a stemsim output's /potential ("": from the atoms) */
    char smatrix_file[STEM_PATH_MAX];   /* PRISM: S-matrices read from a stemsim output's /smatrix ("": computed) */
    long seed;
    int thermal;
    /* [detector], [output]: what is written; the plan's save_4d is on for cbed (the pattern is the output) */
    int save_3d, save_4d, save_dpc, save_pacbed;
    int probe_block;     /* [detector] probe_block: probes per streamed 4D block (config 0: auto; plan.h probe_block) */
    int save_exit_wave;  /* hrtem: write /exit_wave */
    int save_potential;  /* write /potential (every configuration's slices) */
    int save_smatrix;    /* PRISM: write /smatrix (every configuration's compact S-matrix) */
    int layout_emd;      /* [output] layout: 0 stemsim's own, 1 Prismatic's EMD tree (io/emd.h) */
    int standard_errors; /* [output] standard_errors (channels.h: stem_channel_error_width) */
    /* [hrtem] */
    double objective_aperture_mrad; /* objective aperture semi-angle (0: none, the band limit) */
    /* [compute] */
    int device; /* stem_device */
    int gpus_per_rank, streams_per_gpu;
    int memory_mode;       /* stem_memory_mode */
    int fft_callbacks;     /* stem_fft_callbacks: GPU multiplies folded into cuFFT's loads */
    int gpu_slices;        /* stem_gpu_slices: cuFFT, the fused slice kernels where they cover the grid, or auto */
    int gpu_deterministic; /* 1: the GPU engine's sums in an order fixed by the job (0: float atomics) */
    int fft_planning;      /* stem_fft_planning */
    int node_queue;        /* 1: auto (a node's ranks take CPU probes and slice pieces from shared queues), 0: off */
    /* [debug]: kernel variants for benchmarking */
    int gpu_prism_output;    /* stem_gpu_output_variant */
    int gpu_tile;            /* 0: automatic */
    int gpu_gemm;            /* stem_gpu_gemm */
    int gpu_gemm_steps;      /* split products: hi*hi's tensor-core steps per sum before an FP32 add (0: whole K) */
    int gpu_prism_resident;  /* 1: auto, 0: off */
    int smatrix_round_beams; /* PRISM's S-matrix rounds: beams per rank (0: auto, mpi/smatrix_tiles.c) */
    int gpu_gemm_check;      /* time the PRISM output's CGEMMs alone after the step (log) */
    int gpu_transmission;    /* 1: auto (on the GPU with the GPU engine), 0: off (the CPU builds them) */
} stem_options;

/* FFTW_MEASURE instead of FFTW_ESTIMATE for the CPU engine's serial FFTs ([compute] fft_planning = auto or measure). */
static inline int stem_options_fft_measure(const stem_options *o) { return o->fft_planning != STEM_FFT_ESTIMATE; }
/* The distributed FFT (FFTW-MPI) measures only when asked by name: its plans are not cached. */
static inline int stem_options_dist_fft_measure(const stem_options *o) { return o->fft_planning == STEM_FFT_MEASURE; }

/* hrtem's objective aperture semi-angle in rad (0: none). */
static inline double stem_options_objective_aperture(const stem_options *o)
{
    return o->objective_aperture_mrad * 1e-3;
}

#endif
