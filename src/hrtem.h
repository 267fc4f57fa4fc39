/* Plane-wave imaging (algorithm = hrtem): the exit wave of a plane wave through
 * the sample, and the HRTEM image that the objective lens makes of it. */
#ifndef STEM_HRTEM_H
#define STEM_HRTEM_H

#include "detector.h"
#include "fft.h"

/* The plane wave exp(2 pi i (kx x / Lx + ky y / Ly)) (plan->plane_k: the beam tilt on
 * the grid) through every slice; wave (nx x ny) ends in Fourier space, band-limited,
 * normalised so that a unit plane wave in vacuum is 1 at its own frequency. */
int stem_hrtem_exit_wave(const stem_plan *plan, const stem_complex *trans, stem_complex *wave);
/* The end of the run of points from i with point i's beam tilt (consecutive points of one
 * tilt differ only in the lens, and share its exit wave): the first j > i whose tilt differs, or n. */
int stem_hrtem_same_tilt_end(const stem_plan *plans, int i, int n);
/* n points of one configuration (points in series order; each beam tilt's consecutive points
 * differ only in the lens): each tilt's plane wave through the slices once, every point with
 * that tilt recorded at each detection plane into res[point * planes + plane] (planes:
 * stem_plan_n_planes; the exit surface only without [output] depths). */
int stem_hrtem_points(const stem_plan *plans, int n, const stem_complex *trans, const stem_detector *det,
                      stem_result *res);
/* Record probe 0 of res from the Fourier-space exit wave: the detector channels of its
 * diffraction pattern, the real-space exit wave (if asked for) and the image through
 * the lens: |IFFT[wave(q) A(q) exp(-i chi(q))]|^2, chi the [probe] aberrations about
 * the optical axis, A the objective aperture ([hrtem] objective_aperture, 0: none),
 * averaged over the focal spread's defoci (coherence.h) as intensities. A rank whose
 * result holds no probe records nothing. */
int stem_hrtem_record(const stem_plan *plan, const stem_complex *wave, const stem_detector *det, stem_result *res);
/* Its first part alone: the detector channels of the diffraction pattern (the GPU engine
 * makes the exit wave and the image on the device, cuda/gpu_hrtem.cu). */
int stem_hrtem_record_pattern(const stem_plan *plan, const stem_complex *wave, const stem_detector *det,
                              stem_result *res);
/* The lens's phase without its defocus: chi of lens's aberrations with C10 = 0 at each
 * pixel (FFT order), or NaN where the objective aperture stops the frequency; the GPU adds
 * pi C10 lambda q^2 per focal point. */
void stem_hrtem_chi_without_defocus(const stem_plan *lens, double *chi);
/* Pieces the distributed path (mpi/dist_hrtem.c) shares: rows [row0, row0 + rows) of the
 * plane wave, and the lens's transfer A(q) exp(-i chi(q)) at one frequency (lens: the
 * plan with the defocus of one focal point). */
void stem_hrtem_plane_wave_rows(const stem_plan *plan, long row0, long rows, stem_complex *w);
stem_complex stem_hrtem_lens_at(const stem_plan *lens, double qx, double qy);

#endif
