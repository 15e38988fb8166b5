/* sedp — the stage context: a stage's name, scope, options and metrics, as plugins see them. */
#include "runtime-private.h"

G_DEFINE_QUARK (sedp-stage-error-quark, sedp_stage_error)

const char *
sedp_stage_context_get_name (const SedpStageContext *ctx)
{
  g_return_val_if_fail (ctx != NULL, NULL);
  return ctx->name;
}

SedpScope
sedp_stage_context_get_scope (const SedpStageContext *ctx)
{
  g_return_val_if_fail (ctx != NULL, 0);
  return ctx->scope;
}

guint
sedp_stage_context_get_parallelism (const SedpStageContext *ctx)
{
  g_return_val_if_fail (ctx != NULL, 1);
  return ctx->parallelism;
}

guint
sedp_stage_context_get_batch (const SedpStageContext *ctx)
{
  g_return_val_if_fail (ctx != NULL, 1);
  return ctx->batch;
}

/* The index of option @name with type @want (or any of the string types), or -1 after a
 * critical. */
static int
option_index (const SedpStageContext *ctx, const char *name, SedpOptionType want)
{
  SedpOptionType type;
  int i = ctx->options ? sedp_option_values_find (ctx->options, name, &type) : -1;
  if (i < 0) {
    g_critical ("stage '%s': the plugin asked for option '%s', which its schema does not declare",
                ctx->name, name);
    return -1;
  }
  gboolean stringy = type == SEDP_OPTION_STRING || type == SEDP_OPTION_PATH || type == SEDP_OPTION_ENUM;
  if (type != want && !(want == SEDP_OPTION_STRING && stringy)) {
    g_critical ("stage '%s': option '%s' is of type %s, asked as %s", ctx->name, name,
                sedp_option_type_to_string (type), sedp_option_type_to_string (want));
    return -1;
  }
  return i;
}

gboolean
sedp_stage_context_get_bool (const SedpStageContext *ctx, const char *name)
{
  int i = option_index (ctx, name, SEDP_OPTION_BOOL);
  return i < 0 ? FALSE : sedp_option_values_get_bool (ctx->options, i);
}

gint64
sedp_stage_context_get_int (const SedpStageContext *ctx, const char *name)
{
  int i = option_index (ctx, name, SEDP_OPTION_INT);
  return i < 0 ? 0 : sedp_option_values_get_int (ctx->options, i);
}

double
sedp_stage_context_get_double (const SedpStageContext *ctx, const char *name)
{
  int i = option_index (ctx, name, SEDP_OPTION_DOUBLE);
  return i < 0 ? 0.0 : sedp_option_values_get_double (ctx->options, i);
}

const char *
sedp_stage_context_get_string (const SedpStageContext *ctx, const char *name)
{
  int i = option_index (ctx, name, SEDP_OPTION_STRING);
  return i < 0 ? NULL : sedp_option_values_get_string (ctx->options, i);
}

const char *const *
sedp_stage_context_get_strv (const SedpStageContext *ctx, const char *name)
{
  int i = option_index (ctx, name, SEDP_OPTION_STRING_LIST);
  return i < 0 ? NULL : sedp_option_values_get_strv (ctx->options, i);
}

SedpCounter *
sedp_stage_context_add_counter (SedpStageContext *ctx, const char *name, const char *help)
{
  g_return_val_if_fail (ctx != NULL && name != NULL, NULL);
  return sedp_metrics_counter (ctx->metrics, ctx->name, name, help);
}

SedpCounter *
sedp_stage_context_add_degraded_counter (SedpStageContext *ctx, const char *name,
                                         const char *help)
{
  g_return_val_if_fail (ctx != NULL && name != NULL, NULL);
  return sedp_metrics_degraded_counter (ctx->metrics, ctx->name, name, help, TRUE);
}

SedpHistogram *
sedp_stage_context_add_histogram (SedpStageContext *ctx, const char *name, const char *help,
                                  const double *bounds, guint n_bounds)
{
  g_return_val_if_fail (ctx != NULL && name != NULL && (bounds != NULL || n_bounds == 0), NULL);
  return sedp_metrics_histogram (ctx->metrics, ctx->name, name, help, bounds, n_bounds);
}
