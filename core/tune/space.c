/* sedp — the search space of `sedp tune`: its parameters, the optimiser's box, and a point of
 * the box written back as pipeline text (space.h). */
#include "space-private.h"

#include <math.h>
#include <string.h>

G_DEFINE_QUARK (sedp-tune-space-error-quark, sedp_tune_space_error)

static void
param_free (gpointer data)
{
  SedpTuneParam *p = data;
  g_free (p->address);
  g_free (p->group);
  g_free (p->stage);
  g_free (p->key);
  g_strfreev (p->choices);
  g_free (p);
}

SedpTuneSpace *
sedp_tune_space_new (const SedpPipelineSpec *spec)
{
  SedpTuneSpace *space = g_new0 (SedpTuneSpace, 1);
  space->params = g_ptr_array_new_with_free_func (param_free);
  space->n_stages = spec->stages->len;
  space->parallelism = g_new0 (guint, MAX (space->n_stages, 1));
  space->parallelism_param = g_new0 (int, MAX (space->n_stages, 1));
  guint written = 0;
  for (guint i = 0; i < space->n_stages; i++) {
    space->parallelism[i] = ((const SedpStageSpec *) spec->stages->pdata[i])->parallelism;
    space->parallelism_param[i] = -1;
    written += space->parallelism[i];
  }
  /* the pipeline as written, and one more worker per core: every stage has a worker of its
   * own, most of them waiting on their channels */
  space->max_workers = written + sedp_tune_space_cores ();
  return space;
}

void
sedp_tune_space_free (SedpTuneSpace *space)
{
  if (space == NULL)
    return;
  g_ptr_array_unref (space->params);
  g_free (space->parallelism);
  g_free (space->parallelism_param);
  g_free (space);
}

static double
word_index (char *const *words, const char *word)
{
  for (guint i = 0; word && words && words[i]; i++)
    if (strcmp (words[i], word) == 0)
      return i;
  return NAN;
}

SedpTuneParam *
sedp_tune_space_add (SedpTuneSpace *space, const SedpTuneTarget *t, SedpTuneType type,
                     double low, double high, gboolean log, char *const *choices)
{
  SedpTuneParam *p = g_new0 (SedpTuneParam, 1);
  const char *key = t->runtime ? t->runtime->name : t->option->name;
  p->stage = t->stage ? g_strdup (t->stage->name) : NULL;
  p->group = t->stage ? g_strconcat ("stage ", p->stage, NULL) : g_strdup ("pipeline");
  p->address = t->stage ? g_strdup_printf ("stage.%s.%s", p->stage, key)
                        : g_strconcat ("pipeline.", key, NULL);
  p->key = g_strdup (key);
  p->type = type;
  p->low = low;
  p->high = high;
  p->log = log;
  p->choices = g_strdupv ((char **) choices);
  p->runtime = t->runtime != NULL;
  p->start = type == SEDP_TUNE_ENUM ? word_index (choices, t->start_word) : t->start;
  if (p->runtime && t->stage && strcmp (key, "parallelism") == 0)
    space->parallelism_param[t->stage_index] = (int) space->params->len;
  g_ptr_array_add (space->params, p);
  return p;
}

gboolean
sedp_tune_space_check_room (const SedpTuneSpace *space, const char *where, GError **error)
{
  if (space->params->len < SEDP_CMAES_MAX_DIM)
    return TRUE;
  g_set_error (error, SEDP_TUNE_SPACE_ERROR, SEDP_TUNE_SPACE_ERROR_TOO_MANY,
               "%s: the space would have more than %u parameters, the most the optimiser takes "
               "(SEDP_CMAES_MAX_DIM): name stages instead of stage.*, or tune fewer keys",
               where, SEDP_CMAES_MAX_DIM);
  return FALSE;
}

guint
sedp_tune_space_n_params (const SedpTuneSpace *space)
{
  return space->params->len;
}

const SedpTuneParam *
sedp_tune_space_param (const SedpTuneSpace *space, guint i)
{
  g_return_val_if_fail (i < space->params->len, NULL);
  return space->params->pdata[i];
}

guint
sedp_tune_space_max_workers (const SedpTuneSpace *space)
{
  return space->max_workers;
}

/* A value of @p as the optimiser's coordinate: log(1 + v) for a log int, log(v) for a log real. */
static double
to_coordinate (const SedpTuneParam *p, double v)
{
  if (!p->log)
    return v;
  return p->type == SEDP_TUNE_INT ? log1p (v) : log (v);
}

void
sedp_tune_space_to_cmaes (const SedpTuneSpace *space, SedpCmaesOptions *opt)
{
  opt->n = space->params->len;
  for (guint i = 0; i < opt->n; i++) {
    const SedpTuneParam *p = space->params->pdata[i];
    opt->lower[i] = to_coordinate (p, p->low);
    opt->upper[i] = to_coordinate (p, p->high);
    opt->integer[i] = p->type != SEDP_TUNE_REAL && !p->log;
    opt->x0[i] = isnan (p->start) ? NAN : to_coordinate (p, CLAMP (p->start, p->low, p->high));
  }
}

/* The value coordinate @x stands for: within [low, high], rounded unless @p is real. */
static double
decode (const SedpTuneParam *p, double x)
{
  double v = x;
  if (p->log)
    v = p->type == SEDP_TUNE_INT ? expm1 (x) : exp (x);
  if (isnan (v))
    v = p->low;
  if (p->type != SEDP_TUNE_REAL)
    v = round (v);
  return CLAMP (v, p->low, p->high);
}

/* @v with the fewest digits that keep it within [low, high] (a limit of the plugin's may be the
 * range's end, and a value past it would be refused). */
static char *
format_real (double v, double low, double high)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  for (int digits = 6; digits <= 17; digits++) {
    char format[8];
    g_snprintf (format, sizeof format, "%%.%dg", digits);
    g_ascii_formatd (buf, sizeof buf, format, v);
    double back = g_ascii_strtod (buf, NULL);
    if (back >= low && back <= high)
      break;
  }
  return g_strdup (buf);
}

char *
sedp_tune_space_value (const SedpTuneSpace *space, guint i, double coordinate)
{
  const SedpTuneParam *p = sedp_tune_space_param (space, i);
  g_return_val_if_fail (p != NULL, NULL);
  double v = decode (p, coordinate);
  switch (p->type) {
  case SEDP_TUNE_INT:
    return g_strdup_printf ("%" G_GINT64_FORMAT, (gint64) v);
  case SEDP_TUNE_REAL:
    return format_real (v, p->low, p->high);
  case SEDP_TUNE_BOOL:
    return g_strdup (v >= 1 ? "true" : "false");
  case SEDP_TUNE_ENUM:
    return g_strdup (p->choices[(guint) v]);
  }
  return NULL;
}

/* Σ parallelism over the stages (tuned at @x, else as written) − max_workers, at least 0. */
static double
worker_excess (const SedpTuneSpace *space, const double *x)
{
  double total = 0;
  for (guint s = 0; s < space->n_stages; s++) {
    int k = space->parallelism_param[s];
    total += k >= 0 ? decode (space->params->pdata[k], x[k]) : space->parallelism[s];
  }
  return MAX (0.0, total - space->max_workers);
}

char *
sedp_tune_space_apply (const SedpTuneSpace *space, const double *x, const char *text,
                       double *violation)
{
  char *out = g_strdup (text);
  for (guint i = 0; i < space->params->len; i++) {
    const SedpTuneParam *p = space->params->pdata[i];
    g_autofree char *value = sedp_tune_space_value (space, i, x[i]);
    g_autofree char *as_given =
      isnan (p->start) || p->start < p->low || p->start > p->high
        ? NULL
        : sedp_tune_space_value (space, i, to_coordinate (p, p->start));
    if (as_given && strcmp (as_given, value) == 0)
      continue; /* unchanged: the file keeps its own text (or the key stays unset) */
    char *next = sedp_pipeline_text_set (out, p->group, p->key, value);
    g_free (out);
    out = next;
  }
  if (violation)
    *violation = worker_excess (space, x);
  return out;
}
