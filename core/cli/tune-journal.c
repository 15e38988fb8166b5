/* sedp tune — the journal (docs/tuning.md, "The journal"): JSON Lines, a header line of the
 * settings a resumed tune must share, then one line per evaluation (the baseline, then each
 * candidate as it finishes), each written whole and fsync'd, so that a crash or a signal loses
 * at most the evaluation in progress. Its format is written here; tune-resume.c reads it. */
#include "cmd-tune.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

G_DEFINE_QUARK (sedp-tune-journal-error-quark, tune_journal_error)

/* The format's version, the header's "sedp_tune_journal" (2: "maximize" in the header,
 * "capacity_rps" in the results). */
#define JOURNAL_VERSION 2

/* The result's numbers a line records, by name and place. */
static const struct {
  const char *name;
  gsize offset;
} result_numbers[] = {
  {"cpu_s_per_request", G_STRUCT_OFFSET (SedpTuneResult, cpu_s_per_request)},
  {"cpu_s", G_STRUCT_OFFSET (SedpTuneResult, cpu_s)},
  {"loadgen_cpu_s", G_STRUCT_OFFSET (SedpTuneResult, loadgen_cpu_s)},
  {"p50_ms", G_STRUCT_OFFSET (SedpTuneResult, p50_ms)},
  {"p99_ms", G_STRUCT_OFFSET (SedpTuneResult, p99_ms)},
  {"error_share", G_STRUCT_OFFSET (SedpTuneResult, error_share)},
  {"answered_per_s", G_STRUCT_OFFSET (SedpTuneResult, answered_per_s)},
  {"measured_s", G_STRUCT_OFFSET (SedpTuneResult, measured_s)},
  {"wall_s", G_STRUCT_OFFSET (SedpTuneResult, wall_s)},
  {"capacity_rps", G_STRUCT_OFFSET (SedpTuneResult, capacity_rps)},
};

/* The result's counts a line records. */
static const struct {
  const char *name;
  gsize offset;
} result_counts[] = {
  {"arrivals", G_STRUCT_OFFSET (SedpTuneResult, arrivals)},
  {"answered", G_STRUCT_OFFSET (SedpTuneResult, answered)},
  {"errors", G_STRUCT_OFFSET (SedpTuneResult, errors)},
};

/* ---- the format ---- */

/* Member @name, the number @v: a JSON number when finite, else the string "inf", "-inf" or
 * "nan", so that every double reads back exactly (json-glib writes 17 significant digits). */
static void
add_number (JsonBuilder *b, const char *name, double v)
{
  json_builder_set_member_name (b, name);
  if (isfinite (v)) {
    json_builder_add_double_value (b, v);
    return;
  }
  json_builder_add_string_value (b, isnan (v) ? "nan" : v > 0 ? "inf" : "-inf");
}

/* Member @name, the string @v, or null when @v is NULL. */
static void
add_string (JsonBuilder *b, const char *name, const char *v)
{
  json_builder_set_member_name (b, name);
  if (v)
    json_builder_add_string_value (b, v);
  else
    json_builder_add_null_value (b);
}

/* A SHA-256 of what the space is made of: each parameter's address, type, range, scale, words
 * and start, and the worker limit (so a default space follows the plugins' options). Free it. */
static char *
space_hash (const SedpTuneSpace *space)
{
  g_autoptr (GString) s = g_string_new (NULL);
  for (guint i = 0; i < sedp_tune_space_n_params (space); i++) {
    const SedpTuneParam *p = sedp_tune_space_param (space, i);
    g_autofree char *words = p->choices ? g_strjoinv ("|", p->choices) : g_strdup ("");
    char low[G_ASCII_DTOSTR_BUF_SIZE], high[G_ASCII_DTOSTR_BUF_SIZE], start[G_ASCII_DTOSTR_BUF_SIZE];
    g_string_append_printf (s, "%s %d %s %s %d %s %s\n", p->address, (int) p->type,
                            g_ascii_dtostr (low, sizeof low, p->low),
                            g_ascii_dtostr (high, sizeof high, p->high), p->log, words,
                            g_ascii_dtostr (start, sizeof start, p->start));
  }
  g_string_append_printf (s, "max_workers %u\n", sedp_tune_space_max_workers (space));
  return g_compute_checksum_for_string (G_CHECKSUM_SHA256, s->str, s->len);
}

/* The header's files: the pipeline and the workload as absolute paths, and their hashes. */
static void
add_files (JsonBuilder *b, const Tune *t)
{
  g_autofree char *pipeline = g_canonicalize_filename (t->path, NULL);
  g_autofree char *requests = t->o.requests_path ? g_canonicalize_filename (t->o.requests_path, NULL)
                                                 : NULL;
  g_autofree char *text_sha = g_compute_checksum_for_string (G_CHECKSUM_SHA256, t->text, -1);
  g_autofree char *space_sha = space_hash (t->space);
  add_string (b, "pipeline", pipeline);
  add_string (b, "pipeline_sha256", text_sha);
  add_string (b, "space_sha256", space_sha);
  add_string (b, "requests", requests);
  add_string (b, "format", t->o.encoding == SEDP_WORKLOAD_PROTOBUF ? "protobuf" : "json");
}

JsonNode *
tune_journal_header (const Tune *t)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "sedp_tune_journal");
  json_builder_add_int_value (b, JOURNAL_VERSION);
  add_files (b, t);
  add_string (b, "maximize", t->o.throughput ? "throughput" : NULL);
  if (isnan (t->o.rate)) /* --maximize throughput without --rate */
    add_string (b, "rate", NULL);
  else
    add_number (b, "rate", t->o.rate);
  add_number (b, "slo_p99_ms", t->o.slo_p99_ms);
  json_builder_set_member_name (b, "seed");
  json_builder_add_int_value (b, t->o.seed);
  add_string (b, "method", tune_method_name (t->o.method));
  add_number (b, "warmup_s", t->o.warmup_s);
  add_number (b, "measure_s", t->o.measure_s);
  json_builder_end_object (b);
  return json_builder_get_root (b);
}

/* "result": what sedp_tune_evaluate() or sedp_tune_find_capacity() measured ("built" is its
 * feasible). */
static void
add_result (JsonBuilder *b, const SedpTuneResult *r)
{
  json_builder_set_member_name (b, "result");
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "built");
  json_builder_add_boolean_value (b, r->feasible);
  add_string (b, "reason", r->reason);
  for (guint i = 0; i < G_N_ELEMENTS (result_numbers); i++)
    add_number (b, result_numbers[i].name, G_STRUCT_MEMBER (double, r, result_numbers[i].offset));
  for (guint i = 0; i < G_N_ELEMENTS (result_counts); i++) {
    json_builder_set_member_name (b, result_counts[i].name);
    json_builder_add_int_value (b, G_STRUCT_MEMBER (guint64, r, result_counts[i].offset));
  }
  json_builder_set_member_name (b, "degraded");
  json_builder_add_int_value (b, (gint64) r->degraded);
  json_builder_set_member_name (b, "threads");
  json_builder_add_int_value (b, r->threads);
  add_string (b, "first_error", r->first_error);
  json_builder_end_object (b);
}

/* "x" (null for the baseline) and "parameters" (address → value as written, for the reader). */
static void
add_point (JsonBuilder *b, const Tune *t, const TuneEval *e)
{
  guint n = sedp_tune_space_n_params (t->space);
  json_builder_set_member_name (b, "x");
  if (e->index == 0) {
    json_builder_add_null_value (b);
  } else {
    json_builder_begin_array (b);
    for (guint i = 0; i < n; i++)
      json_builder_add_double_value (b, e->x[i]);
    json_builder_end_array (b);
  }
  json_builder_set_member_name (b, "parameters");
  json_builder_begin_object (b);
  for (guint i = 0; i < n; i++) {
    json_builder_set_member_name (b, sedp_tune_space_param (t->space, i)->address);
    json_builder_add_string_value (b, e->values[i]);
  }
  json_builder_end_object (b);
}

JsonNode *
tune_journal_eval (const Tune *t, const TuneEval *e)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "index");
  json_builder_add_int_value (b, e->index);
  add_point (b, t, e);
  add_number (b, "objective", e->objective);
  json_builder_set_member_name (b, "measures");
  json_builder_add_int_value (b, e->measures);
  json_builder_set_member_name (b, "violations");
  json_builder_begin_array (b);
  for (guint i = 0; i < TUNE_N_CONSTRAINTS; i++)
    json_builder_add_double_value (b, e->violations[i]);
  json_builder_end_array (b);
  json_builder_set_member_name (b, "feasible");
  json_builder_add_boolean_value (b, e->feasible);
  add_string (b, "reason", e->reason);
  add_result (b, &e->r);
  json_builder_end_object (b);
  return json_builder_get_root (b);
}

/* ---- the format, read back ---- */

/* Reading one line: where it is, and the first member found missing or of the wrong kind. */
typedef struct {
  guint line;
  const char *fault;
} Reader;

/* Notes member @name as the line's fault, unless one was noted already. */
static void
fault (Reader *rd, const char *name)
{
  if (rd->fault == NULL)
    rd->fault = name;
}

/* A number as add_number() writes it; FALSE when @node is none. */
static gboolean
node_number (JsonNode *node, double *out)
{
  if (node == NULL || !JSON_NODE_HOLDS_VALUE (node))
    return FALSE;
  GType type = json_node_get_value_type (node);
  if (type == G_TYPE_INT64 || type == G_TYPE_DOUBLE) {
    *out = json_node_get_double (node);
    return TRUE;
  }
  const char *s = type == G_TYPE_STRING ? json_node_get_string (node) : NULL;
  char *end = NULL;
  if (s && *s)
    *out = g_ascii_strtod (s, &end);
  return end && *end == '\0';
}

/* Member @name of @o (NULL: none), a number; NaN and a fault when it is not. */
static double
get_number (Reader *rd, JsonObject *o, const char *name)
{
  double v = NAN;
  if (!node_number (o ? json_object_get_member (o, name) : NULL, &v))
    fault (rd, name);
  return v;
}

/* Member @name, a string (a copy) or null (NULL). */
static char *
get_string (Reader *rd, JsonObject *o, const char *name)
{
  JsonNode *node = o ? json_object_get_member (o, name) : NULL;
  if (node && JSON_NODE_HOLDS_NULL (node))
    return NULL;
  if (node && JSON_NODE_HOLDS_VALUE (node) && json_node_get_value_type (node) == G_TYPE_STRING)
    return g_strdup (json_node_get_string (node));
  fault (rd, name);
  return NULL;
}

/* Member @name, a boolean. */
static gboolean
get_bool (Reader *rd, JsonObject *o, const char *name)
{
  JsonNode *node = o ? json_object_get_member (o, name) : NULL;
  if (node && JSON_NODE_HOLDS_VALUE (node) && json_node_get_value_type (node) == G_TYPE_BOOLEAN)
    return json_node_get_boolean (node);
  fault (rd, name);
  return FALSE;
}

/* Member @name, an array of @n finite numbers into @out, each ≥ @min. */
static void
get_numbers (Reader *rd, JsonObject *o, const char *name, guint n, double min, double *out)
{
  JsonNode *node = o ? json_object_get_member (o, name) : NULL;
  JsonArray *a = node && JSON_NODE_HOLDS_ARRAY (node) ? json_node_get_array (node) : NULL;
  gboolean ok = a && json_array_get_length (a) == n;
  for (guint i = 0; ok && i < n; i++)
    ok = node_number (json_array_get_element (a, i), &out[i]) && isfinite (out[i]) && out[i] >= min;
  if (!ok)
    fault (rd, name);
}

/* "result" into @r. */
static void
get_result (Reader *rd, JsonObject *o, SedpTuneResult *r)
{
  JsonNode *node = json_object_get_member (o, "result");
  JsonObject *ro = node && JSON_NODE_HOLDS_OBJECT (node) ? json_node_get_object (node) : NULL;
  r->feasible = get_bool (rd, ro, "built");
  r->reason = get_string (rd, ro, "reason");
  for (guint i = 0; i < G_N_ELEMENTS (result_numbers); i++)
    G_STRUCT_MEMBER (double, r, result_numbers[i].offset) = get_number (rd, ro, result_numbers[i].name);
  for (guint i = 0; i < G_N_ELEMENTS (result_counts); i++)
    G_STRUCT_MEMBER (guint64, r, result_counts[i].offset) =
      (guint64) MAX (0, get_number (rd, ro, result_counts[i].name));
  /* "degraded" came after version 2's first journals: absent, nothing was degraded */
  if (ro && json_object_has_member (ro, "degraded"))
    r->degraded = (guint64) MAX (0, get_number (rd, ro, "degraded"));
  r->threads = (guint) MAX (0, get_number (rd, ro, "threads"));
  r->first_error = get_string (rd, ro, "first_error");
}

TuneEval *
tune_journal_parse_eval (const Tune *t, JsonObject *o, guint line, GError **error)
{
  Reader rd = {.line = line};
  g_autofree TuneEval *e = g_new0 (TuneEval, 1);
  double index = get_number (&rd, o, "index");
  e->index = index >= 0 && index <= G_MAXUINT && index == floor (index) ? (guint) index : 0;
  if (index != e->index)
    fault (&rd, "index");
  if (e->index > 0)
    get_numbers (&rd, o, "x", sedp_tune_space_n_params (t->space), -INFINITY, e->x);
  e->objective = get_number (&rd, o, "objective");
  e->measures = (guint) CLAMP (json_object_get_int_member_with_default (o, "measures", 1), 0, 2);
  get_numbers (&rd, o, "violations", TUNE_N_CONSTRAINTS, 0, e->violations);
  e->feasible = get_bool (&rd, o, "feasible");
  e->reason = get_string (&rd, o, "reason");
  get_result (&rd, o, &e->r);
  if (rd.fault == NULL)
    return g_steal_pointer (&e);
  g_set_error (error, TUNE_JOURNAL_ERROR, TUNE_JOURNAL_ERROR_DAMAGED,
               "journal %s line %u: '%s' is missing or not of its kind (an evaluation of %u "
               "parameters): the journal is damaged, or is not this tune's; delete it to start a "
               "new tune", t->journal_path, line, rd.fault, sedp_tune_space_n_params (t->space));
  tune_eval_clear (e);
  return NULL;
}

/* ---- the file ---- */

/* Sets @error for @op failing on the journal with @errnum; returns FALSE. */
static gboolean
io_error (const Tune *t, const char *op, int errnum, GError **error)
{
  g_set_error (error, TUNE_JOURNAL_ERROR, TUNE_JOURNAL_ERROR_IO,
               "journal %s: %s: %s (the evaluations appended so far stay in it; give another "
               "--journal FILE where it can be written)", t->journal_path, op, g_strerror (errnum));
  return FALSE;
}

/* Writes @line (its newline included) whole at the journal's end and makes it durable. */
static gboolean
write_line (Tune *t, const char *line, GError **error)
{
  gsize len = strlen (line), done = 0;
  while (done < len) {
    ssize_t n = write (t->journal_fd, line + done, len - done);
    if (n < 0 && errno != EINTR)
      return io_error (t, "write", errno, error);
    done += n > 0 ? (gsize) n : 0;
  }
  if (fsync (t->journal_fd) != 0)
    return io_error (t, "fsync", errno, error);
  return TRUE;
}

/* Writes @node as one line. */
static gboolean
write_node (Tune *t, JsonNode *node, GError **error)
{
  g_autofree char *json = json_to_string (node, FALSE);
  g_autofree char *line = g_strconcat (json, "\n", NULL);
  return write_line (t, line, error);
}

/* Makes the new journal's name durable too: fsync of its folder (best effort). */
static void
sync_folder (const Tune *t)
{
  g_autofree char *dir = g_path_get_dirname (t->journal_path);
  int fd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    fsync (fd);
    close (fd);
  }
}

/* The refusal of an existing journal without --resume. */
static gboolean
exists_error (const Tune *t, GError **error)
{
  g_set_error (error, TUNE_JOURNAL_ERROR, TUNE_JOURNAL_ERROR_EXISTS,
               "journal %s exists: it records an earlier tune writing to %s; give --resume to "
               "go on with that tune, or delete %s (or give another --journal FILE) to start a "
               "new one", t->journal_path, t->o.output, t->journal_path);
  return FALSE;
}

gboolean
tune_journal_prepare (Tune *t, GError **error)
{
  t->journal_path = t->o.journal ? g_strdup (t->o.journal)
                                 : g_strconcat (t->o.output, ".journal", NULL);
  if (t->o.resume)
    return tune_resume_read (t, error);
  if (g_file_test (t->journal_path, G_FILE_TEST_EXISTS))
    return exists_error (t, error);
  return TRUE;
}

/* --resume: the journal cut to the lines kept, its last newline restored, a header when it has
 * none. */
static gboolean
mend (Tune *t, GError **error)
{
  if (ftruncate (t->journal_fd, (off_t) t->journal_kept) != 0)
    return io_error (t, "ftruncate", errno, error);
  if (t->journal_kept == 0) {
    g_autoptr (JsonNode) header = tune_journal_header (t);
    return write_node (t, header, error);
  }
  return !t->journal_newline || write_line (t, "\n", error);
}

gboolean
tune_journal_open (Tune *t, GError **error)
{
  int flags = O_WRONLY | O_APPEND | O_CLOEXEC | (t->o.resume ? 0 : O_CREAT | O_EXCL);
  t->journal_fd = open (t->journal_path, flags, 0666);
  if (t->journal_fd < 0)
    return errno == EEXIST ? exists_error (t, error) : io_error (t, "open", errno, error);
  if (t->o.resume)
    return mend (t, error);
  g_autoptr (JsonNode) header = tune_journal_header (t);
  if (!write_node (t, header, error))
    return FALSE;
  sync_folder (t);
  return TRUE;
}

gboolean
tune_journal_append (Tune *t, const TuneEval *e, GError **error)
{
  g_autoptr (JsonNode) node = tune_journal_eval (t, e);
  return write_node (t, node, error);
}

void
tune_journal_close (Tune *t)
{
  if (t->journal_fd >= 0)
    close (t->journal_fd);
  t->journal_fd = -1;
}
