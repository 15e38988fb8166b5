/* sedp — a [tune] group read into a search space (sedp_tune_space_parse, sedp_tune_space_load):
 * addresses, wildcards and max_workers here; each declaration through space-decl.c. */
#include "space-decl.h"

#include "../dsl/options.h"

#include <string.h>

typedef struct {
  const SedpPipelineSpec *spec;
  SedpRegistry *registry;
  SedpTuneSpace *space;
  GHashTable *named; /* "NAME\nKEY" of every stage.NAME.KEY entry: wildcards skip those */
} Parser;

/* stage.NAME.KEY (NAME a stage or "*") or pipeline.KEY (stage NULL). */
typedef struct {
  char *stage;
  char *key;
} Address;

static gboolean
valid_word (const char *s, gboolean star)
{
  if (star && strcmp (s, "*") == 0)
    return TRUE;
  for (const char *c = s; *c; c++)
    if (!g_ascii_isalnum (*c) && *c != '_' && *c != '-')
      return FALSE;
  return *s != '\0';
}

static gboolean
split_address (const char *key, Address *a)
{
  g_auto (GStrv) parts = g_strsplit (key, ".", -1);
  guint n = g_strv_length (parts);
  if (n == 2 && strcmp (parts[0], "pipeline") == 0 && valid_word (parts[1], FALSE)) {
    a->key = g_strdup (parts[1]);
    return TRUE;
  }
  if (n == 3 && strcmp (parts[0], "stage") == 0 && valid_word (parts[1], TRUE) &&
      valid_word (parts[2], FALSE)) {
    a->stage = g_strdup (parts[1]);
    a->key = g_strdup (parts[2]);
    return TRUE;
  }
  return FALSE;
}

static void
address_clear (Address *a)
{
  g_clear_pointer (&a->stage, g_free);
  g_clear_pointer (&a->key, g_free);
}

static gboolean
address_error (const SedpTuneEntry *e, GError **error)
{
  sedp_tune_entry_error (e, error, SEDP_TUNE_SPACE_ERROR_ADDRESS,
                         "'%s' is not an address: write stage.NAME.KEY, stage.*.KEY, "
                         "pipeline.KEY or max_workers",
                         e->key);
  return FALSE;
}

static gboolean
parse_max_workers (Parser *p, const SedpTuneEntry *e, GError **error)
{
  guint64 n;
  if (g_ascii_string_to_unsigned (e->value, 10, 1, 1 << 20, &n, NULL)) {
    p->space->max_workers = (guint) n;
    return TRUE;
  }
  sedp_tune_entry_error (e, error, SEDP_TUNE_SPACE_ERROR_MAX_WORKERS,
                         "expected an integer from 1 to 1048576, got '%s' (the most worker "
                         "threads all stages together may have; leave it out for the pipeline's "
                         "workers as written plus the cores, %u here)",
                         e->value, p->space->max_workers);
  return FALSE;
}

/* The names of @schema's options, ", "-separated ("none"). */
static char *
option_names (const SedpOptionSpec *schema)
{
  GString *out = g_string_new (NULL);
  for (const SedpOptionSpec *o = schema; o && o->name; o++)
    g_string_append_printf (out, "%s%s", out->len ? ", " : "", o->name);
  if (out->len == 0)
    g_string_append (out, "none");
  return g_string_free (out, FALSE);
}

static gboolean
tunable_option (const SedpOptionSpec *o)
{
  return o->type == SEDP_OPTION_INT || o->type == SEDP_OPTION_DOUBLE ||
         o->type == SEDP_OPTION_BOOL || o->type == SEDP_OPTION_ENUM;
}

/* Whether @t names a key `sedp tune` may set; if not, the error says which may be. */
static gboolean
check_tunable (const SedpTuneEntry *e, const SedpTuneTarget *t, const char *key, GError **error)
{
  SedpDslGroup group = t->stage ? SEDP_DSL_GROUP_STAGE : SEDP_DSL_GROUP_PIPELINE;
  if ((t->runtime && sedp_tune_space_tunable (group, key)) ||
      (t->option && tunable_option (t->option)))
    return TRUE;
  g_autofree char *runtime = sedp_tune_space_tunable_names (group);
  g_autofree char *options = option_names (t->schema);
  if (t->runtime)
    sedp_tune_entry_error (e, error, SEDP_TUNE_SPACE_ERROR_NOT_TUNABLE,
                           "the runtime key %s is not tuned (docs/tuning.md, The search space); "
                           "the tunable ones of [%s]: %s",
                           key, t->stage ? "stage NAME" : "pipeline", runtime);
  else if (t->option)
    sedp_tune_entry_error (e, error, SEDP_TUNE_SPACE_ERROR_NOT_TUNABLE,
                           "option '%s' of plugin '%s' (stage '%s') is a %s; only int, double, "
                           "bool and enum options are tuned",
                           key, t->plugin, t->stage->name,
                           sedp_option_type_to_string (t->option->type));
  else
    sedp_tune_entry_error (e, error, SEDP_TUNE_SPACE_ERROR_UNKNOWN_KEY,
                           "'%s' is neither a tunable runtime key (%s) nor an option of plugin "
                           "'%s' of stage '%s' (its options: %s): write one of them",
                           key, runtime, t->plugin, t->stage->name, options);
  return FALSE;
}

static gboolean
add_param (Parser *p, const SedpTuneEntry *e, const SedpTuneDecl *d, const SedpTuneTarget *t,
           GError **error)
{
  if (!sedp_tune_decl_fits (e, d, t, error) ||
      !sedp_tune_space_check_room (p->space, e->where, error))
    return FALSE;
  SedpTuneParam *param =
      sedp_tune_space_add (p->space, t, d->type, d->low, d->high, d->log, d->choices);
  param->line = e->line;
  return TRUE;
}

static gboolean
pipeline_param (Parser *p, const SedpTuneEntry *e, const SedpTuneDecl *d, const char *key,
                GError **error)
{
  SedpTuneTarget t;
  sedp_tune_target_pipeline (p->spec, key, &t);
  if (t.runtime == NULL) {
    g_autofree char *tunable = sedp_tune_space_tunable_names (SEDP_DSL_GROUP_PIPELINE);
    sedp_tune_entry_error (e, error, SEDP_TUNE_SPACE_ERROR_UNKNOWN_KEY,
                           "'%s' is not a key of [pipeline]: write one of the tunable ones, %s",
                           key, tunable);
    return FALSE;
  }
  return check_tunable (e, &t, key, error) && add_param (p, e, d, &t, error);
}

/* Stage @index's parameter @key. A wildcard's (@wildcard) is skipped when @key is neither a
 * runtime key nor an option of that stage's plugin; *@added says whether one was added. */
static gboolean
stage_param (Parser *p, const SedpTuneEntry *e, const SedpTuneDecl *d, guint index,
             const char *key, gboolean wildcard, gboolean *added, GError **error)
{
  SedpTuneTarget t;
  if (!sedp_tune_target_stage (p->spec, p->registry, index, key, e->where, &t, error))
    return FALSE;
  gboolean ok = TRUE;
  if (!wildcard || t.runtime || t.option) {
    ok = check_tunable (e, &t, key, error) && add_param (p, e, d, &t, error);
    *added |= ok;
  }
  sedp_tune_target_clear (&t);
  return ok;
}

static gboolean
named_param (Parser *p, const SedpTuneEntry *e, const SedpTuneDecl *d, const Address *a,
             GError **error)
{
  gboolean added = FALSE;
  for (guint i = 0; i < p->spec->stages->len; i++)
    if (strcmp (((const SedpStageSpec *) p->spec->stages->pdata[i])->name, a->stage) == 0)
      return stage_param (p, e, d, i, a->key, FALSE, &added, error);
  GString *names = g_string_new (NULL);
  for (guint i = 0; i < p->spec->stages->len; i++)
    g_string_append_printf (names, "%s%s", i ? ", " : "",
                            ((const SedpStageSpec *) p->spec->stages->pdata[i])->name);
  sedp_tune_entry_error (e, error, SEDP_TUNE_SPACE_ERROR_UNKNOWN_STAGE,
                         "no stage '%s' in %s (its stages: %s): name one of them, or write "
                         "stage.*.%s for every stage",
                         a->stage, p->spec->path, names->str, a->key);
  g_string_free (names, TRUE);
  return FALSE;
}

/* stage.*.KEY: one parameter per stage that has KEY, except stages named for KEY elsewhere. */
static gboolean
wildcard_params (Parser *p, const SedpTuneEntry *e, const SedpTuneDecl *d, const char *key,
                 GError **error)
{
  gboolean added = FALSE, named = FALSE;
  for (guint i = 0; i < p->spec->stages->len; i++) {
    const SedpStageSpec *s = p->spec->stages->pdata[i];
    g_autofree char *k = g_strconcat (s->name, "\n", key, NULL);
    if (g_hash_table_contains (p->named, k))
      named = TRUE;
    else if (!stage_param (p, e, d, i, key, TRUE, &added, error))
      return FALSE;
  }
  if (!added && !named) {
    g_autofree char *runtime = sedp_tune_space_tunable_names (SEDP_DSL_GROUP_STAGE);
    sedp_tune_entry_error (e, error, SEDP_TUNE_SPACE_ERROR_UNKNOWN_KEY,
                           "'%s' is neither a tunable runtime key (%s) nor an option of any "
                           "stage's plugin: write one of them (sedp inspect PLUGIN lists options)",
                           key, runtime);
  }
  return added || named;
}

static gboolean
parse_entry (Parser *p, const SedpTuneEntry *e, GError **error)
{
  if (strcmp (e->key, "max_workers") == 0)
    return parse_max_workers (p, e, error);
  Address a = {0};
  SedpTuneDecl d = {0};
  gboolean ok = (split_address (e->key, &a) || address_error (e, error)) &&
                sedp_tune_decl_parse (e, &d, error);
  if (ok && a.stage == NULL)
    ok = pipeline_param (p, e, &d, a.key, error);
  else if (ok && strcmp (a.stage, "*") == 0)
    ok = wildcard_params (p, e, &d, a.key, error);
  else if (ok)
    ok = named_param (p, e, &d, &a, error);
  sedp_tune_decl_clear (&d);
  address_clear (&a);
  return ok;
}

static gboolean
parse_entries (Parser *p, const SedpPipelineSpec *tune, GError **error)
{
  for (guint i = 0; tune->tune_keys[i]; i++) {
    g_autofree char *where = g_strdup_printf ("%s:%u: [tune] %s", tune->path, tune->tune_lines[i],
                                              tune->tune_keys[i]);
    g_autoptr (GError) local = NULL;
    g_autofree char *value = sedp_dsl_substitute (tune->tune_values[i], &local);
    if (value == NULL) {
      g_set_error (error, SEDP_TUNE_SPACE_ERROR, SEDP_TUNE_SPACE_ERROR_SYNTAX, "%s: %s", where,
                   local->message);
      return FALSE;
    }
    SedpTuneEntry e = {tune->tune_keys[i], value, tune->tune_lines[i], where};
    if (!parse_entry (p, &e, error))
      return FALSE;
  }
  return TRUE;
}

/* Every stage.NAME.KEY of @tune with a stage's own name, as "NAME\nKEY". */
static GHashTable *
named_keys (const SedpPipelineSpec *tune)
{
  GHashTable *named = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  for (guint i = 0; tune->tune_keys[i]; i++) {
    Address a = {0};
    if (split_address (tune->tune_keys[i], &a) && a.stage && strcmp (a.stage, "*") != 0)
      g_hash_table_add (named, g_strconcat (a.stage, "\n", a.key, NULL));
    address_clear (&a);
  }
  return named;
}

SedpTuneSpace *
sedp_tune_space_parse (const SedpPipelineSpec *spec, const SedpPipelineSpec *tune,
                       SedpRegistry *registry, GError **error)
{
  g_return_val_if_fail (spec != NULL && tune != NULL && registry != NULL, NULL);
  Parser p = {spec, registry, sedp_tune_space_new (spec), named_keys (tune)};
  gboolean ok = parse_entries (&p, tune, error);
  if (ok && p.space->params->len == 0) {
    g_autofree char *line = tune->tune_line ? g_strdup_printf (":%u", tune->tune_line) : NULL;
    g_set_error (error, SEDP_TUNE_SPACE_ERROR, SEDP_TUNE_SPACE_ERROR_EMPTY,
                 "%s%s: [tune]: no parameter to tune: add one (e.g. stage.NAME.batch = int "
                 "1..64), or leave the group out for the default space",
                 tune->path, line ? line : "");
    ok = FALSE;
  }
  g_hash_table_unref (p.named);
  if (!ok)
    g_clear_pointer (&p.space, sedp_tune_space_free);
  return p.space;
}

SedpTuneSpace *
sedp_tune_space_load (const SedpPipelineSpec *spec, const char *path, SedpRegistry *registry,
                      GError **error)
{
  g_autoptr (SedpPipelineSpec) tune = sedp_pipeline_spec_load (path, error);
  if (tune == NULL)
    return NULL;
  if (tune->stages->len > 0 || tune->key_lines) {
    const SedpStageSpec *s = tune->stages->len ? tune->stages->pdata[0] : NULL;
    g_autofree char *group = s ? g_strdup_printf ("%u: [stage %s]", s->line, s->name)
                               : g_strdup (" [pipeline]");
    g_set_error (error, SEDP_TUNE_SPACE_ERROR, SEDP_TUNE_SPACE_ERROR_FILE,
                 "%s:%s: a space file holds only a [tune] group: move this group into the "
                 "pipeline file, or leave it out",
                 path, group);
    return NULL;
  }
  return sedp_tune_space_parse (spec, tune, registry, error);
}
