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
 * measure: time candidate algorithms (faster, not reproducible bit for bit). */
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

#endif
