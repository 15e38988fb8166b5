/* sedp tests — looking into a parsed pipeline spec (core/dsl/spec.h). */
#pragma once

#include "dsl/spec.h"

#include <string.h>

/* The stage of @spec named @name, or NULL. */
static inline const SedpStageSpec *
stage_named (const SedpPipelineSpec *spec, const char *name)
{
  for (guint i = 0; i < spec->stages->len; i++) {
    const SedpStageSpec *s = spec->stages->pdata[i];
    if (strcmp (s->name, name) == 0)
      return s;
  }
  return NULL;
}

/* The value of the plugin option @key of stage @s as written, or NULL. */
static inline const char *
option_value (const SedpStageSpec *s, const char *key)
{
  for (guint i = 0; s->option_keys[i]; i++)
    if (strcmp (s->option_keys[i], key) == 0)
      return s->option_values[i];
  return NULL;
}
