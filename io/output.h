/* HDF5 result writer (parallel HDF5 over MPI-IO). The file layout is
 * documented at the top of io/output.c. */
#ifndef STEM_OUTPUT_H
#define STEM_OUTPUT_H

#include <stddef.h>

#include <mpi.h>

#include "../src/detector.h"

/* Before any compute (rank 0 decides, the result is broadcast on comm so
 * every rank returns the same code): refuse if the output directory is
 * missing or not writable, or if cfg->output_file exists and cfg->overwrite
 * is false. Returns STEM_OK, STEM_ERR_IO (message printed on rank 0 only)
 * or STEM_ERR_MPI. */
int stem_output_check(MPI_Comm comm, const stem_config *cfg);

/* Collective over comm: every rank calls it. Ranks with writes_probes != 0
 * write their result rows [plan->probe_begin, plan->probe_end) (flattened
 * scan index p = iy*scan_nx + ix); the writers' ranges must tile
 * [0, plan->n_probes) exactly. Other ranks select nothing and may pass
 * res == NULL. config_ini_text and plan_text are taken from rank 0 (other
 * ranks may pass NULL). The file is written to "<output_file>.incomplete",
 * the root attribute complete=1 is written last, the file is closed, and
 * rank 0 renames it to output_file after a barrier. On failure the
 * temporary file is removed and every rank returns the same non-zero code. */
int stem_output_write(MPI_Comm comm, const stem_plan *plan, const stem_result *res, int writes_probes,
                      const char *config_ini_text, const char *plan_text);

/* Remove "<output_file>.incomplete" if present (failure paths, any rank). */
void stem_output_discard(const stem_config *cfg);

/* Name of the temporary file: "<output_file>.incomplete". */
void stem_output_temp_name(const stem_config *cfg, char *out, size_t n);

#endif
