/* ab_router — a request-scope router for A/B tests and tenants
 * (docs/routing.md#the-ab_router-plugin): each request takes one arm (a branch of the stage),
 * chosen by an override, by the key's value (by = value), or by a salted SipHash of the key
 * (by = hash: the same key, salt and weights give the same arm anywhere, any time). The
 * weights may change at run time through arms_file; the arms themselves are fixed at start.
 * It writes no column: the runtime counts and reports the arm each request took. */
#include <sedp/sedp.h>

#include "split.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

/* How often process() looks at arms_file, at most. */
#define AB_CHECK_INTERVAL_US G_USEC_PER_SEC

/* A file modified less than this long ago is read again at the next look, even unchanged: a
 * write of the same size within the file system's timestamp tick would leave its stamp as is. */
#define AB_FRESH_NS (2 * G_GINT64_CONSTANT (1000000000))

/* What tells that arms_file changed: its modification time, size and inode (a new file renamed
 * over it). */
typedef struct {
  gint64 mtime_ns;
  gint64 size;
  guint64 inode;
  gboolean fresh;             /* modified less than AB_FRESH_NS before it was stat'ed */
} FileStamp;

typedef struct {
  char *name;                 /* the stage's, for messages */
  AbArms *arms;               /* the `arms` option: the branches' names, fixed */
  AbArms *table;              /* atomic: the weights in use (arms, or arms_file's latest) */
  GPtrArray *tables;          /* every table made (arms included), freed at destroy only, so a
                                 reader of an old table never reads freed memory */
  guint8 salt_key[AB_KEY_BYTES];
  char *key;                  /* the key column */
  gboolean by_value;
  int default_arm;            /* -1: none */
  AbOverrides *overrides;     /* (nullable) */
  char *arms_file;            /* (nullable) */
  gint64 next_check_us;       /* __atomic: monotonic time of the next look at arms_file */
  GMutex reload_lock;         /* held by the one worker reloading; guards tables, file_* */
  FileStamp file;             /* arms_file when last read */
  gboolean file_missing;      /* the last look could not stat it */
  char *file_warning;         /* (nullable) the last warning about it, not repeated */
} AbRouter;

static const SedpOptionSpec ab_options[] = {
  {.name = "arms", .type = SEDP_OPTION_STRING_LIST, .required = TRUE,
   .help = "the arms (branches) and their weights: NAME:WEIGHT, ... in percent, summing to 100"},
  SEDP_OPTION_STRING_SPEC ("key", "user_id", "the request column split by: int64 or string"),
  SEDP_OPTION_STRING_SPEC ("salt", NULL,
                           "the experiment's salt (default: the stage's name); another salt, "
                           "another independent split"),
  SEDP_OPTION_ENUM_SPEC ("by", "hash", "hash|value",
                         "hash: split by a salted hash of the key; value: the key's value names "
                         "the arm"),
  SEDP_OPTION_STRING_SPEC ("default_arm", NULL,
                           "by = value: the arm of a value that names none (else the request fails)"),
  SEDP_OPTION_PATH_SPEC ("overrides", NULL, FALSE,
                         "a file of 'KEY ARM' lines pinning those keys to an arm"),
  SEDP_OPTION_PATH_SPEC ("arms_file", NULL, FALSE,
                         "a file holding one arms line whose weights replace the arms option's; "
                         "re-read when it changes (checked at most once a second)"),
  SEDP_OPTION_END,
};

/* ---- options ---- */

static gboolean
check_default_arm (const SedpStageContext *ctx, const AbArms *arms, GError **error)
{
  const char *def = sedp_stage_context_get_string (ctx, "default_arm");
  if (def == NULL)
    return TRUE;
  if (strcmp (sedp_stage_context_get_string (ctx, "by"), "value") != 0) {
    g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_CONFIG,
                 "default_arm: '%s' is set but by is 'hash', where every key has an arm; "
                 "remove default_arm or set by = value", def);
    return FALSE;
  }
  if (ab_arms_find (arms, def) >= 0)
    return TRUE;
  g_autofree char *names = ab_arms_list_names (arms);
  g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_CONFIG,
               "default_arm: '%s' is not one of the arms (%s); name one of them, or remove "
               "default_arm so that a value naming no arm fails its request", def, names);
  return FALSE;
}

/* The `arms` option, checked with default_arm. */
static AbArms *
arms_from_options (const SedpStageContext *ctx, GError **error)
{
  g_autoptr (AbArms) arms = ab_arms_parse (sedp_stage_context_get_strv (ctx, "arms"), "arms", error);
  if (arms == NULL || !check_default_arm (ctx, arms, error))
    return NULL;
  return g_steal_pointer (&arms);
}

/* The arm names, in written order: the stage's branches. No file I/O. */
static char **
ab_branches (const SedpStageContext *ctx, GError **error)
{
  g_autoptr (AbArms) arms = arms_from_options (ctx, error);
  return arms ? g_strdupv (arms->names) : NULL;
}

/* ---- files ---- */

/* @path's stamp; FALSE with errno when it cannot be stat'ed. */
static gboolean
file_stamp (const char *path, FileStamp *out)
{
  struct stat st;
  if (stat (path, &st) != 0)
    return FALSE;
  out->mtime_ns = (gint64) st.st_mtim.tv_sec * G_GINT64_CONSTANT (1000000000) + st.st_mtim.tv_nsec;
  out->size = (gint64) st.st_size;
  out->inode = (guint64) st.st_ino;
  out->fresh = g_get_real_time () * 1000 - out->mtime_ns < AB_FRESH_NS;
  return TRUE;
}

/* Whether arms_file must be read again: @last (when it was read) was fresh, or differs from @now. */
static gboolean
stamp_changed (const FileStamp *last, const FileStamp *now)
{
  return last->fresh || last->mtime_ns != now->mtime_ns || last->size != now->size ||
         last->inode != now->inode;
}

static char *
read_file (const char *option, const char *path, GError **error)
{
  char *text = NULL;
  g_autoptr (GError) local = NULL;
  if (g_file_get_contents (path, &text, NULL, &local))
    return text;
  g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_UNAVAILABLE,
               "%s: cannot read '%s': %s; fix the path or create the file", option, path,
               local->message);
  return NULL;
}

/* arms_file's arms; they must have @names' names, in order. */
static AbArms *
read_arms_file (const char *path, const AbArms *names, GError **error)
{
  g_autofree char *text = read_file ("arms_file", path, error);
  if (text == NULL)
    return NULL;
  g_autofree char *where = g_strdup_printf ("arms_file '%s'", path);
  g_autoptr (AbArms) arms = ab_arms_parse_file (text, where, error);
  if (arms == NULL || !ab_arms_check_names (names, arms, where, error))
    return NULL;
  return g_steal_pointer (&arms);
}

static gboolean
load_overrides (AbRouter *r, const char *path, GError **error)
{
  if (path == NULL || *path == '\0')
    return TRUE;
  g_autofree char *text = read_file ("overrides", path, error);
  if (text == NULL)
    return FALSE;
  r->overrides = ab_overrides_parse (text, path, r->arms, error);
  return r->overrides != NULL;
}

/* At create: arms_file, when set, replaces the option's weights (its failure fails create). */
static gboolean
load_arms_file (AbRouter *r, GError **error)
{
  if (r->arms_file == NULL)
    return TRUE;
  if (!file_stamp (r->arms_file, &r->file))
    r->file.fresh = TRUE; /* read failing below, or created since: read it again */
  AbArms *t = read_arms_file (r->arms_file, r->arms, error);
  if (t == NULL)
    return FALSE;
  g_ptr_array_add (r->tables, t);
  r->table = t;
  return TRUE;
}

/* ---- run-time weights ---- */

static char *
describe_weights (const AbArms *t)
{
  GString *s = g_string_new (NULL);
  for (guint i = 0; i < t->n_arms; i++)
    g_string_append_printf (s, "%s%s:%u.%02u", i ? ", " : "", t->names[i], t->weights[i] / 100,
                            t->weights[i] % 100);
  return g_string_free (s, FALSE);
}

/* Swaps in @t (owned) unless its weights are the current ones. Under reload_lock. */
static void
install_table (AbRouter *r, AbArms *t)
{
  const AbArms *cur = g_atomic_pointer_get (&r->table);
  if (memcmp (cur->weights, t->weights, sizeof t->weights) == 0) {
    ab_arms_free (t);
    return;
  }
  g_ptr_array_add (r->tables, t);
  g_atomic_pointer_set (&r->table, t);
  g_autofree char *w = describe_weights (t);
  g_message ("stage '%s': arms_file '%s': new weights %s", r->name, r->arms_file, w);
}

/* Logs @message unless it was the last one logged about arms_file. Under reload_lock. */
static void
warn_once (AbRouter *r, char *message)
{
  if (g_strcmp0 (message, r->file_warning) != 0)
    g_warning ("stage '%s': %s", r->name, message);
  g_free (r->file_warning);
  r->file_warning = message;
}

/* Re-reads arms_file when its stamp changed (or it was fresh). Under reload_lock. */
static void
reload_if_changed (AbRouter *r)
{
  FileStamp now;
  if (!file_stamp (r->arms_file, &now)) {
    warn_once (r, g_strdup_printf ("arms_file: cannot stat '%s': %s; the previous weights stay",
                                   r->arms_file, g_strerror (errno)));
    r->file_missing = TRUE;
    return;
  }
  if (!r->file_missing && !stamp_changed (&r->file, &now))
    return;
  r->file = now;
  r->file_missing = FALSE;
  g_autoptr (GError) error = NULL;
  AbArms *t = read_arms_file (r->arms_file, r->arms, &error);
  if (t == NULL) {
    warn_once (r, g_strdup_printf ("%s; the previous weights stay", error->message));
    return;
  }
  g_clear_pointer (&r->file_warning, g_free);
  install_table (r, t);
}

/* At most once per AB_CHECK_INTERVAL_US, one worker (the one whose CAS on the time wins)
 * looks at arms_file; the others go on with the current table. */
static void
maybe_reload (AbRouter *r)
{
  gint64 now = g_get_monotonic_time ();
  gint64 next = __atomic_load_n (&r->next_check_us, __ATOMIC_RELAXED);
  if (now < next || !__atomic_compare_exchange_n (&r->next_check_us, &next,
                                                  now + AB_CHECK_INTERVAL_US, FALSE,
                                                  __ATOMIC_RELAXED, __ATOMIC_RELAXED))
    return;
  if (!g_mutex_trylock (&r->reload_lock))
    return; /* a reload slower than the interval is still running */
  reload_if_changed (r);
  g_mutex_unlock (&r->reload_lock);
}

/* ---- lifecycle ---- */

static void
ab_destroy (gpointer instance)
{
  AbRouter *r = instance;
  g_ptr_array_unref (r->tables);
  ab_overrides_free (r->overrides);
  g_mutex_clear (&r->reload_lock);
  g_free (r->file_warning);
  g_free (r->arms_file);
  g_free (r->key);
  g_free (r->name);
  g_free (r);
}

/* A router over @arms (owned) with the options of @ctx, before any file is read. */
static AbRouter *
router_new (SedpStageContext *ctx, AbArms *arms)
{
  AbRouter *r = g_new0 (AbRouter, 1);
  r->name = g_strdup (sedp_stage_context_get_name (ctx));
  r->arms = r->table = arms;
  r->tables = g_ptr_array_new_with_free_func ((GDestroyNotify) ab_arms_free);
  g_ptr_array_add (r->tables, arms);
  const char *salt = sedp_stage_context_get_string (ctx, "salt");
  ab_split_key_of_salt (salt ? salt : r->name, r->salt_key);
  r->key = g_strdup (sedp_stage_context_get_string (ctx, "key"));
  r->by_value = strcmp (sedp_stage_context_get_string (ctx, "by"), "value") == 0;
  const char *def = sedp_stage_context_get_string (ctx, "default_arm");
  r->default_arm = def ? ab_arms_find (arms, def) : -1;
  const char *arms_file = sedp_stage_context_get_string (ctx, "arms_file");
  r->arms_file = arms_file && *arms_file ? g_strdup (arms_file) : NULL;
  g_mutex_init (&r->reload_lock);
  return r;
}

static gpointer
ab_create (SedpStageContext *ctx, GError **error)
{
  if (!ab_split_init (error))
    return NULL;
  const char *key = sedp_stage_context_get_string (ctx, "key");
  if (key == NULL || *key == '\0') {
    g_set_error_literal (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_CONFIG,
                         "key: empty; name the request column to split by (the default is user_id)");
    return NULL;
  }
  AbArms *arms = arms_from_options (ctx, error);
  if (arms == NULL)
    return NULL;
  AbRouter *r = router_new (ctx, arms);
  if (!load_overrides (r, sedp_stage_context_get_string (ctx, "overrides"), error) ||
      !load_arms_file (r, error)) {
    ab_destroy (r);
    return NULL;
  }
  __atomic_store_n (&r->next_check_us, g_get_monotonic_time () + AB_CHECK_INTERVAL_US,
                    __ATOMIC_RELAXED);
  return r;
}

/* ---- process ---- */

/* by = value: the arm @value names, else default_arm, else -1 with @error. */
static int
arm_of_value (const AbRouter *r, const char *value, GError **error)
{
  int arm = ab_arms_find (r->arms, value);
  if (arm >= 0)
    return arm;
  if (r->default_arm >= 0)
    return r->default_arm;
  g_autofree char *names = ab_arms_list_names (r->arms);
  g_autofree char *shown = g_utf8_make_valid (value, MIN (strlen (value), 64));
  g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_INVALID_INPUT,
               "key column '%s' holds '%s', which names no arm (arms: %s); send one of them, or "
               "set default_arm", r->key, shown, names);
  return -1;
}

static int
arm_of_int64 (const AbRouter *r, const AbArms *table, gint64 value, GError **error)
{
  int arm = r->overrides ? ab_overrides_lookup_int64 (r->overrides, value) : -1;
  if (arm >= 0)
    return arm;
  if (!r->by_value)
    return (int) ab_arms_arm_of (table, ab_split_bucket_int64 (r->salt_key, value));
  char text[32];
  g_snprintf (text, sizeof text, "%" G_GINT64_FORMAT, value);
  return arm_of_value (r, text, error);
}

static int
arm_of_string (const AbRouter *r, const AbArms *table, const char *value, GError **error)
{
  int arm = r->overrides ? ab_overrides_lookup_string (r->overrides, value) : -1;
  if (arm >= 0)
    return arm;
  if (!r->by_value)
    return (int) ab_arms_arm_of (table, ab_split_bucket_string (r->salt_key, value));
  return arm_of_value (r, value, error);
}

/* The key column of @frame: int64 (width 1) or string, with a row. */
static const SedpColumn *
key_column (const AbRouter *r, const SedpFrame *frame, GError **error)
{
  const SedpColumn *col = sedp_frame_get_column (frame, r->key);
  if (col == NULL) {
    g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_INVALID_INPUT,
                 "the request has no column '%s' (option key) to split by; send it, or set key "
                 "to a request column", r->key);
    return NULL;
  }
  SedpColumnType t = sedp_column_get_column_type (col);
  guint width = sedp_column_get_width (col);
  if (!((t == SEDP_COLUMN_INT64 && width == 1) || t == SEDP_COLUMN_STRING)) {
    g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_INVALID_INPUT,
                 "column '%s' (option key) is %s of width %u; the key must be an int64 column of "
                 "width 1 or a string column", r->key, sedp_column_type_to_string (t), width);
    return NULL;
  }
  if (sedp_column_get_n_rows (col) == 0) {
    g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_INVALID_INPUT,
                 "column '%s' (option key) has no rows; send the key in the request", r->key);
    return NULL;
  }
  return col;
}

/* The arm of @frame (its key in row 0), or -1 with @error. */
static int
choose_arm (const AbRouter *r, const AbArms *table, const SedpFrame *frame, GError **error)
{
  const SedpColumn *col = key_column (r, frame, error);
  if (col == NULL)
    return -1;
  if (sedp_column_get_column_type (col) == SEDP_COLUMN_INT64)
    return arm_of_int64 (r, table, sedp_column_get_int64 (col)[0], error);
  const char *value = sedp_column_get_string (col, 0);
  if (value == NULL) {
    g_set_error (error, SEDP_STAGE_ERROR, SEDP_STAGE_ERROR_INVALID_INPUT,
                 "column '%s' (option key) has no value in this request; send one", r->key);
    return -1;
  }
  return arm_of_string (r, table, value, error);
}

static gboolean
ab_process (gpointer instance, SedpEvent *const *events, guint n_events, guint worker,
            GError **error)
{
  AbRouter *r = instance;
  if (r->arms_file)
    maybe_reload (r);
  const AbArms *table = g_atomic_pointer_get (&r->table);
  for (guint e = 0; e < n_events; e++) {
    const SedpFrame *frame = sedp_event_get_frame (events[e]);
    g_autoptr (GError) local = NULL;
    int arm = frame ? choose_arm (r, table, frame, &local) : -1;
    if (arm >= 0)
      sedp_event_route (events[e], (guint) arm);
    else if (local)
      sedp_event_fail (events[e], local);
  }
  return TRUE;
}

/* The weights in use, in percent, as ab_router_weight{arm="ARM"}; and the overrides' size. */
static void
ab_stats (gpointer instance, SedpStats *stats)
{
  AbRouter *r = instance;
  const AbArms *t = g_atomic_pointer_get (&r->table);
  for (guint i = 0; i < t->n_arms; i++) {
    g_autofree char *name = g_strdup_printf ("ab_router_weight{arm=\"%s\"}", t->names[i]);
    sedp_stats_add (stats, name, t->weights[i] / 100.0);
  }
  sedp_stats_add (stats, "ab_router_overrides", r->overrides ? ab_overrides_size (r->overrides) : 0);
}

SEDP_STAGE_DEFINE (.name = "ab_router", .version = "1.0",
                   .description = "routes each request down one arm: an A/B split by a salted "
                                  "hash of a key, or the key's value (tenants)",
                   .license = "MIT", .scope = SEDP_SCOPE_REQUEST, .options = ab_options,
                   .create = ab_create, .process = ab_process, .destroy = ab_destroy,
                   .stats = ab_stats, .branches = ab_branches);
