/* sedp tests — the ab_router plugin (docs/routing.md#the-ab_router-plugin): the split against
 * literal buckets (from an independent SipHash-2-4) and against libsodium called here, shares,
 * independent salts, weight changes, overrides, string keys, by = value, every `arms` error,
 * and arms_file at create and at run time. The plugin is driven through its descriptor with
 * hand-made contexts and events; pipelines that take its branches are the runtime's tests. */
#include "test-common.h"
#include "test-spawn.h"

#include "dsl/options.h"
#include "loader/registry.h"
#include "runtime/metrics.h"
#include "runtime/runtime-private.h"

#include "../../plugins/ab_router/split.h"

#include <glib/gstdio.h>
#include <math.h>
#include <sodium.h>
#include <string.h>

#define N_USERS 100000

/* ---- the split computed here, from libsodium directly ---- */

static guint
expected_bucket (const char *salt, const void *msg, gsize len)
{
  unsigned char key[crypto_shorthash_KEYBYTES], out[crypto_shorthash_BYTES];
  crypto_generichash (key, sizeof key, (const unsigned char *) salt, strlen (salt), NULL, 0);
  crypto_shorthash (out, msg, len, key);
  guint64 h = 0;
  for (int i = crypto_shorthash_BYTES - 1; i >= 0; i--)
    h = h << 8 | out[i];
  return (guint) (h % 10000);
}

static guint
expected_bucket_int64 (const char *salt, gint64 value)
{
  guint8 bytes[8];
  for (guint i = 0; i < 8; i++)
    bytes[i] = (guint8) ((guint64) value >> (8 * i));
  return expected_bucket (salt, bytes, 8);
}

/* The arm owning @bucket when arms own consecutive ranges of @hundredths buckets. */
static guint
expected_arm (const guint *hundredths, guint n, guint bucket)
{
  guint end = 0;
  for (guint i = 0; i < n; i++)
    if (bucket < (end += hundredths[i]))
      return i;
  return n;
}

/* ---- the plugin, through its descriptor ---- */

static SedpRegistry *registry;
static const SedpStageDescriptor *descriptor;

/* Finds the built plugin (in main, before the tests run). */
static gboolean
load_plugin (void)
{
  const char *dirs[] = {SEDP_TEST_PLUGIN_DIR, NULL};
  registry = sedp_registry_new (dirs);
  g_autoptr (GError) error = NULL;
  const SedpPluginInfo *info = sedp_registry_lookup (registry, "ab_router", NULL, &error);
  if (info == NULL || info->desc->branches == NULL || info->desc->stats == NULL) {
    fprintf (stderr, "ab_router: %s\n", error ? error->message : "no branches or stats callback");
    return FALSE;
  }
  descriptor = info->desc;
  return TRUE;
}

static const SedpStageDescriptor *
ab_desc (void)
{
  return descriptor;
}

typedef struct {
  char *name;
  char **keys;
  char **values;
  guint *lines;
  SedpOptionValues *options;
  SedpStageContext ctx;
  gpointer instance;
} TestStage;

static void
stage_free (TestStage *st)
{
  if (st->instance)
    ab_desc ()->destroy (st->instance);
  sedp_option_values_free (st->options);
  g_strfreev (st->keys);
  g_strfreev (st->values);
  g_free (st->lines);
  g_free (st->name);
  g_free (st);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC (TestStage, stage_free)

/* Splits "key = value" lines into @st's option keys and values. */
static void
stage_set_options (TestStage *st, const char *text)
{
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  GPtrArray *k = g_ptr_array_new (), *v = g_ptr_array_new ();
  for (guint i = 0; lines[i]; i++) {
    char *eq = strchr (lines[i], '=');
    if (eq == NULL)
      continue;
    g_ptr_array_add (k, g_strstrip (g_strndup (lines[i], (gsize) (eq - lines[i]))));
    g_ptr_array_add (v, g_strstrip (g_strdup (eq + 1)));
  }
  st->lines = g_new0 (guint, k->len + 1);
  for (guint i = 0; i < k->len; i++)
    st->lines[i] = i + 2;
  g_ptr_array_add (k, NULL);
  g_ptr_array_add (v, NULL);
  st->keys = (char **) g_ptr_array_free (k, FALSE);
  st->values = (char **) g_ptr_array_free (v, FALSE);
}

/* Stage @name with the options of @text, validated against the schema (not created). */
static TestStage *
stage_new (const char *name, const char *text)
{
  TestStage *st = g_new0 (TestStage, 1);
  st->name = g_strdup (name);
  stage_set_options (st, text);
  SedpStageSpec spec = {.name = st->name, .plugin = (char *) "ab_router", .option_keys = st->keys,
                        .option_values = st->values, .option_lines = st->lines, .line = 1};
  g_autoptr (GError) error = NULL;
  st->options = sedp_option_values_parse (ab_desc ()->options, &spec, "test.pipeline", "/", NULL,
                                          &error);
  if (error)
    fprintf (stderr, "\n  options: %s\n", error->message);
  CU_ASSERT_PTR_NOT_NULL_FATAL (st->options);
  st->ctx = (SedpStageContext) {.name = st->name, .scope = SEDP_SCOPE_REQUEST, .parallelism = 1,
                                .batch = 1, .options = st->options};
  return st;
}

/* Stage @name with @text's options, created; fails the test (fatally) when it cannot be. */
static TestStage *
router_new (const char *name, const char *text)
{
  TestStage *st = stage_new (name, text);
  g_autoptr (GError) error = NULL;
  g_auto (GStrv) branches = ab_desc ()->branches (&st->ctx, &error);
  st->instance = branches ? ab_desc ()->create (&st->ctx, &error) : NULL;
  if (error)
    fprintf (stderr, "\n  create: %s\n", error->message);
  CU_ASSERT_PTR_NOT_NULL_FATAL (st->instance);
  return st;
}

/* The error `branches` gives for @text's options (NULL when none), and that `create` gives the
 * same. */
static GError *
branches_error (const char *text)
{
  g_autoptr (TestStage) st = stage_new ("ab", text);
  GError *error = NULL;
  g_auto (GStrv) branches = ab_desc ()->branches (&st->ctx, &error);
  CU_ASSERT ((branches == NULL) == (error != NULL));
  g_autoptr (GError) create_error = NULL;
  st->instance = ab_desc ()->create (&st->ctx, &create_error);
  CU_ASSERT ((st->instance == NULL) == (create_error != NULL));
  if (error && create_error)
    CU_ASSERT_STRING_EQUAL (error->message, create_error->message);
  return error;
}

/* Runs @frame through @st's process as a request frame: the one arm taken, or -1 with @error. */
static int
route_frame (TestStage *st, SedpFrame *frame, GError **error)
{
  SedpEvent ev = {.frame = frame, .frame_index = SEDP_FRAME_INDEX_REQUEST};
  SedpEvent *events[] = {&ev};
  CU_ASSERT_TRUE (ab_desc ()->process (st->instance, events, 1, 0, NULL));
  if (ev.error) {
    CU_ASSERT_EQUAL (ev.routes, 0);
    g_propagate_error (error, ev.error);
    return -1;
  }
  CU_ASSERT_EQUAL (__builtin_popcountll (ev.routes), 1);
  return ev.routes ? __builtin_ctzll (ev.routes) : -1;
}

static SedpFrame *
int64_frame (const char *column, gint64 value)
{
  SedpFrame *f = sedp_frame_new (1);
  sedp_column_int64_data (sedp_frame_add_column (f, column, SEDP_COLUMN_INT64, 1))[0] = value;
  return f;
}

static SedpFrame *
string_frame (const char *column, const char *value)
{
  SedpFrame *f = sedp_frame_new (1);
  sedp_column_set_string (sedp_frame_add_column (f, column, SEDP_COLUMN_STRING, 1), 0, value);
  return f;
}

static int
route_int64 (TestStage *st, gint64 user)
{
  g_autoptr (SedpFrame) f = int64_frame ("user_id", user);
  g_autoptr (GError) error = NULL;
  int arm = route_frame (st, f, &error);
  if (error)
    fprintf (stderr, "\n  route %" G_GINT64_FORMAT ": %s\n", user, error->message);
  return arm;
}

static int
route_string (TestStage *st, const char *column, const char *value, GError **error)
{
  g_autoptr (SedpFrame) f = string_frame (column, value);
  return route_frame (st, f, error);
}

#define ASSERT_CONFIG_ERROR(error, ...)                                                          \
  do {                                                                                           \
    SEDP_ASSERT_ERROR (error, SEDP_STAGE_ERROR, __VA_ARGS__);                                    \
    CU_ASSERT_EQUAL ((error)->code, SEDP_STAGE_ERROR_CONFIG);                                    \
  } while (0)

/* ---- known answers and determinism ---- */

/* Buckets under salt "exp1" from a SipHash-2-4 written independently of libsodium (checked
 * against the SipHash paper's test vector) with hashlib's BLAKE2b-128 of the salt. */
static const struct {
  gint64 user;
  guint bucket;
  int arm;  /* under KNOWN_ARMS */
} known_ints[] = {
  {0, 1211, 0}, {1, 9379, 4}, {42, 9142, 2}, {-1, 9514, 4},
  {G_GINT64_CONSTANT (123456789012345), 9898, 4}, {G_MAXINT64, 2678, 2},
};
static const struct {
  const char *key;
  guint bucket;
} known_strings[] = {{"alice", 7354}, {"", 6773}, {"\xc3\xbc" "n\xc3\xaf" "code", 3294}};

/* Buckets [0,1212) [1212,2678) [2678,9155) [9155,9379) [9379,10000): boundaries at the known
 * buckets 1211 (a's last), 2678 (c's first) and 9379 (e's first). */
#define KNOWN_ARMS "a:12.12, b:14.66, c:64.77, d:2.24, e:6.21"
static const guint known_weights[] = {1212, 1466, 6477, 224, 621};

static void
test_known_answers (void)
{
  guint8 key[AB_KEY_BYTES];
  ab_split_key_of_salt ("exp1", key);
  g_autoptr (TestStage) st = router_new ("ab", "arms = " KNOWN_ARMS "\nsalt = exp1");
  for (guint i = 0; i < G_N_ELEMENTS (known_ints); i++) {
    gint64 u = known_ints[i].user;
    CU_ASSERT_EQUAL (expected_bucket_int64 ("exp1", u), known_ints[i].bucket);
    CU_ASSERT_EQUAL (ab_split_bucket_int64 (key, u), known_ints[i].bucket);
    CU_ASSERT_EQUAL (expected_arm (known_weights, 5, known_ints[i].bucket), (guint) known_ints[i].arm);
    CU_ASSERT_EQUAL (route_int64 (st, u), known_ints[i].arm);
  }
  g_autoptr (TestStage) s2 = router_new ("ab", "arms = " KNOWN_ARMS "\nsalt = exp1\nkey = name");
  for (guint i = 0; i < G_N_ELEMENTS (known_strings); i++) {
    const char *k = known_strings[i].key;
    CU_ASSERT_EQUAL (expected_bucket ("exp1", k, strlen (k)), known_strings[i].bucket);
    CU_ASSERT_EQUAL (ab_split_bucket_string (key, k), known_strings[i].bucket);
    int want = (int) expected_arm (known_weights, 5, known_strings[i].bucket);
    CU_ASSERT_EQUAL (route_string (s2, "name", k, NULL), want);
  }
}

/* The same key and salt give the same arm in another instance; the salt defaults to the stage's
 * name; the plugin agrees with the split computed here on many users. */
static void
test_determinism (void)
{
  g_autoptr (TestStage) a = router_new ("exp1", "arms = " KNOWN_ARMS);
  g_autoptr (TestStage) b = router_new ("other", "arms = " KNOWN_ARMS "\nsalt = exp1");
  g_autoptr (TestStage) c = router_new ("exp2", "arms = " KNOWN_ARMS);
  guint differ = 0;
  for (gint64 u = -500; u < 1500; u++) {
    int arm = route_int64 (a, u);
    CU_ASSERT_EQUAL (arm, (int) expected_arm (known_weights, 5, expected_bucket_int64 ("exp1", u)));
    CU_ASSERT_EQUAL (route_int64 (b, u), arm);
    CU_ASSERT_EQUAL (route_int64 (a, u), arm);
    differ += route_int64 (c, u) != arm;
  }
  CU_ASSERT (differ > 500); /* another salt, another split */
}

/* ---- shares, salts, weight changes ---- */

static void
count_arms (const char *line, const char *salt, guint *counts)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (AbArms) arms = ab_arms_parse_line (line, "arms", &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (arms);
  guint8 key[AB_KEY_BYTES];
  ab_split_key_of_salt (salt, key);
  for (gint64 u = 1; u <= N_USERS; u++)
    counts[ab_arms_arm_of (arms, ab_split_bucket_int64 (key, u))]++;
}

static void
check_shares (const char *line, const double *percent, guint n)
{
  guint counts[AB_MAX_ARMS] = {0};
  count_arms (line, "shares", counts);
  for (guint i = 0; i < n; i++) {
    double share = 100.0 * counts[i] / N_USERS;
    if (fabs (share - percent[i]) > 0.5)
      fprintf (stderr, "\n  %s: arm %u has %.3f%%, not %.2f%%\n", line, i, share, percent[i]);
    CU_ASSERT (fabs (share - percent[i]) <= 0.5);
  }
}

static void
test_shares (void)
{
  check_shares ("control:90, treatment:10", (const double[]) {90, 10}, 2);
  check_shares ("a:50, b:30, c:20", (const double[]) {50, 30, 20}, 3);
  check_shares ("a:0, b:99.5, c:0.5", (const double[]) {0, 99.5, 0.5}, 3);
}

/* Two salts: the joint shares are the products of the shares (independent splits). */
static void
check_independent (const char *line, const double *p, guint n)
{
  g_autoptr (AbArms) arms = ab_arms_parse_line (line, "arms", NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (arms);
  guint8 k1[AB_KEY_BYTES], k2[AB_KEY_BYTES];
  ab_split_key_of_salt ("experiment_1", k1);
  ab_split_key_of_salt ("experiment_2", k2);
  guint joint[4][4] = {{0}}, agree = 0;
  for (gint64 u = 1; u <= N_USERS; u++) {
    guint a = ab_arms_arm_of (arms, ab_split_bucket_int64 (k1, u));
    guint b = ab_arms_arm_of (arms, ab_split_bucket_int64 (k2, u));
    joint[a][b]++;
    agree += a == b;
  }
  double want_agree = 0;
  for (guint i = 0; i < n; i++) {
    want_agree += p[i] * p[i];
    for (guint j = 0; j < n; j++)
      CU_ASSERT (fabs ((double) joint[i][j] / N_USERS - p[i] * p[j]) <= 0.005);
  }
  CU_ASSERT (fabs ((double) agree / N_USERS - want_agree) <= 0.005);
}

static void
test_salts_independent (void)
{
  check_independent ("control:90, treatment:10", (const double[]) {0.9, 0.1}, 2);
  check_independent ("a:50, b:30, c:20", (const double[]) {0.5, 0.3, 0.2}, 3);
}

/* From @before to @after (same names): a user moves exactly when its bucket changed owner;
 * returns how many moved. */
static guint
check_moves (const char *before, const guint *wb, const char *after, const guint *wa, guint n)
{
  g_autoptr (AbArms) t0 = ab_arms_parse_line (before, "arms", NULL);
  g_autoptr (AbArms) t1 = ab_arms_parse_line (after, "arms", NULL);
  CU_ASSERT_FATAL (t0 && t1);
  guint8 key[AB_KEY_BYTES];
  ab_split_key_of_salt ("moves", key);
  guint moved = 0, wrong = 0;
  for (gint64 u = 1; u <= N_USERS; u++) {
    guint b = ab_split_bucket_int64 (key, u);
    gboolean moves = ab_arms_arm_of (t0, b) != ab_arms_arm_of (t1, b);
    wrong += moves != (expected_arm (wb, n, b) != expected_arm (wa, n, b));
    moved += moves;
  }
  CU_ASSERT_EQUAL (wrong, 0);
  return moved;
}

static void
test_weight_change (void)
{
  /* 10 → 20 on treatment: every treatment user stays; only control users move, about 10 %. */
  g_autoptr (AbArms) t0 = ab_arms_parse_line ("control:90, treatment:10", "arms", NULL);
  g_autoptr (AbArms) t1 = ab_arms_parse_line ("control:80, treatment:20", "arms", NULL);
  guint8 key[AB_KEY_BYTES];
  ab_split_key_of_salt ("moves", key);
  guint left = 0, moved = 0;
  for (gint64 u = 1; u <= N_USERS; u++) {
    guint b = ab_split_bucket_int64 (key, u);
    guint a0 = ab_arms_arm_of (t0, b), a1 = ab_arms_arm_of (t1, b);
    left += a0 == 1 && a1 != 1;
    moved += a0 == 0 && a1 == 1;
  }
  CU_ASSERT_EQUAL (left, 0);
  CU_ASSERT (fabs (100.0 * moved / N_USERS - 10) <= 0.5);
  guint m = check_moves ("control:90, treatment:10", (const guint[]) {9000, 1000},
                         "control:80, treatment:20", (const guint[]) {8000, 2000}, 2);
  CU_ASSERT_EQUAL (m, moved);
  m = check_moves ("a:50, b:30, c:20", (const guint[]) {5000, 3000, 2000}, "a:40, b:30, c:30",
                   (const guint[]) {4000, 3000, 3000}, 3);
  CU_ASSERT (fabs (100.0 * m / N_USERS - 20) <= 0.5); /* [4000,5000) a→b, [7000,8000) b→c */
}

/* ---- overrides, string keys, by = value, the key column ---- */

/* This run's temporary folder. */
static char *tmp_dir;

static char *
write_temp (const char *name, const char *text)
{
  char *path = g_build_filename (tmp_dir, name, NULL);
  g_autoptr (GError) error = NULL;
  CU_ASSERT_TRUE_FATAL (g_file_set_contents (path, text, -1, &error));
  return path;
}

static GError *
create_error (const char *text)
{
  g_autoptr (TestStage) st = stage_new ("ab", text);
  GError *error = NULL;
  st->instance = ab_desc ()->create (&st->ctx, &error);
  CU_ASSERT_PTR_NULL (st->instance);
  return error;
}

static void
test_overrides (void)
{
  g_autofree char *path = write_temp ("overrides",
                                      "# pinned users\n"
                                      "007 treatment\n"
                                      "\n"
                                      "   42\tcontrol   # a comment\n"
                                      "alice treatment\n");
  g_autofree char *opts = g_strdup_printf ("arms = control:100, treatment:0\noverrides = %s", path);
  g_autoptr (TestStage) st = router_new ("ab", opts);
  CU_ASSERT_EQUAL (route_int64 (st, 7), 1);      /* "007" is the int64 7 */
  CU_ASSERT_EQUAL (route_int64 (st, 42), 0);
  for (gint64 u = 100; u < 200; u++)
    CU_ASSERT_EQUAL (route_int64 (st, u), 0);    /* treatment has weight 0 */
  g_autofree char *sopts = g_strdup_printf ("%s\nkey = name", opts);
  g_autoptr (TestStage) ss = router_new ("ab", sopts);
  CU_ASSERT_EQUAL (route_string (ss, "name", "alice", NULL), 1);
  CU_ASSERT_EQUAL (route_string (ss, "name", "007", NULL), 1); /* the text as written */
  CU_ASSERT_EQUAL (route_string (ss, "name", "7", NULL), 0);   /* a string is its text */
  CU_ASSERT_EQUAL (route_string (ss, "name", "bob", NULL), 0);
  g_autoptr (GString) out = g_string_new (NULL);
  SedpStats *s = sedp_stats_new ("ab", out);
  ab_desc ()->stats (st->instance, s);
  sedp_stats_free (s);
  SEDP_ASSERT_CONTAINS (out->str, "ab ab_router_weight{arm=\"control\"} 100\n");
  SEDP_ASSERT_CONTAINS (out->str, "ab ab_router_weight{arm=\"treatment\"} 0\n");
  SEDP_ASSERT_CONTAINS (out->str, "ab ab_router_overrides 3\n");
  g_unlink (path);
}

static void
check_overrides_error (const char *text, const char *const *needles)
{
  g_autofree char *path = write_temp ("ab-router-bad-overrides", text);
  g_autofree char *opts = g_strdup_printf ("arms = control:50, treatment:50\noverrides = %s", path);
  g_autoptr (GError) error = create_error (opts);
  ASSERT_CONFIG_ERROR (error, "overrides", path);
  for (guint i = 0; needles[i]; i++)
    SEDP_ASSERT_CONTAINS (error->message, needles[i]);
  g_unlink (path);
}

static void
test_overrides_errors (void)
{
  check_overrides_error ("# x\n7 treatment extra\n", (const char *[]) {":2:", "KEY ARM", NULL});
  check_overrides_error ("7\n", (const char *[]) {":1:", "'7' is not 'KEY ARM'", NULL});
  check_overrides_error ("7 treatmnt\n",
                         (const char *[]) {"arm 'treatmnt'", "control, treatment", NULL});
  check_overrides_error ("7 control\n\n0007 treatment\n",
                         (const char *[]) {":3:", "'0007'", "line 1", NULL});
  check_overrides_error ("bob control\nbob control\n", (const char *[]) {":2:", "line 1", NULL});
  g_autoptr (GError) e = create_error ("arms = a:100\noverrides = /nonexistent/overrides.txt");
  SEDP_ASSERT_ERROR (e, SEDP_STAGE_ERROR, "overrides", "/nonexistent/overrides.txt");
  CU_ASSERT_EQUAL (e->code, SEDP_STAGE_ERROR_UNAVAILABLE);
}

/* String keys split as the int64 ones do: the shares hold, and the bytes hashed are the text's. */
static void
test_string_keys (void)
{
  g_autoptr (TestStage) st = router_new ("ab", "arms = a:50, b:30, c:20\nkey = session\nsalt = s");
  const guint w[] = {5000, 3000, 2000};
  guint counts[3] = {0};
  for (guint u = 0; u < 20000; u++) {
    g_autofree char *k = g_strdup_printf ("user-%u", u);
    int arm = route_string (st, "session", k, NULL);
    CU_ASSERT_EQUAL (arm, (int) expected_arm (w, 3, expected_bucket ("s", k, strlen (k))));
    counts[arm]++;
  }
  for (guint i = 0; i < 3; i++)
    CU_ASSERT (fabs (counts[i] / 200.0 - w[i] / 100.0) <= 1.0); /* 20 000 keys: ±1 point */
}

static void
test_by_value (void)
{
  g_autoptr (TestStage) st = router_new ("t", "arms = acme:50, globex:50\nby = value\nkey = tenant");
  CU_ASSERT_EQUAL (route_string (st, "tenant", "acme", NULL), 0);
  CU_ASSERT_EQUAL (route_string (st, "tenant", "globex", NULL), 1);
  g_autoptr (GError) error = NULL;
  CU_ASSERT_EQUAL (route_string (st, "tenant", "initech", &error), -1);
  SEDP_ASSERT_ERROR (error, SEDP_STAGE_ERROR, "'tenant'", "'initech'", "acme, globex", "default_arm");
  CU_ASSERT_EQUAL (error->code, SEDP_STAGE_ERROR_INVALID_INPUT);
  g_autoptr (TestStage) d = router_new ("t", "arms = acme:50, globex:50\nby = value\n"
                                        "key = tenant\ndefault_arm = globex");
  CU_ASSERT_EQUAL (route_string (d, "tenant", "initech", NULL), 1);
  CU_ASSERT_EQUAL (route_string (d, "tenant", "acme", NULL), 0);
  g_autoptr (TestStage) n = router_new ("t", "arms = 1:50, 2:50\nby = value");
  CU_ASSERT_EQUAL (route_int64 (n, 1), 0);
  CU_ASSERT_EQUAL (route_int64 (n, 2), 1);
  g_autoptr (SedpFrame) f = int64_frame ("user_id", 3);
  g_autoptr (GError) e3 = NULL;
  CU_ASSERT_EQUAL (route_frame (n, f, &e3), -1);
  SEDP_ASSERT_ERROR (e3, SEDP_STAGE_ERROR, "'user_id'", "'3'");
}

/* A request without a usable key fails naming the column; the other events of a batch go on. */
static void
test_key_column (void)
{
  g_autoptr (TestStage) st = router_new ("ab", "arms = control:90, treatment:10");
  g_autoptr (SedpFrame) none = int64_frame ("uid", 1);
  g_autoptr (GError) e1 = NULL;
  CU_ASSERT_EQUAL (route_frame (st, none, &e1), -1);
  SEDP_ASSERT_ERROR (e1, SEDP_STAGE_ERROR, "no column 'user_id'", "option key");
  CU_ASSERT_EQUAL (e1->code, SEDP_STAGE_ERROR_INVALID_INPUT);
  g_autoptr (SedpFrame) flt = sedp_frame_new (1);
  sedp_frame_add_column (flt, "user_id", SEDP_COLUMN_FLOAT32, 1);
  g_autoptr (GError) e2 = NULL;
  CU_ASSERT_EQUAL (route_frame (st, flt, &e2), -1);
  SEDP_ASSERT_ERROR (e2, SEDP_STAGE_ERROR, "'user_id'", "float32", "int64");
  g_autoptr (SedpFrame) wide = sedp_frame_new (1);
  sedp_frame_add_column (wide, "user_id", SEDP_COLUMN_INT64, 2);
  g_autoptr (GError) e3 = NULL;
  CU_ASSERT_EQUAL (route_frame (st, wide, &e3), -1);
  SEDP_ASSERT_ERROR (e3, SEDP_STAGE_ERROR, "'user_id'", "width 2");
  g_autoptr (SedpFrame) unset = sedp_frame_new (1);
  sedp_frame_add_column (unset, "user_id", SEDP_COLUMN_STRING, 1);
  g_autoptr (GError) e4 = NULL;
  CU_ASSERT_EQUAL (route_frame (st, unset, &e4), -1);
  SEDP_ASSERT_ERROR (e4, SEDP_STAGE_ERROR, "'user_id'", "no value");
  /* A batch: the event without the key fails alone. */
  g_autoptr (SedpFrame) ok = int64_frame ("user_id", 0);
  SedpEvent ev[3] = {{.frame = ok, .frame_index = -1}, {.frame = none, .frame_index = -1},
                     {.frame = ok, .frame_index = -1}};
  SedpEvent *events[] = {&ev[0], &ev[1], &ev[2]};
  CU_ASSERT_TRUE (ab_desc ()->process (st->instance, events, 3, 0, NULL));
  CU_ASSERT (ev[0].routes != 0 && ev[0].routes == ev[2].routes && ev[1].routes == 0);
  CU_ASSERT (ev[0].error == NULL && ev[1].error != NULL && ev[2].error == NULL);
  g_clear_error (&ev[1].error);
}

/* ---- arms: branches and every error ---- */

static void
check_branches (const char *arms, const char *const *want)
{
  g_autofree char *opts = g_strdup_printf ("arms = %s", arms);
  g_autoptr (TestStage) st = stage_new ("ab", opts);
  g_autoptr (GError) error = NULL;
  g_auto (GStrv) names = ab_desc ()->branches (&st->ctx, &error);
  CU_ASSERT_PTR_NULL (error);
  CU_ASSERT_FATAL (names != NULL);
  CU_ASSERT_TRUE (g_strv_equal ((const char *const *) names, want));
}

static void
test_branches (void)
{
  check_branches ("control:90, treatment:10", (const char *[]) {"control", "treatment", NULL});
  check_branches ("zz:0.01,aa : 99.99", (const char *[]) {"zz", "aa", NULL});
  check_branches ("only:100", (const char *[]) {"only", NULL});
  check_branches ("a:0, b:100.00, c:0.0", (const char *[]) {"a", "b", "c", NULL});
  /* 64 arms: 48 of 1.56 and 16 of 1.57. */
  GString *s = g_string_new (NULL);
  g_autoptr (GPtrArray) want = g_ptr_array_new_with_free_func (g_free);
  for (guint i = 0; i < AB_MAX_ARMS; i++) {
    g_string_append_printf (s, "%sarm_%u:%s", i ? ", " : "", i, i < 48 ? "1.56" : "1.57");
    g_ptr_array_add (want, g_strdup_printf ("arm_%u", i));
  }
  g_ptr_array_add (want, NULL);
  check_branches (s->str, (const char *const *) want->pdata);
  g_string_free (s, TRUE);
}

static void
check_arms_error (const char *arms, const char *const *needles)
{
  g_autofree char *opts = g_strdup_printf ("arms = %s", arms);
  g_autoptr (GError) error = branches_error (opts);
  ASSERT_CONFIG_ERROR (error, "arms: ");
  for (guint i = 0; error && needles[i]; i++)
    SEDP_ASSERT_CONTAINS (error->message, needles[i]);
}

static void
test_arms_errors (void)
{
  check_arms_error ("control:90, treatment:9.5", (const char *[]) {"sum to 99.5 percent", "100", NULL});
  check_arms_error ("control:90, treatment:20", (const char *[]) {"sum to 110 percent", NULL});
  check_arms_error ("control:100, treatment:-0.5",
                    (const char *[]) {"'treatment:-0.5'", "-0.5 is negative", NULL});
  check_arms_error ("control:150, treatment:-50", (const char *[]) {"150 is more than 100", NULL});
  check_arms_error ("control=90, treatment:10",
                    (const char *[]) {"item 'control=90' is not NAME:WEIGHT", "control:90", NULL});
  check_arms_error ("control:9.005, treatment:90.995",
                    (const char *[]) {"'9.005'", "at most two decimals", NULL});
  check_arms_error ("control:ninety", (const char *[]) {"'ninety'", NULL});
  check_arms_error ("control:, b:100", (const char *[]) {"weight ''", NULL});
  check_arms_error ("control:1e2", (const char *[]) {"'1e2'", NULL});
  check_arms_error ("control:50, control:50",
                    (const char *[]) {"arm 'control' is listed twice", "items 1 and 2", NULL});
  check_arms_error ("Control:100", (const char *[]) {"arm name 'Control'", "a-z", NULL});
  check_arms_error ("a-b:100", (const char *[]) {"arm name 'a-b'", NULL});
  check_arms_error (":100", (const char *[]) {"arm name ''", NULL});
  g_autofree char *long_name = g_strnfill (AB_MAX_NAME + 1, 'x');
  g_autofree char *too_long = g_strdup_printf ("%s:100", long_name);
  check_arms_error (too_long, (const char *[]) {long_name, "1-64 characters", NULL});
  g_autofree char *longest = g_strnfill (AB_MAX_NAME, 'x');
  g_autofree char *ok = g_strdup_printf ("%s:100", longest);
  check_branches (ok, (const char *[]) {longest, NULL});
  GString *s = g_string_new (NULL);
  for (guint i = 0; i <= AB_MAX_ARMS; i++)
    g_string_append_printf (s, "%sarm_%u:1", i ? ", " : "", i);
  check_arms_error (s->str, (const char *[]) {"65 arms", "64", NULL});
  g_string_free (s, TRUE);
}

static void
test_default_arm_errors (void)
{
  g_autoptr (GError) e1 = branches_error ("arms = a:50, b:50\nby = value\ndefault_arm = c");
  ASSERT_CONFIG_ERROR (e1, "default_arm: 'c' is not one of the arms (a, b)");
  g_autoptr (GError) e2 = branches_error ("arms = a:50, b:50\ndefault_arm = a");
  ASSERT_CONFIG_ERROR (e2, "default_arm", "by is 'hash'");
  g_autoptr (GError) e3 = create_error ("arms = a:100\nkey =");
  ASSERT_CONFIG_ERROR (e3, "key: empty");
}

/* ---- arms_file ---- */

static void
test_arms_file_parse (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (AbArms) a = ab_arms_parse_file ("# the weights\n\n  control:80, treatment:20 \n# end\n",
                                             "arms_file 'f'", &error);
  CU_ASSERT_PTR_NULL (error);
  CU_ASSERT_FATAL (a != NULL);
  CU_ASSERT (a->n_arms == 2 && a->weights[0] == 8000 && a->weights[1] == 2000);
  CU_ASSERT (a->ends[0] == 8000 && a->ends[1] == 10000);
  CU_ASSERT_STRING_EQUAL (a->names[1], "treatment");
  g_autoptr (GError) e1 = NULL;
  CU_ASSERT_PTR_NULL (ab_arms_parse_file ("# nothing\n\n", "arms_file 'f'", &e1));
  ASSERT_CONFIG_ERROR (e1, "arms_file 'f': no arms line");
  g_autoptr (GError) e2 = NULL;
  CU_ASSERT_PTR_NULL (ab_arms_parse_file ("a:50, b:50\n\nb:100\n", "arms_file 'f'", &e2));
  ASSERT_CONFIG_ERROR (e2, "lines 1 and 3");
  g_autoptr (GError) e3 = NULL;
  CU_ASSERT_PTR_NULL (ab_arms_parse_file ("a:50, b:40", "arms_file 'f'", &e3));
  ASSERT_CONFIG_ERROR (e3, "arms_file 'f': the weights sum to 90 percent");
  g_autoptr (AbArms) b = ab_arms_parse_line ("a:50, c:50", "arms", NULL);
  g_autoptr (GError) e4 = NULL;
  CU_ASSERT_FALSE (ab_arms_check_names (a, b, "arms_file 'f'", &e4));
  ASSERT_CONFIG_ERROR (e4, "arms_file 'f'", "(a, c)", "(control, treatment)");
}

/* Counts users 0..199 in arm 1. */
static guint
in_treatment (TestStage *st)
{
  guint n = 0;
  for (gint64 u = 0; u < 200; u++)
    n += route_int64 (st, u) == 1;
  return n;
}

static void
test_arms_file_at_create (void)
{
  g_autofree char *path = write_temp ("ab-router-arms-create", "control:0, treatment:100\n");
  g_autofree char *opts = g_strdup_printf ("arms = control:100, treatment:0\narms_file = %s", path);
  g_autoptr (TestStage) st = router_new ("ab", opts);
  CU_ASSERT_EQUAL (in_treatment (st), 200);
  g_autoptr (GString) out = g_string_new (NULL);
  SedpStats *s = sedp_stats_new ("ab", out);
  ab_desc ()->stats (st->instance, s);
  sedp_stats_free (s);
  SEDP_ASSERT_CONTAINS (out->str, "ab ab_router_weight{arm=\"treatment\"} 100\n");
  CU_ASSERT_TRUE (g_file_set_contents (path, "treatment:0, control:100", -1, NULL));
  g_autoptr (GError) e1 = create_error (opts);
  ASSERT_CONFIG_ERROR (e1, "arms_file", path, "(treatment, control)", "(control, treatment)");
  CU_ASSERT_TRUE (g_file_set_contents (path, "control:1, treatment:100", -1, NULL));
  g_autoptr (GError) e2 = create_error (opts);
  ASSERT_CONFIG_ERROR (e2, "arms_file", path, "sum to 101 percent");
  g_unlink (path);
  g_autoptr (GError) e3 = create_error (opts);
  SEDP_ASSERT_ERROR (e3, SEDP_STAGE_ERROR, "arms_file", path);
  CU_ASSERT_EQUAL (e3->code, SEDP_STAGE_ERROR_UNAVAILABLE);
}

/* What the plugin logs (under its domain), collected from any thread. */
static GMutex log_lock;
static GString *log_text;

static void
collect_log (const char *domain, GLogLevelFlags level, const char *message, gpointer data)
{
  g_mutex_lock (&log_lock);
  g_string_append_printf (log_text, "%s\n", message);
  g_mutex_unlock (&log_lock);
}

static char *
take_log (void)
{
  g_mutex_lock (&log_lock);
  char *text = g_strdup (log_text->str);
  g_string_truncate (log_text, 0);
  g_mutex_unlock (&log_lock);
  return text;
}

static void
wait_check_interval (void)
{
  g_usleep (G_USEC_PER_SEC + 100000);
}

static void
test_arms_file_reload (void)
{
  g_autofree char *path = write_temp ("ab-router-arms-reload", "control:100, treatment:0\n");
  g_autofree char *opts = g_strdup_printf ("arms = control:50, treatment:50\narms_file = %s", path);
  g_autoptr (TestStage) st = router_new ("ab", opts);
  g_free (take_log ());
  CU_ASSERT_EQUAL (in_treatment (st), 0);
  CU_ASSERT_TRUE (g_file_set_contents (path, "control:0, treatment:100\n", -1, NULL));
  CU_ASSERT_EQUAL (in_treatment (st), 0); /* looked at once a second at most */
  wait_check_interval ();
  CU_ASSERT_EQUAL (in_treatment (st), 200);
  g_autofree char *l1 = take_log ();
  SEDP_ASSERT_CONTAINS (l1, "new weights control:0.00, treatment:100.00");
  /* A file that does not parse, then one with other arms: logged, the weights stay. */
  CU_ASSERT_TRUE (g_file_set_contents (path, "control:50, treatment:40\n", -1, NULL));
  wait_check_interval ();
  CU_ASSERT_EQUAL (in_treatment (st), 200);
  g_autofree char *l2 = take_log ();
  SEDP_ASSERT_CONTAINS (l2, "sum to 90 percent");
  SEDP_ASSERT_CONTAINS (l2, "the previous weights stay");
  CU_ASSERT_TRUE (g_file_set_contents (path, "a:50, b:50\n", -1, NULL));
  wait_check_interval ();
  CU_ASSERT_EQUAL (in_treatment (st), 200);
  g_autofree char *l3 = take_log ();
  SEDP_ASSERT_CONTAINS (l3, "(a, b) are not the arms option's (control, treatment)");
  g_unlink (path);
  wait_check_interval ();
  CU_ASSERT_EQUAL (in_treatment (st), 200);
  g_autofree char *l4 = take_log ();
  SEDP_ASSERT_CONTAINS (l4, "cannot stat");
}

/* Workers route while the file changes under them: every request gets a valid arm, the file is
 * looked at no more than once a second, and no table is freed under a reader (ASan/valgrind). */
typedef struct {
  TestStage *st;
  gint stop;
  guint bad;
} Hammer;

static gpointer
hammer (gpointer data)
{
  Hammer *h = data;
  for (gint64 u = 0; !g_atomic_int_get (&h->stop); u++) {
    g_autoptr (SedpFrame) f = int64_frame ("user_id", u);
    SedpEvent ev = {.frame = f, .frame_index = -1};
    SedpEvent *events[] = {&ev};
    ab_desc ()->process (h->st->instance, events, 1, 0, NULL);
    if (ev.error || (ev.routes != 1 && ev.routes != 2))
      g_atomic_int_inc ((gint *) &h->bad);
    g_clear_error (&ev.error);
  }
  return NULL;
}

static void
test_arms_file_concurrent (void)
{
  g_autofree char *path = write_temp ("ab-router-arms-concurrent", "control:100, treatment:0\n");
  g_autofree char *opts = g_strdup_printf ("arms = control:50, treatment:50\narms_file = %s", path);
  g_autoptr (TestStage) st = router_new ("ab", opts);
  g_free (take_log ());
  Hammer h = {.st = st};
  GThread *t[2] = {g_thread_new ("h0", hammer, &h), g_thread_new ("h1", hammer, &h)};
  gint64 start = g_get_monotonic_time ();
  const char *lines[] = {"control:0, treatment:100\n", "control:70, treatment:30\n",
                         "control:100, treatment:0\n", "control:10, treatment:90\n"};
  for (guint i = 0; i < G_N_ELEMENTS (lines); i++) {
    g_usleep (G_USEC_PER_SEC * 6 / 10);
    CU_ASSERT_TRUE (g_file_set_contents (path, lines[i], -1, NULL));
  }
  g_usleep (G_USEC_PER_SEC * 12 / 10);
  g_atomic_int_set (&h.stop, 1);
  g_thread_join (t[0]);
  g_thread_join (t[1]);
  double seconds = (double) (g_get_monotonic_time () - start) / G_USEC_PER_SEC;
  CU_ASSERT_EQUAL (h.bad, 0);
  g_autofree char *log = take_log ();
  guint swaps = 0;
  for (const char *p = log; (p = strstr (p, "new weights")); p++)
    swaps++;
  CU_ASSERT (swaps >= 1 && swaps <= (guint) seconds + 1);
  g_unlink (path);
}

int
main (void)
{
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;
  g_autoptr (GError) error = NULL;
  if (sodium_init () < 0 || !ab_split_init (&error))
    return 1;
  tmp_dir = g_dir_make_tmp ("ab-router-XXXXXX", NULL);
  if (tmp_dir == NULL)
    return 1;
  if (!load_plugin ())
    return 1;
  log_text = g_string_new (NULL);
  g_log_set_handler ("sedp-ab_router", G_LOG_LEVEL_WARNING | G_LOG_LEVEL_MESSAGE, collect_log, NULL);
  CU_pSuite s = CU_add_suite ("ab_router", NULL, NULL);
  CU_add_test (s, "known answers: literal buckets, libsodium here, the plugin", test_known_answers);
  CU_add_test (s, "same key and salt, same arm; the salt defaults to the stage", test_determinism);
  CU_add_test (s, "shares of 100 000 users within half a point", test_shares);
  CU_add_test (s, "another salt, an independent split", test_salts_independent);
  CU_add_test (s, "a weight change moves only the buckets that change owner", test_weight_change);
  CU_add_test (s, "overrides pin keys to arms", test_overrides);
  CU_add_test (s, "overrides errors", test_overrides_errors);
  CU_add_test (s, "string keys", test_string_keys);
  CU_add_test (s, "by = value and default_arm", test_by_value);
  CU_add_test (s, "a missing or unusable key column fails the request", test_key_column);
  CU_add_test (s, "branches: the arms in written order", test_branches);
  CU_add_test (s, "every arms error names arms", test_arms_errors);
  CU_add_test (s, "default_arm and key errors", test_default_arm_errors);
  CU_add_test (s, "arms_file parse", test_arms_file_parse);
  CU_add_test (s, "arms_file at create", test_arms_file_at_create);
  CU_add_test (s, "arms_file re-read at run time", test_arms_file_reload);
  CU_add_test (s, "arms_file swapped under concurrent workers", test_arms_file_concurrent);
  int rc = sedp_test_run ();
  g_clear_pointer (&registry, sedp_registry_free);
  g_string_free (log_text, TRUE);
  sedp_test_remove_tree (tmp_dir);
  g_free (tmp_dir);
  return rc;
}
