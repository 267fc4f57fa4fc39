/* The EMD layout's views for py4DSTEM and hyperspy: what each reader needs to open a scan
 * calibrated and the right way round, beside Prismatic's 0.9 tree (emd.h), which stays as it
 * is. The large datasets are not copied: the views hard-link Prismatic's.
 *
 *   root attributes    emd_group_type "file", version_major 1, version_minor 0: an EMD 1.0
 *                      file, so py4DSTEM.read takes emdfile's reader (its legacy 0.9 reader
 *                      has no calibration)
 *   /stemsim           the EMD 1.0 root (emd_group_type "root"): metadatabundle/calibration
 *                      (R_pixel_size: the scan step, Angstrom; Q_pixel_size: the qx step,
 *                      mrad; Q_pixel_size_x, _y: both steps; qx0_mean, qy0_mean: q = 0 in
 *                      pixels); per series point a DataCube cbed[_<suffix>] (data: Prismatic's
 *                      [Nx][Ny][Qx][Qy]) whose RealSlices are the [images] ranges and
 *                      total_intensity (at the root when there are no 4D patterns)
 *   /0_signals         for rosettasciio (hs.load), which visits every dataset once, in name
 *                      order: first here, so Prismatic's copies are not loaded again.
 *                      images/<name>, total_intensity, virtual_detector, DPC_CoM: one signal
 *                      each, [Nx][Ny](channels)(series axes) with the series values as dims;
 *                      cbed/<title>: one 4D signal per series point, dataset datacube (read
 *                      untransposed, dim1, dim2 the navigation)
 *
 * A scan on a grid only: one probe axis (hrtem, cbed, [scan] positions) has no R pixel size,
 * and its file keeps the 0.9 tree alone. */
#ifndef STEM_EMD_READERS_H
#define STEM_EMD_READERS_H

#include <hdf5.h>
#include <stddef.h>

#include "../src/plan.h"

#define STEM_EMD_SUFFIX 96

typedef struct {
    hid_t out, realslices, datacubes; /* the EMD file; Prismatic's groups (written) */
    const char *path;                 /* the file's name, for messages */
    const stem_plan *plan;
    int points;                            /* series points, row-major over the axes */
    const char (*suffix)[STEM_EMD_SUFFIX]; /* each point's Prismatic name suffix */
    int n_lead;                            /* the series axes */
    const hsize_t *lead;                   /* their sizes, */
    const char (*lead_name)[32];           /* names (as /stemsim/axes names them) */
    double *const *lead_values;            /* and values */
    const double *scan_x, *scan_y;         /* R_x, R_y (Angstrom) */
} stem_emd_view;

/* Prismatic's group of [images] range i at a point: annular_detector_<suffix> for HAADF (else
 * the first range: the image Prismatic's scripts find under the plain name), else
 * annular_detector_<suffix>_<name>. */
void stem_emd_image_group(const stem_plan *plan, int i, const char *suffix, char *name, size_t n);

/* dimK of group g: n doubles with name and units (emdfile counts from dim0, Prismatic and
 * rosettasciio from dim1); STEM_ERR_IO unreported, for the caller to name its step. */
int stem_emd_dim(hid_t g, int k, const double *values, hsize_t n, const char *name, const char *units);
/* Whether a plan's EMD file gets the views: a scan on a grid (not [scan] positions, not one wave). */
int stem_emd_views_apply(const stem_plan *plan);
/* The views of a grid scan's tree (nothing otherwise); after /stemsim/axes is written.
 * Returns STEM_OK, STEM_ERR_MEMORY or STEM_ERR_IO (the step and file named). */
int stem_emd_views(const stem_emd_view *v);

#endif
