/* Index maps shared by the CPU engine and the CUDA kernels: one definition,
 * compiled for the host and (under nvcc) for the device. The CPU code that
 * uses them is the reference the GPU is checked against. */
#ifndef STEM_INDEX_MAPS_H
#define STEM_INDEX_MAPS_H

#ifdef __CUDACC__
#define STEM_HD static __host__ __device__ __forceinline__
#else
#define STEM_HD static inline
#endif

/* Signed Fourier index of FFT bin i of an n-point transform. */
STEM_HD int stem_fft_index(int i, int n) { return i < (n + 1) / 2 ? i : i - n; }

/* Bin i (FFT order) of a Fourier box of `box` bins -> the bin of the same
 * frequency on the n-point grid (box <= n): cropping a band-limited wave. */
STEM_HD int stem_box_to_grid(int i, int box, int n) { return (stem_fft_index(i, box) + n) % n; }

/* Bin i (FFT order) of an n-point pattern -> its place when zero frequency
 * sits at n / 2 (the centred diffraction patterns of /cbed). */
STEM_HD int stem_centred_index(int i, int n) { return (i + n / 2) % n; }

#endif
