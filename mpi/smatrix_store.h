/* PRISM's S-matrices kept and read back:
 *  - [output] save_smatrix: each configuration's S-matrix is written, each rank its own
 *    beams as it computes them, into its group's temporary beside the output,
 *    "<file>.XXXXXX.smatrix-g<group>.incomplete" (raw complex float32, configuration c at
 *    place c / n_groups), and copied into the output's /smatrix when it is written; the
 *    temporaries are removed on every path (a killed job leaves them as it leaves its
 *    *.incomplete output, and the next run reports them).
 *  - [simulation] smatrix_file: each rank reads its own beams of configuration c from
 *    the stored /smatrix (io/smatrix_file.h) instead of computing them. */
#ifndef STEM_SMATRIX_STORE_H
#define STEM_SMATRIX_STORE_H

#include "../io/publish.h"
#include "algorithm.h"

typedef struct {
    const stem_plan *plan;
    const stem_output_target *target; /* whose temporary the group files sit beside */
    int n_groups, fd;                 /* fd: this group's file (-1: none) */
    int own;                          /* the group whose temporary this rank created (-1: none) */
    size_t config_bytes;              /* one configuration's S-matrix */
    stem_smatrix_io io;               /* what the algorithm calls */
} stem_smatrix_store;

/* Collective over m->world: sets io up for the plan's options (nothing to do: io has no
 * callbacks), creates the group leaders' temporaries and opens them on every rank; agreed. */
int stem_smatrix_store_open(stem_smatrix_store *st, const stem_mpi *m, const stem_plan *plan,
                            const stem_output_target *target);
/* Collective: the ranks close their temporaries, so that every rank reads them whole. */
int stem_smatrix_store_finish(stem_smatrix_store *st, const stem_mpi *m);
/* stem_output_smatrix's callback: beam b of configuration c ([crop_ny][crop_nx][2] floats; t: 0). */
int stem_smatrix_store_beam(void *st, int t, int c, int b, float *S);
/* Close and remove this rank's temporary, if any (every path; the leaders own them). */
void stem_smatrix_store_remove(stem_smatrix_store *st);

#endif
