/* feature_processor — per-row feature transforms declared as options: behaviour sequences cut
 * or padded to a fixed length, hash ids into the cube's signatures, bucketize, log1p,
 * standardize, cross two id columns, filter rows. Each transform reads columns of the frame and
 * writes a new column; they run in the order sequence, hash, cross, bucketize, log1p,
 * standardize, filter (and in the order written within each option), so a later transform may
 * read what an earlier one wrote. Specs are parsed and checked in `create`; columns are looked
 * up per event, and an event whose frame lacks one fails naming it. See
 * docs/feature-processor.md and docs/sequences.md. Built with the SDK only. */
#include <sedp/sedp.h>

#include <math.h>
#include <string.h>

typedef enum { T_SEQ, T_HASH, T_CROSS, T_BUCKET, T_LOG1P, T_STD, T_FILTER } Kind;

typedef enum { OP_GE, OP_GT, OP_LE, OP_LT, OP_EQ, OP_NE } Op;

typedef struct {
  Kind kind;
  char *out;
  char *in;
  char *in2;       /* cross: the second column */
  guint32 slot;    /* hash, cross */
  double *bounds;  /* bucketize: ascending */
  guint n_bounds;
  double mean, std; /* standardize */
  Op op;           /* filter */
  double value;    /* filter; sequence: the padding */
  guint max_len;   /* sequence */
  gboolean first;  /* sequence: keep the first max_len values (default: the last) */
  char *len_out;   /* sequence: OUT_len */
} Transform;

typedef struct {
  Transform *t;
  guint n;
  gboolean has_key;
  guint8 key[SEDP_CUBE_HASH_KEY_BYTES];
  SedpCounter *dropped;
} Processor;

static void
processor_destroy (gpointer instance)
{
  Processor *p = instance;
  if (p == NULL)
    return;
  for (guint k = 0; k < p->n; k++) {
    g_free (p->t[k].out);
    g_free (p->t[k].in);
    g_free (p->t[k].in2);
    g_free (p->t[k].bounds);
    g_free (p->t[k].len_out);
  }
  g_free (p->t);
  g_free (p);
}

static gboolean
spec_error (GError **error, const char *option, const char *text, const char *fmt, ...)
  G_GNUC_PRINTF (4, 5);

static gboolean
spec_error (GError **error, const char *option, const char *text, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *why = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_CONFIG, "%s: '%s': %s", option, text,
               why);
  return FALSE;
}

/* A column name: letters, digits, '_', '.', '-'. */
static gboolean
valid_name (const char *s)
{
  if (s == NULL || *s == '\0')
    return FALSE;
  for (; *s; s++)
    if (!g_ascii_isalnum (*s) && *s != '_' && *s != '.' && *s != '-')
      return FALSE;
  return TRUE;
}

static gboolean
parse_number (const char *s, double *out)
{
  if (s == NULL || *s == '\0')
    return FALSE;
  char *end = NULL;
  double v = g_ascii_strtod (s, &end);
  if (end == s || *end != '\0' || !isfinite (v))
    return FALSE;
  *out = v;
  return TRUE;
}

static gboolean
parse_slot (const char *s, guint32 *slot)
{
  guint64 v = 0;
  if (!g_ascii_string_to_unsigned (s, 10, 0, G_MAXUINT32, &v, NULL))
    return FALSE;
  *slot = (guint32) v;
  return TRUE;
}

/* Splits "OUT=REST": *out is OUT (or NULL when there is no '='), returns REST (both owned). */
static char *
split_out (const char *text, char **out)
{
  const char *eq = strchr (text, '=');
  if (eq == NULL) {
    *out = NULL;
    return g_strstrip (g_strdup (text));
  }
  *out = g_strstrip (g_strndup (text, (gsize) (eq - text)));
  return g_strstrip (g_strdup (eq + 1));
}

static Transform *
add_transform (GArray *ts, Kind kind)
{
  Transform t = {.kind = kind};
  g_array_append_val (ts, t);
  return &g_array_index (ts, Transform, ts->len - 1);
}

static gboolean
check_out (Transform *t, const char *option, const char *text, GError **error)
{
  if (!valid_name (t->out))
    return spec_error (error, option, text, "'%s' is not a column name", t->out ? t->out : "");
  if (strcmp (t->out, t->in) == 0 || (t->in2 && strcmp (t->out, t->in2) == 0))
    return spec_error (error, option, text, "the output must be a new column, not its input");
  return TRUE;
}

/* sequence: OUT=IN:MAX_LEN[:PAD][:first] */
static gboolean
parse_sequence (GArray *ts, const char *text, GError **error)
{
  char *out = NULL;
  g_autofree char *rest = split_out (text, &out);
  Transform *t = add_transform (ts, T_SEQ);
  t->out = out;
  g_auto (GStrv) parts = g_strsplit (rest, ":", -1);
  guint n = g_strv_length (parts);
  guint64 len = 0;
  if (out == NULL || n < 2 || n > 4)
    return spec_error (error, "sequence", text, "expected OUT=IN:MAX_LEN[:PAD][:first]");
  t->in = g_strstrip (g_strdup (parts[0]));
  if (!valid_name (t->in))
    return spec_error (error, "sequence", text, "'%s' is not a column name", t->in);
  if (!g_ascii_string_to_unsigned (g_strstrip (parts[1]), 10, 1, 4096, &len, NULL))
    return spec_error (error, "sequence", text, "MAX_LEN '%s' must be a number from 1 to 4096",
                       parts[1]);
  t->max_len = (guint) len;
  for (guint k = 2; k < n; k++) {
    const char *p = g_strstrip (parts[k]);
    if (strcmp (p, "first") == 0)
      t->first = TRUE;
    else if (k == 2 && parse_number (p, &t->value) && t->value == floor (t->value))
      continue;
    else
      return spec_error (error, "sequence", text, "'%s' is neither an integer padding nor "
                         "'first'", p);
  }
  t->len_out = g_strconcat (t->out, "_len", NULL);
  return check_out (t, "sequence", text, error);
}

/* hash: OUT=IN@SLOT */
static gboolean
parse_hash (GArray *ts, const char *text, GError **error)
{
  char *out = NULL;
  g_autofree char *rest = split_out (text, &out);
  Transform *t = add_transform (ts, T_HASH);
  t->out = out;
  char *at = strrchr (rest, '@');
  if (out == NULL || at == NULL)
    return spec_error (error, "hash", text, "expected OUT=IN@SLOT");
  *at = '\0';
  t->in = g_strstrip (g_strdup (rest));
  if (!valid_name (t->in))
    return spec_error (error, "hash", text, "'%s' is not a column name", t->in);
  if (!parse_slot (g_strstrip (at + 1), &t->slot))
    return spec_error (error, "hash", text, "the slot after '@' must be a number from 0 to "
                       "2^32 - 1");
  return check_out (t, "hash", text, error);
}

/* cross: OUT=A*B@SLOT */
static gboolean
parse_cross (GArray *ts, const char *text, GError **error)
{
  char *out = NULL;
  g_autofree char *rest = split_out (text, &out);
  Transform *t = add_transform (ts, T_CROSS);
  t->out = out;
  char *at = strrchr (rest, '@');
  char *star = strchr (rest, '*');
  if (out == NULL || at == NULL || star == NULL || star > at)
    return spec_error (error, "cross", text, "expected OUT=A*B@SLOT");
  *at = '\0';
  *star = '\0';
  t->in = g_strstrip (g_strdup (rest));
  t->in2 = g_strstrip (g_strdup (star + 1));
  if (!valid_name (t->in) || !valid_name (t->in2))
    return spec_error (error, "cross", text, "A and B must be column names");
  if (!parse_slot (g_strstrip (at + 1), &t->slot))
    return spec_error (error, "cross", text, "the slot after '@' must be a number from 0 to "
                       "2^32 - 1");
  return check_out (t, "cross", text, error);
}

/* bucketize: OUT=IN:b1:b2:… (ascending) */
static gboolean
parse_bucketize (GArray *ts, const char *text, GError **error)
{
  char *out = NULL;
  g_autofree char *rest = split_out (text, &out);
  Transform *t = add_transform (ts, T_BUCKET);
  t->out = out;
  g_auto (GStrv) parts = g_strsplit (rest, ":", -1);
  guint n = g_strv_length (parts);
  if (out == NULL || n < 2)
    return spec_error (error, "bucketize", text, "expected OUT=IN:b1:b2:… (boundaries "
                       "separated by ':')");
  t->in = g_strstrip (g_strdup (parts[0]));
  if (!valid_name (t->in))
    return spec_error (error, "bucketize", text, "'%s' is not a column name", t->in);
  t->n_bounds = n - 1;
  t->bounds = g_new (double, t->n_bounds);
  for (guint k = 0; k < t->n_bounds; k++) {
    if (!parse_number (g_strstrip (parts[k + 1]), &t->bounds[k]))
      return spec_error (error, "bucketize", text, "boundary '%s' is not a number", parts[k + 1]);
    if (k > 0 && t->bounds[k] <= t->bounds[k - 1])
      return spec_error (error, "bucketize", text, "boundaries must be strictly ascending");
  }
  return check_out (t, "bucketize", text, error);
}

/* log1p: IN or OUT=IN */
static gboolean
parse_log1p (GArray *ts, const char *text, GError **error)
{
  char *out = NULL;
  char *rest = split_out (text, &out);
  Transform *t = add_transform (ts, T_LOG1P);
  t->in = rest;
  t->out = out ? out : g_strconcat (rest, "_log1p", NULL);
  if (!valid_name (t->in))
    return spec_error (error, "log1p", text, "expected IN or OUT=IN (column names)");
  return check_out (t, "log1p", text, error);
}

/* standardize: OUT=IN:MEAN:STD or IN:MEAN:STD */
static gboolean
parse_standardize (GArray *ts, const char *text, GError **error)
{
  char *out = NULL;
  g_autofree char *rest = split_out (text, &out);
  Transform *t = add_transform (ts, T_STD);
  g_auto (GStrv) parts = g_strsplit (rest, ":", -1);
  t->out = out;
  if (g_strv_length (parts) != 3)
    return spec_error (error, "standardize", text, "expected OUT=IN:MEAN:STD");
  t->in = g_strstrip (g_strdup (parts[0]));
  if (!valid_name (t->in))
    return spec_error (error, "standardize", text, "'%s' is not a column name", t->in);
  if (t->out == NULL)
    t->out = g_strconcat (t->in, "_std", NULL);
  if (!parse_number (g_strstrip (parts[1]), &t->mean))
    return spec_error (error, "standardize", text, "the mean '%s' is not a number", parts[1]);
  if (!parse_number (g_strstrip (parts[2]), &t->std) || t->std <= 0)
    return spec_error (error, "standardize", text, "the std '%s' must be a number > 0", parts[2]);
  return check_out (t, "standardize", text, error);
}

/* filter: IN OP VALUE, OP one of >= > <= < == != */
static gboolean
parse_filter (GArray *ts, const char *text, GError **error)
{
  static const struct { const char *s; Op op; } ops[] = {
    {">=", OP_GE}, {"<=", OP_LE}, {"==", OP_EQ}, {"!=", OP_NE}, {">", OP_GT}, {"<", OP_LT}};
  Transform *t = add_transform (ts, T_FILTER);
  const char *pos = strpbrk (text, "<>=!");
  if (pos == NULL)
    return spec_error (error, "filter", text, "expected IN OP VALUE with OP one of >= > <= < "
                       "== !=");
  guint k;
  for (k = 0; k < G_N_ELEMENTS (ops); k++)
    if (g_str_has_prefix (pos, ops[k].s))
      break;
  if (k == G_N_ELEMENTS (ops))
    return spec_error (error, "filter", text, "expected IN OP VALUE with OP one of >= > <= < "
                       "== !=");
  t->op = ops[k].op;
  t->in = g_strstrip (g_strndup (text, (gsize) (pos - text)));
  if (!valid_name (t->in))
    return spec_error (error, "filter", text, "'%s' is not a column name", t->in);
  g_autofree char *v = g_strstrip (g_strdup (pos + strlen (ops[k].s)));
  if (!parse_number (v, &t->value))
    return spec_error (error, "filter", text, "'%s' is not a number", v);
  return TRUE;
}

static gboolean
read_key (Processor *p, SedpStageContext *ctx, GError **error)
{
  const char *hex = sedp_stage_context_get_string (ctx, "hash_key");
  const char *cube = sedp_stage_context_get_string (ctx, "cube");
  if (hex && cube) {
    g_set_error_literal (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_CONFIG,
                         "set one of hash_key and cube, not both");
    return FALSE;
  }
  if (hex) {
    if (!sedp_cube_hash_key_parse (hex, p->key)) {
      g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_CONFIG,
                   "hash_key: expected %d hex digits, got '%s'", 2 * SEDP_CUBE_HASH_KEY_BYTES, hex);
      return FALSE;
    }
    p->has_key = TRUE;
  } else if (cube) {
    /* The key only: the cube's index and values are the lookup stage's to load. */
    GError *local = NULL;
    if (!sedp_cube_read_hash_key (cube, p->key, &local)) {
      g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_CONFIG, "cube: %s", local->message);
      g_error_free (local);
      return FALSE;
    }
    p->has_key = TRUE;
  }
  return TRUE;
}

static gpointer
processor_create (SedpStageContext *ctx, GError **error)
{
  static const struct {
    const char *option;
    gboolean (*parse) (GArray *, const char *, GError **);
  } kinds[] = {{"sequence", parse_sequence}, {"hash", parse_hash},   {"cross", parse_cross},
               {"bucketize", parse_bucketize}, {"log1p", parse_log1p},
               {"standardize", parse_standardize}, {"filter", parse_filter}};
  Processor *p = g_new0 (Processor, 1);
  GArray *ts = g_array_new (FALSE, TRUE, sizeof (Transform));
  gboolean ok = TRUE, hashing = FALSE;
  for (guint k = 0; ok && k < G_N_ELEMENTS (kinds); k++) {
    const char *const *items = sedp_stage_context_get_strv (ctx, kinds[k].option);
    for (guint i = 0; ok && items && items[i]; i++) {
      ok = kinds[k].parse (ts, items[i], error);
      hashing |= k == 1 || k == 2;
    }
  }
  p->n = ts->len;
  p->t = (Transform *) g_array_free (ts, FALSE);
  if (!ok)
    goto fail;
  if (p->n == 0) {
    g_set_error_literal (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_CONFIG,
                         "no transform: set at least one of sequence, hash, cross, bucketize, "
                         "log1p, standardize, filter");
    goto fail;
  }
  if (!read_key (p, ctx, error))
    goto fail;
  if (hashing && !p->has_key) {
    g_set_error_literal (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_CONFIG,
                         "hash and cross need the signature key: set hash_key (32 hex digits) "
                         "or cube = PATH (the cube's folder)");
    goto fail;
  }
  p->dropped = sedp_stage_context_add_counter (ctx, "feature_rows_filtered_total",
                                               "Rows dropped by a filter transform");
  return p;
fail:
  processor_destroy (p);
  return NULL;
}

/* ---- process ---- */

static gboolean
fail_event (SedpEvent *ev, const char *fmt, ...) G_GNUC_PRINTF (2, 3);

static gboolean
fail_event (SedpEvent *ev, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  GError *e = g_error_new_valist (SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_INVALID_INPUT, fmt, ap);
  va_end (ap);
  sedp_event_fail (ev, e);
  g_error_free (e);
  return FALSE;
}

static const char *const kind_names[] = {"sequence", "hash", "cross", "bucketize", "log1p",
                                         "standardize", "filter"};

/* The column @name, failing the event when it is missing or not one of the @mask types. */
static const SedpColumn *
need (SedpEvent *ev, const Transform *t, const char *name, guint mask, const char *what)
{
  const SedpColumn *c = sedp_frame_get_column (sedp_event_get_frame (ev), name);
  if (c == NULL) {
    fail_event (ev, "%s: column '%s' is missing", kind_names[t->kind], name);
    return NULL;
  }
  if (!(mask & (1u << sedp_column_get_column_type (c)))) {
    fail_event (ev, "%s: column '%s' is %s (expected %s)", kind_names[t->kind], name,
                sedp_column_type_to_string (sedp_column_get_column_type (c)), what);
    return NULL;
  }
  return c;
}

#define M(t) (1u << SEDP_COLUMN_##t)
#define IDS (M (INT64) | M (UINT64) | M (IDLIST))
#define NUMS (M (FLOAT32) | M (INT64) | M (UINT64))

/* The ids of @row of an id column (idlist, or int64/uint64 of any width). */
static inline const guint64 *
row_ids (const SedpColumn *c, guint row, guint *n)
{
  if (sedp_column_is_broadcast (c))
    row = 0;
  switch (sedp_column_get_column_type (c)) {
  case SEDP_COLUMN_IDLIST:
    return sedp_column_get_ids (c, row, n);
  case SEDP_COLUMN_INT64:
    *n = sedp_column_get_width (c);
    return (const guint64 *) sedp_column_get_int64 (c) + (gsize) row * *n;
  default:
    *n = sedp_column_get_width (c);
    return sedp_column_get_uint64 (c) + (gsize) row * *n;
  }
}

/* Value @i of a numeric column's row-major data, as a double. */
static inline double
num_at (const SedpColumn *c, SedpColumnType type, gsize i)
{
  switch (type) {
  case SEDP_COLUMN_FLOAT32:
    return sedp_column_get_float32 (c)[i];
  case SEDP_COLUMN_INT64:
    return (double) sedp_column_get_int64 (c)[i];
  default:
    return (double) sedp_column_get_uint64 (c)[i];
  }
}

static gboolean
do_hash (const Processor *p, const Transform *t, SedpEvent *ev, SedpFrame *f, guint n_rows)
{
  const SedpColumn *c = need (ev, t, t->in, IDS, "an idlist, int64 or uint64 column");
  if (c == NULL)
    return FALSE;
  const guint8 *key = p->key;
  const guint32 slot = t->slot;
  gboolean bc = sedp_column_is_broadcast (c);
  if (sedp_column_get_column_type (c) == SEDP_COLUMN_IDLIST) {
    const guint32 *in_off = NULL;
    guint n_values = 0;
    const guint64 *in = sedp_column_get_idlist (c, &in_off, &n_values);
    guint per = bc ? in_off[1] - in_off[0] : 0;
    guint total = bc ? per * n_rows : n_values;
    guint32 *off = NULL;
    guint64 *out = sedp_column_idlist_data (sedp_frame_add_idlist (f, t->out, total), &off);
    if (bc) {
      for (guint i = 0; i < per; i++)
        out[i] = sedp_signature (key, slot, in[in_off[0] + i]);
      for (guint r = 0; r <= n_rows; r++)
        off[r] = r * per;
      for (guint r = 1; r < n_rows; r++)
        memcpy (out + (gsize) r * per, out, per * sizeof (guint64));
    } else {
      memcpy (off, in_off, (n_rows + 1) * sizeof (guint32));
      for (guint i = 0; i < n_values; i++)
        out[i] = sedp_signature (key, slot, in[i]);
    }
    return TRUE;
  }
  guint w = sedp_column_get_width (c);
  guint64 *out = sedp_column_uint64_data (sedp_frame_add_column (f, t->out, SEDP_COLUMN_UINT64, w));
  for (guint r = 0; r < n_rows; r++) {
    guint n = 0;
    const guint64 *ids = row_ids (c, r, &n);
    if (bc && r > 0) {
      memcpy (out + (gsize) r * w, out, w * sizeof (guint64));
      continue;
    }
    for (guint i = 0; i < n; i++)
      out[(gsize) r * w + i] = sedp_signature (key, slot, ids[i]);
  }
  return TRUE;
}

/* Copies the kept part of @n values (the last max_len, or the first) of @in to @out (max_len
 * values of @size bytes), pads the rest with @pad; returns how many were kept. */
static guint
seq_row (const Transform *t, const void *in, guint n, gsize size, void *out, const void *pad)
{
  guint kept = MIN (n, t->max_len);
  const guint8 *src = (const guint8 *) in + (t->first ? 0 : (gsize) (n - kept) * size);
  if (kept > 0) /* an empty list may have no storage at all */
    memcpy (out, src, kept * size);
  for (guint i = kept; i < t->max_len; i++)
    memcpy ((guint8 *) out + i * size, pad, size);
  return kept;
}

static gboolean
do_sequence (const Transform *t, SedpEvent *ev, SedpFrame *f, guint n_rows)
{
  const SedpColumn *c = need (ev, t, t->in, IDS | M (FLOAT32),
                              "an idlist, int64, uint64 or float32 column");
  if (c == NULL)
    return FALSE;
  gboolean floats = sedp_column_get_column_type (c) == SEDP_COLUMN_FLOAT32;
  gsize size = floats ? sizeof (float) : sizeof (gint64);
  SedpColumn *o = sedp_frame_add_column (f, t->out, floats ? SEDP_COLUMN_FLOAT32 : SEDP_COLUMN_INT64,
                                         t->max_len);
  guint8 *out = floats ? (guint8 *) sedp_column_float32_data (o) : (guint8 *) sedp_column_int64_data (o);
  gint64 *lens = sedp_column_int64_data (sedp_frame_add_column (f, t->len_out, SEDP_COLUMN_INT64, 1));
  float fpad = (float) t->value;
  gint64 ipad = (gint64) t->value;
  gsize row_bytes = t->max_len * size;
  for (guint r = 0; r < n_rows; r++) {
    if (r > 0 && sedp_column_is_broadcast (c)) { /* one row, repeated */
      memcpy (out + r * row_bytes, out, row_bytes);
      lens[r] = lens[0];
      continue;
    }
    guint n = 0;
    const void *in = floats ? (const void *) (sedp_column_get_float32 (c) +
                                              (gsize) (sedp_column_is_broadcast (c) ? 0 : r) *
                                                sedp_column_get_width (c))
                            : (const void *) row_ids (c, r, &n);
    if (floats)
      n = sedp_column_get_width (c);
    lens[r] = seq_row (t, in, n, size, out + r * row_bytes, floats ? (const void *) &fpad : (const void *) &ipad);
  }
  return TRUE;
}

static inline guint64
cross_id (const guint8 *key, guint32 slot, guint64 a, guint64 b)
{
  return sedp_signature (key, slot, sedp_signature (key, slot, a) ^ b);
}

static gboolean
do_cross (const Processor *p, const Transform *t, SedpEvent *ev, SedpFrame *f, guint n_rows)
{
  const SedpColumn *a = need (ev, t, t->in, IDS, "an idlist, int64 or uint64 column");
  const SedpColumn *b = a ? need (ev, t, t->in2, IDS, "an idlist, int64 or uint64 column") : NULL;
  if (b == NULL)
    return FALSE;
  guint64 total = 0;
  for (guint r = 0; r < n_rows; r++) {
    guint na = 0, nb = 0;
    row_ids (a, r, &na);
    row_ids (b, r, &nb);
    total += (guint64) na * nb;
  }
  if (total > G_MAXUINT32)
    return fail_event (ev, "cross: %s × %s gives %" G_GUINT64_FORMAT " ids, too many", t->in,
                       t->in2, total);
  guint32 *off = NULL;
  guint64 *out = sedp_column_idlist_data (sedp_frame_add_idlist (f, t->out, (guint) total), &off);
  guint pos = 0;
  for (guint r = 0; r < n_rows; r++) {
    off[r] = pos;
    guint na = 0, nb = 0;
    const guint64 *ia = row_ids (a, r, &na), *ib = row_ids (b, r, &nb);
    for (guint i = 0; i < na; i++) {
      guint64 ha = sedp_signature (p->key, t->slot, ia[i]);
      for (guint j = 0; j < nb; j++)
        out[pos++] = sedp_signature (p->key, t->slot, ha ^ ib[j]);
    }
  }
  off[n_rows] = pos;
  return TRUE;
}

/* Float transforms (bucketize, log1p, standardize): scalar or vector numeric inputs. */
static gboolean
do_numeric (const Transform *t, SedpEvent *ev, SedpFrame *f, guint n_rows)
{
  const SedpColumn *c = need (ev, t, t->in, NUMS, "a float32, int64 or uint64 column");
  if (c == NULL)
    return FALSE;
  SedpColumnType type = sedp_column_get_column_type (c);
  guint w = sedp_column_get_width (c);
  gboolean bc = sedp_column_is_broadcast (c);
  if (t->kind == T_BUCKET) {
    gint64 *out = sedp_column_int64_data (sedp_frame_add_column (f, t->out, SEDP_COLUMN_INT64, w));
    for (guint r = 0; r < n_rows; r++)
      for (guint j = 0; j < w; j++) {
        double v = num_at (c, type, (gsize) (bc ? 0 : r) * w + j);
        guint lo = 0, hi = t->n_bounds; /* the number of boundaries ≤ v */
        while (lo < hi) {
          guint mid = (lo + hi) / 2;
          if (t->bounds[mid] <= v)
            lo = mid + 1;
          else
            hi = mid;
        }
        out[(gsize) r * w + j] = lo;
      }
    return TRUE;
  }
  float *out = sedp_column_float32_data (sedp_frame_add_column (f, t->out, SEDP_COLUMN_FLOAT32, w));
  if (t->kind == T_LOG1P) {
    for (guint r = 0; r < n_rows; r++)
      for (guint j = 0; j < w; j++) {
        double v = num_at (c, type, (gsize) (bc ? 0 : r) * w + j);
        out[(gsize) r * w + j] = (float) log1p (v > 0 ? v : 0);
      }
  } else {
    const double mean = t->mean, inv = 1.0 / t->std;
    for (guint r = 0; r < n_rows; r++)
      for (guint j = 0; j < w; j++)
        out[(gsize) r * w + j] = (float) ((num_at (c, type, (gsize) (bc ? 0 : r) * w + j) - mean) * inv);
  }
  return TRUE;
}

static gboolean
do_filter (const Processor *p, const Transform *t, SedpEvent *ev, SedpFrame *f, guint n_rows)
{
  const SedpColumn *c = need (ev, t, t->in, NUMS, "a float32, int64 or uint64 column");
  if (c == NULL)
    return FALSE;
  if (sedp_column_get_width (c) != 1)
    return fail_event (ev, "filter: column '%s' has width %u (expected a scalar)", t->in,
                       sedp_column_get_width (c));
  SedpColumnType type = sedp_column_get_column_type (c);
  gboolean bc = sedp_column_is_broadcast (c);
  guint64 dropped = 0;
  for (guint r = 0; r < n_rows; r++) {
    if (sedp_frame_get_row_state (f, r) != SEDP_ROW_LIVE)
      continue;
    double v = num_at (c, type, bc ? 0 : r), x = t->value;
    gboolean keep;
    switch (t->op) {
    case OP_GE: keep = v >= x; break;
    case OP_GT: keep = v > x; break;
    case OP_LE: keep = v <= x; break;
    case OP_LT: keep = v < x; break;
    case OP_EQ: keep = v == x; break;
    default: keep = v != x; break;
    }
    if (!keep) {
      sedp_frame_drop_row (f, r);
      dropped++;
    }
  }
  if (dropped)
    sedp_counter_add (p->dropped, dropped);
  return TRUE;
}

static gboolean
processor_process (gpointer instance, SedpEvent *const *events, guint n_events, guint worker,
                   GError **error)
{
  const Processor *p = instance;
  for (guint e = 0; e < n_events; e++) {
    SedpEvent *ev = events[e];
    SedpFrame *f = sedp_event_get_frame (ev);
    guint n_rows = sedp_frame_get_n_rows (f);
    gboolean ok = TRUE;
    for (guint k = 0; ok && k < p->n; k++) {
      const Transform *t = &p->t[k];
      switch (t->kind) {
      case T_SEQ: ok = do_sequence (t, ev, f, n_rows); break;
      case T_HASH: ok = do_hash (p, t, ev, f, n_rows); break;
      case T_CROSS: ok = do_cross (p, t, ev, f, n_rows); break;
      case T_FILTER: ok = do_filter (p, t, ev, f, n_rows); break;
      default: ok = do_numeric (t, ev, f, n_rows); break;
      }
    }
  }
  return TRUE;
}

static const SedpOptionSpec processor_options[] = {
  SEDP_OPTION_LIST_SPEC ("sequence", NULL,
                         "OUT=IN:MAX_LEN[:PAD][:first]: a behaviour sequence (idlist, int64, "
                         "uint64 or float32 IN) as MAX_LEN values, the last ones (or the first), "
                         "padded with PAD (default 0); also OUT_len, the count kept (int64)"),
  SEDP_OPTION_LIST_SPEC ("hash", NULL,
                         "OUT=IN@SLOT: the ids of IN (idlist, int64, uint64) hashed into the "
                         "signatures of SLOT (idlist out for idlist in, else uint64)"),
  SEDP_OPTION_LIST_SPEC ("cross", NULL,
                         "OUT=A*B@SLOT: every pair of ids of A and B, hashed into SLOT (idlist)"),
  SEDP_OPTION_LIST_SPEC ("bucketize", NULL,
                         "OUT=IN:b1:b2:…: the int64 bucket index (values < b1 → 0, < b2 → 1, …)"),
  SEDP_OPTION_LIST_SPEC ("log1p", NULL, "IN or OUT=IN: float32 log(1 + max(x, 0)), default "
                         "output IN_log1p"),
  SEDP_OPTION_LIST_SPEC ("standardize", NULL, "OUT=IN:MEAN:STD: float32 (x - MEAN) / STD, "
                         "default output IN_std"),
  SEDP_OPTION_LIST_SPEC ("filter", NULL, "IN OP VALUE (OP: >= > <= < == !=): rows that fail are "
                         "dropped; on a request frame, the request"),
  SEDP_OPTION_STRING_SPEC ("hash_key", NULL, "The signature key, 32 hex digits (or set cube)"),
  SEDP_OPTION_PATH_SPEC ("cube", NULL, FALSE, "A cube folder whose signature key hash and cross "
                         "use"),
  SEDP_OPTION_END,
};

SEDP_STAGE_DEFINE (.name = "feature_processor", .version = SEDP_VERSION,
                   .description = "Per-row feature transforms: behaviour sequences, hash ids into "
                                  "cube signatures, cross, bucketize, log1p, standardize, filter",
                   .license = "MIT", .scope = SEDP_SCOPE_ITEM, .options = processor_options,
                   .create = processor_create, .process = processor_process,
                   .destroy = processor_destroy);
