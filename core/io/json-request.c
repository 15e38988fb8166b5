/* sedp — PredictRequest JSON in one streaming pass (json-request.h).
 *
 * The scanner (json-scan.c) tokenizes the text and calls back per token; nothing is built but the
 * rows. The decoder knows the message's shape, so every callback checks the token against what
 * may come there (a map key against the fields of its object, a value against the field's type)
 * and stops the parse at the first that does not fit, naming its path. Nesting is counted on
 * every '{' and '[' before anything inside is looked at, and no object or array the protocol has
 * no place for is ever entered, so a deep or huge request is refused at the byte where it goes
 * wrong. Values go straight into the RowBuilder: scalars into row slots, lists into the store's
 * ids or floats (an all-integer bare list stays ids until a non-integer turns it into floats).
 * The typing of columns over rows is the RowBuilder's, shared with the protobuf decoder. */
#include "json-request.h"
#include "json-number.h"
#include "json-scan.h"

#include "../runtime/frame-ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* What the next token may be. */
typedef enum {
  E_ROOT,         /* the request object */
  E_KEY,          /* a member name of the object on top */
  E_REQUEST_ID,
  E_DEADLINE,
  E_TOP_K,
  E_USER,
  E_ITEMS,
  E_ITEM,         /* an element of items */
  E_ID,           /* user.id, items[i].id */
  E_FEATURES,
  E_ESCORE,
  E_FEATURE,      /* a bare value or a one-member object */
  E_INT_VALUE,
  E_FLOAT_VALUE,
  E_STRING_VALUE,
  E_IDS,          /* "ids": an array, or {"ids": [...]} */
  E_FLOATS,       /* "floats": an array, or {"values": [...]} */
  E_IDS_LIST,     /* the array inside {"ids": ...} */
  E_FLOATS_LIST,  /* the array inside {"values": ...} */
  E_ELEMENT,      /* an element of a list */
  E_END,          /* nothing: the request object has ended */
} Expect;

/* The objects and arrays of a request, as the decoder enters them. */
typedef enum { C_REQ, C_USER, C_ITEMS, C_ITEM, C_FEATS, C_ONEOF, C_WRAP, C_LIST } Container;

/* A PredictRequest nests 7 deep at most: request, items, item, features, oneof, wrapper, list. */
#define SCHEMA_DEPTH 8

typedef enum { LIST_BARE, LIST_IDS, LIST_FLOATS } ListKind;

typedef struct {
  RowStore *store;
  RowBuilder user, items;
  SedpProtocolRequest *out;
  Container stack[SCHEMA_DEPTH];
  guint top;   /* containers entered */
  guint depth; /* nesting, for max_depth */
  Expect expect;
  gboolean seen_user, seen_items;
  /* the user or item being read */
  RowBuilder *b;
  guint row;
  guint user_id_column;
  guint64 id;
  gboolean has_id, has_escore;
  double escore;
  /* the feature being read */
  guint column;
  gboolean oneof_set;
  ListKind list;
  RowValue value;
  GError *error;
} JsonDecode;

/* ---- messages ---- */

/* At most 64 bytes of @s (a name from the request) for a message, cut at a character boundary. */
static const char *
short_text (const char *s, gsize len, char buf[72])
{
  gsize n = MIN (len, 64);
  const char *end = NULL;
  g_utf8_validate_len (s, n, &end);
  n = (gsize) (end - s);
  memcpy (buf, s, n);
  strcpy (buf + n, len > n ? "…" : "");
  return buf;
}

/* "items[3]" or "user": the object being read. */
static const char *
row_path (const JsonDecode *d, char buf[32])
{
  if (d->b == &d->user)
    return "user";
  g_snprintf (buf, 32, "items[%u]", d->row);
  return buf;
}

/* "items[3].features.NAME" */
static char *
feature_path (const JsonDecode *d)
{
  char rb[32], nb[72];
  const char *name = row_builder_column_name (d->b, d->column);
  return g_strdup_printf ("%s.features.%s", row_path (d, rb), short_text (name, strlen (name), nb));
}

/* The path of the value expected now, for messages. */
static char *
expect_path (const JsonDecode *d)
{
  static const char *const top[] = {[E_REQUEST_ID] = "request_id", [E_DEADLINE] = "deadline_ms",
                                    [E_TOP_K] = "top_k", [E_USER] = "user", [E_ITEMS] = "items"};
  char rb[32];
  g_autofree char *fp = NULL;
  switch (d->expect) {
  case E_REQUEST_ID:
  case E_DEADLINE:
  case E_TOP_K:
  case E_USER:
  case E_ITEMS:
    return g_strdup (top[d->expect]);
  case E_ITEM:
    return g_strdup_printf ("items[%u]", d->items.n_rows);
  case E_ID:
    return g_strdup_printf ("%s.id", row_path (d, rb));
  case E_FEATURES:
    return g_strdup_printf ("%s.features", row_path (d, rb));
  case E_ESCORE:
    return g_strdup_printf ("%s.escore", row_path (d, rb));
  case E_FEATURE:
    return feature_path (d);
  case E_INT_VALUE:
  case E_FLOAT_VALUE:
  case E_STRING_VALUE:
  case E_IDS:
  case E_FLOATS: {
    static const char *const kinds[] = {"int_value", "float_value", "string_value", "ids", "floats"};
    fp = feature_path (d);
    return g_strdup_printf ("%s.%s", fp, kinds[d->expect - E_INT_VALUE]);
  }
  case E_IDS_LIST:
  case E_FLOATS_LIST:
    fp = feature_path (d);
    return g_strdup_printf ("%s.%s", fp, d->expect == E_IDS_LIST ? "ids" : "floats");
  case E_ELEMENT:
    fp = feature_path (d);
    if (d->list == LIST_BARE)
      return g_strdup_printf ("%s[%u]", fp, d->value.n);
    return g_strdup_printf ("%s.%s[%u]", fp, d->list == LIST_IDS ? "ids" : "floats", d->value.n);
  default:
    return g_strdup ("request");
  }
}

static int G_GNUC_PRINTF (3, 4)
fail (JsonDecode *d, gint code, const char *format, ...)
{
  if (d->error)
    return 0;
  va_list args;
  va_start (args, format);
  sedp_protocol_error_valist (&d->error, code, format, args);
  va_end (args);
  return 0;
}

/* The value expected now is not what came: "PATH: expected …". */
static int
unexpected (JsonDecode *d)
{
  static const char *const want[] = {
    [E_REQUEST_ID] = "expected a string",
    [E_DEADLINE] = "expected an integer",
    [E_TOP_K] = "expected an integer",
    [E_USER] = "expected an object with id and features",
    [E_ITEMS] = "expected an array of items",
    [E_ITEM] = "expected an object with id, features and escore",
    [E_ID] = "expected an unsigned 64-bit integer (a number, or a string of digits)",
    [E_FEATURES] = "expected an object of features",
    [E_ESCORE] = "expected a number",
    [E_FEATURE] = "expected a number, a string, a boolean, an array of numbers, or an object with "
                  "one of int_value, float_value, string_value, ids, floats",
    [E_INT_VALUE] = "expected an integer",
    [E_FLOAT_VALUE] = "expected a number",
    [E_STRING_VALUE] = "expected a string",
    [E_IDS] = "expected an array of ids",
    [E_FLOATS] = "expected an array of numbers",
    [E_IDS_LIST] = "expected an array of ids",
    [E_FLOATS_LIST] = "expected an array of numbers",
  };
  if (d->expect == E_ROOT || d->expect == E_END || d->expect == E_KEY)
    return fail (d, SEDP_PROTOCOL_ERROR_INVALID, "a request must be a JSON object");
  g_autofree char *path = expect_path (d);
  if (d->expect == E_ELEMENT) {
    if (d->list == LIST_BARE) {
      g_autofree char *fp = feature_path (d);
      return fail (d, SEDP_PROTOCOL_ERROR_INVALID, "%s: arrays may hold numbers only", fp);
    }
    return fail (d, SEDP_PROTOCOL_ERROR_INVALID, "%s: %s", path,
                 d->list == LIST_IDS ? want[E_ID] : want[E_ESCORE]);
  }
  return fail (d, SEDP_PROTOCOL_ERROR_INVALID, "%s: %s", path, want[d->expect]);
}

/* ---- structure ---- */

/* After a value: the next key of the object on top, the next element of the array on top, or
 * nothing after the request. */
static int
value_done (JsonDecode *d)
{
  if (d->top == 0)
    d->expect = E_END;
  else if (d->stack[d->top - 1] == C_ITEMS)
    d->expect = E_ITEM;
  else if (d->stack[d->top - 1] == C_LIST)
    d->expect = E_ELEMENT;
  else
    d->expect = E_KEY;
  return 1;
}

/* Counts one more level of nesting and enters @c. */
static int
enter (JsonDecode *d, Container c)
{
  g_assert (d->top < SCHEMA_DEPTH);
  d->stack[d->top++] = c;
  return 1;
}

/* Checks max_depth before a '{' or '[' is entered. */
static int
deeper (JsonDecode *d)
{
  if (++d->depth > d->store->limits.max_depth)
    return fail (d, SEDP_PROTOCOL_ERROR_LIMIT, "JSON nested deeper than the limit of %u levels "
                 "(max_depth)", d->store->limits.max_depth);
  return 1;
}

/* ---- values ---- */

static int
parse_number (JsonDecode *d, const char *p, gsize len, SedpJsonNumber *n)
{
  if (sedp_json_number_parse (p, len, n))
    return 1;
  return fail (d, SEDP_PROTOCOL_ERROR_LIMIT, "a number of %" G_GSIZE_FORMAT " characters, more "
               "than the limit of %u", len, SEDP_JSON_NUMBER_MAX_CHARS);
}

/* Sets the current feature's value in the current row. */
static int
set_feature (JsonDecode *d, const RowValue *v)
{
  row_builder_set (d->b, d->row, d->column, v);
  if (d->expect != E_FEATURE)
    d->oneof_set = TRUE;
  return value_done (d);
}

/* An id (user.id, items[i].id, an element of ids) from a number. */
static int
number_id (JsonDecode *d, const SedpJsonNumber *n, guint64 *id)
{
  if (n->kind == NUM_INT && n->i < 0) {
    g_autofree char *path = expect_path (d);
    return fail (d, SEDP_PROTOCOL_ERROR_INVALID, "%s: %" G_GINT64_FORMAT " is negative", path,
                 n->i);
  }
  if (n->kind == NUM_DOUBLE)
    return unexpected (d);
  *id = n->kind == NUM_INT ? (guint64) n->i : n->u;
  return 1;
}

/* A list's element over max_values? */
static int
list_room (JsonDecode *d)
{
  if (G_LIKELY (d->value.n < d->store->limits.max_values))
    return 1;
  g_autofree char *fp = feature_path (d);
  return fail (d, SEDP_PROTOCOL_ERROR_LIMIT, "%s: more than the limit of %u values in one list "
               "(max_values)", fp, d->store->limits.max_values);
}

static int
push_id (JsonDecode *d, guint64 id)
{
  if (!list_room (d) || !row_store_push_id (d->store, id, &d->error))
    return 0;
  d->value.n++;
  return 1;
}

static int
push_float (JsonDecode *d, double v)
{
  if (!list_room (d) || !row_store_push_float (d->store, (float) v, &d->error))
    return 0;
  d->value.n++;
  return 1;
}

/* A bare list of integers so far meets a number that is not one: its ids become floats. */
static int
bare_to_floats (JsonDecode *d)
{
  RowStore *s = d->store;
  gsize at = d->value.v.at;
  guint n = d->value.n;
  d->value.src = SRC_FLOATS_AT;
  d->value.v.at = s->n_floats;
  d->value.n = 0;
  for (guint k = 0; k < n; k++)
    if (!push_float (d, (double) (gint64) s->ids[at + k]))
      return 0;
  s->n_ids = at;
  return 1;
}

static int
number_element (JsonDecode *d, const SedpJsonNumber *n)
{
  guint64 id = 0;
  switch (d->list) {
  case LIST_IDS:
    return number_id (d, n, &id) && push_id (d, id);
  case LIST_FLOATS:
    return push_float (d, n->d);
  default:
    if (n->kind == NUM_INT && n->i < 0) {
      g_autofree char *path = expect_path (d);
      return fail (d, SEDP_PROTOCOL_ERROR_INVALID, "%s: %" G_GINT64_FORMAT " is negative (ids are "
                   "unsigned)", path, n->i);
    }
    if (d->value.src == SRC_IDS && n->kind == NUM_INT)
      return push_id (d, (guint64) n->i);
    if (d->value.src == SRC_IDS && !bare_to_floats (d))
      return 0;
    return push_float (d, n->d);
  }
}

/* deadline_ms, top_k: an unsigned 32-bit integer. */
static int
number_u32 (JsonDecode *d, const SedpJsonNumber *n, guint *out)
{
  const char *name = d->expect == E_DEADLINE ? "deadline_ms" : "top_k";
  if (n->kind == NUM_DOUBLE)
    return unexpected (d);
  if (d->expect == E_DEADLINE && n->kind == NUM_INT && n->i < 0)
    return fail (d, SEDP_PROTOCOL_ERROR_INVALID, "deadline_ms: %" G_GINT64_FORMAT " is negative",
                 n->i);
  if (n->kind == NUM_UINT)
    return fail (d, SEDP_PROTOCOL_ERROR_INVALID, "%s: %" G_GUINT64_FORMAT " is out of range", name,
                 n->u);
  if (n->i < 0 || n->i > G_MAXUINT32)
    return fail (d, SEDP_PROTOCOL_ERROR_INVALID, "%s: %" G_GINT64_FORMAT " is out of range", name,
                 n->i);
  *out = (guint) n->i;
  return value_done (d);
}

static int
on_number (void *ctx, const char *p, size_t len)
{
  JsonDecode *d = ctx;
  SedpJsonNumber n;
  if (!parse_number (d, p, len, &n))
    return 0;
  RowValue v = {SRC_NONE};
  switch (d->expect) {
  case E_DEADLINE:
    return number_u32 (d, &n, &d->out->deadline_ms);
  case E_TOP_K:
    return number_u32 (d, &n, &d->out->top_k);
  case E_ID:
    if (!number_id (d, &n, &d->id))
      return 0;
    d->has_id = TRUE;
    return value_done (d);
  case E_ESCORE:
    d->escore = n.d;
    d->has_escore = TRUE;
    return value_done (d);
  case E_FEATURE:
  case E_INT_VALUE:
  case E_FLOAT_VALUE:
    if (n.kind == NUM_INT && d->expect != E_FLOAT_VALUE) {
      v.src = SRC_INT;
      v.v.i = n.i;
    } else if (d->expect != E_INT_VALUE) {
      v.src = SRC_FLOAT;
      v.v.d = n.d;
    } else {
      return unexpected (d);
    }
    return set_feature (d, &v);
  case E_ELEMENT:
    return number_element (d, &n);
  default:
    return unexpected (d);
  }
}

static int
on_null (void *ctx)
{
  JsonDecode *d = ctx;
  switch (d->expect) {
  case E_REQUEST_ID:
  case E_DEADLINE:
  case E_TOP_K:
  case E_USER:
  case E_FEATURES:
  case E_ESCORE:
    return value_done (d); /* as if absent */
  case E_FEATURE: {
    RowValue v = {SRC_NONE};
    return set_feature (d, &v);
  }
  default:
    return unexpected (d);
  }
}

static int
on_boolean (void *ctx, int b)
{
  JsonDecode *d = ctx;
  if (d->expect != E_FEATURE)
    return unexpected (d);
  RowValue v = {.src = SRC_INT, .v.i = b ? 1 : 0};
  return set_feature (d, &v);
}

/* A string from the request (a feature's name when @key), within max_string_bytes, without
 * NUL. */
static int
check_text (JsonDecode *d, const char *s, gsize len, gboolean key)
{
  char rb[32];
  if (len > d->store->limits.max_string_bytes) {
    g_autofree char *path = key ? g_strdup_printf ("%s.features", row_path (d, rb))
                                : expect_path (d);
    return fail (d, SEDP_PROTOCOL_ERROR_LIMIT, "%s: a string of %" G_GSIZE_FORMAT " bytes, more "
                 "than the limit of %" G_GSIZE_FORMAT " (max_string_bytes)", path, len,
                 d->store->limits.max_string_bytes);
  }
  if (memchr (s, '\0', len)) {
    g_autofree char *path = key ? g_strdup_printf ("%s.features", row_path (d, rb))
                                : expect_path (d);
    return fail (d, SEDP_PROTOCOL_ERROR_INVALID, "%s: a string holds a NUL character (\\u0000)",
                 path);
  }
  return 1;
}

/* An id written as a string of decimal digits (as proto3 JSON writes 64-bit integers). */
static int
string_id (JsonDecode *d, const char *s, gsize len, guint64 *id)
{
  char buf[24];
  if (len == 0 || len >= sizeof buf)
    return unexpected (d);
  memcpy (buf, s, len);
  buf[len] = '\0';
  if (!g_ascii_string_to_unsigned (buf, 10, 0, G_MAXUINT64, id, NULL))
    return unexpected (d);
  return 1;
}

static int
string_feature (JsonDecode *d, const char *s, gsize len)
{
  RowValue v = {.src = SRC_STRING};
  if (d->expect == E_INT_VALUE) {
    char buf[24];
    if (len == 0 || len >= sizeof buf)
      return unexpected (d);
    memcpy (buf, s, len);
    buf[len] = '\0';
    v.src = SRC_INT;
    if (!g_ascii_string_to_signed (buf, 10, G_MININT64, G_MAXINT64, &v.v.i, NULL))
      return unexpected (d);
  } else if ((v.v.s = row_store_text (d->store, s, len, &d->error)) == NULL) {
    return 0;
  }
  return set_feature (d, &v);
}

static int
on_string (void *ctx, const unsigned char *str, size_t len)
{
  JsonDecode *d = ctx;
  const char *s = (const char *) str;
  guint64 id = 0;
  if (!check_text (d, s, len, FALSE))
    return 0;
  switch (d->expect) {
  case E_REQUEST_ID:
    g_free (d->out->request_id);
    d->out->request_id = len ? g_strndup (s, len) : NULL;
    return value_done (d);
  case E_ID:
    if (!string_id (d, s, len, &d->id))
      return 0;
    d->has_id = TRUE;
    return value_done (d);
  case E_FEATURE:
  case E_STRING_VALUE:
  case E_INT_VALUE:
    return string_feature (d, s, len);
  case E_ELEMENT:
    if (d->list != LIST_IDS)
      return unexpected (d);
    return string_id (d, s, len, &id) && push_id (d, id);
  default:
    return unexpected (d);
  }
}

/* ---- objects ---- */

/* Starts the user (row 0 of its builder: user_id first, as the protobuf decoder has it). */
static int
begin_user (JsonDecode *d)
{
  if (d->seen_user)
    return fail (d, SEDP_PROTOCOL_ERROR_INVALID, "user: given twice");
  d->seen_user = TRUE;
  d->b = &d->user;
  d->row = 0;
  d->has_id = FALSE;
  if (!row_builder_column (&d->user, "user_id", 7, &d->user_id_column, &d->error))
    return 0;
  d->expect = E_KEY;
  return enter (d, C_USER);
}

static int
begin_item (JsonDecode *d)
{
  if (!row_builder_add_row (&d->items, &d->error))
    return 0;
  d->b = &d->items;
  d->row = d->items.n_rows - 1;
  d->has_id = d->has_escore = FALSE;
  d->expect = E_KEY;
  return enter (d, C_ITEM);
}

static int
on_start_map (void *ctx)
{
  JsonDecode *d = ctx;
  if (!deeper (d))
    return 0;
  Container c;
  switch (d->expect) {
  case E_ROOT:
    c = C_REQ;
    break;
  case E_USER:
    return begin_user (d);
  case E_ITEM:
    return begin_item (d);
  case E_FEATURES:
    c = C_FEATS;
    break;
  case E_FEATURE:
    d->oneof_set = FALSE;
    c = C_ONEOF;
    break;
  case E_IDS:
  case E_FLOATS:
    d->list = d->expect == E_IDS ? LIST_IDS : LIST_FLOATS;
    c = C_WRAP;
    break;
  default:
    return unexpected (d);
  }
  d->expect = E_KEY;
  return enter (d, c);
}

static gboolean
key_is (const char *key, gsize len, const char *name)
{
  return len == strlen (name) && memcmp (key, name, len) == 0;
}

/* "PATH.KEY: unknown field (expected …)" */
static int
unknown_field (JsonDecode *d, const char *path, const char *key, gsize len, const char *known)
{
  char kb[72];
  return fail (d, SEDP_PROTOCOL_ERROR_INVALID, "%s%s%s: unknown field (expected %s)", path,
               *path ? "." : "", short_text (key, len, kb), known);
}

static int
key_request (JsonDecode *d, const char *k, gsize len)
{
  static const struct {
    const char *name;
    Expect expect;
  } fields[] = {{"request_id", E_REQUEST_ID}, {"user", E_USER}, {"items", E_ITEMS},
                {"deadline_ms", E_DEADLINE}, {"top_k", E_TOP_K}};
  for (guint i = 0; i < G_N_ELEMENTS (fields); i++)
    if (key_is (k, len, fields[i].name)) {
      d->expect = fields[i].expect;
      return 1;
    }
  return unknown_field (d, "", k, len, "request_id, user, items, deadline_ms, top_k");
}

static int
key_row (JsonDecode *d, const char *k, gsize len)
{
  gboolean item = d->b == &d->items;
  if (key_is (k, len, "id"))
    d->expect = E_ID;
  else if (key_is (k, len, "features"))
    d->expect = E_FEATURES;
  else if (item && key_is (k, len, "escore"))
    d->expect = E_ESCORE;
  else {
    char rb[32];
    return unknown_field (d, row_path (d, rb), k, len, item ? "id, features, escore"
                                                            : "id, features");
  }
  return 1;
}

static int
key_oneof (JsonDecode *d, const char *k, gsize len)
{
  static const char *const kinds[] = {"int_value", "float_value", "string_value", "ids", "floats"};
  if (d->oneof_set) {
    g_autofree char *fp = feature_path (d);
    return fail (d, SEDP_PROTOCOL_ERROR_INVALID, "%s: expected one of int_value, float_value, "
                 "string_value, ids, floats", fp);
  }
  for (guint i = 0; i < G_N_ELEMENTS (kinds); i++)
    if (key_is (k, len, kinds[i])) {
      d->expect = E_INT_VALUE + i;
      return 1;
    }
  g_autofree char *fp = feature_path (d);
  return unknown_field (d, fp, k, len, "int_value, float_value, string_value, ids, floats");
}

static int
on_map_key (void *ctx, const unsigned char *key, size_t len)
{
  JsonDecode *d = ctx;
  const char *k = (const char *) key;
  switch (d->stack[d->top - 1]) {
  case C_REQ:
    return key_request (d, k, len);
  case C_USER:
  case C_ITEM:
    return key_row (d, k, len);
  case C_FEATS: /* a feature's name */
    if (!check_text (d, k, len, TRUE) || !row_builder_column (d->b, k, len, &d->column, &d->error))
      return 0;
    d->expect = E_FEATURE;
    return 1;
  case C_ONEOF:
    return key_oneof (d, k, len);
  default: { /* C_WRAP */
    const char *want = d->list == LIST_IDS ? "ids" : "values";
    if (!key_is (k, len, want)) {
      g_autofree char *fp = feature_path (d);
      g_autofree char *path = g_strdup_printf ("%s.%s", fp, d->list == LIST_IDS ? "ids" : "floats");
      return unknown_field (d, path, k, len, want);
    }
    d->expect = d->list == LIST_IDS ? E_IDS_LIST : E_FLOATS_LIST;
    return 1;
  }
  }
}

/* The end of the user or of an item: its id (and escore) set after its features, then typed. */
static int
end_row (JsonDecode *d)
{
  RowBuilder *b = d->b;
  gboolean item = b == &d->items;
  if (d->has_id && !sedp_protocol_check_id (d->id, item ? (gint64) d->row : -1, &d->error))
    return 0;
  RowValue es = {.src = SRC_FLOAT, .v.d = d->escore}, id = {.src = SRC_INT, .v.i = (gint64) d->id};
  if (item && d->has_escore && !row_builder_set_named (b, d->row, "escore", 6, &es, &d->error))
    return 0;
  if (d->has_id) {
    if (item && !row_builder_set_named (b, d->row, "item_id", 7, &id, &d->error))
      return 0;
    if (!item)
      row_builder_set (b, 0, d->user_id_column, &id);
  }
  d->b = NULL;
  return row_builder_end_row (b, d->row, &d->error);
}

static int
on_end_map (void *ctx)
{
  JsonDecode *d = ctx;
  Container c = d->stack[--d->top];
  d->depth--;
  switch (c) {
  case C_USER:
  case C_ITEM:
    if (!end_row (d))
      return 0;
    break;
  case C_ONEOF:
    if (!d->oneof_set) {
      g_autofree char *fp = feature_path (d);
      return fail (d, SEDP_PROTOCOL_ERROR_INVALID, "%s: expected one of int_value, float_value, "
                   "string_value, ids, floats", fp);
    }
    break;
  case C_WRAP:
    if (!d->oneof_set) {
      d->expect = d->list == LIST_IDS ? E_IDS : E_FLOATS;
      return unexpected (d);
    }
    break;
  default:
    break;
  }
  return value_done (d);
}

/* ---- arrays ---- */

static int
begin_list (JsonDecode *d, ListKind kind)
{
  d->list = kind;
  d->value.n = 0;
  if (kind == LIST_FLOATS) {
    d->value.src = SRC_FLOATS_AT;
    d->value.v.at = d->store->n_floats;
  } else {
    d->value.src = SRC_IDS;
    d->value.v.at = d->store->n_ids;
  }
  d->expect = E_ELEMENT;
  return enter (d, C_LIST);
}

static int
on_start_array (void *ctx)
{
  JsonDecode *d = ctx;
  if (!deeper (d))
    return 0;
  switch (d->expect) {
  case E_ITEMS:
    if (d->seen_items)
      return fail (d, SEDP_PROTOCOL_ERROR_INVALID, "items: given twice");
    d->seen_items = TRUE;
    d->expect = E_ITEM;
    return enter (d, C_ITEMS);
  case E_FEATURE:
    return begin_list (d, LIST_BARE);
  case E_IDS:
  case E_IDS_LIST:
    return begin_list (d, LIST_IDS);
  case E_FLOATS:
  case E_FLOATS_LIST:
    return begin_list (d, LIST_FLOATS);
  default:
    return unexpected (d);
  }
}

static int
on_end_array (void *ctx)
{
  JsonDecode *d = ctx;
  Container c = d->stack[--d->top];
  d->depth--;
  if (c == C_ITEMS) {
    if (d->items.n_rows == 0)
      return fail (d, SEDP_PROTOCOL_ERROR_INVALID, "items: a request needs at least one item");
    return value_done (d);
  }
  /* C_LIST: the feature's value, in the object that holds it */
  row_builder_set (d->b, d->row, d->column, &d->value);
  Container holder = d->stack[d->top - 1];
  if (holder == C_ONEOF || holder == C_WRAP)
    d->oneof_set = TRUE;
  return value_done (d);
}

/* ---- the request ---- */

static const SedpJsonCallbacks callbacks = {
  .on_null = on_null,
  .on_boolean = on_boolean,
  .on_number = on_number,
  .on_string = on_string,
  .on_start_map = on_start_map,
  .on_map_key = on_map_key,
  .on_end_map = on_end_map,
  .on_start_array = on_start_array,
  .on_end_array = on_end_array,
};

/* What only the whole request can tell. */
static gboolean
check_request (JsonDecode *d, GError **error)
{
  SedpProtocolRequest *out = d->out;
  if (!d->seen_items)
    return sedp_protocol_invalid (error, "items: expected an array of items");
  if (out->deadline_ms > SEDP_PROTOCOL_MAX_DEADLINE_MS)
    return sedp_protocol_invalid (error, "deadline_ms: %u is more than %u", out->deadline_ms,
                                  SEDP_PROTOCOL_MAX_DEADLINE_MS);
  if (out->top_k > d->items.n_rows)
    out->top_k = d->items.n_rows;
  return TRUE;
}

gboolean
sedp_json_decode_request (const guint8 *data, gsize size, RowStore *store,
                          SedpFrame *request_frame, SedpProtocolRequest *out, GError **error)
{
  JsonDecode d = {.store = store, .out = out, .expect = E_ROOT};
  row_builder_init (&d.user, "user", 1, store);
  row_builder_init (&d.items, "items", 0, store);
  gboolean ok = sedp_json_scan_request (data, size, &callbacks, &d, &d.error);
  if (!ok)
    g_propagate_error (error, g_steal_pointer (&d.error));
  ok = ok && check_request (&d, error);
  if (ok) {
    out->items = row_builder_frame (&d.items);
    if (request_frame && d.seen_user) {
      SedpFrame *uf = row_builder_frame (&d.user);
      sedp_frame_merge_columns (request_frame, uf);
      sedp_frame_unref (uf);
    }
  }
  row_builder_clear (&d.user);
  row_builder_clear (&d.items);
  return ok;
}
