/* sedp — what `sedp shed train` learns from: a recorded workload run through the pipeline with
 * nothing shed, every candidate's escore next to the full model's score. */
#pragma once

#include "../io/request-file.h"

G_BEGIN_DECLS

/** SEDP_SHED_ERROR: errors of `sedp shed train`. Codes are #SedpShedError. */
#define SEDP_SHED_ERROR (sedp_shed_error_quark ())
SEDP_API GQuark sedp_shed_error_quark (void);

typedef enum {
  SEDP_SHED_ERROR_EMPTY,     /* the workload gave no request to learn from */
  SEDP_SHED_ERROR_COLUMN,    /* the results lack the score or escore column */
  SEDP_SHED_ERROR_FAILED,    /* a request failed in the pipeline */
} SedpShedError;

/** SedpShedRequest: one request's candidates: @n escores and full-model scores (owned). */
typedef struct {
  guint index;   /* its place in the request file, from 0 */
  guint n;
  float *escore;
  float *score;
} SedpShedRequest;

/**
 * SedpShedWorkload:
 * @requests: (element-type SedpShedRequest*): the requests of two or more candidates
 * @min_keep: @max_cutoff: the floors of the pipeline's first shedder stage (its defaults, 10 and
 *   0.9, when it has none)
 * @deadline_ms: the pipeline's deadline
 * @skipped: requests of fewer than two candidates (nothing to shed)
 */
typedef struct {
  GPtrArray *requests;
  guint min_keep;
  double max_cutoff;
  guint deadline_ms;
  guint skipped;
} SedpShedWorkload;

/**
 * sedp_shed_collect:
 * @pipeline: the pipeline file; every `shedder` stage in it runs with `policy = none`
 * @requests: a request file as `sedp run` reads it
 * @format: its format (%SEDP_REQUEST_FORMAT_AUTO: from its name and first byte)
 * @score: the column of the full model's score in the results (first value when wider)
 * @escore: the escore column, which must reach the results
 *
 * Runs every request of @requests through @pipeline, unshed, and keeps each one's escores and
 * scores. A request that does not complete OK is an error naming it; so is a workload without
 * a request of two or more candidates.
 *
 * Returns: (transfer full) (nullable): the workload; free with sedp_shed_workload_free().
 */
SEDP_API SedpShedWorkload *sedp_shed_collect (const char *pipeline, const char *requests,
                                              SedpRequestFormat format, const char *score,
                                              const char *escore, GError **error);
SEDP_API void sedp_shed_workload_free (SedpShedWorkload *workload);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (SedpShedWorkload, sedp_shed_workload_free)

G_END_DECLS
