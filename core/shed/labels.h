/* sedp — the pruning DNN's training labels (docs/load-shedding.md#training): for each recorded
 * request, how its recall of the full model's top K grows with the share of candidates kept in
 * escore order, and, for a load level (quota), the share each request should keep. */
#pragma once

#include <sedp/macros.h>

G_BEGIN_DECLS

/**
 * SedpShedCurve:
 * @n: the request's candidates
 * @k: the size of its full top K (min (top_k, n))
 * @pos: (array length=k): where each of the full top K stands in escore order (0 = best
 *   escore), ascending
 *
 * One request's recall curve: keeping the first `keep` candidates in escore order keeps the
 * top-K items whose position is below `keep`. Free with sedp_shed_curve_clear().
 */
typedef struct {
  guint n;
  guint k;
  guint *pos;
} SedpShedCurve;

/* Builds the curve of a request of @n candidates from their escores (the shedder's order:
 * NaN and infinite last) and the full model's @score (its top K: highest first, NaN last, ties
 * in item order). */
SEDP_API void sedp_shed_curve_init (SedpShedCurve *curve, const float *escore, const float *score,
                                    guint n, guint top_k);
SEDP_API void sedp_shed_curve_clear (SedpShedCurve *curve);

/* The recall of the full top K when the first @keep candidates are kept (1 when k is 0). */
SEDP_API double sedp_shed_curve_recall (const SedpShedCurve *curve, guint keep);

/* The fewest candidates to keep for a recall of at least @recall. */
SEDP_API guint sedp_shed_curve_min_keep (const SedpShedCurve *curve, double recall);

/**
 * sedp_shed_curve_pool:
 * @curves: the workload's requests
 * @members: (array length=n_members): the indices, in @curves, of the requests to pool
 * @n: the candidate count of the pooled curve
 * @out: (out): the pooled curve; free with sedp_shed_curve_clear()
 *
 * The expected recall curve of a request of @n candidates that is like @members: each member's
 * top-K positions taken at the same share of @n as of its own count, all in one curve, so that
 * keeping `keep` of @n recalls the members' mean recall at that share. A shedder cannot see
 * where a request's own top K lies, only what it has in common with requests like it: the
 * labels are made from such curves (docs/load-shedding.md#training). Members without
 * candidates add nothing.
 */
SEDP_API void sedp_shed_curve_pool (const SedpShedCurve *curves, const guint *members,
                                    guint n_members, guint n, SedpShedCurve *out);

/**
 * sedp_shed_labels:
 * @curves: (array length=n_curves): the workload's requests
 * @quota: the share of all candidates the pipeline can afford (0..1)
 * @min_keep: @max_cutoff: the shedder's floors (no label keeps fewer)
 * @labels: (out) (array length=n_curves): each request's keep share
 *
 * The labels of one load level: the shares that give the highest mean recall for @quota of all
 * the candidates kept (the pipeline's cost is per candidate, so a long request's share costs
 * more than a short one's). At a price λ per candidate kept (in units of the mean count), each
 * request keeps the count (its floor, or one just past a top-K position) that maximizes its
 * recall minus the price; the share of all candidates kept falls as λ rises. The two
 * allocations on either side of @quota are mixed by one common weight so that the share kept
 * is @quota: recall is bought where it is cheapest (the paper's "the lower the quota, the lower
 * the recall asked", with the recall spread to maximize its mean). Above the share of full
 * recall everywhere (λ = 0), "keep everything" is mixed in: a quota of 1 keeps everything; one
 * below what the floors keep gives the floors. Requests without candidates get 1.
 */
SEDP_API void sedp_shed_labels (const SedpShedCurve *curves, guint n_curves, double quota,
                                guint min_keep, double max_cutoff, double *labels);

G_END_DECLS
