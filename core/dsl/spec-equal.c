/* sedp — comparing two parsed pipelines by what they say, not where they say it
 * (sedp_pipeline_spec_equal, spec.h): the check of the writer's round trip. */
#include "spec.h"

#include "keys.h"

#include <string.h>

static gboolean
strv_equal (char *const *a, char *const *b)
{
  static char *const empty[] = {NULL};
  return g_strv_equal ((const char *const *) (a ? a : empty),
                       (const char *const *) (b ? b : empty));
}

/* One runtime key of @a and @b (two pipelines' or two stages' specs). */
static gboolean
key_equal (const SedpDslKey *k, gconstpointer a, gconstpointer b)
{
  gconstpointer fa = G_STRUCT_MEMBER_P (a, k->offset), fb = G_STRUCT_MEMBER_P (b, k->offset);
  switch (k->type) {
  case SEDP_DSL_KEY_UINT:
    return *(const guint *) fa == *(const guint *) fb;
  case SEDP_DSL_KEY_DOUBLE:
    return *(const double *) fa == *(const double *) fb;
  case SEDP_DSL_KEY_CHOICE:
    return *(const int *) fa == *(const int *) fb;
  case SEDP_DSL_KEY_STRING:
  case SEDP_DSL_KEY_PATH:
    return g_strcmp0 (*(char *const *) fa, *(char *const *) fb) == 0;
  case SEDP_DSL_KEY_LIST:
    return strv_equal (*(char **const *) fa, *(char **const *) fb);
  case SEDP_DSL_KEY_CPUS: {
    guint n = G_STRUCT_MEMBER (guint, a, k->count_offset);
    return n == G_STRUCT_MEMBER (guint, b, k->count_offset) &&
           (n == 0 || memcmp (*(guint *const *) fa, *(guint *const *) fb, n * sizeof (guint)) == 0);
  }
  }
  return FALSE;
}

static gboolean
keys_equal (SedpDslGroup group, gconstpointer a, gconstpointer b)
{
  guint n;
  const SedpDslKey *keys = sedp_dsl_keys (group, &n);
  for (guint i = 0; i < n; i++)
    if (!key_equal (&keys[i], a, b))
      return FALSE;
  return TRUE;
}

static gboolean
stage_equal (const SedpStageSpec *a, const SedpStageSpec *b)
{
  return strcmp (a->name, b->name) == 0 && keys_equal (SEDP_DSL_GROUP_STAGE, a, b) &&
         strv_equal (a->option_keys, b->option_keys) &&
         strv_equal (a->option_values, b->option_values);
}

/* The [model NAME] groups of @a and @b: the same names with the same keys, in the same order. */
static gboolean
models_equal (const GPtrArray *a, const GPtrArray *b)
{
  guint na = a ? a->len : 0, nb = b ? b->len : 0;
  if (na != nb)
    return FALSE;
  for (guint i = 0; i < na; i++) {
    const SedpModelSpec *ma = a->pdata[i], *mb = b->pdata[i];
    if (strcmp (ma->name, mb->name) != 0 || !keys_equal (SEDP_DSL_GROUP_MODEL, ma, mb))
      return FALSE;
  }
  return TRUE;
}

static gboolean
signatures_equal (const SedpSignatureSpec *a, const SedpSignatureSpec *b)
{
  if (a == NULL || b == NULL)
    return a == b;
  return strcmp (a->name, b->name) == 0 && keys_equal (SEDP_DSL_GROUP_SIGNATURE, a, b);
}

gboolean
sedp_pipeline_spec_equal (const SedpPipelineSpec *a, const SedpPipelineSpec *b)
{
  g_return_val_if_fail (a != NULL && b != NULL, FALSE);
  if (g_strcmp0 (a->path, b->path) != 0 || g_strcmp0 (a->dir, b->dir) != 0 ||
      !keys_equal (SEDP_DSL_GROUP_PIPELINE, a, b) || a->stages->len != b->stages->len ||
      !strv_equal (a->tune_keys, b->tune_keys) || !strv_equal (a->tune_values, b->tune_values) ||
      (a->tune_line != 0) != (b->tune_line != 0) || !models_equal (a->models, b->models) ||
      !signatures_equal (a->signature, b->signature))
    return FALSE;
  for (guint i = 0; i < a->stages->len; i++)
    if (!stage_equal (a->stages->pdata[i], b->stages->pdata[i]))
      return FALSE;
  return TRUE;
}
