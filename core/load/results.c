/* sedp — a load generator run's results: counts, statuses, latencies (see results.h and
 * results-private.h). */
#include "results-private.h"

#include <math.h>
#include <string.h>

typedef struct {
  char *name;
  guint64 count;
} StatusCount;

struct _SedpLoadgenResults {
  SedpLoadgenCounts counts;
  GArray *latencies_us; /* gint64, of the requests answered OK; sorted at finish */
  GArray *statuses;     /* StatusCount; sorted by name at finish */
  char *first_error;
};

const char *
sedp_loadgen_failure_to_string (SedpLoadgenFailure kind)
{
  static const char *const names[] = {"transport", "http", "refused", "not_ok", "unsent"};
  return kind < SEDP_LOADGEN_N_FAILURES ? names[kind] : "invalid";
}

static void
status_count_clear (gpointer p)
{
  g_free (((StatusCount *) p)->name);
}

SedpLoadgenResults *
sedp_loadgen_results_new (SedpLoadgenMode mode, double rate, guint concurrency, double duration_s)
{
  SedpLoadgenResults *r = g_new0 (SedpLoadgenResults, 1);
  r->counts.mode = mode;
  r->counts.rate = rate;
  r->counts.concurrency = concurrency;
  r->counts.duration_s = duration_s;
  r->latencies_us = g_array_new (FALSE, FALSE, sizeof (gint64));
  r->statuses = g_array_new (FALSE, TRUE, sizeof (StatusCount));
  g_array_set_clear_func (r->statuses, status_count_clear);
  return r;
}

void
sedp_loadgen_results_free (SedpLoadgenResults *r)
{
  if (r == NULL)
    return;
  g_array_unref (r->latencies_us);
  g_array_unref (r->statuses);
  g_free (r->first_error);
  g_free (r);
}

void
sedp_loadgen_results_count_arrival (SedpLoadgenResults *r)
{
  r->counts.arrivals++;
}

void
sedp_loadgen_results_count_sent (SedpLoadgenResults *r, gint64 late_us)
{
  r->counts.sent++;
  if (late_us > 1000)
    r->counts.late_sends++;
}

static void
count_status (SedpLoadgenResults *r, const char *status)
{
  if (status == NULL)
    return;
  for (guint i = 0; i < r->statuses->len; i++) {
    StatusCount *s = &g_array_index (r->statuses, StatusCount, i);
    if (strcmp (s->name, status) == 0) {
      s->count++;
      return;
    }
  }
  StatusCount s = {g_strdup (status), 1};
  g_array_append_val (r->statuses, s);
}

void
sedp_loadgen_results_record_ok (SedpLoadgenResults *r, gint64 latency_us, guint n_items,
                                const char *status)
{
  r->counts.ok++;
  r->counts.items += n_items;
  latency_us = MAX (latency_us, 0);
  g_array_append_val (r->latencies_us, latency_us);
  count_status (r, status);
}

void
sedp_loadgen_results_record_failure (SedpLoadgenResults *r, SedpLoadgenFailure kind,
                                     const char *status, const char *why)
{
  g_return_if_fail (kind < SEDP_LOADGEN_N_FAILURES);
  r->counts.failures[kind]++;
  count_status (r, status);
  if (r->first_error == NULL && why)
    r->first_error = g_strdup (why);
}

static int
cmp_gint64 (gconstpointer a, gconstpointer b)
{
  gint64 x = *(const gint64 *) a, y = *(const gint64 *) b;
  return x < y ? -1 : x > y;
}

static int
cmp_status (gconstpointer a, gconstpointer b)
{
  return strcmp (((const StatusCount *) a)->name, ((const StatusCount *) b)->name);
}

void
sedp_loadgen_results_finish (SedpLoadgenResults *r, double wall_s)
{
  r->counts.wall_s = wall_s;
  g_array_sort (r->latencies_us, cmp_gint64);
  g_array_sort (r->statuses, cmp_status);
}

const SedpLoadgenCounts *
sedp_loadgen_results_get_counts (const SedpLoadgenResults *r)
{
  return &r->counts;
}

guint64
sedp_loadgen_results_get_errors (const SedpLoadgenResults *r)
{
  guint64 n = 0;
  for (guint k = 0; k < SEDP_LOADGEN_N_FAILURES; k++)
    n += r->counts.failures[k];
  return n;
}

static double
per (double count, double total)
{
  return total > 0 ? count / total : 0;
}

double
sedp_loadgen_results_get_requests_per_s (const SedpLoadgenResults *r)
{
  return per ((double) r->counts.ok, r->counts.wall_s);
}

double
sedp_loadgen_results_get_items_per_s (const SedpLoadgenResults *r)
{
  return per ((double) r->counts.items, r->counts.wall_s);
}

double
sedp_loadgen_results_get_offered_rps (const SedpLoadgenResults *r)
{
  return per ((double) r->counts.sent, r->counts.duration_s);
}

double
sedp_loadgen_results_get_answered_share (const SedpLoadgenResults *r)
{
  return per ((double) r->counts.ok, (double) r->counts.arrivals);
}

double
sedp_loadgen_results_get_error_share (const SedpLoadgenResults *r)
{
  return per ((double) sedp_loadgen_results_get_errors (r), (double) r->counts.arrivals);
}

double
sedp_loadgen_results_get_latency_ms (const SedpLoadgenResults *r, double q)
{
  guint n = r->latencies_us->len;
  if (n == 0)
    return 0;
  guint k = (guint) ceil (CLAMP (q, 0, 1) * n);
  k = k == 0 ? 0 : MIN (k - 1, n - 1);
  return (double) g_array_index (r->latencies_us, gint64, k) / 1000.0;
}

const gint64 *
sedp_loadgen_results_get_latencies_us (const SedpLoadgenResults *r, guint *n)
{
  *n = r->latencies_us->len;
  return (const gint64 *) r->latencies_us->data;
}

guint
sedp_loadgen_results_get_n_statuses (const SedpLoadgenResults *r)
{
  return r->statuses->len;
}

const char *
sedp_loadgen_results_get_status (const SedpLoadgenResults *r, guint i, guint64 *count)
{
  g_return_val_if_fail (i < r->statuses->len, NULL);
  const StatusCount *s = &g_array_index (r->statuses, StatusCount, i);
  if (count)
    *count = s->count;
  return s->name;
}

guint64
sedp_loadgen_results_get_status_count (const SedpLoadgenResults *r, const char *name)
{
  for (guint i = 0; i < r->statuses->len; i++) {
    const StatusCount *s = &g_array_index (r->statuses, StatusCount, i);
    if (strcmp (s->name, name) == 0)
      return s->count;
  }
  return 0;
}

const char *
sedp_loadgen_results_get_first_error (const SedpLoadgenResults *r)
{
  return r->first_error;
}
