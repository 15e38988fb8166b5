/* sedp — counters and histograms with lock-free updates. */
#include "metrics.h"

#include <string.h>

struct _SedpCounter {
  guint64 value;
  gboolean degraded; /* counts answers given with stand-ins (sedp_metrics_degraded_counter) */
  char *stage;
  char *name;
  char *help;
};

struct _SedpHistogram {
  char *stage;
  char *name;
  char *help;
  guint n_bounds;
  double *bounds;
  guint64 *buckets;  /* n_bounds + 1, not cumulative; the last one is +Inf */
  guint64 count;
  guint64 sum_bits;  /* a double, updated by compare-and-swap */
};

typedef struct {
  char *stage;
  char *name;
  char *help;
  SedpGaugeRead read;
  gconstpointer data;
} Gauge;

struct _SedpMetrics {
  GMutex lock;
  GPtrArray *counters;
  GPtrArray *histograms;
  GPtrArray *gauges;
};

struct _SedpStats {
  char *stage;
  GString *out;
};

static void
counter_free (SedpCounter *c)
{
  g_free (c->stage);
  g_free (c->name);
  g_free (c->help);
  g_free (c);
}

static void
gauge_free (Gauge *g)
{
  g_free (g->stage);
  g_free (g->name);
  g_free (g->help);
  g_free (g);
}

static void
histogram_free (SedpHistogram *h)
{
  g_free (h->stage);
  g_free (h->name);
  g_free (h->help);
  g_free (h->bounds);
  g_free (h->buckets);
  g_free (h);
}

SedpMetrics *
sedp_metrics_new (void)
{
  SedpMetrics *m = g_new0 (SedpMetrics, 1);
  g_mutex_init (&m->lock);
  m->counters = g_ptr_array_new_with_free_func ((GDestroyNotify) counter_free);
  m->histograms = g_ptr_array_new_with_free_func ((GDestroyNotify) histogram_free);
  m->gauges = g_ptr_array_new_with_free_func ((GDestroyNotify) gauge_free);
  return m;
}

void
sedp_metrics_free (SedpMetrics *m)
{
  if (m == NULL)
    return;
  g_ptr_array_unref (m->counters);
  g_ptr_array_unref (m->histograms);
  g_ptr_array_unref (m->gauges);
  g_mutex_clear (&m->lock);
  g_free (m);
}

SedpCounter *
sedp_metrics_counter (SedpMetrics *m, const char *stage, const char *name, const char *help)
{
  return sedp_metrics_degraded_counter (m, stage, name, help, FALSE);
}

SedpCounter *
sedp_metrics_degraded_counter (SedpMetrics *m, const char *stage, const char *name,
                               const char *help, gboolean degraded)
{
  g_mutex_lock (&m->lock);
  for (guint i = 0; i < m->counters->len; i++) {
    SedpCounter *c = m->counters->pdata[i];
    if (strcmp (c->stage, stage) == 0 && strcmp (c->name, name) == 0) {
      g_mutex_unlock (&m->lock);
      return c;
    }
  }
  SedpCounter *c = g_new0 (SedpCounter, 1);
  c->stage = g_strdup (stage);
  c->name = g_strdup (name);
  c->help = g_strdup (help ? help : "");
  c->degraded = degraded;
  g_ptr_array_add (m->counters, c);
  g_mutex_unlock (&m->lock);
  return c;
}

guint64
sedp_metrics_get_degraded (SedpMetrics *m)
{
  guint64 sum = 0;
  g_mutex_lock (&m->lock);
  for (guint i = 0; i < m->counters->len; i++) {
    SedpCounter *c = m->counters->pdata[i];
    if (c->degraded)
      sum += sedp_counter_get (c);
  }
  g_mutex_unlock (&m->lock);
  return sum;
}

SedpHistogram *
sedp_metrics_histogram (SedpMetrics *m, const char *stage, const char *name, const char *help,
                        const double *bounds, guint n_bounds)
{
  g_mutex_lock (&m->lock);
  for (guint i = 0; i < m->histograms->len; i++) {
    SedpHistogram *h = m->histograms->pdata[i];
    if (strcmp (h->stage, stage) == 0 && strcmp (h->name, name) == 0) {
      g_mutex_unlock (&m->lock);
      return h;
    }
  }
  SedpHistogram *h = g_new0 (SedpHistogram, 1);
  h->stage = g_strdup (stage);
  h->name = g_strdup (name);
  h->help = g_strdup (help ? help : "");
  h->n_bounds = n_bounds;
  h->bounds = g_memdup2 (bounds, sizeof (double) * MAX (n_bounds, 1));
  h->buckets = g_new0 (guint64, (gsize) n_bounds + 1);
  g_ptr_array_add (m->histograms, h);
  g_mutex_unlock (&m->lock);
  return h;
}

void
sedp_counter_add (SedpCounter *counter, guint64 value)
{
  if (counter)
    __atomic_add_fetch (&counter->value, value, __ATOMIC_RELAXED);
}

guint64
sedp_counter_get (const SedpCounter *counter)
{
  g_return_val_if_fail (counter != NULL, 0);
  return __atomic_load_n (&counter->value, __ATOMIC_RELAXED);
}

void
sedp_histogram_observe (SedpHistogram *h, double value)
{
  if (h == NULL)
    return;
  /* Binary search for the first bound >= value. */
  guint lo = 0, hi = h->n_bounds;
  while (lo < hi) {
    guint mid = (lo + hi) / 2;
    if (value <= h->bounds[mid])
      hi = mid;
    else
      lo = mid + 1;
  }
  __atomic_add_fetch (&h->buckets[lo], 1, __ATOMIC_RELAXED);
  __atomic_add_fetch (&h->count, 1, __ATOMIC_RELAXED);
  guint64 old = __atomic_load_n (&h->sum_bits, __ATOMIC_RELAXED), next;
  do {
    double sum;
    memcpy (&sum, &old, sizeof sum);
    sum += value;
    memcpy (&next, &sum, sizeof sum);
  } while (!__atomic_compare_exchange_n (&h->sum_bits, &old, next, TRUE, __ATOMIC_RELAXED,
                                         __ATOMIC_RELAXED));
}

guint64
sedp_histogram_get_count (const SedpHistogram *h)
{
  g_return_val_if_fail (h != NULL, 0);
  return __atomic_load_n (&h->count, __ATOMIC_RELAXED);
}

static double
histogram_sum (const SedpHistogram *h)
{
  guint64 bits = __atomic_load_n (&h->sum_bits, __ATOMIC_RELAXED);
  double sum;
  memcpy (&sum, &bits, sizeof sum);
  return sum;
}

double
sedp_histogram_mean (const SedpHistogram *h)
{
  guint64 n = sedp_histogram_get_count (h);
  return n ? histogram_sum (h) / (double) n : 0.0;
}

double
sedp_histogram_quantile (const SedpHistogram *h, double q)
{
  guint64 n = sedp_histogram_get_count (h), seen = 0;
  if (n == 0)
    return 0.0;
  guint64 want = (guint64) (q * (double) n);
  if (want == 0)
    want = 1;
  for (guint i = 0; i <= h->n_bounds; i++) {
    seen += __atomic_load_n (&h->buckets[i], __ATOMIC_RELAXED);
    if (seen >= want)
      return i < h->n_bounds ? h->bounds[i] : (h->n_bounds ? h->bounds[h->n_bounds - 1] : 0.0);
  }
  return h->n_bounds ? h->bounds[h->n_bounds - 1] : 0.0;
}

/* Names are registered in the unit the code measures (microseconds: "_us"); the exposition uses
 * Prometheus' base unit, seconds (`promtool check metrics`): a name with an "_us" part is exported
 * with "_seconds" there, its values divided by 1e6. Returns the scale; *@exported the name. */
static double
exported_name (const char *name, char **exported)
{
  const char *us = g_str_has_suffix (name, "_us") ? name + strlen (name) - 3 : strstr (name, "_us_");
  if (us == NULL) {
    *exported = g_strdup (name);
    return 1.0;
  }
  *exported = g_strdup_printf ("%.*s_seconds%s", (int) (us - name), name, us + 3);
  return 1e-6;
}

static void
write_family_head (GString *out, const char *name, const char *help, const char *type)
{
  g_string_append_printf (out, "# HELP sedp_%s %s\n# TYPE sedp_%s %s\n", name, help, name, type);
}

static gint
compare_counter (gconstpointer a, gconstpointer b)
{
  const SedpCounter *x = *(SedpCounter *const *) a, *y = *(SedpCounter *const *) b;
  int c = strcmp (x->name, y->name);
  return c ? c : strcmp (x->stage, y->stage);
}

void
sedp_metrics_gauge (SedpMetrics *m, const char *stage, const char *name, const char *help,
                    SedpGaugeRead read, gconstpointer data)
{
  g_mutex_lock (&m->lock);
  for (guint i = 0; i < m->gauges->len; i++) {
    Gauge *g = m->gauges->pdata[i];
    if (strcmp (g->stage, stage) == 0 && strcmp (g->name, name) == 0) {
      g_mutex_unlock (&m->lock);
      return;
    }
  }
  Gauge *g = g_new0 (Gauge, 1);
  *g = (Gauge) {g_strdup (stage), g_strdup (name), g_strdup (help ? help : ""), read, data};
  g_ptr_array_add (m->gauges, g);
  g_mutex_unlock (&m->lock);
}

static gint
compare_gauge (gconstpointer a, gconstpointer b)
{
  const Gauge *x = *(Gauge *const *) a, *y = *(Gauge *const *) b;
  int c = strcmp (x->name, y->name);
  return c ? c : strcmp (x->stage, y->stage);
}

/* The labels of a metric registered for @stage: `stage="S"`, or for "S/B" (a router's branch,
 * core/runtime/route.c) `stage="S",branch="B"`. Stage and branch names need no escaping. */
static char *
stage_labels (const char *stage)
{
  const char *slash = strchr (stage, '/');
  if (slash == NULL)
    return g_strdup_printf ("stage=\"%s\"", stage);
  return g_strdup_printf ("stage=\"%.*s\",branch=\"%s\"", (int) (slash - stage), stage, slash + 1);
}

/* Every gauge, one family per name, one sample per stage. */
static void
write_gauges (SedpMetrics *m, GString *out)
{
  g_mutex_lock (&m->lock);
  g_autoptr (GPtrArray) gauges = g_ptr_array_new ();
  for (guint i = 0; i < m->gauges->len; i++)
    g_ptr_array_add (gauges, m->gauges->pdata[i]);
  g_mutex_unlock (&m->lock);
  g_ptr_array_sort (gauges, compare_gauge);
  const char *family = NULL;
  g_autofree char *name = NULL;
  double scale = 1.0;
  for (guint i = 0; i < gauges->len; i++) {
    Gauge *g = gauges->pdata[i];
    if (family == NULL || strcmp (family, g->name) != 0) {
      family = g->name;
      g_free (name);
      scale = exported_name (g->name, &name);
      write_family_head (out, name, g->help, "gauge");
    }
    g_autofree char *lb = stage_labels (g->stage);
    g_string_append_printf (out, "sedp_%s{%s} %.17g\n", name, lb, g->read (g->data) * scale);
  }
}

static gint
compare_histogram (gconstpointer a, gconstpointer b)
{
  const SedpHistogram *x = *(SedpHistogram *const *) a, *y = *(SedpHistogram *const *) b;
  int c = strcmp (x->name, y->name);
  return c ? c : strcmp (x->stage, y->stage);
}

static void
write_counters (GPtrArray *counters, GString *out)
{
  const char *family = NULL;
  g_autofree char *name = NULL;
  double scale = 1.0;
  for (guint i = 0; i < counters->len; i++) {
    SedpCounter *c = counters->pdata[i];
    if (family == NULL || strcmp (family, c->name) != 0) {
      family = c->name;
      g_free (name);
      scale = exported_name (c->name, &name);
      write_family_head (out, name, c->help, "counter");
    }
    g_autofree char *lb = stage_labels (c->stage);
    if (scale == 1.0)
      g_string_append_printf (out, "sedp_%s{%s} %" G_GUINT64_FORMAT "\n", name, lb,
                              sedp_counter_get (c));
    else
      g_string_append_printf (out, "sedp_%s{%s} %.17g\n", name, lb,
                              (double) sedp_counter_get (c) * scale);
  }
}

static void
write_histogram (const SedpHistogram *h, const char *name, double scale, GString *out)
{
  guint64 cum = 0;
  g_autofree char *lb = stage_labels (h->stage);
  for (guint b = 0; b <= h->n_bounds; b++) {
    cum += __atomic_load_n (&h->buckets[b], __ATOMIC_RELAXED);
    if (b < h->n_bounds)
      g_string_append_printf (out, "sedp_%s_bucket{%s,le=\"%g\"} %" G_GUINT64_FORMAT "\n", name,
                              lb, h->bounds[b] * scale, cum);
    else
      g_string_append_printf (out, "sedp_%s_bucket{%s,le=\"+Inf\"} %" G_GUINT64_FORMAT "\n",
                              name, lb, cum);
  }
  g_string_append_printf (out, "sedp_%s_sum{%s} %.17g\nsedp_%s_count{%s} %" G_GUINT64_FORMAT "\n",
                          name, lb, histogram_sum (h) * scale, name, lb,
                          sedp_histogram_get_count (h));
}

static void
write_histograms (GPtrArray *histograms, GString *out)
{
  const char *family = NULL;
  g_autofree char *name = NULL;
  double scale = 1.0;
  for (guint i = 0; i < histograms->len; i++) {
    SedpHistogram *h = histograms->pdata[i];
    if (family == NULL || strcmp (family, h->name) != 0) {
      family = h->name;
      g_free (name);
      scale = exported_name (h->name, &name);
      write_family_head (out, name, h->help, "histogram");
    }
    write_histogram (h, name, scale, out);
  }
}

void
sedp_metrics_write_prometheus (SedpMetrics *m, GString *out)
{
  g_mutex_lock (&m->lock);
  /* One family per metric name (HELP and TYPE once), one sample per stage. */
  g_autoptr (GPtrArray) counters = g_ptr_array_new ();
  g_autoptr (GPtrArray) histograms = g_ptr_array_new ();
  for (guint i = 0; i < m->counters->len; i++)
    g_ptr_array_add (counters, m->counters->pdata[i]);
  for (guint i = 0; i < m->histograms->len; i++)
    g_ptr_array_add (histograms, m->histograms->pdata[i]);
  g_mutex_unlock (&m->lock);
  g_ptr_array_sort (counters, compare_counter);
  g_ptr_array_sort (histograms, compare_histogram);
  write_counters (counters, out);
  write_histograms (histograms, out);
  write_gauges (m, out);
}

/* One "STAGE NAME VALUE" line of sedp_pipeline_collect_stats. */
typedef struct {
  char *stage;
  char *name;
  double value;
  char *labels; /* (nullable) the labels the name carried, without braces */
} StatLine;

static gint
compare_stat (gconstpointer a, gconstpointer b)
{
  const StatLine *x = a, *y = b;
  int c = strcmp (x->name, y->name);
  c = c ? c : strcmp (x->stage, y->stage);
  return c ? c : g_strcmp0 (x->labels, y->labels);
}

static void
stat_line_clear (gpointer p)
{
  StatLine *l = p;
  g_free (l->stage);
  g_free (l->name);
  g_free (l->labels);
}

static GArray *
parse_stats (const char *stats)
{
  GArray *lines = g_array_new (FALSE, FALSE, sizeof (StatLine));
  g_array_set_clear_func (lines, stat_line_clear);
  g_auto (GStrv) split = g_strsplit (stats, "\n", -1);
  for (char **l = split; *l; l++) {
    g_auto (GStrv) f = g_strsplit (*l, " ", 3);
    if (g_strv_length (f) != 3)
      continue;
    const char *brace = strchr (f[1], '{');
    StatLine sl = {g_strdup (f[0]), brace ? g_strndup (f[1], (gsize) (brace - f[1])) : g_strdup (f[1]),
                   g_ascii_strtod (f[2], NULL), brace && g_str_has_suffix (brace, "}")
                                                    ? g_strndup (brace + 1, strlen (brace) - 2)
                                                    : NULL};
    g_array_append_val (lines, sl);
  }
  g_array_sort (lines, compare_stat);
  return lines;
}

void
sedp_metrics_write_stats (const char *stats, GString *out)
{
  g_return_if_fail (stats != NULL && out != NULL);
  g_autoptr (GArray) lines = parse_stats (stats);
  const char *family = NULL;
  g_autofree char *name = NULL;
  double scale = 1.0;
  for (guint i = 0; i < lines->len; i++) {
    const StatLine *l = &g_array_index (lines, StatLine, i);
    if (family == NULL || strcmp (family, l->name) != 0) {
      family = l->name;
      g_free (name);
      scale = exported_name (l->name, &name);
      gboolean counter = g_str_has_suffix (l->name, "_total");
      g_autofree char *help = g_strdup_printf (
          "%s reported by the stage's stats callback (%s)", l->name,
          counter ? "a count since the stage started" : "its value at the scrape");
      write_family_head (out, name, help, counter ? "counter" : "gauge");
    }
    g_autofree char *lb = stage_labels (l->stage);
    g_string_append_printf (out, "sedp_%s{%s%s%s} %.17g\n", name, lb, l->labels ? "," : "",
                            l->labels ? l->labels : "", l->value * scale);
  }
}

SedpStats *
sedp_stats_new (const char *stage, GString *out)
{
  SedpStats *s = g_new0 (SedpStats, 1);
  s->stage = g_strdup (stage);
  s->out = out;
  return s;
}

void
sedp_stats_free (SedpStats *s)
{
  if (s == NULL)
    return;
  g_free (s->stage);
  g_free (s);
}

void
sedp_stats_add (SedpStats *stats, const char *name, double value)
{
  g_return_if_fail (stats != NULL && name != NULL);
  g_string_append_printf (stats->out, "%s %s %g\n", stats->stage, name, value);
}
