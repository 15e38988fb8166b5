/* sedp tune — --resume (docs/tuning.md, "The journal"): the journal read back (a last line cut
 * short by a crash dropped), its header checked against this tune's settings, and its
 * evaluations replayed into a fresh optimiser of the same seed, without measuring them again. */
#include "cmd-tune.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The header's fields, what sets each, and how to match it (NULL: give the recorded value). */
static const struct {
  const char *field, *what, *fix;
} header_fields[] = {
  {"sedp_tune_journal", "the journal format", "resume it with the sedp that wrote it"},
  {"pipeline", "PIPELINE", "give that pipeline file"},
  {"pipeline_sha256", "the text of PIPELINE", "put the file back as it was when the tune began"},
  {"space_sha256", "the search space", "give the same --space or [tune] group, and the same plugins"},
  {"requests", "--requests", NULL},
  {"format", "--format", NULL},
  {"maximize", "--maximize", NULL},
  {"rate", "--rate", NULL},
  {"slo_p99_ms", "--slo-p99-ms", NULL},
  {"seed", "--seed", NULL},
  {"method", "--method", NULL},
  {"warmup_s", "--warmup-s", NULL},
  {"measure_s", "--measure-s", NULL},
};

/* ---- the header ---- */

/* Whether the scalar members @a and @b (NULL: absent) hold the same value; numbers compare as
 * doubles, whether written as integers or not. */
static gboolean
same_value (JsonNode *a, JsonNode *b)
{
  if (a == NULL || b == NULL || !JSON_NODE_HOLDS_VALUE (a) || !JSON_NODE_HOLDS_VALUE (b))
    return a && b && JSON_NODE_HOLDS_NULL (a) && JSON_NODE_HOLDS_NULL (b);
  GType ta = json_node_get_value_type (a), tb = json_node_get_value_type (b);
  if (ta == G_TYPE_STRING || tb == G_TYPE_STRING)
    return ta == tb && strcmp (json_node_get_string (a), json_node_get_string (b)) == 0;
  if (ta == G_TYPE_BOOLEAN || tb == G_TYPE_BOOLEAN)
    return ta == tb && json_node_get_boolean (a) == json_node_get_boolean (b);
  return json_node_get_double (a) == json_node_get_double (b);
}

/* @node as a user reads it: a string as is, a number in its fewest digits that read back the
 * same, "(none)" for null or absent. Free it. */
static char *
show_value (JsonNode *node)
{
  if (node == NULL || !JSON_NODE_HOLDS_VALUE (node))
    return g_strdup ("(none)");
  GType type = json_node_get_value_type (node);
  if (type == G_TYPE_STRING)
    return g_strdup (json_node_get_string (node));
  if (type == G_TYPE_BOOLEAN)
    return g_strdup (json_node_get_boolean (node) ? "true" : "false");
  double v = json_node_get_double (node);
  for (int digits = 6;; digits++) {
    char *s = g_strdup_printf ("%.*g", digits, v);
    if (digits == 17 || g_ascii_strtod (s, NULL) == v)
      return s;
    g_free (s);
  }
}

/* The refusal of header field @i: recorded @was, this tune's @now. */
static gboolean
mismatch (const Tune *t, guint i, JsonNode *was, JsonNode *now, GError **error)
{
  g_autofree char *w = show_value (was), *n = show_value (now);
  g_autofree char *fix = header_fields[i].fix ? g_strdup (header_fields[i].fix)
                         : was && JSON_NODE_HOLDS_NULL (was)
                           ? g_strdup_printf ("leave %s out", header_fields[i].what)
                           : g_strdup_printf ("give %s %s", header_fields[i].what, w);
  g_set_error (error, TUNE_JOURNAL_ERROR, TUNE_JOURNAL_ERROR_MISMATCH,
               "journal %s: its tune was run with %s %s, this one with %s (header field '%s'): "
               "%s to resume that tune, or delete %s (or give another --journal FILE) to start a "
               "new one", t->journal_path, header_fields[i].what, w, n, header_fields[i].field,
               fix, t->journal_path);
  return FALSE;
}

/* Checks the journal's first line @recorded against this tune's header, field by field. */
static gboolean
check_header (const Tune *t, JsonNode *recorded, GError **error)
{
  g_autoptr (JsonNode) header = tune_journal_header (t);
  JsonObject *was = json_node_get_object (recorded), *now = json_node_get_object (header);
  if (!json_object_has_member (was, "sedp_tune_journal")) {
    g_set_error (error, TUNE_JOURNAL_ERROR, TUNE_JOURNAL_ERROR_DAMAGED,
                 "journal %s line 1: not a sedp tune journal's header (no 'sedp_tune_journal'): "
                 "give --journal FILE naming the tune's journal, or delete this file", t->journal_path);
    return FALSE;
  }
  for (guint i = 0; i < G_N_ELEMENTS (header_fields); i++) {
    JsonNode *a = json_object_get_member (was, header_fields[i].field);
    JsonNode *b = json_object_get_member (now, header_fields[i].field);
    if (!same_value (a, b))
      return mismatch (t, i, a, b, error);
  }
  return TRUE;
}

/* ---- the lines ---- */

/* @len bytes at @text as a JSON object; NULL when they are not one. */
static JsonNode *
parse_object (const char *text, gsize len)
{
  g_autoptr (JsonParser) parser = json_parser_new ();
  if (len == 0 || !json_parser_load_from_data (parser, text, (gssize) len, NULL))
    return NULL;
  JsonNode *root = json_parser_get_root (parser);
  return root && JSON_NODE_HOLDS_OBJECT (root) ? json_node_copy (root) : NULL;
}

/* The refusal of line @line, not a JSON object. */
static gboolean
damaged_line (const Tune *t, guint line, GError **error)
{
  g_set_error (error, TUNE_JOURNAL_ERROR, TUNE_JOURNAL_ERROR_DAMAGED,
               "journal %s line %u: not a JSON object, and not the last line (only the last can be "
               "cut short by a crash): the journal is damaged; mend or delete that line, or delete "
               "the journal to start a new tune", t->journal_path, line);
  return FALSE;
}

/* Notes on stderr that the last line, @line, was cut short and is dropped. */
static void
note_cut (const Tune *t, guint line)
{
  if (!t->o.quiet)
    fprintf (stderr, "sedp tune: journal %s: its last line (%u) was cut short, by a crash while "
             "it was written: dropped, and that evaluation is measured again\n",
             t->journal_path, line);
}

/* @text's lines into @lines (JsonNode *, the header first); a last line without its newline
 * that does not parse is dropped. Sets @t->journal_kept and @t->journal_newline. */
static gboolean
parse_lines (Tune *t, const char *text, gsize len, GPtrArray *lines, GError **error)
{
  gsize start = 0;
  for (guint line = 1; start < len; line++) {
    const char *nl = memchr (text + start, '\n', len - start);
    gsize end = nl ? (gsize) (nl - text) : len;
    JsonNode *node = parse_object (text + start, end - start);
    if (node == NULL && nl == NULL) {
      note_cut (t, line);
      return TRUE;
    }
    if (node == NULL)
      return damaged_line (t, line, error);
    g_ptr_array_add (lines, node);
    start = nl ? end + 1 : len;
    t->journal_kept = start;
    t->journal_newline = nl == NULL;
  }
  return TRUE;
}

/* The error of a journal that cannot be read (@why); MISSING when there is none. */
static gboolean
read_error (const Tune *t, const GError *why, GError **error)
{
  if (g_error_matches (why, G_FILE_ERROR, G_FILE_ERROR_NOENT))
    g_set_error (error, TUNE_JOURNAL_ERROR, TUNE_JOURNAL_ERROR_MISSING,
                 "--resume: no journal at %s, so nothing to resume: run without --resume to "
                 "start a tune, or give --journal FILE naming the journal of the tune to resume",
                 t->journal_path);
  else
    g_set_error (error, TUNE_JOURNAL_ERROR, TUNE_JOURNAL_ERROR_IO, "--resume: %s", why->message);
  return FALSE;
}

/* The evaluations of @lines (after the header) into @t->recorded, numbered 0, 1, … in order. */
static gboolean
read_evals (Tune *t, GPtrArray *lines, GError **error)
{
  t->recorded = g_ptr_array_new_with_free_func (tune_eval_free);
  for (guint i = 1; i < lines->len; i++) {
    TuneEval *e = tune_journal_parse_eval (t, json_node_get_object (lines->pdata[i]), i + 1, error);
    if (e == NULL)
      return FALSE;
    g_ptr_array_add (t->recorded, e);
    if (e->index != i - 1) {
      g_set_error (error, TUNE_JOURNAL_ERROR, TUNE_JOURNAL_ERROR_DAMAGED,
                   "journal %s line %u: evaluation %u where %u was expected (the baseline 0 on "
                   "line 2, then 1, 2, …): the journal is damaged; delete it to start a new tune",
                   t->journal_path, i + 1, e->index, i - 1);
      return FALSE;
    }
  }
  return TRUE;
}

gboolean
tune_resume_read (Tune *t, GError **error)
{
  g_autofree char *text = NULL;
  gsize len = 0;
  g_autoptr (GError) why = NULL;
  if (!g_file_get_contents (t->journal_path, &text, &len, &why))
    return read_error (t, why, error);
  g_autoptr (GPtrArray) lines = g_ptr_array_new_with_free_func ((GDestroyNotify) json_node_unref);
  if (!parse_lines (t, text, len, lines, error))
    return FALSE;
  if (lines->len > 0 && !check_header (t, lines->pdata[0], error))
    return FALSE;
  return read_evals (t, lines, error);
}

/* ---- the replay ---- */

/* The refusal of candidate @e, whose coordinate @i the optimiser asks as @asked. */
static gboolean
replay_error (const Tune *t, const TuneEval *e, guint i, double asked, GError **error)
{
  g_set_error (error, TUNE_JOURNAL_ERROR, TUNE_JOURNAL_ERROR_REPLAY,
               "journal %s line %u: candidate %u has %s at coordinate %.17g, but the optimiser "
               "asks %.17g there: the journal does not match this optimiser (another version of "
               "sedp tune wrote it); delete it to start a new tune", t->journal_path,
               e->index + 2, e->index, sedp_tune_space_param (t->space, i)->address, e->x[i],
               asked);
  return FALSE;
}

/* Candidate @e: @es must ask exactly its point, and is told its recorded objective and
 * violations; its values and text are derived again. */
static gboolean
replay_candidate (Tune *t, SedpCmaes *es, TuneEval *e, GError **error)
{
  double asked[SEDP_CMAES_MAX_DIM];
  if (!sedp_cmaes_ask (es, asked))
    g_assert_not_reached (); /* every candidate is told before the next is asked */
  for (guint i = 0; i < sedp_tune_space_n_params (t->space); i++)
    if (asked[i] != e->x[i])
      return replay_error (t, e, i, asked[i], error);
  tune_eval_derive (t, e, NULL);
  sedp_cmaes_tell (es, e->x, e->objective, e->violations);
  return TRUE;
}

gboolean
tune_resume_replay (Tune *t, SedpCmaes *es, GError **error)
{
  for (guint i = 0; t->recorded && i < t->recorded->len; i++) {
    TuneEval *e = t->recorded->pdata[i];
    if (e->index == 0) {
      t->baseline = *e; /* its strings move with it */
      tune_eval_derive (t, &t->baseline, NULL);
    } else if (replay_candidate (t, es, e, error)) {
      g_ptr_array_add (t->evals, e);
      t->replayed++;
      t->replayed_wall_s += e->r.wall_s;
    } else {
      return FALSE;
    }
    t->recorded->pdata[i] = NULL;
    if (e->index == 0)
      g_free (e);
  }
  tune_progress_resumed (t);
  g_clear_pointer (&t->recorded, g_ptr_array_unref);
  return TRUE;
}
