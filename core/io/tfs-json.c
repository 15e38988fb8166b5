/* sedp — TF Serving's REST predict JSON (docs/compat.md "TF Serving REST API"): requests in one
 * streaming pass, answers, errors and model status.
 *
 * As json-request.c does for sedp's own JSON, the scanner (json-scan.c) tokenizes the text and
 * each callback checks the token against what may come there, stopping at the first that does
 * not fit with the path of the value. Nesting is counted on every '{' and '[' before anything inside is looked at.
 * A row's value (a number, a string, {"b64": …}, or nested lists of them) goes straight into its
 * input array (model-api.c), flattened row-major; nested lists must be rectangular, and the
 * row's count of values is checked against the array's width when the value ends. */
#include "json-number.h"
#include "json-scan.h"
#include "model-api-private.h"

#include <math.h>
#include <string.h>

/* What the next token may be. */
typedef enum {
  E_ROOT,         /* the request object */
  E_KEY,          /* a member name of the request */
  E_SIGNATURE,    /* signature_name's string */
  E_INSTANCES,    /* instances' list */
  E_INSTANCE,     /* an element of instances: an object of inputs, or a bare value */
  E_INSTANCE_KEY, /* the first member name of an instance object (maybe "b64") */
  E_INPUTS,       /* inputs: an object of inputs, or a bare batch list */
  E_INPUT_KEY,    /* an input's name in an instance or in inputs */
  E_BATCH,        /* an input's batch list in inputs */
  E_VALUE,        /* (part of) a row's value: vdepth lists are open */
  E_B64_KEY,      /* the member name of {"b64": …} */
  E_B64,          /* the base64 text */
  E_B64_END,      /* the end of {"b64": …} */
  E_END,
} Expect;

typedef enum { C_REQ, C_INSTANCES, C_INSTANCE, C_INPUTS, C_BATCH, C_LIST, C_B64 } Container;

#define NO_DEPTH G_MAXUINT

typedef struct {
  MaInputs *in;
  SedpModelApiRequest *out;
  guint8 *stack; /* max_depth + 1 containers */
  guint top, depth;
  Expect expect;
  gboolean seen_signature, seen_instances, seen_inputs, bare;
  guint n_instances;
  /* the row value being read */
  MaArray *arr;
  guint row;        /* its row: the instance, or the element of the batch list */
  guint row_start;  /* arr->n_values when it began */
  guint vdepth;     /* lists open inside it */
  guint max_vdepth; /* the deepest it went */
  guint leaf_depth; /* the depth of its values, NO_DEPTH before the first */
  guint *len;       /* per list depth: the elements of the open list */
  guint *want;      /* per list depth: 1 + the length of the first list closed there, or 0 */
  gboolean b64_done;
  GError *error;
} TfsDecode;

/* ---- messages ---- */

/* "instances[3]", "instances[3].dense", "inputs.dense[3]", "inputs[3]": the row value. */
static char *
value_path (gconstpointer ctx)
{
  const TfsDecode *d = ctx;
  if (d->seen_instances)
    return d->bare ? g_strdup_printf ("instances[%u]", d->row)
                   : g_strdup_printf ("instances[%u].%s", d->row, d->arr->name);
  return d->bare ? g_strdup_printf ("inputs[%u]", d->row)
                 : g_strdup_printf ("inputs.%s[%u]", d->arr->name, d->row);
}

/* "instances[3]" or "inputs": the object that names inputs. */
static char *
holder_path (gconstpointer ctx)
{
  const TfsDecode *d = ctx;
  return d->seen_instances ? g_strdup_printf ("instances[%u]", d->n_instances - 1)
                           : g_strdup ("inputs");
}

static int G_GNUC_PRINTF (3, 4)
fail (TfsDecode *d, gint code, const char *format, ...)
{
  if (d->error)
    return 0;
  va_list args;
  va_start (args, format);
  sedp_protocol_error_valist (&d->error, code, format, args);
  va_end (args);
  return 0;
}

static int
unexpected (TfsDecode *d)
{
  g_autofree char *path = NULL;
  switch (d->expect) {
  case E_SIGNATURE:
    return fail (d, SEDP_PROTOCOL_ERROR_INVALID, "signature_name: expected a string");
  case E_INSTANCES:
    return fail (d, SEDP_PROTOCOL_ERROR_INVALID, "instances: expected a list (one entry per "
                 "row)");
  case E_INPUTS:
    return fail (d, SEDP_PROTOCOL_ERROR_INVALID, "inputs: expected an object of named inputs, or "
                 "a list (for a signature of one input)");
  case E_BATCH:
    return fail (d, SEDP_PROTOCOL_ERROR_INVALID, "inputs.%s: expected a list whose first "
                 "dimension is the batch", d->arr->name);
  case E_B64_KEY:
  case E_B64:
    path = value_path (d);
    return fail (d, SEDP_PROTOCOL_ERROR_INVALID, "%s: expected {\"b64\": \"BASE64\"} (an object "
                 "as a value holds base64 bytes)", path);
  case E_B64_END:
    path = value_path (d);
    return fail (d, SEDP_PROTOCOL_ERROR_INVALID, "%s: {\"b64\": …} holds one member", path);
  default:
    return fail (d, SEDP_PROTOCOL_ERROR_INVALID, "a request must be a JSON object with "
                 "instances or inputs");
  }
}

/* ---- structure ---- */

/* Starts a row value of @a (the next row of the instance or the batch). */
static void
begin_row (TfsDecode *d, MaArray *a, guint row)
{
  for (guint k = 1; k <= d->max_vdepth; k++)
    d->want[k] = 0;
  d->arr = a;
  d->row = row;
  d->row_start = a->n_values;
  d->max_vdepth = d->vdepth = 0;
  d->leaf_depth = NO_DEPTH;
  d->expect = E_VALUE;
}

static int
value_done (TfsDecode *d)
{
  if (d->top == 0) {
    d->expect = E_END;
    return 1;
  }
  static const Expect next[] = {[C_REQ] = E_KEY,         [C_INSTANCES] = E_INSTANCE,
                                [C_INSTANCE] = E_INPUT_KEY, [C_INPUTS] = E_INPUT_KEY,
                                [C_BATCH] = E_VALUE,     [C_LIST] = E_VALUE,
                                [C_B64] = E_B64_END};
  Container c = d->stack[d->top - 1];
  d->expect = next[c];
  if (c == C_BATCH) /* the next element is the next row */
    begin_row (d, d->arr, d->arr->n_rows);
  return 1;
}

/* Counts a level of nesting (before a '{' or '[' is entered) against max_depth. */
static int
deeper (TfsDecode *d)
{
  if (++d->depth > d->in->limits.max_depth)
    return fail (d, SEDP_PROTOCOL_ERROR_LIMIT, "JSON nested deeper than the limit of %u levels "
                 "(max_depth)", d->in->limits.max_depth);
  return 1;
}

static int
enter (TfsDecode *d, Container c)
{
  d->stack[d->top++] = c; /* top < depth <= max_depth: room */
  return 1;
}

/* A new instance (row format); NULL with the error over max_items. */
static int
begin_instance (TfsDecode *d)
{
  if (d->n_instances >= d->in->limits.max_items)
    return fail (d, SEDP_PROTOCOL_ERROR_LIMIT, "instances: more than the limit of %u instances "
                 "(max_items)", d->in->limits.max_items);
  d->n_instances++;
  d->row = d->n_instances - 1;
  d->bare = FALSE;
  return 1;
}

/* A bare instance's value: the signature must have exactly one input. */
static int
begin_bare_instance (TfsDecode *d)
{
  MaArray *single = ma_inputs_single (d->in);
  if (!begin_instance (d))
    return 0;
  if (single == NULL) {
    g_autofree char *names = ma_signature_names (d->in->signature->inputs);
    return fail (d, SEDP_PROTOCOL_ERROR_INVALID, "instances[%u]: expected an object of named "
                 "inputs (the signature %s takes %s; a bare value is for one input)", d->row,
                 d->in->signature->name, names);
  }
  d->bare = TRUE;
  begin_row (d, single, d->row);
  return 1;
}

/* The end of an instance: every input seen in it. */
static int
end_instance (TfsDecode *d)
{
  guint row = d->n_instances - 1;
  for (guint i = 0; i < d->in->arrays->len; i++) {
    const MaArray *a = g_ptr_array_index (d->in->arrays, i);
    if (a->n_rows == row + 1)
      continue;
    g_autofree char *names = ma_signature_names (d->in->signature->inputs);
    return fail (d, SEDP_PROTOCOL_ERROR_INVALID, "instances[%u]: the input %s is missing (the "
                 "signature %s takes %s%s; every instance carries the same inputs)", row,
                 a->name, d->in->signature->name, names,
                 d->in->signature->open_inputs ? " and more" : "");
  }
  return 1;
}

/* A row's value ended: its count of values against the array's width. */
static int
end_row (TfsDecode *d)
{
  if (!ma_array_end_row (d->in, d->arr, d->arr->n_values - d->row_start, value_path, d,
                         &d->error))
    return 0;
  if (d->top > 0 && d->stack[d->top - 1] == C_INSTANCES && !end_instance (d))
    return 0;
  return value_done (d);
}

static int
ragged (TfsDecode *d, const char *why)
{
  g_autofree char *path = value_path (d);
  return fail (d, SEDP_PROTOCOL_ERROR_INVALID, "%s: ragged nested lists (%s); a row's value must "
               "be a rectangular (nested) list", path, why);
}

/* An element of the row value begins: a list (@list) or a value. */
static int
element (TfsDecode *d, gboolean list)
{
  if (d->vdepth > 0)
    d->len[d->vdepth]++;
  if (list) {
    if (d->leaf_depth != NO_DEPTH && d->vdepth >= d->leaf_depth)
      return ragged (d, "a list where the other elements are values");
    d->vdepth++;
    d->max_vdepth = MAX (d->max_vdepth, d->vdepth);
    d->len[d->vdepth] = 0;
    return enter (d, C_LIST);
  }
  if (d->leaf_depth == NO_DEPTH)
    d->leaf_depth = d->vdepth;
  else if (d->leaf_depth != d->vdepth)
    return ragged (d, "a value where the other elements are lists");
  if (G_UNLIKELY (d->arr->n_values - d->row_start >= d->in->limits.max_values)) {
    g_autofree char *path = value_path (d);
    return fail (d, SEDP_PROTOCOL_ERROR_LIMIT, "%s: more than the limit of %u values in one row "
                 "(max_values)", path, d->in->limits.max_values);
  }
  return 1;
}

/* A value was stored: the row ends with it when it was the whole value. */
static int
leaf_done (TfsDecode *d)
{
  return d->vdepth == 0 ? end_row (d) : value_done (d);
}

/* ---- values ---- */

/* The common case in one step: a number inside a list of an array already typed as numbers,
 * whose values sit at this depth, with room in the row and in the memory limit. TRUE when it was
 * stored; FALSE leaves everything to the general path (which reports what is wrong). */
static gboolean
fast_number (TfsDecode *d, const char *p, size_t len)
{
  MaArray *a = d->arr;
  if (d->expect != E_VALUE || d->vdepth == 0 || d->vdepth != d->leaf_depth || a == NULL ||
      (a->type != SEDP_COLUMN_FLOAT32 && a->type != SEDP_COLUMN_INT64) ||
      (a->n_values + (gsize) 1) * 8 > a->capacity ||
      a->n_values - d->row_start >= d->in->limits.max_values ||
      d->in->charged + 8 > d->in->limits.max_decoded_bytes)
    return FALSE;
  SedpJsonNumber n;
  if (!sedp_json_number_parse (p, len, &n) || (a->type == SEDP_COLUMN_INT64 && n.kind != NUM_INT))
    return FALSE;
  if (a->type == SEDP_COLUMN_INT64) {
    memcpy (a->values + a->n_values * sizeof (gint64), &n.i, sizeof (gint64));
    d->in->charged += sizeof (gint64);
  } else {
    float f = n.kind == NUM_INT ? (float) n.i : (float) n.d; /* as ma_array_push_int / _double */
    if (G_UNLIKELY (isinf (f)))
      return FALSE; /* past float32's range: the general path refuses it */
    memcpy (a->values + a->n_values * sizeof (float), &f, sizeof (float));
    d->in->charged += sizeof (float);
  }
  a->n_values++;
  d->len[d->vdepth]++;
  return TRUE;
}

static int
on_number (void *ctx, const char *p, size_t len)
{
  TfsDecode *d = ctx;
  if (G_LIKELY (fast_number (d, p, len)))
    return 1; /* inside a list: the next element is a value again (value_done's C_LIST) */
  if (d->expect == E_INSTANCE && !begin_bare_instance (d))
    return 0;
  if (d->expect != E_VALUE)
    return unexpected (d);
  if (!element (d, FALSE) || !ma_array_accept (d->arr, SEDP_COLUMN_FLOAT32, value_path, d,
                                               &d->error))
    return 0;
  SedpJsonNumber n;
  if (!sedp_json_number_parse (p, len, &n))
    return fail (d, SEDP_PROTOCOL_ERROR_LIMIT, "a number of %zu characters, more than the limit "
                 "of %u", len, SEDP_JSON_NUMBER_MAX_CHARS);
  gboolean ok = n.kind == NUM_INT
                    ? ma_array_push_int (d->in, d->arr, n.i, &d->error)
                    : ma_array_push_double (d->in, d->arr, n.d, value_path, d, &d->error);
  return ok && leaf_done (d);
}

static int
on_boolean (void *ctx, int b)
{
  TfsDecode *d = ctx;
  if (d->expect == E_INSTANCE && !begin_bare_instance (d))
    return 0;
  if (d->expect != E_VALUE)
    return unexpected (d);
  return element (d, FALSE) &&
         ma_array_accept (d->arr, SEDP_COLUMN_FLOAT32, value_path, d, &d->error) &&
         ma_array_push_int (d->in, d->arr, b ? 1 : 0, &d->error) && leaf_done (d);
}

static int
on_null (void *ctx)
{
  TfsDecode *d = ctx;
  if (d->expect == E_SIGNATURE)
    return value_done (d);
  if (d->expect == E_INSTANCE && !begin_bare_instance (d))
    return 0;
  if (d->expect != E_VALUE)
    return unexpected (d);
  g_autofree char *path = value_path (d);
  return fail (d, SEDP_PROTOCOL_ERROR_INVALID, "%s: null is not a value (give a number, a "
               "string or {\"b64\": \"…\"})", path);
}

static gint
b64_digit (guchar c)
{
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if (c >= '0' && c <= '9')
    return c - '0' + 52;
  if (c == '+' || c == '-')
    return 62;
  if (c == '/' || c == '_')
    return 63;
  return -1;
}

/* Standard (or URL-safe) base64, padded or not, into @out (room for @len * 3 / 4 bytes); FALSE
 * when it is not base64. */
static gboolean
b64_decode (const char *s, gsize len, guint8 *out, gsize *out_len)
{
  gsize pad = 0;
  while (pad < 2 && len > pad && s[len - 1 - pad] == '=')
    pad++;
  if (pad && len % 4 != 0)
    return FALSE;
  gsize n = len - pad, o = 0;
  if (n % 4 == 1)
    return FALSE;
  guint32 acc = 0;
  for (gsize k = 0; k < n; k++) {
    gint v = b64_digit ((guchar) s[k]);
    if (v < 0)
      return FALSE;
    acc = acc << 6 | (guint32) v;
    if (k % 4 == 3) {
      out[o++] = (guint8) (acc >> 16);
      out[o++] = (guint8) (acc >> 8);
      out[o++] = (guint8) acc;
      acc = 0;
    }
  }
  if (n % 4 == 2) {
    out[o++] = (guint8) (acc >> 4);
  } else if (n % 4 == 3) {
    out[o++] = (guint8) (acc >> 10);
    out[o++] = (guint8) (acc >> 2);
  }
  *out_len = o;
  return TRUE;
}

static int
b64_value (TfsDecode *d, const char *s, gsize len)
{
  if (len / 4 * 3 > d->in->limits.max_string_bytes + 3) {
    g_autofree char *path = value_path (d);
    return fail (d, SEDP_PROTOCOL_ERROR_LIMIT, "%s: base64 text of %zu bytes, more than the "
                 "limit of %" G_GSIZE_FORMAT " decoded bytes (max_string_bytes)", path, len,
                 d->in->limits.max_string_bytes);
  }
  g_autofree guint8 *bytes = g_malloc (len + 1);
  gsize n = 0;
  if (!b64_decode (s, len, bytes, &n)) {
    g_autofree char *path = value_path (d);
    return fail (d, SEDP_PROTOCOL_ERROR_INVALID, "%s.b64: not base64 text", path);
  }
  d->b64_done = TRUE;
  d->expect = E_B64_END;
  return ma_array_push_string (d->in, d->arr, (const char *) bytes, n, value_path, d, &d->error);
}

static int
on_string (void *ctx, const unsigned char *str, size_t len)
{
  TfsDecode *d = ctx;
  const char *s = (const char *) str;
  switch (d->expect) {
  case E_SIGNATURE:
    if (len > d->in->limits.max_string_bytes)
      return fail (d, SEDP_PROTOCOL_ERROR_LIMIT, "signature_name: a string of %zu bytes, more "
                   "than the limit of %" G_GSIZE_FORMAT " (max_string_bytes)", len,
                   d->in->limits.max_string_bytes);
    if (memchr (s, '\0', len))
      return fail (d, SEDP_PROTOCOL_ERROR_INVALID, "signature_name: holds a NUL character");
    g_free (d->out->signature_name);
    d->out->signature_name = g_strndup (s, len);
    return value_done (d);
  case E_B64:
    return b64_value (d, s, len);
  case E_INSTANCE:
    if (!begin_bare_instance (d))
      return 0;
    /* fall through */
  case E_VALUE:
    return element (d, FALSE) &&
           ma_array_accept (d->arr, SEDP_COLUMN_STRING, value_path, d, &d->error) &&
           ma_array_push_string (d->in, d->arr, s, len, value_path, d, &d->error) &&
           leaf_done (d);
  default:
    return unexpected (d);
  }
}

/* ---- objects ---- */

static int
on_start_map (void *ctx)
{
  TfsDecode *d = ctx;
  if (!deeper (d))
    return 0;
  switch (d->expect) {
  case E_ROOT:
    d->expect = E_KEY;
    return enter (d, C_REQ);
  case E_INSTANCE:
    if (!begin_instance (d))
      return 0;
    d->expect = E_INSTANCE_KEY;
    return enter (d, C_INSTANCE);
  case E_INPUTS:
    d->expect = E_INPUT_KEY;
    return enter (d, C_INPUTS);
  case E_VALUE:
    if (!element (d, FALSE))
      return 0;
    d->b64_done = FALSE;
    d->expect = E_B64_KEY;
    return enter (d, C_B64);
  default:
    return unexpected (d);
  }
}

static gboolean
key_is (const char *key, gsize len, const char *name)
{
  return len == strlen (name) && memcmp (key, name, len) == 0;
}

static int
key_request (TfsDecode *d, const char *k, gsize len)
{
  gboolean *seen = NULL;
  if (key_is (k, len, "signature_name")) {
    seen = &d->seen_signature;
    d->expect = E_SIGNATURE;
  } else if (key_is (k, len, "instances") || key_is (k, len, "inputs")) {
    gboolean rows = key_is (k, len, "instances");
    if (d->seen_instances || d->seen_inputs)
      return fail (d, SEDP_PROTOCOL_ERROR_INVALID, "%s: a request carries instances (row format) "
                   "or inputs (columnar format), not both nor twice", rows ? "instances" : "inputs");
    seen = rows ? &d->seen_instances : &d->seen_inputs;
    d->expect = rows ? E_INSTANCES : E_INPUTS;
  } else {
    return fail (d, SEDP_PROTOCOL_ERROR_INVALID, "%.*s: unknown field (expected signature_name, "
                 "instances or inputs)", (int) MIN (len, 64), k);
  }
  if (*seen)
    return fail (d, SEDP_PROTOCOL_ERROR_INVALID, "%.*s: given twice", (int) len, k);
  *seen = TRUE;
  return 1;
}

/* An input's name in an instance object. */
static int
key_instance (TfsDecode *d, const char *k, gsize len)
{
  MaArray *single = ma_inputs_single (d->in);
  if (d->expect == E_INSTANCE_KEY && single && key_is (k, len, "b64") &&
      strcmp (single->name, "b64") != 0) { /* {"b64": …}: a bare value of the one input */
    d->stack[d->top - 1] = C_B64;
    d->bare = TRUE;
    begin_row (d, single, d->n_instances - 1);
    d->b64_done = FALSE;
    d->leaf_depth = 0;
    d->expect = E_B64;
    return 1;
  }
  MaArray *a = ma_inputs_array (d->in, holder_path, d, k, len, &d->error);
  if (a == NULL)
    return 0;
  guint row = d->n_instances - 1;
  if (a->n_rows != row)
    return fail (d, SEDP_PROTOCOL_ERROR_INVALID, "instances[%u].%s: %s", row, a->name,
                 a->n_rows > row ? "given twice" : "not in the instances before (every instance "
                 "carries the same inputs)");
  begin_row (d, a, row);
  return 1;
}

static int
on_map_key (void *ctx, const unsigned char *key, size_t len)
{
  TfsDecode *d = ctx;
  const char *k = (const char *) key;
  switch (d->stack[d->top - 1]) {
  case C_REQ:
    return key_request (d, k, len);
  case C_INSTANCE:
    return key_instance (d, k, len);
  case C_INPUTS:
    if ((d->arr = ma_inputs_array (d->in, holder_path, d, k, len, &d->error)) == NULL)
      return 0;
    if (d->arr->n_rows > 0)
      return fail (d, SEDP_PROTOCOL_ERROR_INVALID, "inputs.%s: given twice", d->arr->name);
    d->expect = E_BATCH;
    return 1;
  default: /* C_B64 */
    if (d->expect != E_B64_KEY || !key_is (k, len, "b64"))
      return unexpected (d);
    d->expect = E_B64;
    return 1;
  }
}

static int
on_end_map (void *ctx)
{
  TfsDecode *d = ctx;
  Container c = d->stack[--d->top];
  d->depth--;
  if (c == C_INSTANCE && !end_instance (d))
    return 0;
  if (c != C_B64)
    return value_done (d);
  if (!d->b64_done) {
    d->expect = E_B64;
    return unexpected (d);
  }
  return leaf_done (d);
}

/* ---- arrays ---- */

static int
on_start_array (void *ctx)
{
  TfsDecode *d = ctx;
  if (!deeper (d))
    return 0;
  switch (d->expect) {
  case E_INSTANCES:
    d->expect = E_INSTANCE;
    return enter (d, C_INSTANCES);
  case E_INSTANCE:
    return begin_bare_instance (d) && element (d, TRUE);
  case E_INPUTS:
    if ((d->arr = ma_inputs_single (d->in)) == NULL) {
      g_autofree char *names = ma_signature_names (d->in->signature->inputs);
      return fail (d, SEDP_PROTOCOL_ERROR_INVALID, "inputs: expected an object of named inputs "
                   "(the signature %s takes %s; a bare list is for one input)",
                   d->in->signature->name, names);
    }
    d->bare = TRUE;
    /* fall through */
  case E_BATCH:
    enter (d, C_BATCH);
    return value_done (d);
  case E_VALUE:
    return element (d, TRUE);
  default:
    return unexpected (d);
  }
}

static int
on_end_array (void *ctx)
{
  TfsDecode *d = ctx;
  Container c = d->stack[--d->top];
  d->depth--;
  switch (c) {
  case C_INSTANCES:
    if (d->n_instances == 0)
      return fail (d, SEDP_PROTOCOL_ERROR_INVALID, "instances: an empty list (a request needs at "
                   "least one instance)");
    return value_done (d);
  case C_BATCH:
    if (d->arr->n_rows == 0)
      return fail (d, SEDP_PROTOCOL_ERROR_INVALID, "inputs%s%s: an empty list (the batch needs at "
                   "least one row)", d->bare ? "" : ".", d->bare ? "" : d->arr->name);
    return value_done (d);
  default: { /* C_LIST */
    guint k = d->vdepth, n = d->len[k];
    if (d->want[k] == 0) {
      d->want[k] = n + 1;
    } else if (d->want[k] != n + 1) {
      g_autofree char *why = g_strdup_printf ("a list of %u where another at the same depth has "
                                              "%u", n, d->want[k] - 1);
      return ragged (d, why);
    }
    d->vdepth--;
    return d->vdepth == 0 ? end_row (d) : value_done (d);
  }
  }
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

/* The batch size: the instances, or the rows of the first input given in inputs. */
static guint
batch_rows (const TfsDecode *d)
{
  if (d->seen_instances)
    return d->n_instances;
  for (guint i = 0; i < d->in->arrays->len; i++) {
    const MaArray *a = g_ptr_array_index (d->in->arrays, i);
    if (a->n_rows)
      return a->n_rows;
  }
  return 0;
}

gboolean
ma_tfs_decode (const guint8 *data, gsize size, MaInputs *in, SedpModelApiRequest *out,
               GError **error)
{
  guint slots = in->limits.max_depth + 2;
  g_autofree guint8 *stack = g_new (guint8, slots);
  g_autofree guint *len = g_new0 (guint, slots);
  g_autofree guint *want = g_new0 (guint, slots);
  TfsDecode d = {.in = in, .out = out, .stack = stack, .len = len, .want = want,
                 .expect = E_ROOT, .leaf_depth = NO_DEPTH};
  if (!sedp_json_scan_request (data, size, &callbacks, &d, &d.error)) {
    g_propagate_error (error, d.error);
    return FALSE;
  }
  if (!d.seen_instances && !d.seen_inputs)
    return sedp_protocol_invalid (error, "expected instances (row format) or inputs (columnar "
                                  "format)");
  out->columnar = d.seen_inputs;
  out->n_rows = batch_rows (&d);
  return ma_check_signature_name (in->signature, out->signature_name, error) &&
         ma_inputs_finish (in, d.seen_instances ? "instances" : "inputs", out->n_rows,
                           &out->items, error);
}

/* ---- answers ---- */

/* A float32 in the fewest digits that read back as the same float; NaN and the infinities as TF
 * Serving writes them (NaN, Infinity, -Infinity: not standard JSON, read by Python's json, by
 * JavaScript and by proto3's JSON parsers). */
static void
json_float (GString *out, float f)
{
  if (isnan (f)) {
    g_string_append (out, "NaN");
    return;
  }
  if (isinf (f)) {
    g_string_append (out, f > 0 ? "Infinity" : "-Infinity");
    return;
  }
  static const char *const formats[] = {"%.6g", "%.7g", "%.8g", "%.9g"};
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  for (guint k = 0; k < G_N_ELEMENTS (formats); k++) {
    g_ascii_formatd (buf, sizeof buf, formats[k], f);
    if ((float) g_ascii_strtod (buf, NULL) == f)
      break;
  }
  g_string_append (out, buf);
}

/* One value of a column. */
static void
json_element (GString *out, const SedpColumn *col, gsize index, gboolean bytes)
{
  switch (sedp_column_get_column_type (col)) {
  case SEDP_COLUMN_FLOAT32:
    json_float (out, sedp_column_get_float32 (col)[index]);
    break;
  case SEDP_COLUMN_INT64:
    g_string_append_printf (out, "%" G_GINT64_FORMAT, sedp_column_get_int64 (col)[index]);
    break;
  default: {
    const char *s = sedp_column_get_string (col, (guint) index);
    if (bytes) {
      g_autofree char *b64 = g_base64_encode ((const guchar *) (s ? s : ""), s ? strlen (s) : 0);
      g_string_append_printf (out, "{\"b64\":\"%s\"}", b64);
    } else {
      sedp_json_append_string (out, s ? s : "");
    }
  }
  }
}

/* Values from *@index on, nested by @dims (a scalar when @n_dims is 0). */
static void
json_nested (GString *out, const SedpColumn *col, gsize *index, const gint64 *dims, guint n_dims,
             gboolean bytes)
{
  if (n_dims == 0) {
    json_element (out, col, (*index)++, bytes);
    return;
  }
  g_string_append_c (out, '[');
  for (gint64 k = 0; k < dims[0]; k++) {
    if (k)
      g_string_append_c (out, ',');
    json_nested (out, col, index, dims + 1, n_dims - 1, bytes);
  }
  g_string_append_c (out, ']');
}

/* The value of output @t for row @item: nested lists shaped by its dims. */
static gboolean
json_output (GString *out, const SedpResult *result, guint item, const SedpModelApiTensor *t,
             GError **error)
{
  guint row = 0, width = 0;
  const SedpColumn *col = ma_output_column (result, item, t, &row, &width, error);
  if (col == NULL)
    return FALSE;
  gint64 one;
  const gint64 *dims;
  guint n_dims = ma_output_dims (t, width, &dims, &one);
  gsize index = (gsize) row * width;
  gboolean bytes = g_str_has_suffix (t->name, "_bytes"); /* TF Serving's binary outputs */
  json_nested (out, col, &index, dims, n_dims, bytes);
  return TRUE;
}

/* {"predictions": [row, …]}: each row a bare value (one output) or an object of outputs. */
static gboolean
json_predictions (GString *out, const SedpModelApiRequest *decoded, const SedpResult *result,
                  GPtrArray *outs, GError **error)
{
  gboolean named = outs->len > 1;
  g_string_append (out, "{\"predictions\":[");
  for (guint r = 0; r < decoded->n_rows; r++) {
    g_string_append (out, r ? (named ? ",{" : ",") : (named ? "{" : ""));
    for (guint o = 0; o < outs->len; o++) {
      const SedpModelApiTensor *t = g_ptr_array_index (outs, o);
      if (named) {
        g_string_append (out, o ? "," : "");
        sedp_json_append_string (out, t->name);
        g_string_append_c (out, ':');
      }
      if (!json_output (out, result, r, t, error))
        return FALSE;
    }
    if (named)
      g_string_append_c (out, '}');
  }
  g_string_append (out, "]}");
  return TRUE;
}

/* {"outputs": [row, …]} (one output) or {"outputs": {name: [row, …], …}}. */
static gboolean
json_outputs (GString *out, const SedpModelApiRequest *decoded, const SedpResult *result,
              GPtrArray *outs, GError **error)
{
  gboolean named = outs->len > 1;
  g_string_append (out, named ? "{\"outputs\":{" : "{\"outputs\":");
  for (guint o = 0; o < outs->len; o++) {
    const SedpModelApiTensor *t = g_ptr_array_index (outs, o);
    if (named) {
      g_string_append (out, o ? "," : "");
      sedp_json_append_string (out, t->name);
      g_string_append_c (out, ':');
    }
    g_string_append_c (out, '[');
    for (guint r = 0; r < decoded->n_rows; r++) {
      g_string_append (out, r ? "," : "");
      if (!json_output (out, result, r, t, error))
        return FALSE;
    }
    g_string_append_c (out, ']');
  }
  g_string_append (out, named ? "}}" : "}");
  return TRUE;
}

GBytes *
ma_tfs_encode_result (const SedpModelApiRequest *decoded, const SedpResult *result,
                      const SedpModelApiSignature *signature, GError **error)
{
  g_autoptr (GPtrArray) outs = ma_answer_outputs (signature,
                                                  (const char *const *) decoded->output_filter,
                                                  error);
  if (outs == NULL)
    return NULL;
  if (outs->len == 0) {
    g_set_error (error, SEDP_PROTOCOL_ERROR, SEDP_PROTOCOL_ERROR_INVALID, "the signature %s has "
                 "no outputs to answer", signature->name);
    return NULL;
  }
  GString *out = g_string_sized_new (64 + (gsize) decoded->n_rows * 16 * outs->len);
  gboolean ok = decoded->columnar ? json_outputs (out, decoded, result, outs, error)
                                  : json_predictions (out, decoded, result, outs, error);
  if (!ok) {
    g_string_free (out, TRUE);
    return NULL;
  }
  return g_string_free_to_bytes (out);
}

GBytes *
ma_tfs_encode_error (const char *message)
{
  GString *out = g_string_new ("{\"error\":");
  sedp_json_append_string (out, message);
  g_string_append_c (out, '}');
  return g_string_free_to_bytes (out);
}

GBytes *
sedp_model_api_encode_status (const char *name, guint64 version, const char *state)
{
  (void) name; /* GetModelStatus names versions only: the model is the URL's */
  GString *out = g_string_new ("{\"model_version_status\":[{\"version\":");
  g_autofree char *v = g_strdup_printf ("%" G_GUINT64_FORMAT, version);
  sedp_json_append_string (out, v);
  g_string_append (out, ",\"state\":");
  sedp_json_append_string (out, state ? state : "AVAILABLE");
  g_string_append (out, ",\"status\":{\"error_code\":\"OK\",\"error_message\":\"\"}}]}");
  return g_string_free_to_bytes (out);
}
