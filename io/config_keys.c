/* The config's key table: every key of config.ini with its section, type, field, default,
 * bounds, unit and help text, one row each (the aberration coefficients from one row per
 * coefficient), and the look-ups on it. The parser (config.c) reads each value into the
 * field its row names, checks it against the row and prints the rows as --help-config. */
#include <stddef.h>
#include <string.h>
#include <strings.h>

#include "config_keys.h"

/* The aberration coefficients C_nm of [probe] (Krivanek's notation, Angstrom), one row per
 * coefficient: n, m, the power n + 1 of theta and the aberration's name give the key Cnm and
 * its help text, chi's term 2 pi/lambda Cnm/(n + 1) theta^(n + 1) cos(m (phi - phinm)), and for
 * m > 0 the key phinm, its azimuth in degrees. ABERR_ROUND: m = 0 (no azimuth); ABERR_COMA:
 * m = 1 (cos(phi - phinm)); ABERR_FOLD: m > 1. */
#define ABERRATION(n, m, power, name, azimuth)                                                                         \
    {                                                                                                                  \
        "probe", "C" #n #m, K_DOUBLE, OFF(aberr_c[STEM_C##n##m]), "0", -1e15, 1e15, NULL, "Angstrom",                  \
            name ": chi += 2 pi/lambda C" #n #m "/" #power " theta^" #power azimuth                                    \
    }
#define AZIMUTH(n, m)                                                                                                  \
    {                                                                                                                  \
        "probe", "phi" #n #m, K_DOUBLE, OFF(aberr_phi_deg[STEM_C##n##m]), "0", -360, 360, NULL, "deg",                 \
            "azimuth of C" #n #m                                                                                       \
    }
#define ABERR_ROUND(n, m, power, name) ABERRATION(n, m, power, name, "")
#define ABERR_COMA(n, m, power, name) ABERRATION(n, m, power, name, " cos(phi - phi" #n #m ")"), AZIMUTH(n, m)
#define ABERR_FOLD(n, m, power, name) ABERRATION(n, m, power, name, " cos(" #m " (phi - phi" #n #m "))"), AZIMUTH(n, m)

const key_spec stem_config_keys[] = {
    {"sample", "xyz", K_STRING, OFF(xyz), "", 0, 0, NULL, "path",
     "XYZ model (Prismatic format); relative paths are relative to the config file. Required."},
    {"sample", "tile_x", K_INT, OFF(tile_x), "1", 1, 1000, NULL, "-", "repeat the cell along x"},
    {"sample", "tile_y", K_INT, OFF(tile_y), "1", 1, 1000, NULL, "-", "repeat the cell along y"},
    {"sample", "tile_z", K_INT, OFF(tile_z), "1", 1, 1000, NULL, "-", "repeat the cell along z (beam direction)"},
    {"sample", "min_distance", K_DOUBLE, OFF(min_distance), "0.3", 0, 10, NULL, "Angstrom",
     "refuse a model with two atoms closer than this (periodic in x and y, and in z when tiled along it; sites "
     "shared by partial occupancies summing to at most 1 excepted): a model written in nm has its bonds below "
     "0.3 (Si 0.235, Au 0.288), or atoms written twice; 0 accepts any (a random amorphous support may hold "
     "closer pairs than real matter)"},
    {"sample", "tilt_x", K_DOUBLE, OFF(tilt_x), "0", -180, 180, NULL, "deg",
     "rotate the model about the x axis through the cell centre (tilt series)"},
    {"sample", "tilt_y", K_DOUBLE, OFF(tilt_y), "0", -180, 180, NULL, "deg", "rotate about the y axis"},
    {"sample", "rotation_z", K_DOUBLE, OFF(rotation_z), "0", -360, 360, NULL, "deg",
     "in-plane rotation about the beam axis, applied first"},
    {"beam", "energy", K_DOUBLE, OFF(energy_kev), "200", 10, 5000, NULL, "keV",
     "beam energy; supported 10 to 5000 keV: below 10 keV the high-energy approximations of multislice fail "
     "(forward scattering and paraxial propagation; at 1 keV a 0.1 Angstrom pixel's band limit lies beyond 1 rad)"},
    {"probe", "semiangle", K_DOUBLE, OFF(semiangle_mrad), "20", 0.01, 500, NULL, "mrad",
     "probe-forming aperture semi-angle"},
    ABERR_ROUND(1, 0, 2,
                "defocus C1; negative values focus the probe below the entrance surface (underfocus); = abTEM's C10 "
                "= -(abTEM's defocus)"),
    ABERR_FOLD(1, 2, 2, "two-fold astigmatism A1"),
    ABERR_COMA(2, 1, 3, "axial coma B2"),
    ABERR_FOLD(2, 3, 3, "three-fold astigmatism A2"),
    ABERR_ROUND(3, 0, 4, "spherical aberration Cs = C3 (1 mm = 1e7 Angstrom)"),
    ABERR_FOLD(3, 2, 4, "star aberration S3"),
    ABERR_FOLD(3, 4, 4, "four-fold astigmatism A3"),
    ABERR_COMA(4, 1, 5, "fourth-order axial coma B4"),
    ABERR_FOLD(4, 3, 5, "three-lobe aberration D4"),
    ABERR_FOLD(4, 5, 5, "five-fold astigmatism A4"),
    ABERR_ROUND(5, 0, 6, "fifth-order spherical aberration C5 (1 mm = 1e7 Angstrom)"),
    ABERR_FOLD(5, 2, 6, "fifth-order star aberration S5"),
    ABERR_FOLD(5, 4, 6, "rosette aberration R5"),
    ABERR_FOLD(5, 6, 6, "six-fold astigmatism A5"),
    {"probe", "defocus", K_DOUBLE, OFF(defocus), "0", -1e6, 1e6, NULL, "Angstrom",
     "older name of C10 (giving both is an error)"},
    {"probe", "cs", K_DOUBLE, OFF(cs_mm), "0", -1e4, 1e4, NULL, "mm",
     "older name of C30, in mm (giving both is an error)"},
    {"probe", "c5", K_DOUBLE, OFF(c5_mm), "0", -1e6, 1e6, NULL, "mm",
     "older name of C50, in mm (giving both is an error)"},
    {"probe", "astigmatism", K_DOUBLE, OFF(astigmatism), "0", -1e6, 1e6, NULL, "Angstrom",
     "older name of C12 (giving both is an error)"},
    {"probe", "astigmatism_angle", K_DOUBLE, OFF(astigmatism_angle), "0", -360, 360, NULL, "deg",
     "older name of phi12 (giving both is an error)"},
    {"probe", "source_size", K_DOUBLE, OFF(opt.source_size), "0", 0, 1000, NULL, "Angstrom",
     "FWHM of a Gaussian effective source (spatial partial coherence): rings, images, DPC and total intensity are "
     "blurred over the "
     "scan with it, exactly for the band-limited image whatever the scan step (in Fourier space: exp(-2 pi^2 sigma^2 "
     "q^2)), "
     "wrapping where the scan covers the cell, mirrored at the scan's edges otherwise (an approximation near them: "
     "warned); 4D patterns are not changed"},
    {"probe", "soft_aperture", K_BOOL, OFF(opt.soft_aperture), "false", 0, 0, NULL, "-",
     "soften the aperture's edge over one pixel of the simulation grid (abTEM's soft aperture: weight "
     "clip((alpha - theta) / d(phi) + 1/2, 0, 1), d the grid's angular step along the azimuth phi); false: hard edge"},
    {"probe", "beam_tilt_x", K_DOUBLE, OFF(beam_tilt_mrad[0]), "0", -1000, 1000, NULL, "mrad",
     "beam (probe) tilt along x: aperture and aberration function centred on this angle in the diffraction plane "
     "(Prismatic's probe tilt); detectors stay centred on the optical axis, so the bright field moves with it"},
    {"probe", "beam_tilt_y", K_DOUBLE, OFF(beam_tilt_mrad[1]), "0", -1000, 1000, NULL, "mrad",
     "beam (probe) tilt along y, like beam_tilt_x"},
    {"probe", "aperture_shift_x", K_DOUBLE, OFF(aperture_shift_mrad[0]), "0", -1000, 1000, NULL, "mrad",
     "a misaligned aperture: displaced by this much along x from the beam's axis (the aberrations stay centred on "
     "the beam)"},
    {"probe", "aperture_shift_y", K_DOUBLE, OFF(aperture_shift_mrad[1]), "0", -1000, 1000, NULL, "mrad",
     "aperture displacement along y, like aperture_shift_x"},
    {"probe", "focal_spread", K_DOUBLE, OFF(opt.focal_spread), "0", 0, 1e5, NULL, "Angstrom",
     "standard deviation sigma of a Gaussian spread of defocus (temporal partial coherence; Cc times the relative "
     "energy spread; abTEM's and Kirkland's 1/e focal_spread is sqrt(2) sigma): every output is the weighted mean over "
     "focal_points defoci C10 + sqrt(2) sigma x_i (Gauss-Hermite); PRISM computes its S-matrix once for all of them"},
    {"probe", "Cc", K_DOUBLE, OFF(cc), "0", 0, 1e12, NULL, "Angstrom",
     "chromatic aberration (1 mm = 1e7 Angstrom): with energy_spread, sets focal_spread = Cc sigma_E / E* (E* the "
     "relativistically corrected energy, sigma_E = energy_spread / 2.355); not together with focal_spread"},
    {"probe", "energy_spread", K_DOUBLE, OFF(energy_spread), "0", 0, 1e3, NULL, "eV",
     "full width at half maximum of the beam's energy spread (with Cc)"},
    {"probe", "focal_points", K_INT_AUTO, OFF(opt.focal_points), "auto", 1, 64, NULL, "-",
     "Gauss-Hermite points over the focal spread (cost: that many output steps; exact for intensities polynomial "
     "in defocus up to degree 2 n - 1); auto: the fewest (at most 64) whose error on the defocus average of every "
     "phase factor exp(i pi lambda (q^2 - q'^2) dC) the aperture (hrtem: the objective aperture or band limit) "
     "produces is below 1e-3 (docs/accuracy.md, Convergence advice); 1 without a focal spread"},
    {"simulation", "algorithm", K_ENUM, OFF(algorithm), "multislice", 0, 0, "multislice|prism|hrtem|cbed", "-",
     "multislice or prism (STEM scans); hrtem: a plane wave (tilted by [probe] beam_tilt, rounded to the grid) through "
     "the sample, its exit wave and the HRTEM image through the objective lens of [probe] (aberrations, focal "
     "spread) and [hrtem] objective_aperture; cbed: one probe at [scan] x_start, y_start and its whole diffraction "
     "pattern (/cbed_pattern)"},
    {"simulation", "pixel_size", K_DOUBLE, OFF(pixel_size), "0.1", 1e-3, 10, NULL, "Angstrom",
     "target real-space sampling; the grid is rounded up to FFT-friendly sizes"},
    {"simulation", "grid_x", K_INT, OFF(grid_x), "0", 0, 65536, NULL, "pixels",
     "explicit grid size along x (0: from pixel_size)"},
    {"simulation", "grid_y", K_INT, OFF(grid_y), "0", 0, 65536, NULL, "pixels",
     "explicit grid size along y (0: from pixel_size)"},
    {"simulation", "slice_thickness", K_DOUBLE, OFF(slice_thickness), "2", 0.01, 1000, NULL, "Angstrom",
     "thickness of each potential slice; a cell within 1e-4 of a slice of a whole number N of slices gets N "
     "(the remainder, rounding in the model file, is dropped), any other cell a thinner last slice (cell z - (N - 1) "
     "slice_thickness, printed in the plan), propagated by its own thickness"},
    {"simulation", "potential_radius", K_DOUBLE, OFF(opt.potential_radius), "3", 0.1, 50, NULL, "Angstrom",
     "cutoff radius of each atom's projected potential"},
    {"simulation", "supersampling", K_INT, OFF(supersampling), "8", 1, 64, NULL, "-",
     "retired (accepted with a warning, no effect): atoms are now placed at their exact positions, with no "
     "sub-pixel lookup to refine"},
    {"simulation", "transmission_oversampling", K_ENUM, OFF(opt.oversampling), "auto", 0, 0, "auto|1|2|3|4|5|6|7|8",
     "-",
     "each slice's transmission function exp(i sigma V) is formed on a grid this many times finer than the "
     "simulation's and then band-limited to it: the strong phase of heavy atoms has structure far beyond the band "
     "limit that would otherwise be lost (up to +15-17% HAADF for Au and U at 0.025 Angstrom pixels). auto: a "
     "transmission pixel of at most 0.05 Angstrom for models up to Z = 10, 0.025 up to Z = 20, 0.0125 up to "
     "Z = 50, 0.008 beyond (at most 4; docs/physics.md, Potentials). Costs the factor squared in the transmission "
     "build's time and scratch memory"},
    {"simulation", "parametrisation", K_ENUM, OFF(opt.parametrisation), "kirkland", 0, 0, "kirkland|lobato", "-",
     "electron scattering factors of the atoms: kirkland (Kirkland 2010, data/kirkland_params.txt or "
     "$STEMSIM_KIRKLAND) "
     "or lobato (Lobato & Van Dyck 2014, abTEM's and MULTEM's default; data/lobato_params.txt or $STEMSIM_LOBATO)"},
    {"simulation", "projection", K_ENUM, OFF(opt.finite_projection), "infinite", 0, 0, "infinite|finite", "-",
     "infinite: each atom's whole projected potential goes into the slice holding its centre; finite: each slice "
     "gets the integral of the atom's 3D potential over the part of it inside the slice (within potential_radius "
     "of the centre; what lies above the first or below the last slice is added to that slice), as abTEM's "
     "projection=\"finite\" and Prismatic's 3D potential do; costs 24 times the lookup-table memory"},
    {"simulation", "potential_file", K_STRING, OFF(opt.potential_file), "", 0, 0, NULL, "path",
     "read the potential slices from /potential of a stemsim output written with [output] save_potential, or of an "
     "imported potential (root attribute potential_source: another code's, written by stemsim.write_potential; "
     "docs/physics.md, Potentials from elsewhere), instead of building them from the atoms (relative to the config "
     "file): its grid, cell and slicing must be this run's "
     "(refused otherwise, exit 4), configuration c uses its slices c (it needs at least frozen_phonons of them); "
     "the energy may differ (the potential does not depend on it), the tilts, rotation, parametrisation, projection, "
     "potential_radius, thermal and (thermal) seed may not (compared with the writer's config, exit 3; an imported "
     "file's are its own); a damaged or "
     "unfinished file is refused (exit 4); a [series] or checkpointed campaign reads each tilt's slices from "
     "/potential_tilts/tilt_<t> of a campaign over the same tilts (others refused, exit 4); with a distributed FFT "
     "each rank reads its rows"},
    {"simulation", "smatrix_file", K_STRING, OFF(opt.smatrix_file), "", 0, 0, NULL, "path",
     "prism: read each configuration's compact S-matrix from /smatrix of a stemsim output written with [output] "
     "save_smatrix, instead of building the potential and propagating the beams (Prismatic's -ism; relative to the "
     "config file): its energy, grid, cell, slices, interpolation factors and beams must be this run's (refused "
     "otherwise, exit 4); configuration c uses its S-matrix c; only the probes (aberrations, defocus, positions, "
     "detectors) may change: the tilts, rotation, parametrisation, projection, potential_radius, transmission "
     "oversampling, thermal and (thermal) seed are compared with the writer's (exit 3); a damaged or unfinished file "
     "is refused (exit 4); a [series] or checkpointed campaign reads each tilt's from /smatrix_tilts/tilt_<t> of a "
     "campaign over the same tilts (others refused, exit 4); not with potential_file"},
    {"simulation", "interpolation_x", K_INT, OFF(interpolation_x), "4", 1, 256, NULL, "-",
     "PRISM interpolation factor fx"},
    {"simulation", "interpolation_y", K_INT, OFF(interpolation_y), "4", 1, 256, NULL, "-",
     "PRISM interpolation factor fy"},
    {"simulation", "frozen_phonons", K_INT, OFF(frozen_phonons), "1", 1, 100000, NULL, "-",
     "number of frozen-phonon configurations averaged"},
    {"simulation", "seed", K_LONG, OFF(opt.seed), "1", 0, 9.2e18, NULL, "-",
     "random seed; configuration c uses a stream derived from (seed, c) only; read as a 64-bit integer (exact above "
     "2^53; exponent notation above 2^53 is refused)"},
    {"simulation", "thermal", K_BOOL, OFF(opt.thermal), "false", 0, 0, NULL, "-",
     "displace atoms by their rms amplitude (XYZ last column) in each configuration"},
    {"scan", "units", K_ENUM, OFF(scan_units), "fractional", 0, 0, "fractional|angstrom", "-",
     "units of the scan window"},
    {"scan", "x_start", K_DOUBLE, OFF(x_start), "0", -1e6, 1e6, NULL, "units", "scan window start along x"},
    {"scan", "x_end", K_DOUBLE, OFF(x_end), "1", -1e6, 1e6, NULL, "units",
     "scan window end along x (exclusive; default: whole cell)"},
    {"scan", "y_start", K_DOUBLE, OFF(y_start), "0", -1e6, 1e6, NULL, "units", "scan window start along y"},
    {"scan", "y_end", K_DOUBLE, OFF(y_end), "1", -1e6, 1e6, NULL, "units",
     "scan window end along y (exclusive; default: whole cell)"},
    {"scan", "step", K_DOUBLE, OFF(step), "0.2", 1e-4, 1e4, NULL, "Angstrom", "probe step"},
    {"scan", "positions", K_STRING, OFF(positions), "", 0, 0, NULL, "path",
     "probe positions instead of the grid: a text file of 'x y' lines in Angstrom inside the cell ('#' comments); "
     "relative to the config file; the outputs then have one probe axis (in file order) instead of scan_y x scan_x, "
     "and /axes/probe_x, /axes/probe_y"},
    {"detector", "ring_width", K_DOUBLE, OFF(ring_width), "1", 0.01, 1000, NULL, "mrad",
     "width of the annular rings of the 3D output"},
    {"detector", "save_3d", K_BOOL, OFF(opt.save_3d), "true", 0, 0, NULL, "-",
     "write the ring output /rings (false: the rings are not recorded at all, which saves their memory, GPU "
     "transfers and checkpoint space)"},
    {"detector", "save_4d", K_BOOL, OFF(opt.save_4d), "false", 0, 0, NULL, "-",
     "write full diffraction patterns /cbed (large)"},
    {"detector", "probe_block", K_INT_AUTO, OFF(opt.probe_block), "auto", 1, 1e9, NULL, "probes",
     "4D patterns (save_4d) streamed to the output in blocks of this many of a rank's probes, every configuration "
     "of a block computed before it is written, so that the result may be many times the memory (auto: one block "
     "of all the rank's probes when they fit [compute] max_memory, else the largest block that fits; "
     "docs/output.md)"},
    {"detector", "cbed_max_angle", K_DOUBLE, OFF(cbed_max_angle), "0", 0, 1e4, NULL, "mrad",
     "4D patterns and PACBED cropped to a centred square of this half-width (0: the whole band-limited pattern)"},
    {"detector", "cbed_bin", K_INT, OFF(cbed_bin), "1", 1, 64, NULL, "-",
     "4D patterns and PACBED binned by this factor along each axis after cropping (a remainder of fewer pixels "
     "is dropped from both ends alike); /axes/cbed_qx_mrad, _qy_ give each bin's centre"},
    {"detector", "cbed_square_q", K_INT, OFF(cbed_square_q), "0", 0, 8, NULL, "-",
     "N >= 1: 4D patterns and PACBED on equal q steps along x and y, the finer of the cell's two divided by N (times "
     "cbed_bin), for tools with one Q pixel size (py4DSTEM, hyperspy): each detector pixel's intensity goes whole "
     "into the square bin nearest its angle, so every pattern keeps its sum; bins between the cell's beams stay "
     "empty; a beam sits at most a quarter of the finer step off its angle with N = 2 (a virtual detector within "
     "1%), half of it with N = 1 (within about 2%). 0: the cell's own steps, 1/cell_x and 1/cell_y (equal for a "
     "square cell; docs/output.md)"},
    {"detector", "save_pacbed", K_BOOL, OFF(opt.save_pacbed), "false", 0, 0, NULL, "-",
     "write /pacbed: the diffraction pattern averaged over every probe and configuration (position-averaged "
     "CBED), without storing 4D patterns"},
    {"detector", "save_dpc", K_BOOL, OFF(opt.save_dpc), "false", 0, 0, NULL, "-",
     "write the centre-of-mass DPC images /dpc_com_x, /dpc_com_y"},
    {"detector", "segments", K_INT, OFF(segments), "0", 0, 64, NULL, "-",
     "a segmented detector: each of segment_rings rings between segment_inner and segment_outer divided into this "
     "many azimuthal segments (at least 2; 0: none), written as /segments with its DPC /dpc_segments_x, _y"},
    {"detector", "segment_inner", K_DOUBLE, OFF(segment_inner), "0", 0, 1e4, NULL, "mrad",
     "inner angle of the segmented detector"},
    {"detector", "segment_outer", K_DOUBLE, OFF(segment_outer), "0", 0, 1e4, NULL, "mrad",
     "outer angle of the segmented detector (exclusive; at most the largest simulated angle)"},
    {"detector", "segment_rings", K_INT, OFF(segment_rings), "1", 1, 64, NULL, "-",
     "rings of equal width the segmented detector is divided into radially"},
    {"detector", "segment_rotation", K_DOUBLE, OFF(segment_rotation), "0", -360, 360, NULL, "deg",
     "azimuth where segment 0 begins, from +x towards +y; segment s covers [rotation + s 360/N, rotation + (s+1) "
     "360/N)"},
    {"hrtem", "objective_aperture", K_DOUBLE, OFF(opt.objective_aperture_mrad), "0", 0, 1e4, NULL, "mrad",
     "hrtem: semi-angle of the objective aperture (hard edge, centred on the optical axis); 0: none (the band "
     "limit)"},
    {"output", "file", K_STRING, OFF(output_file), "stemsim_output.h5", 0, 0, NULL, "path",
     "HDF5 result, relative to the current directory; written to <file>.XXXXXX.incomplete (created exclusively) and "
     "renamed on success; never one of the inputs"},
    {"output", "overwrite", K_BOOL, OFF(overwrite), "false", 0, 0, NULL, "-",
     "replace an existing output file (a regular file only); false: a file that appears meanwhile is never replaced"},
    {"output", "save_exit_wave", K_BOOL, OFF(opt.save_exit_wave), "false", 0, 0, NULL, "-",
     "hrtem: write the exit wave /exit_wave (the configurations' mean complex wave, float32 [..][ny][nx][2]: "
     "real, imaginary)"},
    {"output", "standard_errors", K_BOOL, OFF(opt.standard_errors), "true", 0, 0, NULL, "-",
     "with two or more frozen-phonon configurations, write each image, ring, DPC, segment and total-intensity "
     "value's standard error over the configurations under /standard_error (docs/accuracy.md: How accurate is my "
     "simulation?); false saves their memory (16 bytes per value)"},
    {"output", "save_potential", K_BOOL, OFF(opt.save_potential), "false", 0, 0, NULL, "-",
     "write /potential: every configuration's potential slices as the transmission functions use them (float32 "
     "[configuration][slice][ny][nx], V Angstrom: the pixel averaging of the lookup undone, so the point values of the "
     "projected potential), to reuse with "
     "[simulation] potential_file (Prismatic's -sp / -ips); a [series] or checkpointed campaign writes one dataset "
     "per sample tilt, /potential_tilts/tilt_<t> (docs/campaigns.md); with a distributed FFT the slices are built "
     "whole for the file (estimated FFTs)"},
    {"output", "save_smatrix", K_BOOL, OFF(opt.save_smatrix), "false", 0, 0, NULL, "-",
     "prism: write /smatrix, every configuration's compact S-matrix (float32 [configuration][beam][cy][cx][2]: "
     "each beam's exit wave cut to the band-limited Fourier box and transformed back, real and imaginary) with the "
     "beams' Fourier indices "
     "/smatrix_beams (int32 [beam][2]: kx, ky), to reuse with [simulation] smatrix_file (Prismatic's -sm / -ism); "
     "each configuration's is kept in a temporary file beside the output until the end; a [series] or "
     "checkpointed campaign writes one dataset per sample tilt, /smatrix_tilts/tilt_<t>, keeping each unit's in "
     "its checkpoint (docs/campaigns.md)"},
    {"output", "layout", K_ENUM, OFF(opt.layout_emd), "stemsim", 0, 0, "stemsim|emd", "-",
     "stemsim: this program's layout (see Output file); emd: Prismatic 2.0's EMD tree, which py4DSTEM "
     "(py4DSTEM.read) and scripts written for Prismatic open unchanged: /4DSTEM_simulation/data/realslices/"
     "annular_detector_depthNNNN (the HAADF image, else the first [images] range; each other range as "
     "..._<name>), virtual_detector_depthNNNN (rings), DPC_CoM_depthNNNN, datacubes/CBED_array_depthNNNN, x before "
     "y, series points as _dfNNNN (and _txNNNN, _tyNNNN, _bxNNNN, _byNNNN), depths as depthNNNN; converted from "
     "the finished native file on rank 0 before the output is published (PACBED, segments, standard errors and /axes "
     "kept under "
     "/stemsim); hrtem as realslices/HRTEM ([Nx][Ny][tilts], Prismatic's), cbed and [scan] positions with one "
     "probe axis as Prismatic's arbitrary probes ([n_probes][1]; see Output file)"},
    {"output", "checkpoint", K_ENUM, OFF(checkpoint), "auto", 0, 0, "auto|true|false", "-",
     "store each finished unit of work (tilt point x configuration) durably in checkpoint_dir, so that the same "
     "command, run again after a kill, time limit or preemption, continues where it stopped (auto: on for [series] "
     "campaigns); --restart starts over"},
    {"output", "checkpoint_dir", K_STRING, OFF(checkpoint_dir), "", 0, 0, NULL, "path",
     "the checkpoint directory (default <file>.checkpoint); on the same shared file system as the output: every "
     "rank writing probes reads it back at the end; removed once the output is published"},
    {"output", "checkpoint_interval", K_DOUBLE, OFF(checkpoint_interval), "300", 0, 1e7, NULL, "s",
     "how often a checkpointed campaign stores its running sums (every series point's exact sums and sums of squares, "
     "with the set of units they hold) in checkpoint_dir: after the first round of units this many seconds after the "
     "last store (0: after every round); a SIGTERM, SIGINT, SIGUSR1 (Slurm's warning signal) or the end stores too, "
     "so a kill -9 loses at most this long; the checkpoint grows with the points, not the units (docs/campaigns.md)"},
    {"output", "depths", K_STRING, OFF(depths), "", 0, 0, NULL, "Angstrom",
     "thickness series (every algorithm): every output channel recorded at each of these depths below the entrance "
     "surface (a list 'a b c' or a range start:step:stop, increasing), each rounded to the nearest slice boundary "
     "(reported); the output gains a depth axis after the [series] axes; the waves stop at the deepest one; runs as a "
     "campaign; prism keeps an S-matrix per depth (memory: depths x the S-matrix) and runs its output step on each; "
     "hrtem records its exit wave and image at each (on the distributed FFT too)"},
    {"output", "depth_every", K_INT, OFF(depth_every), "0", 0, 100000, NULL, "slices",
     "thickness series every this many slices (and at the exit surface), instead of depths; 0: off"},
    {"series", "tilt_x", K_STRING, OFF(series_tilt_x), "", 0, 0, NULL, "deg",
     "tilt series about x: a list 'a b c' or an inclusive range start:step:stop (-60:3:60 is 41 tilts); each tilt "
     "rotates the model as [sample] tilt_x does (not together with it)"},
    {"series", "tilt_y", K_STRING, OFF(series_tilt_y), "", 0, 0, NULL, "deg",
     "tilt series about y, like tilt_x; with both, every (tilt_x, tilt_y) pair"},
    {"series", "beam_tilt_x", K_STRING, OFF(series_beam_tilt_x), "", 0, 0, NULL, "mrad",
     "hrtem: tilt series of the illuminating plane wave along x (a list or range, as tilt_x), each rounded to the "
     "nearest "
     "plane wave of the cell (reported), replacing [probe] beam_tilt_x; the sample's transmission functions are "
     "built once per sample tilt and configuration for all of them"},
    {"series", "beam_tilt_y", K_STRING, OFF(series_beam_tilt_y), "", 0, 0, NULL, "mrad",
     "hrtem: beam tilt series along y, like beam_tilt_x; with both, every (beam_tilt_x, beam_tilt_y) pair"},
    {"series", "defocus", K_STRING, OFF(series_defocus), "", 0, 0, NULL, "Angstrom",
     "defocus series: C10 of each point (same sign as [probe] C10, which it replaces); PRISM computes the S-matrix "
     "once per tilt and configuration for all of them"},
    {"compute", "threads", K_INT, OFF(threads), "0", 0, 4096, NULL, "-",
     "CPU worker threads per rank (0: all cores of the node divided by the ranks on it)"},
    {"compute", "batch_size", K_INT, OFF(batch_size), "1", 1, 4096, NULL, "-",
     "probes (or plane waves) per CPU worker batch: 1 wastes nothing when a rank's share is not a multiple of it "
     "(a short batch still runs whole, so that every probe meets the same FFT plan); the GPU engine sizes its "
     "batches from its memory unless this is given"},
    {"compute", "distributed_fft", K_ENUM, OFF(distributed_fft), "auto", 0, 0, "auto|on|off", "-",
     "hrtem: the ranks of a group share one wave in slabs of rows with FFTW3-MPI (each builds its own rows of every "
     "slice), for cells whose wave does not fit one rank; auto: when a group has several ranks and the serial "
     "plan exceeds max_memory; on: always (one rank too: FFTW-MPI's path; refused for the other algorithms); series, "
     "depths, checkpoints and stored potentials work with it (no PACBED yet); a grid too small to give every rank of a "
     "group rows (ceil(n / ranks) each) is refused"},
    {"compute", "max_memory", K_DOUBLE, OFF(max_memory_gib), "0", 0, 1e6, NULL, "GiB",
     "memory one rank may use (0: 80% of the smaller of physical memory and the cgroup limit (Slurm --mem, containers) "
     "divided by the ranks on the node, and at most 80% of RLIMIT_AS)"},
    {"compute", "device", K_ENUM, OFF(opt.device), "auto", 0, 0, "auto|cpu|gpu", "-",
     "engine: gpu when one is visible and stemsim was built with CUDA, else cpu"},
    {"compute", "gpus_per_rank", K_INT, OFF(opt.gpus_per_rank), "0", 0, 64, NULL, "-",
     "GPUs driven by each rank (0: visible GPUs split over the ranks of a node)"},
    {"compute", "streams_per_gpu", K_INT, OFF(opt.streams_per_gpu), "2", 1, 32, NULL, "-",
     "CUDA streams (and host worker threads) per GPU"},
    {"compute", "memory_mode", K_ENUM, OFF(opt.memory_mode), "auto", 0, 0, "auto|single|streaming", "-",
     "GPU memory mode: single-transfer, streaming, or decided from the estimate"},
    {"compute", "fft_callbacks", K_ENUM, OFF(opt.fft_callbacks), "off", 0, 0, "off|on", "-",
     "GPU engine: on does the transmission and propagator multiplies of every slice inside cuFFT's loads "
     "(LTO callbacks, linked when the plans are made; an error if cuFFT cannot) instead of as separate kernels. "
     "Off by default: measured on an H100 with CUDA 13's cuFFT, the callback FFTs are slower than the separate "
     "kernels (1000^2, batch 8: 2.0x a bare FFT pair per slice against 1.4x) and linking takes ~1 s per stream"},
    {"compute", "gpu_slices", K_ENUM, OFF(opt.gpu_slices), "auto", 0, 0, "cufft|fused|auto", "-",
     "GPU engine, multislice, the S-matrix step and HRTEM: cufft runs every slice as batched cuFFT transforms "
     "with the multiplies as separate kernels (or in cuFFT's loads, fft_callbacks); fused takes each slice in "
     "two passes of fused FFT kernels with the transmission and propagator multiplies inside: cuFFTDx's "
     "compile-time sizes where both grid sides are among them (256, 512, 1000, 1024, 2048, 4096; "
     "cuda/gpu_dx_slice.cu, in a build with NVIDIA MathDx for sm_90), else stemsim's own kernels where both "
     "sides are 7-smooth and at most 4096, else cuFFT. auto (the default) takes the cuFFTDx kernels where they "
     "cover the grid and cufft elsewhere: on an H200 they are 1.3-1.7x faster per slice than cufft at every "
     "size compiled, stemsim's own kernels slower at most sizes (benchmarks/results/FUSED_SLICE.md). Results "
     "agree within ~2e-6 relative"},
    {"compute", "gpu_deterministic", K_ENUM, OFF(opt.gpu_deterministic), "on", 0, 0, "off|on", "-",
     "GPU engine: on adds every sum in an order fixed by the job alone (detector rings, images, DPC and segments "
     "in fixed pixel tiles instead of float atomics; batched cuFFT plans, cuBLAS workspaces and PRISM output tiles "
     "the same whatever the rank's share, a tile cut by the share computed whole), so a job gives the same bits run "
     "after run, resumed or not, and on 1, 2 or 3 ranks sharing a GPU (with fp_groups fixed); off: float atomics, "
     "whose order varies (~1e-8 between runs). The cost of on: benchmarks/gpu/device_reproducibility.sh, "
     "docs/parallel.md, GPU engine"},
    {"compute", "fp_groups", K_INT, OFF(fp_groups), "0", 0, 1000000, NULL, "-",
     "rank groups over which frozen-phonon configurations are spread (0: automatic)"},
    {"compute", "fft_planning", K_ENUM, OFF(opt.fft_planning), "auto", 0, 0, "estimate|measure|auto", "-",
     "FFTW planning of the CPU engine. auto: measured plans (FFTW_MEASURE, often 1.2-7x faster FFTs than estimate) "
     "for each FFT shape, timed once per user and machine by rank 0 and kept in the wisdom cache ([compute] "
     "fft_cache; the first run states what measuring cost), every rank planning from the same wisdom: bit-identical "
     "across rank counts and between runs that share the cache; the distributed FFT estimates. measure: the same, and "
     "the distributed FFT measured too (not cached). estimate: FFTW_ESTIMATE, the same bits on any run of this build "
     "on any machine with no cache"},
    {"compute", "fft_wisdom", K_STRING, OFF(fft_wisdom), "", 0, 0, NULL, "path",
     "with fft_planning = measure: FFTW wisdom file (relative to the working directory, like [output] file); "
     "a cache: read when it exists, shapes it lacks measured by rank 0 and added (its entries are never changed; "
     "replaced atomically), else created. Runs sharing it are bit-identical. Its hash is in the output's plan text; "
     "given, it replaces the wisdom cache"},
    {"compute", "fft_cache", K_STRING, OFF(fft_cache), "auto", 0, 0, NULL, "path",
     "wisdom cache of measured FFT plans (fft_planning = auto or measure): a directory with one file per FFT shape "
     "and machine, published whole and never replaced; auto: $STEMSIM_FFT_CACHE (a directory, or off), else "
     "$XDG_CACHE_HOME/stemsim, else ~/.cache/stemsim; off: measured afresh by every run (not reproducible between "
     "runs). A damaged or foreign file, a link, a directory others may write are ignored with a warning. The "
     "wisdom's hash is in the output's plan text"},
    {"compute", "node_shared", K_BOOL, OFF(node_shared), "true", 0, 0, NULL, "-",
     "the ranks of a group on one node keep one copy of the transmission functions and of the PRISM S-matrix "
     "in shared memory (MPI-3 windows; each rank writes its share in place, only nodes exchange); false: one "
     "copy per rank, exchanged over MPI. Needs each node's ranks consecutive (mpirun's default mapping)"},
    {"compute", "node_queue", K_ENUM, OFF(opt.node_queue), "auto", 0, 0, "off|auto", "-",
     "CPU engine: the ranks of a group on one node take work from queues in node-shared memory, whichever "
     "thread of whichever rank is free: multislice probes (into the node's rows of the results) and the "
     "transmission functions' build below one slice (bands of rows of the atoms' profiles, then the slices' "
     "FFTs); the same bits as each rank its own share, so a slow core or a few slices more than ranks no longer "
     "hold the node back. off: each rank its own probes and whole slices. The probes' queue is off with focal "
     "spread, 4D patterns streamed in blocks, a distributed FFT"},
    {"debug", "gpu_prism_output", K_ENUM, OFF(opt.gpu_prism_output), "gemm", 0, 0, "gemm|direct", "-",
     "GPU PRISM output step: batched CGEMM over probe tiles, or one direct kernel per probe (benchmarking)"},
    {"debug", "gpu_tile", K_INT, OFF(opt.gpu_tile), "0", 0, 4096, NULL, "probes",
     "force the edge of the GPU PRISM output tiles (0: chosen from the GPU's memory)"},
    {"debug", "gpu_gemm", K_ENUM, OFF(opt.gpu_gemm), "auto", 0, 0, "standard|3m|tf32|tf32x3|fp16x3|auto|fp64", "-",
     "product of the GPU PRISM output: standard (FP32 CGEMM); 3m (cublasCgemm3m; on an H100 no faster, "
     "results within 4e-8); tf32: tensor cores with TF32 inputs (10-bit mantissas, FP32 sums): 2.1x faster, "
     "images changed by 6e-5 relative RMS (benchmarks/results/GPU_LIMITS.md); tf32x3 / fp16x3: each operand "
     "split into a high and a low TF32 / FP16 part, three tensor-core products summed gpu_gemm_steps at a time "
     "(products within 4e-7 of FP64 at the paper's f = 4 shape, FP32 CGEMM 1.7e-6; fp16x3 2.6x faster than "
     "standard there, tf32x3 no faster; benchmarks/results/TF32X3.md); auto: fp16x3 for 200 beams or more where "
     "its split S-matrix (1.5x the S-matrix's memory) fits, else standard; fp64: ZGEMM on FP64 copies of the "
     "operands, the reference the others are measured against (2x the S-matrix's memory)"},
    {"debug", "gpu_gemm_steps", K_INT, OFF(opt.gpu_gemm_steps), "16", 0, 1000000, NULL, "steps",
     "split products (gpu_gemm = tf32x3 / fp16x3): the high parts' product is summed this many tensor-core "
     "steps (8 TF32 or 16 FP16 products deep) at a time, each sum added to the FP32 result with "
     "round-to-nearest by cuBLAS's epilogue; the tensor cores' own sums round toward zero, so the images' "
     "bias grows with this length (paper case, f = 4: 1.0e-6 to 1.8e-6 at 24 steps, 2.6e-6 to 3.5e-6 at 48; "
     "0: the whole K in one sum, 1e-5 to 2e-5 low; benchmarks/results/TF32X3.md)"},
    {"debug", "gpu_gemm_check", K_BOOL, OFF(opt.gpu_gemm_check), "false", 0, 0, NULL, "-",
     "after each GPU PRISM output step, time the last tile's CGEMMs again alone and log their rate beside the "
     "rate inside the step (-v; benchmarking)"},
    {"debug", "gpu_prism_resident", K_ENUM, OFF(opt.gpu_prism_resident), "auto", 0, 0, "off|auto", "-",
     "one-rank groups keep the PRISM S-matrix in device memory between its steps when it fits "
     "(auto); off always copies it through the host (for comparison)"},
    {"debug", "gpu_transmission", K_ENUM, OFF(opt.gpu_transmission), "auto", 0, 0, "off|auto", "-",
     "the GPU engine builds the transmission functions on its first GPU (auto); off builds them on the CPU "
     "(for comparison; results differ at the 1e-7 level from the order of float sums)"},
    {"debug", "ranks_per_node", K_INT, OFF(ranks_per_node), "0", 0, 1000000, NULL, "ranks",
     "node-shared memory as if each node held this many consecutive ranks of a group (0: the real nodes); "
     "tests the exchange between nodes on one machine"},
    {"debug", "sum_piece_bytes", K_INT, OFF(sum_piece_bytes), "0", 0, 1e9, NULL, "bytes",
     "the frozen-phonon groups of a node add their sums through shared memory in pieces of this size "
     "(0: 64 MiB shared by the node's ranks, at least 1 MiB each); tests the pipeline of pieces"},
    {"debug", "smatrix_round_beams", K_INT, OFF(opt.smatrix_round_beams), "0", 0, 1000000, NULL, "beams",
     "PRISM's S-matrix step computes and exchanges its beams in rounds of this many beams per rank (0: about a "
     "tenth of the rank's S-matrix tile, at least a batch per thread); tests the exchange"},
};
const int stem_config_n_keys = (int)(sizeof stem_config_keys / sizeof stem_config_keys[0]);
_Static_assert(sizeof stem_config_keys / sizeof stem_config_keys[0] <= sizeof((stem_config *)0)->seen,
               "stem_config.seen is too small");

const key_spec *stem_config_find_key(const char *section, const char *key)
{
    for (int i = 0; i < stem_config_n_keys; i++)
        if (!strcasecmp(stem_config_keys[i].section, section) && !strcasecmp(stem_config_keys[i].key, key))
            return &stem_config_keys[i];
    return NULL;
}

/* The section of a key name, if any section has it (NULL: none). */
const char *stem_config_key_section(const char *key)
{
    for (int i = 0; i < stem_config_n_keys; i++)
        if (!strcasecmp(stem_config_keys[i].key, key)) return stem_config_keys[i].section;
    return NULL;
}
