/* sedp — a PredictRequest's JSON form encoded as protobuf, and a PredictResponse's status read
 * (see predict-pb.h; the messages: core/proto/sedp.proto, docs/protocol.md). */
#include "predict-pb.h"
#include "../load/error.h"
#include "wire.h"

#include <string.h>

/* ---- JSON values ---- */

/* An integer, or a string of one (the JSON form of a 64-bit id). */
static gboolean
json_int (JsonNode *n, guint64 *out)
{
  if (n == NULL || JSON_NODE_TYPE (n) != JSON_NODE_VALUE)
    return FALSE;
  GType t = json_node_get_value_type (n);
  if (t == G_TYPE_INT64) {
    *out = (guint64) json_node_get_int (n);
    return TRUE;
  }
  if (t != G_TYPE_STRING)
    return FALSE;
  const char *s = json_node_get_string (n);
  char *end = NULL;
  *out = *s == '-' ? (guint64) g_ascii_strtoll (s, &end, 10) : g_ascii_strtoull (s, &end, 10);
  return *s && end && *end == '\0';
}

static gboolean
json_is_int (JsonNode *n)
{
  return n && JSON_NODE_TYPE (n) == JSON_NODE_VALUE && json_node_get_value_type (n) == G_TYPE_INT64;
}

static double
json_num (JsonNode *n)
{
  if (JSON_NODE_TYPE (n) != JSON_NODE_VALUE)
    return 0;
  GType t = json_node_get_value_type (n);
  if (t == G_TYPE_INT64)
    return (double) json_node_get_int (n);
  if (t == G_TYPE_DOUBLE)
    return json_node_get_double (n);
  if (t == G_TYPE_STRING)
    return g_ascii_strtod (json_node_get_string (n), NULL);
  return 0;
}

/* ---- Feature ---- */

/* An IdList (Feature field 4) of @a's integers, packed. */
static void
pb_ids (GByteArray *feat, JsonArray *a)
{
  GByteArray *list = g_byte_array_new (), *packed = g_byte_array_new ();
  for (guint i = 0; i < json_array_get_length (a); i++) {
    guint64 v = 0;
    json_int (json_array_get_element (a, i), &v);
    wire_put_varint (packed, v);
  }
  if (packed->len)
    wire_put_bytes (list, 1, packed->data, packed->len);
  g_byte_array_unref (packed);
  wire_put_message (feat, 4, list);
}

/* A FloatList (Feature field 5) of @a's numbers, packed. */
static void
pb_floats (GByteArray *feat, JsonArray *a)
{
  GByteArray *list = g_byte_array_new (), *packed = g_byte_array_new ();
  for (guint i = 0; i < json_array_get_length (a); i++)
    wire_put_float (packed, (float) json_num (json_array_get_element (a, i)));
  if (packed->len)
    wire_put_bytes (list, 1, packed->data, packed->len);
  g_byte_array_unref (packed);
  wire_put_message (feat, 5, list);
}

/* A list given as an array, or as an object holding the array in @inner ({"ids": [...]}). */
static gboolean
pb_list (GByteArray *feat, JsonNode *v, const char *inner, void (*put) (GByteArray *, JsonArray *))
{
  if (JSON_NODE_HOLDS_OBJECT (v))
    v = json_object_get_member (json_node_get_object (v), inner);
  if (v == NULL || !JSON_NODE_HOLDS_ARRAY (v))
    return FALSE;
  put (feat, json_node_get_array (v));
  return TRUE;
}

/* {"int_value": …}, {"float_value": …}, {"string_value": …}, {"ids": …}, {"floats": …}. */
static gboolean
pb_feature_object (GByteArray *f, JsonObject *o)
{
  JsonNode *v;
  guint64 u;
  if ((v = json_object_get_member (o, "int_value")) && json_int (v, &u))
    wire_put_uint_field (f, 1, u);
  else if ((v = json_object_get_member (o, "float_value")))
    wire_put_float_field (f, 2, (float) json_num (v));
  else if ((v = json_object_get_member (o, "string_value")) && JSON_NODE_HOLDS_VALUE (v))
    wire_put_string (f, 3, json_node_get_string (v));
  else if ((v = json_object_get_member (o, "ids")))
    return pb_list (f, v, "ids", pb_ids);
  else if ((v = json_object_get_member (o, "floats")))
    return pb_list (f, v, "values", pb_floats);
  else
    return FALSE;
  return TRUE;
}

/* A bare array: ids when every element is an integer, floats otherwise. */
static gboolean
pb_feature_array (GByteArray *f, JsonArray *a)
{
  gboolean ints = TRUE;
  for (guint i = 0; i < json_array_get_length (a) && ints; i++)
    ints = json_is_int (json_array_get_element (a, i));
  (ints ? pb_ids : pb_floats) (f, a);
  return TRUE;
}

/* A bare integer, number or string. */
static gboolean
pb_feature_value (GByteArray *f, JsonNode *n)
{
  GType t = json_node_get_value_type (n);
  if (t == G_TYPE_INT64)
    wire_put_uint_field (f, 1, (guint64) json_node_get_int (n));
  else if (t == G_TYPE_DOUBLE)
    wire_put_float_field (f, 2, (float) json_node_get_double (n));
  else if (t == G_TYPE_STRING)
    wire_put_string (f, 3, json_node_get_string (n));
  else
    return FALSE;
  return TRUE;
}

/* The Feature message of @n, the value of feature @name. */
static GByteArray *
pb_feature (JsonNode *n, const char *name, GError **error)
{
  GByteArray *f = g_byte_array_new ();
  gboolean ok = JSON_NODE_HOLDS_OBJECT (n)  ? pb_feature_object (f, json_node_get_object (n))
                : JSON_NODE_HOLDS_ARRAY (n) ? pb_feature_array (f, json_node_get_array (n))
                : JSON_NODE_HOLDS_VALUE (n) && pb_feature_value (f, n);
  if (ok)
    return f;
  g_byte_array_unref (f);
  g_set_error (error, SEDP_LOADGEN_ERROR, SEDP_LOADGEN_ERROR_WORKLOAD,
               "feature '%s': unsupported value (give a number, a string, an array of numbers, or "
               "an object with one of int_value, float_value, string_value, ids, floats)",
               name);
  return NULL;
}

/* The map entries (name → Feature) of the features object @n, as field @field of @msg. */
static gboolean
pb_features (GByteArray *msg, guint field, JsonNode *n, GError **error)
{
  if (n == NULL)
    return TRUE;
  if (!JSON_NODE_HOLDS_OBJECT (n)) {
    g_set_error (error, SEDP_LOADGEN_ERROR, SEDP_LOADGEN_ERROR_WORKLOAD,
                 "features must be an object of name: value, not a %s", json_node_type_name (n));
    return FALSE;
  }
  JsonObject *o = json_node_get_object (n);
  g_autoptr (GList) names = json_object_get_members (o);
  for (GList *l = names; l; l = l->next) {
    GByteArray *feat = pb_feature (json_object_get_member (o, l->data), l->data, error);
    if (feat == NULL)
      return FALSE;
    GByteArray *entry = g_byte_array_new ();
    wire_put_string (entry, 1, l->data);
    wire_put_message (entry, 2, feat);
    wire_put_message (msg, field, entry);
  }
  return TRUE;
}

/* ---- PredictRequest ---- */

/* A User or an Item message: id (field 1), features (field 2), and an item's escore (field 3). */
static gboolean
pb_entity (GByteArray *msg, guint field, JsonObject *o, GError **error)
{
  GByteArray *m = g_byte_array_new ();
  guint64 u;
  if (json_int (json_object_get_member (o, "id"), &u))
    wire_put_uint_field (m, 1, u);
  if (!pb_features (m, 2, json_object_get_member (o, "features"), error)) {
    g_byte_array_unref (m);
    return FALSE;
  }
  JsonNode *e = json_object_get_member (o, "escore");
  if (e && field == 3)
    wire_put_float_field (m, 3, (float) json_num (e));
  wire_put_message (msg, field, m);
  return TRUE;
}

static gboolean
pb_items (GByteArray *m, JsonNode *v, GError **error)
{
  if (v == NULL || !JSON_NODE_HOLDS_ARRAY (v))
    return TRUE;
  JsonArray *a = json_node_get_array (v);
  for (guint i = 0; i < json_array_get_length (a); i++) {
    JsonNode *in = json_array_get_element (a, i);
    if (JSON_NODE_HOLDS_OBJECT (in) && !pb_entity (m, 3, json_node_get_object (in), error))
      return FALSE;
  }
  return TRUE;
}

GBytes *
sedp_predict_pb_encode (JsonObject *req, GError **error)
{
  g_autoptr (GByteArray) m = g_byte_array_new ();
  JsonNode *v;
  guint64 u;
  if ((v = json_object_get_member (req, "request_id")) && JSON_NODE_HOLDS_VALUE (v) &&
      json_node_get_string (v))
    wire_put_string (m, 1, json_node_get_string (v));
  if ((v = json_object_get_member (req, "user")) && JSON_NODE_HOLDS_OBJECT (v) &&
      !pb_entity (m, 2, json_node_get_object (v), error))
    return NULL;
  if (!pb_items (m, json_object_get_member (req, "items"), error))
    return NULL;
  if (json_int (json_object_get_member (req, "deadline_ms"), &u) && u)
    wire_put_uint_field (m, 4, u);
  if (json_int (json_object_get_member (req, "top_k"), &u) && u)
    wire_put_uint_field (m, 5, u);
  return g_byte_array_free_to_bytes (g_steal_pointer (&m));
}

/* ---- PredictResponse ---- */

int
sedp_predict_pb_response_status (const guint8 *p, gsize n)
{
  Wire w = {p, p + n};
  int status = 0; /* proto3: absent = OK */
  guint32 field;
  guint type;
  gboolean bad;
  while (wire_tag (&w, &field, &type, &bad)) {
    guint64 v;
    if (field == 2 && type == WT_VARINT) {
      if (!wire_varint (&w, &v))
        return -1;
      status = (int) v;
    } else if (!wire_skip (&w, type))
      return -1;
  }
  return bad ? -1 : status;
}
