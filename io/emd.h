/* [output] layout = emd: Prismatic 2.0's EMD tree (its src/fileIO.cpp), which
 * py4DSTEM's reader (py4DSTEM.read, the v0.9 "4DSTEM_simulation" format) and
 * scripts written for Prismatic open unchanged:
 *
 *   /4DSTEM_simulation            version_major 0, version_minor 9, version_release 0,
 *                                 emd_group_type 2
 *     data/realslices/annular_detector_depthNNNN[tag]    [Nx][Ny]: the HAADF image (else
 *                                 the first [images] range); every other range as
 *                                 annular_detector_depthNNNN[tag]_<name>
 *     data/realslices/virtual_detector_depthNNNN[tag]    [Nx][Ny][rings], dim3 the rings'
 *                                 centres in mrad (Prismatic: outer edges)
 *     data/realslices/DPC_CoM_depthNNNN[tag]             [Nx][Ny][2] in 1/Angstrom
 *     data/realslices/total_intensity_depthNNNN[tag]     [Nx][Ny] (stemsim's own)
 *     data/datacubes/CBED_array_depthNNNN[tag]           [Nx][Ny][Qx][Qy], chunked by pattern
 *                                 (cbed: its /cbed_pattern, [1][1][Qx][Qy])
 *     data/realslices/HRTEM[_depthNNNN[tag]]             hrtem: [Nx][Ny][beam tilts] float32,
 *                                 Prismatic's stack (dim3 the tilts as labels, tilts [n][2] mrad);
 *                                 exit_wave[...] the same of the mean exit wave, complex {r, i}
 *     log                         stemsim's config, plan, environment, advice and build as attributes
 *     metadata/metadata_0/original/simulation_parameters Prismatic's short keys
 *
 * Every data group has emd_group_type 1, metadata 0, output_depth (Angstrom) and the
 * datasets data and dim1..dimN (name and units attributes). One probe axis ([scan] positions,
 * hrtem, cbed) is Prismatic's arbitrary probes' [n_probes][1] (dim1 the probe index when
 * n_probes > 1; the positions in simulation_parameters probes_x, probes_y). Axes run x first, as
 * Prismatic writes them (stemsim's own layout is y first). A depth series numbers the
 * depths (NNNN); the other series axes add [tag] = _dfNNNN (defocus), _txNNNN, _tyNNNN
 * (sample tilts), _bxNNNN, _byNNNN (beam tilts), in that order. /potential, /smatrix and
 * /smatrix_beams are copied unchanged, so potential_file and smatrix_file read them; what
 * the tree has no place for (/segments, /dpc_segments_x/_y, /pacbed) and stemsim's /axes
 * are kept as written under /stemsim, with the attribute advice (the plan's convergence
 * advice, "" when there is none; src/advice.h). A scan on a grid also gets the views that
 * py4DSTEM.read and hyperspy's hs.load read calibrated (emd_readers.h); the legacy 0.9
 * reader then needs topgroup "4DSTEM_simulation". */
#ifndef STEM_EMD_H
#define STEM_EMD_H

#include "../src/plan.h"

/* What the caller does during a conversion (either may be NULL): tick, between steps (a
 * point's dataset, a scan row of patterns), returns non-zero to stop the conversion with
 * that status (a signal); before_close runs just before the EMD file is closed (failed:
 * the conversion failed and the file will be removed), to give HDF5 the disk space a
 * close needs. */
typedef struct {
    int (*tick)(void *ctx);
    void (*before_close)(void *ctx, const char *emd, int failed);
    void *ctx;
} stem_emd_hooks;

/* Serial HDF5 on one rank: the complete native file `native` (closed) rewritten as the
 * EMD tree into `emd` (created, truncated); the root's attribute complete = 1 comes
 * last. Failures name the file and step (STEM_ERR_IO); hooks may be NULL. */
int stem_emd_convert(const char *native, const char *emd, const stem_plan *plan, const stem_emd_hooks *hooks);

#endif
