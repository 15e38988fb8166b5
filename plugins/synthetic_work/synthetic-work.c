/* synthetic_work — configurable synthetic cost per row, for tests and benchmarks: CPU work drawn
 * per row from a heavy-tailed distribution, and an I/O wait per call (a remote lookup whose
 * round trip does not depend on the batch size). The draw depends only on (seed, request id,
 * item index), so staged and sync runs of the same requests do exactly the same work. */
#include <sedp/sedp.h>

#include <math.h>
#include <string.h>
#include <time.h>

typedef enum { DIST_FIXED, DIST_EXPONENTIAL, DIST_PARETO, DIST_LOGNORMAL } Distribution;

typedef struct {
  double spin_us;
  Distribution dist;
  double pareto_alpha;
  double max_factor;
  gint64 sleep_us;
  double sleep_per_row_us;
  guint64 seed;
  char *output;
  SedpCounter *spun_us;
} SyntheticWork;

static double loops_per_us;

/* A fixed amount of CPU work that the compiler cannot remove. */
static guint64
burn (guint64 loops)
{
  volatile guint64 x = 0x9E3779B97F4A7C15ull;
  guint64 v = x;
  for (guint64 i = 0; i < loops; i++)
    v = v * 6364136223846793005ull + 1442695040888963407ull;
  x = v;
  return x;
}

static gpointer
calibrate (gpointer unused)
{
  guint64 loops = 1 << 16;
  for (;;) {
    gint64 t0 = g_get_monotonic_time ();
    burn (loops);
    gint64 dt = g_get_monotonic_time () - t0;
    if (dt >= 20000) {
      loops_per_us = (double) loops / (double) dt;
      break;
    }
    loops *= 2;
  }
  return NULL;
}

static guint64
mix (guint64 h)
{
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return h;
}

static guint64
row_hash (const SyntheticWork *w, const char *request_id, guint item)
{
  guint64 h = w->seed * 0x9E3779B97F4A7C15ull;
  for (const char *p = request_id; *p; p++)
    h = mix (h ^ (guint8) *p);
  return mix (h ^ ((guint64) item << 1));
}

/* A uniform number in (0, 1) from a hash. */
static double
unit (guint64 h)
{
  return ((double) (h >> 11) + 0.5) / 9007199254740992.0;
}

static double
draw_cost (const SyntheticWork *w, guint64 h)
{
  double mean = w->spin_us, u = unit (h), v;
  switch (w->dist) {
  case DIST_EXPONENTIAL:
    v = -mean * log (u);
    break;
  case DIST_PARETO: {
    double a = w->pareto_alpha, xm = mean * (a - 1.0) / a;
    v = xm / pow (u, 1.0 / a);
    break;
  }
  case DIST_LOGNORMAL: {
    /* sigma 1: mean = exp(mu + 1/2). */
    double u2 = unit (mix (h + 1)), z = sqrt (-2.0 * log (u)) * cos (2.0 * G_PI * u2);
    v = exp (log (mean) - 0.5 + z);
    break;
  }
  default:
    v = mean;
  }
  return MIN (v, mean * w->max_factor);
}

static gpointer
synthetic_create (SedpStageContext *ctx, GError **error)
{
  static GOnce once = G_ONCE_INIT;
  g_once (&once, calibrate, NULL);
  SyntheticWork *w = g_new0 (SyntheticWork, 1);
  const char *dist = sedp_stage_context_get_string (ctx, "distribution");
  w->spin_us = sedp_stage_context_get_double (ctx, "spin_us");
  w->dist = strcmp (dist, "fixed") == 0         ? DIST_FIXED
            : strcmp (dist, "exponential") == 0 ? DIST_EXPONENTIAL
            : strcmp (dist, "lognormal") == 0   ? DIST_LOGNORMAL
                                                : DIST_PARETO;
  w->pareto_alpha = sedp_stage_context_get_double (ctx, "pareto_alpha");
  w->max_factor = sedp_stage_context_get_double (ctx, "max_factor");
  w->sleep_us = sedp_stage_context_get_int (ctx, "sleep_us");
  w->sleep_per_row_us = sedp_stage_context_get_double (ctx, "sleep_per_row_us");
  w->seed = (guint64) sedp_stage_context_get_int (ctx, "seed");
  const char *out = sedp_stage_context_get_string (ctx, "output");
  w->output = out && *out ? g_strdup (out) : NULL;
  w->spun_us = sedp_stage_context_add_counter (ctx, "synthetic_cpu_us_total",
                                               "CPU work done, in calibrated seconds");
  return w;
}

static gboolean
synthetic_process (gpointer instance, SedpEvent *const *events, guint n_events, guint worker,
                   GError **error)
{
  SyntheticWork *w = instance;
  double cpu_us = 0;
  guint rows = 0;
  for (guint e = 0; e < n_events; e++) {
    SedpFrame *f = sedp_event_get_frame (events[e]);
    const char *rid = sedp_request_get_id (sedp_event_get_request (events[e]));
    guint n = sedp_frame_get_n_rows (f);
    float *score = NULL;
    if (w->output)
      score = sedp_column_float32_data (sedp_frame_add_column (f, w->output, SEDP_COLUMN_FLOAT32, 1));
    for (guint r = 0; r < n; r++) {
      guint64 h = row_hash (w, rid, sedp_frame_get_item_index (f, r));
      if (w->spin_us > 0)
        cpu_us += draw_cost (w, h);
      if (score)
        score[r] = (float) unit (mix (h ^ 0x5bd1e995u));
    }
    rows += n;
  }
  if (cpu_us > 0) {
    burn ((guint64) (cpu_us * loops_per_us));
    sedp_counter_add (w->spun_us, (guint64) cpu_us);
  }
  double wait = (double) w->sleep_us + w->sleep_per_row_us * rows;
  if (wait > 0)
    g_usleep ((gulong) wait);
  return TRUE;
}

static void
synthetic_destroy (gpointer instance)
{
  SyntheticWork *w = instance;
  g_free (w->output);
  g_free (w);
}

static const SedpOptionSpec synthetic_options[] = {
  SEDP_OPTION_DOUBLE_SPEC ("spin_us", "0", 0, 1e7, "Mean CPU work per row, in microseconds"),
  SEDP_OPTION_ENUM_SPEC ("distribution", "pareto", "fixed|exponential|pareto|lognormal",
                         "Distribution of the per-row CPU work"),
  SEDP_OPTION_DOUBLE_SPEC ("pareto_alpha", "1.5", 1.05, 10, "Tail index of the Pareto distribution"),
  SEDP_OPTION_DOUBLE_SPEC ("max_factor", "100", 1, 1e6, "Cap on one row's work, as a multiple of the mean"),
  SEDP_OPTION_INT_SPEC ("sleep_us", "0", 0, 10000000, "I/O wait per process call, in microseconds"),
  SEDP_OPTION_DOUBLE_SPEC ("sleep_per_row_us", "0", 0, 1e6, "Extra I/O wait per row, in microseconds"),
  SEDP_OPTION_INT_SPEC ("seed", "1", 0, 2147483647, "Seed of the per-row draws"),
  SEDP_OPTION_STRING_SPEC ("output", NULL, "Name of a float32 column to write a deterministic pseudo-score into"),
  SEDP_OPTION_END,
};

/* `output`, the one column it writes (none without it). */
static char **
synthetic_writes (const SedpStageContext *ctx, GError **error)
{
  const char *out = sedp_stage_context_get_string (ctx, "output");
  char **cols = g_new0 (char *, 2);
  if (out && *out)
    cols[0] = g_strdup (out);
  return cols;
}

SEDP_STAGE_DEFINE (.name = "synthetic_work", .version = SEDP_VERSION,
                   .description = "Synthetic CPU work (heavy-tailed per row) and I/O wait (per "
                                  "call), deterministic per request and item",
                   .license = "MIT", .scope = SEDP_SCOPE_ITEM, .options = synthetic_options,
                   .create = synthetic_create, .process = synthetic_process,
                   .destroy = synthetic_destroy, .writes = synthetic_writes);
