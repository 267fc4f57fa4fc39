/* A small FFT interface over FFTW (single precision, batched 2D, in place).
 * Engines talk only to this, so a slab-decomposed FFTW-MPI backend for giant
 * plane-wave cells can slot in later without touching the propagation code. */
#ifndef STEM_FFT_H
#define STEM_FFT_H

#include "stem.h"

typedef struct {
    int nx, ny, batch;
    void *forward, *inverse; /* fftwf_plan */
} stem_fft;

/* Aligned buffer suitable for the plans (fftwf_malloc). */
stem_complex *stem_fft_alloc(size_t count, const char *what);
void stem_fft_free(void *p);
/* Plan `batch` transforms of ny x nx (x fastest) in place on buf; thread safe.
 * measure: measured plans (FFTW_MEASURE): from the shape's wisdom when one was given
 * (stem_fft_wisdom_use, stem_fft_wisdom_import), else timed here. */
int stem_fft_create(stem_fft *fft, int nx, int ny, int batch, stem_complex *buf, int measure);
void stem_fft_forward(const stem_fft *fft, stem_complex *buf);
void stem_fft_inverse(const stem_fft *fft, stem_complex *buf); /* unnormalised */
void stem_fft_destroy(stem_fft *fft);

/* FFTW wisdom (what FFTW_MEASURE chose) shared by the ranks, so that every rank
 * runs the same algorithms and a measured run stays bit-identical across rank
 * counts. Measure: plan and discard batch transforms of nx x ny, the choice kept
 * in the process's wisdom. */
int stem_fft_measure(int nx, int ny, int batch);
/* The process's wisdom as text (malloc'd; NULL: failure). */
char *stem_fft_wisdom_export(void);
/* Replace the process's wisdom with text; afterwards measured plans come from the
 * wisdom only (a shape it lacks is measured again, with a warning). */
int stem_fft_wisdom_import(const char *text);

/* The wisdom cache's per-shape wisdom (mpi/fft_wisdom.c): each measured shape's
 * plans come from that shape's wisdom alone. Measure the forward and inverse
 * transforms of one shape from no wisdom and return what FFTW chose (malloc'd
 * text; NULL: failure, reported). */
char *stem_fft_measure_shape(int nx, int ny, int batch);
/* 1 when text is FFTW wisdom holding both plans of the shape (nothing measured). */
int stem_fft_shape_wisdom_complete(int nx, int ny, int batch, const char *text);
/* From now on, measured plans of this shape come from text (copied) alone. */
int stem_fft_wisdom_use(int nx, int ny, int batch, const char *text);
/* FFTW's version string (the cache's key). */
const char *stem_fft_library_version(void);

#endif
