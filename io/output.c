/* HDF5 result writer: one file per run, written collectively by all ranks
 * with parallel HDF5 (MPI-IO, collective transfers), even on one rank.
 *
 * This file is the entry: it checks the result against the plan, agrees on the switches
 * and texts every rank must share, then hands over to the three parts of the writer:
 *   io/h5_collective.c  collective HDF5 writing (agreed steps, attributes, datasets, the
 *                       full-disk-safe close);
 *   io/layout.c         stemsim's layout (every dataset, attribute and unit, documented
 *                       once in docs/output.md; the stored /potential and /smatrix in
 *                       io/layout_stacks.c);
 *   io/finish.c         the close, [output] layout = emd's conversion and the
 *                       publication (io/publish.c).
 *
 * The file is written to the temporary that io/publish.c created exclusively
 * ("<file>.XXXXXX.incomplete") and given its final name by publish.c only
 * after every rank closed it, so a file under its final name is complete. */
#include "output.h"

#include "emd_readers.h"
#include "finish.h"
#include "layout.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- prepare */

static int stem_output_check_result(const stem_output *o)
{
    const stem_plan *plan = o->plan;
    const stem_result *res = o->res;
    if (plan->probe_begin < 0 || plan->probe_begin > plan->probe_end || plan->probe_end > plan->n_probes)
        return STEM_FAIL(STEM_ERR_INTERNAL, "output %s: probe range [%ld, %ld) outside [0, %ld)", o->h5.path,
                         plan->probe_begin, plan->probe_end, plan->n_probes);
    if (!res) return STEM_FAIL(STEM_ERR_INTERNAL, "output %s: a writing rank has no result", o->h5.path);
    if (res->n_probes != plan->probe_end - plan->probe_begin || res->n_images != plan->n_images ||
        res->n_bins != plan->n_bins)
        return STEM_FAIL(STEM_ERR_INTERNAL,
                         "output %s: result (%ld probes, %d images, %d bins) does not match the plan "
                         "(%ld probes, %d images, %d bins)",
                         o->h5.path, res->n_probes, res->n_images, res->n_bins, plan->probe_end - plan->probe_begin,
                         plan->n_images, plan->n_bins);
    if (res->has_4d && (res->out_nx != plan->out_nx || res->out_ny != plan->out_ny))
        return STEM_FAIL(STEM_ERR_INTERNAL, "output %s: 4D result is %dx%d, the plan says %dx%d", o->h5.path,
                         res->out_nx, res->out_ny, plan->out_nx, plan->out_ny);
    if (res->n_probes > 0 &&
        ((plan->n_images > 0 && !res->images) || (plan->opt.save_3d && !res->rings) || (res->has_4d && !res->cbed) ||
         (res->has_dpc && !res->com)))
        return STEM_FAIL(STEM_ERR_INTERNAL, "output %s: result arrays missing", o->h5.path);
    return STEM_OK;
}

static int stem_output_check_plan(const stem_output *o)
{
    const stem_plan *plan = o->plan;
    if (plan->scan_nx <= 0 || plan->scan_ny <= 0 || (long)plan->scan_nx * plan->scan_ny != plan->n_probes)
        return STEM_FAIL(STEM_ERR_INTERNAL, "output %s: scan %d x %d does not hold %ld probes", o->h5.path,
                         plan->scan_nx, plan->scan_ny, plan->n_probes);
    if (plan->n_images < 0 || plan->n_images > STEM_MAX_IMAGES || plan->n_bins < 0)
        return STEM_FAIL(STEM_ERR_INTERNAL, "output %s: plan has %d images (at most %d), %d bins", o->h5.path,
                         plan->n_images, STEM_MAX_IMAGES, plan->n_bins);
    return STEM_OK;
}

/* Local only (no collective calls): validate and allocate what the steps use. */
static int stem_output_prepare(stem_output *o)
{
    const stem_plan *plan = o->plan;
    STEM_TRY(stem_output_check_plan(o));
    if (o->writes) {
        STEM_TRY(stem_output_check_result(o));
        o->begin = (hsize_t)plan->probe_begin;
        o->count = (hsize_t)(plan->probe_end - plan->probe_begin);
        if (plan->dist && plan->layout.group_rank != 0) o->count = 0; /* the group's one wave: its first rank */
    }
    o->scratch = stem_alloc((o->count ? o->count : 1) * sizeof(double), "output packing buffer");
    if (!o->scratch) return STEM_ERR_MEMORY;
    o->axis = stem_alloc((size_t)stem_layout_longest_axis(plan, o->series) * sizeof(double), "output axis buffer");
    return o->axis ? STEM_OK : STEM_ERR_MEMORY;
}

static int stem_output_cmp_range(const void *a, const void *b)
{
    long x = ((const long *)a)[1], y = ((const long *)b)[1];
    return (x > y) - (x < y);
}

/* The writers' ranges must cover every probe exactly once, or the file
 * would claim to be complete with holes or double writes. Every rank sees
 * the same gathered table, so all reach the same verdict. */
static int stem_output_check_coverage(stem_output *o)
{
    int size;
    if (MPI_Comm_size(o->h5.comm, &size) != MPI_SUCCESS)
        return STEM_FAIL(STEM_ERR_MPI, "output %s: MPI_Comm_size failed", o->h5.path);
    long mine[3] = {o->writes != 0, (long)o->begin, (long)(o->begin + o->count)};
    long *all = stem_alloc((size_t)size * sizeof mine, "output probe ranges");
    if (!all) return STEM_ERR_MEMORY;
    int rc = STEM_OK;
    if (MPI_Allgather(mine, 3, MPI_LONG, all, 3, MPI_LONG, o->h5.comm) != MPI_SUCCESS) {
        rc = STEM_FAIL(STEM_ERR_MPI, "output %s: MPI_Allgather of probe ranges failed", o->h5.path);
        goto done;
    }
    qsort(all, (size_t)size, sizeof mine, stem_output_cmp_range);
    long next = 0;
    for (int r = 0; r < size; r++) {
        if (!all[3 * r] || all[3 * r + 1] == all[3 * r + 2]) continue;
        if (all[3 * r + 1] != next) break;
        next = all[3 * r + 2];
    }
    if (next != o->plan->n_probes) {
        if (o->h5.rank == 0)
            STEM_FAIL(STEM_ERR_INTERNAL, "output %s: the writing ranks' probe ranges do not tile [0, %ld)", o->h5.path,
                      o->plan->n_probes);
        rc = STEM_ERR_INTERNAL;
    }
done:
    free(all);
    return rc;
}

/* Ranks that write no probes may hold no result: take the 4D/DPC switches
 * from the writers, and refuse writers that disagree. */
static int stem_output_agree_flags(stem_output *o)
{
    const stem_result *r = o->res;
    int mine[6] = {0, 0, 0, 0, 0, 0}, all[6];
    if (o->writes) {
        mine[0] = r->has_4d != 0;
        mine[1] = r->has_dpc != 0;
        mine[2] = r->has_4d == 0;
        mine[3] = r->has_dpc == 0;
        mine[4] = r->err[STEM_CH_TOTAL] != NULL; /* every result with errors has the total's */
        mine[5] = r->err[STEM_CH_TOTAL] == NULL;
    }
    if (MPI_Allreduce(mine, all, 6, MPI_INT, MPI_MAX, o->h5.comm) != MPI_SUCCESS)
        return STEM_FAIL(STEM_ERR_MPI, "output %s: MPI_Allreduce of the result switches failed", o->h5.path);
    if ((all[0] && all[2]) || (all[1] && all[3]) || (all[4] && all[5])) {
        if (o->h5.rank == 0)
            STEM_FAIL(STEM_ERR_INTERNAL, "output %s: writing ranks disagree on 4D/DPC/error output", o->h5.path);
        return STEM_ERR_INTERNAL;
    }
    o->has_4d = all[0];
    o->has_dpc = all[1];
    o->has_errors = all[4];
    return STEM_OK;
}

/* Attribute values must be identical on every rank: use rank 0's text. */
static int stem_output_share_text(stem_output *o, const char *mine, const char *what, char **out)
{
    unsigned long long len = (o->h5.rank == 0 && mine) ? strlen(mine) : 0;
    if (MPI_Bcast(&len, 1, MPI_UNSIGNED_LONG_LONG, 0, o->h5.comm) != MPI_SUCCESS)
        return STEM_FAIL(STEM_ERR_MPI, "output %s: MPI_Bcast of the %s length failed", o->h5.path, what);
    if (len >= INT_MAX)
        return STEM_FAIL(STEM_ERR_INTERNAL, "output %s: %s text of %llu bytes is too long", o->h5.path, what, len);
    *out = stem_alloc(len + 1, what);
    /* Agree before the collective copy: a rank without a buffer must not stall the rest. */
    int rc = stem_h5_agree(o->h5.comm, *out ? STEM_OK : STEM_ERR_MEMORY);
    if (rc) return rc;
    if (o->h5.rank == 0) memcpy(*out, mine ? mine : "", len + 1);
    if (MPI_Bcast(*out, (int)len + 1, MPI_CHAR, 0, o->h5.comm) != MPI_SUCCESS)
        return STEM_FAIL(STEM_ERR_MPI, "output %s: MPI_Bcast of the %s text failed", o->h5.path, what);
    return STEM_OK;
}

static int stem_output_init(stem_output *o, MPI_Comm comm, const stem_output_target *target, const stem_plan *plan,
                            const stem_result *res, int writes_probes)
{
    memset(o, 0, sizeof *o);
    o->plan = plan;
    o->res = writes_probes ? res : NULL;
    o->writes = writes_probes != 0;
    return stem_h5_file_init(&o->h5, comm, target);
}

static void stem_output_free(stem_output *o)
{
    free(o->scratch);
    free(o->axis);
    free(o->config_text);
    free(o->plan_text);
    free(o->env_text);
    free(o->advice_text);
}

/* The file created and opened (the steps every write begins with, agreed). */
static int stem_output_begin(stem_output *o)
{
    int rc = STEM_OK;
    STEM_H5_STEP(rc, o->h5.comm, stem_finish_verify(&o->h5));
    STEM_H5_STEP(rc, o->h5.comm, stem_finish_give_space(&o->h5));
    STEM_H5_STEP(rc, o->h5.comm, stem_h5_file_open(&o->h5));
    return rc;
}

struct stem_output_stream {
    stem_output o;
    int blocks; /* written so far */
};

int stem_output_stream_open(MPI_Comm comm, const stem_output_target *target, const stem_plan *plan, int reopen,
                            stem_output_stream **out)
{
    stem_output_stream *s = stem_calloc(1, sizeof *s, "the streamed output");
    *out = NULL;
    int rc = stem_h5_agree(comm, s ? STEM_OK : STEM_ERR_MEMORY);
    if (rc) return rc;
    rc = stem_h5_agree(comm, stem_output_init(&s->o, comm, target, plan, NULL, 0));
    s->o.h5.reopen = reopen;
    s->blocks = reopen; /* a resumed stream's /cbed exists */
    if (!rc) rc = stem_output_begin(&s->o);
    if (rc) {
        stem_finish(&s->o.h5, plan, rc); /* the temporary removed */
        free(s);
        return rc;
    }
    s->o.cbed_streamed = 1;
    *out = s;
    return STEM_OK;
}

int stem_output_stream_cbed(stem_output_stream *s, long begin, long count, const float *cbed)
{
    int rc = stem_layout_cbed_block(&s->o, begin, count, cbed, s->blocks == 0);
    if (!rc) s->blocks++;
    return rc;
}

int stem_output_stream_flush(stem_output_stream *s) { return stem_h5_file_flush(&s->o.h5); }

int stem_output_stream_suspend(stem_output_stream *s)
{
    int rc = stem_h5_file_close(&s->o.h5, 0); /* whole: not truncated, as a discarded file is */
    if (s->o.h5.rank == 0) stem_output_target_discard(s->o.h5.target); /* its name and reserve */
    stem_output_free(&s->o);
    free(s);
    return rc;
}

int stem_output_stream_abort(stem_output_stream *s, int rc)
{
    if (!s) return rc;
    rc = stem_finish(&s->o.h5, s->o.plan, rc ? rc : STEM_ERR_INTERNAL);
    stem_output_free(&s->o);
    free(s);
    return rc;
}

static int stem_output_write_all(MPI_Comm comm, const stem_output_target *target, const stem_plan *plan,
                                 stem_result *res, int writes_probes, const stem_output_texts *texts,
                                 const stem_output_series *series, const stem_output_stored *stored,
                                 stem_output_stream *stream)
{
    stem_output o;
    int rc = STEM_OK;
    if (stream) { /* the file open since the units began, /cbed written */
        o = stream->o;
        free(stream);
        o.res = writes_probes ? res : NULL;
        o.writes = writes_probes != 0;
    } else {
        rc = stem_output_init(&o, comm, target, plan, res, writes_probes);
    }
    o.series = series;
    o.stored = stored;
    for (int a = 0; series && a < STEM_OUTPUT_MAX_LEAD; a++)
        if (series->lead_name[a]) o.lead[o.n_lead++] = (hsize_t)series->lead_n[a];
    rc = stem_h5_agree(comm, rc);
    STEM_H5_STEP(rc, comm, stem_output_prepare(&o));
    STEM_H5_STEP(rc, comm, stem_output_check_coverage(&o));
    STEM_H5_STEP(rc, comm, stem_output_agree_flags(&o));
    STEM_H5_STEP(rc, comm, stem_output_share_text(&o, texts ? texts->config_ini : NULL, "config", &o.config_text));
    STEM_H5_STEP(rc, comm, stem_output_share_text(&o, texts ? texts->plan : NULL, "plan", &o.plan_text));
    STEM_H5_STEP(rc, comm, stem_output_share_text(&o, texts ? texts->environment : NULL, "environment", &o.env_text));
    STEM_H5_STEP(rc, comm, stem_output_share_text(&o, texts ? texts->advice : NULL, "advice", &o.advice_text));
    if (!stream && !rc) rc = stem_output_begin(&o);
    if (!rc) rc = stem_layout_write(&o);
    rc = stem_finish(&o.h5, plan, rc); /* closed on every path, published or removed */
    stem_output_free(&o);
    return rc;
}

int stem_output_write(MPI_Comm comm, const stem_output_target *target, const stem_plan *plan, stem_result *res,
                      int writes_probes, const stem_output_texts *texts, const stem_output_series *series,
                      const stem_output_stored *stored, stem_output_stream *stream)
{
    return stem_output_write_all(comm, target, plan, res, writes_probes, texts, series, stored, stream);
}

double stem_output_estimate_bytes(const stem_plan *plan, int n_points, int n_tilts)
{
    return stem_layout_estimate_bytes(plan, n_points, n_tilts);
}

double stem_output_estimate_emd_bytes(const stem_plan *plan, int n_points, int n_tilts)
{
    int groups = plan->n_images + (plan->opt.save_3d ? 1 : 0) + (plan->opt.save_dpc ? 1 : 0) +
        (plan->opt.save_4d ? 1 : 0) + (plan->algorithm == STEM_ALG_HRTEM ? 2 : 0);
    /* the readers' views (io/emd_readers.c) copy the scan's 2D and 3D channels once more, gathered
     * into one signal each (the 4D patterns and Prismatic's datasets are hard links) */
    stem_plan scan_only = *plan;
    scan_only.opt.save_4d = 0;
    double views = stem_emd_views_apply(plan) ? stem_layout_estimate_bytes(&scan_only, n_points, n_tilts) : 0;
    /* measured: about 9 HDF5 objects per group and point (Prismatic's and the views') of 570-670 B
     * each (tests/integration/faults.py reserve_estimate) */
    return stem_layout_estimate_bytes(plan, n_points, n_tilts) + views +
        5500.0 * groups * (n_points > 0 ? n_points : 1);
}
