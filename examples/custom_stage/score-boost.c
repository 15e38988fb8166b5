/* score_boost — an out-of-tree sedp stage plugin: multiplies a float32 score column by a
 * factor on the rows whose flag column is non-zero (promoted items, sponsored content, ...).
 *
 * It shows the parts of the SDK that most item-scope stages use: the option schema, reading
 * options in `create`, a counter, checking the input columns with sedp_frame_require_column(),
 * failing one event with a clear GError while the rest of the batch goes on, broadcast columns,
 * and writing a column in place with sedp_frame_edit_column() (copy on write).
 *
 * Build it with the Makefile next to this file (`make`, which uses `pkg-config sedp`). */
#include <sedp/sedp.h>

typedef struct {
  char *column;        /* the float32 column to boost, in place */
  char *boost_column;  /* int64 or float32 flag: rows where it is non-zero are boosted */
  double factor;
  SedpCounter *boosted; /* rows boosted so far */
} ScoreBoost;

static void
score_boost_destroy (gpointer instance)
{
  ScoreBoost *b = instance;
  g_free (b->column);
  g_free (b->boost_column);
  g_free (b);
}

static gpointer
score_boost_create (SedpStageContext *ctx, GError **error)
{
  /* The core has already checked every option against the schema below (types, the 0..100
   * range of `factor`, unknown keys), so only checks the schema cannot express are left. */
  const char *column = sedp_stage_context_get_string (ctx, "column");
  const char *boost_column = sedp_stage_context_get_string (ctx, "boost_column");
  if (column == NULL || *column == '\0' || boost_column == NULL || *boost_column == '\0') {
    g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_CONFIG,
                 "column and boost_column must name columns");
    return NULL;
  }
  ScoreBoost *b = g_new0 (ScoreBoost, 1);
  b->column = g_strdup (column);
  b->boost_column = g_strdup (boost_column);
  b->factor = sedp_stage_context_get_double (ctx, "factor");
  b->boosted = sedp_stage_context_add_counter (ctx, "boosted_rows_total",
                                               "Rows whose score was multiplied by the factor");
  g_debug ("stage '%s': boosting '%s' by %g where '%s' is non-zero",
           sedp_stage_context_get_name (ctx), b->column, b->factor, b->boost_column);
  return b;
}

/* Whether row @row of the flag column is set. A broadcast column (a request-scope value joined
 * into the item frame) holds one row that applies to every row. */
static gboolean
flag_is_set (const SedpColumn *flag, guint row)
{
  guint r = sedp_column_is_broadcast (flag) ? 0 : row;
  if (sedp_column_get_column_type (flag) == SEDP_COLUMN_FLOAT32)
    return sedp_column_get_float32 (flag)[r] != 0.0f;
  return sedp_column_get_int64 (flag)[r] != 0;
}

/* Boosts one frame; FALSE with @error set (and the frame untouched) when its input is unusable. */
static gboolean
boost_frame (ScoreBoost *b, SedpFrame *frame, GError **error)
{
  /* Check both inputs before writing anything, so that a failure leaves the frame as it was. */
  const SedpColumn *score = sedp_frame_require_column (frame, b->column, SEDP_COLUMN_FLOAT32, 0, error);
  if (score == NULL)
    return FALSE;
  if (sedp_column_is_broadcast (score)) {
    g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_INVALID_INPUT,
                 "column '%s' is a request-scope (broadcast) column; score_boost boosts one "
                 "value per item", b->column);
    return FALSE;
  }
  /* The flag may be int64 (JSON integers and booleans) or float32, one value per row. */
  const SedpColumn *flag = sedp_frame_get_column (frame, b->boost_column);
  SedpColumnType flag_type = flag && sedp_column_get_column_type (flag) == SEDP_COLUMN_FLOAT32
                                 ? SEDP_COLUMN_FLOAT32
                                 : SEDP_COLUMN_INT64;
  flag = sedp_frame_require_column (frame, b->boost_column, flag_type, 1, error);
  if (flag == NULL)
    return FALSE;

  /* Copy on write: when another frame shares the column (fan-out), this copies it first. */
  SedpColumn *out = sedp_frame_edit_column (frame, b->column, error);
  if (out == NULL)
    return FALSE;
  float *values = sedp_column_float32_data (out);
  guint width = sedp_column_get_width (out);
  guint n_rows = sedp_frame_get_n_rows (frame);
  guint64 boosted = 0;
  for (guint r = 0; r < n_rows; r++) {
    if (!flag_is_set (flag, r))
      continue;
    for (guint k = 0; k < width; k++)
      values[(gsize) r * width + k] = (float) (values[(gsize) r * width + k] * b->factor);
    boosted++;
  }
  sedp_counter_add (b->boosted, boosted);
  return TRUE;
}

static gboolean
score_boost_process (gpointer instance, SedpEvent *const *events, guint n_events, guint worker,
                     GError **error)
{
  ScoreBoost *b = instance;
  for (guint e = 0; e < n_events; e++) {
    GError *local = NULL;
    if (!boost_frame (b, sedp_event_get_frame (events[e]), &local)) {
      /* Fail this event only: its items are reported as failed with this message (the runtime
       * adds the stage's name); the other events of the batch, of other requests, go on. */
      sedp_event_fail (events[e], local);
      g_error_free (local);
    }
  }
  return TRUE;
}

static const SedpOptionSpec score_boost_options[] = {
  SEDP_OPTION_STRING_SPEC ("column", "score", "The float32 column to boost (in place)"),
  SEDP_OPTION_DOUBLE_SPEC ("factor", "1.5", 0, 100, "What boosted values are multiplied by"),
  SEDP_OPTION_STRING_SPEC ("boost_column", "promoted",
                           "An int64 or float32 column; rows where it is non-zero are boosted"),
  SEDP_OPTION_END,
};

SEDP_STAGE_DEFINE (.name = "score_boost", .version = "1.0.0",
                   .description = "Multiplies a score by a factor on rows whose flag column is "
                                  "non-zero (an out-of-tree example plugin)",
                   .license = "MIT", .scope = SEDP_SCOPE_ITEM, .options = score_boost_options,
                   .create = score_boost_create, .process = score_boost_process,
                   .destroy = score_boost_destroy);
