/* sedp — libsedp_processor.so: DeepRec's model_config JSON (docs/compat.md, "model_config"). */
#include "processor-private.h"

#include <json-glib/json-glib.h>
#include <string.h>

/* Keys DeepRec reads that mean nothing here, and why (logged once per initialize()). */
static const struct {
  const char *key;
  const char *why;
} ignored_keys[] = {
  {"intra_op_parallelism_threads", "sedp's engine runs each operator in the worker's own thread "
                                   "(OpenBLAS single-threaded); parallelism comes from "
                                   "inter_op_parallelism_threads"},
  {"omp_num_threads", "sedp does not use OpenMP"},
  {"kmp_blocktime", "sedp does not use OpenMP"},
  {"enable_inline_execute", "sedp's stages always run their operators inline"},
  {"init_timeout_minutes", "initialize() returns once the model is loaded and warmed up"},
  {"model_store_type", "the model is model_entry, a local file"},
  {"checkpoint_dir", "the model is model_entry (an ONNX file or a pipeline file)"},
  {"savedmodel_dir", "the model is model_entry (an ONNX file or a pipeline file)"},
  {"feature_store_type", "a pipeline's cube_accessor stage reads its features"},
};

static gboolean
bad_value (const char *key, JsonNode *node, const char *want, GError **error)
{
  g_autofree char *text = json_to_string (node, FALSE);
  g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
               "model_config: \"%s\" is %s: it must be %s", key, text, want);
  return FALSE;
}

static gboolean
get_uint (const char *key, JsonNode *node, guint max, guint *out, GError **error)
{
  g_autofree char *want = g_strdup_printf ("an integer from 1 to %u", max);
  if (!JSON_NODE_HOLDS_VALUE (node) || json_node_get_value_type (node) != G_TYPE_INT64 ||
      json_node_get_int (node) < 1 || json_node_get_int (node) > max)
    return bad_value (key, node, want, error);
  *out = (guint) json_node_get_int (node);
  return TRUE;
}

static gboolean
get_string (const char *key, JsonNode *node, const char **out, GError **error)
{
  if (!JSON_NODE_HOLDS_VALUE (node) || json_node_get_value_type (node) != G_TYPE_STRING)
    return bad_value (key, node, "a string", error);
  *out = json_node_get_string (node);
  return TRUE;
}

static gboolean
get_policy (JsonNode *node, ProcessorConfig *config, GError **error)
{
  const char *s;
  if (!get_string ("select_session_policy", node, &s, error))
    return FALSE;
  if (strcmp (s, "MOD") == 0)
    config->select = "mod";
  else if (strcmp (s, "RR") == 0)
    config->select = "rr";
  else
    return bad_value ("select_session_policy", node, "\"MOD\" or \"RR\"", error);
  return TRUE;
}

static gboolean
get_protocol (JsonNode *node, GError **error)
{
  const char *s;
  if (!get_string ("serialize_protocol", node, &s, error))
    return FALSE;
  if (strcmp (s, "protobuf") != 0)
    return bad_value ("serialize_protocol", node,
                      "\"protobuf\" (the only one sedp speaks; DeepRec's \"flatbuffer\" is "
                      "unimplemented there too)", error);
  return TRUE;
}

static void
log_ignored (const char *key)
{
  for (guint i = 0; i < G_N_ELEMENTS (ignored_keys); i++)
    if (strcmp (key, ignored_keys[i].key) == 0) {
      g_message ("model_config: \"%s\" ignored: %s", key, ignored_keys[i].why);
      return;
    }
  g_message ("model_config: \"%s\" ignored: sedp does not use it", key);
}

/* One member of the object: honoured, or logged as ignored. */
static gboolean
apply_key (const char *key, JsonNode *node, ProcessorConfig *config, GError **error)
{
  const char *s;
  if (strcmp (key, "session_num") == 0)
    return get_uint (key, node, 256, &config->session_num, error);
  if (strcmp (key, "select_session_policy") == 0)
    return get_policy (node, config, error);
  if (strcmp (key, "inter_op_parallelism_threads") == 0)
    return get_uint (key, node, 1024, &config->inter_op_threads, error);
  if (strcmp (key, "serialize_protocol") == 0)
    return get_protocol (node, error);
  if (strcmp (key, "signature_name") == 0) {
    if (!get_string (key, node, &s, error))
      return FALSE;
    if (*s == '\0')
      return bad_value (key, node, "a signature's name, not empty", error);
    g_free (config->signature_name);
    config->signature_name = g_strdup (s);
    return TRUE;
  }
  if (strcmp (key, "warmup_file_name") == 0) {
    if (!get_string (key, node, &s, error))
      return FALSE;
    g_free (config->warmup_file_name);
    config->warmup_file_name = *s ? g_strdup (s) : NULL;
    return TRUE;
  }
  log_ignored (key);
  return TRUE;
}

gboolean
processor_config_parse (const char *json, ProcessorConfig *config, GError **error)
{
  memset (config, 0, sizeof *config);
  if (json == NULL || *json == '\0')
    return TRUE;
  g_autoptr (JsonParser) parser = json_parser_new_immutable ();
  g_autoptr (GError) local = NULL;
  if (!json_parser_load_from_data (parser, json, -1, &local)) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                 "model_config is not valid JSON: %s", local->message);
    return FALSE;
  }
  JsonNode *root = json_parser_get_root (parser);
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT (root)) {
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                 "model_config must be a JSON object ({\"session_num\": 2, …}), not %s",
                 root ? json_node_type_name (root) : "empty");
    return FALSE;
  }
  JsonObjectIter iter;
  const char *key;
  JsonNode *node;
  json_object_iter_init (&iter, json_node_get_object (root));
  while (json_object_iter_next (&iter, &key, &node))
    if (!apply_key (key, node, config, error)) {
      processor_config_clear (config);
      return FALSE;
    }
  return TRUE;
}

void
processor_config_clear (ProcessorConfig *config)
{
  g_clear_pointer (&config->signature_name, g_free);
  g_clear_pointer (&config->warmup_file_name, g_free);
}
