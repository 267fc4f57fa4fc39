/* config.ini parsing (inih) into stem_config through one table of keys:
 * the table gives each key's type, default, bounds, unit and documentation,
 * so parsing, validation, "did you mean" and the reference never disagree.
 * A key the engines read is parsed straight into stem_config.opt (options.h),
 * which the plan copies whole: its row here and its field there are all it needs. */
#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <limits.h>
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config.h"
#include "../src/series.h"
#include "input_file.h"

/* K_INT_AUTO: an int that may also be "auto", stored as 0 (its numbers start at 1) */
typedef enum { K_DOUBLE, K_INT, K_LONG, K_BOOL, K_STRING, K_ENUM, K_INT_AUTO } key_type;

typedef struct {
    const char *section, *key;
    key_type type;
    size_t offset;
    const char *def;     /* default, parsed like user input ("" = none) */
    double min, max;     /* inclusive bounds for numbers */
    const char *choices; /* K_ENUM: "a|b|c" -> 0,1,2 */
    const char *unit, *doc;
} key_spec;

#define OFF(field) offsetof(stem_config, field)
#define BIG 1e300

static const key_spec key_table[] = {
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
    {"probe", "C10", K_DOUBLE, OFF(aberr_c[STEM_C10]), "0", -1e15, 1e15, NULL, "Angstrom",
     "defocus C1; negative values focus the probe below the entrance surface (underfocus); = abTEM's C10 = -(abTEM's "
     "defocus): chi += 2 pi/lambda C10/2 theta^2"},
    {"probe", "C12", K_DOUBLE, OFF(aberr_c[STEM_C12]), "0", -1e15, 1e15, NULL, "Angstrom",
     "two-fold astigmatism A1: chi += 2 pi/lambda C12/2 theta^2 cos(2 (phi - phi12))"},
    {"probe", "phi12", K_DOUBLE, OFF(aberr_phi_deg[STEM_C12]), "0", -360, 360, NULL, "deg", "azimuth of C12"},
    {"probe", "C21", K_DOUBLE, OFF(aberr_c[STEM_C21]), "0", -1e15, 1e15, NULL, "Angstrom",
     "axial coma B2: chi += 2 pi/lambda C21/3 theta^3 cos(phi - phi21)"},
    {"probe", "phi21", K_DOUBLE, OFF(aberr_phi_deg[STEM_C21]), "0", -360, 360, NULL, "deg", "azimuth of C21"},
    {"probe", "C23", K_DOUBLE, OFF(aberr_c[STEM_C23]), "0", -1e15, 1e15, NULL, "Angstrom",
     "three-fold astigmatism A2: chi += 2 pi/lambda C23/3 theta^3 cos(3 (phi - phi23))"},
    {"probe", "phi23", K_DOUBLE, OFF(aberr_phi_deg[STEM_C23]), "0", -360, 360, NULL, "deg", "azimuth of C23"},
    {"probe", "C30", K_DOUBLE, OFF(aberr_c[STEM_C30]), "0", -1e15, 1e15, NULL, "Angstrom",
     "spherical aberration Cs = C3 (1 mm = 1e7 Angstrom): chi += 2 pi/lambda C30/4 theta^4"},
    {"probe", "C32", K_DOUBLE, OFF(aberr_c[STEM_C32]), "0", -1e15, 1e15, NULL, "Angstrom",
     "star aberration S3: chi += 2 pi/lambda C32/4 theta^4 cos(2 (phi - phi32))"},
    {"probe", "phi32", K_DOUBLE, OFF(aberr_phi_deg[STEM_C32]), "0", -360, 360, NULL, "deg", "azimuth of C32"},
    {"probe", "C34", K_DOUBLE, OFF(aberr_c[STEM_C34]), "0", -1e15, 1e15, NULL, "Angstrom",
     "four-fold astigmatism A3: chi += 2 pi/lambda C34/4 theta^4 cos(4 (phi - phi34))"},
    {"probe", "phi34", K_DOUBLE, OFF(aberr_phi_deg[STEM_C34]), "0", -360, 360, NULL, "deg", "azimuth of C34"},
    {"probe", "C41", K_DOUBLE, OFF(aberr_c[STEM_C41]), "0", -1e15, 1e15, NULL, "Angstrom",
     "fourth-order axial coma B4: chi += 2 pi/lambda C41/5 theta^5 cos(phi - phi41)"},
    {"probe", "phi41", K_DOUBLE, OFF(aberr_phi_deg[STEM_C41]), "0", -360, 360, NULL, "deg", "azimuth of C41"},
    {"probe", "C43", K_DOUBLE, OFF(aberr_c[STEM_C43]), "0", -1e15, 1e15, NULL, "Angstrom",
     "three-lobe aberration D4: chi += 2 pi/lambda C43/5 theta^5 cos(3 (phi - phi43))"},
    {"probe", "phi43", K_DOUBLE, OFF(aberr_phi_deg[STEM_C43]), "0", -360, 360, NULL, "deg", "azimuth of C43"},
    {"probe", "C45", K_DOUBLE, OFF(aberr_c[STEM_C45]), "0", -1e15, 1e15, NULL, "Angstrom",
     "five-fold astigmatism A4: chi += 2 pi/lambda C45/5 theta^5 cos(5 (phi - phi45))"},
    {"probe", "phi45", K_DOUBLE, OFF(aberr_phi_deg[STEM_C45]), "0", -360, 360, NULL, "deg", "azimuth of C45"},
    {"probe", "C50", K_DOUBLE, OFF(aberr_c[STEM_C50]), "0", -1e15, 1e15, NULL, "Angstrom",
     "fifth-order spherical aberration C5 (1 mm = 1e7 Angstrom): chi += 2 pi/lambda C50/6 theta^6"},
    {"probe", "C52", K_DOUBLE, OFF(aberr_c[STEM_C52]), "0", -1e15, 1e15, NULL, "Angstrom",
     "fifth-order star aberration S5: chi += 2 pi/lambda C52/6 theta^6 cos(2 (phi - phi52))"},
    {"probe", "phi52", K_DOUBLE, OFF(aberr_phi_deg[STEM_C52]), "0", -360, 360, NULL, "deg", "azimuth of C52"},
    {"probe", "C54", K_DOUBLE, OFF(aberr_c[STEM_C54]), "0", -1e15, 1e15, NULL, "Angstrom",
     "rosette aberration R5: chi += 2 pi/lambda C54/6 theta^6 cos(4 (phi - phi54))"},
    {"probe", "phi54", K_DOUBLE, OFF(aberr_phi_deg[STEM_C54]), "0", -360, 360, NULL, "deg", "azimuth of C54"},
    {"probe", "C56", K_DOUBLE, OFF(aberr_c[STEM_C56]), "0", -1e15, 1e15, NULL, "Angstrom",
     "six-fold astigmatism A5: chi += 2 pi/lambda C56/6 theta^6 cos(6 (phi - phi56))"},
    {"probe", "phi56", K_DOUBLE, OFF(aberr_phi_deg[STEM_C56]), "0", -360, 360, NULL, "deg", "azimuth of C56"},
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
    {"compute", "gpu_slices", K_ENUM, OFF(opt.gpu_slices), "cufft", 0, 0, "cufft|fused", "-",
     "GPU engine, multislice, the S-matrix step and HRTEM: cufft runs every slice as batched cuFFT transforms "
     "with the multiplies as separate kernels (or in cuFFT's loads, fft_callbacks); fused takes each slice in "
     "two passes of stemsim's own FFT kernels with the transmission and propagator multiplies inside "
     "(cuda/gpu_fused_slice.cu) where both grid sides are 7-smooth and at most 4096 (cuFFT elsewhere; results "
     "within ~4e-6 relative of cufft's). Off by default: slower than cufft on an H200 at most sizes "
     "(benchmarks/results/FUSED_SLICE.md)"},
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
    {"debug", "gpu_prism_output", K_ENUM, OFF(opt.gpu_prism_output), "gemm", 0, 0, "gemm|direct", "-",
     "GPU PRISM output step: batched CGEMM over probe tiles, or one direct kernel per probe (benchmarking)"},
    {"debug", "gpu_tile", K_INT, OFF(opt.gpu_tile), "0", 0, 4096, NULL, "probes",
     "force the edge of the GPU PRISM output tiles (0: chosen from the GPU's memory)"},
    {"debug", "gpu_gemm", K_ENUM, OFF(opt.gpu_gemm), "standard", 0, 0, "standard|3m|tf32|tf32x3|fp16x3", "-",
     "CGEMM of the GPU PRISM output: 3m (cublasCgemm3m; on an H100 no faster, results within 4e-8); tf32: "
     "tensor cores with TF32 inputs (10-bit mantissas, FP32 sums): on an H100 2.1x faster, images changed by "
     "6e-5 relative RMS (benchmarks/results/GPU_LIMITS.md); tf32x3 / fp16x3: each operand split into a high "
     "and a low TF32 / FP16 part, three tensor-core products: on the paper's f = 4 case output 1.6x / 2.3x "
     "faster, images within 4e-5 / 2e-5 (the tensor cores' sums round toward zero; "
     "benchmarks/results/TF32X3.md)"},
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
    {"debug", "smatrix_round_beams", K_INT, OFF(opt.smatrix_round_beams), "0", 0, 1000000, NULL, "beams",
     "PRISM's S-matrix step computes and exchanges its beams in rounds of this many beams per rank (0: about a "
     "tenth of the rank's S-matrix tile, at least a batch per thread); tests the exchange"},
};
#define N_KEYS ((int)(sizeof key_table / sizeof key_table[0]))
_Static_assert(sizeof key_table / sizeof key_table[0] <= sizeof((stem_config *)0)->seen,
               "stem_config.seen is too small");

typedef struct {
    stem_config *cfg;
    const char *source; /* file name for messages */
    int allow_repeat;   /* --set overrides may replace file values */
    int err;            /* first status */
    char msg[1024];     /* first message (printed with its line) */
} parse_ctx;

int stem_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63) return 99;
    int d[64][64];
    for (size_t i = 0; i <= la; i++) d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            int sub = d[i - 1][j - 1] + (tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]));
            int del = d[i - 1][j] + 1, ins = d[i][j - 1] + 1;
            d[i][j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
    return d[la][lb];
}

static const key_spec *find_key(const char *section, const char *key)
{
    for (int i = 0; i < N_KEYS; i++)
        if (!strcasecmp(key_table[i].section, section) && !strcasecmp(key_table[i].key, key)) return &key_table[i];
    return NULL;
}

/* The closest "section.key" to what was typed, for the error message. */
static void suggest_key(const char *section, const char *key, char *out, size_t n)
{
    int best = 1 << 30;
    out[0] = 0;
    for (int i = 0; i < N_KEYS; i++) {
        int d = stem_edit_distance(key, key_table[i].key) + (strcasecmp(section, key_table[i].section) ? 2 : 0);
        if (d < best) {
            best = d;
            snprintf(out, n, "[%s] %s", key_table[i].section, key_table[i].key);
        }
    }
    if (best > 4 + (int)strlen(key) / 2) out[0] = 0;
}

static int set_error(parse_ctx *c, int code, const char *fmt, const char *a, const char *b, const char *d)
{
    if (!c->err) {
        c->err = code;
        snprintf(c->msg, sizeof c->msg, fmt, a, b, d);
    }
    return 0; /* tells inih this line failed */
}

/* strtod also takes hexadecimal ("0x10") and reads "010" as ten where a
 * reader may expect octal eight; neither belongs in a config file. */
static int plain_decimal(const char *s)
{
    while (isspace((unsigned char)*s)) s++;
    if (*s == '+' || *s == '-') s++;
    return !(s[0] == '0' && (s[1] == 'x' || s[1] == 'X' || isdigit((unsigned char)s[1])));
}

static int parse_double(const char *s, double *out)
{
    char *end;
    if (!plain_decimal(s)) return -1;
    errno = 0;
    double v = strtod(s, &end);
    while (isspace((unsigned char)*end)) end++;
    if (errno == ERANGE && fabs(v) < DBL_MIN) errno = 0; /* 1e-310: finite, below DBL_MIN (it underflows to nothing) */
    if (end == s || *end || errno == ERANGE || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

/* What is wrong with a value that is not a number, when it can be told: a unit after the
 * number ("200kV"), a decimal comma ("0,1"). */
static int not_a_number(const key_spec *k, const char *value, char *why, size_t nwhy)
{
    char *end;
    strtod(value, &end);
    const char *rest = end;
    while (isspace((unsigned char)*rest)) rest++;
    if (end != value && *rest == ',' && isdigit((unsigned char)rest[1]))
        return snprintf(why, nwhy, "is not a finite number: the decimal separator is '.', not ','"), -1;
    if (end != value && isalpha((unsigned char)*rest) && strcmp(k->unit, "-"))
        return snprintf(why, nwhy,
                        "is not a finite number: '%.20s' follows it (values carry no unit; this one is in %s)", rest,
                        k->unit),
               -1;
    return snprintf(why, nwhy, "is not a finite number"), -1;
}

/* Why a bound is where it is, where the number alone would not say. */
static const char *range_reason(const key_spec *k, double v)
{
    if (!strcmp(k->key, "energy") && v < k->min)
        return ": below 10 keV multislice's high-energy approximations (forward scattering, paraxial propagation) "
               "fail; at 1 keV a 0.1 Angstrom pixel's band limit lies beyond 1 rad";
    return "";
}

/* A 64-bit integer read as one (seed): through a double, values above 2^53 would be
 * rounded to a neighbour and give other displacements without a word. */
static int parse_long(const key_spec *k, const char *value, long *field, char *why, size_t nwhy)
{
    char *end;
    errno = 0;
    long long i = strtoll(value, &end, 10);
    while (isspace((unsigned char)*end)) end++;
    if (end == value || *end) {
        double v;
        if (parse_double(value, &v) || v != floor(v)) return snprintf(why, nwhy, "must be an integer"), -1;
        if (fabs(v) > 9007199254740992.0) /* 2^53: "1e19" cannot say which integer it means */
            return snprintf(why, nwhy, "must be written as an integer (digits) above 2^53"), -1;
        i = (long long)v;
    } else if (errno == ERANGE || i > LONG_MAX || i < LONG_MIN) {
        return snprintf(why, nwhy, "does not fit a 64-bit integer (at most %ld)", LONG_MAX), -1;
    }
    if ((double)i < k->min || (double)i > k->max)
        return snprintf(why, nwhy, "is out of range [%.0f, %.0f]", k->min, k->max), -1;
    *field = (long)i;
    return 0;
}

static int parse_value(const key_spec *k, const char *value, void *field, char *why, size_t nwhy)
{
    double v;
    switch (k->type) {
    case K_STRING:
        if (strlen(value) >= STEM_PATH_MAX)
            return snprintf(why, nwhy, "is longer than %d characters", STEM_PATH_MAX - 1), -1;
        if (!value[0]) return snprintf(why, nwhy, "is empty"), -1;
        for (const char *p = value; *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7f)
                return snprintf(why, nwhy, "contains a control character (byte 0x%02x at position %d)",
                                (unsigned char)*p, (int)(p - value) + 1),
                       -1;
        strcpy((char *)field, value);
        return 0;
    case K_BOOL:
        if (!strcasecmp(value, "true") || !strcasecmp(value, "yes") || !strcmp(value, "1") || !strcasecmp(value, "on"))
            *(int *)field = 1;
        else if (!strcasecmp(value, "false") || !strcasecmp(value, "no") || !strcmp(value, "0") ||
                 !strcasecmp(value, "off"))
            *(int *)field = 0;
        else
            return snprintf(why, nwhy, "must be true or false"), -1;
        return 0;
    case K_ENUM: {
        int idx = 0;
        const char *p = k->choices;
        size_t len = strlen(value);
        while (*p) {
            const char *bar = strchr(p, '|');
            size_t n = bar ? (size_t)(bar - p) : strlen(p);
            if (n == len && !strncasecmp(p, value, n)) return *(int *)field = idx, 0;
            idx++;
            p += n + (bar ? 1 : 0);
        }
        return snprintf(why, nwhy, "must be one of %s", k->choices), -1;
    }
    default: break;
    }
    if (k->type == K_INT_AUTO && !strcasecmp(value, "auto")) return *(int *)field = 0, 0;
    if (k->type == K_INT_AUTO && (!plain_decimal(value) || parse_double(value, &v)))
        return snprintf(why, nwhy, "must be auto or an integer in [%g, %g]", k->min, k->max), -1;
    if (!plain_decimal(value))
        return snprintf(why, nwhy, "is not a plain decimal number (hexadecimal and leading zeros are refused)"), -1;
    if (parse_double(value, &v)) return not_a_number(k, value, why, nwhy);
    if (v < k->min || v > k->max)
        return snprintf(why, nwhy, "is out of range [%g, %g]%s%s%s%s", k->min, k->max, strcmp(k->unit, "-") ? " " : "",
                        strcmp(k->unit, "-") ? k->unit : "", k->type == K_INT_AUTO ? " (or auto)" : "",
                        range_reason(k, v)),
               -1;
    if (k->type == K_LONG) return parse_long(k, value, (long *)field, why, nwhy);
    if (k->type == K_DOUBLE) {
        *(double *)field = v;
    } else {
        if (v != floor(v)) return snprintf(why, nwhy, "must be an integer"), -1;
        if (k->type != K_LONG)
            *(int *)field = (int)v;
        else
            *(long *)field = (long)v;
    }
    return 0;
}

/* The section of a key name, if any section has it (NULL: none). */
static const char *key_section_of(const char *key)
{
    for (int i = 0; i < N_KEYS; i++)
        if (!strcasecmp(key_table[i].key, key)) return key_table[i].section;
    return NULL;
}

/* [images] NAME = inner outer   (mrad) */
static int parse_image(parse_ctx *c, const char *name, const char *value)
{
    stem_config *cfg = c->cfg;
    if (strlen(name) >= STEM_IMAGE_NAME_MAX || !name[0])
        return set_error(c, STEM_ERR_CONFIG, "image name '%s' must have 1 to 31 characters%s%s", name, "", "");
    for (const char *p = name; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-')
            return set_error(c, STEM_ERR_CONFIG, "image name '%s' may contain only letters, digits, '_' and '-'%s%s",
                             name, "", "");
    int slot = -1;
    for (int i = 0; i < cfg->n_images; i++)
        if (!strcmp(cfg->images[i].name, name)) slot = i;
    if (slot >= 0 && !c->allow_repeat)
        return set_error(c, STEM_ERR_CONFIG, "duplicate image '%s' in [images]%s%s", name, "", "");
    if (slot < 0) {
        if (cfg->n_images == STEM_MAX_IMAGES)
            return set_error(c, STEM_ERR_CONFIG, "too many images in [images] (at most 16): '%s'%s%s", name, "", "");
        slot = cfg->n_images++;
    }
    char buf[256], *end;
    snprintf(buf, sizeof buf, "%s", value);
    errno = 0;
    double inner = strtod(buf, &end);
    char *rest = end;
    if (!plain_decimal(buf) || !plain_decimal(rest))
        return set_error(c, STEM_ERR_CONFIG,
                         "[images] %s = '%s': not plain decimal numbers (hexadecimal and leading zeros are refused)%s",
                         name, value, "");
    double outer = strtod(rest, &end);
    while (isspace((unsigned char)*end)) end++;
    if (rest == buf || end == rest || *end || errno || !isfinite(inner) || !isfinite(outer)) {
        const char *home = key_section_of(name); /* a key below [images] whose own section header is missing */
        if (home) {
            char msg[400];
            snprintf(msg, sizeof msg,
                     "[images] %.40s = '%.60s': %.40s is a key of [%s], not an image: is the [%s] "
                     "header missing above it?",
                     name, value, name, home, home);
            return set_error(c, STEM_ERR_CONFIG, "%s%s%s", msg, "", "");
        }
        return set_error(c, STEM_ERR_CONFIG, "[images] %s = '%s': expected two angles in mrad, 'inner outer'%s", name,
                         value, "");
    }
    if (inner < 0 || outer <= inner)
        return set_error(c, STEM_ERR_CONFIG, "[images] %s = '%s': need 0 <= inner < outer (mrad)%s", name, value, "");
    snprintf(cfg->images[slot].name, STEM_IMAGE_NAME_MAX, "%s", name);
    cfg->images[slot].inner_mrad = inner;
    cfg->images[slot].outer_mrad = outer;
    return 1;
}

static int config_handler(void *user, const char *section, const char *key, const char *value)
{
    parse_ctx *c = user;
    if (!strcasecmp(section, "images")) return parse_image(c, key, value);
    const key_spec *k = find_key(section, key);
    if (!k) {
        char hint[128], sk[300];
        suggest_key(section, key, hint, sizeof hint);
        snprintf(sk, sizeof sk, "%s", hint[0] ? "; did you mean " : "");
        if (!section[0]) return set_error(c, STEM_ERR_CONFIG, "key '%s' outside any [section]%s%s", key, sk, hint);
        char where[200];
        snprintf(where, sizeof where, "%s] %s", section, key);
        return set_error(c, STEM_ERR_CONFIG, "unknown key [%s%s%s", where, sk, hint);
    }
    int idx = (int)(k - key_table);
    if (c->cfg->seen[idx] && !c->allow_repeat)
        return set_error(c, STEM_ERR_CONFIG, "duplicate key [%s] %s%s", k->section, k->key, "");
    char why[400];
    if (parse_value(k, value, (char *)c->cfg + k->offset, why, sizeof why)) {
        char what[300];
        snprintf(what, sizeof what, "[%s] %s = '%.60s'", k->section, k->key, value);
        return set_error(c, STEM_ERR_CONFIG, "%s %s%s", what, why, "");
    }
    c->cfg->seen[idx] = 1;
    return 1;
}

void stem_config_defaults(stem_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    for (int i = 0; i < N_KEYS; i++) {
        char why[200];
        if (key_table[i].def[0])
            parse_value(&key_table[i], key_table[i].def, (char *)cfg + key_table[i].offset, why, sizeof why);
    }
}

int stem_config_given(const stem_config *cfg, const char *section, const char *key)
{
    const key_spec *k = find_key(section, key);
    return k && cfg->seen[k - key_table];
}

/* Defaults for the 2D images follow the probe angle when [images] is absent. */
static void default_images(stem_config *cfg)
{
    double a = cfg->semiangle_mrad;
    const struct {
        const char *name;
        double lo, hi;
    } d[] = {{"BF", 0, a}, {"ABF", 0.5 * a, a}, {"ADF", a, 3 * a}, {"HAADF", 3 * a, 1e9}};
    for (int i = 0; i < 4; i++) {
        snprintf(cfg->images[i].name, STEM_IMAGE_NAME_MAX, "%s", d[i].name);
        cfg->images[i].inner_mrad = d[i].lo;
        cfg->images[i].outer_mrad = d[i].hi;
    }
    cfg->n_images = 4;
}

/* Older key names of the aberrations: merged into the Krivanek coefficients. */
typedef struct {
    const char *alias, *key;
    size_t alias_offset, key_offset;
    double scale; /* key = alias * scale */
} key_alias;

static const key_alias aliases[] = {
    {"defocus", "C10", OFF(defocus), OFF(aberr_c[STEM_C10]), 1},
    {"cs", "C30", OFF(cs_mm), OFF(aberr_c[STEM_C30]), 1e7}, /* mm -> Angstrom */
    {"c5", "C50", OFF(c5_mm), OFF(aberr_c[STEM_C50]), 1e7},
    {"astigmatism", "C12", OFF(astigmatism), OFF(aberr_c[STEM_C12]), 1},
    {"astigmatism_angle", "phi12", OFF(astigmatism_angle), OFF(aberr_phi_deg[STEM_C12]), 1},
};
#define N_ALIASES (sizeof aliases / sizeof aliases[0])

static int is_alias(const key_spec *k)
{
    for (size_t i = 0; i < N_ALIASES; i++)
        if (!strcmp(k->section, "probe") && !strcmp(k->key, aliases[i].alias)) return 1;
    return 0;
}

static int merge_aliases(stem_config *cfg, const char *source)
{
    for (size_t i = 0; i < N_ALIASES; i++) {
        const key_alias *a = &aliases[i];
        if (!stem_config_given(cfg, "probe", a->alias)) continue;
        if (stem_config_given(cfg, "probe", a->key))
            return STEM_FAIL(STEM_ERR_CONFIG,
                             "%s: [probe] %s and %s are the same aberration (%s is its older name): give one", source,
                             a->alias, a->key, a->alias);
        double v = *(double *)((char *)cfg + a->alias_offset);
        *(double *)((char *)cfg + a->key_offset) = a->scale == 1 ? v : v * a->scale;
    }
    return STEM_OK;
}

/* [series] values parse, and no point is given twice (a series key and the single-run key it replaces). */
static int validate_series(const stem_config *cfg, const char *source)
{
    const struct {
        const char *text, *section, *key;
        double single;
    } pair[] = {{cfg->series_tilt_x, "sample", "tilt_x", cfg->tilt_x},
                {cfg->series_tilt_y, "sample", "tilt_y", cfg->tilt_y},
                {cfg->series_defocus, "probe", "C10", cfg->aberr_c[STEM_C10]},
                {cfg->series_beam_tilt_x, "probe", "beam_tilt_x", cfg->beam_tilt_mrad[0]},
                {cfg->series_beam_tilt_y, "probe", "beam_tilt_y", cfg->beam_tilt_mrad[1]}};
    const char *series_key[] = {"tilt_x", "tilt_y", "defocus", "beam_tilt_x", "beam_tilt_y"};
    for (int i = 0; i < 5; i++)
        if (pair[i].text[0] && pair[i].single != 0)
            return STEM_FAIL(STEM_ERR_CONFIG, "%s: [series] %s and [%s] %s (or its older name) both set it: give one",
                             source, series_key[i], pair[i].section, pair[i].key);
    if ((cfg->series_beam_tilt_x[0] || cfg->series_beam_tilt_y[0]) && cfg->algorithm != STEM_ALG_HRTEM)
        return STEM_FAIL(STEM_ERR_CONFIG,
                         "%s: [series] beam_tilt_x/_y tilt hrtem's plane wave: they need algorithm = "
                         "hrtem (a STEM probe's tilt is [probe] beam_tilt_x/_y, one per run)",
                         source);
    if (cfg->depths[0] && cfg->depth_every > 0)
        return STEM_FAIL(STEM_ERR_CONFIG, "%s: [output] depths and depth_every both choose the depths: give one",
                         source);
    int depths = cfg->depths[0] || cfg->depth_every > 0;
    if (depths && (cfg->opt.save_smatrix || cfg->opt.smatrix_file[0]))
        return STEM_FAIL(STEM_ERR_CONFIG,
                         "%s: [output] depths and %s: a stored S-matrix is the exit surface's, and a "
                         "thickness series needs the S-matrix at each depth: run without it",
                         source, cfg->opt.save_smatrix ? "[output] save_smatrix" : "[simulation] smatrix_file");
    stem_series s;
    STEM_TRY(stem_series_build(cfg, &s));
    stem_series_free(&s);
    return STEM_OK;
}

/* Checks that involve several keys. */
static int validate(stem_config *cfg, const char *source)
{
    STEM_TRY(merge_aliases(cfg, source));
    cfg->x_end_given = stem_config_given(cfg, "scan", "x_end");
    cfg->y_end_given = stem_config_given(cfg, "scan", "y_end");
    cfg->batch_size_given = stem_config_given(cfg, "compute", "batch_size");
    if (!cfg->xyz[0]) return STEM_FAIL(STEM_ERR_CONFIG, "%s: missing required key [sample] xyz", source);
    if (cfg->scan_units == STEM_SCAN_FRACTIONAL) {
        const double v[4] = {cfg->x_start, cfg->x_end, cfg->y_start, cfg->y_end};
        const char *n[4] = {"x_start", "x_end", "y_start", "y_end"};
        for (int i = 0; i < 4; i++)
            if (v[i] < 0 || v[i] > 1)
                return STEM_FAIL(STEM_ERR_CONFIG, "%s: [scan] %s = %g is outside the cell (fractional units need 0..1)",
                                 source, n[i], v[i]);
    }
    int one_wave = cfg->algorithm == STEM_ALG_HRTEM || cfg->algorithm == STEM_ALG_CBED; /* no scan window */
    if (!one_wave && cfg->x_end < cfg->x_start)
        return STEM_FAIL(STEM_ERR_CONFIG, "%s: [scan] x_end (%g) is before x_start (%g)", source, cfg->x_end,
                         cfg->x_start);
    if (!one_wave && cfg->y_end < cfg->y_start)
        return STEM_FAIL(STEM_ERR_CONFIG, "%s: [scan] y_end (%g) is before y_start (%g)", source, cfg->y_end,
                         cfg->y_start);
    if (cfg->distributed_fft == STEM_DIST_ON && cfg->algorithm != STEM_ALG_HRTEM)
        return STEM_FAIL(STEM_ERR_CONFIG,
                         "%s: [compute] distributed_fft = on: the distributed FFT shares one plane "
                         "wave over a group's ranks, so it serves algorithm = hrtem only; a %s run cannot use it "
                         "(its ranks share probes instead): remove the key or set it to auto or off",
                         source,
                         cfg->algorithm == STEM_ALG_PRISM      ? "prism"
                             : cfg->algorithm == STEM_ALG_CBED ? "cbed"
                                                               : "multislice");
    /* the default BF/ABF/ADF/HAADF are STEM detectors: an HRTEM run's band limit need not
     * reach 60 mrad, so it gets only the ranges its config names */
    if (cfg->n_images == 0 && cfg->algorithm != STEM_ALG_HRTEM) default_images(cfg);
    /* by value, not by key given: the effective config (written back and read again) holds all three */
    int cc = cfg->cc > 0, de = cfg->energy_spread > 0;
    if ((cc || de) && cfg->opt.focal_spread > 0)
        return STEM_FAIL(STEM_ERR_CONFIG,
                         "%s: [probe] focal_spread and Cc/energy_spread describe the same spread: give one", source);
    if (cc != de)
        return STEM_FAIL(STEM_ERR_CONFIG, "%s: [probe] %s needs %s as well", source, cc ? "Cc" : "energy_spread",
                         cc ? "energy_spread" : "Cc");
    if (cfg->segments == 1)
        return STEM_FAIL(STEM_ERR_CONFIG,
                         "%s: [detector] segments = 1: a segmented detector needs at least 2 segments "
                         "(0: none)",
                         source);
    if (cfg->segments > 1 && cfg->segment_outer <= cfg->segment_inner)
        return STEM_FAIL(STEM_ERR_CONFIG, "%s: [detector] segment_outer (%g mrad) must exceed segment_inner (%g mrad)",
                         source, cfg->segment_outer, cfg->segment_inner);
    int plane = cfg->algorithm == STEM_ALG_HRTEM, single = cfg->algorithm == STEM_ALG_CBED;
    if ((plane || single) && cfg->opt.source_size > 0)
        return STEM_FAIL(STEM_ERR_CONFIG, "%s: [probe] source_size blurs a scan: not with algorithm = %s", source,
                         plane ? "hrtem" : "cbed");
    if ((plane || single) && cfg->positions[0])
        return STEM_FAIL(STEM_ERR_CONFIG, "%s: [scan] positions: algorithm = %s has %s", source,
                         plane ? "hrtem" : "cbed", plane ? "no probe" : "one probe, at [scan] x_start, y_start");
    int prism = cfg->algorithm == STEM_ALG_PRISM;
    if ((cfg->opt.save_smatrix || cfg->opt.smatrix_file[0]) && !prism)
        return STEM_FAIL(STEM_ERR_CONFIG, "%s: %s needs algorithm = prism (only PRISM has an S-matrix)", source,
                         cfg->opt.save_smatrix ? "[output] save_smatrix" : "[simulation] smatrix_file");
    if (cfg->opt.smatrix_file[0] && cfg->opt.potential_file[0])
        return STEM_FAIL(STEM_ERR_CONFIG,
                         "%s: [simulation] smatrix_file and potential_file: a stored S-matrix needs "
                         "no potential: give one",
                         source);
    if (cfg->opt.save_exit_wave && !plane)
        return STEM_FAIL(STEM_ERR_CONFIG, "%s: [output] save_exit_wave needs algorithm = hrtem", source);
    if (cfg->positions[0]) {
        static const char *grid_keys[] = {"units", "x_start", "x_end", "y_start", "y_end", "step"};
        for (size_t i = 0; i < sizeof grid_keys / sizeof *grid_keys; i++)
            if (stem_config_given(cfg, "scan", grid_keys[i]))
                return STEM_FAIL(STEM_ERR_CONFIG, "%s: [scan] positions and [scan] %s both place the probes: give one",
                                 source, grid_keys[i]);
        if (cfg->opt.source_size > 0)
            return STEM_FAIL(STEM_ERR_CONFIG,
                             "%s: [probe] source_size blurs the images over a scan grid: not with "
                             "[scan] positions",
                             source);
    }
    STEM_TRY(validate_series(cfg, source));
    if (cfg->opt.thermal == 0 && cfg->frozen_phonons > 1)
        stem_warn("%s: frozen_phonons = %d but [simulation] thermal = false: configurations are identical", source,
                  cfg->frozen_phonons);
    if (stem_config_given(cfg, "simulation", "supersampling"))
        stem_warn("%s: [simulation] supersampling has no effect any more: every atom's potential is placed at its "
                  "exact position (docs/physics.md)",
                  source);
    size_t n = strlen(cfg->output_file);
    if (cfg->opt.layout_emd && (n < 4 || strcasecmp(cfg->output_file + n - 4, ".emd")))
        stem_warn("%s: [output] layout = emd writes %s, which hyperspy's hs.load recognises only by the .emd "
                  "extension (py4DSTEM reads either): name it .emd",
                  source, cfg->output_file);
    return STEM_OK;
}

static int report(parse_ctx *c, int line)
{
    if (line == -1) return STEM_FAIL(STEM_ERR_CONFIG, "cannot open config file '%s': %s", c->source, strerror(errno));
    if (line == -2) return STEM_FAIL(STEM_ERR_MEMORY, "out of memory while parsing '%s'", c->source);
    if (c->err) return STEM_FAIL(c->err, "%s:%d: %s", c->source, line, c->msg);
    return STEM_FAIL(STEM_ERR_CONFIG, "%s:%d: syntax error (expected '[section]' or 'key = value')", c->source, line);
}

/* inih reads at most INI_MAX_LINE - 1 characters of a line and parses the
 * rest as a line of its own, which would cut a long value (a path) short or
 * report a baffling syntax error. Refuse such lines by number. */
static int line_too_long(const char *source, int line)
{
    return STEM_FAIL(STEM_ERR_CONFIG,
                     "%s:%d: line longer than %d characters (the INI parser's limit); shorten it "
                     "(e.g. a path relative to the config file) or pass the value with --set section.key=value",
                     source, line, INI_MAX_LINE - 1);
}

static int check_line_lengths(const char *source, const char *text)
{
    int line = 1, len = 0;
    for (const char *p = text; *p; p++) {
        if (*p == '\n')
            line++, len = 0;
        else if (++len >= INI_MAX_LINE)
            return line_too_long(source, line);
    }
    return STEM_OK;
}

/* The comment and indentation rules (docs/config.md), applied before inih sees the
 * text (in place, keeping line numbers): ';' starts a comment anywhere on a
 * line (inih would want a space before it), and leading whitespace is
 * ignored (inih would read an indented line as the continuation of the
 * previous value). '#' comments at the start of a line are inih's own. */
static void strip_comments_and_indent(char *text)
{
    char *out = text;
    for (const char *p = text; *p;) {
        while (*p == ' ' || *p == '\t') p++;
        while (*p && *p != '\n' && *p != ';') *out++ = *p++;
        while (*p && *p != '\n') p++; /* the comment */
        if (*p == '\n') *out++ = *p++;
    }
    *out = 0;
}

/* Windows' CR LF ends a line as LF does (inih trims the CR), but a CR alone (classic Mac
 * OS line endings) would make the whole file one line: its first [section] and nothing
 * else, then a baffling "missing key". Refused by line. */
static int check_line_endings(const char *source, const char *text)
{
    int line = 1;
    for (const char *p = text; *p; p++) {
        if (*p == '\n')
            line++;
        else if (*p == '\r' && p[1] != '\n')
            return STEM_FAIL(STEM_ERR_CONFIG,
                             "%s:%d: a carriage return (CR) not followed by a line feed: the file has "
                             "classic Mac (CR-only) line endings, which read as one line; convert them "
                             "(tr '\\r' '\\n' < old.ini > new.ini)",
                             source, line);
    }
    return STEM_OK;
}

/* Parse one in-memory text (not NUL-terminated inside: len bytes). */
static int parse_text(stem_config *cfg, const char *name, const char *text, size_t len, parse_ctx *c)
{
    if (memchr(text, 0, len)) return STEM_FAIL(STEM_ERR_CONFIG, "%s: binary data (NUL byte) in a config file", name);
    STEM_TRY(check_line_endings(name, text));
    STEM_TRY(check_line_lengths(name, text));
    char *copy = stem_alloc(len + 1, "config text");
    if (!copy) return STEM_ERR_MEMORY;
    memcpy(copy, text, len + 1);
    strip_comments_and_indent(copy);
    *c = (parse_ctx){.cfg = cfg, .source = name};
    int line = ini_parse_string(copy, config_handler, c);
    free(copy);
    if (line || c->err) return report(c, line ? line : 0);
    return STEM_OK;
}

int stem_config_load_string(stem_config *cfg, const char *name, const char *text)
{
    stem_config_defaults(cfg);
    parse_ctx c;
    STEM_TRY(parse_text(cfg, name, text, strlen(text), &c));
    return validate(cfg, name);
}

static int apply_override(parse_ctx *c, const char *arg)
{
    char buf[STEM_PATH_MAX + 256];
    snprintf(buf, sizeof buf, "%s", arg);
    char *eq = strchr(buf, '='), *dot = strchr(buf, '.');
    if (!eq || !dot || dot > eq) return STEM_FAIL(STEM_ERR_USAGE, "--set '%s': expected section.key=value", arg);
    if (dot == buf || dot + 1 == eq)
        return STEM_FAIL(STEM_ERR_USAGE, "--set '%s': no %s before the '%s': expected section.key=value", arg,
                         dot == buf ? "section" : "key", dot == buf ? "." : "=");
    *eq = 0;
    *dot = 0;
    if (strchr(eq + 1, ';'))
        return STEM_FAIL(STEM_ERR_CONFIG,
                         "--set '%s': ';' starts a comment in config files, so no value may contain it", arg);
    c->err = 0;
    config_handler(c, buf, dot + 1, eq + 1);
    if (c->err) return STEM_FAIL(c->err, "--set %s: %s", arg, c->msg);
    return STEM_OK;
}

int stem_config_load(stem_config *cfg, const char *path, int n_overrides, char *const *overrides)
{
    stem_config_defaults(cfg);
    snprintf(cfg->config_path, sizeof cfg->config_path, "%s", path);
    char *text;
    size_t len;
    STEM_TRY(stem_input_read_all(path, "config file", STEM_ERR_CONFIG, &text, &len));
    parse_ctx c;
    int rc = parse_text(cfg, path, text, len, &c);
    free(text);
    if (rc) return rc;
    c.allow_repeat = 1;
    for (int i = 0; i < n_overrides; i++) STEM_TRY(apply_override(&c, overrides[i]));
    return validate(cfg, path);
}

static void format_value(const key_spec *k, const stem_config *cfg, char *out, size_t n)
{
    const void *f = (const char *)cfg + k->offset;
    switch (k->type) {
    case K_DOUBLE: snprintf(out, n, "%.17g", *(const double *)f); break;
    case K_INT: snprintf(out, n, "%d", *(const int *)f); break;
    case K_INT_AUTO:
        if (*(const int *)f)
            snprintf(out, n, "%d", *(const int *)f);
        else
            snprintf(out, n, "auto");
        break;
    case K_LONG: snprintf(out, n, "%ld", *(const long *)f); break;
    case K_BOOL: snprintf(out, n, "%s", *(const int *)f ? "true" : "false"); break;
    case K_STRING: snprintf(out, n, "%s", (const char *)f); break;
    case K_ENUM: {
        int idx = *(const int *)f;
        const char *p = k->choices;
        while (idx-- > 0 && strchr(p, '|')) p = strchr(p, '|') + 1;
        size_t len = strchr(p, '|') ? (size_t)(strchr(p, '|') - p) : strlen(p);
        snprintf(out, n, "%.*s", (int)len, p);
        break;
    }
    }
}

char *stem_config_to_ini(const stem_config *cfg)
{
    char *buf = NULL;
    size_t size = 0;
    FILE *m = open_memstream(&buf, &size);
    if (!m) return NULL;
    const char *section = "";
    for (int i = 0; i < N_KEYS; i++) {
        char v[STEM_PATH_MAX + 32];
        if (is_alias(&key_table[i])) continue; /* merged into the key it names */
        if (strcmp(section, key_table[i].section)) {
            section = key_table[i].section;
            fprintf(m, "%s[%s]\n", i ? "\n" : "", section);
        }
        format_value(&key_table[i], cfg, v, sizeof v);
        if (key_table[i].type == K_STRING && !v[0]) continue; /* an optional path not given */
        fprintf(m, "%s = %s\n", key_table[i].key, v);         /* values never hold ';' (a comment) */
    }
    fprintf(m, "\n[images]\n");
    for (int i = 0; i < cfg->n_images; i++)
        fprintf(m, "%s = %.17g %.17g\n", cfg->images[i].name, cfg->images[i].inner_mrad, cfg->images[i].outer_mrad);
    fclose(m);
    return buf;
}

void stem_config_print_reference(FILE *out)
{
    fprintf(out, "| section | key | unit | default | meaning |\n|---|---|---|---|---|\n");
    for (int i = 0; i < N_KEYS; i++) {
        const key_spec *k = &key_table[i];
        char def[64];
        /* the one string key without a default that must be given: [sample] xyz */
        snprintf(def, sizeof def, "%s", k->def[0] ? k->def : k->offset == OFF(xyz) ? "(required)" : "(none)");
        fprintf(out, "| %s | %s | %s | %s | %s", k->section, k->key, k->unit, def, k->doc);
        if (k->type == K_ENUM) { /* the choices' '|' escaped: the reference is a Markdown table (docs/config.md) */
            fputs(" (", out);
            for (const char *c = k->choices; *c; c++) fputs(*c == '|' ? "\\|" : (char[2]){*c, 0}, out);
            fputs(")", out);
        }
        fputs(" |\n", out);
    }
    fprintf(
        out,
        "| images | NAME | mrad | BF, ABF, ADF, HAADF | `NAME = inner outer`: a 2D image integrating all "
        "intensity between the two angles; defaults BF 0..a, ABF a/2..a, ADF a..3a, HAADF 3a..max (a = semiangle) |\n");
}

int stem_config_value(const stem_config *cfg, const char *section, const char *key, char *out, size_t n)
{
    const key_spec *k = find_key(section, key);
    if (!k) return -1;
    format_value(k, cfg, out, n);
    return 0;
}
