/* cube_accessor — sparse-parameter lookups: the ids of a frame's slot columns become feature
 * signatures, every key of the whole batch (all frames of all events) is looked up once in a
 * cube source (a local cube, Redis, or the cube cache in front of Redis), and each row's
 * embeddings are pooled (sum or mean) into float32 columns `pooled_K` of width dim, the inputs
 * `sedp model split` gives the dense model. Sequence columns (a user's behaviour sequence, L ids
 * per row) are looked up in the same batch but not pooled: their rows' embeddings, in id order,
 * make float32 columns `seq_COLUMN` of width L × dim.
 *
 * It uses the SDK's cube API (<sedp/cube.h>, part of <sedp/sedp.h>) only. Missing keys get the
 * configured default; when the backend fails as a whole (Redis down or slow past timeout_ms),
 * every key gets the default and the request goes on. See docs/storage.md. */
#include <sedp/sedp.h>

#include <string.h>

/* One slot or sequence: a column of ids, its slot number K and its output column. */
typedef struct {
  char *column;
  guint32 slot;
  char *output;
  gboolean mean;
  gboolean seq;  /* a sequence: the row's embeddings one after the other, not pooled */
} Slot;

/* What one event contributes: its frame and, per slot and row, a range of key references. */
typedef struct {
  SedpFrame *frame;
  guint n_rows;
  gboolean ok;
  gsize ranges;  /* index of its first range: ranges[(ranges + s * n_rows + r)] */
} EventRefs;

/* Per-worker scratch, reused across calls. */
typedef struct {
  GArray *events;   /* EventRefs */
  GPtrArray *cols;  /* const SedpColumn *, n_slots per event (slots, then sequences) */
  GArray *begin;    /* guint32 per (event, slot, row): first reference */
  GArray *end;      /* guint32: one past the last */
  GArray *refs;     /* guint32: index into keys of every id of every row */
  GArray *keys;     /* guint64: distinct keys of the batch */
  guint32 *set;     /* open addressing: index + 1 into keys, 0 empty */
  gsize set_cap;    /* a power of two */
  float *values;    /* keys × dim */
  gsize values_cap;
  guint8 *found;
  gsize found_cap;
} Scratch;

typedef struct {
  char *stage;
  SedpCubeSource *source;
  guint dim;
  gboolean hash;
  guint8 hash_key[SEDP_CUBE_HASH_KEY_BYTES];
  Slot *slots;     /* the pooled slots, then the sequences */
  guint n_slots;   /* both */
  guint n_pooled;  /* the pooled slots */
  float default_value;
  Scratch *scratch;
  guint n_workers;
  gint64 last_warning;  /* monotonic µs of the last degraded-lookup warning (atomic) */
  SedpCounter *lookups;
  SedpCounter *keys_total;
  SedpCounter *unique_keys;
  SedpCounter *missing;
  SedpCounter *degraded;
  SedpCounter *degraded_keys;
} Accessor;

/* ---- create / destroy ---- */

static void
accessor_destroy (gpointer instance)
{
  Accessor *a = instance;
  if (a == NULL)
    return;
  sedp_cube_source_free (a->source);
  for (guint k = 0; k < a->n_slots; k++) {
    g_free (a->slots[k].column);
    g_free (a->slots[k].output);
  }
  g_free (a->slots);
  for (guint w = 0; a->scratch && w < a->n_workers; w++) {
    Scratch *s = &a->scratch[w];
    g_array_unref (s->events);
    g_ptr_array_unref (s->cols);
    g_array_unref (s->begin);
    g_array_unref (s->end);
    g_array_unref (s->refs);
    g_array_unref (s->keys);
    g_free (s->set);
    g_free (s->values);
    g_free (s->found);
  }
  g_free (a->scratch);
  g_free (a->stage);
  g_free (a);
}

static gboolean
config_error (GError **error, const char *fmt, ...) G_GNUC_PRINTF (2, 3);

static gboolean
config_error (GError **error, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_propagate_error (error, g_error_new_valist (SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_CONFIG, fmt, ap));
  va_end (ap);
  return FALSE;
}

/* The items of option @what ("slots" or "sequences") into a->slots from @first: "column" (the
 * slot is its position in the list) or "K=column"; outputs @prefix + K for slots, @prefix +
 * column for sequences. Every output must be new. */
static gboolean
parse_items (Accessor *a, const char *what, const char *const *items, guint first,
             const char *prefix, gboolean seq, GError **error)
{
  guint n = items ? g_strv_length ((char **) items) : 0;
  for (guint k = 0; k < n; k++) {
    Slot *s = &a->slots[first + k];
    const char *eq = strchr (items[k], '=');
    guint64 slot = k;
    s->seq = seq;
    if (eq) {
      g_autofree char *num = g_strstrip (g_strndup (items[k], (gsize) (eq - items[k])));
      if (!g_ascii_string_to_unsigned (num, 10, 0, G_MAXUINT32, &slot, NULL))
        return config_error (error, "%s: '%s': the slot before '=' must be a number from 0 "
                             "to 2^32 - 1", what, items[k]);
      s->column = g_strstrip (g_strdup (eq + 1));
    } else {
      s->column = g_strdup (items[k]);
    }
    if (*s->column == '\0')
      return config_error (error, "%s: '%s' names no column", what, items[k]);
    s->slot = (guint32) slot;
    s->output = seq ? g_strconcat (prefix, s->column, NULL)
                    : g_strdup_printf ("%s%u", prefix, s->slot);
    for (guint j = 0; j < first + k; j++) {
      const Slot *o = &a->slots[j];
      if (strcmp (o->output, s->output) != 0)
        continue;
      if (!seq)
        return config_error (error, "slots: two columns write '%s' (slot %u twice)", s->output,
                             s->slot);
      if (o->seq)
        return config_error (error, "sequences: two items write '%s' (column '%s' twice)",
                             s->output, s->column);
      return config_error (error, "sequences: '%s' writes '%s', as slot %u (column '%s') of "
                           "slots does: change sequence_prefix or output_prefix", items[k],
                           s->output, o->slot, o->column);
    }
  }
  return TRUE;
}

/* slots, then sequences: at least one column in all. */
static gboolean
parse_slots (Accessor *a, const char *const *slots, const char *prefix,
             const char *const *sequences, const char *seq_prefix, GError **error)
{
  guint n_slots = slots ? g_strv_length ((char **) slots) : 0;
  guint n_seqs = sequences ? g_strv_length ((char **) sequences) : 0;
  if (n_slots + n_seqs == 0)
    return config_error (error, "slots: give at least one column of ids (in slots, pooled, or in "
                         "sequences, not pooled)");
  a->slots = g_new0 (Slot, n_slots + n_seqs);
  a->n_slots = n_slots + n_seqs;
  a->n_pooled = n_slots;
  return parse_items (a, "slots", slots, 0, prefix, FALSE, error) &&
         parse_items (a, "sequences", sequences, n_slots, seq_prefix, TRUE, error);
}

static gboolean
parse_pooling (Accessor *a, const char *const *items, GError **error)
{
  guint n = items ? g_strv_length ((char **) items) : 0;
  if (n != 1 && n != a->n_pooled)
    return config_error (error, "pooling: give one of sum or mean for every slot, or one for "
                         "all (%u given for %u slots)", n, a->n_pooled);
  for (guint k = 0; k < a->n_pooled; k++) {
    const char *p = items[n == 1 ? 0 : k];
    if (strcmp (p, "mean") == 0)
      a->slots[k].mean = TRUE;
    else if (strcmp (p, "sum") != 0)
      return config_error (error, "pooling: '%s' is neither sum nor mean", p);
  }
  return TRUE;
}

static gpointer
accessor_create (SedpStageContext *ctx, GError **error)
{
  Accessor *a = g_new0 (Accessor, 1);
  a->stage = g_strdup (sedp_stage_context_get_name (ctx));
  a->default_value = (float) sedp_stage_context_get_double (ctx, "default");
  a->hash = sedp_stage_context_get_bool (ctx, "hash_slot_ids");
  const char *prefix = sedp_stage_context_get_string (ctx, "output_prefix");
  const char *seq_prefix = sedp_stage_context_get_string (ctx, "sequence_prefix");
  if (!parse_slots (a, sedp_stage_context_get_strv (ctx, "slots"), prefix ? prefix : "",
                    sedp_stage_context_get_strv (ctx, "sequences"),
                    seq_prefix ? seq_prefix : "", error) ||
      !parse_pooling (a, sedp_stage_context_get_strv (ctx, "pooling"), error))
    goto fail;

  const char *backend = sedp_stage_context_get_string (ctx, "backend");
  const char *cube = sedp_stage_context_get_string (ctx, "cube");
  const char *url = sedp_stage_context_get_string (ctx, "redis");
  const char *name = sedp_stage_context_get_string (ctx, "name");
  if (strcmp (backend, "local") == 0 && cube == NULL) {
    config_error (error, "backend local needs cube = PATH (a folder built by sedp cube build or "
                  "sedp model split)");
    goto fail;
  }
  if (strcmp (backend, "local") != 0 && (url == NULL || name == NULL)) {
    config_error (error, "backend %s needs redis = URL and name = NAME", backend);
    goto fail;
  }
  if (strcmp (backend, "cached") == 0 &&
      sedp_stage_context_get_int (ctx, "disk_entries") > 0 &&
      sedp_stage_context_get_string (ctx, "disk_path") == NULL) {
    config_error (error, "disk_entries > 0 needs disk_path = FILE for the cache's disk tier");
    goto fail;
  }
  SedpCubeSourceOptions o;
  memset (&o, 0, sizeof o);
  o.backend = backend;
  o.cube = cube;
  o.values = sedp_stage_context_get_string (ctx, "values");
  o.redis_url = url;
  o.name = name;
  o.timeout_ms = (guint) sedp_stage_context_get_int (ctx, "timeout_ms");
  o.memory_entries = (guint64) sedp_stage_context_get_int (ctx, "memory_entries");
  o.disk_entries = (guint64) sedp_stage_context_get_int (ctx, "disk_entries");
  o.disk_path = sedp_stage_context_get_string (ctx, "disk_path");
  o.policy = sedp_stage_context_get_string (ctx, "policy");
  o.threads = MAX (sedp_stage_context_get_parallelism (ctx), 1); /* the workers share the source */
  GError *local = NULL;
  a->source = sedp_cube_source_open (&o, &local);
  if (a->source == NULL) {
    g_set_error (error, SEDP_STAGE_ERROR,
                 g_error_matches (local, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_UNAVAILABLE)
                   ? SEDP_STAGE_ERROR_UNAVAILABLE : SEDP_STAGE_ERROR_CONFIG,
                 "%s", local->message);
    g_error_free (local);
    goto fail;
  }
  a->dim = sedp_cube_source_get_dim (a->source);

  const char *hex = sedp_stage_context_get_string (ctx, "hash_key");
  if (hex && !sedp_cube_hash_key_parse (hex, a->hash_key)) {
    config_error (error, "hash_key: expected %d hex digits, got '%s'",
                  2 * SEDP_CUBE_HASH_KEY_BYTES, hex);
    goto fail;
  }
  if (a->hash && hex == NULL && !sedp_cube_source_get_hash_key (a->source, a->hash_key)) {
    config_error (error, "hash_slot_ids needs the cube's hash key, which backend %s does not "
                  "report: set hash_key", backend);
    goto fail;
  }

  a->n_workers = MAX (sedp_stage_context_get_parallelism (ctx), 1);
  a->scratch = g_new0 (Scratch, a->n_workers);
  for (guint w = 0; w < a->n_workers; w++) {
    Scratch *s = &a->scratch[w];
    s->events = g_array_new (FALSE, FALSE, sizeof (EventRefs));
    s->cols = g_ptr_array_new ();
    s->begin = g_array_new (FALSE, FALSE, sizeof (guint32));
    s->end = g_array_new (FALSE, FALSE, sizeof (guint32));
    s->refs = g_array_new (FALSE, FALSE, sizeof (guint32));
    s->keys = g_array_new (FALSE, FALSE, sizeof (guint64));
  }
  a->lookups = sedp_stage_context_add_counter (ctx, "cube_lookups_total",
                                               "Batched lookups sent to the cube source");
  a->keys_total = sedp_stage_context_add_counter (ctx, "cube_keys_total",
                                                  "Keys of all rows, duplicates included");
  a->unique_keys = sedp_stage_context_add_counter (ctx, "cube_unique_keys_total",
                                                   "Distinct keys looked up (per batch)");
  a->missing = sedp_stage_context_add_counter (ctx, "missing_keys_total",
                                               "Distinct keys the cube lacks (given the default)");
  a->degraded = sedp_stage_context_add_degraded_counter (ctx, "degraded_lookups_total",
                                                         "Lookups whose backend failed as a whole "
                                                         "(every key given the default)");
  a->degraded_keys = sedp_stage_context_add_counter (ctx, "degraded_keys_total",
                                                     "Distinct keys given the default because "
                                                     "the backend failed");
  return a;
fail:
  accessor_destroy (a);
  return NULL;
}

/* ---- process ---- */

static inline guint64
mix (guint64 key)
{
  return key * G_GUINT64_CONSTANT (0x9E3779B97F4A7C15);
}

/* The index of @key among the batch's distinct keys, added when new. */
static inline guint32
intern (Scratch *s, guint64 *keys, guint32 *n_keys, guint64 key, guint shift)
{
  gsize mask = s->set_cap - 1;
  for (gsize i = (gsize) (mix (key) >> shift);; i = (i + 1) & mask) {
    guint32 v = s->set[i];
    if (v == 0) {
      keys[*n_keys] = key;
      s->set[i] = ++*n_keys;
      return *n_keys - 1;
    }
    if (keys[v - 1] == key)
      return v - 1;
  }
}

/* @o += @v over @dim floats; the common widths are unrolled and vectorized by the compiler. */
static inline void
pool_add (float *restrict o, const float *restrict v, guint dim)
{
  switch (dim) {
  case 8:
    for (guint d = 0; d < 8; d++)
      o[d] += v[d];
    break;
  case 16:
    for (guint d = 0; d < 16; d++)
      o[d] += v[d];
    break;
  case 32:
    for (guint d = 0; d < 32; d++)
      o[d] += v[d];
    break;
  case 64:
    for (guint d = 0; d < 64; d++)
      o[d] += v[d];
    break;
  default:
    for (guint d = 0; d < dim; d++)
      o[d] += v[d];
  }
}

/* The ids of @row of @col (IDLIST, INT64 or UINT64 of any width); @n_ids set. */
static inline const guint64 *
row_ids (const SedpColumn *col, guint row, guint *n_ids)
{
  switch (sedp_column_get_column_type (col)) {
  case SEDP_COLUMN_IDLIST:
    return sedp_column_get_ids (col, row, n_ids);
  case SEDP_COLUMN_INT64: {
    guint w = sedp_column_get_width (col);
    *n_ids = w;
    return (const guint64 *) (sedp_column_get_int64 (col) + (gsize) row * w);
  }
  default: {
    guint w = sedp_column_get_width (col);
    *n_ids = w;
    return sedp_column_get_uint64 (col) + (gsize) row * w;
  }
  }
}

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

/* Whether the event's frame has every slot and sequence column, of a usable type (and a
 * sequence's idlist the same count of ids in every row); fails the event if not. */
static gboolean
check_event (Accessor *a, SedpEvent *ev, const SedpColumn **cols)
{
  SedpFrame *f = sedp_event_get_frame (ev);
  for (guint k = 0; k < a->n_slots; k++) {
    const Slot *sl = &a->slots[k];
    const SedpColumn *c = sedp_frame_get_column (f, sl->column);
    const char *why = NULL;
    if (c == NULL)
      why = "missing";
    else if (sedp_column_get_column_type (c) != SEDP_COLUMN_IDLIST &&
             sedp_column_get_column_type (c) != SEDP_COLUMN_INT64 &&
             sedp_column_get_column_type (c) != SEDP_COLUMN_UINT64)
      why = sedp_column_get_column_type (c) == SEDP_COLUMN_FLOAT32 ? "a float32 column"
                                                                   : "a string column";
    if (why)
      return fail_event (ev, "%s column '%s' is %s (ids: an idlist, int64 or uint64 column)",
                         sl->seq ? "sequence" : "slot", sl->column, why);
    if (sl->seq && sedp_column_get_column_type (c) == SEDP_COLUMN_IDLIST) {
      const guint32 *off = NULL;
      sedp_column_get_idlist (c, &off, NULL);
      guint n = sedp_column_get_n_rows (c);
      for (guint r = 1; r < n; r++)
        if (off[r + 1] - off[r] != off[1] - off[0])
          return fail_event (ev, "sequence column '%s' has rows of %u and %u ids (rows 0 and "
                             "%u): a sequence needs the same count of ids in every row",
                             sl->column, off[1] - off[0], off[r + 1] - off[r], r);
      if (n > 0 && off[1] == off[0])
        return fail_event (ev, "sequence column '%s' has rows of 0 ids: a sequence needs at "
                           "least one id per row (padding ids for none)", sl->column);
    }
    cols[k] = c;
  }
  return TRUE;
}

static gboolean
accessor_process (gpointer instance, SedpEvent *const *events, guint n_events, guint worker,
                  GError **error)
{
  Accessor *a = instance;
  Scratch *s = &a->scratch[worker < a->n_workers ? worker : 0];
  const guint dim = a->dim, n_slots = a->n_slots;
  g_array_set_size (s->events, 0);
  g_array_set_size (s->begin, 0);
  g_array_set_size (s->end, 0);
  g_array_set_size (s->refs, 0);
  g_array_set_size (s->keys, 0);
  g_ptr_array_set_size (s->cols, (guint) (n_events * n_slots));

  /* 1. Every key of every row: an upper bound of the distinct keys sizes the set. */
  gsize occurrences = 0, n_ranges = 0;
  for (guint e = 0; e < n_events; e++) {
    EventRefs er = {.frame = sedp_event_get_frame (events[e])};
    er.n_rows = sedp_frame_get_n_rows (er.frame);
    const SedpColumn **cols = (const SedpColumn **) s->cols->pdata + (gsize) e * n_slots;
    er.ok = check_event (a, events[e], cols);
    for (guint k = 0; er.ok && k < n_slots; k++) {
      const SedpColumn *c = cols[k];
      if (sedp_column_get_column_type (c) == SEDP_COLUMN_IDLIST) {
        guint n_values = 0;
        sedp_column_get_idlist (c, NULL, &n_values);
        occurrences += n_values;
      } else {
        occurrences += (gsize) sedp_column_get_n_rows (c) * sedp_column_get_width (c);
      }
    }
    if (er.ok)
      n_ranges += (gsize) n_slots * er.n_rows;
    g_array_append_val (s->events, er);
  }
  gsize cap = 64;
  while (cap < 2 * occurrences)
    cap <<= 1;
  if (cap > s->set_cap) {
    g_free (s->set);
    s->set = g_new (guint32, cap);
    s->set_cap = cap;
  }
  memset (s->set, 0, s->set_cap * sizeof (guint32));
  guint shift = 64 - (guint) g_bit_nth_msf (s->set_cap, -1);

  /* 2. Keys interned; per (event, slot, row) a range of references. The arrays are sized for
   * the worst case first and written in place. */
  g_array_set_size (s->keys, (guint) occurrences);
  g_array_set_size (s->refs, (guint) occurrences);
  g_array_set_size (s->begin, (guint) n_ranges);
  g_array_set_size (s->end, (guint) n_ranges);
  guint64 *keys = (guint64 *) (gpointer) s->keys->data;
  guint32 *refs_out = (guint32 *) (gpointer) s->refs->data;
  guint32 *begin_out = (guint32 *) (gpointer) s->begin->data, *end_out = (guint32 *) (gpointer) s->end->data;
  guint32 n_interned = 0, n_refs = 0, n_range = 0;
  for (guint e = 0; e < n_events; e++) {
    EventRefs *er = &g_array_index (s->events, EventRefs, e);
    er->ranges = n_range;
    if (!er->ok)
      continue;
    const SedpColumn *const *cols = (const SedpColumn *const *) s->cols->pdata + (gsize) e * n_slots;
    for (guint k = 0; k < n_slots; k++) {
      const SedpColumn *c = cols[k];
      gboolean broadcast = sedp_column_is_broadcast (c);
      guint32 b0 = 0, e0 = 0;
      for (guint r = 0; r < er->n_rows; r++) {
        if (!broadcast || r == 0) {
          guint n_ids = 0;
          const guint64 *ids = row_ids (c, broadcast ? 0 : r, &n_ids);
          b0 = n_refs;
          for (guint i = 0; i < n_ids; i++) {
            guint64 key = a->hash ? sedp_signature (a->hash_key, a->slots[k].slot, ids[i])
                                  : ids[i];
            refs_out[n_refs++] = intern (s, keys, &n_interned, key, shift);
          }
          e0 = n_refs;
        }
        begin_out[n_range] = b0;
        end_out[n_range++] = e0;
      }
    }
  }
  g_array_set_size (s->keys, n_interned);
  g_array_set_size (s->refs, n_refs);

  /* 3. One lookup for the batch. */
  guint n_keys = s->keys->len;
  sedp_counter_add (a->keys_total, s->refs->len);
  sedp_counter_add (a->unique_keys, n_keys);
  if (n_keys > 0) {
    gsize need = (gsize) n_keys * dim;
    if (need > s->values_cap) {
      g_free (s->values);
      s->values = g_new (float, need);
      s->values_cap = need;
    }
    if (n_keys > s->found_cap) {
      g_free (s->found);
      s->found = g_new (guint8, n_keys);
      s->found_cap = n_keys;
    }
    GError *local = NULL;
    sedp_counter_add (a->lookups, 1);
    gint64 hits = sedp_cube_source_lookup (a->source, (const guint64 *) s->keys->data, n_keys,
                                           s->values, s->found, &local);
    if (hits < 0) {
      memset (s->found, 0, n_keys);
      sedp_counter_add (a->degraded, 1);
      sedp_counter_add (a->degraded_keys, n_keys);
      gint64 now = g_get_monotonic_time ();
      gint64 last = __atomic_load_n (&a->last_warning, __ATOMIC_RELAXED);
      if (now - last > 10 * G_USEC_PER_SEC &&
          __atomic_compare_exchange_n (&a->last_warning, &last, now, FALSE, __ATOMIC_RELAXED,
                                       __ATOMIC_RELAXED))
        g_warning ("stage '%s': lookups degraded to the default value: %s", a->stage,
                   local ? local->message : "the backend failed");
      g_clear_error (&local);
    } else {
      sedp_counter_add (a->missing, (guint64) n_keys - (guint64) hits);
    }
    for (guint u = 0; u < n_keys; u++)
      if (!s->found[u])
        for (guint d = 0; d < dim; d++)
          s->values[(gsize) u * dim + d] = a->default_value;
  }

  /* 4. Pooling into the output columns; sequences copied. */
  const guint32 *refs = (const guint32 *) s->refs->data;
  const guint32 *begin = (const guint32 *) s->begin->data, *end = (const guint32 *) s->end->data;
  for (guint e = 0; e < n_events; e++) {
    const EventRefs *er = &g_array_index (s->events, EventRefs, e);
    if (!er->ok)
      continue;
    const SedpColumn *const *cols = (const SedpColumn *const *) s->cols->pdata + (gsize) e * n_slots;
    for (guint k = 0; k < n_slots; k++) {
      gsize range = er->ranges + (gsize) k * er->n_rows;
      if (a->slots[k].seq) {
        /* L ids in every row (checked): the ids of a column of width L, or of a row. */
        guint L = sedp_column_get_column_type (cols[k]) != SEDP_COLUMN_IDLIST
                    ? sedp_column_get_width (cols[k])
                    : er->n_rows > 0 ? end[range] - begin[range] : 1;
        float *out = sedp_column_float32_data (
          sedp_frame_add_column (er->frame, a->slots[k].output, SEDP_COLUMN_FLOAT32, L * dim));
        for (guint r = 0; r < er->n_rows; r++) {
          float *o = out + (gsize) r * L * dim;
          guint32 b = begin[range + r];
          for (guint32 i = 0; i < L; i++)
            memcpy (o + (gsize) i * dim, s->values + (gsize) refs[b + i] * dim,
                    dim * sizeof (float));
        }
        continue;
      }
      float *out = sedp_column_float32_data (
        sedp_frame_add_column (er->frame, a->slots[k].output, SEDP_COLUMN_FLOAT32, dim));
      for (guint r = 0; r < er->n_rows; r++) {
        float *o = out + (gsize) r * dim;
        guint32 b = begin[range + r], n = end[range + r] - b;
        /* (the column starts zeroed) */
        for (guint32 i = 0; i < n; i++)
          pool_add (o, s->values + (gsize) refs[b + i] * dim, dim);
        if (a->slots[k].mean && n > 1) {
          float inv = 1.0f / (float) n;
          for (guint d = 0; d < dim; d++)
            o[d] *= inv;
        }
      }
    }
  }
  return TRUE;
}

static void
accessor_stats (gpointer instance, SedpStats *stats)
{
  Accessor *a = instance;
  GString *out = g_string_new (NULL);
  sedp_cube_source_stats (a->source, out);
  g_auto (GStrv) lines = g_strsplit (out->str, "\n", -1);
  for (char **l = lines; *l; l++) {
    char *sp = strrchr (*l, ' ');
    if (sp == NULL)
      continue;
    *sp = '\0';
    sedp_stats_add (stats, *l, g_ascii_strtod (sp + 1, NULL));
  }
  g_string_free (out, TRUE);
  sedp_stats_add (stats, "cube_dim", a->dim);
}

static const SedpOptionSpec accessor_options[] = {
  SEDP_OPTION_ENUM_SPEC ("backend", "local", "local|redis|cached",
                         "Where the embeddings are: a local cube folder, Redis, or the cube "
                         "cache in front of Redis"),
  SEDP_OPTION_PATH_SPEC ("cube", NULL, FALSE, "backend local: the cube folder"),
  SEDP_OPTION_ENUM_SPEC ("values", "memory", "memory|disk",
                         "backend local: values loaded into memory at start, or read from disk "
                         "on demand (keys always in memory)"),
  SEDP_OPTION_STRING_SPEC ("redis", NULL,
                           "backend redis/cached: redis://HOST:PORT or "
                           "redis+cluster://HOST:PORT,HOST:PORT"),
  SEDP_OPTION_STRING_SPEC ("name", NULL, "backend redis/cached: the cube's name on the server"),
  SEDP_OPTION_INT_SPEC ("memory_entries", "100000", 0, 1e12,
                        "backend cached: keys in the cache's memory tier"),
  SEDP_OPTION_INT_SPEC ("disk_entries", "0", 0, 1e13,
                        "backend cached: keys in the cache's disk tier (0: no disk tier)"),
  SEDP_OPTION_PATH_SPEC ("disk_path", NULL, FALSE, "backend cached: the file of the disk tier"),
  SEDP_OPTION_ENUM_SPEC ("policy", NULL, "tinylfu|lfu|lru",
                         "backend cached: admission and eviction policy (default: the cube "
                         "cache's, see docs/storage.md)"),
  SEDP_OPTION_LIST_SPEC ("slots", NULL,
                         "The id columns (idlist, int64 or uint64) whose rows are pooled, e.g. "
                         "'slot_0, slot_1'; a column's slot is its position, or K in 'K=column' "
                         "(slots, sequences or both)"),
  SEDP_OPTION_LIST_SPEC ("sequences", NULL,
                         "Id columns looked up without pooling (behaviour sequences), e.g. "
                         "'0=hist, 0=item': int64 or uint64 of width L, or idlists of L ids in "
                         "every row; K in 'K=column' is the slot (else the position)"),
  SEDP_OPTION_BOOL_SPEC ("hash_slot_ids", "true",
                         "The columns hold raw ids, hashed with the cube's key into the "
                         "signature of (slot, id); false: they hold signatures"),
  SEDP_OPTION_STRING_SPEC ("hash_key", NULL,
                           "The signature key (32 hex digits), for backends that do not report "
                           "the cube's own"),
  SEDP_OPTION_LIST_SPEC ("pooling", "sum",
                         "sum or mean of each row's embeddings: one for all slots, or one per "
                         "slot"),
  SEDP_OPTION_STRING_SPEC ("output_prefix", "pooled_",
                           "Output columns are PREFIX + slot (float32, width dim): the inputs of "
                           "a model made by sedp model split"),
  SEDP_OPTION_STRING_SPEC ("sequence_prefix", "seq_",
                           "Sequence outputs are PREFIX + column (float32, width L x dim: the "
                           "row's embeddings in id order), the seq_ inputs of a split model"),
  SEDP_OPTION_DOUBLE_SPEC ("default", "0", -1e30, 1e30,
                           "The value of every dimension of a missing key"),
  SEDP_OPTION_INT_SPEC ("timeout_ms", "50", 1, 600000,
                        "backend redis/cached: per request; past it the batch gets the default"),
  SEDP_OPTION_END,
};

SEDP_STAGE_DEFINE (.name = "cube_accessor", .version = SEDP_VERSION,
                   .description = "Looks up the embeddings of id columns in a cube (local, Redis, "
                                  "or cached Redis), once per distinct key of a batch, and pools "
                                  "them into pooled_K columns, or writes them unpooled into "
                                  "seq_COLUMN columns (sequences)",
                   .license = "MIT", .scope = SEDP_SCOPE_ITEM, .options = accessor_options,
                   .create = accessor_create, .process = accessor_process,
                   .destroy = accessor_destroy, .stats = accessor_stats);
