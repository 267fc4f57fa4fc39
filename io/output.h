/* HDF5 result writer (parallel HDF5 over MPI-IO). The file layout is
 * documented in docs/output.md and written by io/layout.c. */
#ifndef STEM_OUTPUT_H
#define STEM_OUTPUT_H

#include <stddef.h>

#include <mpi.h>

#include "output_types.h"
#include "publish.h"

/* Collective over comm: every rank calls it. Ranks with writes_probes != 0
 * write their result rows [plan->probe_begin, plan->probe_end) (flattened
 * scan index p = iy*scan_nx + ix); the writers' ranges must tile
 * [0, plan->n_probes) exactly. Other ranks select nothing and may pass
 * res == NULL. The texts are taken from rank 0 (other ranks may pass NULL
 * members). The file is written to target->temp_path (created
 * by stem_output_target_prepare), the root attribute complete=1 is written
 * last, the file is closed, and rank 0 publishes it under its final name
 * after a barrier. On a failure before publishing the temporary file is
 * removed; every rank returns the same status. */
/* Bytes the output file of this plan will take, about and rather more than less (the
 * datasets of n_points series points, the stored potential and S-matrix of each of n_tilts
 * sample tilts, HDF5's own): what stem_output_target_reserve holds from the start. */
double stem_output_estimate_bytes(const stem_plan *plan, int n_points, int n_tilts);
/* The EMD conversion's copy of that file (layout = emd): its datasets again, and per series
 * point Prismatic's data groups (each image, rings, DPC, 4D: a group with data and dim vectors,
 * about 3.1 kB of HDF5 objects each, which dominate a series of many small points). */
double stem_output_estimate_emd_bytes(const stem_plan *plan, int n_points, int n_tilts);

/* Every run's one writer call. series NULL: one point, res holds it; else res is the buffer
 * series->load fills point by point, under the series' leading axes. stored: NULL, or what
 * else to write (/potential, /smatrix: one per sample tilt, stored->n_tilts; 0 a single run's).
 * stream: NULL, or the file opened by stem_output_stream_open with its /cbed written (res then
 * holds no 4D patterns); the call finishes and frees it, whatever its status. */
typedef struct stem_output_stream stem_output_stream;
int stem_output_write(MPI_Comm comm, const stem_output_target *target, const stem_plan *plan, stem_result *res,
                      int writes_probes, const stem_output_texts *texts, const stem_output_series *series,
                      const stem_output_stored *stored, stem_output_stream *stream);

/* The 4D patterns streamed to the file while the units run (plan->probe_block): the
 * temporary created and opened now (collective over comm), each block's patterns written
 * collectively as it is finished (every rank calls it for every block: count 0 where a rank
 * has none), the rest by stem_output_write(..., stream). On a failure before that,
 * stem_output_stream_abort closes and removes the temporary and returns the agreed status. */
int stem_output_stream_open(MPI_Comm comm, const stem_output_target *target, const stem_plan *plan, int reopen,
                            stem_output_stream **out);
int stem_output_stream_cbed(stem_output_stream *s, long begin, long count, const float *cbed);
int stem_output_stream_abort(stem_output_stream *s, int rc);
/* A checkpointed stream (mpi/campaign_blocks.c): the blocks written so far made durable
 * (collective flush) before a checkpoint state says they are done; at a stop, the file closed
 * whole and its temporary's name given up (the checkpoint holds a link to it), freed. reopen
 * (stem_output_stream_open): the target's temporary is such a file, adopted
 * (stem_output_target_adopt), whose /cbed exists. */
int stem_output_stream_flush(stem_output_stream *s);
int stem_output_stream_suspend(stem_output_stream *s);

#endif
