/* sedp — libsedp_processor.so: the served model: model_entry's pipeline with model_config
 * applied, built, started and described (docs/compat.md, "libsedp_processor.so"). */
#include "processor-private.h"

#include <json-glib/json-glib.h>
#include <string.h>

/* The bare model's deadline: DeepRec's Processor has none, so a request is given far more than
 * a model run takes (a pipeline file's own deadline_ms applies to it). */
#define BARE_DEADLINE_MS 10000

static gboolean
is_bare_model (const char *entry)
{
  return g_str_has_suffix (entry, ".onnx");
}

/* model_entry's pipeline text: the implicit pipeline of a bare model, or the file. */
static char *
entry_text (const char *entry, GError **error)
{
  if (is_bare_model (entry)) {
    g_autofree char *base = g_path_get_basename (entry);
    base[strlen (base) - strlen (".onnx")] = '\0';
    return sedp_pipeline_text_for_model (*base ? base : "model", entry, BARE_DEADLINE_MS);
  }
  char *text = NULL;
  g_autoptr (GError) io = NULL;
  if (!g_file_get_contents (entry, &text, NULL, &io))
    g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_IO, "model_entry %s: %s", entry,
                 io->message);
  return text;
}

/* @text with @key = @value set in the group of every model_inference stage of @spec. */
static char *
set_in_model_stages (char *text, const SedpPipelineSpec *spec, const char *key, const char *value)
{
  for (guint i = 0; i < spec->stages->len; i++) {
    const SedpStageSpec *stage = spec->stages->pdata[i];
    if (g_strcmp0 (stage->plugin, "model_inference") != 0)
      continue;
    g_autofree char *group = g_strdup_printf ("stage %s", stage->name);
    char *edited = sedp_pipeline_text_set (text, group, key, value);
    g_free (text);
    text = edited;
  }
  return text;
}

/* Parses @entry's pipeline with @config's stage options applied to its model stages. */
static SedpPipelineSpec *
load_spec (const char *entry, const ProcessorConfig *config, GError **error)
{
  char *text = entry_text (entry, error);
  if (text == NULL)
    return NULL;
  g_autoptr (SedpPipelineSpec) plain = sedp_pipeline_spec_parse (text, strlen (text), entry, error);
  if (plain == NULL) {
    g_free (text);
    return NULL;
  }
  char number[16];
  if (config->session_num) {
    g_snprintf (number, sizeof number, "%u", config->session_num);
    text = set_in_model_stages (text, plain, "instances", number);
  }
  if (config->select)
    text = set_in_model_stages (text, plain, "select", config->select);
  if (config->inter_op_threads) {
    g_snprintf (number, sizeof number, "%u", config->inter_op_threads);
    text = set_in_model_stages (text, plain, "parallelism", number);
  }
  SedpPipelineSpec *spec = sedp_pipeline_spec_parse (text, strlen (text), entry, error);
  g_free (text);
  return spec;
}

/* The signature of @graph's entry, named after config->signature_name where the entry does
 * not declare one (a bare model, a pipeline without [signature NAME]). */
static SedpModelApiSignature *
load_signature (const char *entry, const SedpGraph *graph, const ProcessorConfig *config,
                GError **error)
{
  gboolean bare = is_bare_model (entry);
  SedpModelApiSignature *sig = bare ? sedp_model_api_signature_for_model (entry, error)
                                    : sedp_model_api_signature_for_pipeline (graph->spec, error);
  if (sig == NULL || config->signature_name == NULL ||
      strcmp (sig->name, config->signature_name) == 0)
    return sig;
  if (bare || graph->spec->signature == NULL) {
    g_free (sig->name);
    sig->name = g_strdup (config->signature_name);
    return sig;
  }
  g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
               "model_config: \"signature_name\" is \"%s\", but %s declares the signature "
               "\"%s\" ([signature %s]): set signature_name to \"%s\"",
               config->signature_name, entry, sig->name, sig->name, sig->name);
  sedp_model_api_signature_free (sig);
  return NULL;
}

static char *
served_path (const char *entry, const SedpGraph *graph)
{
  if (!is_bare_model (entry) && graph->models && graph->models->len > 0)
    return g_strdup (((const SedpGraphModel *) graph->models->pdata[0])->dir);
  return g_strdup (entry);
}

/* Compiles and starts the pipeline; fills p->pipeline, p->signature, p->model_path. */
static gboolean
start (Processor *p, const ProcessorConfig *config, GError **error)
{
  SedpPipelineSpec *spec = load_spec (p->entry, config, error);
  SedpGraph *graph = spec ? sedp_graph_compile (spec, p->registry, error) : NULL;
  if (graph == NULL)
    return FALSE;
  p->signature = load_signature (p->entry, graph, config, error);
  p->model_path = served_path (p->entry, graph);
  if (p->signature == NULL) {
    sedp_graph_free (graph);
    return FALSE;
  }
  p->pipeline = sedp_pipeline_new (graph, error);
  return p->pipeline && sedp_pipeline_start (p->pipeline, error);
}

Processor *
processor_model_new (const char *entry, const ProcessorConfig *config, GError **error)
{
  Processor *p = g_new0 (Processor, 1);
  p->entry = g_canonicalize_filename (entry, NULL);
  g_auto (GStrv) path = sedp_registry_default_path ();
  p->registry = sedp_registry_new ((const char *const *) path);
  if (!start (p, config, error)) {
    processor_model_free (p);
    return NULL;
  }
  p->debug = processor_describe (p);
  return p;
}

void
processor_model_free (Processor *p)
{
  if (p == NULL)
    return;
  if (p->pipeline)
    sedp_pipeline_free (p->pipeline);
  g_clear_pointer (&p->signature, sedp_model_api_signature_free);
  g_clear_pointer (&p->registry, sedp_registry_free);
  g_free (p->debug);
  g_free (p->model_path);
  g_free (p->entry);
  g_free (p);
}

/* ---- the debug string ---- */

static const char *
dtype_name (SedpColumnType type)
{
  switch (type) {
  case SEDP_COLUMN_FLOAT32:
    return "DT_FLOAT";
  case SEDP_COLUMN_INT64:
    return "DT_INT64";
  case SEDP_COLUMN_STRING:
    return "DT_STRING";
  default:
    return "DT_INVALID";
  }
}

/* DeepRec's {"name", "shape": [-1, dims…], "type"} of each tensor of @tensors. */
static void
add_tensors (JsonBuilder *b, const char *member, const GArray *tensors, gboolean output)
{
  json_builder_set_member_name (b, member);
  json_builder_begin_array (b);
  for (guint i = 0; i < tensors->len; i++) {
    const SedpModelApiTensor *t = &g_array_index (tensors, SedpModelApiTensor, i);
    json_builder_begin_object (b);
    json_builder_set_member_name (b, "name");
    json_builder_add_string_value (b, t->name);
    json_builder_set_member_name (b, "shape");
    json_builder_begin_array (b);
    json_builder_add_int_value (b, -1);
    if (t->dims)
      for (guint d = 0; d < t->n_dims; d++)
        json_builder_add_int_value (b, t->dims[d]);
    else if (t->width != 1)
      json_builder_add_int_value (b, t->width ? (gint64) t->width : -1);
    json_builder_end_array (b);
    json_builder_set_member_name (b, "type");
    json_builder_add_string_value (b, output ? "DT_FLOAT" : dtype_name (t->type));
    json_builder_end_object (b);
  }
  json_builder_end_array (b);
}

static void
add_stages (JsonBuilder *b, const SedpGraph *graph)
{
  json_builder_set_member_name (b, "stages");
  json_builder_begin_array (b);
  for (guint i = 0; i < graph->n_nodes; i++) {
    const SedpGraphNode *node = &graph->nodes[graph->topo[i]];
    json_builder_begin_object (b);
    json_builder_set_member_name (b, "name");
    json_builder_add_string_value (b, node->spec->name);
    json_builder_set_member_name (b, "plugin");
    json_builder_add_string_value (b, node->plugin->name);
    json_builder_set_member_name (b, "parallelism");
    json_builder_add_int_value (b, node->spec->parallelism);
    json_builder_set_member_name (b, "options");
    json_builder_begin_object (b);
    for (guint k = 0; node->spec->option_keys && node->spec->option_keys[k]; k++) {
      json_builder_set_member_name (b, node->spec->option_keys[k]);
      json_builder_add_string_value (b, node->spec->option_values[k]);
    }
    json_builder_end_object (b);
    json_builder_end_object (b);
  }
  json_builder_end_array (b);
}

char *
processor_describe (const Processor *p)
{
  const SedpGraph *graph = sedp_pipeline_get_graph (p->pipeline);
  g_autoptr (JsonBuilder) b = json_builder_new ();
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "signature_name");
  json_builder_add_string_value (b, p->signature->name);
  add_tensors (b, "inputs", p->signature->inputs, FALSE);
  add_tensors (b, "outputs", p->signature->outputs, TRUE);
  json_builder_set_member_name (b, "pipeline");
  json_builder_add_string_value (b, graph->spec->name);
  add_stages (b, graph);
  json_builder_end_object (b);
  g_autoptr (JsonNode) root = json_builder_get_root (b);
  return json_to_string (root, FALSE);
}
