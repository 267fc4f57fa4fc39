/* stem_config: what the user asked for, parsed from config.ini and --set
 * overrides, validated key by key. Plain data (fixed-size strings) so rank 0
 * can broadcast it to the other ranks as bytes. The keys the engines read are
 * in opt (options.h); the rest here are read by the set-up and the plan. */
#ifndef STEM_CONFIG_H
#define STEM_CONFIG_H

#include <stdio.h>

#include "aberrations.h"
#include "options.h" /* the keys the engines read (stem_config.opt) */
#include "stem.h"

#define STEM_MAX_IMAGES 16
#define STEM_MAX_DEPTHS 1000 /* detection planes of one run ([output] depths) */
#define STEM_IMAGE_NAME_MAX 32

/* hrtem: a plane wave through the sample, its exit wave and the objective lens's image;
 * cbed: one probe's whole diffraction pattern (src/hrtem.c) */
typedef enum { STEM_ALG_MULTISLICE = 0, STEM_ALG_PRISM = 1, STEM_ALG_HRTEM = 2, STEM_ALG_CBED = 3 } stem_algorithm;
typedef enum { STEM_SCAN_FRACTIONAL = 0, STEM_SCAN_ANGSTROM = 1 } stem_scan_units;
typedef enum { STEM_DIST_AUTO = 0, STEM_DIST_ON = 1, STEM_DIST_OFF = 2 } stem_dist_mode;
typedef enum { STEM_CHECKPOINT_AUTO = 0, STEM_CHECKPOINT_ON = 1, STEM_CHECKPOINT_OFF = 2 } stem_checkpoint_mode;

typedef struct {
    char name[STEM_IMAGE_NAME_MAX];
    double inner_mrad, outer_mrad;
} stem_image_range;

typedef struct {
    char config_path[STEM_PATH_MAX];
    stem_options opt; /* the keys the engines read, as given (the plan copies and resolves them) */
    /* [sample] */
    char xyz[STEM_PATH_MAX];
    int tile_x, tile_y, tile_z;
    double min_distance;               /* [sample] min_distance: closer atoms refused (0: any) */
    double tilt_x, tilt_y, rotation_z; /* degrees */
    /* [beam] */
    double energy_kev;
    /* [probe] */
    double semiangle_mrad;
    double beam_tilt_mrad[2];           /* x, y: the probe's directions centred here (mrad) */
    double aperture_shift_mrad[2];      /* x, y: the aperture alone displaced further (mrad) */
    double cc, energy_spread;           /* Angstrom, eV FWHM: a focal spread from chromatic aberration */
    double aberr_c[STEM_N_ABERR];       /* C_nm, Angstrom (aberrations.h) */
    double aberr_phi_deg[STEM_N_ABERR]; /* phi_nm, degrees (unused for m = 0) */
    /* older names, merged into aberr_c / aberr_phi_deg by the parser (giving both is an error) */
    double defocus;           /* C10, Angstrom; negative = underfocus */
    double cs_mm, c5_mm;      /* C30, C50 in mm */
    double astigmatism;       /* C12, Angstrom */
    double astigmatism_angle; /* phi12, degrees */
    /* [simulation] */
    int algorithm;
    double pixel_size;      /* Angstrom */
    int grid_x, grid_y;     /* 0: derived from pixel_size */
    double slice_thickness; /* Angstrom */
    int supersampling;      /* retired: accepted with a warning */
    int interpolation_x, interpolation_y;
    int frozen_phonons;
    /* [scan] */
    int scan_units;
    double x_start, x_end, y_start, y_end; /* in scan_units */
    double step;                           /* Angstrom */
    char positions[STEM_PATH_MAX];         /* probe positions file ("": the grid above) */
    /* [detector] */
    double ring_width;     /* mrad */
    double cbed_max_angle; /* mrad, 0: no crop */
    int cbed_bin;
    int cbed_square_q;           /* [detector] cbed_square_q: equal q steps, the finer / N (0: off; plan.c) */
    int segments, segment_rings; /* segmented detector: azimuthal and radial divisions (segments 0: none) */
    double segment_inner, segment_outer, segment_rotation; /* mrad, mrad, degrees */
    /* [images] */
    int n_images;
    stem_image_range images[STEM_MAX_IMAGES];
    /* [output] */
    char output_file[STEM_PATH_MAX];
    int overwrite;
    int checkpoint;                     /* stem_checkpoint_mode */
    char checkpoint_dir[STEM_PATH_MAX]; /* "": <output_file>.checkpoint */
    double checkpoint_interval;         /* seconds between stores of the running sums (0: after every round) */
    char depths[STEM_PATH_MAX];         /* detection planes, Angstrom, as given ("": the exit surface only; series.h) */
    int depth_every;                    /* detection planes every this many slices (0: off) */
    /* [series]: value lists as given ("": not a series over that axis; series.h parses them) */
    char series_tilt_x[STEM_PATH_MAX], series_tilt_y[STEM_PATH_MAX], series_defocus[STEM_PATH_MAX];
    char series_beam_tilt_x[STEM_PATH_MAX], series_beam_tilt_y[STEM_PATH_MAX]; /* hrtem: tilts of the plane wave */
    /* [compute] */
    int threads;
    int batch_size;
    double max_memory_gib; /* 0: 80% of physical memory */
    int distributed_fft;   /* stem_dist_mode: hrtem's wave shared by a group's ranks in slabs */
    int fp_groups;
    char fft_wisdom[STEM_PATH_MAX]; /* "": none */
    char fft_cache[STEM_PATH_MAX];  /* wisdom cache: "auto", "off" or a directory */
    int node_shared;                /* ranks of a group on one node share transmission functions and S-matrix */
    /* [debug]: kernel variants for benchmarking (recorded like every key) */
    int ranks_per_node;  /* > 0: node-shared memory as if nodes held this many consecutive ranks (tests) */
    int sum_piece_bytes; /* > 0: the groups' node-shared sums in pieces of this size (tests; node_reduce.h) */
    /* which keys were given explicitly (index into the key table; io/config.h stem_config_given) */
    unsigned char seen[160];
    /* the few the plan asks about, set by the parser: an explicit end is kept even off the step grid,
     * and an explicit batch size is not re-chosen */
    int x_end_given, y_end_given, batch_size_given;
} stem_config;

#endif
